"""The robustness study, one package in floors; a module imports only the floors below it:

    study_config  :class:`StudyConfig` and :data:`STUDY`: every setting of the study, and the
                  results folder's record of them (``study.json``)
    plan          the pieces in the order they run, the aliases, where a piece's data and runs live
    attempts      a piece's ledger of attempts and their seconds
    scale_record  the redundancy scale check's layout and record
    cost          the budget: the hours spent and projected against the cap
                  (these five are data and arithmetic: they import the variant catalogue and
                  nothing of training, evaluation or models)
    systematic  the report's sections on the systematic splits and the fallback toward training
                frequencies, set against the in-domain generalization paper (over predictions)
    findings    the paper's findings, each with a status by a fixed rule (over predictions)
    report      the report rebuilt from the committed predictions alone: build, write and check
    run         running one piece: its data, its models trained and tested through
                :mod:`nsvqa.experiment`, its scene parser's perception, its committed predictions
    scale       the redundancy scale check, beside run and on top of it

``run`` and ``scale`` use :mod:`nsvqa.experiment` and :mod:`nsvqa.training`; ``systematic``,
``findings`` and ``report`` use :mod:`nsvqa.evaluation`; nothing below this package imports it.
The package hands on the names of the five data floors (each module's ``__all__``), so ``import
nsvqa.study`` loads neither torch nor training; the floors above are imported by their module
(``from nsvqa.study.run import run_piece``, ``from nsvqa.study.report import build_study_report``).
``config`` hands on the same names for the importers of the module they lived in before the split.
"""
import nsvqa.study.attempts as _attempts
import nsvqa.study.cost as _cost
import nsvqa.study.plan as _plan
import nsvqa.study.scale_record as _scale_record
import nsvqa.study.study_config as _study_config
from nsvqa.study.attempts import *  # noqa: F401,F403
from nsvqa.study.cost import *  # noqa: F401,F403
from nsvqa.study.plan import *  # noqa: F401,F403
from nsvqa.study.scale_record import *  # noqa: F401,F403
from nsvqa.study.study_config import *  # noqa: F401,F403

__all__ = [*_study_config.__all__, *_plan.__all__, *_attempts.__all__, *_scale_record.__all__, *_cost.__all__]
