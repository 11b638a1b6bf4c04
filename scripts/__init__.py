"""The command-line scripts (each `main(argv)`), installed as the `nsvqa-*` commands (pyproject.toml)."""
