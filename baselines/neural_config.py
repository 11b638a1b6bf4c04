"""What the learned baselines that read the question share (no torch here): the checks and resume
keys of their question fields, the ``tiny`` profile of the small ones, and the image backbones a
config can name (:data:`PIXEL_BACKBONES`, :data:`BACKBONES`; :func:`check_backbone`).

A question model's config (``lstm``, ``cnn_lstm``, ``film``, ``objtf`` and their families) declares,
after the run fields and the schedule (:mod:`baselines.config`), the question fields in this order:
``batch`` questions a step; word embeddings of ``word_dim`` (words seen at least ``min_word_count``
times; 1: every word); an encoder of ``layers`` x ``hidden``; a classifier of one hidden layer of
``mlp_hidden`` with ``dropout`` (each model says how it reads them). :func:`check_question` checks
them, :data:`QUESTION_MUST_MATCH` are the fields a resumed run must agree on.
"""
from __future__ import annotations

from typing import Any

from parsers.choices import TAP_STRIDES

from .config import RUN_MUST_MATCH, check_training

#: the fields a resumed question model's run must agree on (its own come after)
QUESTION_MUST_MATCH = RUN_MUST_MATCH + ("batch", "min_word_count", "word_dim", "hidden", "layers", "mlp_hidden")
#: the ``tiny`` profile of the schedule and the question side that ``lstm``, ``cnn_lstm`` and
#: ``film`` share (a model adds its own fields to it)
QUESTION_TINY = dict(steps=40, batch=16, lr=3e-3, warmup=5, eval_every=20, val_questions=32, word_dim=32, hidden=64,
                     mlp_hidden=64, dropout=0.0)


def check_question(cfg: Any) -> None:
    """:func:`baselines.config.check_training`, then ValueError naming the first question field out of range."""
    check_training(cfg)
    for k in ("batch", "word_dim", "hidden", "layers", "mlp_hidden", "min_word_count"):
        if getattr(cfg, k) < 1:
            raise ValueError(f"{k} must be >= 1, got {getattr(cfg, k)}")
    if not 0.0 <= cfg.dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {cfg.dropout}")


#: image CNNs trained from scratch on the pixels
PIXEL_BACKBONES = ("small", "resnet18", "lite0-ft")
#: (``lite0-ft``: the ImageNet EfficientNet-Lite0 fine-tuned on the pixels, :class:`Lite0Trunk`)
#: + ``lite0``: the frozen ImageNet EfficientNet-Lite0, whose maps at ``feature_stride`` are computed
#: once per image and cached in the data folder (:func:`backbone_features`); the model trains on them
BACKBONES = PIXEL_BACKBONES + ("lite0",)


def check_backbone(backbone: str, feature_stride: int) -> None:
    """ValueError naming the field: a backbone not in :data:`BACKBONES`, or a ``feature_stride``
    the frozen backbone has no map at."""
    if backbone not in BACKBONES:
        raise ValueError(f"backbone {backbone!r}: valid: {', '.join(BACKBONES)}")
    if backbone in ("lite0", "lite0-ft") and feature_stride not in TAP_STRIDES:
        raise ValueError(f"feature_stride {feature_stride}: valid: {', '.join(map(str, TAP_STRIDES))}")


__all__ = ["QUESTION_MUST_MATCH", "QUESTION_TINY", "check_question", "PIXEL_BACKBONES", "BACKBONES", "check_backbone"]
