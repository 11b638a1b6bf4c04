"""Scene-parser outputs on disk, and their evaluation against a generated split.

``likelihoods.json`` (written by ``scripts/parse_scenes.py``; owned by
:mod:`nsvqa.artifacts.likelihoods`, whose reader and writer the functions here wrap)::

    {"version": 1, "checkpoint": RUN_DIR, "data": ROOT/VARIANT, "split": "val",
     "detector_classes": {id: name},
     "scenes": [{"image_index", "image_filename",
                 "likelihoods": SceneLikelihoods.to_json(),
                 "detections": [{"box": xyxy, "score", "label", "mask": RLE}],      # objects, row i
                 "parts": [{"object": i | -1, "box", "score", "label", "mask": RLE}]}]}

Evaluation: COCOeval (pycocotools) bbox and segm AP / AP50 / AP75 with classes and class-agnostic;
objects matched one-to-one to ground truth by mask IoU (Hungarian, IoU ≥ 0.5) for per-attribute
accuracy, detection precision / recall and position error; both executors on the split's
ground-truth programs with the parsed scenes.
"""
from __future__ import annotations

import contextlib
import copy
import io
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from executors import Ontology, SceneLikelihoods, load_ontology
from executors.io import load_questions, parse_program, read_json
from nsvqa.artifacts.likelihoods import read_likelihoods
from nsvqa.artifacts.predictions import question_meta
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.evaluation.comparison import paired_comparison
from nsvqa.evaluation.reliability import expected_calibration_error, reliability_bins
from nsvqa.generation.annotations import coco_rle, mask_to_rle
from nsvqa.models.pipeline import REASONERS, make_reasoner, predict


def load_parsed(path: str | Path, ontology: Ontology | None = None) -> tuple[dict, list[SceneLikelihoods]]:
    """Read likelihoods.json (:func:`nsvqa.artifacts.read_likelihoods`): (the document as JSON,
    one SceneLikelihoods per scene). Errors name the file, the scene, the detection and the field."""
    doc = read_likelihoods(path, ontology)
    return doc.to_json(), doc.likelihoods


def stack_likelihoods(liks: Sequence[SceneLikelihoods]) -> dict[str, np.ndarray]:
    """Batched arrays of S parsed scenes, padded to N = the most detections in one scene:
    ``valid`` (S, N) bool, ``exist`` (S, N), ``attr.<a>`` (S, N, K_a), ``positions`` (S, N, D),
    ``position_std`` (S, N), ``image_index`` (S,), and with parts ``part_exist`` (S, N, P),
    ``part_attr.<a>`` (S, N, P, K_a). Padding rows are zero (``valid`` False)."""
    if not liks:
        return {"valid": np.zeros((0, 0), dtype=bool), "image_index": np.zeros(0, dtype=np.int64)}
    onto = liks[0].ontology
    s, n = len(liks), max(len(lik) for lik in liks)
    d = max(lik.positions.shape[1] for lik in liks)
    out = {"valid": np.zeros((s, n), dtype=bool), "exist": np.zeros((s, n)), "positions": np.zeros((s, n, d)),
           "position_std": np.zeros((s, n)),
           "image_index": np.array([-1 if lik.image_index is None else lik.image_index for lik in liks])}
    for a in onto.attributes:
        out[f"attr.{a}"] = np.zeros((s, n, len(onto.values(a))))
    parts = any(lik.part_exist is not None for lik in liks)
    if parts:
        p = len(onto.part_names)
        out["part_exist"] = np.zeros((s, n, p))
        for a in liks[0].part_attributes or {}:
            out[f"part_attr.{a}"] = np.zeros((s, n, p, len(onto.values(a))))
    for k, lik in enumerate(liks):
        m = len(lik)
        out["valid"][k, :m] = True
        out["exist"][k, :m] = lik.exist
        out["positions"][k, :m, :lik.positions.shape[1]] = lik.positions
        out["position_std"][k, :m] = lik.position_std
        for a in onto.attributes:
            out[f"attr.{a}"][k, :m] = lik.attributes[a]
        if parts and lik.part_exist is not None:
            out["part_exist"][k, :m] = lik.part_exist
            for a, v in lik.part_attributes.items():
                out[f"part_attr.{a}"][k, :m] = v
    return out


# ------------------------------------------------------------------------------------- COCO AP

