"""nsvqa, laid out as the flow: generation (data) → artifacts (one owner per file) → models (the one interface, NS-VQA / P-NSVQA) → evaluation → training (one engine); what drives the models by name is the orchestration, the package above (``orchestration``)."""

#: The distribution's version: written here only (pyproject.toml reads it; CHANGELOG.md says what changed).
__version__ = "0.1.0"
