"""The network parts the learned baselines share: the question encoder (word embeddings and an LSTM,
:class:`QuestionEncoder`), the classifier head (:func:`mlp`), the image encoder (a CNN, its map
pooled to a 3 x 4 grid and projected, :class:`ImageEncoder`) and the ImageNet EfficientNet-Lite0
trunk fine-tuned on the pixels (:class:`Lite0Trunk`).
"""
from __future__ import annotations

import torch
from torch import nn
from torchvision.models import resnet18

from parsers.backbones import TAP_CHANNELS, EfficientNetLite0
from parsers.question.vocab import NULL_ID

from .images import IMAGE_MEAN, IMAGE_STD
from .neural_config import BACKBONES


class Lite0Trunk(nn.Module):
    """The ImageNet EfficientNet-Lite0 (:class:`parsers.backbones.EfficientNetLite0`, BatchNorm
    frozen) trained on the pixels: its map at ``feature_stride``.

    ``forward(images (B, 3, H, W) normalised as :func:`normalise_images`) -> (B, C, H / s, W / s)``.
    """

    def __init__(self, feature_stride: int = 16):
        super().__init__()

        self.net = EfficientNetLite0(weights="imagenet", min_stride=min(8, feature_stride))
        self.key = str(self.net.strides.index(feature_stride))
        self.channels = TAP_CHANNELS[feature_stride]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images * IMAGE_STD + IMAGE_MEAN)[self.key]  # back to [0, 1]: the net normalises


class QuestionEncoder(nn.Module):
    """Word embeddings and an LSTM; the question's feature is the last layer's final hidden state.

    Args:
        num_words: size of the word vocabulary (``<NULL>`` = 0 is the padding index).
        word_dim, hidden, layers, dropout: sizes (dropout between LSTM layers).

    ``forward(words (B, L) int64, lengths (B,) int64) -> (B, hidden)``.
    """

    def __init__(self, num_words: int, word_dim: int, hidden: int, layers: int = 1, dropout: float = 0.0):
        super().__init__()
        self.embed = nn.Embedding(num_words, word_dim, padding_idx=NULL_ID)
        self.lstm = nn.LSTM(word_dim, hidden, num_layers=layers, batch_first=True,
                            dropout=dropout if layers > 1 else 0.0)
        self.out_dim = hidden

    def forward(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(words), lengths.cpu().clamp(min=1), batch_first=True,
                                                   enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return h[-1]


def mlp(in_dim: int, hidden: int, out_dim: int, dropout: float) -> nn.Sequential:
    """Linear -> ReLU -> Dropout -> Linear."""
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(inplace=True), nn.Dropout(dropout),
                         nn.Linear(hidden, out_dim))


class ImageEncoder(nn.Module):
    """A CNN, its feature map pooled to a 3 x 4 grid and projected.

    Args:
        backbone: ``small`` (4 conv-BN-ReLU blocks, stride 2 each, ``width`` x 1, 2, 4, 8 channels)
            or ``resnet18`` (torchvision, ``weights=None``, up to ``layer4``), both trained from
            scratch on the pixels; ``lite0-ft``: the ImageNet EfficientNet-Lite0 fine-tuned on the
            pixels (:class:`Lite0Trunk`); or ``lite0``: the frozen ImageNet EfficientNet-Lite0's
            cached maps at ``feature_stride`` are the input, one trained conv3x3-BN-ReLU of
            ``8 x width`` channels on them.
        width: channels of the first small block (unused by resnet18).
        out_dim: feature size.
        feature_stride: ``lite0``: the stride of the cached maps (their channels follow from it).

    ``forward(images (B, 3, H, W) float, or cached maps (B, C, h, w)) -> (B, out_dim)``.
    """

    GRID = (3, 4)

    def __init__(self, backbone: str, width: int, out_dim: int, feature_stride: int = 16):
        super().__init__()
        if backbone == "lite0":
            channels = 8 * width
            self.body = nn.Sequential(nn.Conv2d(TAP_CHANNELS[feature_stride], channels, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(channels), nn.ReLU(inplace=True))
        elif backbone == "lite0-ft":
            self.body = Lite0Trunk(feature_stride)
            channels = self.body.channels
        elif backbone == "small":
            layers, c_in = [], 3
            for k in range(4):
                c = width * 2 ** k
                layers += [nn.Conv2d(c_in, c, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c),
                           nn.ReLU(inplace=True)]
                c_in = c
            self.body = nn.Sequential(*layers)
            channels = c_in
        elif backbone == "resnet18":
            r = resnet18(weights=None)
            self.body = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2, r.layer3, r.layer4)
            channels = 512
        else:
            raise ValueError(f"backbone {backbone!r}: valid: {', '.join(BACKBONES)}")
        self.pool = nn.AdaptiveAvgPool2d(self.GRID)
        self.proj = nn.Sequential(nn.Linear(channels * self.GRID[0] * self.GRID[1], out_dim), nn.ReLU(inplace=True))
        self.out_dim = out_dim

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.proj(self.pool(self.body(images)).flatten(1))


__all__ = ["QuestionEncoder", "mlp", "ImageEncoder", "Lite0Trunk"]
