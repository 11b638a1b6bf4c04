"""Grounding targets from the ground-truth program's trace, for a reasoner that reads object tokens
in hops (objmac's ``trace_weight``): which tokens each hop should read.

For a training question with a valid program, the program is run on the image's ground-truth scene
(:class:`executors.DeterministicExecutor`, traced); its object-valued steps other than ``scene``
(object sets and single objects, in program order: ``S_1 .. S_K``) are the sets to read. Hop ``t``
of ``H`` (0-based) is given ``S_k`` with ``k = ceil((t + 1) K / H)`` (1-based): the hops spread over
the steps in order and the last hop reads the last set. A ground-truth object is a token when the
Hungarian matching of the scene's boxes to the image's object tokens on IoU (:func:`match_tokens`)
pairs them at IoU >= ``min_iou``; an empty set is the null token's (column 0).

For a reasoner that reads a feature map instead (film-trace), :func:`cell_targets` gives the same
sets over the scene's objects and each object's cells of the map (:func:`object_cells`: its
ground-truth mask area-pooled to the map's grid), and :func:`cell_loss` the per-cell loss.

The targets are training signals only: the answer path never sees a program.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch.nn import functional as F
from torchvision.ops import box_iou

from executors import DeterministicExecutor, ExecutionError, SymbolicScene
from executors.errors import FormatError
from executors.dsl import OBJECT, OBJECT_SET
from executors.ontology import Ontology
from nsvqa.artifacts.questions import Question
from nsvqa.artifacts.scenes import SceneRecord, read_scenes, scenes_path
from nsvqa.generation.annotations import rle_to_mask

from .images import image_size


def match_tokens(tokens: np.ndarray, gt_boxes: np.ndarray, min_iou: float = 0.5) -> dict[int, int]:
    """ground-truth object -> token row: the Hungarian matching on IoU of the object tokens (valid,
    not parts; boxes in features 3:7, divided by the image size) and ``gt_boxes`` ((N, 4) xyxy,
    divided by the image size), pairs with IoU >= ``min_iou`` kept."""
    rows = np.flatnonzero((tokens[:, 0] > 0.5) & (tokens[:, 1] < 0.5))
    if not len(rows) or not len(gt_boxes):
        return {}
    iou = box_iou(torch.as_tensor(gt_boxes, dtype=torch.float32),
                  torch.as_tensor(tokens[rows, 3:7], dtype=torch.float32)).numpy()
    gi, ti = linear_sum_assignment(-iou)
    return {int(g): int(rows[t]) for g, t in zip(gi, ti) if iou[g, t] >= min_iou}


def hop_sets(question: Question, scene: SymbolicScene, executor: DeterministicExecutor,
             hops: int) -> list[list[int]] | None:
    """The ground-truth objects each of ``hops`` hops reads (module docstring), or None when the
    question has no valid program, it fails on the scene, or it has no object-valued step."""
    if question.program is None or question.program_types is None:
        return None
    try:
        trace = executor.run(question.program, scene, trace=True).trace
    except ExecutionError:
        return None
    sets = []
    for node, kind, out in zip(question.program.nodes, question.program_types, trace):
        if node.function == "scene":
            continue
        if kind == OBJECT_SET:
            sets.append(list(out))
        elif kind == OBJECT:
            sets.append([int(out)])
    if not sets:
        return None
    k = len(sets)
    return [sets[math.ceil((t + 1) * k / hops) - 1] for t in range(hops)]


def traced_questions(questions: Sequence[Question], folder: Path, split: str, ontology: Ontology, hops: int
                     ) -> Iterator[tuple[int, SceneRecord, list[list[int]]]]:
    """``(i, scene, sets)`` for each question ``i`` of ``questions`` with hop sets (:func:`hop_sets`
    of ``hops`` on its image's ground-truth scene in ``FOLDER/scenes/<split>_scenes.json``), in order.

    Raises:
        FormatError: a question whose image has no scene there, or a scene that is not a valid
            symbolic scene (file, scene, object, field named).
    """
    path = scenes_path(folder, split)
    scenes = read_scenes(path).by_filename()
    executor = DeterministicExecutor(ontology)
    symbolic: dict[str, SymbolicScene] = {}
    for i, q in enumerate(questions):
        name = q.image_filename
        if name not in scenes:
            raise FormatError(f"{path}: no scene of image {name!r}")
        if name not in symbolic:
            symbolic[name] = scenes[name].symbolic(ontology)
        sets = hop_sets(q, symbolic[name], executor, hops)
        if sets is not None:
            yield i, scenes[name], sets


def hop_targets(questions: Sequence[Question], image_rows: np.ndarray, tokens: torch.Tensor, folder: Path,
                split: str, ontology: Ontology, hops: int, min_iou: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """The targets of ``questions`` (question ``i`` about the tokens ``tokens[image_rows[i]]``, of
    ``FOLDER``'s ``split``): ``members`` (N, hops, T) bool, the tokens hop ``t`` should read, and
    ``supervised`` (N, hops) bool, false where the question gives no target (:func:`hop_sets`
    None) or none of a non-empty set's objects has a token.

    Raises:
        FormatError: a question whose image has no scene in ``FOLDER/scenes/<split>_scenes.json``.
    """
    toks = tokens.numpy()
    n, t = len(questions), toks.shape[1]
    members = np.zeros((n, hops, t), dtype=bool)
    supervised = np.zeros((n, hops), dtype=bool)
    matches: dict[int, dict[int, int]] = {}
    for i, scene, sets in traced_questions(questions, folder, split, ontology, hops):
        row = int(image_rows[i])
        if row not in matches:
            w, h = image_size(Path(folder), split, scene.image_filename)
            matches[row] = match_tokens(toks[row], scene.boxes() / np.array([w, h, w, h], dtype=np.float32), min_iou)
        match = matches[row]
        for h, objs in enumerate(sets):
            hit = [match[o] for o in objs if o in match]
            if objs and not hit:
                continue
            members[i, h, hit] = True
            supervised[i, h] = True
    return torch.from_numpy(members), torch.from_numpy(supervised)


def object_cells(scene: SceneRecord, grid: tuple[int, int]) -> np.ndarray:
    """(N, h, w) bool: the cells of a feature map of ``grid`` = (h, w) cells over the whole image
    that each of the scene's N objects lies on. An object's ground-truth mask (its ``mask``, a COCO
    RLE at any resolution) is area-pooled to the grid; a cell is the object's where the mask covers
    at least half of it, and so is the cell it covers most (an object smaller than a cell keeps
    one); an object with an empty mask (hidden) has none.

    Raises:
        FormatError: an object without a COCO RLE ``mask`` (file, scene, object and field named).
    """
    out = np.zeros((len(scene.objects), *grid), dtype=bool)
    for j, o in enumerate(scene.objects):
        rle = o.get("mask")
        if not (isinstance(rle, Mapping) and isinstance(rle.get("size"), list) and len(rle["size"]) == 2
                and isinstance(rle.get("counts"), (str, list))):
            raise FormatError(f"{scene.where}, object {j}, field 'mask': expected a COCO RLE "
                              f"{{'size': [h, w], 'counts': ...}}, got {rle!r:.80}")
        share = F.adaptive_avg_pool2d(torch.from_numpy(rle_to_mask(rle)).float()[None, None], grid)[0, 0].numpy()
        cells = share >= 0.5
        if share.max() > 0:
            cells.flat[int(share.argmax())] = True
        out[j] = cells
    return out


def cell_targets(questions: Sequence[Question], image_rows: np.ndarray, num_images: int, folder: Path, split: str,
                 ontology: Ontology, steps: int, grid: tuple[int, int]
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The cell targets of ``questions`` (question ``i`` about image row ``image_rows[i]`` of
    ``num_images``, of ``FOLDER``'s ``split``) for ``steps`` maps of ``grid`` cells (the hop sets
    of :func:`hop_sets` with ``steps`` hops: the last map reads the last set), kept factored:

    * ``members`` (N, steps, O) bool: the scene objects step ``k`` reads (O: the most objects of a
      scene, at least 1);
    * ``supervised`` (N, steps) bool: false where the question gives no target or none of a
      non-empty set's objects has a cell;
    * ``cells`` (num_images, O, h, w) bool: each object's cells (:func:`object_cells`; rows no
      question is about stay empty).

    Step ``k``'s target of question ``i`` is ``(members[i, k, :, None, None] & cells[image_rows[i]]).any(0)``.

    Raises:
        FormatError: a question whose image has no scene, or an object without a mask.
    """
    items = list(traced_questions(questions, folder, split, ontology, steps))
    width = max([len(scene.objects) for _, scene, _ in items] + [1])
    members = np.zeros((len(questions), steps, width), dtype=bool)
    supervised = np.zeros((len(questions), steps), dtype=bool)
    cells = np.zeros((num_images, width, *grid), dtype=bool)
    done: set[int] = set()
    for i, scene, sets in items:
        row = int(image_rows[i])
        if row not in done:
            c = object_cells(scene, grid)
            cells[row, :len(c)] = c
            done.add(row)
        for k, objs in enumerate(sets):
            if objs and not cells[row, objs].any():
                continue
            members[i, k, objs] = True
            supervised[i, k] = True
    return torch.from_numpy(members), torch.from_numpy(supervised), torch.from_numpy(cells)


def cell_loss(logits: torch.Tensor, members: torch.Tensor, cells: torch.Tensor, supervised: torch.Tensor
              ) -> torch.Tensor:
    """The grounding loss of a batch of feature-map cell logits: per supervised (question, step),
    the binary cross entropy of each cell's logit against "the cell lies on an object the step
    reads", averaged over the cells; averaged over the supervised pairs (0 when there are none).

    Args:
        logits: (B, S, h, w); members: (B, S, O) bool; cells: (B, O, h, w) bool (the question's
        image's rows of :func:`cell_targets`); supervised: (B, S) bool.
    """
    target = (members[..., None, None] & cells[:, None]).any(2).to(logits.dtype)
    per = F.binary_cross_entropy_with_logits(logits, target, reduction="none").mean((2, 3))
    sup = supervised.to(logits.dtype)
    return (per * sup).sum() / sup.sum().clamp(min=1)


def trace_loss(reads: torch.Tensor, valid: torch.Tensor, members: torch.Tensor, supervised: torch.Tensor
               ) -> torch.Tensor:
    """The grounding loss of a batch: per supervised hop, the cross entropy of the hop's read
    attention (softmax over the null token and the valid tokens) against the uniform distribution
    over its target tokens (the null token for an empty set), plus the mean binary cross entropy
    of each valid token's gate (sigmoid of the same logit) against membership; averaged over the
    supervised hops (0 when there are none).

    Args:
        reads: (B, H, 1 + T) read logits, the null token first; valid: (B, T) bool;
        members: (B, H, T) bool; supervised: (B, H) bool.
    """
    m = members.float() * valid[:, None, :]
    count = m.sum(-1, keepdim=True)
    target = torch.cat([(count == 0).float(), m / count.clamp(min=1)], -1)
    seen = torch.cat([torch.ones_like(valid[:, :1]), valid], -1)[:, None, :].expand_as(reads)
    logp = reads.masked_fill(~seen, torch.finfo(reads.dtype).min).log_softmax(-1)
    attention = -(target * logp.masked_fill(~seen, 0.0)).sum(-1)
    gates = torch.nn.functional.binary_cross_entropy_with_logits(reads[..., 1:], m, reduction="none")
    gates = (gates * valid[:, None, :]).sum(-1) / valid.sum(-1, keepdim=True).clamp(min=1)
    sup = supervised.float()
    return ((attention + gates) * sup).sum() / sup.sum().clamp(min=1)


__all__ = ["match_tokens", "hop_sets", "traced_questions", "hop_targets", "trace_loss", "object_cells",
           "cell_targets", "cell_loss"]
