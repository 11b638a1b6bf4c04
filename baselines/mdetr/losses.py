"""mDETR's objectives: Hungarian matching, the grounding and proposal losses, the QA loss."""
from __future__ import annotations

from typing import Any, Sequence

import torch
from scipy.optimize import linear_sum_assignment
from torch.nn import functional as F
from torchvision.ops import box_convert, generalized_box_iou, sigmoid_focal_loss

from baselines.mdetr.config import MDETRConfig


# ---------------------------------------------------------------------------- matching and losses
def hungarian_match(cost: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(query indices, target indices), int64, of the assignment of least total ``cost``
    (queries x targets), in ascending query order (scipy's)."""
    rows, cols = linear_sum_assignment(cost.detach().cpu().numpy())
    return torch.as_tensor(rows, dtype=torch.long), torch.as_tensor(cols, dtype=torch.long)


def _xyxy(boxes: torch.Tensor) -> torch.Tensor:
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
