"""What the learned baselines share: the answer vocabulary, question and image encoding, the data of
a split, the network parts, and one training loop and prediction routine.

A learned baseline is a classifier over the answer vocabulary. Its network takes

* ``words`` (B, L) int64 question word ids (``<NULL>`` = 0 pads), ``lengths`` (B,) int64,
* ``images`` (B, 3, H, W) float32 normalised images, or None for question-only models,

and returns logits (B, A) over the A answers. The training loop (:func:`train_classifier`) is the
project's: the run directory (:class:`nsvqa.training.RunDir`: ``config.json``, ``train.log``,
``tb/``), Adam with warm-up + cosine, gradient clipping, a stop on a non-finite loss, validation
accuracy on the first ``val_questions`` val questions every ``eval_every`` steps, and an atomic
checkpoint ``baseline.pt`` (kind ``baseline_<name>``) holding the config, the weights, the word and
answer vocabularies and the training state. The batch of step ``s`` is a function of ``(seed, s)``
only (:class:`nsvqa.training.sampling.BucketedBatches`), so ``--resume`` continues exactly; the
loop is :func:`nsvqa.training.engine.train_steps`.

Images are read once per split (one decode per image, shared by its questions), resized to the
profile's size and kept as uint8; the training and validation images are cached in
``RUN/cache/<split>_<W>x<H>.pt`` so a resumed run skips the decoding.
"""
from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import Dataset

from executors.io import normalize_answer
from executors.ontology import Ontology, load_ontology
from nsvqa.artifacts.questions import Question, questions_path, read_questions
from nsvqa.training.checkpoint import load_checkpoint, save_checkpoint
from nsvqa.models import ModelSpec, PredictInputs
from nsvqa.artifacts.predictions import Prediction, load_question_meta
from nsvqa.training import RunDir, seed_everything, warmup_cosine
from nsvqa.training.engine import Progress, record_seconds, restore_train_state, train_steps
from nsvqa.training.data import StepLoader
from nsvqa.training.sampling import BucketedBatches, SequentialBatches
from parsers.question.vocab import NULL_ID, Vocabulary, tokenize

from . import Baseline
from .config import TrainConfig
from nsvqa.fileio import atomic_open

CHECKPOINT = "baseline.pt"
IMAGE_MEAN, IMAGE_STD = 0.5, 0.25  # images in [0, 1] -> roughly zero mean, unit variance


def checkpoint_kind(name: str) -> str:
    """The checkpoint ``kind`` of baseline ``name``."""
    return f"baseline_{name}"


def checkpoint_path(run: str | Path) -> Path:
    """``RUN/baseline.pt`` of a run directory; a path ending in ``.pt`` is the checkpoint itself."""
    run = Path(run)
    return run if run.suffix == ".pt" else run / CHECKPOINT


# ---------------------------------------------------------------------------- answers and questions
def answer_vocabulary(ontology: Ontology, train_answers: Sequence[str] = ()) -> list[str]:
    """Every answer the ontology can give (normalised, in its order: attribute values, part names,
    0..10, yes/no), then the training answers outside it, sorted."""
    out = list(dict.fromkeys(normalize_answer(a) for vals in ontology.answer_vocabulary().values() for a in vals))
    known = set(out)
    return out + sorted({a for a in train_answers if a not in known})


#: One question of a split as the learned baselines read it: the questions artifact's typed item
#: (``index``, ``question`` text, normalised ``answer`` or None, ``image_filename`` or None,
#: ``obj_map`` for mDETR, ...).
QARecord = Question


def read_qa(folder: str | Path, split: str, ontology: Ontology, *, require_answer: bool,
            require_image: bool, limit: int | None = None) -> list[QARecord]:
    """The questions of ``FOLDER/questions/<split>_questions.json`` (the first ``limit``), each
    with a string ``question`` (and a valid program when it has one).

    Raises:
        FormatError: no such file, or a record without a string ``question``, without ``answer``
            (when required) or without a string ``image_filename`` (when required); the message
            names the file, the question and the field.
    """
    return list(read_questions(questions_path(folder, split), ontology, require_text=True,
                               require_answer=require_answer, require_image=require_image, limit=limit))


def encode_questions(questions: Sequence[str], vocab: Vocabulary) -> tuple[list[list[int]], np.ndarray]:
    """(word ids per question, lengths (N,) int64 >= 1); unknown words -> ``<UNK>``."""
    words = [vocab.encode(tokenize(q)) for q in questions]
    return words, np.array([max(1, len(w)) for w in words], dtype=np.int64)


