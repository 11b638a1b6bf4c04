"""The fields every baseline config starts with (no torch here: the prior baselines need none).

:class:`RunConfig`: what a run is trained on and how it is identified; :class:`TrainConfig` adds
the schedule of a learned baseline. Both are :class:`nsvqa.models.ModelConfig` s (profile resolution,
``check``, ``MUST_MATCH``, checkpoint round trip, the typed ``--set`` of
``scripts/train_baseline.py``). They are shared field sets, not a model's config: each model has
its own frozen config dataclass deriving from one of them, next to the model, whose defaults are
that model's ``mini`` profile and whose ``PROFILES`` hold the fields the other profiles change
(:mod:`nsvqa.config`); it adds its own fields and extends ``MUST_MATCH`` and ``check``.

A field of a shared base has a default only where the value is everyone's (``ontology``,
``weight_decay`` 0, ``grad_clip`` 5); what is each model's own (the schedule) is keyword-only
without a default: a base cannot be built, and neither can a model's config that does not state it
(TypeError naming the field).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from nsvqa.models import ModelConfig


@dataclass(frozen=True)
class RunConfig(ModelConfig):
    """:class:`nsvqa.models.ModelConfig` (``data``: the training variant's folder, ``profile``,
    ``model``: the registered name, ``seed``, ``device``) with ``ontology``;
    ``max_train_questions`` keeps the first questions of the train file only (tests, quick runs)."""

    ontology: str = "superclevr"
    max_train_questions: int | None = None

    #: fields that must agree when a run is resumed
    MUST_MATCH: ClassVar[tuple[str, ...]] = ("data", "profile", "model", "seed", "ontology", "max_train_questions")

    def check(self) -> None:
        """Raise ValueError naming the first field out of range."""
        super().check()
        if self.max_train_questions is not None and self.max_train_questions < 1:
            raise ValueError(f"max_train_questions must be >= 1 or None, got {self.max_train_questions}")


@dataclass(frozen=True)
class TrainConfig(RunConfig):
    """A :class:`RunConfig` plus the schedule: ``steps`` optimizer steps at ``lr`` (linear warm-up
    over ``warmup`` steps, then cosine to 5%), ``weight_decay``, gradient norm clipped at
    ``grad_clip``; validation on the first ``val_questions`` val questions every ``eval_every``
    steps. ``steps``, ``lr``, ``warmup``, ``eval_every`` and ``val_questions`` have no default: each
    model's config states its own."""

    steps: int = field(kw_only=True)
    lr: float = field(kw_only=True)
    weight_decay: float = 0.0
    warmup: int = field(kw_only=True)
    eval_every: int = field(kw_only=True)
    val_questions: int = field(kw_only=True)
    grad_clip: float = 5.0

    def check(self) -> None:
        super().check()
        for k in ("steps", "val_questions"):
            if getattr(self, k) < 0:
                raise ValueError(f"{k} must be >= 0, got {getattr(self, k)}")
        for k in ("eval_every", "warmup"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
