"""What limits mask AP50 and part recall, measured on one parsed split (issue 81).

    PYTHONPATH=. python results/perception_levers/limits.py PARSED DATA SPLIT OUT.json

``PARSED``: ``parse_scenes.py``'s output for ``DATA``'s ``SPLIT``. Three measurements:

- ``objects``: each ground-truth object against the detection (score >= 0.5) with the highest box
  IoU: the share whose mask IoU is >= 0.5, by the object's fill (visible mask area over its box's
  area: thin objects such as bicycles fill little of their box), by visible area and by shape;
- ``grid_ceiling``: the mask IoU >= 0.5 share and the mean IoU a perfect mask head would reach at
  each mask grid (the ground-truth mask RoIAligned to M x M inside its own box and pasted back the
  way torchvision's Mask R-CNN pastes its masks): the bound the mask head's resolution sets;
- ``parts``: each listed part: found by any part detection at box IoU >= 0.5, at mask IoU >= 0.5,
  by one assigned to the detection matched to its object (what ``part.recall_mask`` counts), and
  whether its object is matched at all, by visible area.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import numpy as np
import torch
from pycocotools import mask as mask_utils
from torchvision.models.detection.roi_heads import paste_masks_in_image
from torchvision.ops import roi_align

from nsvqa.evaluation.scene_parser import match_scene
from nsvqa.generation.annotations import coco_rle

GRIDS = (14, 28, 56)
FILL = (0.0, 0.3, 0.45, 0.6, 1.01)
OBJECT_AREA = (0, 200, 500, 1000, 2000, float("inf"))
PART_AREA = (0, 20, 40, 80, 160, float("inf"))


def _xywh(box: list[float]) -> list[float]:
    return [box[0], box[1], box[2] - box[0], box[3] - box[1]]


def _share(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] >= 0.5 for r in rows])) if rows else float("nan")


def _buckets(rows: list[dict], by: str, edges: tuple[float, ...], keys: tuple[str, ...]) -> list[dict]:
    out = []
    for lo, hi in pairwise(edges):
        s = [r for r in rows if lo <= r[by] < hi]
        if s:
            out.append({by: [lo, hi if hi != float("inf") else None], "n": len(s), **{k: _share(s, k) for k in keys}})
    return out


def objects(doc: dict, gt: dict[int, dict]) -> dict:
    rows = []
    for s in doc["scenes"]:
        dets = [d for d in s["detections"] if d["score"] >= 0.5]
        boxes, masks = [_xywh(d["box"]) for d in dets], [coco_rle(d["mask"]) for d in dets]  # once per scene
        for o in gt[int(s["image_index"])]["objects"]:
            g = coco_rle(o["mask"])
            area, (_, _, w, h) = float(mask_utils.area(g)), o["bbox"]
            if dets:
                box = np.asarray(mask_utils.iou(boxes, [o["bbox"]], [0])).ravel()
                j = int(box.argmax())
                mask = float(np.asarray(mask_utils.iou([masks[j]], [g], [0])).ravel()[0])
                box_iou = float(box[j])
            else:
                mask = box_iou = 0.0
            rows.append({"shape": o["shape"], "area": area, "fill": area / max(1.0, w * h), "box": box_iou, "mask": mask})
    by_shape = defaultdict(list)
    for r in rows:
        by_shape[r["shape"]].append(r)
    return {"n": len(rows), "box": _share(rows, "box"), "mask": _share(rows, "mask"),
            "by_fill": _buckets(rows, "fill", FILL, ("box", "mask")),
            "by_area": _buckets(rows, "area", OBJECT_AREA, ("box", "mask")),
            "by_shape": sorted(({"shape": k, "n": len(v), "box": _share(v, "box"), "mask": _share(v, "mask")}
                                for k, v in by_shape.items()), key=lambda r: r["mask"])}


def grid_ceiling(gt: dict[int, dict], limit: int = 120) -> dict:
    ious: dict[int, list[float]] = {m: [] for m in GRIDS}
    for scene in list(gt.values())[:limit]:
        for o in scene["objects"]:
            mask = mask_utils.decode(coco_rle(o["mask"])).astype(np.float32)
            x, y, w, h = o["bbox"]
            box = torch.tensor([[x, y, x + w, y + h]], dtype=torch.float32)
            for m in GRIDS:
                cells = roi_align(torch.from_numpy(mask)[None, None], [box], output_size=m, sampling_ratio=2, aligned=True)
                pasted = paste_masks_in_image(cells, box, mask.shape)[0, 0].numpy() > 0.5
                ious[m].append(float((pasted & (mask > 0)).sum() / max(1, (pasted | (mask > 0)).sum())))
    return {str(m): {"mask_iou_ge_0.5": float(np.mean(np.asarray(v) >= 0.5)), "mean_iou": float(np.mean(v))}
            for m, v in ious.items()}


def parts(doc: dict, gt: dict[int, dict]) -> dict:
    rows = []
    for s in doc["scenes"]:
        objs = gt[int(s["image_index"])]["objects"]
        pairs, _ = match_scene(s["detections"], objs, 0.5)
        det_of = {j: i for i, j in pairs}
        found = s.get("parts", [])
        masks = [coco_rle(p["mask"]) for p in found]
        boxes = [_xywh(p["box"]) for p in found]
        for j, o in enumerate(objs):
            for name in o.get("parts", {}):
                g = o["part_masks"][name]
                rle = coco_rle(g["mask"])
                row = {"area": float(mask_utils.area(rle)), "matched": float(j in det_of),
                       "box": 0.0, "mask": 0.0, "own": 0.0}
                if found:
                    m = np.asarray(mask_utils.iou(masks, [rle], [0])).ravel()
                    row["box"] = float(np.asarray(mask_utils.iou(boxes, [g["bbox"]], [0])).max())
                    row["mask"] = float(m.max())
                    own = [m[k] for k, p in enumerate(found) if j in det_of and p.get("object") == det_of[j]]
                    row["own"] = float(max(own, default=0.0))
                rows.append(row)
    keys = ("box", "mask", "own", "matched")
    return {"n": len(rows), "median_area": float(np.median([r["area"] for r in rows])) if rows else None,
            **{k: _share(rows, k) for k in keys}, "by_area": _buckets(rows, "area", PART_AREA, keys)}


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        raise SystemExit(__doc__)
    parsed, data, split, out = argv
    doc = json.loads(Path(parsed).read_text())
    gt = {int(s["image_index"]): s for s in json.loads((Path(data) / "scenes" / f"{split}_scenes.json").read_text())["scenes"]}
    res = {"parsed": parsed, "split": split, "objects": objects(doc, gt), "grid_ceiling": grid_ceiling(gt),
           "parts": parts(doc, gt)}
    Path(out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({k: res[k] for k in ("grid_ceiling",)}), json.dumps({k: v for k, v in res["objects"].items()
                                                                          if k != "by_shape"}), json.dumps(res["parts"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