def pad_words(rows: Sequence[Sequence[int] | torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """words (B, L) int64 padded with ``<NULL>`` (an empty question becomes one ``<NULL>``),
    lengths (B,) int64; a row is a list of word ids or an int64 tensor of them."""
    lengths = torch.tensor([max(1, len(r)) for r in rows], dtype=torch.long)
    out = torch.full((len(rows), int(lengths.max()) if len(rows) else 1), NULL_ID, dtype=torch.long)
    for i, r in enumerate(rows):
        if len(r):
            out[i, :len(r)] = torch.as_tensor(r, dtype=torch.long)
    return out, lengths


# ---------------------------------------------------------------------------- images
def load_images(folder: str | Path, split: str, filenames: Sequence[str], width: int, height: int, *,
                cache: Path | None = None, progress: bool = False) -> tuple[torch.Tensor, dict[str, int]]:
    """The distinct images of ``filenames`` from ``FOLDER/images/<split>/``, resized.

    Returns:
        images (M, 3, height, width) uint8, and file name -> row.

    With ``cache`` (a ``.pt`` path) the tensor is read from there when it holds the same files of
    the same folder at this size, and written there (atomically) otherwise.

    Raises:
        FileNotFoundError: an image file that does not exist (its path named).
    """
    from tqdm import tqdm

    from nsvqa.artifacts.images import read_image

    folder = Path(folder)
    files = list(dict.fromkeys(filenames))
    key = {"source": str((folder / "images" / split).resolve()), "files": files, "size": [height, width]}
    if cache is not None and cache.is_file():
        try:
            payload = torch.load(cache, weights_only=True)
            if {k: payload.get(k) for k in key} == key:
                return payload["images"], {f: i for i, f in enumerate(files)}
        except Exception:  # a foreign or truncated cache is rebuilt
            pass
    out = torch.empty((len(files), 3, height, width), dtype=torch.uint8)
    for i, name in enumerate(tqdm(files, desc=f"images {split}", disable=not progress)):
        path = folder / "images" / split / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: image file missing")
        x = read_image(path)
        if x.shape[1:] != (height, width):
            x = F.interpolate(x[None], size=(height, width), mode="bilinear", antialias=True, align_corners=False)[0]
        out[i] = x.mul(255.0).round_().clamp_(0, 255).to(torch.uint8)
    if cache is not None:
        with atomic_open(cache, "wb") as f:
            torch.save(key | {"images": out}, f)
    return out, {f: i for i, f in enumerate(files)}


#: the frozen backbones whose maps :func:`backbone_features` caches
FEATURE_BACKBONES = ("lite0",)


def backbone_features(folder: str | Path, split: str, filenames: Sequence[str], cache_dir: str | Path, *,
                      height: int, width: int, strides: Sequence[int] = (16,), backbone: str = "lite0",
                      batch: int = 16, progress: bool = False) -> tuple[dict[int, torch.Tensor], dict[str, int]]:
    """The frozen ImageNet backbone's maps of the images of ``FOLDER/images/<split>/``, resized to
    ``height`` x ``width``, computed once for the whole split (every ``*.png``: a run on a subset
    and a prediction on all of it share one file) and cached in ``cache_dir``
    (:mod:`nsvqa.artifacts.features`: one file per images, weights, size and strides; a stale file
    is rebuilt, a truncated one raises :class:`~nsvqa.artifacts.features.FeatureCacheError`).

    Returns:
        stride -> (M, C, h, w) float16 maps of the split's M images (Lite0: strides 4 / 8 / 16 / 32
        give 24 / 40 / 112 / 320 channels), and file name -> row (every file of ``filenames`` has one).

    Raises:
        ValueError: an unknown ``backbone`` or stride.
        FileNotFoundError: an image file that does not exist (its path named).
        parsers.backbones.WeightsUnavailable: the weights package is not installed.
    """
    from tqdm import tqdm

    from nsvqa.artifacts.features import features_path, image_key, load_features
    from nsvqa.artifacts.images import read_image
    from parsers.backbones import TAP_STRIDES, WEIGHTS_SHA256, EfficientNetLite0

    if backbone not in FEATURE_BACKBONES:
        raise ValueError(f"feature backbone {backbone!r}: valid: {', '.join(FEATURE_BACKBONES)}")
    bad = sorted(set(strides) - set(TAP_STRIDES))
    if bad or not strides:
        raise ValueError(f"strides {list(strides)}: each must be one of {list(TAP_STRIDES)}")
    images = Path(folder) / "images" / split
    files = sorted(p.name for p in images.glob("*.png"))  # the whole split: one file serves every subset
    have = set(files)
    for name in filenames:
        if name not in have:
            raise FileNotFoundError(f"{images / name}: image file missing")
    key = image_key(images, files, backbone=backbone, weights_sha256=WEIGHTS_SHA256, size=(height, width),
                    strides=sorted(strides))

    def build() -> dict[int, torch.Tensor]:
        net = EfficientNetLite0(weights="imagenet", min_stride=4 if 4 in key.strides else 8).eval()
        index = {st: str(i) for i, st in enumerate(net.strides)}
        out: dict[int, list[torch.Tensor]] = {st: [] for st in key.strides}
        for a in tqdm(range(0, len(files), batch), desc=f"{backbone} features {split}", disable=not progress):
            x = torch.stack([read_image(images / f) for f in files[a:a + batch]])
            if x.shape[-2:] != (height, width):
                x = F.interpolate(x, size=(height, width), mode="bilinear", antialias=True, align_corners=False)
            with torch.no_grad():
                maps = net(x)
            for st in key.strides:
                out[st].append(maps[index[st]].to(torch.float16))
        return {st: torch.cat(v) if v else torch.zeros((0, 1, 1, 1), dtype=torch.float16) for st, v in out.items()}

    maps = load_features(features_path(cache_dir, split, key), key, build)
    return maps, {f: i for i, f in enumerate(files)}


def feature_cache_dir(folder: str | Path) -> Path:
    """``FOLDER/features/``: where a variant's frozen-backbone maps are cached, shared by every
    model and run that reads that variant."""
    return Path(folder) / "features"


def image_inputs(folder: str | Path, split: str, filenames: Sequence[str], cfg: Any, run: str | Path | None = None,
                 progress: bool = False) -> tuple[torch.Tensor, dict[str, int]]:
    """What an image model reads of ``filenames``: the frozen backbone's cached maps at
    ``cfg.feature_stride`` (``cfg.backbone == "lite0"``, :func:`backbone_features`; (M, C, h, w)
    float16) or the images resized to the config's size ((M, 3, H, W) uint8, :func:`load_images`,
    cached in ``run`` when given), and file name -> row."""
    if cfg.backbone == "lite0":
        maps, rows = backbone_features(folder, split, filenames, feature_cache_dir(folder), height=cfg.image_height,
                                       width=cfg.image_width, strides=(cfg.feature_stride,), progress=progress)
        return maps[cfg.feature_stride], rows
    return load_images(folder, split, filenames, cfg.image_width, cfg.image_height,
                       cache=image_cache(run, cfg, split) if run is not None else None, progress=progress)


def image_cache(run: str | Path, cfg: Any, split: str) -> Path | None:
    """``RUN/cache/<split>_<W>x<H>.pt``, where a run keeps ``split``'s images resized to
    ``cfg.image_width`` x ``cfg.image_height`` (for :func:`load_images`), or None when
    ``cfg.cache_images`` is off."""
    return Path(run) / "cache" / f"{split}_{cfg.image_width}x{cfg.image_height}.pt" if cfg.cache_images else None


def normalise_images(images: torch.Tensor) -> torch.Tensor:
    """uint8 (B, 3, H, W) -> float32 (B, 3, H, W), ``(x / 255 - 0.5) / 0.25``."""
    return images.float().div_(255.0).sub_(IMAGE_MEAN).div_(IMAGE_STD)


@dataclass
class EncodedQA(Dataset):
    """A split ready for a network: a Dataset of questions (collated by :func:`collate_qa`).

    Attributes:
        words: word ids per question; ``lengths`` (N,) int64.
        answers: (N,) int64 answer ids; -1 where the answer is unknown or outside the vocabulary.
        image_rows: (N,) int64 row of each question's image in ``images``, or None.
        images: (M, 3, H, W) uint8, or None for question-only models.

    Item ``i``: ``{"words": (L_i,) int64, "answer": () int64}`` and, with images,
    ``"image": (3, H, W) uint8``.
    """

    words: list[list[int]]
    lengths: np.ndarray
    answers: torch.Tensor
    image_rows: torch.Tensor | None = None
    images: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        item = {"words": torch.tensor(self.words[i], dtype=torch.long), "answer": self.answers[i]}
        if self.images is not None:
            item["image"] = self.images[self.image_rows[i]]
        return item

    @staticmethod
    def build(records: Sequence[QARecord], vocab: Vocabulary, answers: Sequence[str], images=None) -> "EncodedQA":
        """``images``: None, or (uint8 tensor, file name -> row) from :func:`load_images`."""
        words, lengths = encode_questions([r.question for r in records], vocab)
        index = {a: i for i, a in enumerate(answers)}
        ans = torch.tensor([index.get(r.answer, -1) if r.answer is not None else -1 for r in records],
                           dtype=torch.long)
        if images is None:
            return EncodedQA(words, lengths, ans)
        tensor, rows = images
        return EncodedQA(words, lengths, ans, torch.tensor([rows[r.image_filename] for r in records],
                                                           dtype=torch.long), tensor)


def collate_qa(items: Sequence[dict[str, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None,
                                                                   torch.Tensor]:
    """Items of :class:`EncodedQA` -> words (B, L) int64 (``<NULL>``-padded), lengths (B,) int64,
    images (B, 3, H, W) float normalised (:func:`normalise_images`; cached backbone maps, float16,
    come as float32) or None, answers (B,) int64."""
    words, lengths = pad_words([it["words"] for it in items])
    images = None
    if items and "image" in items[0]:
        images = torch.stack([it["image"] for it in items])
        images = normalise_images(images) if images.dtype == torch.uint8 else images.float()
    return words, lengths, images, torch.stack([it["answer"] for it in items])


# ---------------------------------------------------------------------------- configs
@dataclass(frozen=True)
class QuestionModelConfig(TrainConfig):
    """Resolved config of a learned baseline that reads the question (written to config.json): a
    :class:`baselines.config.TrainConfig` (data, run identity, schedule) with ``batch`` questions a
    step. Question encoder: word embeddings of ``word_dim`` (words seen at least
    ``min_word_count`` times), an LSTM of ``layers`` x ``hidden``; classifier: one hidden layer of
    ``mlp_hidden`` with ``dropout``.
    """

    batch: int = 1
    min_word_count: int = 1
    word_dim: int = 1
    hidden: int = 1
    layers: int = 1
    mlp_hidden: int = 1
    dropout: float = 0.0

    MUST_MATCH: ClassVar[tuple[str, ...]] = TrainConfig.MUST_MATCH + (
        "batch", "min_word_count", "word_dim", "hidden", "layers", "mlp_hidden")

    def check(self) -> None:
        super().check()
        for k in ("batch", "word_dim", "hidden", "layers", "mlp_hidden", "min_word_count"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


#: image CNNs trained from scratch on the pixels
PIXEL_BACKBONES = ("small", "resnet18", "lite0-ft")
#: (``lite0-ft``: the ImageNet EfficientNet-Lite0 fine-tuned on the pixels, :class:`Lite0Trunk`)
#: + ``lite0``: the frozen ImageNet EfficientNet-Lite0, whose maps at ``feature_stride`` are computed
#: once per image and cached in the data folder (:func:`backbone_features`); the model trains on them
BACKBONES = PIXEL_BACKBONES + ("lite0",)


@dataclass(frozen=True)
class ImageQuestionModelConfig(QuestionModelConfig):
    """A :class:`QuestionModelConfig` plus the image side: images resized to ``image_width`` x
    ``image_height``; ``backbone`` ``small`` (four stride-2 conv-BN-ReLU blocks of ``cnn_width``,
    2x, 4x, 8x channels) or ``resnet18`` (torchvision, ``weights=None``: trained from scratch), or
    the ImageNet Lite0: ``lite0`` (frozen, its maps at ``feature_stride`` cached per image; the mini
    and full profiles) or ``lite0-ft`` (fine-tuned on the pixels); its feature map is
    average-pooled to a 3 x 4 grid and projected to ``image_dim`` features (:class:`ImageEncoder`).
    ``cache_images`` keeps the resized train/val images in ``RUN/cache/``."""

    image_width: int = 64
    image_height: int = 48
    backbone: str = "small"
    cnn_width: int = 8
    image_dim: int = 1
    cache_images: bool = True
    feature_stride: int = 16

    MUST_MATCH: ClassVar[tuple[str, ...]] = QuestionModelConfig.MUST_MATCH + (
        "image_width", "image_height", "backbone", "cnn_width", "image_dim", "feature_stride")

    def check(self) -> None:
        super().check()
        for k in ("image_width", "image_height", "cnn_width", "image_dim"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        check_backbone(self.backbone, self.feature_stride)


class Lite0Trunk(nn.Module):
    """The ImageNet EfficientNet-Lite0 (:class:`parsers.backbones.EfficientNetLite0`, BatchNorm
    frozen) trained on the pixels: its map at ``feature_stride``.

    ``forward(images (B, 3, H, W) normalised as :func:`normalise_images`) -> (B, C, H / s, W / s)``.
    """

    def __init__(self, feature_stride: int = 16):
        super().__init__()
        from parsers.backbones import TAP_CHANNELS, EfficientNetLite0

        self.net = EfficientNetLite0(weights="imagenet", min_stride=min(8, feature_stride))
        self.key = str(self.net.strides.index(feature_stride))
        self.channels = TAP_CHANNELS[feature_stride]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images * IMAGE_STD + IMAGE_MEAN)[self.key]  # back to [0, 1]: the net normalises


def check_backbone(backbone: str, feature_stride: int) -> None:
    """ValueError naming the field: a backbone not in :data:`BACKBONES`, or a ``feature_stride``
    the frozen backbone has no map at."""
    from parsers.backbones import TAP_STRIDES

    if backbone not in BACKBONES:
        raise ValueError(f"backbone {backbone!r}: valid: {', '.join(BACKBONES)}")
    if backbone in ("lite0", "lite0-ft") and feature_stride not in TAP_STRIDES:
        raise ValueError(f"feature_stride {feature_stride}: valid: {', '.join(map(str, TAP_STRIDES))}")


def config_from_dict(cls: type, d: dict, where: str) -> Any:
    """The config of class ``cls`` (a :class:`nsvqa.config.Config`) read from a checkpoint:
    ``cls.from_dict`` (ValueError naming ``where`` and the field)."""
    return cls.from_dict(d, f"{where}, config")


# ---------------------------------------------------------------------------- network parts
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
            from parsers.backbones import TAP_CHANNELS

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
            from torchvision.models import resnet18

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


# ---------------------------------------------------------------------------- the learned baselines
class NeuralBaseline(Baseline):
    """A classifier over the answer vocabulary, trained by :func:`train_classifier`.

    Subclasses set ``config_class``, ``profiles``, ``uses_images`` and implement
    :meth:`build_model`.
    """

    uses_images: ClassVar[bool] = False

    @abstractmethod
    def build_model(self, cfg: Any, num_words: int, num_answers: int) -> nn.Module:
        """The network: ``forward(words (B, L), lengths (B,), images (B, 3, H, W) | None)
        -> logits (B, num_answers)``."""

    def train(self, cfg: Any, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
        return train_classifier(self, cfg, out, resume=resume, progress=progress)

    def load(self, run_dir: str | Path, device: str = "cpu") -> tuple[nn.Module, Any, Vocabulary, list[str]]:
        """(network in eval mode, config, word vocabulary, answers) from ``RUN_DIR/baseline.pt``
        (or that file itself).

        Raises:
            nsvqa.training.checkpoint.CheckpointError: no checkpoint, or one of another baseline.
        """
        path = checkpoint_path(run_dir)
        ck = load_checkpoint(path, kind=checkpoint_kind(self.name))
        cfg = config_from_dict(self.config_class, ck["config"], str(path))
        vocab = Vocabulary.from_dict(ck["vocabularies"]["question"], f"{path}, vocabularies.question")
        answers = list(ck["vocabularies"]["answer"])
        model = self.build_model(cfg, len(vocab), len(answers))
        model.load_state_dict(ck["state_dict"])
        return model.to(device).eval(), cfg, vocab, answers

    def predict(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "test", *,
                spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
                progress: bool = False, batch: int = 256) -> list[Prediction]:
        """The most probable answer of each question, with its softmax probability."""
        from tqdm import tqdm

        model, cfg, vocab, answers = self.load(run_dir, device)
        onto = load_ontology(cfg.ontology)
        folder = Path(root) / variant
        questions = read_questions(questions_path(folder, split), onto, require_text=True, require_program=True,
                                   require_answer=True, require_image=self.uses_images)  # read once
        metas = load_question_meta(root, variant, split, ontology=onto, questions=questions)
        records = list(questions)
        images = None
        if self.uses_images:
            images = image_inputs(folder, split, [r.image_filename for r in records], cfg, progress=progress)
        data = EncodedQA.build(records, vocab, answers, images)
        out: list[Prediction] = []
        with torch.no_grad():
            for b in tqdm(StepLoader(data, collate_qa, SequentialBatches(len(data), batch), device=device),
                          desc=f"{self.name} {variant}", disable=not progress):
                words, lengths, imgs, _ = b.data
                prob, arg = F.softmax(model(words, lengths, imgs).float(), dim=1).max(dim=1)
                for i, p, a in zip(b.indices, prob.tolist(), arg.tolist()):
                    out.append(metas[i].prediction(answers[a], min(1.0, max(0.0, p))))
        return out


def _save(path: Path, name: str, cfg: Any, model: nn.Module, vocab: Vocabulary, answers: list[str],
          train_state: dict, extra: dict) -> None:
    """Write the checkpoint (a module function, so tests can interrupt a run after it)."""
    save_checkpoint(path, kind=checkpoint_kind(name), config=asdict(cfg), state_dict=model.state_dict(),
                    vocabularies={"question": vocab.to_dict(), "answer": list(answers)},
                    train_state=train_state | {"rng": torch.get_rng_state()}, extra=extra)


def accuracy(model: nn.Module, data: EncodedQA, device: torch.device, batch: int = 256) -> float:
    """Share of questions whose argmax answer is the labelled one (unknown labels count wrong)."""
    if len(data) == 0:
        return float("nan")
    was = model.training
    model.eval()
    hits = 0
    with torch.no_grad():
        for b in StepLoader(data, collate_qa, SequentialBatches(len(data), batch), device=device):
            words, lengths, imgs, ans = b.data
            hits += int((model(words, lengths, imgs).argmax(1) == ans).sum())
    model.train(was)
    return hits / len(data)


def open_run(name: str, cfg: Any, out: str | Path, *, resume: bool, total_steps: int) -> tuple[RunDir, dict | None, bool]:
    """Start or resume the training run of baseline ``name`` in ``out``: check ``cfg.model``, seed
    everything, open the run directory (``config.json``, ``train.log``, ``tb/``).

    Returns:
        (the run directory — the caller closes it, the checkpoint to continue from or None, whether
        that checkpoint already reached ``total_steps``: nothing is left to do).

    Raises:
        ValueError: ``cfg.model`` is not ``name``, or a resume with a config that differs in a field
            of ``cfg.MUST_MATCH``; nsvqa.training.checkpoint.CheckpointError: an unreadable checkpoint.
    """
    if cfg.model != name:
        raise ValueError(f"config field 'model' is {cfg.model!r}, expected {name!r}")
    seed_everything(cfg.seed)
    run = RunDir(out, cfg, resume=resume, must_match=cfg.MUST_MATCH)
    path = run.path / CHECKPOINT
    try:
        ck = load_checkpoint(path, kind=checkpoint_kind(name)) if resume and path.exists() else None
    except BaseException:
        run.close()
        raise
    done = ck is not None and int(ck["train_state"].get("step", 0)) >= total_steps
    if done:
        run.log(f"finished at step {ck['train_state'].get('step')} ({path}); nothing to do")
    return run, ck, done


def train_classifier(baseline: NeuralBaseline, cfg: Any, out: str | Path, *, resume: bool = False,
                     progress: bool = True) -> Path:
    """Train ``baseline``'s network on ``cfg.data``'s train split into the run directory ``out``.

    With ``resume`` and a checkpoint in ``out``, training continues from its step (vocabularies,
    weights, optimizer, scheduler and RNG restored); a finished run returns at once. Without
    ``resume`` the run starts over.

    Raises:
        ValueError: ``cfg.model`` is not the baseline's name, a resume with a config that differs
            in a field of ``MUST_MATCH``, or no training questions;
        executors.errors.FormatError / FileNotFoundError: bad or missing data (file and field named);
        nsvqa.training.NonFiniteLoss: a NaN or infinite loss.
    """
    run, ck, done = open_run(baseline.name, cfg, out, resume=resume, total_steps=cfg.steps)
    try:
        if done:
            return run.path
        dev = torch.device(cfg.device)
        onto = load_ontology(cfg.ontology)
        folder = Path(cfg.data)
        path = run.path / CHECKPOINT
        t0 = time.time()
        train = read_qa(folder, "train", onto, require_answer=True, require_image=baseline.uses_images,
                        limit=cfg.max_train_questions)
        if not train:
            raise ValueError(f"{folder / 'questions' / 'train_questions.json'}: no training questions")
        val_path = folder / "questions" / "val_questions.json"
        val = (read_qa(folder, "val", onto, require_answer=True, require_image=baseline.uses_images,
                       limit=cfg.val_questions) if cfg.val_questions and val_path.is_file() else [])
        if ck is not None:
            vocab = Vocabulary.from_dict(ck["vocabularies"]["question"], f"{path}, vocabularies.question")
            answers = list(ck["vocabularies"]["answer"])
        else:
            vocab = Vocabulary.build((tokenize(r.question) for r in train), cfg.min_word_count)
            answers = answer_vocabulary(onto, [r.answer for r in train])

        def images(records: list[QARecord], split: str):
            if not baseline.uses_images or not records:
                return None
            return image_inputs(folder, split, [r.image_filename for r in records], cfg, run.path, progress)

        train_data = EncodedQA.build(train, vocab, answers, images(train, "train"))
        val_data = EncodedQA.build(val, vocab, answers, images(val, "val"))
        run.log(f"data: {len(train_data)} train questions, {len(val_data)} val questions from {folder}; "
                f"{len(vocab)} words, {len(answers)} answers ({time.time() - t0:.1f} s)")

        model = baseline.build_model(cfg, len(vocab), len(answers)).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.steps, cfg.warmup))
        start, extra = 0, {}
        if ck is not None:
            model.load_state_dict(ck["state_dict"])
            start, extra = restore_train_state(ck["train_state"], opt, sched), dict(ck["extra"])
            run.log(f"resumed at step {start} from {path}")
        batches = StepLoader(train_data, collate_qa, BucketedBatches(train_data.lengths, cfg.batch, cfg.seed),
                             start=start, total=cfg.steps, device=dev)
        model.train()

        def step_fn(step: int) -> tuple[torch.Tensor, dict]:
            words, lengths, imgs, ans = batches(step).data
            loss = F.cross_entropy(model(words, lengths, imgs), ans)
            return loss, {"loss": loss}

        def checkpoint(p: Progress) -> None:
            if not p.trained:  # zero steps asked: an untrained model, still loadable
                _save(path, baseline.name, cfg, model, vocab, answers, {"step": p.step}, extra)
                return
            msg = f"step {p.step} loss={p.values['loss']:.5f} smoothed={p.smoothed['loss']:.5f}"
            if len(val_data):
                acc = accuracy(model, val_data, dev)
                extra["val_accuracy"] = acc
                run.scalars("val", {"accuracy": acc}, p.step)
                msg += f" val accuracy={acc:.4f} ({len(val_data)} questions)"
            run.log(msg)
            record_seconds(extra, p)
            _save(path, baseline.name, cfg, model, vocab, answers,
                  {"step": p.step, "optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, extra)

        train_steps(step_fn, opt, run, start=start, total=cfg.steps, scheduler=sched,
                    clip_params=model.parameters(), clip_norm=cfg.grad_clip, phase="train", log_every=20,
                    eval_every=cfg.eval_every, on_checkpoint=checkpoint, checkpoint_path=path,
                    seconds_before=float(extra.get("train_seconds", 0.0)), progress=progress, desc=baseline.name)
    finally:
        run.close()
    return run.path


__all__ = ["CHECKPOINT", "checkpoint_kind", "checkpoint_path", "answer_vocabulary", "QARecord", "read_qa",
           "encode_questions", "pad_words", "load_images", "image_cache", "normalise_images", "EncodedQA",
           "collate_qa",
           "QuestionModelConfig", "ImageQuestionModelConfig", "BACKBONES", "PIXEL_BACKBONES", "check_backbone",
           "FEATURE_BACKBONES", "backbone_features", "feature_cache_dir", "image_inputs", "config_from_dict", "QuestionEncoder",
           "ImageEncoder", "mlp", "NeuralBaseline", "accuracy", "open_run", "train_classifier"]
