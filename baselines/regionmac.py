"""``regionmac-trace``: objmac-trace's reasoner over object tokens a box-supervised detector's region
features make, not the scene parser's attribute distributions (issue 64, point 3).

The closest this scale allows to the paper's mDETR, which learns its perception from pixels under
box and grounding supervision: no attribute label and no attribute head reach the tokens. What the
model reads of a variant run (:class:`~nsvqa.models.Needs` as objtf's: the scene parser's parses of
the train, val and test splits):

* from each parse only the detections' boxes and scores (``likelihoods.json``'s ``detections``;
  its attribute distributions are not read), and the header's ``detector``: the Mask R-CNN that made
  them, trained on boxes and masks of one class-agnostic ``object`` class in the study's
  ``mode=agnostic`` (the config's ``detector`` overrides it);
* that detector's FPN maps of every image of the split (its backbone, never trained here), the
  levels its box pooler reads, cached once per (images, detector weights) in the variant's
  ``features/`` folder in the house format (:mod:`nsvqa.artifacts.features`, backbone name
  :data:`BACKBONE`, the detector checkpoint's sha256 as the weights'), and torchvision's
  :class:`~torchvision.ops.MultiScaleRoIAlign` over those levels at each kept box
  (``roi_size`` x ``roi_size``: the detector's own level mapping, so the 20-100 px objects of a
  320x240 image read its finest level).

Token of a detection with score >= ``min_exist`` (highest score first, at most ``max_tokens``):
``[valid=1, is_part=0, score, x0, y0, x1, y1, region]``: the box divided by the image's width and
height (objtf's leading :data:`~baselines.objtf.HEAD_FEATURES`, so the trace's box matching of
:mod:`baselines.trace_targets` reads it unchanged), then the C x roi_size x roi_size pooled
features as the detector's FPN gives them (the network batch-normalises them, :class:`RegionMACNet`).
Without a parse (``train_tokens="truth"``, tests and standalone checks) the ground-truth scenes'
boxes with score 1 are pooled instead; the features are still the detector's.

Network and training: :class:`~baselines.objtf.ObjTFNet` with the MAC reasoner (:class:`RegionMACNet`) (the question
through objmac's encoder: word embeddings and the MAC's bidirectional LSTM; ``hops`` steps of read
attention over the tokens; answers scored against word embeddings), trained by the one engine
(:func:`baselines.classifier.train_classifier`) on the answers plus ``trace_weight`` times the
grounding loss of the training programs' traces (:mod:`baselines.trace_targets`, objmac-trace's).
No program and no executor at prediction.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torchvision.ops import MultiScaleRoIAlign
from tqdm import tqdm

from executors.errors import FormatError
from nsvqa.artifacts.features import features_path, image_key, load_features
from nsvqa.artifacts.images import read_image
from nsvqa.artifacts.likelihoods import read_likelihoods
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.fileio import sha256_file
from nsvqa.models import PredictInputs
from nsvqa.training.checkpoint import load_checkpoint
from nsvqa.training.loading import DETECTOR_KIND, detector_from_checkpoint
from parsers.question.vocab import Vocabulary
from parsers.scene.detector import LITE0_FPN_CHANNELS
from executors.ontology import Ontology, load_ontology

from .images import feature_cache_dir, image_size
from .objtf import HEAD_FEATURES, ObjMACTraceBaseline, ObjMACTraceConfig, ObjTFConfig, ObjTFNet, answer_word_ids

#: the name of the detector's FPN maps in the feature cache (:class:`nsvqa.artifacts.features.FeatureKey`)
BACKBONE = "maskrcnn_fpn"


@dataclass(frozen=True)
class RegionMACConfig(ObjTFConfig):
    """regionmac-trace's config: an :class:`~baselines.objtf.ObjTFConfig` with objmac-trace's values
    (:class:`~baselines.objtf.ObjMACTraceConfig`: the MAC reasoner of ``hops`` steps,
    ``trace_weight`` 1, the extra questions, ``train_tokens`` / ``parses`` / ``min_exist`` /
    ``max_tokens`` as objtf reads them) with the tokens of the module docstring:
    ``roi_size`` (the side of the pooled grid), ``fpn_channels`` (the detector's FPN channels: the
    study's Lite0 FPN has 64; a detector of another width is refused by name), ``detector`` (a
    ``detector.pt``; empty: the one the parse's header names), ``feature_batch`` (images per
    detector forward when the maps are computed). ``part_tokens`` and ``tie_tokens`` must stay off: a region has no part rows and no
    attribute columns to tie to words.

    The defaults are the ``mini`` profile: objmac-trace's reasoner and schedule (6 hops of width 128,
    6,000 steps of 64, 40 more questions per image) over <= 16 object tokens of 64 x 4 x 4 region
    features; :attr:`PROFILES` the fields the other profiles change."""

    model: str = "regionmac-trace"
    lr: float = 1e-3
    word_dim: int = 128
    mlp_hidden: int = 256
    reasoner: str = "mac"
    hops: int = 6
    trace_weight: float = 1.0
    roi_size: int = 4
    fpn_channels: int = LITE0_FPN_CHANNELS
    detector: str = ""
    feature_batch: int = 16
    max_tokens: int = 16
    part_tokens: bool = False
    tie_tokens: bool = False
    token_noise: float = 0.0

    MUST_MATCH: ClassVar[tuple[str, ...]] = ObjMACTraceConfig.MUST_MATCH + ("roi_size", "fpn_channels")
    PROFILES: ClassVar = dict(
        ObjMACTraceConfig.PROFILES,
        tiny=dict(ObjMACTraceConfig.PROFILES["tiny"], max_tokens=8, token_noise=0.0),
        # the detector's own RoI grid (7 x 7) and mDETR-like sizes, for a GPU
        full=dict(ObjMACTraceConfig.PROFILES["full"], max_tokens=16, roi_size=7, hops=12))

    def check(self) -> None:
        super().check()
        if min(self.roi_size, self.feature_batch, self.fpn_channels) < 1:
            raise ValueError(f"roi_size, feature_batch and fpn_channels must be >= 1, got {self.roi_size}, "
                             f"{self.feature_batch}, {self.fpn_channels}")
        if self.part_tokens or self.tie_tokens:
            raise ValueError("part_tokens and tie_tokens must be false for regionmac-trace: its tokens are detector "
                             "regions (no part rows, no attribute columns to tie to words)")
        if self.reasoner != "mac":
            raise ValueError(f"reasoner must be 'mac' (objmac's reasoner, what the trace supervises), got "
                             f"{self.reasoner!r}")


# ---------------------------------------------------------------------------- detector features
def load_detector(path: str | Path, device: str = "cpu") -> nn.Module:
    """The Mask R-CNN (eval mode, on ``device``) of a ``detector.pt``.

    Raises:
        nsvqa.training.checkpoint.CheckpointError: no such checkpoint, or not a detector's.
    """
    return detector_from_checkpoint(load_checkpoint(path, kind=DETECTOR_KIND), str(path)).to(device).eval()


def _levels(detector: nn.Module) -> list[str]:
    """The FPN levels the detector's box pooler reads (its ``featmap_names``)."""
    return list(detector.roi_heads.box_roi_pool.featmap_names)


