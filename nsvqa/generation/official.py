"""The official Super-CLEVR release <-> one variant folder of this project.

**Import** (:func:`import_release`). The release (Li et al., CVPR 2023) is::

    superCLEVR_scenes.json             {"info", "scenes": [...]}: per scene ``obj_mask_box``
    superCLEVR_questions_30k.json      {"info", "questions": [...]}
    images/superCLEVR_new_<index:06d>.png     640x480 renders

and is laid out as a variant folder (docs/formats.md, section 1)::

    <folder>/images/<split>/<release file name>.png   resized to width x height, RGB
    <folder>/scenes/<split>_scenes.json               the release's scenes; per object ``bbox``,
                                                      ``mask`` (COCO RLE), ``part_masks``
    <folder>/questions/<split>_questions.json         the release's questions of those images
    <folder>/annotations/<split>_coco.json            :func:`nsvqa.generation.annotations.coco_from_scenes`
    <folder>/manifest.json                            what was imported, with sha256

A split is the range of ``image_index`` it takes (:data:`OFFICIAL_SPLITS`, the release's 20k /
5k / 5k, or the user's own). ``obj_mask_box`` is ``{str(object index): {"info": model name, "obj":
[box, mask], <part name>: [box, mask], ...}}`` at the render's resolution (the image's size):
``box`` is [x, y, w, h] in pixels (the mask's tight box, [0, 0, 0, 0] when nothing is visible) and
``mask`` a string of comma-separated run lengths over the row-major flattened H x W image,
alternating runs of 0 and 1 and starting with a 0-run (:func:`decode_runs`, :func:`encode_runs`).
Masks are resized by area (a pixel is set when at least half of it is covered; a visible mask
stays visible), boxes and ``pixel_coords`` are scaled with the image. Scenes without ``obj_mask_box`` (the
generator's sample scenes) are imported for evaluation only: scenes, questions and images, no
annotations file; the manifest says so (``evaluation_only``) and a note is printed.

**Export** (:func:`export_release`): splits of a variant folder -> the release's layout, with
``obj_mask_box`` decoded from the split's COCO annotations, so other codebases read this
project's variants. The exported scenes' ``info`` records each split's ``image_index`` range
(``nsvqa_splits``), which an import of that folder uses by default.

Errors are :class:`OfficialFormatError` (a :class:`~executors.errors.FormatError`, so a
``ValueError``) naming the file, the scene (its ``image_index``), the object and the field.
"""
from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from executors import load_ontology
from executors.errors import ExecutionError, FormatError
from executors.io import question_records, read_json, scene_records
from executors.ontology import Ontology
from executors.program import Program
from executors.scene import SymbolicScene, check_image_filename

from nsvqa.fileio import sha256_file, write_atomic, write_json_atomic
from nsvqa.generation.annotations import coco_from_scenes, mask_to_rle, rle_to_mask
from nsvqa.generation.dataset import SPLITS, png_bytes

IMPORTER_VERSION = "1.0.0"
#: ``generator`` of the manifest of an imported folder.
IMPORT_GENERATOR = "superclevr-import"
#: The release's splits: image_index ranges, both ends included (20k train, 5k val, 5k test).
OFFICIAL_SPLITS: Mapping[str, tuple[int, int]] = {"train": (0, 19_999), "val": (20_000, 24_999),
                                                   "test": (25_000, 29_999)}
SCENES_FILE = "superCLEVR_scenes.json"
#: The release's questions file (10 per image, CLEVR 1.0 templates).
QUESTIONS_FILE = "superCLEVR_questions_30k.json"
#: The questions file :func:`export_release` writes.
EXPORT_QUESTIONS_FILE = "superCLEVR_questions.json"
#: Key of the exported scenes file's ``info``: ``{split: [first image_index, last]}``.
SPLITS_KEY = "nsvqa_splits"
#: What :func:`import_release` does with a part name the object's shape does not have.
UNKNOWN_PARTS = ("error", "skip")
#: Fields of an object record that only this project's scenes carry (dropped on export).
_MASK_FIELDS = ("bbox", "mask", "part_masks")


class OfficialFormatError(FormatError):
    """A malformed official release (or variant folder to export); the message names the file, the
    scene (``image_index``), the object and the field."""


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