def coco_results(doc: dict, parts: bool = True) -> list[dict]:
    """The detections of a likelihoods document in COCO result form (one per detection)."""
    out = []
    for s in doc["scenes"]:
        for d in s["detections"] + (s.get("parts", []) if parts else []):
            x0, y0, x1, y1 = d["box"]
            out.append({"image_id": int(s["image_index"]), "category_id": int(d["label"]),
                        "bbox": [x0, y0, x1 - x0, y1 - y0], "score": float(d["score"]), "segmentation": d["mask"]})
    return out


def listed_parts_coco(gt_path: str | Path, scenes: Iterable[dict]) -> dict:
    """The COCO dict of ``gt_path`` with, among the parts, only those the scenes list (the parts a
    question can tell apart from their object; what a parts-mode detector learns). Objects stay."""
    gt = read_json(gt_path)
    listed = {(int(s["image_index"]), k, p) for s in scenes for k, o in enumerate(s["objects"])
              for p in o.get("parts", {})}
    parts = {c["id"] for c in gt["categories"] if c.get("supercategory") == "part"}
    gt["annotations"] = [a for a in gt["annotations"] if a["category_id"] not in parts
                         or (int(a["image_id"]), a["object_index"], a.get("part_name")) in listed]
    return gt


def _coco(gt: str | Path | dict):
    with contextlib.redirect_stdout(io.StringIO()):
        if isinstance(gt, dict):
            coco = COCO()
            coco.dataset = gt
            coco.createIndex()
            return coco
        return COCO(str(gt))


def coco_ap(gt_path: str | Path | dict, results: list[dict], image_ids: Sequence[int],
            category_ids: Sequence[int] | None = None) -> dict[str, dict[str, float]]:
    """COCOeval bbox and segm on ``image_ids``: AP, AP50, AP75 with classes (``bbox``, ``segm``)
    and class-agnostic (``bbox_agnostic``, ``segm_agnostic``). Categories restricted to
    ``category_ids`` (e.g. the shapes only), in both the ground truth and the results. Empty
    results give 0. ``gt_path``: a COCO file, or a COCO dict (e.g. :func:`listed_parts_coco`)."""
    gt = _coco(gt_path)
    out: dict[str, dict[str, float]] = {}
    for iou_type in ("bbox", "segm"):
        for agnostic in (False, True):
            key = iou_type + ("_agnostic" if agnostic else "")
            res = [r for r in results if category_ids is None or r["category_id"] in category_ids]
            if not res:
                out[key] = {"AP": 0.0, "AP50": 0.0, "AP75": 0.0}
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                dt = gt.loadRes([dict(r, segmentation=coco_rle(r["segmentation"])) for r in res])
                ev = COCOeval(gt, dt, iou_type)
                ev.params.imgIds = list(image_ids)
                if category_ids is not None:
                    ev.params.catIds = list(category_ids)
                ev.params.useCats = 0 if agnostic else 1
                ev.evaluate()
                ev.accumulate()
                ev.summarize()
            out[key] = {"AP": float(max(ev.stats[0], 0)), "AP50": float(max(ev.stats[1], 0)),
                        "AP75": float(max(ev.stats[2], 0))}
    return out


