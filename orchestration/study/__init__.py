"""The robustness study, one package in floors; a module imports only the floors below it:

    study_config  :class:`StudyConfig` and :data:`STUDY`: every setting of the study, and the
                  results folder's record of them (``study.json``)
    plan          the pieces in the order they run, the aliases, where a piece's data and runs live,
                  and what a piece needs (a scene parser), asked of the registry
                  (:mod:`orchestration.models`) for its models
    attempts      a piece's ledger of attempts and their seconds
    scale_record  the redundancy scale check's layout and record
    perception_record  the perception schedule check's layout, its search's rule and its record
    cost          the budget: the hours spent and projected against the cap
                  (these six are data and arithmetic: they import the variant catalogue and the
                  registry, nothing of training, evaluation or the experiment)
    systematic  the report's sections on the systematic splits and the fallback toward training
                frequencies, set against the in-domain generalization paper (over predictions)
    findings    the paper's findings, each with a status by a fixed rule (over predictions)
    perception_finding  the perception schedule check's finding and report section (over its predictions)
    report      the report rebuilt from the committed predictions alone: build, write and check
    run         running one piece: its data, its models trained and tested through
                :mod:`orchestration.experiment`, its scene parser's perception, its committed predictions
    scale       the redundancy scale check, beside run and on top of it
    perception_schedule  the perception schedule check, beside run and on top of it

``run``, ``scale`` and ``perception_schedule`` use :mod:`orchestration.experiment` and
:mod:`nsvqa.training`; ``systematic``, ``findings`` and ``report`` use :mod:`nsvqa.evaluation`;
nothing below this package imports it. A model's facts (its family, what it sees the image
through, what it needs) come from its class through the registry; the study keeps no list of them.
The package hands on the names of five data floors (each module's ``__all__``;
``perception_record``'s are imported by their module), so ``import orchestration.study`` loads
neither the experiment nor a piece's runner (the registry loads the models, and with them torch);
the floors above are imported by their module (``from orchestration.study.run import run_piece``,
``from orchestration.study.report import build_study_report``).
"""
import orchestration.study.attempts as _attempts
import orchestration.study.cost as _cost
import orchestration.study.plan as _plan
import orchestration.study.scale_record as _scale_record
import orchestration.study.study_config as _study_config
from orchestration.study.attempts import *  # noqa: F401,F403
from orchestration.study.cost import *  # noqa: F401,F403
from orchestration.study.plan import *  # noqa: F401,F403
from orchestration.study.scale_record import *  # noqa: F401,F403
from orchestration.study.study_config import *  # noqa: F401,F403

__all__ = [*_study_config.__all__, *_plan.__all__, *_attempts.__all__, *_scale_record.__all__, *_cost.__all__]