# ---------------------------------------------------------------------- run-length masks
def decode_runs(text: Any, height: int, width: int, where: str = "mask") -> np.ndarray:
    """The boolean (height, width) mask of a release run-length string.

    Args:
        text (str): comma-separated run lengths over the row-major flattened image, alternating
            runs of 0 and 1, starting with a 0-run (which may be 0 long).
        height (int), width (int): the image's size; the runs must sum to height * width.
        where (str): names the mask in error messages (file, scene, object, field).

    Raises:
        OfficialFormatError: not a string, a token that is not a non-negative integer, or runs that
            do not sum to height * width.
    """
    if not isinstance(text, str):
        raise OfficialFormatError(f"{where}: expected a string of run lengths, got {type(text).__name__}")
    tokens = text.strip().split(",") if text.strip() else []
    try:
        runs = np.asarray([int(t) for t in tokens], dtype=np.int64)
    except ValueError:
        bad = next(t for t in tokens if not t.strip().lstrip("+").isdigit())
        raise OfficialFormatError(f"{where}: run length {bad.strip()!r} is not an integer") from None
    n = height * width
    if (runs < 0).any():
        raise OfficialFormatError(f"{where}: negative run length {int(runs[runs < 0][0])}")
    total = int(runs.sum())
    if total != n:
        raise OfficialFormatError(f"{where}: the {len(runs)} run lengths sum to {total}, expected "
                                  f"{n} = {height} x {width} (the image's height x width)")
    if len(runs) <= 1:
        return np.zeros((height, width), dtype=bool)
    values = (np.arange(len(runs)) % 2).astype(bool)
    return np.repeat(values, runs).reshape(height, width)


def encode_runs(mask: np.ndarray) -> str:
    """The release's run-length string of a mask (row-major, 0-run first; no zero-length run
    except a leading one when the first pixel is set).

    Args:
        mask (np.ndarray): boolean (H, W) mask.
    """
    flat = np.asarray(mask, dtype=bool).ravel()
    if flat.size == 0:
        return "0"
    cut = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    runs = np.diff(np.concatenate([[0], cut, [flat.size]]))
    if flat[0]:
        runs = np.concatenate([[0], runs])
    return ",".join(str(int(r)) for r in runs)


def tight_box(mask: np.ndarray) -> list[int]:
    """``[x, y, w, h]`` of the set pixels of a mask (end exclusive, the release's and pycocotools'
    convention); ``[0, 0, 0, 0]`` for an empty mask.

    Args:
        mask (np.ndarray): boolean (H, W) mask.
    """
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    if not len(rows):
        return [0, 0, 0, 0]
    return [int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)]


def resize_mask(mask: np.ndarray, width: int, height: int) -> np.ndarray:
    """A mask resized by area: a pixel is set when at least half of its area is covered by set
    source pixels; a non-empty mask that would vanish keeps its most covered pixels (so a visible
    object or part stays visible).

    Args:
        mask (np.ndarray): boolean (H, W) mask.
        width (int), height (int): the size to resize to.

    Returns:
        np.ndarray: boolean (height, width) mask (``mask`` itself when the size is the same).
    """
    if mask.shape == (height, width):
        return mask
    out = np.zeros((height, width), dtype=bool)
    x, y, w, h = tight_box(mask)
    if not w:
        return out
    src_h, src_w = mask.shape
    wy, wx = _area_weights(src_h, height), _area_weights(src_w, width)
    # only the target pixels that overlap the mask's box (the mask is 0 elsewhere)
    ty0, ty1 = math.floor(y * height / src_h), min(height, math.ceil((y + h) * height / src_h))
    tx0, tx1 = math.floor(x * width / src_w), min(width, math.ceil((x + w) * width / src_w))
    cover = wy[ty0:ty1, y:y + h] @ mask[y:y + h, x:x + w].astype(np.float64) @ wx[tx0:tx1, x:x + w].T
    part = cover >= 0.5 - 1e-9
    if not part.any():
        part = cover >= cover.max() - 1e-9
    out[ty0:ty1, tx0:tx1] = part
    return out


@lru_cache(maxsize=16)
def _area_weights(n_src: int, n_dst: int) -> np.ndarray:
    """(n_dst, n_src): the fraction of target pixel i's extent that source pixel r covers."""
    scale = n_src / n_dst
    edges = np.arange(n_dst + 1) * scale
    r = np.arange(n_src)
    lo = np.maximum(r[None, :], edges[:-1, None])
    hi = np.minimum(r[None, :] + 1, edges[1:, None])
    return np.clip(hi - lo, 0.0, None) / scale


