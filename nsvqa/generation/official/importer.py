"""Import the official release as a variant folder (:func:`import_release`; see :mod:`nsvqa.generation.official`)."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from executors import load_ontology
from executors.errors import ExecutionError, FormatError
from executors.io import question_records, read_json, scene_records
from executors.ontology import Ontology
from executors.program import Program
from executors.scene import SymbolicScene, check_image_filename

from nsvqa.fileio import sha256_file, write_atomic, write_json_atomic
from nsvqa.generation.annotations import coco_from_scenes, mask_to_rle
from nsvqa.generation.dataset import SPLITS, png_bytes
from nsvqa.generation.official.masks import _check_box, decode_runs, resize_mask, scale_box, tight_box
from nsvqa.generation.official.release import (IMPORTER_VERSION, IMPORT_GENERATOR, OFFICIAL_SPLITS, OfficialFormatError,
                                               OfficialRelease, SPLITS_KEY, UNKNOWN_PARTS, _MASK_FIELDS, _stderr,
                                               check_split_ranges)


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
    sc, where, onto = job.scene, job.where, _onto()
    if not job.source.is_file():
        raise OfficialFormatError(f"{where}, field 'image_filename': no image {job.source}")
    from PIL import Image  # heavy ([full]): where used; the commands' parsers import this package at once
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
def _image_index(record: Any, where: str) -> Any:
    """The ``image_index`` of a release record (None when absent, not checked further);
    OfficialFormatError naming ``where`` when ``record`` is not an object."""
    if not isinstance(record, dict):
        raise OfficialFormatError(f"{where}: expected an object, got {type(record).__name__}")
    return record.get("image_index")


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
        idx = _image_index(sc, where)
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
            idx = _image_index(q, where)
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
    manifest = read_json(manifest_path, allow_nan=True) if manifest_path.exists() else {}
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
    from tqdm import tqdm  # [full]: only while a release is imported
    bar = tqdm(total=len(jobs), disable=not progress, unit="img", desc=desc)
    out = []
    if workers <= 1 or len(jobs) < 2:
        for j in jobs:
            out.append(_convert(j))
            bar.update()
    else:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
            for r in pool.map(_convert, jobs, chunksize=max(1, min(16, len(jobs) // (4 * workers)))):
                out.append(r)
                bar.update()
    bar.close()
    return out
