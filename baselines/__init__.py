"""Baselines: one model per file, registered by name, all writing the common predictions format.

    >>> import baselines
    >>> {"random", "majority", "lstm", "cnn_lstm", "film", "mdetr", "nscl"} <= set(baselines.names())
    True
    >>> model = baselines.get("lstm")
    >>> cfg = model.config("data/generated/mini/mid", "mini", seed=0)
    >>> model.train(cfg, "runs/lstm/mid", resume=True)          # doctest: +SKIP
    >>> preds = model.predict("runs/lstm/mid", "data/generated/mini", "hard", "test")  # doctest: +SKIP

Every model is a :class:`Baseline`: ``config`` resolves its frozen config dataclass from a profile
(``tiny`` | ``demo`` | ``mini`` | ``full``) and overrides, ``train`` fills a run directory
(``config.json``, ``train.log``, ``tb/``, the checkpoint ``baseline.pt``; resumable), and
``predict`` reads that run directory alone and returns one :class:`nsvqa.predictions.Prediction` per
question of any variant's split. ``scripts/train_baseline.py`` is the command line;
``scripts/train_variant.py --models`` accepts every registered name.

A new model is a module of this package whose :class:`Baseline` subclass carries
``@register("name")``, imported at the bottom of this file.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, TypeVar

_REGISTRY: dict[str, type["Baseline"]] = {}
PROFILE_NAMES = ("tiny", "demo", "mini", "full")


class UnknownBaseline(KeyError):
    """A name no baseline is registered under; the message lists the valid names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class Baseline(ABC):
    """The interface of a baseline (stateless: everything lives in the run directory).

    Attributes:
        name: the registered name (set by :func:`register`); also the model name of its
            predictions files.
        config_class: the frozen config dataclass (fields ``data`` and ``profile`` first).
        profiles: profile name -> that profile's defaults of the config fields.
        uses_parses: whether ``predict`` takes the run's parses (NSCL).
    """

    name: ClassVar[str] = ""
    config_class: ClassVar[type]
    profiles: ClassVar[Mapping[str, Mapping[str, Any]]]
    #: ``predict`` answers from a scene parser's detections and a question parser's programs
    #: (its ``likelihoods=`` and ``programs=``): ``train_variant.py`` trains the parsers for it
    uses_parses: ClassVar[bool] = False

    def config(self, data: str | Path, profile: str = "mini", **overrides: Any) -> Any:
        """The resolved config: the profile's defaults, then every override that is not None.

        Raises:
            KeyError: unknown profile (valid ones listed); TypeError: an override that is no field
            of the config (valid ones listed); ValueError: a value out of range.
        """
        from nsvqa.training import resolve_config

        defaults = {"model": self.name, **self.profiles[profile]} if profile in self.profiles else {}
        cfg = resolve_config(self.config_class, data, profile, self.profiles, defaults, overrides)
        check = getattr(cfg, "check", None)
        if check is not None:
            check()
        return cfg

    @abstractmethod
    def train(self, cfg: Any, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
        """Train into the run directory ``out`` (continue from its checkpoint with ``resume``);
        returns ``out``. A finished run is left as it is when resumed."""

    @abstractmethod
    def predict(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "test", *,
                device: str = "cpu", progress: bool = False) -> list:
        """One :class:`nsvqa.predictions.Prediction` per question of
        ``ROOT/VARIANT/questions/<split>_questions.json``, in file order, from the trained run
        ``run_dir``.

        Raises:
            nsvqa.checkpoint.CheckpointError: no usable checkpoint in ``run_dir``;
            executors.errors.FormatError: a malformed questions file (naming file, question, field).
        """


B = TypeVar("B", bound=type[Baseline])


def register(name: str) -> Callable[[B], B]:
    """Class decorator: register a :class:`Baseline` subclass under ``name``.

    Raises:
        ValueError: ``name`` is taken by another class, or is not a valid model name
            (letters, digits, ``_ . + -``; no ``__``).
    """
    def deco(cls: B) -> B:
        from nsvqa.predictions import predictions_path

        predictions_path(".", name, "train", "test")  # the name must fit a predictions file name
        old = _REGISTRY.get(name)
        if old is not None and old is not cls:
            raise ValueError(f"baseline {name!r} is already registered ({old.__module__}.{old.__qualname__})")
        missing = [p for p in PROFILE_NAMES if p not in cls.profiles]
        if missing:
            raise ValueError(f"baseline {name!r}: no profile {missing}; every baseline has {list(PROFILE_NAMES)}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls
    return deco


def names() -> tuple[str, ...]:
    """The registered names, sorted."""
    return tuple(sorted(_REGISTRY))


def get(name: str) -> Baseline:
    """A :class:`Baseline` instance by name.

    Raises:
        UnknownBaseline: no baseline of that name (the valid ones listed).
    """
    cls = _REGISTRY.get(name)
    if cls is None:
        raise UnknownBaseline(f"unknown baseline {name!r}; valid: {', '.join(names())}")
    return cls()


# the built-in models register themselves on import
from . import cnn_lstm, film, lstm, mdetr, nscl, random_majority  # noqa: E402,F401

__all__ = ["Baseline", "UnknownBaseline", "register", "names", "get", "PROFILE_NAMES"]
