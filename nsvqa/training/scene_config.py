"""The scene parser's run config: its defaults and profiles (no torch: the networks build themselves from it).

:class:`SceneParserConfig` is one frozen config (:class:`nsvqa.config.Config`) holding the run's
identity, its schedule and its two networks: the detector (``det_*`` fields) and the attribute head
(``head_*`` fields, ``crop_size``, ``part_crop``). Its defaults are the ``mini`` profile and
:attr:`SceneParserConfig.PROFILES` the fields the other profiles change. Checkpoints store the
resolved fields and the networks build from the fields alone
(:func:`parsers.scene.detector.from_config`, :meth:`parsers.scene.attribute_head.AttributeHead.from_config`),
so a checkpoint rebuilds the networks it was trained with. The networks' choices come from
:mod:`parsers.choices`, which loads no torch either.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from nsvqa.config import Config
from parsers.choices import (BACKBONES, HEAD_BACKBONES, HEAD_DEPTHS, HEAD_POOLS, MIN_STRIDES, PART_CROPS,
                             TORCHVISION_BOX_HEAD, TORCHVISION_MASK_CHANNELS, check_head_strides)

STAGES = ("detector", "attributes", "all")
#: the attribute head a run keeps: the last epoch's, or the epoch with the best end-to-end val
#: accuracy (:data:`SELECT_METRIC`)
ATTR_SELECTS = ("last", "e2e")
#: the end-to-end val figure ``attr_select="e2e"`` maximises: P-NSVQA with exact counting on the
#: ground-truth programs of val object questions (the parts' questions read the part detector too)
SELECT_METRIC = "pnsvqa-exact.objects"
#: the head's crop augmentation: none, or a random shift and scale of each crop (its pixels'
#: colours untouched, so that the highlights that tell metal from rubber stay as rendered)
ATTR_AUGMENTS = ("none", "shift")
#: the detector's classes (:class:`nsvqa.training.datasets.DetectionDataset`): the 21 shapes, the
#: shapes and the part names, one ``object`` class, or ``object`` and ``part``
MODES = ("objects", "objects+parts", "agnostic", "agnostic+parts")
#: the modes whose detector finds parts too
PART_MODES = ("objects+parts", "agnostic+parts")


@dataclass(frozen=True)
class SceneParserConfig(Config):
    """Resolved config of one scene-parser run (written to RUN_DIR/config.json and to both
    checkpoints). The defaults are the ``mini`` profile: sized to train on 2,000 mid images in
    <= 45 minutes on 2 CPU cores.

    Detector network (:func:`parsers.scene.detector.from_config`; images are never resized):
    ``det_backbone``, ``det_anchor_sizes``, ``det_trainable_layers``, ``det_rpn_post_nms_train``,
    ``det_rpn_post_nms_test``, ``det_rois_per_image``, ``det_min_stride``, ``det_box_head_size``,
    ``det_mask_head_channels``. Attribute head
    (:meth:`parsers.scene.attribute_head.AttributeHead.from_config`): ``head_backbone`` (and for the
    ResNet ``head_depth``, ``head_width``), on square crops of ``crop_size``. The other fields: the
    schedule of both stages (``det_crop_images``: training images whose matched detector crops join
    the attribute set; ``checkpoint_every``: detector iterations between checkpoints) and what the
    head trains on.
    """

    data: str
    profile: str = "mini"
    mode: str = "agnostic+parts"       # detector classes: MODES (parts: the listed ones)
    stage: str = "all"
    seed: int = 0
    device: str = "auto"              # CUDA when present, else the CPU (nsvqa.config.resolve_device)
    # schedule: detector ~24 min (bf16 autocast on a CPU with AMX; float32 where bf16 is emulated),
    # crops ~4 min, head 3 epochs ~13 min (channels-last), the learning-curve evaluations ~3 min
    det_iterations: int = 1300
    det_batch: int = 2
    det_lr: float = 4e-4
    attr_epochs: int = 3
    attr_batch: int = 64
    attr_lr: float = 1e-3
    det_crop_images: int = 400
    checkpoint_every: int = 100
    det_eval_every: int = 300
    det_eval_images: int = 50
    e2e_eval_images: int = 60
    det_amp: bool | None = None        # None: bf16 autocast where the device runs bf16 natively
    crop_size: int = 64
    attr_parts: bool = True            # the head also learns part crops (part name, color, material)
    max_train_images: int | None = None
    extra_parts: int = 1               # unlisted visible parts per object among the head's part crops
    detector: str | None = None        # detector.pt of another run (default: RUN_DIR/detector.pt)
    min_score: float = 0.5
    match_iou: float = 0.5
    # ImageNet EfficientNet-Lite0 + FPN: class-agnostic box AP50 0.94 on mid val after 300 iterations
    # at batch 2, where the same network from scratch finds nothing (0.00) and the former MobileNetV3
    # from scratch reached 0.16 (results/backbone_probe); + a stride-4 level (P2) with 8-px anchors:
    # the listed parts are 7-33 px (10th-90th percentile of their longer side at 320x240, median 13),
    # below the stride-8 level's reach
    det_backbone: str = "lite0"
    det_anchor_sizes: tuple[int, ...] = (8, 16, 32, 64, 128)  # ResNet-50-FPN uses torchvision's
    det_trainable_layers: int = 6      # from scratch: every MobileNetV3 stage trains
    # proposals and sampled RoIs per image; torchvision's defaults (2000 / 1000 / 512) are sized for
    # COCO's crowded 800-px images, a Super-CLEVR scene holds at most ~10 objects
    det_rpn_post_nms_train: int = 300
    det_rpn_post_nms_test: int = 200
    det_rois_per_image: int = 128
    det_min_stride: int = 4            # lite0: the finest FPN level (4 adds stage 2's map)
    det_box_head_size: int = TORCHVISION_BOX_HEAD          # the box head's MLP width
    det_mask_head_channels: int = TORCHVISION_MASK_CHANNELS  # the mask head's four convolutions
    det_mask_roi: int = 14             # the mask head's RoIAlign side (torchvision's); its masks are twice that
    det_image_scale: float = 1.0       # the detector resizes its images by this (2: small parts under bigger anchors)
    head_depth: int = 18               # ResNet depth: 18 or 34 (head_backbone "resnet" only)
    head_width: int = 32               # channels of the ResNet's first stage (head_backbone "resnet" only)
    head_backbone: str = "lite0"
    part_crop: str = "object"          # a part's crop: its object's box (context for left/right names) or its own
    # pool under the mask too: on ground-truth crops of 400 mid images, 3 epochs, part name 13.5% ->
    # 42.5%, part colour 42.0% -> 63.2%, shape 76.3% -> 82.8% (results/scene_parser_mini)
    head_pool: str = "mean+mask"       # Lite0 head: pool over the crop, or over the crop and under its mask
    head_strides: tuple[int, ...] = (16, 32)  # Lite0 head: the trunk's maps it pools
    # the attribute head's schedule (issue 81): which epoch's head the run keeps, when it stops, the
    # gradient clip, the crop augmentation, and the temperatures fitted on val
    attr_select: str = "last"          # the head kept: the last epoch's, or the best end-to-end val one
    attr_patience: int = 0             # attr_select "e2e": stop after this many epochs without a better head
    attr_clip: float = 0.0             # gradient norm clip of the head's steps (0: none)
    attr_augment: str = "none"         # crops as cut, or shifted and scaled a little ("shift": colours untouched)
    attr_part_share: float = 1.0       # the share of the part crops each head epoch draws afresh (1: all of them)
    calibrate: bool = False            # fit a temperature per attribute on the val crops, applied when parsing

    PROFILES: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "tiny": dict(det_iterations=4, det_lr=5e-4, attr_epochs=2, attr_batch=16, det_crop_images=2, checkpoint_every=2,
                     det_eval_every=0, e2e_eval_images=0, det_amp=False, crop_size=32, det_backbone="mobilenet_v3",
                     det_anchor_sizes=(8, 16, 32), det_rpn_post_nms_train=200, det_rpn_post_nms_test=100,
                     det_rois_per_image=64, det_min_stride=8, det_box_head_size=128, det_mask_head_channels=64,
                     head_width=16, head_backbone="resnet", head_pool="mean"),
        # make demo-train: the mini networks on a short schedule, inside 15 minutes on 2 CPU cores without
        # native bf16 (an AMD EPYC: 2.3 s per detector iteration at first on one thread beside the
        # question parser, 4-5 s once the mask head has positives, 2.7 s on both threads after it)
        "demo": dict(det_iterations=100, det_crop_images=0, checkpoint_every=50, det_eval_every=0, e2e_eval_images=0),
        "mini": {},
        # the authors: Mask R-CNN 30k iterations at batch 16, attribute net 100 epochs at batch 64; the
        # paper's scale (640x480) on a GPU: the same pretrained backbone, anchors doubled with the image
        # side (ResNet-50-FPN from scratch stays available as --det-backbone resnet50)
        "full": dict(det_iterations=30000, det_batch=16, attr_epochs=100, det_crop_images=4000, checkpoint_every=1000,
                     det_eval_every=0, e2e_eval_images=0, det_amp=False, crop_size=112,
                     det_anchor_sizes=(16, 32, 64, 128, 256), det_rpn_post_nms_train=2000, det_rpn_post_nms_test=1000,
                     det_rois_per_image=512, head_depth=34, head_width=64),
    }
    # checkpoints from before the pretrained trunk and the object-context part crops had neither
    # nor the head sizes below torchvision's (the tiny profile's smaller heads)
    ABSENT: ClassVar = {"head_backbone": "resnet", "part_crop": "part", "det_min_stride": 8, "head_pool": "mean",
                        "det_box_head_size": TORCHVISION_BOX_HEAD, "det_mask_head_channels": TORCHVISION_MASK_CHANNELS,
                        "det_mask_roi": 14, "det_image_scale": 1.0, "head_strides": (16, 32), "attr_select": "last", "attr_patience": 0,
                        "attr_clip": 0.0, "attr_augment": "none", "attr_part_share": 1.0, "calibrate": False}
    MUST_MATCH: ClassVar[tuple[str, ...]] = ("data", "profile", "mode", "seed", "crop_size", "det_backbone",
                                             "det_trainable_layers", "det_min_stride", "det_box_head_size",
                                             "det_mask_head_channels", "det_mask_roi", "det_image_scale", "head_depth", "head_width", "head_backbone",
                                             "part_crop", "head_pool", "head_strides")
    CHOICES: ClassVar = {"mode": MODES, "stage": STAGES, "det_backbone": BACKBONES, "head_depth": HEAD_DEPTHS, "det_min_stride": MIN_STRIDES,
               "head_backbone": HEAD_BACKBONES, "part_crop": PART_CROPS, "head_pool": HEAD_POOLS,
               "attr_select": ATTR_SELECTS, "attr_augment": ATTR_AUGMENTS}
    HELP: ClassVar = {
        "device": "torch device: auto (CUDA when present, else the CPU), cpu, cuda",
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
        "det_image_scale": "the detector resizes each image by this factor before its backbone and maps boxes and "
                           "masks back (2: a 6-px part meets the 8-px anchors of the finest level as 12 px; ~4x the "
                           "compute)",
        "det_mask_roi": "side of the RoIAlign grid the mask head reads (torchvision's: 14); the masks it predicts are "
                        "twice that (28 x 28), so 28 gives 56 x 56 masks: finer outlines of small objects",
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
        "head_strides": "the Lite0 head's trunk maps it pools, e.g. 8,16,32 (8 keeps more small highlights)",
        "attr_select": "the attribute head the run keeps: the last epoch's, or the epoch with the best end-to-end "
                       "val P-NSVQA (exact counting) on object questions with ground-truth programs (needs "
                       "e2e_eval_images > 0 and a detector)",
        "attr_patience": "with attr_select e2e: stop after this many epochs without a better head (0: every epoch)",
        "attr_clip": "clip the attribute head's gradients to this total norm (0: no clipping)",
        "attr_augment": "crop augmentation: none, or a random shift (up to 8 per cent of the side) and scale (0.9-1.1) of "
                        "each training crop, its colours untouched",
        "attr_part_share": "the share of the part crops each attribute-head epoch trains on, drawn afresh each epoch "
                           "(object crops: all of them every epoch); below 1, more epochs fit in the same minutes",
        "calibrate": "after training, fit one temperature per attribute on the val crops (the NLL's minimum); "
                     "stored with the head and applied when scenes are parsed",
        "e2e_eval_images": "val images parsed after each attribute-head epoch (this run's detector, the head as it "
                           "is) for NS-VQA / P-NSVQA accuracy on their ground-truth programs "
                           "(tensorboard 'end_to_end_val/*'); 0: none",
    }

    def check(self) -> None:
        super().check()
        for k in ("det_iterations", "attr_epochs", "det_crop_images", "extra_parts", "det_eval_every",
                  "e2e_eval_images"):
            if getattr(self, k) < 0:
                raise ValueError(f"{k} must be >= 0, got {getattr(self, k)}")
        for k in ("det_batch", "attr_batch", "checkpoint_every", "crop_size", "head_width", "det_rpn_post_nms_train",
                  "det_rpn_post_nms_test", "det_rois_per_image", "det_box_head_size", "det_mask_head_channels",
                  "det_mask_roi"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.det_eval_every % self.checkpoint_every:
            raise ValueError(f"det_eval_every ({self.det_eval_every}) must be a multiple of checkpoint_every "
                             f"({self.checkpoint_every}): the val AP is taken at a checkpoint")
        if self.det_eval_images < 1:
            raise ValueError(f"det_eval_images must be >= 1, got {self.det_eval_images}")
        if not self.det_anchor_sizes or min(self.det_anchor_sizes) < 1:
            raise ValueError(f"det_anchor_sizes must be one or more sizes >= 1, got {self.det_anchor_sizes}")
        check_head_strides(self.head_strides)
        if not self.det_image_scale > 0:
            raise ValueError(f"det_image_scale must be > 0, got {self.det_image_scale}")
        if not 0.0 < self.attr_part_share <= 1.0:
            raise ValueError(f"attr_part_share must be in (0, 1], got {self.attr_part_share}")
        if self.attr_patience < 0 or self.attr_clip < 0:
            raise ValueError(f"attr_patience and attr_clip must be >= 0, got {self.attr_patience}, {self.attr_clip}")
        if self.attr_select == "e2e" and self.e2e_eval_images < 1:
            raise ValueError("attr_select 'e2e' chooses on the end-to-end val accuracy: e2e_eval_images must be >= 1")
        if self.attr_patience and self.attr_select != "e2e":
            raise ValueError(f"attr_patience ({self.attr_patience}) stops on the end-to-end val accuracy: it needs "
                             f"attr_select 'e2e'")
        if self.max_train_images is not None and self.max_train_images < 1:
            raise ValueError(f"max_train_images must be >= 1 or None, got {self.max_train_images}")


__all__ = ["STAGES", "MODES", "PART_MODES", "ATTR_SELECTS", "ATTR_AUGMENTS", "SELECT_METRIC", "SceneParserConfig"]