def detector_ap(detector, data: str | Path, split: str, *, part_class_ids: Iterable[int] = (),
                limit: int | None = None, progress: bool = False) -> dict[str, Any]:
    """Class-agnostic COCOeval of a Mask R-CNN's own detections (no attribute head, no score cut
    beyond the detector's) on ``DATA``'s split, over the first ``limit`` images:
    ``{"bbox": {AP, AP50, AP75}, "segm": ..., "images": n}`` for the objects and, when the detector
    finds parts (``part_class_ids``: its part classes), ``"parts": {"bbox", "segm"}`` against the
    parts the scenes list (:func:`listed_parts_coco`). Objects and parts are scored apart: a part
    detection is never a false object.

    Args:
        detector: a torchvision detection model in eval mode (images [0, 1] in, boxes, labels,
            scores, masks (N, 1, H, W) out).
    """
    import torch  # heavy: torch, only to run a detector
    from tqdm import tqdm  # heavy for the study report's import (~50 modules): only while a detector runs

    from nsvqa.artifacts.images import read_image  # heavy: loads torch, as above

    data = Path(data)
    scenes = list(read_scenes(scenes_path(data, split)))[:limit]
    gt = listed_parts_coco(data / "annotations" / f"{split}_coco.json", [sc.record for sc in scenes])
    objects = [c["id"] for c in gt["categories"] if c.get("supercategory") == "object"]
    parts = [c["id"] for c in gt["categories"] if c.get("supercategory") == "part"]
    part_class_ids = {int(c) for c in part_class_ids}
    results: dict[bool, list[dict]] = {False: [], True: []}
    was_training = detector.training
    detector.eval()
    with torch.no_grad():
        for sc in tqdm(scenes, desc=f"detect {data.name}/{split}", disable=not progress):
            out = detector([read_image(data / "images" / split / sc.image_filename)])[0]
            for box, label, score, mask in zip(out["boxes"].tolist(), out["labels"].tolist(), out["scores"].tolist(),
                                               out["masks"]):
                x0, y0, x1, y1 = box
                is_part = int(label) in part_class_ids
                results[is_part].append({"image_id": int(sc.image_index), "category_id": (parts if is_part else objects)[0],
                                         "score": float(score), "bbox": [x0, y0, x1 - x0, y1 - y0],
                                         "segmentation": mask_to_rle((mask[0] > 0.5).cpu().numpy())[0]})
    detector.train(was_training)
    ids = [int(sc.image_index) for sc in scenes]
    ap = coco_ap(gt, results[False], ids, objects)
    res: dict[str, Any] = {"bbox": ap["bbox_agnostic"], "segm": ap["segm_agnostic"], "images": len(scenes)}
    if part_class_ids:
        pap = coco_ap(gt, results[True], ids, parts)
        res["parts"] = {"bbox": pap["bbox_agnostic"], "segm": pap["segm_agnostic"]}
    return res


# ------------------------------------------------------------------------- attribute accuracy

def match_objects(det_masks: Sequence[dict], gt_masks: Sequence[dict], min_iou: float = 0.5) -> list[tuple[int, int]]:
    """One-to-one (detection, ground truth) pairs maximising mask IoU (Hungarian), IoU ≥ ``min_iou``."""
    from scipy.optimize import linear_sum_assignment  # heavy: scipy.optimize takes a second to import, only to match

    if not det_masks or not gt_masks:
        return []
    iou = np.asarray(mask_utils.iou([coco_rle(m) for m in det_masks], [coco_rle(m) for m in gt_masks], [0] * len(gt_masks)))
    rows, cols = linear_sum_assignment(-iou)
    return [(int(r), int(c)) for r, c in zip(rows, cols) if iou[r, c] >= min_iou]


def pixel_xy(obj: Mapping[str, Any]) -> tuple[float, float]:
    """An object's ``pixel_coords`` as (x, y): ours ``[x, y, depth]``, the release's
    ``[[x, y, depth], [W, H]]``."""
    p = obj["pixel_coords"]
    if isinstance(p[0], (list, tuple)):
        p = p[0]
    return float(p[0]), float(p[1])


def match_by_centre(det_boxes: Sequence[Sequence[float]], points: Sequence[tuple[float, float]]) -> list[tuple[int, int]]:
    """One-to-one (detection, object) pairs for objects without masks (the official release's
    scenes without ``obj_mask_box``): an object can match a detection whose (x1, y1, x2, y2) box
    holds its ``pixel_coords``, and the pairs minimise the distance from those points to the box
    centres (Hungarian)."""
    from scipy.optimize import linear_sum_assignment  # heavy: as in match_objects

    if len(det_boxes) == 0 or len(points) == 0:
        return []
    b = np.asarray(det_boxes, dtype=float).reshape(-1, 4)
    q = np.asarray(points, dtype=float).reshape(-1, 2)
    inside = ((q[None, :, 0] >= b[:, None, 0]) & (q[None, :, 0] <= b[:, None, 2])
              & (q[None, :, 1] >= b[:, None, 1]) & (q[None, :, 1] <= b[:, None, 3]))
    centre = np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2], axis=1)
    dist = np.linalg.norm(centre[:, None, :] - q[None, :, :], axis=2)
    big = 1e6 + dist.max()
    rows, cols = linear_sum_assignment(np.where(inside, dist, big))
    return [(int(r), int(c)) for r, c in zip(rows, cols) if inside[r, c]]


def match_scene(detections: Sequence[Mapping[str, Any]], objects: Sequence[Mapping[str, Any]],
                min_iou: float = 0.5) -> tuple[list[tuple[int, int]], str]:
    """(detection, object) pairs of one scene and how they were found: by mask IoU
    (:func:`match_objects`) when every object has a mask, else by box centre
    (:func:`match_by_centre`)."""
    if all("mask" in o for o in objects):
        return match_objects([d["mask"] for d in detections], [o["mask"] for o in objects], min_iou), \
            f"mask IoU >= {min_iou:g}"
    return match_by_centre([d["box"] for d in detections], [pixel_xy(o) for o in objects]), \
        "box holds pixel_coords, nearest centre"


