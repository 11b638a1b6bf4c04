"""The orchestration: what drives the models, one floor above every one of them.

    models          the registry: every model by name, from the tables of the packages that hold
                    them (``nsvqa.models.pipeline.MODELS``, ``baselines.MODELS``), and what each needs
    experiment      train on one domain variant, predict on every variant of its factor
                    (``train_variant``), the parsers trained once for every model that needs them
    training_args   the options ``train_variant.py`` and ``run_factor.py`` share (no torch: --help)
    experiment_cli  those options read back into model labels and a TrainSpec
    transfer        trained parsers on an imported official Super-CLEVR split
    explain         one question of a variant run, step by step
    study/          the robustness study as floors: plan, cost, report, run, launch

Package order is floor order: ``scripts`` → ``orchestration`` → ``baselines`` → ``nsvqa`` →
``parsers`` → ``executors``; a module imports only packages to its right (inside functions too), so
the orchestration imports the models it drives by name and nothing below imports it.
"""
