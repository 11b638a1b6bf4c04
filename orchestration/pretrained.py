"""Any model of a pretrained set answering a question about an image: :func:`load_pretrained`.

:func:`nsvqa.load_pretrained` answers with the modular models (NS-VQA, P-NSVQA, P-NSVQA exact), which
live in ``nsvqa``; the other models a set holds (FiLM, the LSTMs, mDETR, NSCL, the priors, ...) are
registered in ``baselines``, a floor above, so the registry, one floor higher still, is what names
them: this :func:`load_pretrained` is :func:`nsvqa.answering.load_pretrained` given every registered
model (:mod:`orchestration.models`).

    >>> from orchestration.pretrained import load_pretrained
    >>> film = load_pretrained("mid-mini", "film")                                   # doctest: +SKIP
    >>> answer, program, trace = film.answer("scene.png", "Is there a red car?")      # doctest: +SKIP
"""
from __future__ import annotations

import os

from nsvqa.answering import DEFAULT_MODEL, PretrainedModel
from nsvqa.answering import load_pretrained as _load
from orchestration import models as registry


def load_pretrained(name_or_path: str | os.PathLike, model: str = DEFAULT_MODEL, *,
                    device: str = "auto") -> PretrainedModel:
    """:func:`nsvqa.answering.load_pretrained` for every model the set holds: a modular model's
    ``.answer(image, question)`` gives ``(answer, program, trace)``, any other's ``(answer, program
    it read or None, None)``.

    Raises:
        nsvqa.pretrained.PretrainedError: no such set, or a file that fails its check (named).
        nsvqa.models.UnknownModel: a model the set does not hold (the valid ones listed).
    """
    return _load(name_or_path, model, device=device, models=dict(registry.table()))


__all__ = ["load_pretrained"]