def _true_value(obj: dict, attribute: str) -> str:
    """A ground-truth object's value of ``attribute`` (a scene may omit ``texture``: ``"none"``)."""
    return obj.get(attribute, "none") if attribute == "texture" else obj[attribute]


def attribute_accuracy(doc: dict, liks: Sequence[SceneLikelihoods], gt_scenes: dict[int, dict],
                       min_iou: float = 0.5) -> dict[str, Any]:
    """Matched-object metrics: per-attribute argmax accuracy over matched objects and its
    top-label expected calibration error (``object.<a>.ece``, 15 bins; None without matches), detection
    precision / recall at the parser's score cut, position RMSE; and for the parts the scenes list:

    Objects match detections by mask IoU >= ``min_iou``; a scene whose objects have no masks (the
    official release's scenes without ``obj_mask_box``) matches by box centre
    (:func:`match_by_centre`), and ``matched_by`` says which ran.

    - ``part.recall_mask``: the listed part is found: a part detection assigned to the detection
      matched to its object overlaps its mask with IoU ≥ ``min_iou`` (one-to-one, Hungarian);
      listed parts of unmatched objects count as missed;
    - ``part.partname``: of those found, the share named right (the detector's class, or the
      head's part name for a class-agnostic part class, through ``doc["detector_classes"]``);
    - ``part.recall``: the parsed likelihoods hold it (``part_exist`` ≥ 0.5 under its true name,
      on the matched object), the view the executors get; ``part.<attribute>``: the argmax of its
      attribute distribution there is right (over every listed part of a matched object).
    """
    from parsers.scene.attribute_head import OBJECT_HEADS  # loads torch: only here, not on import

    onto = liks[0].ontology if liks else load_ontology("superclevr")
    correct = {a: 0 for a in OBJECT_HEADS}
    confidence: dict[str, list[float]] = {a: [] for a in OBJECT_HEADS}  # the argmax's probability
    hits: dict[str, list[bool]] = {a: [] for a in OBJECT_HEADS}
    part_correct: dict[str, int] = {}
    n_det = n_gt = n_match = 0
    part_listed = part_found = part_all = part_masked = part_named = 0
    classes = doc.get("detector_classes") or {}
    sq = 0.0
    matched_by: set[str] = set()
    for s, lik in zip(doc["scenes"], liks):
        gt = gt_scenes.get(int(s["image_index"]))
        if gt is None:
            raise KeyError(f"scene {s['image_index']}: no ground-truth scene with that image_index")
        objs = gt["objects"]
        n_det += len(s["detections"])
        n_gt += len(objs)
        pairs, how = match_scene(s["detections"], objs, min_iou)
        matched_by.add(how)
        n_match += len(pairs)
        part_all += sum(len(o.get("parts", {})) for o in objs if "part_masks" in o)  # parts with masks
        for i, j in pairs:
            listed = sorted(objs[j].get("parts", {}))
            own = [p for p in s.get("parts", []) if p.get("object") == i]
            if listed and own and "part_masks" in objs[j]:
                found = match_objects([p["mask"] for p in own], [objs[j]["part_masks"][n]["mask"] for n in listed],
                                      min_iou)
                part_masked += len(found)
                part_named += sum(classes.get(str(own[r]["label"])) == listed[c] for r, c in found)
            o = objs[j]
            for a in OBJECT_HEADS:
                top = int(np.argmax(lik.attributes[a][i]))
                right = onto.values(a)[top] == _true_value(o, a)
                correct[a] += right
                confidence[a].append(min(1.0, max(0.0, float(lik.attributes[a][i][top]))))
                hits[a].append(bool(right))
            sq += float(np.sum((lik.positions[i, :2] - np.asarray(o["3d_coords"][:2])) ** 2))
            if lik.part_exist is not None:
                for name, pa in o.get("parts", {}).items():
                    k = onto.part_names.index(name)
                    part_listed += 1
                    part_found += lik.part_exist[i, k] >= 0.5
                    for a, dist in lik.part_attributes.items():
                        if a in pa:
                            key = f"part.{a}"
                            part_correct[key] = part_correct.get(key, 0) + (onto.values(a)[int(np.argmax(dist[i, k]))] == pa[a])
    res: dict[str, Any] = {"objects_gt": n_gt, "detections": n_det, "matched": n_match,
                           "precision": n_match / n_det if n_det else 0.0, "recall": n_match / n_gt if n_gt else 0.0,
                           "matched_by": " / ".join(sorted(matched_by))}
    res.update({f"object.{a}": correct[a] / n_match if n_match else 0.0 for a in OBJECT_HEADS})
    # the calibration the probabilistic executor multiplies: top-label ECE, 15 equal-width bins
    res.update({f"object.{a}.ece": expected_calibration_error(reliability_bins(confidence[a], hits[a], 15))
                for a in OBJECT_HEADS})
    res["object.position_rmse"] = float(np.sqrt(sq / n_match)) if n_match else None
    if part_all:
        res["parts_listed"] = part_all
        res["part.recall_mask"] = part_masked / part_all
        res["part.partname"] = part_named / part_masked if part_masked else 0.0
    if part_listed:
        res["part.recall"] = part_found / part_listed
        res.update({k: v / part_listed for k, v in sorted(part_correct.items())})
    return res