def scale_box(box: Sequence[float], sx: float, sy: float) -> list[float]:
    """``box`` scaled with its image, rounded to 4 decimals.

    Args:
        box (sequence of 4 floats): ``[x, y, w, h]`` in pixels.
        sx (float), sy (float): new width / old width, new height / old height.
    """
    x, y, w, h = box
    return [round(float(x) * sx, 4), round(float(y) * sy, 4), round(float(w) * sx, 4), round(float(h) * sy, 4)]


def _check_box(box: Any, width: int, height: int, where: str) -> list[float]:
    ok = (isinstance(box, (list, tuple)) and len(box) == 4
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in box))
    if not ok:
        raise OfficialFormatError(f"{where}: expected a box [x, y, w, h] of 4 numbers, got {box!r}")
    x, y, w, h = box
    if w < 0 or h < 0 or x < 0 or y < 0 or x + w > width or y + h > height:
        raise OfficialFormatError(f"{where}: box {list(box)} ([x, y, w, h]) lies outside the "
                                  f"{width} x {height} image")
    return [float(v) for v in box]


# ---------------------------------------------------------------------- split ranges
def parse_split_ranges(specs: Iterable[str]) -> dict[str, tuple[int, int]]:
    """``["test=0-9", "train=10-99"]`` -> ``{"test": (0, 9), "train": (10, 99)}`` (both ends
    included; ``"val=5"`` is one image).

    Args:
        specs (iterable of str): ``SPLIT=FIRST-LAST`` items, SPLIT one of train, val, test.

    Raises:
        ValueError: a malformed item, an unknown split name, a range whose end precedes its start,
            a split given twice, or overlapping ranges.
    """
    out: dict[str, tuple[int, int]] = {}
    for s in specs:
        name, sep, rng = str(s).partition("=")
        name = name.strip()
        if not sep or name not in SPLITS:
            raise ValueError(f"split range {s!r}: expected SPLIT=FIRST-LAST with SPLIT one of {list(SPLITS)}")
        lo, dash, hi = rng.strip().partition("-")
        try:
            a, b = int(lo), int(hi if dash else lo)
        except ValueError:
            raise ValueError(f"split range {s!r}: FIRST and LAST must be integers") from None
        if a < 0 or b < a:
            raise ValueError(f"split range {s!r}: expected 0 <= FIRST <= LAST")
        if name in out:
            raise ValueError(f"split {name!r} given twice")
        out[name] = (a, b)
    check_split_ranges(out)
    return out


def check_split_ranges(ranges: Mapping[str, Sequence[int]]) -> None:
    """Raise ``ValueError`` when two splits' image_index ranges overlap or a name is not a split.

    Args:
        ranges (dict[str, (int, int)]): split name -> (first, last) image_index, both included.
    """
    items = sorted(((int(r[0]), int(r[1]), n) for n, r in ranges.items()))
    for n in ranges:
        if n not in SPLITS:
            raise ValueError(f"split {n!r}: expected one of {list(SPLITS)}")
    for (a0, b0, n0), (a1, b1, n1) in zip(items, items[1:]):
        if a1 <= b0:
            raise ValueError(f"split ranges overlap: {n0} {a0}-{b0} and {n1} {a1}-{b1}")


# ---------------------------------------------------------------------- the release's files
@dataclass(frozen=True)
class OfficialRelease:
    """Where an official release's files are.

    Attributes:
        scenes (Path): the scenes file (``superCLEVR_scenes.json``).
        questions (tuple[Path, ...]): question files, read in this order (may be empty).
        images (Path): the folder the scenes' ``image_filename`` are relative to.
    """

    scenes: Path
    questions: tuple[Path, ...] = ()
    images: Path = Path("images")

    @classmethod
    def find(cls, root: str | os.PathLike, scenes: str | os.PathLike | None = None,
             questions: Sequence[str | os.PathLike] | None = None,
             images: str | os.PathLike | None = None) -> "OfficialRelease":
        """The release under ``root``: ``root/superCLEVR_scenes.json``, ``root/images`` and the
        questions file ``superCLEVR_questions_30k.json`` (else the one ``superCLEVR_questions*.json``
        there; none: no questions). Explicit paths win.

        Raises:
            OfficialFormatError: no scenes file or image folder, or several candidate question files.
        """
        root = Path(root)
        sp = Path(scenes) if scenes is not None else root / SCENES_FILE
        ip = Path(images) if images is not None else root / "images"
        if questions is not None:
            qs = tuple(Path(q) for q in questions)
        elif (root / QUESTIONS_FILE).is_file():
            qs = (root / QUESTIONS_FILE,)
        else:
            found = sorted(root.glob("superCLEVR_questions*.json"))
            if len(found) > 1:
                raise OfficialFormatError(f"{root}: several question files ({', '.join(p.name for p in found)}); "
                                          "name the ones to import (--questions)")
            qs = tuple(found)
        if not sp.is_file():
            raise OfficialFormatError(f"{sp}: no scenes file")
        if not ip.is_dir():
            raise OfficialFormatError(f"{ip}: no image folder")
        for q in qs:
            if not q.is_file():
                raise OfficialFormatError(f"{q}: no questions file")
        return cls(sp, qs, ip)


