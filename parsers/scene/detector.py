"""The object (and part) detector: torchvision Mask R-CNN, trained from scratch.

No pretrained weights can be downloaded here, so every backbone starts from random weights
(``weights=None``). ``min_size`` / ``max_size`` are the real image size: torchvision otherwise
resizes every image to 800 px, which multiplies the CPU cost for 320x240 images by ~8.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from torch import nn

BACKBONES = ("mobilenet_v3", "resnet50")


@dataclass(frozen=True)
class DetectorProfile:
    """The network of a profile (images are never resized): the arguments of
    :func:`build_detector` after the image size. A scene-parser config copies them into its own
    fields (``det_*``), so that a checkpoint rebuilds the network it was trained with."""

    backbone: str
    anchor_sizes: tuple[int, ...]  # MobileNetV3-FPN anchors; ResNet-50-FPN uses torchvision's
    trainable_layers: int = 6      # from scratch: every MobileNetV3 stage trains
    # proposals and sampled RoIs per image; torchvision's defaults (2000 / 1000 / 512) are sized for
    # COCO's crowded 800-px images, a Super-CLEVR scene holds at most ~10 objects
    rpn_post_nms_train: int = 2000
    rpn_post_nms_test: int = 1000
    rois_per_image: int = 512


PROFILES = {"tiny": DetectorProfile("mobilenet_v3", (8, 16, 32), rpn_post_nms_train=200, rpn_post_nms_test=100,
                                    rois_per_image=64),
            "mini": DetectorProfile("mobilenet_v3", (16, 32, 64, 128), rpn_post_nms_train=300, rpn_post_nms_test=200,
                                    rois_per_image=128),
            "full": DetectorProfile("resnet50", (32, 64, 128, 256, 512))}
PROFILES["demo"] = PROFILES["mini"]  # the demo profile trains the mini networks for less time


def build_detector(num_classes: int, height: int, width: int, *, backbone: str, anchor_sizes: Sequence[int],
                   trainable_layers: int = 6, rpn_post_nms_train: int = 2000, rpn_post_nms_test: int = 1000,
                   rois_per_image: int = 512, detections_per_image: int = 100,
                   score_thresh: float = 0.05) -> nn.Module:
    """A Mask R-CNN for ``num_classes`` classes (background included) on ``height x width`` images.

    Args:
        num_classes: classes including the background (21 shapes + 1, or + the part names).
        height, width: the image size; the model keeps it (``min_size``/``max_size``).
        backbone, anchor_sizes, trainable_layers, rpn_post_nms_train, rpn_post_nms_test,
            rois_per_image: the network, see :class:`DetectorProfile` (a profile's values:
            ``build_detector(n, h, w, **asdict(PROFILES[name]))``).
        detections_per_image, score_thresh: what the model returns at test time.

    Raises:
        ValueError: unknown backbone (the valid ones listed), or no anchor sizes.
    """
    from torchvision.models.detection import MaskRCNN, maskrcnn_resnet50_fpn
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.backbone_utils import mobilenet_backbone
    from torchvision.ops import MultiScaleRoIAlign

    if backbone not in BACKBONES:
        raise ValueError(f"unknown detector backbone {backbone!r}; valid: {list(BACKBONES)}")
    if not anchor_sizes:
        raise ValueError("anchor_sizes: at least one anchor size is needed")
    size = dict(min_size=min(height, width), max_size=max(height, width),
                box_detections_per_img=detections_per_image, box_score_thresh=score_thresh,
                rpn_pre_nms_top_n_train=2 * rpn_post_nms_train, rpn_post_nms_top_n_train=rpn_post_nms_train,
                rpn_pre_nms_top_n_test=2 * rpn_post_nms_test, rpn_post_nms_top_n_test=rpn_post_nms_test,
                box_batch_size_per_image=rois_per_image)
    if backbone == "resnet50":
        # without pretrained weights torchvision trains every backbone layer
        return maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=num_classes, **size)
    # torchvision's default FrozenBatchNorm2d is meant for pretrained weights: from random weights
    # it normalises nothing (identity statistics), so a from-scratch backbone needs real BatchNorm.
    net = mobilenet_backbone(backbone_name="mobilenet_v3_large", weights=None, fpn=True,
                             trainable_layers=trainable_layers, norm_layer=nn.BatchNorm2d)
    n_maps = 3  # mobilenet FPN: two feature levels + max pool
    anchors = AnchorGenerator(sizes=(tuple(anchor_sizes),) * n_maps, aspect_ratios=((0.5, 1.0, 2.0),) * n_maps)
    names = ["0", "1"]
    return MaskRCNN(net, num_classes=num_classes, rpn_anchor_generator=anchors,
                    box_roi_pool=MultiScaleRoIAlign(names, 7, 2), mask_roi_pool=MultiScaleRoIAlign(names, 14, 2),
                    **size)


__all__ = ["BACKBONES", "DetectorProfile", "PROFILES", "build_detector"]