# ---------------------------------------------------------------------- executors on parsed scenes

def _uses_parts(program) -> bool:
    return any("part" in node.function for node in program.nodes)


def executor_accuracy(liks: Sequence[SceneLikelihoods], questions: Iterable[dict], ontology: Ontology,
                      threshold: float = 0.7, *, reasoners: Sequence[str] | None = None,
                      min_part: float = 0.5) -> dict[str, Any]:
    """Accuracy of the experiment's reasoners (:data:`nsvqa.models.pipeline.REASONERS`: NS-VQA on the
    argmax scenes, P-NSVQA in threshold and exact modes, with the same settings as in
    ``train_variant``) on the ground-truth programs of ``questions``; questions whose scene was
    not parsed are skipped, a failed execution counts as wrong (no guess). Also split into
    questions with and without part functions. ``reasoners``: a subset of them (default all);
    ``min_part``: NS-VQA's part cut.

    Returns:
        ``{"questions": {"all", "parts", "objects"} -> count, <reasoner>: {group -> accuracy or None},
        "paired": {"<reasoner> - nsvqa": {group -> paired_comparison}}}``: each P-NSVQA mode against
        NS-VQA on the same questions (difference, its 95% bootstrap interval, McNemar's p).
    """
    by_index = {lik.image_index: lik for lik in liks}
    metas, programs, groups = [], [], []
    for k, q in enumerate(questions):
        if q.get("image_index") not in by_index:
            continue
        program = parse_program(q, ontology, where=f"question {k}")
        metas.append(question_meta(q, f"question {k}", position=k, ontology=ontology))
        programs.append(program)
        groups.append("parts" if _uses_parts(program) else "objects")
    counts = {"all": len(metas), "parts": groups.count("parts"), "objects": groups.count("objects")}
    out: dict[str, Any] = {"questions": counts}
    every = {}
    for name in reasoners or REASONERS:
        preds = every[name] = predict(make_reasoner(name, ontology, threshold=threshold, min_part=min_part), metas,
                                      programs, by_index, guess=False)
        hits = {"all": 0, "parts": 0, "objects": 0}
        for p, g in zip(preds, groups):
            ok = p.prediction is not None and p.prediction == p.answer
            hits["all"] += ok
            hits[g] += ok
        out[name] = {g: (hits[g] / counts[g] if counts[g] else None) for g in counts}
    if "nsvqa" in every and metas:
        out["paired"] = {}
        for name in (n for n in every if n != "nsvqa"):
            out["paired"][f"{name} - nsvqa"] = {
                g: paired_comparison([[p for p, h in zip(every[name], groups) if g in ("all", h)]],
                                     [[p for p, h in zip(every["nsvqa"], groups) if g in ("all", h)]])
                for g in counts if counts[g]}
    return out