@dataclass
class ImportResult:
    """What :func:`import_release` wrote.

    Attributes:
        folder (Path): the variant folder.
        splits (dict): per imported split ``{"images", "questions", "annotations": bool, "range"}``.
        notes (list[str]): what was said (evaluation-only splits, empty splits, left-out questions).
        manifest (dict): the manifest as written.
    """

    folder: Path
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------- one scene
@dataclass(frozen=True)
class _SceneJob:
    scene: Mapping[str, Any]
    where: str             # "<file>, scene image_index <i>"
    source: Path           # the release image
    target: Path           # where the resized image goes
    split: str
    width: int
    height: int
    annotated: bool
    unknown_parts: str


_ONTO: Ontology | None = None


def _onto() -> Ontology:
    global _ONTO
    if _ONTO is None:
        _ONTO = load_ontology("superclevr")
    return _ONTO


def _convert(job: _SceneJob) -> tuple[dict, dict[str, int]]:
    """Resize one scene's image (written to ``job.target``) and masks; returns the scene record of
    this project's format and counts (hidden objects, parts, skipped parts)."""
    from PIL import Image

    sc, where, onto = job.scene, job.where, _onto()
    if not job.source.is_file():
        raise OfficialFormatError(f"{where}, field 'image_filename': no image {job.source}")
    try:
        with Image.open(job.source) as im:
            src_w, src_h = im.size
            rgb = im.convert("RGB")
    except OSError as e:
        raise OfficialFormatError(f"{where}, field 'image_filename': unreadable image {job.source} ({e})") from None
    if (src_w, src_h) != (job.width, job.height):
        rgb = rgb.resize((job.width, job.height), Image.Resampling.LANCZOS)
    try:  # what every reader of the scene needs, checked once here
        SymbolicScene.from_json({**sc, "objects": [{k: v for k, v in o.items() if k not in _MASK_FIELDS}
                                                   if isinstance(o, Mapping) else o for o in sc["objects"]]},
                                onto, where=where)
    except (FormatError, ExecutionError) as e:
        raise OfficialFormatError(str(e)) from None
    objects = []
    counts = {"objects": 0, "hidden_objects": 0, "parts": 0, "hidden_parts": 0, "skipped_parts": 0}
    boxes = sc.get("obj_mask_box") if job.annotated else None
    if job.annotated and not isinstance(boxes, Mapping):
        raise OfficialFormatError(f"{where}, field 'obj_mask_box': expected an object, got {type(boxes).__name__}")
    if boxes is not None:
        extra = [k for k in boxes if not (isinstance(k, str) and k.isdigit() and int(k) < len(sc["objects"]))]
        if extra:
            raise OfficialFormatError(f"{where}, field 'obj_mask_box': key {extra[0]!r} is not the index of one of "
                                      f"the scene's {len(sc['objects'])} objects")
    for j, o in enumerate(sc["objects"]):
        ow = f"{where}, object {j}"
        if not isinstance(o, Mapping):
            raise OfficialFormatError(f"{ow}: expected an object, got {type(o).__name__}")
        rec = {k: v for k, v in o.items() if k not in _MASK_FIELDS}
        if "pixel_coords" in rec:
            rec["pixel_coords"] = _scale_pixel(rec["pixel_coords"], src_w, src_h, job.width, job.height, ow)
        if boxes is not None:
            rec.update(_object_masks(boxes, j, o, src_w, src_h, job, ow, onto, counts))
        objects.append(rec)
    out = {k: v for k, v in sc.items() if k != "obj_mask_box"}
    out["split"] = job.split
    out["objects"] = objects
    if boxes is not None:
        scene_shapes = set(onto.scene_values("shape"))
        for j, o in enumerate(objects):
            if o["shape"] not in scene_shapes:
                raise OfficialFormatError(f"{where}, object {j}, field 'shape': {o['shape']!r} is not a shape a "
                                          f"scene can hold ({', '.join(sorted(scene_shapes))})")
    write_atomic(job.target, png_bytes(np.asarray(rgb)))
    return out, counts


