"""FiLM (Perez et al., 2018): a question GRU predicts per-channel (γ, β) that modulate a CNN's
residual blocks; a classifier over the answers reads the modulated feature map.

Network (as the paper and its reference recipe; sizes per profile):

* question: word embeddings -> GRU (``layers`` x ``hidden``), the final hidden state ->
  one linear layer -> (Δγ, β) for every channel of every block; γ = 1 + Δγ (the reference
  recipe's ``gamma_baseline 1``: an untrained generator starts near the identity);
* image: ``lite0`` = the frozen ImageNet EfficientNet-Lite0's maps at ``feature_stride`` (112
  channels at stride 16), computed once per image and cached (:func:`baselines.common.backbone_features`):
  the paper's recipe of frozen ImageNet conv4 features, with the one pretrained CNN installable
  here; or a CNN trained from scratch: ``small`` = ``cnn_layers`` stride-2 conv-BN-ReLU blocks of
  ``cnn_width`` x 1, 2, 4, ... channels; ``resnet18`` = torchvision's up to ``layer3`` (stride 16,
  256 channels), ``weights=None``; then a stem: [features ⊕ coords] -> conv3x3 -> BN -> ReLU to
  ``module_dim`` maps;
* ``num_blocks`` FiLMed residual blocks: [x ⊕ coords] -> conv1x1 -> ReLU (= r) -> conv3x3 ->
  BatchNorm(affine=False) -> FiLM(γ, β) -> ReLU, plus r (the residual is the block's projected
  input, as in the reference code);
* classifier: [x ⊕ coords] -> conv1x1 to ``classifier_proj`` -> BN -> ReLU -> global max pool ->
  Linear(``mlp_hidden``) -> ReLU -> Dropout -> Linear over the answers.

``coords`` are two maps of the x and y position in [-1, 1], concatenated to the stem, block and
classifier inputs. Trained and run by :mod:`baselines.common` (Adam with weight decay 1e-5 as in the
paper); the prediction's probability is the softmax probability of the answer. Differences from the
paper: the frozen features are EfficientNet-Lite0's (stride 16, 112 channels) rather than
ResNet-101's conv4 (1024 channels), or a CNN trained from scratch; the classifier MLP has no batch
norm (a batch of one question must still train); the CPU profiles are much smaller.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional as F
from torchvision.models import resnet18

from nsvqa.models import ModelConfig
from parsers.backbones import TAP_CHANNELS
from parsers.question.vocab import NULL_ID

from .common import BACKBONES, Lite0Trunk, NeuralBaseline, check_backbone, mlp
from .neural_config import QUESTION_MUST_MATCH, QUESTION_TINY, check_question


@dataclass(frozen=True)
class FiLMConfig(ModelConfig):
    """film's config, and the config of its family (``film-dense``, ``film-trace`` derive from it):
    the run fields and the schedule (:mod:`baselines.config`), the question fields
    (:mod:`baselines.neural_config`: ``word_dim``, ``hidden``, ``layers``: the GRU; ``mlp_hidden``,
    ``dropout``: the classifier MLP), then the image side and the FiLMed network.

    Images are resized to ``image_width`` x ``image_height`` (``cache_images`` keeps the resized
    train/val images in ``RUN/cache/``); ``backbone`` ``small`` (``cnn_layers`` stride-2 blocks of
    ``cnn_width`` x 1, 2, 4, ... channels) or ``resnet18`` (``weights=None``, up to ``layer3``;
    ``cnn_width`` and ``cnn_layers`` unused), or the ImageNet Lite0 at ``feature_stride``: ``lite0``
    (frozen, its maps cached per image; the mini and full profiles) or ``lite0-ft`` (fine-tuned on
    the pixels); ``num_blocks`` FiLMed residual blocks of
    ``module_dim`` feature maps; ``classifier_proj`` maps before the global max pool.

    The defaults are the ``mini`` profile; :attr:`PROFILES` holds the fields the other profiles change.
    """

    model: str = "film"
    ontology: str = "superclevr"
    max_train_questions: int | None = None
    steps: int = 6000
    lr: float = 1e-3
    weight_decay: float = 1e-5  # the paper's
    warmup: int = 100
    eval_every: int = 2000
    val_questions: int = 1000
    grad_clip: float = 5.0
    batch: int = 64
    min_word_count: int = 1
    word_dim: int = 64
    hidden: int = 128
    layers: int = 1
    mlp_hidden: int = 256
    dropout: float = 0.1
    image_width: int = 320
    image_height: int = 240
    backbone: str = "lite0"
    cnn_width: int = 8
    cnn_layers: int = 3
    num_blocks: int = 2
    module_dim: int = 32
    classifier_proj: int = 128
    cache_images: bool = True
    feature_stride: int = 16

    PROFILES: ClassVar = {
        "tiny": dict(QUESTION_TINY, image_width=64, image_height=48, backbone="small",
                     classifier_proj=64),
        "demo": dict(steps=1000, eval_every=500, val_questions=500),  # mini, shorter
        # lr 1e-3 rather than the paper's 3e-4: a short schedule on a small network. On the frozen
        # Lite0's cached stride-16 maps of the full 320x240 images (20 x 15): test 38.6% on mid after
        # 6,000 steps (19 min at 1 thread), the question-only LSTM 36.2%, the from-scratch CNN at
        # 128x96 had 34.1%. 4 blocks x 64 maps in the same budget (2,500 steps) had 37.5%
        # (results/image_baselines_mini)
        "mini": {},
        # the paper / reference recipe: 4 blocks of 128 maps, GRU 4096 over 200-d embeddings, classifier
        # 512 maps -> 1024 hidden, Adam 3e-4, weight decay 1e-5, no dropout; Super-CLEVR's schedule:
        # 100k iterations at batch 256. The frozen Lite0's stride-16 maps of the 320 x 240 images (20 x 15;
        # the recipe's ResNet-101 conv4 gives 14 x 14 of 224 x 224). A GPU run (not yet measured)
        "full": dict(steps=100000, batch=256, lr=3e-4, warmup=1000, val_questions=5000, word_dim=200, hidden=4096,
                     mlp_hidden=1024, dropout=0.0, cnn_width=64, cnn_layers=4, num_blocks=4, module_dim=128,
                     classifier_proj=512),
    }
    #: configs saved before the frozen Lite0 existed trained the small CNN from scratch
    ABSENT: ClassVar = {"backbone": "small"}

    MUST_MATCH: ClassVar[tuple[str, ...]] = QUESTION_MUST_MATCH + (
        "image_width", "image_height", "backbone", "cnn_width", "cnn_layers", "num_blocks", "module_dim",
        "classifier_proj", "feature_stride")

    def check(self) -> None:
        super().check()
        check_question(self)
        for k in ("image_width", "image_height", "cnn_width", "cnn_layers", "num_blocks", "module_dim",
                  "classifier_proj"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        check_backbone(self.backbone, self.feature_stride)


# ---------------------------------------------------------------------------- network parts
def coord_maps(x: torch.Tensor) -> torch.Tensor:
    """The x and y coordinate maps of feature map ``x`` (B, C, H, W): (B, 2, H, W), each in [-1, 1]
    (channel 0: x, left to right; channel 1: y, top to bottom)."""
    b, _, h, w = x.shape
    xs = torch.linspace(-1.0, 1.0, w, device=x.device, dtype=x.dtype) if w > 1 else x.new_zeros(1)
    ys = torch.linspace(-1.0, 1.0, h, device=x.device, dtype=x.dtype) if h > 1 else x.new_zeros(1)
    grid = torch.stack([xs.view(1, w).expand(h, w), ys.view(h, 1).expand(h, w)])
    return grid.unsqueeze(0).expand(b, 2, h, w)


def with_coords(x: torch.Tensor) -> torch.Tensor:
    """(B, C, H, W) -> (B, C + 2, H, W): ``x`` with its coordinate maps appended."""
    return torch.cat([x, coord_maps(x)], dim=1)


def film(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Feature-wise linear modulation: ``gamma * x + beta`` per channel.

    Args:
        x: (B, C, H, W); gamma, beta: (B, C).
    """
    return gamma[:, :, None, None] * x + beta[:, :, None, None]


