"""COCO instance annotations (objects and parts, RLE masks) with pycocotools."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np


def mask_to_rle(mask: np.ndarray) -> tuple[dict, list[float]]:
    """COCO RLE (``counts`` as a string) and ``[x, y, w, h]`` box of a boolean (H, W) mask."""
    from pycocotools import mask as mask_util  # heavy ([full]): where used; reading files needs numpy alone
    rle = mask_util.encode(np.asfortranarray(mask.astype(np.uint8)))
    bbox = [float(v) for v in mask_util.toBbox(rle)]
    return {"size": [int(rle["size"][0]), int(rle["size"][1])], "counts": rle["counts"].decode("ascii")}, bbox


def label_rles(labels: np.ndarray, wanted: Sequence[int]) -> dict[int, tuple[dict, list[float]]]:
    """COCO RLE and box of ``labels == l`` for every ``l`` in ``wanted``, in one pass.

    COCO RLE counts alternate runs of 0 and 1 in column-major order; the runs of every label are
    read off the runs of equal values of the whole label image at once, then compressed by
    pycocotools, all labels in one call (a label absent from the image gets an empty mask). The
    same RLEs and boxes as :func:`mask_to_rle` of each ``labels == l``.
    """
    wanted = list(wanted)
    if not wanted:
        return {}
    h, w = labels.shape
    flat = labels.ravel(order="F")
    n = flat.size
    cut = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [n]])
    vals = flat[starts]
    order = np.argsort(vals, kind="stable")
    sv, ss, se = vals[order], starts[order], ends[order]
    # the runs of label wanted[j] are ss[lo[j]:hi[j]] (in image order: the sort is stable)
    lo = np.searchsorted(sv, wanted, "left").tolist()
    hi = np.searchsorted(sv, wanted, "right").tolist()
    # counts of every label: [gap, run, gap, run, ...] with the gap before each run, then the tail
    prev = np.concatenate([[0], se[:-1]])
    inter = np.stack([ss - prev, se - ss], 1).ravel().tolist()
    se_list = se.tolist()
    objs = []
    for a, b in zip(lo, hi):
        if a == b:  # absent: one run of zeros
            objs.append({"counts": [n], "size": [h, w]})
            continue
        counts = inter[2 * a:2 * b]
        counts[0] = ss[a].item()  # the first gap starts at 0, not at the previous label's run
        tail = n - se_list[b - 1]
        if tail:  # like pycocotools: no trailing empty run
            counts.append(tail)
        objs.append({"counts": counts, "size": [h, w]})
    from pycocotools import mask as mask_util  # heavy: as above
    rles = mask_util.frPyObjects(objs, h, w)
    boxes = mask_util.toBbox(rles).tolist()
    return {lab: ({"size": [h, w], "counts": rle["counts"].decode("ascii")}, box)
            for lab, rle, box in zip(wanted, rles, boxes)}


def coco_rle(rle: dict) -> dict:
    """A COCO RLE in the form pycocotools' C functions take (``counts`` as bytes); the files hold
    ``counts`` as a string."""
    counts = rle["counts"]
    return {"size": list(rle["size"]), "counts": counts.encode("ascii") if isinstance(counts, str) else counts}


def rle_to_mask(rle: dict) -> np.ndarray:
    """Boolean (H, W) mask of a COCO RLE dict (string or bytes counts)."""
    from pycocotools import mask as mask_util  # heavy: as above
    return mask_util.decode(coco_rle(rle)).astype(bool)


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
    from pycocotools import mask as mask_util  # heavy: as above
    area = float(mask_util.area(coco_rle(rle)))
    a = {"id": aid, "image_id": iid, "category_id": cid, "segmentation": rle, "area": area,
         "bbox": bbox, "iscrowd": 0, "object_index": obj}
    if part is not None:
        a["part_name"] = part
    return a