def _object_masks(boxes: Mapping, j: int, obj: Mapping, src_w: int, src_h: int, job: _SceneJob, ow: str,
                  onto: Ontology, counts: dict[str, int]) -> dict:
    """``bbox``, ``mask`` and ``part_masks`` of object ``j`` from its ``obj_mask_box`` entry."""
    entry = boxes.get(str(j))
    fw = f"{ow}, field 'obj_mask_box.{j}'"
    if entry is None:
        raise OfficialFormatError(f"{fw}: missing (every object needs its boxes and masks)")
    if not isinstance(entry, Mapping):
        raise OfficialFormatError(f"{fw}: expected an object {{'info', 'obj', <part>...}}, got {type(entry).__name__}")
    if "obj" not in entry:
        raise OfficialFormatError(f"{ow}, field 'obj_mask_box.{j}.obj': missing (the object's [box, mask])")
    valid = onto.parts_of(obj.get("shape", ""))
    out: dict[str, Any] = {}
    part_masks: dict[str, dict] = {}
    for key, val in entry.items():
        if key == "info":
            continue
        kw = f"{ow}, field 'obj_mask_box.{j}.{key}'"
        if key != "obj" and key not in valid:
            if job.unknown_parts == "skip":
                counts["skipped_parts"] += 1
                continue
            raise OfficialFormatError(f"{kw}: {key!r} is not a part of {obj.get('shape')!r}; valid: {list(valid)}")
        if not (isinstance(val, (list, tuple)) and len(val) == 2):
            raise OfficialFormatError(f"{kw}: expected [box, mask], got {type(val).__name__}"
                                      + (f" of {len(val)}" if isinstance(val, (list, tuple)) else ""))
        box = _check_box(val[0], src_w, src_h, f"{kw} box")
        mask = decode_runs(val[1], src_h, src_w, f"{kw} mask")
        have = tight_box(mask)
        if have[2] and not (have[0] >= box[0] and have[1] >= box[1] and have[0] + have[2] <= box[0] + box[2]
                            and have[1] + have[3] <= box[1] + box[3]):
            raise OfficialFormatError(f"{kw}: the mask's pixels {have} ([x, y, w, h]) lie outside its box "
                                      f"{val[0]} (runs are read row-major over {src_w} x {src_h})")
        small = resize_mask(mask, job.width, job.height)
        rle, _ = mask_to_rle(small)
        bbox = scale_box(box, job.width / src_w, job.height / src_h)
        if key == "obj":
            out["bbox"], out["mask"] = bbox, rle
            counts["objects"] += 1
            counts["hidden_objects"] += int(not small.any())
        elif small.any():  # like the generator: only the visible parts
            part_masks[key] = {"bbox": bbox, "mask": rle}
            counts["parts"] += 1
        else:
            counts["hidden_parts"] += 1
    out["part_masks"] = part_masks
    return out


def _scale_pixel(p: Any, src_w: int, src_h: int, width: int, height: int, ow: str) -> Any:
    """``pixel_coords`` scaled to the new size: ``[[x, y, depth], [W, H]]`` (the release's, scaled by
    its own [W, H]) or ``[x, y, depth]`` (scaled by the image's size)."""
    try:
        if isinstance(p, list) and len(p) == 2 and isinstance(p[0], list):
            (x, y, *rest), (pw, ph) = p
            if (pw, ph) == (width, height):
                return p
            return [[round(x * width / pw, 3), round(y * height / ph, 3), *rest], [width, height]]
        x, y, *rest = p
        if (src_w, src_h) == (width, height):
            return p
        return [round(x * width / src_w, 3), round(y * height / src_h, 3), *rest]
    except (TypeError, ValueError, ZeroDivisionError):
        raise OfficialFormatError(f"{ow}, field 'pixel_coords': expected [x, y, depth] or "
                                  f"[[x, y, depth], [W, H]], got {p!r}") from None