@torch.no_grad()
def fpn_maps(detector: nn.Module, images: torch.Tensor) -> tuple[dict[int, torch.Tensor], tuple[int, int]]:
    """The detector's FPN maps of its box pooler's levels for a batch of images.

    Args:
        detector: a torchvision Mask R-CNN (:func:`load_detector`); images: (B, 3, H, W) float in [0, 1].

    Returns:
        stride -> (B, C, h, w) float32 maps (stride: the padded input's height over the map's, a
        power of 2), and the (height, width) of the images as the detector's transform sized them
        (boxes in those pixels; equal to (H, W) for the study's detectors, built for their size).
    """
    dev = next(detector.parameters()).device
    batch, _ = detector.transform(list(images.to(dev)))
    feats = detector.backbone(batch.tensors)
    h_in = batch.tensors.shape[-2]
    out = {}
    for name in _levels(detector):
        f = feats[name]
        out[int(2 ** round(np.log2(h_in / f.shape[-2])))] = f.float().cpu()
    return out, tuple(batch.image_sizes[0])


def split_maps(detector: nn.Module, detector_sha256: str, folder: Path, split: str, *, batch: int = 16,
               progress: bool = False) -> tuple[dict[int, torch.Tensor], dict[str, int], tuple[int, int]]:
    """The detector's FPN maps (:func:`fpn_maps`) of every image of ``FOLDER/images/<split>/``,
    computed once and cached in ``FOLDER/features/`` (:mod:`nsvqa.artifacts.features`: keyed on the
    images' bytes, ``detector_sha256``, the size and the strides; a stale file is rebuilt).

    Returns:
        stride -> (M, C, h, w) float16 maps of the split's M images (sorted file names), file name
        -> row, and the (height, width) the detector's transform gives the images.

    Raises:
        FileNotFoundError: a split without images.
    """
    images = Path(folder) / "images" / split
    files = sorted(p.name for p in images.glob("*.png"))
    if not files:
        raise FileNotFoundError(f"{images}: no images")
    first = read_image(images / files[0])
    probe, sized = fpn_maps(detector, first[None])
    h, w = first.shape[-2:]
    key = image_key(images, files, backbone=BACKBONE, weights_sha256=detector_sha256, size=(h, w),
                    strides=sorted(probe))

    def build() -> dict[int, torch.Tensor]:
        out: dict[int, list[torch.Tensor]] = {s: [] for s in key.strides}
        for a in tqdm(range(0, len(files), batch), desc=f"detector maps {split}", disable=not progress):
            maps, _ = fpn_maps(detector, torch.stack([read_image(images / f) for f in files[a:a + batch]]))
            for s in key.strides:
                out[s].append(maps[s].to(torch.float16))
        return {s: torch.cat(v) for s, v in out.items()}

    maps = load_features(features_path(feature_cache_dir(folder), split, key), key, build)
    return maps, {f: i for i, f in enumerate(files)}, sized


