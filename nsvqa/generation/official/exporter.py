"""Export splits of a variant folder in the official release's layout (:func:`export_release`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from executors.errors import FormatError
from executors.io import question_records, read_json, scene_records
from executors.scene import check_image_filename

from nsvqa.fileio import write_atomic, write_json_atomic
from nsvqa.generation.annotations import rle_to_mask
from nsvqa.generation.dataset import SPLITS
from nsvqa.generation.official.masks import encode_runs, tight_box
from nsvqa.generation.official.release import (EXPORT_QUESTIONS_FILE, IMPORTER_VERSION, OfficialFormatError,
                                               SCENES_FILE, SPLITS_KEY, _MASK_FIELDS, _stderr)


def _image_size(path: Path, where: str) -> tuple[int, int]:
    if not path.is_file():
        raise OfficialFormatError(f"{where}, field 'image_filename': no image {path}")
    from PIL import Image  # heavy ([full]): where used; the commands' parsers import this package at once
    with Image.open(path) as im:
        return im.size


def export_release(folder: str | os.PathLike, out: str | os.PathLike, *, splits: Sequence[str] | None = None,
                   overwrite: bool = False, log: Callable[[str], None] | None = _stderr) -> dict[str, Any]:
    """Write splits of a variant folder of this project in the official release's layout.

    ``out/superCLEVR_scenes.json`` holds the scenes (each object's ``bbox``, ``mask`` and
    ``part_masks`` dropped, ``pixel_coords`` as ``[[x, y, depth], [W, H]]``) with ``obj_mask_box``
    at the image's resolution, decoded from the split's COCO annotations (``info`` is the object's
    shape: this project's vehicles have no CGPart model names; an object without annotation gets
    the box [0, 0, 0, 0] and an empty mask; only parts with an annotation are listed). A split
    without annotations file is exported without ``obj_mask_box``. ``out/superCLEVR_questions.json``
    holds the questions, ``out/images/`` the images (same file names). With several splits, the
    image_index of a split whose indices would overlap the previous split's is shifted past them;
    the scenes file's ``info["nsvqa_splits"]`` records every split's range.

    Args:
        folder (path): the variant folder (``ROOT/VARIANT``).
        out (path): the release folder to write.
        splits (list[str] | None): the splits to export, in this order (None: every split with a
            scenes file, train, val, test).
        overwrite (bool): replace an existing export in ``out``.
        log (callable | None): receives notes (default: printed to stderr).

    Returns:
        dict: ``{"splits": {split: {"range", "images", "questions", "annotations"}}, "scenes", "questions"}``.

    Raises:
        OfficialFormatError: a missing or malformed file of the folder (named), an annotation whose
            mask is not the image's size, two splits with the same image file name.
        ValueError: no split to export, or an existing export without ``overwrite``.
    """
    folder, out = Path(folder), Path(out)
    say = log or (lambda _m: None)
    if splits is None:
        splits = [s for s in SPLITS if (folder / "scenes" / f"{s}_scenes.json").is_file()]
    if not splits:
        raise ValueError(f"{folder}: no split to export (no scenes/<split>_scenes.json)")
    if (out / SCENES_FILE).exists() and not overwrite:
        raise ValueError(f"{out / SCENES_FILE} exists; pass overwrite (--overwrite) to replace it")
    all_scenes, all_questions, ranges, sizes, summary = [], [], {}, {}, {}
    names: dict[str, str] = {}
    end = -1
    for split in splits:
        sp = folder / "scenes" / f"{split}_scenes.json"
        qp = folder / "questions" / f"{split}_questions.json"
        cp = folder / "annotations" / f"{split}_coco.json"
        try:
            scenes = scene_records(read_json(sp), str(sp))
            questions = question_records(read_json(qp), str(qp)) if qp.is_file() else []
        except FileNotFoundError:
            raise OfficialFormatError(f"{sp}: no scenes file (split {split!r})") from None
        except FormatError as e:
            raise OfficialFormatError(str(e)) from None
        if not scenes:
            say(f"note: {sp}: no scene; split {split} not exported")
            continue
        if not qp.is_file():
            say(f"note: {qp}: no questions file; split {split} exported without questions")
        anns = _annotations_by_object(cp) if cp.is_file() else None
        if anns is None:
            say(f"note: {cp}: no annotations; split {split} exported without 'obj_mask_box'")
        indices = [int(s.get("image_index", k)) for k, s in enumerate(scenes)]
        shift = max(0, end + 1 - min(indices)) if all_scenes else 0
        for k, sc in enumerate(scenes):
            idx = indices[k]
            where = f"{sp}, scene image_index {idx}"
            try:
                name = check_image_filename(sc.get("image_filename"), where)
            except FormatError as e:
                raise OfficialFormatError(str(e)) from None
            if name in names:
                raise OfficialFormatError(f"{where}, field 'image_filename': {name!r} is also an image of split "
                                          f"{names[name]!r}")
            names[name] = split
            src = folder / "images" / split / name
            w, h = _image_size(src, where)
            sizes.setdefault(split, [w, h])
            rec = {k2: v for k2, v in sc.items() if k2 != "obj_mask_box"}
            rec["image_index"] = idx + shift
            rec["objects"] = [_export_object(o, w, h) for o in sc.get("objects", [])]
            if anns is not None:
                rec["obj_mask_box"] = _obj_mask_box(sc.get("objects", []), anns.get(idx, {}), w, h, where)
            all_scenes.append(rec)
            write_atomic(out / "images" / name, src.read_bytes())
        for q in questions:
            rec = dict(q)
            if isinstance(rec.get("image_index"), int):
                rec["image_index"] += shift
            if isinstance(rec.get("image_filename"), str):
                rec["image"] = Path(rec["image_filename"]).stem
            all_questions.append(rec)
        ranges[split] = [min(indices) + shift, max(indices) + shift]
        end = ranges[split][1]
        summary[split] = {"range": ranges[split], "images": len(scenes), "questions": len(questions),
                          "annotations": anns is not None}
    if not all_scenes:
        raise ValueError(f"{folder}: no scene to export in splits {list(splits)}")
    for k, q in enumerate(all_questions):
        q["question_index"] = k
    info = {"generator": "nsvqa", "exported_by": "nsvqa.generation.official", "version": IMPORTER_VERSION,
            "variant": folder.name, SPLITS_KEY: ranges, "image_sizes": sizes}
    write_json_atomic(out / EXPORT_QUESTIONS_FILE, {"info": info, "questions": all_questions})
    write_json_atomic(out / SCENES_FILE, {"info": info, "scenes": all_scenes})
    return {"splits": summary, "scenes": str(out / SCENES_FILE), "questions": str(out / EXPORT_QUESTIONS_FILE)}


def _annotations_by_object(path: Path) -> dict[int, dict[tuple[int, str | None], dict]]:
    """image_id -> (object_index, part_name or None) -> annotation, in file order."""
    try:
        coco = read_json(path)
    except FormatError as e:
        raise OfficialFormatError(str(e)) from None
    if not isinstance(coco, dict) or not isinstance(coco.get("annotations"), list):
        raise OfficialFormatError(f"{path}: expected a COCO object with 'annotations'")
    out: dict[int, dict] = {}
    for k, a in enumerate(coco["annotations"]):
        where = f"{path}, annotation {k}"
        for f in ("image_id", "object_index", "segmentation"):
            if f not in a:
                raise OfficialFormatError(f"{where}: missing field {f!r}")
        out.setdefault(int(a["image_id"]), {})[(int(a["object_index"]), a.get("part_name"))] = a
    return out


def _export_object(o: Mapping[str, Any], w: int, h: int) -> dict:
    rec = {k: v for k, v in o.items() if k not in _MASK_FIELDS}
    p = rec.get("pixel_coords")
    if isinstance(p, list) and p and not isinstance(p[0], list):
        rec["pixel_coords"] = [list(p), [w, h]]
    return rec


def _obj_mask_box(objects: Sequence[Mapping], anns: Mapping[tuple[int, str | None], dict], w: int, h: int,
                  where: str) -> dict[str, dict]:
    """The release's ``obj_mask_box`` of one scene from its COCO annotations."""
    empty = [[0, 0, 0, 0], str(w * h)]
    per_object: dict[int, list[tuple[str | None, dict]]] = {}
    for (obj, part), a in anns.items():
        per_object.setdefault(obj, []).append((part, a))
    out: dict[str, dict] = {}
    for j, o in enumerate(objects):
        entry: dict[str, Any] = {"info": o.get("shape"), "obj": empty}
        for part, a in per_object.get(j, []):
            seg = a["segmentation"]
            if not isinstance(seg, Mapping) or list(seg.get("size", ())) != [h, w]:
                raise OfficialFormatError(f"{where}, object {j}, field 'segmentation'"
                                          + (f" of part {part!r}" if part else "")
                                          + f": expected a COCO RLE of size [{h}, {w}] (the image's)")
            mask = rle_to_mask(seg)
            entry["obj" if part is None else part] = [tight_box(mask), encode_runs(mask)]
        out[str(j)] = entry
    return out