# ---------------------------------------------------------------------- import
def index_scenes(path: Path) -> tuple[list[dict], Mapping[str, Any]]:
    """The scene records of a release scenes file (image_index and image_filename checked, unique)."""
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise OfficialFormatError(f"{path}: no scenes file") from None
    except FormatError as e:
        raise OfficialFormatError(str(e)) from None
    try:
        records = scene_records(data, str(path))
    except FormatError as e:
        raise OfficialFormatError(str(e)) from None
    info = data.get("info", {}) if isinstance(data, dict) else {}
    seen: dict[int, int] = {}
    for k, sc in enumerate(records):
        where = f"{path}, scene {k}"
        if not isinstance(sc, dict):
            raise OfficialFormatError(f"{where}: expected an object, got {type(sc).__name__}")
        idx = sc.get("image_index")
        if idx is None:
            raise OfficialFormatError(f"{where}: missing field 'image_index'")
        if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
            raise OfficialFormatError(f"{where}, field 'image_index': expected an integer >= 0, got {idx!r}")
        where = f"{path}, scene image_index {idx}"
        if idx in seen:
            raise OfficialFormatError(f"{where}: image_index {idx} is also scene {seen[idx]}'s")
        seen[idx] = k
        if "image_filename" not in sc:
            raise OfficialFormatError(f"{where}: missing field 'image_filename'")
        try:
            check_image_filename(sc["image_filename"], where)
        except FormatError as e:
            raise OfficialFormatError(str(e)) from None
        if not isinstance(sc.get("objects"), list):
            raise OfficialFormatError(f"{where}: missing field 'objects'" if "objects" not in sc else
                                      f"{where}, field 'objects': expected a list, got {type(sc['objects']).__name__}")
    return records, info if isinstance(info, Mapping) else {}


def _questions_of(paths: Sequence[Path], split_of: Mapping[int, str], by_file: Mapping[str, int]
                  ) -> tuple[dict[str, list[dict]], int]:
    """The question records of the imported images per split (programs in the writers' form), and
    how many were about images left out."""
    out: dict[str, list[tuple[int, int, int, dict]]] = {}
    left_out = 0
    for f, path in enumerate(paths):
        try:
            records = question_records(read_json(path), str(path))
        except FormatError as e:
            raise OfficialFormatError(str(e)) from None
        for k, q in enumerate(records):
            where = f"{path}, question {k}"
            if not isinstance(q, dict):
                raise OfficialFormatError(f"{where}: expected an object, got {type(q).__name__}")
            idx = q.get("image_index")
            if idx is None:
                if "image_filename" not in q:
                    raise OfficialFormatError(f"{where}: missing field 'image_index' (or 'image_filename')")
                idx = by_file.get(q["image_filename"])
                if idx is None:
                    left_out += 1
                    continue
            elif not isinstance(idx, int) or isinstance(idx, bool):
                raise OfficialFormatError(f"{where}, field 'image_index': expected an integer, got {idx!r}")
            name = q.get("image_filename")
            if name is not None and by_file.get(name, idx) != idx:
                raise OfficialFormatError(f"{where}, field 'image_index': {idx}, but its image {name!r} is the "
                                          f"scene of image_index {by_file[name]}")
            if idx not in split_of:
                left_out += 1
                continue
            if "program" not in q:
                raise OfficialFormatError(f"{where}: missing field 'program'")
            try:
                Program.from_json(q["program"])
            except ExecutionError as e:
                raise OfficialFormatError(f"{where}, field 'program': {e}") from None
            out.setdefault(split_of[idx], []).append((idx, f, k, q))
    result = {}
    for split, items in out.items():
        items.sort(key=lambda t: (t[0], t[1], t[2]))  # by image, then file and position
        result[split] = [_question_record(q, split) for _, _, _, q in items]
    return result, left_out


def _question_record(q: Mapping[str, Any], split: str) -> dict:
    """A release question record for this project's files: the split named, program nodes written
    with ``type`` / ``value_inputs`` (the readers also take ``function`` / ``side_inputs``)."""
    rec = dict(q)
    rec["split"] = split
    nodes = []
    for n in q["program"]:
        node = {"type": n.get("type", n.get("function")), "inputs": list(n["inputs"]),
                "value_inputs": list(n.get("value_inputs", n.get("side_inputs", [])))}
        node.update({k: v for k, v in n.items() if k not in ("type", "function", "inputs", "value_inputs",
                                                               "side_inputs")})
        nodes.append(node)
    rec["program"] = nodes
    if "question_index" in q:
        rec["source_question_index"] = q["question_index"]
    return rec