def region_tokens(maps: dict[int, torch.Tensor], rows: Sequence[int], boxes: Sequence[np.ndarray],
                  scores: Sequence[np.ndarray], size: tuple[int, int], sized: tuple[int, int], *, roi_size: int,
                  max_tokens: int, min_score: float, chunk: int = 64) -> torch.Tensor:
    """Object tokens of images from their FPN maps and detections (module docstring).

    Args:
        maps: stride -> (M, C, h, w) maps (:func:`split_maps`); rows: the maps' row of each image;
        boxes: per image (n, 4) xyxy in the image's pixels; scores: per image (n,);
        size: the images' (width, height); sized: (height, width) of the detector's input.

    Returns:
        (len(rows), max_tokens, 7 + C * roi_size ** 2) float32; a row's detections with score >=
        ``min_score``, highest first (stable), then zero rows (valid = 0).
    """
    strides = sorted(maps)
    names = [str(s) for s in strides]
    pool = MultiScaleRoIAlign(names, roi_size, 2)
    c = maps[strides[0]].shape[1]
    w, h = size
    scale = np.array([w, h, w, h], dtype=np.float32)
    to_input = torch.tensor([sized[1] / w, sized[0] / h] * 2, dtype=torch.float32)
    out = torch.zeros((len(rows), max_tokens, HEAD_FEATURES + c * roi_size ** 2))
    for a in range(0, len(rows), chunk):
        idx = torch.as_tensor(list(rows[a:a + chunk]), dtype=torch.long)
        kept = []
        for b, s in zip(boxes[a:a + chunk], scores[a:a + chunk]):
            b, s = np.asarray(b, dtype=np.float32).reshape(-1, 4), np.asarray(s, dtype=np.float32).reshape(-1)
            order = [i for i in np.argsort(-s, kind="stable") if s[i] >= min_score][:max_tokens]
            kept.append((b[order], s[order]))
        feats = OrderedDict((n, maps[st][idx].float()) for n, st in zip(names, strides))
        pooled = pool(feats, [torch.from_numpy(b) * to_input for b, _ in kept], [tuple(sized)] * len(kept))
        pooled = pooled.flatten(1)
        at = 0
        for r, (b, s) in enumerate(kept):
            n = len(b)
            t = out[a + r, :n]
            t[:, 0] = 1.0
            t[:, 2] = torch.from_numpy(s)
            t[:, 3:7] = torch.from_numpy(b / scale)
            t[:, HEAD_FEATURES:] = pooled[at:at + n]
            at += n
    return out


