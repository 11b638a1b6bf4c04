"""COCO instance annotations (objects and parts, RLE masks) with pycocotools."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np


def mask_to_rle(mask: np.ndarray) -> tuple[dict, list[float]]:
    """COCO RLE (``counts`` as a string) and ``[x, y, w, h]`` box of a boolean (H, W) mask."""
    from pycocotools import mask as mask_util

    rle = mask_util.encode(np.asfortranarray(mask.astype(np.uint8)))
    bbox = [float(v) for v in mask_util.toBbox(rle)]
    return {"size": [int(rle["size"][0]), int(rle["size"][1])], "counts": rle["counts"].decode("ascii")}, bbox


def rle_to_mask(rle: dict) -> np.ndarray:
    """Boolean (H, W) mask of a COCO RLE dict (string or bytes counts)."""
    from pycocotools import mask as mask_util

    counts = rle["counts"]
    r = {"size": list(rle["size"]), "counts": counts.encode("ascii") if isinstance(counts, str) else counts}
    return mask_util.decode(r).astype(bool)


def categories(shapes: Sequence[str], part_names: Sequence[str]) -> list[dict]:
    """COCO categories: the shapes (supercategory ``object``) then the part names (``part``)."""
    cats = [{"id": k + 1, "name": s, "supercategory": "object"} for k, s in enumerate(shapes)]
    cats += [{"id": len(shapes) + k + 1, "name": p, "supercategory": "part"} for k, p in enumerate(part_names)]
    return cats


def coco_from_scenes(scenes: Iterable[dict], shapes: Sequence[str], part_names: Sequence[str],
                     width: int, height: int, info: dict | None = None) -> dict:
    """COCO instance-segmentation dict of generated scene records (objects and their parts).

    Every annotation carries ``object_index`` (and ``part_name`` for parts) to link it back to the
    scene; ``image_id`` is the scene's ``image_index``.
    """
    shape_id = {s: k + 1 for k, s in enumerate(shapes)}
    part_id = {p: len(shapes) + k + 1 for k, p in enumerate(part_names)}
    images, anns = [], []
    for sc in scenes:
        iid = int(sc["image_index"])
        images.append({"id": iid, "file_name": sc["image_filename"], "width": width, "height": height})
        for i, o in enumerate(sc["objects"]):
            anns.append(_ann(len(anns) + 1, iid, shape_id[o["shape"]], o["mask"], o["bbox"], i))
            for name, pm in o.get("part_masks", {}).items():
                anns.append(_ann(len(anns) + 1, iid, part_id[name], pm["mask"], pm["bbox"], i, name))
    return {"info": info or {}, "images": images, "annotations": anns,
            "categories": categories(shapes, part_names)}


def _ann(aid: int, iid: int, cid: int, rle: dict, bbox: list[float], obj: int, part: str | None = None) -> dict:
    from pycocotools import mask as mask_util

    area = float(mask_util.area({"size": rle["size"], "counts": rle["counts"].encode("ascii")}))
    a = {"id": aid, "image_id": iid, "category_id": cid, "segmentation": rle, "area": area,
         "bbox": bbox, "iscrowd": 0, "object_index": obj}
    if part is not None:
        a["part_name"] = part
    return a