class GRUEncoder(nn.Module):
    """Word embeddings and a GRU; the question's feature is the last layer's final hidden state
    (at each question's last word).

    ``forward(words (B, L) int64, lengths (B,) int64) -> (B, hidden)``.
    """

    def __init__(self, num_words: int, word_dim: int, hidden: int, layers: int = 1):
        super().__init__()
        self.embed = nn.Embedding(num_words, word_dim, padding_idx=NULL_ID)
        self.gru = nn.GRU(word_dim, hidden, num_layers=layers, batch_first=True)
        self.out_dim = hidden

    def forward(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(words), lengths.cpu().clamp(min=1), batch_first=True,
                                                   enforce_sorted=False)
        _, h = self.gru(packed)
        return h[-1]


class FiLMedResBlock(nn.Module):
    """[x ⊕ coords] -> conv1x1 -> ReLU (= r) -> conv3x3 -> BN(affine=False) -> FiLM -> ReLU, + r.

    ``forward(x (B, dim, H, W), gamma (B, dim), beta (B, dim)) -> (B, dim, H, W)``.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Conv2d(dim + 2, dim, 1)
        self.conv = nn.Conv2d(dim, dim, 3, padding=1, bias=False)  # a bias would be removed by the BN
        self.bn = nn.BatchNorm2d(dim, affine=False)  # the affine part is FiLM's

    def forward(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        r = F.relu(self.proj(with_coords(x)))
        return r + F.relu(film(self.bn(self.conv(r)), gamma, beta))


def build_cnn(backbone: str, width: int, layers: int, feature_stride: int = 16) -> tuple[nn.Module, int]:
    """(the image CNN, its output channels): ``small`` = ``layers`` stride-2 conv-BN-ReLU blocks of
    ``width`` x 1, 2, 4, ... channels; ``resnet18`` = torchvision's (``weights=None``) through
    ``layer3`` (256 channels, stride 16); ``lite0`` = nothing to train: the input is the frozen
    ImageNet EfficientNet-Lite0's cached maps at ``feature_stride`` (the paper's frozen conv4
    features; 112 channels at stride 16)."""
    if backbone == "lite0":
        return nn.Identity(), TAP_CHANNELS[feature_stride]
    if backbone == "lite0-ft":
        trunk = Lite0Trunk(feature_stride)
        return trunk, trunk.channels
    if backbone == "small":
        mods: list[nn.Module] = []
        c_in = 3
        for k in range(layers):
            c = width * 2 ** k
            mods += [nn.Conv2d(c_in, c, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True)]
            c_in = c
        return nn.Sequential(*mods), c_in
    if backbone == "resnet18":
        r = resnet18(weights=None)
        return nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2, r.layer3), 256
    raise ValueError(f"backbone {backbone!r}: valid: {', '.join(BACKBONES)}")


class FiLMNet(nn.Module):
    """FiLM: question GRU -> (γ, β) per block; CNN -> stem -> FiLMed residual blocks -> classifier.

    Args:
        num_words, num_answers: vocabulary sizes; word_dim, hidden, layers: the GRU;
        backbone, cnn_width, cnn_layers: the CNN (:func:`build_cnn`); num_blocks, module_dim: the
        FiLMed blocks; classifier_proj, mlp_hidden, dropout: the classifier.

    ``forward(words (B, L) int64, lengths (B,) int64, images (B, 3, H, W) float)
    -> logits (B, num_answers)``; it is :meth:`answer` of :meth:`film_params`.
    """

    def __init__(self, num_words: int, num_answers: int, *, word_dim: int, hidden: int, layers: int,
                 backbone: str, cnn_width: int, cnn_layers: int, num_blocks: int, module_dim: int,
                 classifier_proj: int, mlp_hidden: int, dropout: float, feature_stride: int):
        super().__init__()
        self.num_blocks, self.module_dim = num_blocks, module_dim
        self.question = GRUEncoder(num_words, word_dim, hidden, layers)
        self.film_generator = nn.Linear(hidden, num_blocks * 2 * module_dim)
        self.cnn, channels = build_cnn(backbone, cnn_width, cnn_layers, feature_stride)
        self.stem = nn.Sequential(nn.Conv2d(channels + 2, module_dim, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(module_dim), nn.ReLU(inplace=True))
        self.blocks = nn.ModuleList(FiLMedResBlock(module_dim) for _ in range(num_blocks))
        self.classifier_conv = nn.Sequential(nn.Conv2d(module_dim + 2, classifier_proj, 1, bias=False),
                                             nn.BatchNorm2d(classifier_proj), nn.ReLU(inplace=True))
        self.classifier = mlp(classifier_proj, mlp_hidden, num_answers, dropout)

    def film_params(self, words: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(gammas, betas), each (B, num_blocks, module_dim), of the questions; γ = 1 + Δγ."""
        p = self.film_generator(self.question(words, lengths)).view(-1, self.num_blocks, 2, self.module_dim)
        return 1.0 + p[:, :, 0], p[:, :, 1]

    def block_maps(self, images: torch.Tensor, gammas: torch.Tensor, betas: torch.Tensor) -> list[torch.Tensor]:
        """The output of every FiLMed block, in order, each (B, module_dim, h, w), of images
        (B, 3, H, W) under FiLM parameters (B, num_blocks, module_dim) each."""
        x = self.stem(with_coords(self.cnn(images)))
        maps = []
        for k, block in enumerate(self.blocks):
            x = block(x, gammas[:, k], betas[:, k])
            maps.append(x)
        return maps

    def classify(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (B, num_answers) of the last block's output ``x`` (B, module_dim, h, w)."""
        x = self.classifier_conv(with_coords(x))
        return self.classifier(torch.amax(x, dim=(2, 3)))

    def answer(self, images: torch.Tensor, gammas: torch.Tensor, betas: torch.Tensor) -> torch.Tensor:
        """Logits (B, num_answers) of images (B, 3, H, W) under FiLM parameters (B, num_blocks,
        module_dim) each."""
        return self.classify(self.block_maps(images, gammas, betas)[-1])

    def forward(self, words: torch.Tensor, lengths: torch.Tensor, images: torch.Tensor | None = None) -> torch.Tensor:
        if images is None:
            raise ValueError("film needs images (B, 3, H, W)")
        return self.answer(images, *self.film_params(words, lengths))


class FiLMBaseline(NeuralBaseline):
    """FiLM: question-conditioned feature-wise modulation of a CNN (:class:`FiLMNet`)."""

    family = "holistic"

    config_class = FiLMConfig
    network = FiLMNet
    uses_images = True


__all__ = ["FiLMConfig", "FiLMNet", "FiLMedResBlock", "GRUEncoder", "FiLMBaseline", "build_cnn",
           "coord_maps", "with_coords", "film"]
