"""The configs of the learned baselines that read the question (:class:`QuestionModelConfig`: batch,
word embeddings, LSTM and classifier sizes; :class:`SmallQuestionModelConfig`: the values three
models share) and the image too (:class:`ImageQuestionModelConfig`:
image size, backbone, image features), both :class:`baselines.config.TrainConfig` s, and the image
backbones a config can name (:data:`PIXEL_BACKBONES`, :data:`BACKBONES`; :func:`check_backbone`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from parsers.backbones import TAP_STRIDES

from .config import TrainConfig


@dataclass(frozen=True)
class QuestionModelConfig(TrainConfig):
    """Resolved config of a learned baseline that reads the question (written to config.json): a
    :class:`baselines.config.TrainConfig` (data, run identity, schedule) with ``batch`` questions a
    step. Question encoder: word embeddings of ``word_dim`` (words seen at least
    ``min_word_count`` times), an LSTM of ``layers`` x ``hidden``; classifier: one hidden layer of
    ``mlp_hidden`` with ``dropout``. Only ``min_word_count`` has a default (1: every word); the
    others are each model's own, keyword-only without a default: its config states them.
    """

    batch: int = field(kw_only=True)
    min_word_count: int = 1
    word_dim: int = field(kw_only=True)
    hidden: int = field(kw_only=True)
    layers: int = field(kw_only=True)
    mlp_hidden: int = field(kw_only=True)
    dropout: float = field(kw_only=True)

    MUST_MATCH: ClassVar[tuple[str, ...]] = TrainConfig.MUST_MATCH + (
        "batch", "min_word_count", "word_dim", "hidden", "layers", "mlp_hidden")

    def check(self) -> None:
        super().check()
        for k in ("batch", "word_dim", "hidden", "layers", "mlp_hidden", "min_word_count"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class SmallQuestionModelConfig(QuestionModelConfig):
    """A :class:`QuestionModelConfig` with the values of the question side that ``lstm``,
    ``cnn_lstm`` and ``film`` share in their ``mini`` profile: batches of 64 questions, 64-d word
    embeddings, one recurrent layer of 128, a classifier of 256 with dropout 0.1, warm-up over 100
    steps, 1,000 val questions; :attr:`TINY` is their shared ``tiny`` profile. A model's config
    derives from it (before :class:`ImageQuestionModelConfig` where it has both: these values must
    come first in the MRO) and states its own ``model``, ``steps``, ``lr`` and ``eval_every``. The
    fields keep :class:`QuestionModelConfig`'s order (a saved ``config.json`` is unchanged)."""

    warmup: int = 100
    val_questions: int = 1000
    batch: int = 64
    word_dim: int = 64
    hidden: int = 128
    layers: int = 1
    mlp_hidden: int = 256
    dropout: float = 0.1

    #: the ``tiny`` profile of these fields and of the schedule (a model adds its own fields to it)
    TINY: ClassVar = dict(steps=40, batch=16, lr=3e-3, warmup=5, eval_every=20, val_questions=32, word_dim=32,
                          hidden=64, mlp_hidden=64, dropout=0.0)


#: image CNNs trained from scratch on the pixels
PIXEL_BACKBONES = ("small", "resnet18", "lite0-ft")
#: (``lite0-ft``: the ImageNet EfficientNet-Lite0 fine-tuned on the pixels, :class:`Lite0Trunk`)
#: + ``lite0``: the frozen ImageNet EfficientNet-Lite0, whose maps at ``feature_stride`` are computed
#: once per image and cached in the data folder (:func:`backbone_features`); the model trains on them
BACKBONES = PIXEL_BACKBONES + ("lite0",)


@dataclass(frozen=True)
class ImageQuestionModelConfig(QuestionModelConfig):
    """A :class:`QuestionModelConfig` plus the image side: images resized to ``image_width`` x
    ``image_height``; ``backbone`` ``small`` (four stride-2 conv-BN-ReLU blocks of ``cnn_width``,
    2x, 4x, 8x channels) or ``resnet18`` (torchvision, ``weights=None``: trained from scratch), or
    the ImageNet Lite0: ``lite0`` (frozen, its maps at ``feature_stride`` cached per image; the mini
    and full profiles) or ``lite0-ft`` (fine-tuned on the pixels); its feature map is
    average-pooled to a 3 x 4 grid and projected to ``image_dim`` features (:class:`ImageEncoder`).
    ``cache_images`` keeps the resized train/val images in ``RUN/cache/``. ``cache_images`` and
    ``feature_stride`` have defaults; the other image fields are each model's own, keyword-only
    without a default."""

    image_width: int = field(kw_only=True)
    image_height: int = field(kw_only=True)
    backbone: str = field(kw_only=True)
    cnn_width: int = field(kw_only=True)
    image_dim: int = field(kw_only=True)
    cache_images: bool = True
    feature_stride: int = 16

    MUST_MATCH: ClassVar[tuple[str, ...]] = QuestionModelConfig.MUST_MATCH + (
        "image_width", "image_height", "backbone", "cnn_width", "image_dim", "feature_stride")

    def check(self) -> None:
        super().check()
        for k in ("image_width", "image_height", "cnn_width", "image_dim"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        check_backbone(self.backbone, self.feature_stride)


def check_backbone(backbone: str, feature_stride: int) -> None:
    """ValueError naming the field: a backbone not in :data:`BACKBONES`, or a ``feature_stride``
    the frozen backbone has no map at."""
    if backbone not in BACKBONES:
        raise ValueError(f"backbone {backbone!r}: valid: {', '.join(BACKBONES)}")
    if backbone in ("lite0", "lite0-ft") and feature_stride not in TAP_STRIDES:
        raise ValueError(f"feature_stride {feature_stride}: valid: {', '.join(map(str, TAP_STRIDES))}")


__all__ = ["QuestionModelConfig", "SmallQuestionModelConfig", "PIXEL_BACKBONES", "BACKBONES", "ImageQuestionModelConfig", "check_backbone"]
