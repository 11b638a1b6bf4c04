"""Image -> SceneLikelihoods: detections (Mask R-CNN) + attributes of their crops (ResNet head).

Every object detection becomes one object of the likelihoods: its score is the existence
probability, the attribute head's softmax outputs are the attribute distributions, its position
regression (mean and variance) is the object's ground-plane position with its uncertainty. The argmax
of the likelihoods is the symbolic scene NS-VQA executes.

The likelihoods have one column per value of the ontology (22 Super-CLEVR shapes); an attribute
head predicts the values a scene can hold (``Ontology.scene_values``: the 21 placed shapes), and
the columns of the unplaced values (``addi``, which no scene holds) get probability 0: the parser
never predicts them, whether its head has a column for them or not (:func:`head_distribution`).

In the parts modes the detector also finds parts: one class per part name (``objects+parts``), or
one ``part`` class whose name the attribute head tells (``agnostic+parts``; the part's existence
is then spread over the names by the head's part-name distribution). A part detection belongs to
the object whose mask contains most of it (containment = |part ∩ object| / |part| ≥
``min_containment``). A scene lists only the parts whose attributes differ from their object's (the
official engine's convention), so ``part_exist[i, p]`` = score × P(the part's colour or material
differs from the object's) under the two heads' distributions; the part's attribute distributions
are its own head outputs (size is the object's), and undetected parts look like their object.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import torch
from torch import nn
from torchvision.ops import box_iou

from executors import Ontology, SceneLikelihoods, SymbolicScene
from executors.scene import argmax_scene  # noqa: F401  (re-exported: the parser's argmax scene)
from parsers.scene.crops import box_geometry, check_part_crop, crop_instance


@dataclass
class ParsedScene:
    """One parsed image.

    Attributes:
        likelihoods: the hand-off to the probabilistic executor (N object detections).
        boxes: (N, 4) xyxy; masks: (N, H, W) bool; labels: (N,) detector classes; scores: (N,).
        part_boxes, part_masks, part_labels, part_scores: the part detections (M of them);
        part_owner: (M,) the object each part belongs to (-1: none contains it).
    """

    likelihoods: SceneLikelihoods
    boxes: np.ndarray
    masks: np.ndarray
    labels: np.ndarray
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    part_boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    part_masks: np.ndarray | None = None
    part_labels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    part_scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    part_owner: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def symbolic(self, min_part: float = 0.5) -> SymbolicScene:
        """The argmax scene (every detection kept) in the scene schema."""
        return argmax_scene(self.likelihoods, min_part)


def _crops(img: torch.Tensor, boxes: torch.Tensor, masks: torch.Tensor, size: int) -> list[torch.Tensor]:
    return [crop_instance(img, m[None].float(), [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])], size)
            for b, m in zip(boxes, masks)]


class SceneParser(nn.Module):
    """Detector + attribute head.

    Args:
        detector: a torchvision Mask R-CNN (see :func:`parsers.scene.detector.build_detector`).
        attribute_head: :class:`parsers.scene.attribute_head.AttributeHead` with the object heads
            (and ``partname`` when the detector finds parts).
        ontology: gives the order of every distribution.
        directions: relation -> (2,) ground-plane direction (the scenes' ``directions`` without z).
        crop_size: side of the attribute head's input crops.
        min_score: detections below this score are dropped (the paper uses 0.7 at the detector).
        part_classes: detector class id -> part name, for a detector that finds parts; the name None
            for a class-agnostic ``part`` class (the attribute head's ``partname`` tells it).
        min_containment: share of a part's mask inside its object's for the part to belong to it.
        merge_iou: object detections of different shape classes whose boxes overlap this much are
            one object (None: keep torchvision's per-class detections). The detector's score of a
            class is that class's softmax share, so one object seen as 60% ``suv`` and 35% ``wagon``
            would otherwise get existence 0.6; merged it gets 0.95 (≈ 1 − P(background)) and its
            shape comes from the attribute head. The highest-scoring detection's box and mask stay.
        detector_classes: detector class id (str) -> name, written with the outputs (None: none).
        shape_label_ids: for a class-agnostic detector, ontology shape index -> COCO category id
            (K,), so that output labels are the attribute head's most likely shape (None: the
            detector's classes).
        part_label_ids: the same for class-agnostic parts: ontology part-name index -> COCO
            category id (P,), so that part labels are the head's most likely part name.
        detector_path: the checkpoint the detector was loaded from (None: not from a file);
            recorded in the outputs' provenance.
        part_crop: the box a part's crop is cut from: ``"part"`` (its own detected box) or
            ``"object"`` (the box of the object it belongs to; its own when it belongs to none), as
            the head was trained (a config's ``part_crop``).
        head_values: attribute -> the values the attribute head's outputs stand for, in output order
            (a checkpoint's ``vocabularies["attributes"]``); None, or an attribute missing: the
            ontology's values or its scene values, whichever the output width matches.
        temperatures: attribute -> T > 0: the head's logits of that attribute are divided by T
            before the softmax (temperature scaling, fitted on val: a checkpoint's
            ``vocabularies["temperatures"]``); None, or an attribute missing: 1.

    Raises:
        ValueError: ``head_values`` naming a value the ontology lacks, or lacking one a scene can
            hold, or not matching the width of the head's classifier; ``shape_label_ids`` of a
            length other than the ontology's shapes (or its placed shapes).
    """

    def __init__(self, detector: nn.Module, attribute_head: nn.Module, ontology: Ontology,
                 directions: dict[str, Sequence[float]], crop_size: int, min_score: float,
                 part_classes: dict[int, str] | None = None, min_containment: float = 0.5,
                 merge_iou: float | None = 0.7, *, detector_classes: dict[str, str] | None = None,
                 shape_label_ids: Sequence[int] | np.ndarray | None = None,
                 part_label_ids: Sequence[int] | np.ndarray | None = None, detector_path: str | None = None,
                 head_values: Mapping[str, Sequence[str]] | None = None, part_crop: str = "part",
                 temperatures: Mapping[str, float] | None = None):
        super().__init__()
        self.detector, self.attribute_head = detector, attribute_head
        self.ontology, self.crop_size, self.min_score = ontology, int(crop_size), float(min_score)
        self.directions = {r: np.asarray(v, dtype=float)[:2] for r, v in directions.items()}
        self.part_classes = {int(k): v for k, v in (part_classes or {}).items()}
        unknown = set(self.part_classes.values()) - set(ontology.part_names) - {None}
        if unknown:
            raise ValueError(f"part classes not in the ontology's part names: {sorted(unknown)}")
        self.min_containment = float(min_containment)
        self.merge_iou = merge_iou
        self.detector_classes: dict[str, str] = {str(k): v for k, v in (detector_classes or {}).items()}
        self.shape_label_ids: np.ndarray | None = None
        if shape_label_ids is not None:
            ids = np.asarray(shape_label_ids, dtype=np.int64)
            shapes, placed = ontology.values("shape"), ontology.scene_values("shape")
            if len(ids) == len(placed) != len(shapes):  # no id for the unplaced shapes: never predicted
                full = np.full(len(shapes), -1, dtype=np.int64)
                full[[shapes.index(s) for s in placed]] = ids
                ids = full
            if len(ids) != len(shapes):
                raise ValueError(f"shape_label_ids: {len(ids)} ids, expected one per shape of the ontology "
                                 f"({len(shapes)}) or per placed shape ({len(placed)})")
            self.shape_label_ids = ids
        self.part_label_ids: np.ndarray | None = None
        if part_label_ids is not None:
            self.part_label_ids = np.asarray(part_label_ids, dtype=np.int64)
            if len(self.part_label_ids) != len(ontology.part_names):
                raise ValueError(f"part_label_ids: {len(self.part_label_ids)} ids, expected one per part name "
                                 f"of the ontology ({len(ontology.part_names)})")
        if None in self.part_classes.values() and "partname" not in getattr(attribute_head, "heads", {"partname": 0}):
            raise ValueError("a class-agnostic part class needs an attribute head with a 'partname' output")
        self.head_values = {a: tuple(v) for a, v in (head_values or {}).items() if a in ontology.attributes}
        for a, names in self.head_values.items():
            _check_head_values(ontology, a, names)
            heads = getattr(attribute_head, "heads", None)
            if heads is not None and a in heads and getattr(heads[a], "out_features", len(names)) != len(names):
                raise ValueError(f"attribute head {a!r}: {heads[a].out_features} outputs but {len(names)} "
                                 f"head_values {list(names)}")
        self.temperatures = {a: float(t) for a, t in (temperatures or {}).items()}
        bad = {a: t for a, t in self.temperatures.items() if not (np.isfinite(t) and t > 0)}
        if bad:
            raise ValueError(f"temperatures must be finite and > 0, got {bad}")
        self.detector_path = detector_path
        check_part_crop(part_crop)
        self.part_crop = part_crop

    @torch.no_grad()
    def parse(self, images: Sequence[torch.Tensor]) -> list[ParsedScene]:
        """Parse (3, H, W) float images in [0, 1] (one detector batch)."""
        self.eval()
        out = []
        for img, det in zip(images, self.detector(list(images))):
            det = dict(det)
            if self.merge_iou is not None:
                idx, merged = merge_classes(det["boxes"], det["scores"], det["labels"], set(self.part_classes),
                                            self.merge_iou)
                det = {k: det[k][idx] for k in ("boxes", "labels", "masks")} | {"scores": merged}
            keep = det["scores"] >= self.min_score
            boxes, scores, labels = det["boxes"][keep], det["scores"][keep], det["labels"][keep]
            masks = (det["masks"][keep, 0] >= 0.5) if len(boxes) else torch.zeros((0, *img.shape[1:]), dtype=torch.bool)
            is_part = torch.tensor([int(c) in self.part_classes for c in labels], dtype=torch.bool)
            obj, prt = ~is_part, is_part
            owner = self._owners(masks[prt], masks[obj])
            cut = boxes.clone()
            if self.part_crop == "object" and len(owner):  # a part seen on its whole object
                part_rows, obj_rows = torch.nonzero(prt).flatten(), torch.nonzero(obj).flatten()
                for r, o in zip(part_rows.tolist(), owner.tolist()):
                    if o >= 0:
                        cut[r] = boxes[obj_rows[o]]
            crops = _crops(img, cut, masks, self.crop_size)
            h, w = img.shape[1:]
            geometry = [box_geometry([float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])], h, w)
                        for b in boxes]
            heads = self.attribute_head(torch.stack(crops), torch.stack(geometry)) if crops else None
            if heads is not None and self.temperatures:  # calibrated logits: every distribution below reads them
                heads = {k: v / self.temperatures[k] if k in self.temperatures else v for k, v in heads.items()}
            name_probs = self._part_names(labels[prt], _rows(heads, prt))
            lik = self._likelihoods(scores[obj], _rows(heads, obj), scores[prt], name_probs, _rows(heads, prt), owner)
            obj_labels, part_labels = labels[obj].numpy(), labels[prt].numpy()
            if self.shape_label_ids is not None and len(obj_labels):
                obj_labels = self.shape_label_ids[lik.attributes["shape"].argmax(1)]
            if self.part_label_ids is not None and len(part_labels):
                part_labels = self.part_label_ids[name_probs.argmax(1)]
            out.append(ParsedScene(lik, boxes[obj].numpy(), masks[obj].numpy(), obj_labels, scores[obj].numpy(),
                                   boxes[prt].numpy(), masks[prt].numpy(), part_labels, scores[prt].numpy(),
                                   owner))
        return out

    def _part_names(self, labels: torch.Tensor, heads: dict | None) -> np.ndarray:
        """(M, P) each part detection's distribution over the ontology's part names: one-hot on its
        detector class's name, or the head's ``partname`` distribution for a class-agnostic part."""
        names = list(self.ontology.part_names)
        out = np.zeros((len(labels), len(names)))
        agnostic = []
        for j, c in enumerate(labels.tolist()):
            name = self.part_classes[int(c)]
            if name is None:
                agnostic.append(j)
            else:
                out[j, names.index(name)] = 1.0
        if agnostic:
            logits = heads["partname"][agnostic]
            values = list(self.head_values.get("partname", names))
            probs = torch.softmax(logits.double(), -1).numpy()
            out[np.ix_(agnostic, [names.index(v) for v in values])] = probs
        return out

    def _owners(self, part_masks: torch.Tensor, obj_masks: torch.Tensor) -> np.ndarray:
        """(M,) index of the object containing each part, -1 when none holds ``min_containment``."""
        if not len(part_masks) or not len(obj_masks):
            return np.full(len(part_masks), -1, dtype=np.int64)
        p = part_masks.flatten(1).float()
        inter = p @ obj_masks.flatten(1).float().T                      # (M, N)
        contain = (inter / p.sum(1, keepdim=True).clamp(min=1)).numpy()
        best = contain.argmax(1)
        return np.where(contain[np.arange(len(best)), best] >= self.min_containment, best, -1).astype(np.int64)

    def _likelihoods(self, scores: torch.Tensor, heads: dict | None, part_scores: torch.Tensor,
                     name_probs: np.ndarray, part_heads: dict | None, owner: np.ndarray) -> SceneLikelihoods:
        """``name_probs``: (M, P) each part detection's distribution over part names (:meth:`_part_names`)."""
        onto = self.ontology
        n = len(scores)
        attrs = {}
        for a in onto.attributes:
            if heads is None or a not in heads:  # uniform over what a scene can hold
                attrs[a] = head_distribution(onto, a, torch.zeros(n, len(onto.scene_values(a))))
            else:
                attrs[a] = head_distribution(onto, a, heads[a], self.head_values.get(a))
        pos = heads["position"].double().numpy() if heads is not None else np.zeros((n, 2))
        std = (heads["position_logvar"].double().exp().mean(-1).sqrt().numpy() if heads is not None
               else np.zeros(n))
        part_exist = part_attrs = None
        if self.part_classes and onto.has_parts:
            names = list(onto.part_names)
            pattrs = [a for a in onto.part_attributes if a in onto.attributes]
            part_exist = np.zeros((n, len(names)))
            part_attrs = {a: np.repeat(attrs[a][:, None, :], len(names), axis=1) for a in pattrs}
            own = {a: head_distribution(onto, a, part_heads[a], self.head_values.get(a)) for a in ("color", "material")
                   if part_heads is not None and a in part_heads}
            best = np.zeros((n, len(names)))  # the existence of the detection that holds (i, k)
            for j in np.argsort(-part_scores.numpy(), kind="stable"):
                i = int(owner[j])
                if i < 0:
                    continue
                same = 1.0
                dists = {a: dist[j] for a, dist in own.items()}
                for a, d in dists.items():
                    same *= float(d @ attrs[a][i])
                for k in np.flatnonzero(name_probs[j] > 0):
                    # a detection's existence for name k: detected x named k x looks different
                    exist = float(part_scores[j]) * float(name_probs[j, k])
                    if exist <= best[i, k]:
                        continue  # a better detection of this name on this object holds it
                    best[i, k] = exist
                    for a, d in dists.items():
                        part_attrs[a][i, k] = d
                    part_exist[i, k] = exist * (1.0 - same)
        return SceneLikelihoods(onto, scores.double().numpy(), attrs, pos, std, self.directions,
                                onto.relation_margin, part_exist=part_exist, part_attributes=part_attrs)


def _check_head_values(onto: Ontology, attribute: str, names: Sequence[str]) -> None:
    vals, placed = onto.values(attribute), onto.scene_values(attribute)
    unknown = [v for v in names if v not in vals]
    missing = [v for v in placed if v not in names]
    if unknown or missing or len(set(names)) != len(names):
        raise ValueError(f"attribute head {attribute!r}: its values {list(names)} do not line up with ontology "
                         f"{onto.name!r}: unknown {unknown}, missing {missing} (it must predict every value "
                         f"of {list(placed)}, once; it may have columns for the unplaced "
                         f"{list(onto.unplaced.get(attribute, ()))})")


def head_distribution(onto: Ontology, attribute: str, logits: torch.Tensor,
                      names: Sequence[str] | None = None) -> np.ndarray:
    """(N, K) distribution over ``onto.values(attribute)`` from a head's (N, K') logits.

    Args:
        logits: (N, K') scores, column j standing for ``names[j]``.
        names: the values of the columns; None: ``onto.values(attribute)`` when K' is its length,
            else ``onto.scene_values(attribute)`` when K' is that length.

    The softmax runs over the columns of the values a scene can hold; the unplaced values
    (Super-CLEVR's ``addi``) get probability 0 even when the head has a column for them.

    Raises:
        ValueError: a width that matches neither, or ``names`` that do not line up with the
            ontology (unknown or missing values, or not K' of them).
    """
    vals, placed = onto.values(attribute), onto.scene_values(attribute)
    k = int(logits.shape[-1])
    if names is None:
        if k == len(vals):
            names = vals
        elif k == len(placed):
            names = placed
        else:
            extra = (f" or {len(placed)} (without the unplaced {list(onto.unplaced[attribute])})"
                     if len(placed) != len(vals) else "")
            raise ValueError(f"attribute head {attribute!r}: {k} outputs, expected {len(vals)} (one per "
                             f"{attribute} of ontology {onto.name!r}){extra}")
    else:
        _check_head_values(onto, attribute, names)
        if len(names) != k:
            raise ValueError(f"attribute head {attribute!r}: {k} outputs but {len(names)} values {list(names)}")
    names = list(names)
    if list(placed) == names:
        probs = torch.softmax(logits.double(), -1).numpy()
    else:
        probs = torch.softmax(logits.double()[:, [names.index(v) for v in placed]], -1).numpy()
    if len(placed) == len(vals) and list(vals) == list(placed):
        return probs
    out = np.zeros((probs.shape[0], len(vals)))
    out[:, [vals.index(v) for v in placed]] = probs
    return out


def merge_classes(boxes: torch.Tensor, scores: torch.Tensor, labels: torch.Tensor, part_ids: set[int],
                  iou: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Class-agnostic merge of per-class object detections (parts are kept as they are).

    Greedy from the highest score: the detection absorbs the remaining object detections whose box
    IoU with it is ≥ ``iou``; its score becomes the sum over the absorbed classes of each class's
    best score (capped at 1). Returns (indices kept (K,), their scores (K,)), in score order."""
    order = torch.argsort(scores, descending=True)
    is_part = torch.tensor([int(c) in part_ids for c in labels], dtype=torch.bool)
    ious = box_iou(boxes, boxes) if len(boxes) else torch.zeros((0, 0))
    taken = torch.zeros(len(boxes), dtype=torch.bool)
    keep, merged = [], []
    for i in order.tolist():
        if taken[i]:
            continue
        taken[i] = True
        if is_part[i]:
            keep.append(i)
            merged.append(float(scores[i]))
            continue
        group = (~taken) & (~is_part) & (ious[i] >= iou)
        best = {int(labels[i]): float(scores[i])}
        for j in torch.nonzero(group).flatten().tolist():
            best[int(labels[j])] = max(best.get(int(labels[j]), 0.0), float(scores[j]))
        taken |= group
        keep.append(i)
        merged.append(min(1.0, sum(best.values())))
    return torch.tensor(keep, dtype=torch.int64), torch.tensor(merged, dtype=scores.dtype)


def _rows(heads: dict | None, rows: torch.Tensor) -> dict | None:
    if heads is None or not bool(rows.any()):
        return None
    return {k: v[rows] for k, v in heads.items()}


