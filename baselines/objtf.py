"""Object-token transformer (``objtf``): a holistic, object-centric model in the spirit of mDETR's
CLEVR model — object tokens and question tokens in one transformer, the answer from a classifier;
no program and no symbolic executor anywhere in its answer path.

What it takes from the variant's study scene parser (at prediction: the run's parse of the test
split, ``PredictInputs.likelihoods``; :meth:`~nsvqa.models.Model.needs` asks for the scene parser
only, never the question parser): for each detection kept (existence >= ``min_exist``) its
existence probability, its box (xyxy, divided by the image's width and height) and its
per-attribute distributions (:class:`executors.SceneLikelihoods` ``attributes``); with
``part_tokens``, each part of such an object with part existence >= ``min_exist`` becomes a token
too (its part-name probability, its part-attribute distributions, its owner's box). Neither the
parser's RoI features nor its masks are used. Training reads the same token layout from the
run's scene parses of the train and val splits (``train_tokens="parsed"``) or from their
ground-truth scenes (``"truth"``: one-hot distributions, the scenes' boxes, existence 1); the
scenes are symbolic, so ``extra_questions_per_image`` more questions of those scenes
(:mod:`baselines.more_questions`, nothing rendered) multiply what it learns from; Gaussian jitter
of ``token_noise`` on the token features (training only) stands in for the parser's uncertainty.
Without a parse at prediction (standalone checks) the ground-truth tokens are used ("oracle").

Token features (:func:`token_layout`): [valid, is_part, existence, x0, y0, x1, y1, one block per
ontology attribute (its values' probabilities), one block over the ontology's part names].

Network: word embeddings (``word_dim`` = the model width) + learned positions for the question;
a linear map of the token features for the objects; a type embedding per kind (question word,
object, part) and one [CLS] token; a pre-norm transformer encoder (``layers`` layers, ``heads``
heads, feed-forward ``hidden``, ``dropout``) over [CLS ; words ; tokens] with padding masked; the
[CLS] output through an MLP (``mlp_hidden``) to a query vector; an answer's logit is its dot
product with the answer's embedding, which with ``tie_answers`` is the word embedding of the
answer's word where the question vocabulary has it (so copying an attribute named like a word is
one dot product) and a learned vector otherwise, plus a bias. Trained by
:func:`baselines.classifier.train_classifier` (the one engine; cross entropy over the answers).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from executors import SceneLikelihoods, SymbolicScene
from executors.errors import FormatError
from executors.ontology import Ontology, load_ontology
from nsvqa.artifacts.likelihoods import read_likelihoods
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.generation.questions.text import attribute_words
from nsvqa.models import ModelConfig, PredictInputs
from parsers.question.vocab import NULL_ID, Vocabulary, tokenize

from .classifier import NeuralBaseline
from .images import image_size
from .more_questions import MoreQuestions
from .neural_config import QUESTION_MUST_MATCH, check_question
from .networks import mlp
from .trace_targets import hop_targets, trace_loss

#: the leading features of a token: valid, is_part, existence, x0, y0, x1, y1
HEAD_FEATURES = 7
MAX_QUESTION_WORDS = 64


@dataclass(frozen=True)
class ObjTFConfig(ModelConfig):
    """objtf's config, and the config of its family (``objmac``, ``objmac-trace``,
    ``regionmac-trace`` derive from it): the run fields and the schedule (:mod:`baselines.config`),
    the question fields (:mod:`baselines.neural_config`) read as: ``word_dim`` the model width
    (word embeddings, tokens, transformer), ``hidden`` the transformer's feed-forward width,
    ``layers`` its layers, ``mlp_hidden`` the answer head's hidden width, ``dropout`` the
    transformer's; plus ``heads``, ``max_tokens`` (objects first, then parts), ``part_tokens``,
    ``min_exist`` (a parsed detection or part enters as a token from this existence on),
    ``token_noise`` (std of the training-time jitter of the token features), ``tie_answers``,
    ``tie_tokens``, ``reasoner`` (``"transformer"``: one encoder over [CLS ; words ; tokens];
    ``"mac"``: :class:`MACReasoner`, ``hops`` steps of question-guided attention over the tokens),
    ``extra_questions_per_image`` (:mod:`baselines.more_questions`), ``trace_weight`` (the weight of
    the grounding loss of :mod:`baselines.trace_targets` on the MAC reasoner's reads; 0: answers
    alone), ``train_tokens`` (what the
    train and val splits' tokens are read from: ``"truth"``, the ground-truth scenes, or
    ``"parsed"``, the run's scene parses ``<parses>/{train,val}_likelihoods.json``) and ``parses``
    (that folder; the experiment fills it in, :class:`~nsvqa.models.Needs` ``train_parses``).

    The defaults are objtf's ``mini`` profile, the 2-core profile: 3 layers of width 96 over <= 32
    tokens; the 2,000 training scenes asked 40 more object questions each (~100k questions); ~20 min
    on 2 threads by arithmetic (film's measured mini step scaled by FLOPs), not yet measured on mid
    (docs/models.md). :attr:`PROFILES` holds the fields the other profiles change."""

    model: str = "objtf"
    ontology: str = "superclevr"
    max_train_questions: int | None = None
    steps: int = 6000
    lr: float = 5e-4
    weight_decay: float = 1e-4
    warmup: int = 300
    eval_every: int = 2000
    val_questions: int = 1000
    grad_clip: float = 1.0
    batch: int = 64
    min_word_count: int = 1
    word_dim: int = 96
    hidden: int = 192
    layers: int = 3
    mlp_hidden: int = 192
    dropout: float = 0.1
    heads: int = 4
    max_tokens: int = 32
    part_tokens: bool = True
    min_exist: float = 0.5
    token_noise: float = 0.05
    tie_answers: bool = True
    tie_tokens: bool = True
    extra_questions_per_image: int = 40
    train_tokens: str = "parsed"
    parses: str = ""
    reasoner: str = "transformer"
    hops: int = 4
    trace_weight: float = 0.0

    MUST_MATCH: ClassVar[tuple[str, ...]] = QUESTION_MUST_MATCH + (
        "heads", "max_tokens", "part_tokens", "tie_answers", "tie_tokens", "extra_questions_per_image",
        "train_tokens", "reasoner", "hops", "trace_weight")
    TRAIN_TOKENS: ClassVar[tuple[str, ...]] = ("truth", "parsed")
    PROFILES: ClassVar = {
        "tiny": dict(steps=60, batch=16, lr=2e-3, warmup=5, eval_every=30, val_questions=32, word_dim=32, hidden=64,
                     layers=2, mlp_hidden=64, dropout=0.0, max_tokens=24, token_noise=0.0, extra_questions_per_image=0,
                     train_tokens="truth"),
        "demo": dict(steps=2000, eval_every=1000, val_questions=500, extra_questions_per_image=10),
        "mini": {},
        # mDETR-like sizes for a GPU: width 256, 6 layers, 200 more questions per scene
        "full": dict(steps=60000, batch=256, lr=3e-4, warmup=2000, eval_every=5000, val_questions=5000, word_dim=256,
                     hidden=1024, layers=6, heads=8, mlp_hidden=512, max_tokens=48, extra_questions_per_image=200),
    }
    #: configs saved before objtf trained on the run's parses read the ground-truth scenes
    ABSENT: ClassVar = {"train_tokens": "truth"}
    REASONERS: ClassVar[tuple[str, ...]] = ("transformer", "mac")

    def check(self) -> None:
        super().check()
        check_question(self)
        if self.heads < 1 or self.word_dim % self.heads:
            raise ValueError(f"heads must be >= 1 and divide word_dim ({self.word_dim}), got {self.heads}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not 0.0 <= self.min_exist <= 1.0:
            raise ValueError(f"min_exist must be in [0, 1], got {self.min_exist}")
        if self.token_noise < 0 or self.extra_questions_per_image < 0:
            raise ValueError("token_noise and extra_questions_per_image must be >= 0")
        if self.reasoner not in self.REASONERS:
            raise ValueError(f"reasoner must be one of {', '.join(self.REASONERS)}, got {self.reasoner!r}")
        if self.hops < 1:
            raise ValueError(f"hops must be >= 1, got {self.hops}")
        if self.trace_weight < 0 or (self.trace_weight > 0 and self.reasoner != "mac"):
            raise ValueError(f"trace_weight must be >= 0, and 0 unless reasoner is 'mac' (its hops are what the "
                             f"trace supervises), got {self.trace_weight} with reasoner {self.reasoner!r}")
        if self.train_tokens not in self.TRAIN_TOKENS:
            raise ValueError(f"train_tokens must be one of {', '.join(self.TRAIN_TOKENS)}, got {self.train_tokens!r}")


# ---------------------------------------------------------------------------- object tokens
def token_layout(onto: Ontology) -> dict[str, slice]:
    """Feature block of each ontology attribute and of the part names (``"partname"``) in a token,
    after the :data:`HEAD_FEATURES` leading features."""
    out, at = {}, HEAD_FEATURES
    for a in onto.attributes:
        out[a] = slice(at, at + len(onto.values(a)))
        at = out[a].stop
    out["partname"] = slice(at, at + len(onto.part_names))
    return out


def token_dim(onto: Ontology) -> int:
    """Number of features of a token."""
    return token_layout(onto)["partname"].stop


def scene_tokens(lik: SceneLikelihoods, boxes: np.ndarray, size: tuple[int, int], *, max_tokens: int,
                 min_exist: float, parts: bool) -> np.ndarray:
    """(max_tokens, F) float32 tokens of one scene: its objects with existence >= ``min_exist`` (in
    order of existence, then row), then (with ``parts``) their parts with existence >= ``min_exist``,
    zero rows after them (valid = 0).

    Args:
        lik: the scene's likelihoods (N objects); boxes: (N, 4) xyxy pixels of its objects;
        size: the image's (width, height) in pixels.
    """
    onto = lik.ontology
    lay = token_layout(onto)
    out = np.zeros((max_tokens, lay["partname"].stop), dtype=np.float32)
    w, h = size
    scale = np.array([w, h, w, h], dtype=np.float32)
    keep = [i for i in np.argsort(-lik.exist, kind="stable") if lik.exist[i] >= min_exist]
    rows = []
    for i in keep:
        t = np.zeros(out.shape[1], dtype=np.float32)
        t[0], t[2] = 1.0, lik.exist[i]
        t[3:7] = np.asarray(boxes[i], dtype=np.float32) / scale
        for a in onto.attributes:
            t[lay[a]] = lik.attributes[a][i]
        rows.append(t)
    if parts and lik.part_exist is not None:
        for i in keep:
            for k in np.flatnonzero(lik.part_exist[i] >= min_exist):
                t = np.zeros(out.shape[1], dtype=np.float32)
                t[0], t[1], t[2] = 1.0, 1.0, lik.part_exist[i, k]
                t[3:7] = np.asarray(boxes[i], dtype=np.float32) / scale
                t[lay["partname"].start + k] = 1.0
                for a, v in (lik.part_attributes or {}).items():
                    t[lay[a]] = v[i, k]
                rows.append(t)
    rows = rows[:max_tokens]
    if rows:
        out[:len(rows)] = np.stack(rows)
    return out


def _file_tokens(filenames: Sequence[str], folder: Path, split: str, onto: Ontology, cfg: ObjTFConfig,
                 scene: Callable[[str], tuple[SceneLikelihoods, np.ndarray]], min_exist: float
                 ) -> tuple[torch.Tensor, dict[str, int]]:
    """Tokens of the distinct ``filenames`` (in order), ``scene(name)`` giving an image's likelihoods
    and (N, 4) xyxy pixel boxes (the image size is read once, of the first image): (M, max_tokens, F)
    float32 and file name -> row."""
    files = list(dict.fromkeys(filenames))
    out = np.zeros((len(files), cfg.max_tokens, token_dim(onto)), dtype=np.float32)
    size = None
    for r, name in enumerate(files):
        lik, boxes = scene(name)
        size = size or image_size(folder, split, name)
        out[r] = scene_tokens(lik, boxes, size, max_tokens=cfg.max_tokens, min_exist=min_exist,
                              parts=cfg.part_tokens)
    return torch.from_numpy(out), {f: i for i, f in enumerate(files)}


def truth_tokens(folder: Path, split: str, filenames: Sequence[str], onto: Ontology, cfg: ObjTFConfig
                 ) -> tuple[torch.Tensor, dict[str, int]]:
    """Tokens of the ground-truth scenes of ``filenames`` (one-hot likelihoods, the scenes' boxes):
    (M, max_tokens, F) float32 and file name -> row.

    Raises:
        FormatError: a file with no scene in ``FOLDER/scenes/<split>_scenes.json``.
    """
    scenes = read_scenes(scenes_path(folder, split)).by_filename()

    def scene(name: str) -> tuple[SceneLikelihoods, np.ndarray]:
        if name not in scenes:
            raise FormatError(f"{scenes_path(folder, split)}: no scene of image {name!r}")
        s = scenes[name]
        return SceneLikelihoods.from_scene(SymbolicScene.from_json(s.record, onto)), s.boxes()

    return _file_tokens(filenames, folder, split, onto, cfg, scene, min_exist=0.0)


def parsed_tokens(path: Path, folder: Path, split: str, filenames: Sequence[str], onto: Ontology,
                  cfg: ObjTFConfig) -> tuple[torch.Tensor, dict[str, int]]:
    """Tokens of a scene parser's ``likelihoods.json`` (its detections' boxes and distributions)
    for ``filenames``: (M, max_tokens, F) float32 and file name -> row.

    Raises:
        FormatError: a malformed file, or an image of ``filenames`` it did not parse.
    """
    parsed = {s.image_filename: s for s in read_likelihoods(path, onto).scenes}

    def scene(name: str) -> tuple[SceneLikelihoods, np.ndarray]:
        if name not in parsed:
            raise FormatError(f"{path}: no parse of image {name!r}")
        s = parsed[name]
        boxes = np.asarray([d.box for d in s.detections], dtype=np.float32).reshape(-1, 4)
        if len(boxes) != len(s.likelihoods.exist):
            raise FormatError(f"{path}, image {name!r}: {len(boxes)} detections for {len(s.likelihoods.exist)} "
                              f"objects")
        return s.likelihoods, boxes

    return _file_tokens(filenames, folder, split, onto, cfg, scene, min_exist=cfg.min_exist)


# ---------------------------------------------------------------------------- network
class MACReasoner(nn.Module):
    """Question-guided attention over object tokens in ``hops`` steps, a MAC cell (Hudson and
    Manning, 2018: control, read, write units with a recurrent memory), over tokens instead of a
    feature grid. A learned null token is always present to be attended to; the read unit's sigmoid
    gates summed over the real tokens enter the write unit as a count.

    ``forward(words (B, L, d), word_mask (B, L) bool, lengths (B,) int64, objects (B, T, d),
    object_mask (B, T) bool) -> ((B, d), reads (B, hops, 1 + T))``: the question vector and the final
    memory, projected, and each hop's read logits (the null token first; the read attention is their
    softmax over the null token and the valid tokens, a token's gate their sigmoid).
    """

    def __init__(self, dim: int, hops: int, dropout: float):
        super().__init__()
        if dim % 2:
            raise ValueError(f"the MAC reasoner's width must be even (a bidirectional LSTM), got {dim}")
        self.lstm = nn.LSTM(dim, dim // 2, batch_first=True, bidirectional=True)
        self.question = nn.Linear(dim, dim)
        self.hop_question = nn.ModuleList(nn.Linear(dim, dim) for _ in range(hops))
        self.control_in = nn.Linear(2 * dim, dim)
        self.control_att = nn.Linear(dim, 1)
        self.read_memory = nn.Linear(dim, dim)
        self.read_objects = nn.Linear(dim, dim)
        self.read_both = nn.Linear(2 * dim, dim)
        self.read_att = nn.Linear(dim, 1)
        self.write = nn.Linear(2 * dim + 1, dim)
        self.out = nn.Linear(2 * dim, dim)
        self.control0 = nn.Parameter(torch.zeros(dim))
        self.memory0 = nn.Parameter(torch.zeros(dim))
        self.null = nn.Parameter(torch.randn(dim) * dim ** -0.5)
        self.drop = nn.Dropout(dropout)

    def forward(self, words: torch.Tensor, word_mask: torch.Tensor, lengths: torch.Tensor, objects: torch.Tensor,
                object_mask: torch.Tensor) -> torch.Tensor:
        b, l, _ = words.shape
        packed = nn.utils.rnn.pack_padded_sequence(words, lengths.clamp(1, l).cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, (h, _) = self.lstm(packed)
        context, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=l)
        q = self.question(torch.cat([h[0], h[1]], -1))
        kb = torch.cat([self.null.expand(b, 1, -1), objects], 1)
        real = torch.cat([torch.zeros(b, 1, dtype=torch.bool, device=kb.device), object_mask], 1)
        seen = real.clone()
        seen[:, 0] = True
        kb_proj = self.read_objects(kb)
        low = torch.finfo(kb.dtype).min
        c, m = self.control0.expand(b, -1), self.memory0.expand(b, -1)
        reads = []
        for proj in self.hop_question:
            cq = self.control_in(torch.cat([c, proj(q)], -1))
            a = self.control_att(cq[:, None] * context).squeeze(-1).masked_fill(~word_mask, low)
            c = (a.softmax(-1)[..., None] * context).sum(1)
            inter = self.read_both(torch.cat([self.read_memory(self.drop(m))[:, None] * kb_proj, kb], -1))
            logits = self.read_att(self.drop(c[:, None] * inter)).squeeze(-1)
            reads.append(logits)
            r = (logits.masked_fill(~seen, low).softmax(-1)[..., None] * kb).sum(1)
            count = (torch.sigmoid(logits) * real).sum(-1, keepdim=True)
            m = self.write(torch.cat([r, m, count], -1))
        return self.out(torch.cat([q, m], -1)), torch.stack(reads, 1)


class ObjTFNet(nn.Module):
    """[CLS ; question words ; object tokens] -> transformer encoder -> answer scores.

    Args:
        num_words, num_answers: vocabulary sizes; token_features: F;
        answer_words: (num_answers,) int64 word id of each answer's word, -1 where none (untied);
        dim, heads, layers, ff, mlp_hidden, dropout: sizes; token_noise: training-time jitter;
        reasoner: ``"transformer"`` (``layers`` encoder layers over [CLS ; words ; tokens], the
        [CLS] output read) or ``"mac"`` (:class:`MACReasoner` of ``hops`` steps; ``heads``,
        ``layers`` and ``ff`` unused).

    ``forward(words (B, L) int64, lengths (B,) int64, tokens (B, T, F) float) -> logits (B, A)``
    (a token is padding where its feature 0, ``valid``, is 0); with ``reads=True`` (MAC only)
    ``(logits, reads (B, hops, 1 + T))``, the reasoner's read logits.
    """

    def __init__(self, num_words: int, num_answers: int, token_features: int, answer_words: torch.Tensor, *,
                 dim: int, heads: int, layers: int, ff: int, mlp_hidden: int, dropout: float,
                 reasoner: str, hops: int, token_noise: float = 0.0, value_words: torch.Tensor | None = None):
        super().__init__()
        # (F, num_words): the words that say each value column of a token (rows sum to 1; zero rows untied)
        self.register_buffer("value_words", torch.zeros(token_features, num_words) if value_words is None
                             else value_words.clone().float())
        self.embed = nn.Embedding(num_words, dim, padding_idx=NULL_ID)
        self.positions = nn.Embedding(MAX_QUESTION_WORDS, dim)
        self.types = nn.Embedding(4, dim)  # 0 CLS, 1 word, 2 object, 3 part
        self.tokens = nn.Sequential(nn.Linear(token_features, dim), nn.ReLU(), nn.Linear(dim, dim))
        if reasoner == "mac":
            self.mac = MACReasoner(dim, hops, dropout)
        else:
            layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout, batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.reasoner = reasoner
        self.norm = nn.LayerNorm(dim)
        self.query = mlp(dim, mlp_hidden, dim, dropout)
        self.register_buffer("answer_words", answer_words.clone().long())
        self.answer_own = nn.Parameter(torch.randn(num_answers, dim) * dim ** -0.5)
        self.answer_bias = nn.Parameter(torch.zeros(num_answers))
        self.token_noise = token_noise

    def answer_embeddings(self) -> torch.Tensor:
        """(A, dim): the tied word embedding where an answer has a word, else its own vector."""
        tied = self.embed(self.answer_words.clamp(min=0))
        return torch.where((self.answer_words >= 0)[:, None], tied, self.answer_own)

    def forward(self, words: torch.Tensor, lengths: torch.Tensor, tokens: torch.Tensor | None = None,
                reads: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if tokens is None:
            raise ValueError("objtf needs object tokens (B, T, F)")
        b, l = words.shape
        words, l = words[:, :MAX_QUESTION_WORDS], min(l, MAX_QUESTION_WORDS)
        valid = tokens[..., 0] > 0.5
        if self.training and self.token_noise > 0:
            jitter = torch.randn_like(tokens) * self.token_noise
            jitter[..., :2] = 0.0
            tokens = tokens + jitter * valid[..., None]
        pos = torch.arange(l, device=words.device)
        q = self.embed(words) + self.positions(pos)[None] + self.types.weight[1]
        kind = 2 + (tokens[..., 1] > 0.5).long()
        o = self.tokens(tokens) + (tokens @ self.value_words) @ self.embed.weight + self.types(kind)
        hop_reads = None
        if self.reasoner == "mac":
            h, hop_reads = self.mac(q, words != NULL_ID, lengths, o, valid)
            h = self.norm(h)
        else:
            cls = self.types.weight[0].expand(b, 1, -1)
            x = torch.cat([cls, q, o], dim=1)
            pad = torch.cat([torch.zeros(b, 1, dtype=torch.bool, device=words.device), words == NULL_ID, ~valid],
                            dim=1)
            h = self.norm(self.encoder(x, src_key_padding_mask=pad)[:, 0])
        logits = self.query(h) @ self.answer_embeddings().t() + self.answer_bias
        if reads:
            if hop_reads is None:
                raise ValueError("reads=True needs the MAC reasoner")
            return logits, hop_reads
        return logits


def value_word_matrix(onto: Ontology, vocab: Vocabulary) -> torch.Tensor:
    """(F, num_words) float32: row of each attribute value's (and part name's) token column, spread
    evenly over the question-vocabulary words that say it (:func:`nsvqa.generation.questions.text.attribute_words`);
    zero rows for the leading features and for values no known word says."""
    lay = token_layout(onto)
    out = torch.zeros(token_dim(onto), len(vocab))
    for a, block in lay.items():
        values = onto.part_names if a == "partname" else onto.values(a)
        for k, v in enumerate(values):
            words = [w for phrase in attribute_words(onto, a, v) for w in tokenize(phrase) if w in vocab]
            for w in words:
                out[block.start + k, vocab.index(w)] += 1.0 / len(words)
    return out


def answer_word_ids(answers: Sequence[str], vocab: Vocabulary, tie: bool) -> torch.Tensor:
    """(A,) int64: the question-vocabulary id of each answer that is one known word (``tie``), else -1."""
    ids = []
    for a in answers:
        w = tokenize(a.replace("_", " "))
        ids.append(vocab.index(w[0]) if tie and len(w) == 1 and w[0] in vocab else -1)
    return torch.tensor(ids, dtype=torch.long)


class ObjTFBaseline(MoreQuestions, NeuralBaseline):
    """The object-token transformer (:class:`ObjTFNet`) over the scene parser's object tokens."""

    config_class = ObjTFConfig
    uses_images = True
    family = "holistic"
    trains_on_parses = True  # the run's scene parses are its object tokens, the training splits' too
    reads_attribute_head = True  # its tokens carry the attribute head's distributions

    def build_model(self, cfg: ObjTFConfig, num_words: int, num_answers: int,
                    answer_words: torch.Tensor | None = None) -> ObjTFNet:
        onto = load_ontology(cfg.ontology)
        if answer_words is None:
            answer_words = torch.full((num_answers,), -1, dtype=torch.long)
        return ObjTFNet(num_words, num_answers, token_dim(onto), answer_words, dim=cfg.word_dim, heads=cfg.heads,
                        layers=cfg.layers, ff=cfg.hidden, mlp_hidden=cfg.mlp_hidden, dropout=cfg.dropout,
                        token_noise=cfg.token_noise, reasoner=cfg.reasoner, hops=cfg.hops)

    def bind_vocabularies(self, model: ObjTFNet, cfg: ObjTFConfig, vocab: Vocabulary, answers: Sequence[str]) -> None:
        """Set which answers share a word's embedding (before training; saved in the weights)."""
        model.answer_words.copy_(answer_word_ids(answers, vocab, cfg.tie_answers))
        if cfg.tie_tokens:
            model.value_words.copy_(value_word_matrix(load_ontology(cfg.ontology), vocab))

    def training_loss(self, cfg: ObjTFConfig, folder: Path, records, data, run):
        """The answers' cross entropy, plus ``cfg.trace_weight`` times the grounding loss of the MAC
        reasoner's reads (:func:`baselines.trace_targets.trace_loss`) against the training programs'
        traces (:func:`baselines.trace_targets.hop_targets`) when the weight is not 0."""
        if not cfg.trace_weight:
            return super().training_loss(cfg, folder, records, data, run)
        members, supervised = hop_targets(records, data.image_rows.numpy(), data.images, folder, "train",
                                          load_ontology(cfg.ontology), cfg.hops)
        run.log(f"trace targets: {int(supervised.any(1).sum())} of {len(records)} questions, "
                f"{float(supervised.float().mean()):.3f} of their hops supervised")
        weight = cfg.trace_weight

        def answer_and_trace(model: ObjTFNet, batch):
            words, lengths, tokens, ans = batch.data
            idx = torch.as_tensor(batch.indices, dtype=torch.long)
            logits, reads = model(words, lengths, tokens, reads=True)
            answer = F.cross_entropy(logits, ans)
            trace = trace_loss(reads, tokens[..., 0] > 0.5, members[idx], supervised[idx])
            loss = answer + weight * trace
            return loss, {"loss": loss, "answer_loss": answer, "trace_loss": trace}

        return answer_and_trace

    def image_inputs(self, folder, split, filenames, cfg, run=None, progress=False,
                     inputs: PredictInputs | None = None) -> tuple[torch.Tensor, dict[str, int]]:
        """Object tokens: of the run's parse (``inputs.likelihoods``) when given; for training and
        validation (no ``inputs``) of ``<cfg.parses>/<split>_likelihoods.json`` when
        ``cfg.train_tokens`` is ``"parsed"``; else of the ground-truth scenes (also standalone checks).

        Raises:
            ValueError: ``train_tokens="parsed"`` without ``cfg.parses``.
        """
        onto = load_ontology(cfg.ontology)
        folder = Path(folder)
        if inputs is not None and inputs.likelihoods is not None:
            return parsed_tokens(Path(inputs.likelihoods), folder, split, filenames, onto, cfg)
        if inputs is None and cfg.train_tokens == "parsed":
            if not cfg.parses:
                raise ValueError(f"objtf: train_tokens='parsed' needs parses (the folder of the run's scene parses "
                                 f"train_likelihoods.json and val_likelihoods.json); train it through a variant run")
            return parsed_tokens(Path(cfg.parses) / f"{split}_likelihoods.json", folder, split, filenames, onto, cfg)
        return truth_tokens(folder, split, filenames, onto, cfg)


@dataclass(frozen=True)
class ObjMACConfig(ObjTFConfig):
    """objmac's config: :class:`ObjTFConfig` with the MAC reasoner of ``hops`` steps in place of the
    encoder; the defaults are objmac's ``mini`` profile, :attr:`PROFILES` the fields the other
    profiles change (objtf's, and 2 hops in ``tiny``)."""

    model: str = "objmac"
    lr: float = 1e-3
    word_dim: int = 128
    mlp_hidden: int = 256
    reasoner: str = "mac"
    hops: int = 6

    PROFILES: ClassVar = dict(ObjTFConfig.PROFILES, tiny=dict(ObjTFConfig.PROFILES["tiny"], hops=2))


class ObjMACBaseline(ObjTFBaseline):
    """objtf's object tokens, question and answer scoring around a MAC reasoner
    (:class:`MACReasoner`): ``hops`` steps of question-guided attention over the tokens."""

    config_class = ObjMACConfig
    family = "holistic"


@dataclass(frozen=True)
class ObjMACTraceConfig(ObjTFConfig):
    """objmac-trace's config: an :class:`ObjTFConfig` with objmac's values (:class:`ObjMACConfig`: the
    MAC reasoner of ``hops`` steps) trained with the grounding loss of the training programs' traces
    at weight 1 (``trace_weight``, :mod:`baselines.trace_targets`); its profiles are objmac's."""

    model: str = "objmac-trace"
    lr: float = 1e-3
    word_dim: int = 128
    mlp_hidden: int = 256
    reasoner: str = "mac"
    hops: int = 6
    trace_weight: float = 1.0

    PROFILES: ClassVar = ObjMACConfig.PROFILES


class ObjMACTraceBaseline(ObjMACBaseline):
    """objmac whose hops learn, beside the answers, to read the objects the training question's
    ground-truth program reads step by step (a training signal only: no program at prediction)."""

    config_class = ObjMACTraceConfig
    family = "holistic"
    perception = ("the modular scene parser's attribute distributions; trained with program traces and 5x the "
                  "questions")
    shares_modular_perception = True


__all__ = ["ObjTFConfig", "ObjTFNet", "ObjTFBaseline", "ObjMACConfig", "ObjMACBaseline", "ObjMACTraceConfig",
           "ObjMACTraceBaseline", "MACReasoner", "token_layout", "token_dim", "scene_tokens",
           "truth_tokens", "parsed_tokens", "answer_word_ids"]