# ---------------------------------------------------------------------------- network
class RegionMACNet(ObjTFNet):
    """:class:`~baselines.objtf.ObjTFNet` with the MAC reasoner whose tokens' region features
    (columns 7:) first pass a :class:`torch.nn.BatchNorm1d` over the valid tokens of the batch
    (running statistics at evaluation): the detector's FPN features have a scale and a component
    shared by every region that the token MLP should not have to learn away.

    ``forward(words (B, L) int64, lengths (B,) int64, tokens (B, T, 7 + R) float, reads=False)``:
    as :class:`~baselines.objtf.ObjTFNet`'s (logits (B, A), with ``reads`` also (B, hops, 1 + T)).
    """

    def __init__(self, num_words: int, num_answers: int, token_features: int, answer_words: torch.Tensor, **kw):
        super().__init__(num_words, num_answers, token_features, answer_words, reasoner="mac", **kw)
        self.region_norm = nn.BatchNorm1d(token_features - HEAD_FEATURES)

    def forward(self, words: torch.Tensor, lengths: torch.Tensor, tokens: torch.Tensor | None = None,
                reads: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if tokens is not None:
            valid = tokens[..., 0] > 0.5
            region = tokens[..., HEAD_FEATURES:].float()
            n = int(valid.sum())
            if n:
                bn = self.region_norm
                # one region alone has no batch statistics: it is normalised with the running ones
                batch_stats = self.training and n > 1
                normed = F.batch_norm(region[valid], bn.running_mean, bn.running_var, bn.weight, bn.bias,
                                      batch_stats, bn.momentum, bn.eps)
                region = region.masked_scatter(valid[..., None], normed)
            tokens = torch.cat([tokens[..., :HEAD_FEATURES].float(), region * valid[..., None]], -1)
        return super().forward(words, lengths, tokens, reads=reads)


# ---------------------------------------------------------------------------- detections of a split
def parsed_detections(path: Path, filenames: Sequence[str], onto: Ontology) -> tuple[list[np.ndarray], list[np.ndarray], str | None]:
    """Each of ``filenames``' object detections in a scene parser's ``likelihoods.json``: (n, 4)
    xyxy pixel boxes, (n,) scores, and the detector the header names (None: none named). Only the
    boxes and scores are read: the attribute distributions are not.

    Raises:
        FormatError: a malformed file, or an image of ``filenames`` it did not parse.
    """
    doc = read_likelihoods(path, onto)
    parsed = {s.image_filename: s for s in doc.scenes}
    boxes, scores = [], []
    for name in filenames:
        if name not in parsed:
            raise FormatError(f"{path}: no parse of image {name!r}")
        dets = parsed[name].detections
        boxes.append(np.asarray([d.box for d in dets], dtype=np.float32).reshape(-1, 4))
        scores.append(np.asarray([d.score for d in dets], dtype=np.float32))
    return boxes, scores, doc.header.detector


def truth_detections(folder: Path, split: str, filenames: Sequence[str]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each of ``filenames``' ground-truth object boxes ((n, 4) xyxy pixels) with score 1.

    Raises:
        FormatError: a file with no scene in ``FOLDER/scenes/<split>_scenes.json``.
    """
    scenes = read_scenes(scenes_path(folder, split)).by_filename()
    boxes = []
    for name in filenames:
        if name not in scenes:
            raise FormatError(f"{scenes_path(folder, split)}: no scene of image {name!r}")
        boxes.append(np.asarray(scenes[name].boxes(), dtype=np.float32).reshape(-1, 4))
    return boxes, [np.ones(len(b), dtype=np.float32) for b in boxes]


# ---------------------------------------------------------------------------- the model
class RegionMACTraceBaseline(ObjMACTraceBaseline):
    """objmac-trace's reasoner and supervision over a box-supervised detector's region features
    (module docstring); holistic: no program and no executor in its answer path."""

    config_class = RegionMACConfig
    family = "holistic"
    perception = "a box-supervised detector's region features (no attribute head); trained with program traces"
    shares_modular_perception = False  # its tokens are the detector's regions, never the attribute head's output
    reads_attribute_head = False

    def build_model(self, cfg: RegionMACConfig, num_words: int, num_answers: int,
                    answer_words: torch.Tensor | None = None) -> "RegionMACNet":
        """:class:`RegionMACNet` over tokens of
        ``7 + fpn_channels * roi_size ** 2`` features."""
        if answer_words is None:
            answer_words = torch.full((num_answers,), -1, dtype=torch.long)
        return RegionMACNet(num_words, num_answers, HEAD_FEATURES + cfg.fpn_channels * cfg.roi_size ** 2,
                            answer_words, dim=cfg.word_dim, heads=cfg.heads, layers=cfg.layers, ff=cfg.hidden,
                            mlp_hidden=cfg.mlp_hidden, dropout=cfg.dropout, token_noise=cfg.token_noise, hops=cfg.hops)

    def bind_vocabularies(self, model: ObjTFNet, cfg: RegionMACConfig, vocab: Vocabulary, answers: Sequence[str]) -> None:
        """Set which answers share a word's embedding (no token columns to tie)."""
        model.answer_words.copy_(answer_word_ids(answers, vocab, cfg.tie_answers))

    @staticmethod
    def _detector_path(cfg: RegionMACConfig, named: str | None) -> Path:
        """``cfg.detector`` when set, else the detector a parse names (``named``).

        Raises:
            ValueError: neither.
        """
        if cfg.detector:
            return Path(cfg.detector)
        if named:
            return Path(named)
        raise ValueError("regionmac-trace: no detector: set detector=<detector.pt>, or give it a scene parse whose "
                         "header names its detector (train it through a variant run)")

    def image_inputs(self, folder, split, filenames, cfg: RegionMACConfig, run=None, progress=False,
                     inputs: PredictInputs | None = None) -> tuple[torch.Tensor, dict[str, int]]:
        """Region tokens ((M, max_tokens, 7 + C * roi_size ** 2) float32) of the distinct
        ``filenames`` and file name -> row: the boxes and scores of the run's parse
        (``inputs.likelihoods``) when given; for training and validation (no ``inputs``) of
        ``<cfg.parses>/<split>_likelihoods.json`` when ``cfg.train_tokens`` is ``"parsed"``; else
        the ground-truth boxes. The features are the detector's (:func:`split_maps`).

        Raises:
            ValueError: ``train_tokens="parsed"`` without ``cfg.parses``, or no detector.
        """
        folder = Path(folder)
        files = list(dict.fromkeys(filenames))
        named = None
        if inputs is not None and inputs.likelihoods is not None:
            boxes, scores, named = parsed_detections(Path(inputs.likelihoods), files, load_ontology(cfg.ontology))
            min_score = cfg.min_exist
        elif inputs is None and cfg.train_tokens == "parsed":
            if not cfg.parses:
                raise ValueError("regionmac-trace: train_tokens='parsed' needs parses (the folder of the run's scene "
                                 "parses train_likelihoods.json and val_likelihoods.json); train it through a variant run")
            boxes, scores, named = parsed_detections(Path(cfg.parses) / f"{split}_likelihoods.json", files,
                                                     load_ontology(cfg.ontology))
            min_score = cfg.min_exist
        else:
            boxes, scores = truth_detections(folder, split, files)
            min_score = 0.0
        det_path = self._detector_path(cfg, named)
        detector = load_detector(det_path, cfg.device)
        maps, rows, sized = split_maps(detector, sha256_file(det_path), folder, split, batch=cfg.feature_batch,
                                       progress=progress)
        channels = int(maps[min(maps)].shape[1])
        if channels != cfg.fpn_channels:
            raise ValueError(f"regionmac-trace: the detector {det_path} has {channels} FPN channels, the config's "
                             f"fpn_channels is {cfg.fpn_channels}: set fpn_channels={channels}")
        missing = [f for f in files if f not in rows]
        if missing:
            raise FileNotFoundError(f"{folder / 'images' / split / missing[0]}: image file missing")
        tokens = region_tokens(maps, [rows[f] for f in files], boxes, scores, image_size(folder, split, files[0]),
                               sized, roi_size=cfg.roi_size, max_tokens=cfg.max_tokens, min_score=min_score)
        return tokens, {f: i for i, f in enumerate(files)}


__all__ = ["BACKBONE", "RegionMACConfig", "RegionMACTraceBaseline", "load_detector", "fpn_maps", "split_maps",
           "region_tokens", "parsed_detections", "truth_detections"]