def import_release(release: OfficialRelease | str | os.PathLike, folder: str | os.PathLike, *,
                   splits: Mapping[str, Sequence[int]] | None = None, width: int = 320, height: int = 240,
                   unknown_parts: str = "error", overwrite: bool = False, workers: int = 1,
                   progress: bool = False, log: Callable[[str], None] | None = _stderr) -> ImportResult:
    """Lay an official Super-CLEVR release out as the variant folder ``folder``.

    Args:
        release (OfficialRelease | path): the release, or its root folder (:meth:`OfficialRelease.find`).
        folder (path): the variant folder to write (``ROOT/VARIANT``).
        splits (dict[str, (int, int)] | None): image_index range of each split, both ends included;
            None: the ranges an export of this project recorded in the scenes file's ``info``
            (``nsvqa_splits``), else :data:`OFFICIAL_SPLITS`. A split with no scene in its range is
            left out (with a note).
        width (int), height (int): size of the written images, masks and boxes.
        unknown_parts (str): ``"error"``: a part name the object's shape does not have is an error;
            ``"skip"``: such masks are left out (counted in the manifest).
        overwrite (bool): replace splits already in ``folder``.
        workers (int): processes converting scenes (1: this one).
        progress (bool): a progress bar per split.
        log (callable | None): receives the notes (default: printed to stderr).

    Returns:
        ImportResult: the splits written, the notes and the manifest.

    Raises:
        OfficialFormatError: a malformed release: a missing field, an unreadable or missing image, a
            run-length mask whose runs do not sum to H x W, a box outside the image, a mask outside
            its box, an unknown part, scenes of a split of which only some have ``obj_mask_box``;
            the message names the file, the scene (image_index), the object and the field.
        ValueError: bad arguments, overlapping ranges, no scene in any range, a split that exists
            (without ``overwrite``) or a folder made by another generator.
    """
    if unknown_parts not in UNKNOWN_PARTS:
        raise ValueError(f"unknown_parts must be one of {UNKNOWN_PARTS}, got {unknown_parts!r}")
    if width < 16 or height < 16:
        raise ValueError(f"the image must be at least 16 x 16, got {width} x {height}")
    rel = release if isinstance(release, OfficialRelease) else OfficialRelease.find(release)
    folder = Path(folder)
    say = log or (lambda _m: None)
    records, info = index_scenes(rel.scenes)
    if splits is None:
        recorded = info.get(SPLITS_KEY)
        splits = recorded if isinstance(recorded, Mapping) and recorded else OFFICIAL_SPLITS
    ranges = {n: (int(r[0]), int(r[1])) for n, r in splits.items()}
    check_split_ranges(ranges)
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    if manifest and manifest.get("generator") != IMPORT_GENERATOR:
        raise ValueError(f"{folder}: made by {manifest.get('generator')!r}, not an import; import into another folder")
    result = ImportResult(folder)

    def note(msg: str) -> None:
        result.notes.append(msg)
        say(msg)

    members: dict[str, list[dict]] = {}
    for sc in records:
        for name, (a, b) in ranges.items():
            if a <= sc["image_index"] <= b:
                members.setdefault(name, []).append(sc)
    for name in ranges:
        if name not in members:
            note(f"note: {rel.scenes}: no scene has an image_index in {name}'s range "
                 f"{ranges[name][0]}-{ranges[name][1]}; split {name} not imported")
    if not members:
        raise ValueError(f"{rel.scenes}: no scene in any split range ({ranges})")
    for name in members:
        if (folder / "scenes" / f"{name}_scenes.json").exists() and not overwrite:
            raise ValueError(f"{folder}: split {name!r} exists; pass overwrite (--overwrite) to replace it")
    split_of = {sc["image_index"]: name for name, scs in members.items() for sc in scs}
    by_file = {sc["image_filename"]: sc["image_index"] for sc in records}
    questions, left_out = _questions_of(rel.questions, split_of, by_file)
    if not rel.questions:
        note(f"note: {rel.scenes}: no questions file given; the question files are empty")
    elif left_out:
        note(f"note: {left_out} questions are about images outside the imported ranges; left out")
    onto = _onto()
    manifest.update({"generator": IMPORT_GENERATOR, "generator_version": IMPORTER_VERSION,
                     "variant": folder.name, "source": "Super-CLEVR official release"})
    for name in [s for s in SPLITS if s in members]:
        scenes = sorted(members[name], key=lambda s: s["image_index"])
        with_boxes = [s for s in scenes if "obj_mask_box" in s]
        annotated = bool(with_boxes)
        if annotated and len(with_boxes) < len(scenes):
            bad = next(s for s in scenes if "obj_mask_box" not in s)
            raise OfficialFormatError(f"{rel.scenes}, scene image_index {bad['image_index']}: missing field "
                                      f"'obj_mask_box' (other scenes of split {name} have it)")
        jobs = [_SceneJob(s, f"{rel.scenes}, scene image_index {s['image_index']}",
                          rel.images / s["image_filename"], folder / "images" / name / s["image_filename"],
                          name, width, height, annotated, unknown_parts) for s in scenes]
        converted = _run(jobs, workers, progress, f"{folder.name}/{name}")
        out_scenes = [c[0] for c in converted]
        counts = {k: sum(c[1][k] for c in converted) for k in converted[0][1]}
        split_info = {"generator": IMPORT_GENERATOR, "version": IMPORTER_VERSION, "variant": folder.name,
                      "split": name, "source": "Super-CLEVR official release", "source_info": dict(info)}
        qs = questions.get(name, [])
        for k, q in enumerate(qs):
            q["question_index"] = k
        files = [folder / "images" / name / s["image_filename"] for s in out_scenes]
        scenes_file = folder / "scenes" / f"{name}_scenes.json"
        questions_file = folder / "questions" / f"{name}_questions.json"
        coco_file = folder / "annotations" / f"{name}_coco.json"
        write_json_atomic(scenes_file, {"info": split_info, "scenes": out_scenes})
        write_json_atomic(questions_file, {"info": split_info, "questions": qs})
        files += [scenes_file, questions_file]
        if annotated:
            coco = coco_from_scenes(out_scenes, onto.scene_values("shape"), onto.part_names, width, height, split_info)
            write_json_atomic(coco_file, coco)
            files.append(coco_file)
        else:
            if coco_file.exists():
                coco_file.unlink()  # an older import's annotations would not match these scenes
            note(f"note: {rel.scenes}: the scenes of split {name} have no 'obj_mask_box'; imported for evaluation "
                 f"only (scenes, questions, images; no annotations/{name}_coco.json)")
        invalid = sum(1 for q in qs if _invalid(q, onto))
        config = {"importer_version": IMPORTER_VERSION, "variant": folder.name, "split": name,
                  "image_index_range": list(ranges[name]), "width": width, "height": height,
                  "unknown_parts": unknown_parts,
                  "release": {"scenes": str(rel.scenes), "questions": [str(q) for q in rel.questions],
                              "images": str(rel.images)}}
        manifest.setdefault("splits", {})[name] = {
            "config": config, "annotations": annotated, "evaluation_only": not annotated,
            "counts": {"images": len(out_scenes), "questions": len(qs), "invalid_programs": invalid, **counts},
            "sha256": {str(p.relative_to(folder)): sha256_file(p) for p in files},
        }
        result.splits[name] = {"images": len(out_scenes), "questions": len(qs), "annotations": annotated,
                               "range": ranges[name]}
    manifest["evaluation_only"] = any(s.get("evaluation_only") for s in manifest["splits"].values())
    write_json_atomic(manifest_path, manifest)
    result.manifest = manifest
    return result


