"""NSCL's configuration (:class:`NSCLConfig`: its defaults and profiles) and its curriculum syntax."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from executors.dsl import VALUE_TYPES

from baselines.common import check_backbone
from baselines.config import RUN_MUST_MATCH, check_training
from nsvqa.models import ModelConfig


EPS = 1e-6
MAX_COUNT = 10
CNN_STRIDE = 4
#: ``small``: the CNN trained from scratch (stride 4); ``lite0``: the frozen ImageNet
#: EfficientNet-Lite0's cached maps at ``feature_stride`` (:func:`baselines.common.backbone_features`)
NSCL_BACKBONES = ("small", "lite0")
#: the detection score cuts :meth:`NSCLBaseline.tune` chooses from on val, and where it saves its choice
MIN_SCORE_CANDIDATES = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7)
_VALUE_TO_ATTRIBUTE = {t: a for a, t in VALUE_TYPES.items()}
# ---------------------------------------------------------------------------- config
@dataclass(frozen=True)
class NSCLConfig(ModelConfig):
    """Resolved config of the NSCL baseline (written to config.json): the run fields and the Adam
    schedule (:mod:`baselines.config`), where each step
    takes ``images_per_batch`` images and up to ``questions_per_image`` questions of each.
    Network: images resized to ``image_width`` x ``image_height``, a CNN of ``cnn_width`` x 1, 2, 4, 4 channels, RoI grids of ``roi_size``,
    object and part features of ``feature_dim``, concept spaces of ``concept_dim``. ``curriculum``:
    see the module docstring (empty: no curriculum). ``min_score``: detections kept at prediction.
    ``count_sigma``: the spread of the count answer's distribution.

    The defaults are the ``mini`` profile; :attr:`PROFILES` holds the fields the other profiles change.
    """

    model: str = "nscl"
    ontology: str = "superclevr"
    max_train_questions: int | None = None
    steps: int = 8000
    lr: float = 5e-4
    weight_decay: float = 0.0
    warmup: int = 100
    eval_every: int = 1000
    val_questions: int = 1000
    grad_clip: float = 5.0
    images_per_batch: int = 8
    questions_per_image: int = 4
    image_width: int = 320
    image_height: int = 240
    cnn_width: int = 16
    roi_size: int = 4
    feature_dim: int = 64
    concept_dim: int = 32
    curriculum: str = "0.1:5:6,0.3:9:8"
    min_score: float = 0.5
    count_sigma: float = 0.5
    cache_images: bool = True
    backbone: str = "lite0"
    feature_stride: int = 16

    MUST_MATCH: ClassVar[tuple[str, ...]] = RUN_MUST_MATCH + (
        "images_per_batch", "questions_per_image", "image_width", "image_height", "cnn_width", "roi_size",
        "feature_dim", "concept_dim", "curriculum", "backbone", "feature_stride")
    #: checkpoints written before the field existed: the CNN trained from scratch
    ABSENT: ClassVar[dict[str, Any]] = {"backbone": "small"}
    PROFILES: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": dict(steps=40, images_per_batch=4, lr=3e-3, warmup=5, eval_every=20, val_questions=32, image_width=64,
                     image_height=48, backbone="small", cnn_width=8, roi_size=3, feature_dim=32, concept_dim=16,
                     curriculum="0.25:6:10"),
        "demo": dict(steps=2000, val_questions=500),
        # on the frozen Lite0's cached stride-16 maps of the full 320x240 images: RoIAlign over
        # the 112-channel maps, no CNN to train, so a step costs the RoI features and the soft executor
        # only: ~10 steps/s on 2 threads. Measured on mid (ground-truth boxes and programs, val 1,000
        # questions): 3,000 steps 57.7% and still rising, so 8,000 steps (~14 min)
        "mini": {},
        # a GPU run (not measured): full-size images, wider CNN, longer schedule
        "full": dict(steps=60000, images_per_batch=32, questions_per_image=8, lr=1e-3, warmup=1000, eval_every=2000,
                     val_questions=5000, cnn_width=32, roi_size=7, feature_dim=256, concept_dim=64,
                     curriculum="0.05:5:6,0.15:9:8,0.3:13:10"),
    }

    def check(self) -> None:
        super().check()
        check_training(self)
        for k in ("images_per_batch", "questions_per_image", "image_width", "image_height", "cnn_width", "roi_size",
                  "feature_dim", "concept_dim"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score must be in [0, 1], got {self.min_score}")
        if self.count_sigma <= 0:
            raise ValueError(f"count_sigma must be > 0, got {self.count_sigma}")
        parse_curriculum(self.curriculum)
        if self.backbone not in NSCL_BACKBONES:
            raise ValueError(f"backbone {self.backbone!r}: valid: {', '.join(NSCL_BACKBONES)}")
        check_backbone(self.backbone, self.feature_stride)


def parse_curriculum(text: str) -> list[tuple[float, int, int]]:
    """``"0.2:5:6,0.5:9:8"`` -> [(0.2, 5, 6), (0.5, 9, 8)]: stages (end fraction of the steps, most
    program nodes, most objects), fractions increasing in (0, 1].

    Raises:
        ValueError: a malformed stage (the stage and the expected form named).
    """
    stages: list[tuple[float, int, int]] = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        try:
            f, n, o = item.split(":")
            stage = (float(f), int(n), int(o))
        except ValueError:
            raise ValueError(f"curriculum stage {item!r}: expected FRACTION:MAX_NODES:MAX_OBJECTS") from None
        if not (0.0 < stage[0] <= 1.0) or stage[1] < 1 or stage[2] < 1 or (stages and stage[0] <= stages[-1][0]):
            raise ValueError(f"curriculum stage {item!r}: fractions must increase in (0, 1], "
                             f"nodes and objects be >= 1")
        stages.append(stage)
    return stages
