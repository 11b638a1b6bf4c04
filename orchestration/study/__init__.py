"""The robustness study, by its jobs: four subpackages in floors. A module imports only the floors
below it: a lower subpackage, or a lower module of its own (the order below, bottom first).

    settings   the study's settings and its plan; data and arithmetic (the variant catalogue and
               the registry, :mod:`orchestration.models`; nothing of training, evaluation or the
               experiment)
        config             :class:`StudyConfig`, :data:`STUDY` (every setting of the study) and the
                           results folder's record of them (``study.json``)
        pieces             the pieces in the order they run, the aliases, where a piece's data and runs
                           live, what a piece needs (asked of the registry for its models), and its
                           setup, splits and ``TrainSpec`` (:func:`piece_setup`, the one builder)
        attempts           a piece's ledger of attempts and their seconds
        scale_record       the redundancy scale check's layout and record
        perception_record  the perception schedule check's layout, its search's rule and its record
        budget             the hours spent and projected against the cap
    running    running the pieces, through :mod:`orchestration.experiment` and :mod:`nsvqa.training`
        code_tree          the frozen git worktree a run or a launch executes
        parses             what a piece's executors read, committed, and executed again
        piece              one piece: its data, its models trained and tested, its scene parser's
                           perception, its committed predictions and ``piece.json``
        launch             the pending pieces as jobs, side by side or on SLURM (submitit)
    report     the report, rebuilt from the committed predictions alone (:mod:`nsvqa.evaluation`)
        systematic         the systematic splits and the fallback, against the generalization paper
        findings           the paper's findings, each with a status by a fixed rule
        seeds              which findings more training seeds would decide
        perception         the perception schedule check's finding and section
        build              the report: every file, from the committed predictions
        publish            the report written out and checked, and the documents that quote it
        demo               ``make demo``'s table and picture beside the study's predictions
    checks     the one-off checks, on top of running: a piece's runner is theirs
        scale              the redundancy scale check
        perception_schedule  the perception schedule check

``running`` and ``report`` stand side by side on ``settings``: neither imports the other. Nothing
below the study imports it; in the orchestration, only the commands (:mod:`orchestration.cli`) do.
The package and its subpackages hold their docstrings alone: a name is imported from the module
that defines it (``from orchestration.study.settings.config import STUDY``), so importing a
setting loads neither the experiment nor a piece's runner nor the report
(``tests/nsvqa/test_study_layers.py`` holds the floors).
"""
