"""NSCL (Mao et al., 2019): visual concepts learned from question–answer pairs alone, through a
quasi-symbolic executor that runs the question's program on object features with soft masks.

Model (sizes per profile):

* **objects**: ``backbone`` ``lite0`` (the CPU profiles, as the paper's ImageNet ResNet-34): the
  frozen ImageNet EfficientNet-Lite0's maps at ``feature_stride`` (112 channels at stride 16 of the
  320x240 image), computed once per image and cached (:func:`baselines.common.backbone_features`);
  or ``small``: a CNN trained from scratch (stride 4) over the resized image. Each object box
  (ground-truth boxes of the training scenes; at test time the boxes a detector found, see below)
  is pooled by ``torchvision.ops.roi_align`` to a ``roi_size`` x ``roi_size`` grid; the grid and the
  box geometry give the object feature;
* **parts**: one learned query per part name attends over the object's RoI grid; the attended
  cells give the feature of that part of that object (no part boxes are needed, so test images
  parsed by an object detector have parts too);
* **concepts**: per attribute an operator (a linear map of object or part features into a concept
  space of ``concept_dim``) and one embedding per value, shared by objects and parts; the logit of
  "object i is red" is ``(cos(op(f_i), c_red) - γ) / τ`` (NSCL's γ = 0.2, τ = 0.1). Relations
  (left / right / front / behind) come from an MLP over the pair's box geometry and projected
  features; "part k of object i exists" from a linear map of the part feature, masked by the part
  names the object's (soft) shape has.

Quasi-symbolic executor (:class:`SoftExecutor`), over the same program functions as the symbolic
executors, parts included: an object set is a mask in [0, 1]^N; ``filter`` = min(mask, concept
membership), ``union`` = max, ``intersect`` = min, ``exist`` = max, ``count`` = sum of the mask,
``unique`` = softmax over the mask's logits (an attention over objects), ``relate`` and ``same_*``
= the attention times the pairwise relation (sameness) probabilities, ``query_*`` = the attention
times the softmax over the attribute's concepts, ``equal_*`` = the probability that two
distributions agree, ``equal_integer`` / ``less_than`` / ``greater_than`` = a logistic of the count
difference. Part sets are masks over (object, part name); ``object2part`` = the object mask times
the part existence, ``part2object`` = max (set) or sum (one part) over part names. A count answer
is scored by a softmax over 0..10 of ``-(count - k)^2 / (2 σ^2)`` (``count_sigma``). The loss is
the negative log-probability of the answer; the prediction is the most probable answer.

Training uses the ground-truth programs of the training questions (NSCL trains its parser jointly
by REINFORCE; here programs come from annotations, as in NS-VQA's supervised setting) and a
curriculum (``curriculum``): ``"f1:n1:o1,f2:n2:o2"`` trains the first ``f1`` of the steps on
questions of at most ``n1`` program nodes about scenes of at most ``o1`` objects, up to ``f2`` on
``n2`` / ``o2``, then on everything (NSCL's curriculum grows the programs and the scenes the same
way). Each step draws ``images_per_batch`` images and up to ``questions_per_image`` eligible
questions of each, as a function of ``(seed, step)`` only, so a resumed run continues exactly.

Prediction (:meth:`NSCLBaseline.predict`): boxes are ``likelihoods``' detections (a scene
parser's ``likelihoods.json``; those scoring at least ``min_score``), and programs are
``programs``' (a question parser's ``programs.json``); without them the variant's ground-truth
scene boxes and programs are used ("oracle" inputs, for standalone checks).
``scripts/train_variant.py`` gives NSCL the run's own parses, like NS-VQA, and first lets it choose
``min_score`` on the training variant's val split (:meth:`NSCLBaseline.tune`, saved in
``RUN/tuned.json``; never on a test split). A question whose program is invalid, or whose image has
no box, gets the most frequent training answer, flagged ``guessed``.

Differences from the paper: the frozen features are EfficientNet-Lite0's stride-16 map rather than
a fine-tuned ResNet-34's (one scale, no FPN); programs are supervised (ground-truth programs of the
training questions) rather than learnt by REINFORCE; parts are attended inside the object's RoI grid
(NSCL has no parts); relations come from box geometry and projected features rather than NSCL's
RoI-pair features; the CPU profiles are much smaller (feature and concept sizes, steps).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import Dataset

from executors.dsl import OBJECT, PART, PART_SET, SIGNATURES, VALUE_TYPES
from executors.errors import ExecutionError, FormatError
from executors.io import normalize_answer
from executors.ontology import Ontology, load_ontology
from executors.program import Program
from nsvqa.artifacts.likelihoods import read_likelihoods
from nsvqa.artifacts.programs import read_programs
from nsvqa.artifacts.questions import QuestionsFile, questions_path, read_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.training.checkpoint import load_checkpoint, save_checkpoint
from nsvqa.models import TUNED, ModelSpec, PredictInputs, read_tuned
from nsvqa.artifacts.predictions import Prediction, load_question_meta
from nsvqa.training import warmup_cosine
from nsvqa.training.engine import Progress, StepResult, record_seconds, restore_train_state, train_steps
from nsvqa.training.data import StepLoader
from nsvqa.training.sampling import GroupBatches, SequentialBatches

from . import Baseline, register
from .config import TrainConfig
from .common import (CHECKPOINT, check_backbone, checkpoint_kind, checkpoint_path, config_from_dict, image_cache,
                     image_inputs, load_images, normalise_images, open_run)

EPS = 1e-6
MAX_COUNT = 10
CNN_STRIDE = 4
#: ``small``: the CNN trained from scratch (stride 4); ``lite0``: the frozen ImageNet
#: EfficientNet-Lite0's cached maps at ``feature_stride`` (:func:`baselines.common.backbone_features`)
NSCL_BACKBONES = ("small", "lite0")
#: the detection score cuts :meth:`NSCLBaseline.tune` chooses from on val, and where it saves its choice
MIN_SCORE_CANDIDATES = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7)
_VALUE_TO_ATTRIBUTE = {t: a for a, t in VALUE_TYPES.items()}


# ---------------------------------------------------------------------------- config
@dataclass(frozen=True)
class NSCLConfig(TrainConfig):
    """Resolved config of the NSCL baseline (written to config.json): a
    :class:`baselines.config.TrainConfig` (data, run identity, Adam schedule) where each step
    takes ``images_per_batch`` images and up to ``questions_per_image`` questions of each.
    Network: images resized to ``image_width`` x ``image_height``, a CNN of ``cnn_width`` x 1, 2, 4, 4 channels, RoI grids of ``roi_size``,
    object and part features of ``feature_dim``, concept spaces of ``concept_dim``. ``curriculum``:
    see the module docstring (empty: no curriculum). ``min_score``: detections kept at prediction.
    ``count_sigma``: the spread of the count answer's distribution.
    """

    model: str = "nscl"
    images_per_batch: int = 8
    questions_per_image: int = 4
    image_width: int = 160
    image_height: int = 120
    cnn_width: int = 16
    roi_size: int = 4
    feature_dim: int = 64
    concept_dim: int = 32
    curriculum: str = ""
    min_score: float = 0.5
    count_sigma: float = 0.5
    cache_images: bool = True
    backbone: str = "small"
    feature_stride: int = 16

    MUST_MATCH: ClassVar[tuple[str, ...]] = TrainConfig.MUST_MATCH + (
        "images_per_batch", "questions_per_image", "image_width", "image_height", "cnn_width", "roi_size",
        "feature_dim", "concept_dim", "curriculum", "backbone", "feature_stride")
    #: checkpoints written before the field existed: the CNN trained from scratch
    ABSENT: ClassVar[dict[str, Any]] = {"backbone": "small"}

    def check(self) -> None:
        super().check()
        for k in ("images_per_batch", "questions_per_image", "image_width", "image_height", "cnn_width", "roi_size",
                  "feature_dim", "concept_dim"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score must be in [0, 1], got {self.min_score}")
        if self.count_sigma <= 0:
            raise ValueError(f"count_sigma must be > 0, got {self.count_sigma}")
        parse_curriculum(self.curriculum)
        if self.backbone not in NSCL_BACKBONES:
            raise ValueError(f"backbone {self.backbone!r}: valid: {', '.join(NSCL_BACKBONES)}")
        check_backbone(self.backbone, self.feature_stride)


def parse_curriculum(text: str) -> list[tuple[float, int, int]]:
    """``"0.2:5:6,0.5:9:8"`` -> [(0.2, 5, 6), (0.5, 9, 8)]: stages (end fraction of the steps, most
    program nodes, most objects), fractions increasing in (0, 1].

    Raises:
        ValueError: a malformed stage (the stage and the expected form named).
    """
    stages: list[tuple[float, int, int]] = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        try:
            f, n, o = item.split(":")
            stage = (float(f), int(n), int(o))
        except ValueError:
            raise ValueError(f"curriculum stage {item!r}: expected FRACTION:MAX_NODES:MAX_OBJECTS") from None
        if not (0.0 < stage[0] <= 1.0) or stage[1] < 1 or stage[2] < 1 or (stages and stage[0] <= stages[-1][0]):
            raise ValueError(f"curriculum stage {item!r}: fractions must increase in (0, 1], "
                             f"nodes and objects be >= 1")
        stages.append(stage)
    return stages


# ---------------------------------------------------------------------------- network
class ConceptSpace(nn.Module):
    """Per attribute: operators for objects and for parts into a ``dim`` concept space, and one
    embedding per value (shared by objects and parts).

    ``logits(attribute, x (..., in_dim), part) -> (..., V)`` = (cos(op(x), c_v) - γ) / τ.
    """

    def __init__(self, in_dim: int, dim: int, sizes: Mapping[str, int], part_attributes: Sequence[str],
                 gamma: float = 0.2, tau: float = 0.1):
        super().__init__()
        self.gamma, self.tau = gamma, tau
        self.obj_op = nn.ModuleDict({a: nn.Linear(in_dim, dim) for a in sizes})
        self.part_op = nn.ModuleDict({a: nn.Linear(in_dim, dim) for a in part_attributes})
        self.embedding = nn.ParameterDict({a: nn.Parameter(torch.randn(v, dim)) for a, v in sizes.items()})

    def logits(self, attribute: str, x: torch.Tensor, part: bool = False) -> torch.Tensor:
        op = (self.part_op if part else self.obj_op)[attribute]
        u = F.normalize(op(x), dim=-1)
        c = F.normalize(self.embedding[attribute], dim=-1)
        return (u @ c.T - self.gamma) / self.tau


class NSCLNet(nn.Module):
    """Object and part features, concepts and relations of the boxes of a batch of images.

    ``forward(images (B, 3, H, W) float, or the cached backbone maps (B, C, h, w), boxes: B tensors
    (n_b, 4) xyxy in pixels of the ``image_size`` (width, height) image) -> one dict per image`` of
    logits: ``attributes[a]`` (n, V_a), ``relations`` (n, n, R), ``part_exist`` (n, P),
    ``part_attributes[a]`` (n, P, V_a).
    """

    def __init__(self, onto: Ontology, *, cnn_width: int, roi_size: int, feature_dim: int, concept_dim: int,
                 image_size: tuple[int, int], backbone: str = "small", feature_stride: int = 16):
        super().__init__()
        self.image_size = tuple(image_size)
        self.attributes = tuple(onto.attribute_names)
        self.part_attributes = tuple(a for a in onto.part_attributes if a in onto.attributes) if onto.has_parts else ()
        self.num_parts = len(onto.part_names) if onto.has_parts else 0
        self.roi_size = roi_size
        if backbone == "lite0":  # the input is already the frozen backbone's map
            from parsers.backbones import TAP_CHANNELS

            self.cnn, c_in, self.stride = nn.Identity(), TAP_CHANNELS[feature_stride], feature_stride
        else:
            w = cnn_width
            layers: list[nn.Module] = []
            c_in = 3
            for k, c in enumerate([w, 2 * w, 4 * w, 4 * w]):
                layers += [nn.Conv2d(c_in, c, 3, stride=2 if k < 2 else 1, padding=1, bias=False), nn.BatchNorm2d(c),
                           nn.ReLU(inplace=True)]
                c_in = c
            self.cnn, self.stride = nn.Sequential(*layers), CNN_STRIDE
        self.cell = nn.Linear(c_in, feature_dim)
        self.obj = nn.Sequential(nn.Linear(c_in * roi_size * roi_size + 6, 2 * feature_dim), nn.ReLU(inplace=True),
                                 nn.Linear(2 * feature_dim, feature_dim))
        # one concept per value a scene can hold (no embedding for Super-CLEVR's unplaced addi)
        self.concepts = ConceptSpace(feature_dim, concept_dim, {a: len(onto.scene_values(a)) for a in self.attributes},
                                     self.part_attributes)
        n_rel = len(onto.relations)
        self.rel_feat = nn.Linear(feature_dim, 16)
        self.rel = nn.Sequential(nn.Linear(3 * 6 + 2 * 16, 64), nn.ReLU(inplace=True), nn.Linear(64, n_rel))
        if self.num_parts:
            self.part_query = nn.Parameter(torch.randn(self.num_parts, feature_dim) / feature_dim ** 0.5)
            self.part_feat = nn.Sequential(nn.Linear(feature_dim, feature_dim), nn.ReLU(inplace=True))
            self.part_exist = nn.Linear(feature_dim, 1)

    @staticmethod
    def geometry(boxes: torch.Tensor, width: int, height: int) -> torch.Tensor:
        """(n, 4) xyxy pixels -> (n, 6): x1, y1, x2, y2, centre x, centre y, each in [0, 1]."""
        scale = boxes.new_tensor([width, height, width, height])
        b = boxes / scale
        return torch.cat([b, (b[:, :2] + b[:, 2:]) / 2], dim=1)

    def forward(self, images: torch.Tensor, boxes: Sequence[torch.Tensor]) -> list[dict[str, Any]]:
        from torchvision.ops import roi_align

        fmap = self.cnn(images)
        w, h = self.image_size
        sizes = [len(b) for b in boxes]
        if sum(sizes) == 0:
            return [self._empty(images) for _ in boxes]
        r = self.roi_size
        rois = roi_align(fmap, [b.to(fmap.dtype) for b in boxes], output_size=(r, r), spatial_scale=1.0 / self.stride,
                         sampling_ratio=2, aligned=True)  # (n, C, r, r)
        geo = torch.cat([self.geometry(b, w, h) for b in boxes if len(b)])
        feats = self.obj(torch.cat([rois.flatten(1), geo], dim=1))
        cells = self.cell(rois.flatten(2).transpose(1, 2))  # (n, r*r, D)
        out, start = [], 0
        for n in sizes:
            if n == 0:
                out.append(self._empty(images))
                continue
            sl = slice(start, start + n)
            start += n
            out.append(self._scene(feats[sl], cells[sl], geo[sl]))
        return out

    def _empty(self, images: torch.Tensor) -> dict[str, Any]:
        z = images.new_zeros
        return {"n": 0, "attributes": {a: z((0, self.concepts.embedding[a].shape[0])) for a in self.attributes}}

    def _scene(self, f: torch.Tensor, cells: torch.Tensor, geo: torch.Tensor) -> dict[str, Any]:
        n = f.shape[0]
        scene: dict[str, Any] = {"n": n, "attributes": {a: self.concepts.logits(a, f) for a in self.attributes}}
        g = self.rel_feat(f)
        gi, gj = geo[:, None, :].expand(n, n, 6), geo[None, :, :].expand(n, n, 6)
        pair = torch.cat([gi, gj, gi - gj, g[:, None, :].expand(n, n, 16), g[None, :, :].expand(n, n, 16)], dim=-1)
        scene["relations"] = self.rel(pair)  # (n, n, R)
        if self.num_parts:
            att = torch.softmax(torch.einsum("ncd,pd->npc", cells, self.part_query) / cells.shape[-1] ** 0.5, dim=-1)
            pf = self.part_feat(torch.einsum("npc,ncd->npd", att, cells) + self.part_query)  # (n, P, D)
            scene["part_exist"] = self.part_exist(pf).squeeze(-1)
            scene["part_attributes"] = {a: self.concepts.logits(a, pf, part=True) for a in self.part_attributes}
        return scene


# ---------------------------------------------------------------------------- the executor
def _logit(p: torch.Tensor) -> torch.Tensor:
    p = p.clamp(EPS, 1 - EPS)
    return torch.log(p) - torch.log1p(-p)


class SoftExecutor:
    """Runs programs on the outputs of :class:`NSCLNet` with soft masks (see the module docstring).

    ``run(program, types, scene)`` returns the answer's distribution as (answer strings, (K,)
    probabilities tensor), with ``log=True`` log-probabilities (a count's from a log-softmax,
    others smoothed by ``EPS`` so that a near-impossible answer keeps a gradient);
    :meth:`log_prob` the log-probability of one answer.
    """

    def __init__(self, onto: Ontology, count_sigma: float = 0.5):
        self.onto, self.sigma = onto, count_sigma
        self.relations = tuple(onto.relations)
        # concept column -> its answer string, per attribute (the values a scene can hold:
        # Ontology.scene_values); a spoken answer may cover several values
        self.spoken = {a: [normalize_answer(onto.spoken_value(a, v)) for v in onto.scene_values(a)]
                       for a in onto.attribute_names}
        self.counts = [str(k) for k in range(MAX_COUNT + 1)]
        if onto.has_parts:
            names = onto.part_names
            self.part_index = {p: k for k, p in enumerate(names)}
            self.spoken["partname"] = [normalize_answer(onto.spoken_value("partname", p)) for p in names]
            shapes = onto.scene_values("shape")
            allowed = torch.zeros(len(shapes), len(names))
            for s, shape in enumerate(shapes):
                for p in onto.parts_of(shape):
                    allowed[s, self.part_index[p]] = 1.0
            self.allowed = allowed
        self._columns: dict[tuple[str, str], list[int]] = {}

    def columns(self, attribute: str, value: str) -> list[int]:
        """Value columns a filter value keeps (a shape category keeps its shapes; ``partname``:
        the part names the value matches). A value no scene holds (Super-CLEVR's ``addi``) keeps
        no column: its filter gives the empty set, as in the official engine."""
        key = (attribute, value)
        if key not in self._columns:
            if attribute == "partname":
                keys = self.onto.partname_matching(value) or ((value,) if value in self.part_index else ())
                cols = [self.part_index[k] for k in keys if k in self.part_index]
            else:
                vals = self.onto.scene_values(attribute)
                keep = self.onto.matching(attribute, value)
                cols = [vals.index(v) for v in keep if v in vals]
                if keep and not cols:  # only unplaced values: nothing can match
                    self._columns[key] = cols
                    return cols
            if not cols:
                raise ExecutionError(f"value {value!r} matches nothing of {attribute!r}")
            self._columns[key] = cols
        return self._columns[key]

    def run(self, program: Program, types: Sequence[str], scene: Mapping[str, Any], *,
            log: bool = False) -> tuple[list[str], torch.Tensor]:
        outs: list[Any] = []
        for node, typ in zip(program.nodes, types):
            sig = SIGNATURES[node.function]
            args = [outs[i] for i in node.inputs]
            in_types = [types[i] for i in node.inputs]
            outs.append(self._step(sig, node, args, in_types, scene))
        return self._answer(outs[-1], types[-1], log)

    def log_prob(self, program: Program, types: Sequence[str], scene: Mapping[str, Any], answer: str) -> torch.Tensor:
        """log P(answer) (log ``EPS`` when the answer is none the program can give)."""
        labels, logp = self.run(program, types, scene, log=True)
        hit = [k for k, a in enumerate(labels) if a == answer]
        return torch.logsumexp(logp[hit], 0) if hit else logp.sum() * 0.0 + float(np.log(EPS))

    # -- one step
    def _step(self, sig, node, args, in_types, scene):
        kind, n = sig.kind, scene["n"]
        attrs = scene["attributes"]
        if kind == "scene":
            return attrs[self.onto.attribute_names[0]].new_ones(n)
        if kind == "filter":
            cols = self.columns(sig.attribute, node.value_inputs[0])
            if not cols:  # a value no scene holds: the empty set
                return args[0] * 0.0
            memb = torch.sigmoid(attrs[sig.attribute][:, cols]).amax(-1)
            return torch.minimum(args[0], memb)
        if kind == "unique":
            x = args[0]
            if in_types[0] == PART_SET:
                return torch.softmax(_logit(x).flatten(), 0).view_as(x)
            return torch.softmax(_logit(x), 0)
        if kind == "relate":
            r = torch.sigmoid(scene["relations"][:, :, self.relations.index(node.value_inputs[0])])
            r = r * (1.0 - torch.eye(n, dtype=r.dtype, device=r.device))
            return (args[0] @ r).clamp(0.0, 1.0)
        if kind == "union":
            return torch.maximum(args[0], args[1])
        if kind == "intersect":
            return torch.minimum(args[0], args[1])
        if kind == "count":
            return args[0].sum()
        if kind == "exist":
            return args[0].amax() if n else args[0].sum()
        if kind == "query":
            return args[0] @ torch.softmax(attrs[sig.attribute], -1)
        if kind == "same":
            p = torch.softmax(attrs[sig.attribute], -1)
            s = (p @ p.T) * (1.0 - torch.eye(n, dtype=p.dtype, device=p.device))
            return (args[0] @ s).clamp(0.0, 1.0)
        if kind == "equal_value":
            return (args[0] * args[1]).sum().clamp(0.0, 1.0)
        if kind == "equal_object":
            return (args[0] * args[1]).sum().clamp(0.0, 1.0)
        if kind == "compare":
            a, b = args
            d = {"equal_integer": 0.5 - (a - b).abs(), "less_than": b - a - 0.5, "greater_than": a - b - 0.5}[sig.name]
            return torch.sigmoid(d / 0.25)
        if kind == "object2part":
            shape = torch.softmax(attrs["shape"], -1) @ self.allowed.to(args[0])  # (n, P)
            pe = torch.sigmoid(scene["part_exist"]) * shape
            if in_types[0] == OBJECT:
                return args[0][:, None] * pe
            return torch.minimum(args[0][:, None], pe)
        if kind == "part2object":
            return args[0].sum(-1).clamp(0.0, 1.0) if in_types[0] == PART else args[0].amax(-1)
        if kind == "partfilter":
            cols = self.columns(sig.attribute, node.value_inputs[0])
            if not cols:
                return args[0] * 0.0
            lg = scene["part_attributes"][sig.attribute][:, :, cols]
            return torch.minimum(args[0], torch.sigmoid(lg).amax(-1))
        if kind == "partfilter_partname":
            mask = args[0].new_zeros(args[0].shape[-1])
            mask[self.columns("partname", node.value_inputs[0])] = 1.0
            return args[0] * mask
        if kind == "partquery":
            return torch.einsum("np,npv->v", args[0], torch.softmax(scene["part_attributes"][sig.attribute], -1))
        if kind == "partquery_partname":
            return args[0].sum(0)
        raise ExecutionError(f"function {node.function!r} (kind {kind!r}) has no soft rule")

    def _answer(self, value: torch.Tensor, typ: str, log: bool) -> tuple[list[str], torch.Tensor]:
        if typ == "Bool":
            p = value.clamp(0.0, 1.0)
            probs = torch.stack([p, 1.0 - p])
            return ["yes", "no"], torch.log(probs * (1.0 - 2 * EPS) + EPS) if log else probs
        if typ == "Integer":
            k = torch.arange(MAX_COUNT + 1, dtype=value.dtype, device=value.device)
            z = -(value - k) ** 2 / (2 * self.sigma ** 2)
            return self.counts, torch.log_softmax(z, 0) if log else torch.softmax(z, 0)
        attribute = _VALUE_TO_ATTRIBUTE[typ]
        p = value / value.sum().clamp_min(EPS)
        return self.spoken[attribute], torch.log(p * (1.0 - 2 * EPS) + EPS) if log else p


# ---------------------------------------------------------------------------- data
@dataclass
class NSCLQuestion:
    """One question ready for the executor: its program and output types, its answer (normalised;
    None when unknown), its image row, and whether its program is usable."""

    index: int
    program: Program | None
    types: tuple[str, ...]
    answer: str | None
    image_row: int


@dataclass
class NSCLSplit(Dataset):
    """Questions, images (uint8, resized) and per image the boxes (xyxy, resized pixels): a Dataset
    of questions (collated by :func:`collate_nscl`; :class:`NSCLImages` is the Dataset of its images).

    Item ``i``: ``{"index": () int64 (= i), "row": () int64 image row, "image": (3, H, W) uint8,
    "boxes": (n, 4) float32}``.
    """

    questions: list[NSCLQuestion]
    images: torch.Tensor
    boxes: list[torch.Tensor]
    files: list[str]

    def __len__(self) -> int:
        return len(self.questions)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        row = self.questions[i].image_row
        return {"index": torch.tensor(i, dtype=torch.long), "row": torch.tensor(row, dtype=torch.long),
                "image": self.images[row], "boxes": self.boxes[row]}


class NSCLImages(Dataset):
    """The images of an :class:`NSCLSplit` (by row), collated by :func:`collate_nscl_images`.

    Item ``r``: ``{"row": () int64 (= r), "image": (3, H, W) uint8, "boxes": (n, 4) float32}``.
    """

    def __init__(self, split: NSCLSplit):
        self.split = split

    def __len__(self) -> int:
        return len(self.split.files)

    def __getitem__(self, r: int) -> dict[str, torch.Tensor]:
        return {"row": torch.tensor(r, dtype=torch.long), "image": self.split.images[r], "boxes": self.split.boxes[r]}


def collate_nscl_images(items: Sequence[dict[str, torch.Tensor]]) -> dict[str, Any]:
    """Items of :class:`NSCLImages` -> ``rows`` (R,) int64, ``images`` (R, 3, H, W) float normalised
    (or the cached maps (R, C, h, w) as float), ``boxes`` [R x (n, 4)]."""
    images = torch.stack([it["image"] for it in items])
    return {"rows": torch.stack([it["row"] for it in items]),
            "images": normalise_images(images) if images.dtype == torch.uint8 else images.float(),
            "boxes": [it["boxes"] for it in items]}


def collate_nscl(items: Sequence[dict[str, torch.Tensor]]) -> dict[str, Any]:
    """Items of :class:`NSCLSplit` (questions) -> their distinct images, in order of first
    appearance (:func:`collate_nscl_images`: ``rows`` (R,), ``images``, ``boxes``), ``index`` (B,)
    int64 the questions and ``image_of`` (B,) int64 the position of each question's image among
    the R."""
    first: dict[int, dict[str, torch.Tensor]] = {}
    for it in items:
        first.setdefault(int(it["row"]), it)
    pos = {row: k for k, row in enumerate(first)}
    return collate_nscl_images(list(first.values())) | {
        "index": torch.stack([it["index"] for it in items]),
        "image_of": torch.tensor([pos[int(it["row"])] for it in items], dtype=torch.long)}


def _image_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    if not path.is_file():
        raise FileNotFoundError(f"{path}: image file missing")
    with Image.open(path) as im:
        return im.size


def scene_boxes(folder: Path, split: str) -> dict[str, np.ndarray]:
    """image file -> (n, 4) xyxy boxes (pixels of the rendered image) of the ground-truth scenes.

    Raises:
        FormatError: a missing scenes file, or an object without a 4-number ``bbox`` (file, scene,
            object and field named).
    """
    return {s.image_filename or f"#{s.index}": s.boxes() for s in read_scenes(scenes_path(folder, split))}


def detection_boxes(path: str | Path, min_score: float, ontology: Ontology | None = None) -> dict[str, np.ndarray]:
    """image file -> (n, 4) xyxy boxes of a scene parser's ``likelihoods.json`` scoring >= min_score
    (:func:`nsvqa.artifacts.read_likelihoods`).

    Raises:
        FormatError: no such file, or a malformed one (file, scene, detection and field named).
    """
    return read_likelihoods(path, ontology).boxes(min_score)


def parsed_programs(path: str | Path, n: int | Sequence[Any]) -> list[Program | None]:
    """The programs of a question parser's ``programs.json`` (None where it gave none), for ``n``
    questions (a number or the questions read).

    Raises:
        FormatError: no such file, a malformed one, or a number of programs other than ``n``.
    """
    return read_programs(path, questions=n).program_list()


def load_split(folder: Path, split: str, onto: Ontology, cfg: NSCLConfig, *, require_answer: bool,
               limit: int | None = None, boxes: Mapping[str, np.ndarray] | None = None,
               programs: Sequence[Program | None] | None = None, cache: Path | None = None,
               progress: bool = False, questions: QuestionsFile | None = None) -> NSCLSplit:
    """A split for NSCL: questions with typed programs (``programs`` replaces the file's; an
    invalid one becomes None), resized images, and boxes (``boxes`` replaces the scenes' ones).

    ``questions``: the split's questions file already read (:func:`nsvqa.artifacts.read_questions`
    with ``require_image``; with the checks below), else it is read here.

    Raises:
        FormatError: a question without a usable program or answer where required (file, question
            and field named), a missing scenes file, or an image without boxes in ``boxes``.
    """
    if questions is None:
        questions = read_questions(questions_path(folder, split), onto, require_image=True,
                                   require_answer=require_answer, require_program=programs is None and require_answer,
                                   require_valid=programs is None, limit=limit)
    items = list(questions)[:limit]  # NSCL reads programs, not the text
    if programs is not None and len(programs) < len(items):
        raise FormatError(f"{questions.path}: {len(programs)} programs for {len(items)} questions")
    files = [q.image_filename for q in items]
    if boxes is None:
        boxes = scene_boxes(folder, split)
    distinct = list(dict.fromkeys(files))
    if cfg.backbone == "lite0":  # the split's cached maps, those of these images in this order
        maps, at = image_inputs(folder, split, distinct, cfg, progress=progress)
        images, rows = maps[[at[f] for f in distinct]], {f: i for i, f in enumerate(distinct)}
    else:
        images, rows = load_images(folder, split, distinct, cfg.image_width, cfg.image_height, cache=cache,
                                   progress=progress)
    box_rows = []
    for name in distinct:
        if name not in boxes:
            raise FormatError(f"{folder}: no boxes for image {name!r} of split {split!r}")
        w, h = _image_size(folder / "images" / split / name)
        scale = np.array([cfg.image_width / w, cfg.image_height / h] * 2, dtype=np.float32)
        box_rows.append(torch.from_numpy(boxes[name] * scale))
    out = []
    for k, q in enumerate(items):
        if programs is None:  # the file's, validated once by the reader
            program, types = q.program, q.program_types
            if program is not None and types is None:  # read without the ontology
                try:
                    types = tuple(program.validate(onto))
                except ExecutionError as e:
                    raise FormatError(f"{q.where}, field 'program': {e}") from None
            types = types or ()
        else:
            program, types = programs[k], ()
            if program is not None:
                try:
                    types = tuple(program.validate(onto))
                except ExecutionError:
                    program = None  # a parser's invalid program: answered by a guess
        out.append(NSCLQuestion(k, program, types, q.answer, rows[files[k]]))
    return NSCLSplit(out, images, box_rows, distinct)


class CurriculumSampler(GroupBatches):
    """The questions of step ``s``: ``images_per_batch`` images among those with a question
    eligible at ``s``'s curriculum stage, and up to ``questions_per_image`` of each image's eligible
    questions, drawn from ``(seed, s)`` only (:class:`nsvqa.training.sampling.GroupBatches` over
    the images of each stage)."""

    def __init__(self, split: NSCLSplit, cfg: NSCLConfig):
        self.cfg = cfg
        q_nodes = np.array([len(q.program) if q.program is not None else 10 ** 6 for q in split.questions])
        q_img = np.array([q.image_row for q in split.questions])
        n_obj = np.array([len(b) for b in split.boxes])
        usable = np.array([q.program is not None and q.answer is not None for q in split.questions])
        stages = []  # (end step, question indices per image row)
        for frac, max_nodes, max_obj in parse_curriculum(cfg.curriculum) + [(1.0, 10 ** 6, 10 ** 6)]:
            ok = usable & (q_nodes <= max_nodes) & (n_obj[q_img] <= max_obj)
            if not ok.any():  # an empty stage trains on the next one's questions
                continue
            per_image: dict[int, np.ndarray] = {}
            for i in np.flatnonzero(ok):
                per_image.setdefault(int(q_img[i]), []).append(int(i))  # type: ignore[arg-type]
            stages.append((frac * cfg.steps, {k: np.asarray(v) for k, v in per_image.items()}))
        if not stages:
            raise ValueError("no training question has a program and an answer")
        super().__init__(stages, cfg.seed, cfg.images_per_batch, cfg.questions_per_image)


# ---------------------------------------------------------------------------- forward passes
def question_losses(net: NSCLNet, executor: SoftExecutor, data: NSCLSplit, batch: Mapping[str, Any]) -> torch.Tensor:
    """(B,) negative log-probabilities of the answers of the questions of ``batch`` (a
    :func:`collate_nscl` batch of ``data``'s questions: each image through the network once)."""
    scenes = net(batch["images"], batch["boxes"])
    qs = [data.questions[i] for i in batch["index"].tolist()]
    return torch.stack([-executor.log_prob(q.program, q.types, scenes[k], q.answer)
                        for q, k in zip(qs, batch["image_of"].tolist())])


def answer_all(net: NSCLNet, executor: SoftExecutor, data: NSCLSplit, device: torch.device, *,
               images_per_batch: int = 32, progress: bool = False, desc: str = "nscl") -> list[tuple[str, float] | None]:
    """Per question: (most probable answer, its probability), or None when the question has no
    usable program or its image no box."""
    from tqdm import tqdm

    by_image: dict[int, list[int]] = {}
    for k, q in enumerate(data.questions):
        by_image.setdefault(q.image_row, []).append(k)
    out: list[tuple[str, float] | None] = [None] * len(data.questions)
    batches = StepLoader(NSCLImages(data), collate_nscl_images, SequentialBatches(sorted(by_image), images_per_batch),
                         device=device)
    was = net.training
    net.eval()
    with torch.no_grad():
        for b in tqdm(batches, desc=desc, disable=not progress):
            for row, scene in zip(b.indices, net(b.data["images"], b.data["boxes"])):
                for k in by_image[row]:
                    q = data.questions[k]
                    if q.program is None or scene["n"] == 0:
                        continue
                    labels, probs = executor.run(q.program, q.types, scene)
                    # several values may share an answer string: sum them
                    agg: dict[str, float] = {}
                    for a, p in zip(labels, probs.tolist()):
                        agg[a] = agg.get(a, 0.0) + p
                    best = max(agg, key=agg.get)
                    out[k] = (best, min(1.0, max(0.0, agg[best])))
    net.train(was)
    return out


def accuracy(net: NSCLNet, executor: SoftExecutor, data: NSCLSplit, device: torch.device) -> float:
    """Share of questions answered right (no usable program or no box counts wrong)."""
    if not data.questions:
        return float("nan")
    got = answer_all(net, executor, data, device)
    return sum(1 for g, q in zip(got, data.questions) if g is not None and g[0] == q.answer) / len(got)


def concept_accuracy(net: NSCLNet, data: NSCLSplit, scenes: Mapping[str, Any], onto: Ontology,
                     device: torch.device, images_per_batch: int = 32) -> dict[str, float]:
    """Per attribute, the share of objects whose most similar concept is their true value.

    ``data`` must hold the ground-truth boxes (:func:`load_split` without ``boxes``), so that box
    ``i`` of an image is object ``i`` of ``scenes[image file]`` (a
    :class:`executors.scene.SymbolicScene`). NSCL learns its concepts from answers alone; this is
    how well they name the objects (the NSCL paper's concept classification accuracy).
    """
    hits = {a: 0 for a in net.attributes}
    total = 0
    was = net.training
    net.eval()
    with torch.no_grad():
        for b in StepLoader(NSCLImages(data), collate_nscl_images, SequentialBatches(len(data.files), images_per_batch),
                            device=device):
            for row, scene in zip(b.indices, net(b.data["images"], b.data["boxes"])):
                objects = scenes[data.files[row]].objects
                if len(objects) != scene["n"]:
                    raise ValueError(f"image {data.files[row]!r}: {scene['n']} boxes but {len(objects)} objects")
                total += len(objects)
                for a in net.attributes:
                    values = onto.scene_values(a)
                    for o, k in zip(objects, scene["attributes"][a].argmax(-1).tolist()):
                        hits[a] += values[k] == o[a]
    net.train(was)
    return {a: h / total if total else float("nan") for a, h in hits.items()}


# ---------------------------------------------------------------------------- the baseline
def _save(path: Path, cfg: NSCLConfig, net: NSCLNet, majority: str, train_state: dict, extra: dict) -> None:
    """Write the checkpoint (a module function, so tests can interrupt a run after it)."""
    save_checkpoint(path, kind=checkpoint_kind("nscl"), config=asdict(cfg), state_dict=net.state_dict(),
                    vocabularies={"majority_answer": majority},
                    train_state=train_state | {"rng": torch.get_rng_state()}, extra=extra)


_SCHEDULE = dict(weight_decay=0.0, grad_clip=5.0, cache_images=True, min_score=0.5, count_sigma=0.5)
PROFILES = {
    "tiny": dict(steps=40, images_per_batch=4, questions_per_image=4, lr=3e-3, warmup=5, eval_every=20,
                 val_questions=32, image_width=64, image_height=48, backbone="small", feature_stride=16, cnn_width=8, roi_size=3, feature_dim=32,
                 concept_dim=16, curriculum="0.25:6:10", **_SCHEDULE),
    # on the frozen Lite0's cached stride-16 maps of the full 320x240 images (issue 17): RoIAlign over
    # the 112-channel maps, no CNN to train, so a step costs the RoI features and the soft executor
    # only: ~10 steps/s on 2 threads. Measured on mid (ground-truth boxes and programs, val 1,000
    # questions): 3,000 steps 57.7% and still rising, so 8,000 steps (~14 min). Before it, a CNN from
    # scratch at 160x120 reached 41% at 2,000 steps of lr 5e-4 (results/image_baselines_mini)
    "mini": dict(steps=8000, images_per_batch=8, questions_per_image=4, lr=5e-4, warmup=100, eval_every=1000,
                 val_questions=1000, image_width=320, image_height=240, backbone="lite0", feature_stride=16,
                 cnn_width=16, roi_size=4, feature_dim=64, concept_dim=32, curriculum="0.1:5:6,0.3:9:8", **_SCHEDULE),
    # a GPU run (not measured): full-size images, wider CNN, longer schedule
    "full": dict(steps=60000, images_per_batch=32, questions_per_image=8, lr=1e-3, warmup=1000, eval_every=2000,
                 val_questions=5000, image_width=320, image_height=240, backbone="lite0", feature_stride=16, cnn_width=32, roi_size=7, feature_dim=256,
                 concept_dim=64, curriculum="0.05:5:6,0.15:9:8,0.3:13:10", **_SCHEDULE),
}
PROFILES["demo"] = dict(PROFILES["mini"], steps=2000, val_questions=500)


@register("nscl")
class NSCLBaseline(Baseline):
    """NSCL: concepts learned from QA through a quasi-symbolic executor over RoI object features."""

    config_class = NSCLConfig
    profiles = PROFILES
    uses_parses = True  # detections and parsed programs at test time
    supports_gt_programs = True  # detections with the ground-truth programs (nscl+gtprog)

    def build_model(self, cfg: NSCLConfig, onto: Ontology) -> NSCLNet:
        return NSCLNet(onto, cnn_width=cfg.cnn_width, roi_size=cfg.roi_size, feature_dim=cfg.feature_dim,
                       concept_dim=cfg.concept_dim, image_size=(cfg.image_width, cfg.image_height),
                       backbone=cfg.backbone, feature_stride=cfg.feature_stride)

    def load(self, run_dir: str | Path, device: str = "cpu") -> tuple[NSCLNet, NSCLConfig, str]:
        """(network in eval mode, config, majority answer) of ``RUN_DIR/baseline.pt``."""
        path = checkpoint_path(run_dir)
        ck = load_checkpoint(path, kind=checkpoint_kind(self.name))
        cfg = config_from_dict(NSCLConfig, ck["config"], str(path))
        net = self.build_model(cfg, load_ontology(cfg.ontology))
        net.load_state_dict(ck["state_dict"])
        return net.to(device).eval(), cfg, str(ck["vocabularies"]["majority_answer"])

    def train(self, cfg: NSCLConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
        """Train on ``cfg.data``'s train split (ground-truth boxes and programs) into ``out``;
        resumable exactly. Raises like :func:`baselines.common.train_classifier`."""
        from collections import Counter

        run, ck, done = open_run(self.name, cfg, out, resume=resume, total_steps=cfg.steps)
        try:
            if done:
                return run.path
            dev = torch.device(cfg.device)
            onto = load_ontology(cfg.ontology)
            folder = Path(cfg.data)
            path = run.path / CHECKPOINT
            t0 = time.time()

            train = load_split(folder, "train", onto, cfg, require_answer=True, limit=cfg.max_train_questions,
                               cache=image_cache(run.path, cfg, "train"), progress=progress)
            if not train.questions:
                raise ValueError(f"{folder / 'questions' / 'train_questions.json'}: no training questions")
            val_path = folder / "questions" / "val_questions.json"
            val = (load_split(folder, "val", onto, cfg, require_answer=True, limit=cfg.val_questions,
                              cache=image_cache(run.path, cfg, "val"), progress=progress)
                   if cfg.val_questions and val_path.is_file() else None)
            majority = Counter(q.answer for q in train.questions).most_common(1)[0][0]
            run.log(f"data: {len(train.questions)} train questions on {len(train.files)} images, "
                    f"{len(val.questions) if val else 0} val questions from {folder} ({time.time() - t0:.1f} s)")
            net = self.build_model(cfg, onto).to(dev)
            executor = SoftExecutor(onto, cfg.count_sigma)
            opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.steps, cfg.warmup))
            start, extra = 0, {}
            if ck is not None:
                net.load_state_dict(ck["state_dict"])
                start, extra = restore_train_state(ck["train_state"], opt, sched), dict(ck["extra"])
                run.log(f"resumed at step {start} from {path}")
            sampler = CurriculumSampler(train, cfg)
            run.log("curriculum: " + ", ".join(
                f"stage {k} until step {int(end)}: {sum(len(v) for v in qs.values())} questions"
                for k, (end, qs) in enumerate(sampler.stages)))
            batches = StepLoader(train, collate_nscl, sampler, start=start, total=cfg.steps, device=dev)
            net.train()

            def step_fn(step: int) -> StepResult:
                loss = question_losses(net, executor, train, batches(step).data).mean()
                return StepResult(loss, {"loss": loss}, info={"stage": sampler.stage(step)})

            def checkpoint(p: Progress) -> None:
                if not p.trained:  # zero steps: an untrained model, still loadable
                    _save(path, cfg, net, majority, {"step": p.step}, extra)
                    return
                msg = f"step {p.step} (stage {p.info['stage']}) loss={p.values['loss']:.5f} " \
                      f"smoothed={p.smoothed['loss']:.5f}"
                if val is not None and val.questions:
                    acc = accuracy(net, executor, val, dev)
                    extra["val_accuracy"] = acc
                    run.scalars("val", {"accuracy": acc}, p.step)
                    msg += f" val accuracy={acc:.4f} ({len(val.questions)} questions)"
                run.log(msg)
                record_seconds(extra, p)
                _save(path, cfg, net, majority, {"step": p.step, "optimizer": opt.state_dict(),
                                                 "scheduler": sched.state_dict()}, extra)

            train_steps(step_fn, opt, run, start=start, total=cfg.steps, scheduler=sched,
                        clip_params=net.parameters(), clip_norm=cfg.grad_clip, phase="train", log_every=20,
                        eval_every=cfg.eval_every, on_checkpoint=checkpoint, checkpoint_path=path,
                        seconds_before=float(extra.get("train_seconds", 0.0)), progress=progress, desc=self.name,
                        postfix=lambda p: {"loss": f"{p.smoothed['loss']:.4f}", "stage": p.info["stage"]})
        finally:
            run.close()
        return run.path

    def concept_accuracy(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "val", *,
                         device: str = "cpu") -> dict[str, float]:
        """:func:`concept_accuracy` of the trained run on the objects of ``ROOT/VARIANT``'s split
        (those of images with questions), with the ground-truth boxes."""
        net, cfg, _ = self.load(run_dir, device)
        onto = load_ontology(cfg.ontology)
        folder = Path(root) / variant
        data = load_split(folder, split, onto, cfg, require_answer=False)
        scenes = {s.image_filename: s.symbolic(onto) for s in read_scenes(scenes_path(folder, split))}
        return concept_accuracy(net, data, scenes, onto, torch.device(device))

    def tune(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "val", *,
             spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
             candidates: Sequence[float] = MIN_SCORE_CANDIDATES) -> dict:
        """Choose the detections' score cut on ``ROOT/VARIANT``'s ``split`` (the val split; never a
        test split) with ``inputs`` (the run's parses of it): the cut of ``candidates`` with the best
        accuracy (the higher cut on a tie), saved in ``RUN_DIR/tuned.json`` with every cut's
        accuracy, for :meth:`predict`. Reused while the checkpoint and inputs are the same.
        Without detections (ground-truth boxes) there is nothing to choose: returns ``{}``."""
        from nsvqa.evaluation import accuracy as score
        from nsvqa.fileio import sha256_file, write_json_atomic

        if inputs.likelihoods is None:
            return {}
        out = Path(run_dir) / TUNED
        key = {"checkpoint": sha256_file(checkpoint_path(run_dir)), "likelihoods": sha256_file(inputs.likelihoods),
               "programs": sha256_file(inputs.programs) if inputs.programs is not None else None,
               "variant": variant, "split": split, "candidates": [float(c) for c in candidates]}
        old = read_tuned(run_dir)
        if old is not None and old.get("key") == key:
            return old
        runs = self._predict_at(run_dir, root, variant, split, inputs, [float(c) for c in candidates], device=device)
        acc = {float(c): score(preds).accuracy for c, preds in zip(candidates, runs)}
        best = max(acc, key=lambda c: (acc[c], c))
        result = {"min_score": best, "accuracy_by_min_score": {str(c): a for c, a in acc.items()}, "key": key}
        write_json_atomic(out, result, indent=1)
        return result

    def predict(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "test", *,
                spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
                progress: bool = False, min_score: float | None = None) -> list[Prediction]:
        """One prediction per question of ``ROOT/VARIANT``'s split; ``inputs.likelihoods`` (a scene
        parser's detections, kept from ``min_score``: default the cut :meth:`tune` chose on val
        (``RUN_DIR/tuned.json``), else the config's) and ``inputs.programs`` (a question parser's)
        replace the ground-truth boxes and programs where given."""
        tuned = read_tuned(run_dir) if min_score is None else None
        if tuned is not None:
            min_score = tuned["min_score"]
        return self._predict_at(run_dir, root, variant, split, inputs, [min_score], device=device,
                                progress=progress)[0]

    def _predict_at(self, run_dir: str | Path, root: str | Path, variant: str, split: str, inputs: PredictInputs,
                    cuts: Sequence[float | None], *, device: str = "cpu", progress: bool = False) -> list[list[Prediction]]:
        """The predictions of :meth:`predict` at each detection cut of ``cuts`` (None: the
        config's), the checkpoint, questions, detections and programs read once for all."""
        net, cfg, majority = self.load(run_dir, device)
        onto = load_ontology(cfg.ontology)
        folder = Path(root) / variant
        likelihoods, programs = inputs.likelihoods, inputs.programs
        questions = read_questions(questions_path(folder, split), onto, require_program=True, require_answer=True,
                                   require_image=True, require_valid=programs is None)  # read once
        metas = load_question_meta(root, variant, split, ontology=onto, questions=questions)
        detections = read_likelihoods(likelihoods, onto) if likelihoods is not None else None
        progs = parsed_programs(programs, questions) if programs is not None else None
        executor = SoftExecutor(onto, cfg.count_sigma)
        runs = []
        for cut in cuts:
            if cut is not None:
                cfg = NSCLConfig(**(asdict(cfg) | {"min_score": float(cut)}))
                cfg.check()
            boxes = detections.boxes(cfg.min_score) if detections is not None else None
            data = load_split(folder, split, onto, cfg, require_answer=False, boxes=boxes, programs=progs,
                              progress=progress, questions=questions)
            if len(data.questions) != len(metas):
                raise FormatError(f"{folder}: {len(data.questions)} questions but {len(metas)} labels for split "
                                  f"{split!r}")
            got = answer_all(net, executor, data, torch.device(device), progress=progress, desc=f"nscl {variant}")
            out = []
            for meta, q, g in zip(metas, data.questions, got):
                if g is not None:
                    out.append(meta.prediction(g[0], g[1]))
                else:  # no usable program, or no box in the image: the training set's most frequent answer
                    out.append(meta.prediction(majority, None, invalid_program=q.program is None,
                                               execution_error=q.program is not None, guessed=True))
            runs.append(out)
        return runs


__all__ = ["NSCLConfig", "NSCLNet", "ConceptSpace", "SoftExecutor", "NSCLBaseline", "PROFILES", "parse_curriculum",
           "CurriculumSampler", "NSCLSplit", "NSCLImages", "collate_nscl", "collate_nscl_images", "load_split",
           "scene_boxes", "detection_boxes", "parsed_programs", "read_tuned", "MIN_SCORE_CANDIDATES", "question_losses", "answer_all", "accuracy",
           "concept_accuracy"]