def _invalid(q: Mapping[str, Any], onto: Ontology) -> bool:
    try:
        Program.from_json(q["program"], onto)
    except ExecutionError:
        return True
    return False


def _run(jobs: list[_SceneJob], workers: int, progress: bool, desc: str) -> list[tuple[dict, dict]]:
    from tqdm import tqdm

    bar = tqdm(total=len(jobs), disable=not progress, unit="img", desc=desc)
    out = []
    if workers <= 1 or len(jobs) < 2:
        for j in jobs:
            out.append(_convert(j))
            bar.update()
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
            for r in pool.map(_convert, jobs, chunksize=max(1, min(16, len(jobs) // (4 * workers)))):
                out.append(r)
                bar.update()
    bar.close()
    return out


# ---------------------------------------------------------------------- export
def _image_size(path: Path, where: str) -> tuple[int, int]:
    from PIL import Image

    if not path.is_file():
        raise OfficialFormatError(f"{where}, field 'image_filename': no image {path}")
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


__all__ = ["OfficialFormatError", "OfficialRelease", "ImportResult", "OFFICIAL_SPLITS", "SCENES_FILE",
           "QUESTIONS_FILE", "EXPORT_QUESTIONS_FILE", "SPLITS_KEY", "decode_runs", "encode_runs", "tight_box",
           "scale_box", "resize_mask", "parse_split_ranges", "check_split_ranges", "import_release", "export_release"]
