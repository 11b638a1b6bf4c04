"""mDETR's answers and scores: decoding answers, QA accuracy, grounding evaluation."""
from __future__ import annotations

from typing import Any, Sequence

import torch

from baselines.mdetr.config import MDETRConfig
from baselines.mdetr.data import GroundedQA, collate_grounded
from baselines.mdetr.losses import grounding_losses
from baselines.mdetr.network import MDETRNet
from nsvqa.training.data import StepLoader
from nsvqa.training.engine import evaluating
from nsvqa.training.sampling import SequentialBatches


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
    hits = 0
    with evaluating(model):
        for b in StepLoader(data, collate_grounded, SequentialBatches(len(data), batch), device=device):
            x = b.data
            ids, _ = decode_answers(model(x["ids"], x["text_mask"], x["images"]), groups)
            hits += sum(int(a == int(y)) for a, y in zip(ids, x["answers"].tolist()))
    return hits / len(data)


def grounding_eval(model: MDETRNet, data: GroundedQA, cfg: MDETRConfig, device: torch.device,
                   batch: int = 64) -> dict[str, float]:
    """The grounding losses ``l1`` and ``giou`` (:func:`grounding_losses`, per matched box) of
    ``data`` (a split encoded with its targets), averaged over its questions' matched boxes: the
    curve that says whether the grounding converges."""
    total = {"l1": 0.0, "giou": 0.0}
    n = 0
    with evaluating(model):
        for b in StepLoader(data, collate_grounded, SequentialBatches(len(data), batch), device=device):
            x = b.data
            k = sum(len(t[0]) for t in x["targets"])
            if not k:
                continue
            parts = grounding_losses(model(x["ids"], x["text_mask"], x["images"]), x["targets"], x["text_mask"], cfg)
            for name in total:
                total[name] += float(parts[name]) * k
            n += k
    return {name: v / n for name, v in total.items()} if n else {}