def with_true_attributes(doc: dict, liks: Sequence[SceneLikelihoods], gt_scenes: dict[int, dict],
                         attributes: Sequence[str], min_iou: float = 0.5) -> list[SceneLikelihoods]:
    """Copies of the parsed likelihoods in which each detection matched to a ground-truth object
    (as :func:`attribute_accuracy` matches: :func:`match_scene`) holds that object's true value of each of
    ``attributes`` with probability 1; the rest unchanged. Run the executors on them to see what
    an attribute's errors cost end to end (an upper bound that perfect perception of that attribute
    alone would reach).

    Raises:
        KeyError: an attribute the ontology lacks, or a parsed scene without its ground truth.
    """
    out = []
    for s, lik in zip(doc["scenes"], liks):
        onto = lik.ontology
        for a in attributes:
            if a not in onto.attributes:
                raise KeyError(f"attribute {a!r}: not in the ontology's {list(onto.attributes)}")
        gt = gt_scenes.get(int(s["image_index"]))
        if gt is None:
            raise KeyError(f"scene {s['image_index']}: no ground-truth scene with that image_index")
        fixed = copy.copy(lik)
        fixed.attributes = {a: v.copy() for a, v in lik.attributes.items()}
        objs = gt["objects"]
        for i, j in match_scene(s["detections"], objs, min_iou)[0]:
            for a in attributes:
                row = np.zeros(len(onto.values(a)))
                row[onto.values(a).index(_true_value(objs[j], a))] = 1.0
                fixed.attributes[a][i] = row
        out.append(fixed)
    return out


def evaluate_parsed(parsed: str | Path, data: str | Path, split: str = "val", *, min_iou: float = 0.5,
                    threshold: float = 0.7, questions: bool = True, true_attributes: Sequence[str] = ()) -> dict[str, Any]:
    """Every metric of a scene parser's parse (``likelihoods.json`` of ``data``'s ``split``):
    COCO AP of the objects (and of the parts the scenes list, when it parsed parts), attribute
    accuracy of the matched objects at mask IoU ``min_iou``, and with ``questions`` the executors
    on the split's ground-truth programs (P-NSVQA at ``threshold``), also with the attributes of
    ``true_attributes`` set to the truth on the matched objects (what each costs end to end)."""
    onto = load_ontology("superclevr")
    data = Path(data)
    doc, liks = load_parsed(parsed, onto)
    gt_path = data / "annotations" / f"{split}_coco.json"
    image_ids = [int(s["image_index"]) for s in doc["scenes"]]
    metrics: dict[str, Any] = {"parsed": str(parsed), "data": str(data), "split": split, "images": len(image_ids)}
    scenes = {i: s.record for i, s in read_scenes(scenes_path(data, split)).by_image_index().items()}
    if not gt_path.exists():  # an evaluation-only import: no masks, no COCO AP
        metrics["coco_objects"] = f"none: {gt_path} absent (scenes without masks); objects matched by box centre"
    else:
        gt = read_json(gt_path)
        shape_ids = [c["id"] for c in gt["categories"] if c["supercategory"] == "object"]
        part_ids = [c["id"] for c in gt["categories"] if c["supercategory"] == "part"]
        results = coco_results(doc)
        metrics["coco_objects"] = coco_ap(gt_path, results, image_ids, shape_ids)
    if gt_path.exists() and any(s.get("parts") for s in doc["scenes"]):  # against the parts the scenes list
        listed = listed_parts_coco(gt_path, [scenes[i] for i in image_ids if i in scenes])
        metrics["coco_parts"] = coco_ap(listed, results, image_ids, part_ids)
    metrics["attributes"] = attribute_accuracy(doc, liks, scenes, min_iou)
    if questions:
        qs = load_questions(data / "questions" / f"{split}_questions.json")
        metrics["executors"] = executor_accuracy(liks, qs, onto, threshold)
        for a in true_attributes:
            fixed = with_true_attributes(doc, liks, scenes, [a], min_iou)
            acc = executor_accuracy(fixed, qs, onto, threshold)
            metrics[f"executors, true {a}"] = {k: v for k, v in acc.items() if k != "paired"}
    return metrics


def format_table(metrics: dict[str, Any]) -> str:
    """A readable table of a metrics dict (nested one level)."""
    lines = []
    for section, values in metrics.items():
        if not isinstance(values, dict):
            lines.append(f"{section:<28} {values}")
            continue
        lines.append(f"[{section}]")
        for k, v in values.items():
            rows = [(k, v)]
            if isinstance(v, dict) and v and all(isinstance(x, dict) and "diff" not in x for x in v.values()):
                rows = list(v.items())  # one level deeper (the paired comparisons)
            for name, row in rows:
                if isinstance(row, dict) and "diff" not in row:
                    row = "  ".join(f"{kk}={_fmt(vv)}" for kk, vv in row.items())
                lines.append(f"  {name:<26} {_fmt(row)}")
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    if isinstance(v, dict) and "diff" in v:  # a paired comparison: the difference and its interval
        return f"{v['diff']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]"
    return str(v)
