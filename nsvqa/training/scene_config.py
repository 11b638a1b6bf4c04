"""The scene parser's run config, its training schedules, and the map from the config to its networks.

:class:`SceneParserConfig` is one frozen config (:class:`nsvqa.config.Config`) holding the run's
identity, its schedule (the table :data:`PROFILES` below) and its two networks: the detector
(``det_*`` fields, from :data:`parsers.scene.detector.PROFILES`) and the attribute head
(``head_depth``, ``head_width``, ``crop_size``, from :data:`parsers.scene.attribute_head.PROFILES`).
The tables are read when the config is resolved; checkpoints store the resolved fields and
:meth:`SceneParserConfig.build_detector` / :meth:`SceneParserConfig.build_attribute_head` build
from the fields alone, so a checkpoint rebuilds the networks it was trained with.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from torch import nn

from nsvqa.config import Config, as_fields
from nsvqa.training.datasets import MODES
from parsers.scene.attribute_head import HEAD_BACKBONES, HEAD_POOLS, PART_CROPS, PROFILES as HEAD_PROFILES, AttributeHead
from parsers.backbones import MIN_STRIDES
from parsers.scene.detector import (BACKBONES, PROFILES as DETECTOR_PROFILES, TORCHVISION_BOX_HEAD,
                                    TORCHVISION_MASK_CHANNELS, build_detector)

STAGES = ("detector", "attributes", "all")
HEAD_DEPTHS = (18, 34)


@dataclass(frozen=True)
class SceneTrainProfile:
    """Schedule of a profile (the network sizes live next to the networks)."""

    det_iterations: int
    det_batch: int
    det_lr: float
    attr_epochs: int
    attr_batch: int
    attr_lr: float
    det_crop_images: int   # training images whose matched detector crops join the attribute set
    checkpoint_every: int  # detector iterations between checkpoints
    det_eval_every: int = 0   # detector iterations between val APs (the learning curve; 0: none)
    det_eval_images: int = 50  # val images of those APs
    e2e_eval_images: int = 0  # val images parsed after each head epoch for NS-VQA / P-NSVQA accuracy (0: none)
    det_amp: bool | None = False  # detector training under bfloat16 autocast (None: if the device runs bf16 natively)


PROFILES = {
    "tiny": SceneTrainProfile(4, 2, 5e-4, 2, 16, 1e-3, 2, 2),
    # 2,000 mid images in <= 45 minutes on 2 CPU cores (issue 16): detector ~24 min (bf16 autocast on a
    # CPU with AMX; float32 where bf16 is emulated), crops ~4 min, head 3 epochs ~13 min (channels-last),
    # the learning-curve evaluations ~3 min
    "mini": SceneTrainProfile(1300, 2, 4e-4, 3, 64, 1e-3, 400, 100, det_eval_every=300, e2e_eval_images=60,
                              det_amp=None),
    # make demo-train: the mini networks on a short schedule, inside 15 minutes on 2 CPU cores without
    # native bf16 (an AMD EPYC: 2.3 s per detector iteration at first on one thread beside the
    # question parser, 4-5 s once the mask head has positives, 2.7 s on both threads after it)
    "demo": SceneTrainProfile(100, 2, 4e-4, 3, 64, 1e-3, 0, 50, det_amp=None),
    # the authors: Mask R-CNN 30k iterations at batch 16, attribute net 100 epochs at batch 64
    "full": SceneTrainProfile(30000, 16, 4e-4, 100, 64, 1e-3, 4000, 1000),
}


@dataclass(frozen=True)
class SceneParserConfig(Config):
    """Resolved config of one scene-parser run (written to RUN_DIR/config.json and to both
    checkpoints).

    Detector network (:func:`parsers.scene.detector.build_detector`): ``det_backbone``,
    ``det_anchor_sizes``, ``det_trainable_layers``, ``det_rpn_post_nms_train``,
    ``det_rpn_post_nms_test``, ``det_rois_per_image``, ``det_min_stride``, ``det_box_head_size``,
    ``det_mask_head_channels``. Attribute head
    (:class:`parsers.scene.attribute_head.AttributeHead`): ``head_backbone`` (and for the
    ResNet ``head_depth``, ``head_width``), on square crops of ``crop_size``. The other fields: the schedule of both stages and what the head
    trains on.
    """

    data: str
    profile: str = "mini"
    mode: str = "agnostic+parts"       # detector classes: datasets.MODES (parts: the listed ones)
    stage: str = "all"
    seed: int = 0
    device: str = "cpu"
    det_iterations: int = 0
    det_batch: int = 0
    det_lr: float = 0.0
    attr_epochs: int = 0
    attr_batch: int = 0
    attr_lr: float = 0.0
    det_crop_images: int = 0
    checkpoint_every: int = 0
    det_eval_every: int = 0
    det_eval_images: int = 50
    e2e_eval_images: int = 0
    det_amp: bool | None = None        # None: bf16 autocast where the device runs bf16 natively
    crop_size: int = 0
    attr_parts: bool = True            # the head also learns part crops (part name, color, material)
    max_train_images: int | None = None
    extra_parts: int = 1               # unlisted visible parts per object among the head's part crops
    detector: str | None = None        # detector.pt of another run (default: RUN_DIR/detector.pt)
    min_score: float = 0.5
    match_iou: float = 0.5
    det_backbone: str = ""
    det_anchor_sizes: tuple[int, ...] = ()
    det_trainable_layers: int = 0
    det_rpn_post_nms_train: int = 0
    det_rpn_post_nms_test: int = 0
    det_rois_per_image: int = 0
    det_min_stride: int = 8
    det_box_head_size: int = 0
    det_mask_head_channels: int = 0
    head_depth: int = 0
    head_width: int = 0
    head_backbone: str = "resnet"
    part_crop: str = "part"            # the box a part's crop is cut from: its own, or its object's
    head_pool: str = "mean"            # Lite0 head: pool over the crop, or over the crop and under its mask

    PROFILES: ClassVar = PROFILES  # the schedules above
    # checkpoints from before the pretrained trunk and the object-context part crops had neither
    # nor the head sizes below torchvision's (the tiny profile's smaller heads)
    ABSENT: ClassVar = {"head_backbone": "resnet", "part_crop": "part", "det_min_stride": 8, "head_pool": "mean",
                        "det_box_head_size": TORCHVISION_BOX_HEAD, "det_mask_head_channels": TORCHVISION_MASK_CHANNELS}
    MUST_MATCH: ClassVar[tuple[str, ...]] = ("data", "profile", "mode", "seed", "crop_size", "det_backbone",
                                             "det_trainable_layers", "det_min_stride", "det_box_head_size",
                                             "det_mask_head_channels", "head_depth", "head_width", "head_backbone",
                                             "part_crop", "head_pool")
    CHOICES: ClassVar = {"mode": MODES, "stage": STAGES, "det_backbone": BACKBONES, "head_depth": HEAD_DEPTHS, "det_min_stride": MIN_STRIDES,
               "head_backbone": HEAD_BACKBONES, "part_crop": PART_CROPS, "head_pool": HEAD_POOLS}
    HELP: ClassVar = {
        "mode": "detector classes: the 21 shapes; shapes and part names; one 'object' class (the attribute "
                "head tells the shape); or 'object' and 'part' (the head tells shape and part name). The parts "
                "modes detect the parts the scenes list",
        "stage": "what to train: the detector, the attribute head (on RUN_DIR/detector.pt or --detector), or both",
        "attr_parts": "train the head on part crops too (--no-part-crops: object crops only)",
        "detector": "detector.pt of another run for the attribute stage (default: RUN_DIR/detector.pt)",
        "min_score": "detections kept: for the head's detector crops and the parser's default",
        "det_anchor_sizes": "anchor sizes in pixels, e.g. 8,16,32",
        "det_box_head_size": "width of the detector's two-layer box head (torchvision's: 1024)",
        "det_mask_head_channels": "channels of the detector's four mask-head convolutions (torchvision's: 256)",
        "part_crop": "the box a part's crop is cut from (its mask is the 4th channel either way): 'object' shows "
                     "the head the whole object, so that it can tell a left door from a right one; 'part' crops "
                     "the part alone",
        "head_pool": "how the Lite0 head pools its stride-16/32 maps: over the whole crop ('mean'), or also "
                     "under the crop's mask ('mean+mask'), which keeps a small part's colour and material",
        "det_eval_every": "detector iterations between class-agnostic val APs of objects and listed parts (on "
                          "det_eval_images images; tensorboard 'detector_val/*', the learning curve); 0: none",
        "det_amp": "train the detector under bfloat16 autocast (float32 weights and losses): 1.65x faster per "
                   "iteration on a CPU with AMX/AVX512-BF16, ~9x slower on one without; none (the mini and demo "
                   "default): on where the device runs bf16 natively (nsvqa.training.engine.native_bf16)",
        "e2e_eval_images": "val images parsed after each attribute-head epoch (this run's detector, the head as it "
                           "is) for NS-VQA / P-NSVQA accuracy on their ground-truth programs "
                           "(tensorboard 'end_to_end_val/*'); 0: none",
    }

    @classmethod
    def profile_defaults(cls, profile: str) -> dict[str, Any]:
        """The schedule of :data:`PROFILES`, the detector of :data:`parsers.scene.detector.PROFILES`
        (as ``det_*``) and the head of :data:`parsers.scene.attribute_head.PROFILES`."""
        out = super().profile_defaults(profile)
        head = HEAD_PROFILES[profile]
        out |= {f"det_{k}": v for k, v in as_fields(DETECTOR_PROFILES[profile]).items()}
        out |= {"crop_size": head.crop_size, "head_depth": head.depth, "head_width": head.width,
                "head_backbone": head.backbone, "part_crop": head.part_crop,
                "head_pool": head.pool}
        return out

    def check(self) -> None:
        super().check()
        for k in ("det_iterations", "attr_epochs", "det_crop_images", "extra_parts", "det_eval_every",
                  "e2e_eval_images"):
            if getattr(self, k) < 0:
                raise ValueError(f"{k} must be >= 0, got {getattr(self, k)}")
        for k in ("det_batch", "attr_batch", "checkpoint_every", "crop_size", "head_width", "det_rpn_post_nms_train",
                  "det_rpn_post_nms_test", "det_rois_per_image", "det_box_head_size", "det_mask_head_channels"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.det_eval_every % self.checkpoint_every:
            raise ValueError(f"det_eval_every ({self.det_eval_every}) must be a multiple of checkpoint_every "
                             f"({self.checkpoint_every}): the val AP is taken at a checkpoint")
        if self.det_eval_images < 1:
            raise ValueError(f"det_eval_images must be >= 1, got {self.det_eval_images}")
        if not self.det_anchor_sizes or min(self.det_anchor_sizes) < 1:
            raise ValueError(f"det_anchor_sizes must be one or more sizes >= 1, got {self.det_anchor_sizes}")
        if self.max_train_images is not None and self.max_train_images < 1:
            raise ValueError(f"max_train_images must be >= 1 or None, got {self.max_train_images}")

    # ------------------------------------------------------------------ networks
    def detector_args(self) -> dict[str, Any]:
        """The keyword arguments of :func:`parsers.scene.detector.build_detector` (the network)."""
        return {"backbone": self.det_backbone, "anchor_sizes": tuple(self.det_anchor_sizes),
                "trainable_layers": self.det_trainable_layers, "rpn_post_nms_train": self.det_rpn_post_nms_train,
                "rpn_post_nms_test": self.det_rpn_post_nms_test, "rois_per_image": self.det_rois_per_image,
                "min_stride": self.det_min_stride, "box_head_size": self.det_box_head_size,
                "mask_head_channels": self.det_mask_head_channels}

    def build_detector(self, num_classes: int, height: int, width: int, pretrained: bool = True) -> nn.Module:
        """The (untrained) Mask R-CNN of this config for ``num_classes`` classes (background
        included) on ``height x width`` images. ``pretrained=False``: the same network without
        reading the ``lite0`` backbone's ImageNet weights (a checkpoint's state dict replaces them
        all)."""
        return build_detector(num_classes, height, width, **self.detector_args(),
                              weights="imagenet" if pretrained else None)

    def build_attribute_head(self, num_values: Mapping[str, int], pretrained: bool = True) -> AttributeHead:
        """The (untrained) attribute head of this config; ``num_values``: attribute -> classes.
        ``pretrained=False``: without reading the ``lite0`` trunk's ImageNet weights (a
        checkpoint's state dict replaces them all)."""
        return AttributeHead(num_values, self.head_depth, self.head_width, self.head_backbone,
                             weights="imagenet" if pretrained else None, pool=self.head_pool)


__all__ = ["PROFILES", "STAGES", "MODES", "SceneTrainProfile", "SceneParserConfig"]
