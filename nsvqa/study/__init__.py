"""The robustness study, one package in floors; a module imports only the floors below it:

    config      the plan: :class:`StudyConfig` and :data:`STUDY`, the pieces, the budget, the layout
                of the redundancy scale check (data and arithmetic: it imports the variant
                catalogue and nothing of training, evaluation or models)
    systematic  the report's sections on the systematic splits and the fallback toward training
                frequencies, set against the in-domain generalization paper (over predictions)
    findings    the paper's findings, each with a status by a fixed rule (over predictions)
    report      the report rebuilt from the committed predictions alone: build, write and check
    run         running one piece: its data, its models trained and tested through
                :mod:`nsvqa.experiment`, its scene parser's perception, its committed predictions
    scale       the redundancy scale check, beside run and on top of it

``run`` and ``scale`` use :mod:`nsvqa.experiment` and :mod:`nsvqa.training`; ``systematic``,
``findings`` and ``report`` use :mod:`nsvqa.evaluation`; nothing below this package imports it.
The package hands on the plan's names (``config.__all__``), so ``import nsvqa.study`` loads
neither torch nor training; the floors above are imported by their module
(``from nsvqa.study.run import run_piece``, ``from nsvqa.study.report import build_study_report``).
"""
from nsvqa.study.config import *  # noqa: F401,F403  (the plan's names, listed once: config.__all__)
from nsvqa.study.config import __all__  # noqa: F401
