"""What the baselines' configs share, as checks and keys rather than base classes (no torch here).

Each model's config is a frozen dataclass next to the model that derives from
:class:`nsvqa.models.ModelConfig` (``data``, ``profile``, ``model``, ``seed``, ``device``) and declares
every other field it has, with its value in the model's ``mini`` profile; a model of a family derives
from the family's config (``film-dense`` and ``film-trace`` from ``film``'s, ``objmac``,
``objmac-trace`` and ``regionmac-trace`` from ``objtf``'s) and declares what it changes. So a config
is at most four classes deep (it, its family's, ``ModelConfig``, :class:`nsvqa.config.Config`) and
one model's settings read in at most two files. Its ``PROFILES`` hold the fields the other profiles
change (:mod:`nsvqa.config`).

The field groups most of them have in common keep one meaning (and one order: a config keeps the
order a saved ``config.json`` has): the run fields ``ontology``, ``max_train_questions`` (the first
training questions only: tests, quick runs), then for a trained model the schedule ``steps``,
``lr``, ``weight_decay``, ``warmup``, ``eval_every``, ``val_questions``, ``grad_clip`` (``steps``
optimizer steps at ``lr``, linear warm-up over ``warmup`` steps then cosine to 5%, gradient norm
clipped at ``grad_clip``; validation on the first ``val_questions`` val questions every
``eval_every`` steps). Their checks and resume keys live here once: :func:`check_run`,
:func:`check_training`, :data:`RUN_MUST_MATCH`.
"""
from __future__ import annotations

from typing import Any

#: the fields a resumed run must agree on with the run it continues: ``ModelConfig``'s identity and the run fields
RUN_MUST_MATCH = ("data", "profile", "model", "seed", "ontology", "max_train_questions")


def check_run(cfg: Any) -> None:
    """ValueError naming the field: ``max_train_questions`` below 1 (None: every question)."""
    if cfg.max_train_questions is not None and cfg.max_train_questions < 1:
        raise ValueError(f"max_train_questions must be >= 1 or None, got {cfg.max_train_questions}")


def check_training(cfg: Any) -> None:
    """:func:`check_run`, then ValueError naming the first schedule field out of range."""
    check_run(cfg)
    for k in ("steps", "val_questions"):
        if getattr(cfg, k) < 0:
            raise ValueError(f"{k} must be >= 0, got {getattr(cfg, k)}")
    for k in ("eval_every", "warmup"):
        if getattr(cfg, k) < 1:
            raise ValueError(f"{k} must be >= 1, got {getattr(cfg, k)}")
    if not cfg.lr > 0:
        raise ValueError(f"lr must be > 0, got {cfg.lr}")


__all__ = ["RUN_MUST_MATCH", "check_run", "check_training"]
