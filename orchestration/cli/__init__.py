"""The ``nsvqa-*`` commands' ``main()``s (pyproject.toml's ``[project.scripts]`` point here;
``scripts/<name>.py`` are shims for a clone), one module per command, all but
``nsvqa-execute-programs`` (:mod:`nsvqa.cli.execute_programs`, numpy alone); ``nsvqa-run-study``'s
verbs live beside its module (:mod:`~orchestration.cli.study_run`, :mod:`~orchestration.cli.study_report`,
:mod:`~orchestration.cli.study_checks`), imported by its ``main`` after parsing. Each command's module
imports only what its parser needs; the heavy stack is imported after parsing, inside
:func:`nsvqa.cli.needs_extra`, so ``--help`` answers at once and an install without ``[full]`` gets
one line naming it."""
