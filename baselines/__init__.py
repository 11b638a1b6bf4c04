"""Baselines: one model per file, each a registered :class:`nsvqa.models.Model`.

    >>> import baselines
    >>> {"random", "majority", "lstm", "cnn_lstm", "film", "mdetr", "nscl"} <= set(baselines.names())
    True
    >>> model = baselines.get("lstm")
    >>> cfg = model.config("data/generated/mini/mid", "mini", seed=0)
    >>> model.train(cfg, "runs/lstm/mid", resume=True)          # doctest: +SKIP
    >>> preds = model.predict("runs/lstm/mid", "data/generated/mini", "hard", "test")  # doctest: +SKIP

Importing this package registers the baselines in :mod:`nsvqa.models`, the one registry the
experiment drives (beside NS-VQA and P-NSVQA). Every baseline is a :class:`Baseline`: ``config``
resolves its frozen config dataclass from a profile (``tiny`` | ``demo`` | ``mini`` | ``full``) and
overrides, ``train`` fills a run directory (``config.json``, ``train.log``, ``tb/``, the checkpoint
``baseline.pt``; resumable), and ``predict`` reads that run directory (and, for a model that
:attr:`~nsvqa.models.Model.uses_parses`, the run's parses in its ``inputs``) and returns one
:class:`nsvqa.artifacts.predictions.Prediction` per question of any variant's split.
``scripts/train_baseline.py`` is the command line; ``scripts/train_variant.py --models`` accepts every
registered name.

A new model is a module of this package whose :class:`Baseline` subclass carries
``@register("name")``, imported at the bottom of this file.
"""
from __future__ import annotations

from typing import Callable, ClassVar, TypeVar

from nsvqa import models as _models
from nsvqa.models import PROFILE_NAMES, Model, UnknownModel


class UnknownBaseline(UnknownModel):
    """A name no baseline is registered under; the message lists the valid names."""


class Baseline(Model):
    """A model with a run directory of its own (stateless: everything lives in that directory).

    Subclasses set ``config_class`` (the frozen config dataclass, fields ``data`` and ``profile``
    first; its defaults the ``mini`` profile, its ``PROFILES`` what the other profiles change), and
    implement ``train`` and ``predict`` (:class:`nsvqa.models.Model`).
    """

    config_class: ClassVar[type]


B = TypeVar("B", bound=type[Baseline])


def register(name: str) -> Callable[[B], B]:
    """Class decorator: register a :class:`Baseline` subclass in :mod:`nsvqa.models` under ``name``
    (see :func:`nsvqa.models.register` for the checks)."""
    return _models.register(name)


def names() -> tuple[str, ...]:
    """The names of the registered baselines, sorted."""
    return tuple(sorted(n for n in _models.names() if isinstance(_models.get(n), Baseline)))


def get(name: str) -> Baseline:
    """A :class:`Baseline` instance by name.

    Raises:
        UnknownBaseline: no baseline of that name (the valid ones listed).
    """
    try:
        model = _models.get(name)
    except UnknownModel:
        model = None
    if not isinstance(model, Baseline):
        raise UnknownBaseline(f"unknown baseline {name!r}; valid: {', '.join(names())}")
    return model


# the built-in models register themselves on import
from . import cnn_lstm, film, lstm, mdetr, nscl, random_majority  # noqa: E402,F401
from . import film_dense, objtf  # noqa: E402,F401  (after film and lstm: they build on them)
from . import film_trace  # noqa: E402,F401  (after film_dense: it builds on it)
from . import regionmac  # noqa: E402,F401  (after objtf: it builds on it)

__all__ = ["Baseline", "UnknownBaseline", "register", "names", "get", "PROFILE_NAMES"]
