"""What the parsers' networks can be built with, in one place that loads no torch.

The network modules (:mod:`parsers.backbones`, :mod:`parsers.scene.detector`,
:mod:`parsers.scene.attribute_head`, :mod:`parsers.scene.crops`) check their arguments against
these tables, and the configs that choose among them
(:class:`nsvqa.training.scene_config.SceneParserConfig`, the baselines' image configs) validate
against the same tables without importing a network, so that importing a config loads no torch.
"""
from __future__ import annotations

# ---------------------------------------------------------------------------- the image backbone
#: strides of EfficientNet-Lite0's FPN taps (stages 2, 3, 5, 7: :data:`parsers.backbones.TAP_STAGES`)
TAP_STRIDES = (4, 8, 16, 32)
#: the finest tap a multi-scale Lite0 returns: stride 8, or also stride 4 (the FPN's P2)
MIN_STRIDES = (4, 8)

# ---------------------------------------------------------------------------- the detector
#: the detector's backbones (:func:`parsers.scene.detector.build_detector`)
BACKBONES = ("mobilenet_v3", "resnet50", "lite0", "lite0_scratch")
#: torchvision's Mask R-CNN heads: the box head's two-layer MLP width, the mask head's conv channels
TORCHVISION_BOX_HEAD, TORCHVISION_MASK_CHANNELS = 1024, 256

# ---------------------------------------------------------------------------- the attribute head
#: the attribute head's trunks (:class:`parsers.scene.attribute_head.AttributeHead`)
HEAD_BACKBONES = ("resnet", "lite0", "lite0_scratch")
#: depths of the ResNet trunk
HEAD_DEPTHS = (18, 34)
#: how the Lite0 trunk pools its maps into one feature: over the whole crop (``mean``), or over the
#: whole crop and, beside it, under the crop's mask (``mean+mask``): a part cut on its object's box
#: fills a few per cent of the crop, its colour and material are averaged away by a global mean
HEAD_POOLS = ("mean", "mean+mask")
#: the Lite0 trunk's maps the head may pool (strides; the default reads 16 and 32): stride 8 keeps
#: more of a crop's small highlights, at the cost of more features
HEAD_STRIDES = (8, 16, 32)


def check_head_strides(strides) -> None:
    """ValueError unless ``strides`` are one or more distinct values of :data:`HEAD_STRIDES`."""
    if not strides or len(set(strides)) != len(strides) or any(s not in HEAD_STRIDES for s in strides):
        raise ValueError(f"head_strides must be distinct values of {list(HEAD_STRIDES)}, got {list(strides)}")


#: the box a part's crop is cut from: the part's own, or its object's (the mask channel is the part's)
PART_CROPS = ("part", "object")

__all__ = ["TAP_STRIDES", "MIN_STRIDES", "BACKBONES", "TORCHVISION_BOX_HEAD", "TORCHVISION_MASK_CHANNELS",
           "HEAD_BACKBONES", "HEAD_DEPTHS", "HEAD_POOLS", "HEAD_STRIDES", "PART_CROPS", "check_head_strides"]
