"""Grounding targets from the ground-truth program's trace, for a reasoner that reads object tokens
in hops (objmac's ``trace_weight``): which tokens each hop should read.

For a training question with a valid program, the program is run on the image's ground-truth scene
(:class:`executors.DeterministicExecutor`, traced); its object-valued steps other than ``scene``
(object sets and single objects, in program order: ``S_1 .. S_K``) are the sets to read. Hop ``t``
of ``H`` (0-based) is given ``S_k`` with ``k = ceil((t + 1) K / H)`` (1-based): the hops spread over
the steps in order and the last hop reads the last set. A ground-truth object is a token when the
Hungarian matching of the scene's boxes to the image's object tokens on IoU (:func:`match_tokens`)
pairs them at IoU >= ``min_iou``; an empty set is the null token's (column 0).

The targets are training signals only: the answer path never sees a program.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torchvision.ops import box_iou

from executors import DeterministicExecutor, ExecutionError, SymbolicScene
from executors.errors import FormatError
from executors.dsl import OBJECT, OBJECT_SET
from executors.ontology import Ontology
from nsvqa.artifacts.questions import Question
from nsvqa.artifacts.scenes import read_scenes, scenes_path

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


def hop_targets(questions: Sequence[Question], image_rows: np.ndarray, tokens: torch.Tensor, folder: Path,
                split: str, ontology: Ontology, hops: int, min_iou: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """The targets of ``questions`` (question ``i`` about the tokens ``tokens[image_rows[i]]``, of
    ``FOLDER``'s ``split``): ``members`` (N, hops, T) bool, the tokens hop ``t`` should read, and
    ``supervised`` (N, hops) bool, false where the question gives no target (:func:`hop_sets`
    None) or none of a non-empty set's objects has a token.

    Raises:
        FormatError: a question whose image has no scene in ``FOLDER/scenes/<split>_scenes.json``.
    """
    scenes = read_scenes(scenes_path(folder, split)).by_filename()
    executor = DeterministicExecutor(ontology)
    toks = tokens.numpy()
    n, t = len(questions), toks.shape[1]
    members = np.zeros((n, hops, t), dtype=bool)
    supervised = np.zeros((n, hops), dtype=bool)
    symbolic: dict[str, tuple[SymbolicScene, np.ndarray]] = {}
    matches: dict[int, dict[int, int]] = {}
    sizes: dict[str, np.ndarray] = {}
    for i, q in enumerate(questions):
        name = q.image_filename
        if name not in symbolic:
            if name not in scenes:
                raise FormatError(f"{scenes_path(folder, split)}: no scene of image {name!r}")
            s = scenes[name]
            symbolic[name] = (SymbolicScene.from_json(s.record, ontology), s.boxes())
        scene, boxes = symbolic[name]
        sets = hop_sets(q, scene, executor, hops)
        if sets is None:
            continue
        row = int(image_rows[i])
        if row not in matches:
            if name not in sizes:
                w, h = image_size(Path(folder), split, name)
                sizes[name] = np.array([w, h, w, h], dtype=np.float32)
            matches[row] = match_tokens(toks[row], boxes / sizes[name], min_iou)
        match = matches[row]
        for h, objs in enumerate(sets):
            hit = [match[o] for o in objs if o in match]
            if objs and not hit:
                continue
            members[i, h, hit] = True
            supervised[i, h] = True
    return torch.from_numpy(members), torch.from_numpy(supervised)


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


__all__ = ["match_tokens", "hop_sets", "hop_targets", "trace_loss"]
