"""nsvqa, laid out as the flow: generation (data) → artifacts (one owner per file) → models (the one interface, NS-VQA / P-NSVQA) → evaluation → training (one engine); what drives the models by name is the orchestration, the package above (``orchestration``)."""

#: The distribution's version: written here only (pyproject.toml reads it; CHANGELOG.md says what changed).
__version__ = "0.1.0"


def load_pretrained(name_or_path, model: str = "pnsvqa", *, device: str = "auto"):
    """A modular model of a pretrained set, ready to answer: ``.answer(image, question)`` returns
    ``(answer, program, trace)`` (:mod:`nsvqa.answering`; docs/models.md).

        >>> import nsvqa
        >>> model = nsvqa.load_pretrained("mid-mini")                           # doctest: +SKIP
        >>> answer, program, trace = model.answer("scene.png", "How many cars are there?")  # doctest: +SKIP

    Args:
        name_or_path: a set's name (``$NSVQA_PRETRAINED_DIR``, a clone's ``pretrained/``, then the
            user cache that ``nsvqa-fetch-pretrained`` fills) or its folder.
        model: ``"pnsvqa"`` (P-NSVQA), ``"pnsvqa-exact"`` or ``"nsvqa"``; the set's other models
            answer through :func:`orchestration.pretrained.load_pretrained`.
        device: ``"auto"`` (CUDA when present, else the CPU), ``"cpu"``, ``"cuda"``, ...

    Raises:
        nsvqa.pretrained.PretrainedError: no such set, or a file that fails its sha256 check.
        nsvqa.models.UnknownModel: another model (the valid ones listed).
    """
    from nsvqa.answering import load_pretrained as load  # heavy (numpy, the parsers, torch): `import nsvqa` stays instant

    return load(name_or_path, model, device=device)
