"""Readers for the release file layouts (CLEVR v1.0, Super-CLEVR, this project's generator).

Scenes: ``{"info", "scenes": [...]}``, a bare list, or one scene per file. Questions:
``{"info", "questions": [...]}`` or a bare list. Errors name the file, the item and the field.
Every JSON file of the project is read by :func:`loads_json` / :func:`read_json`
(:mod:`executors.strict_json`, re-exported here: UTF-8, no key twice, numbers within a float).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from .errors import ExecutionError, FormatError
from .strict_json import MAX_INT_CHARS, loads_json, read_json  # noqa: F401  (the readers' home, re-exported)
from .ontology import Ontology, load_ontology
from .program import Program
from .scene import SymbolicScene, check_image_filename


def scene_records(data: Any, source: str) -> list[dict]:
    """The list of scene dicts of a loaded scenes file."""
    if isinstance(data, dict) and "scenes" in data:
        data = data["scenes"]
    elif isinstance(data, dict) and "objects" in data:
        data = [data]
    if not isinstance(data, list):
        raise FormatError(f"{source}: expected {{'scenes': [...]}}, a list of scenes or one scene")
    return data


def question_records(data: Any, source: str) -> list[dict]:
    if isinstance(data, dict) and "questions" in data:
        data = data["questions"]
    if not isinstance(data, list):
        raise FormatError(f"{source}: expected {{'questions': [...]}} or a list of questions")
    return data


def detect_ontology(scenes: Sequence[dict]) -> Ontology:
    """``clevr`` when every shape is a CLEVR shape, else ``superclevr``."""
    clevr = load_ontology("clevr")
    shapes = {o.get("shape") for s in scenes for o in s.get("objects", ())}
    return clevr if shapes <= set(clevr.values("shape")) else load_ontology("superclevr")


def load_scenes(path: str | os.PathLike, ontology: Ontology | None = None) -> tuple[list[SymbolicScene], Ontology]:
    """Read every scene of a file; returns the scenes and the ontology used (detected if None)."""
    records = scene_records(read_json(path), str(path))
    onto = ontology or detect_ontology(records)
    scenes = [SymbolicScene.from_json(r, onto, where=f"{path}, scene {i}") for i, r in enumerate(records)]
    return scenes, onto


def load_questions(path: str | os.PathLike) -> list[dict]:
    """Read the question records of a file, checking the fields every consumer needs."""
    records = question_records(read_json(path), str(path))
    for i, q in enumerate(records):
        where = f"{path}, question {i}"
        if not isinstance(q, dict):
            raise FormatError(f"{where}: expected an object")
        if "program" not in q:
            raise FormatError(f"{where}: missing field 'program'")
        if "image_index" not in q and "image_filename" not in q:
            raise FormatError(f"{where}: missing field 'image_index' (or 'image_filename')")
        if "image_filename" in q:
            check_image_filename(q["image_filename"], where)
    return records


def parse_program(q: dict, ontology: Ontology, where: str) -> Program:
    """Program of a question record, validated; errors carry ``where``."""
    try:
        return Program.from_json(q["program"], ontology)
    except ExecutionError as e:
        raise e.with_context(where)


def normalize_answer(a: Any) -> str:
    """Canonical string of an answer: booleans -> yes/no, numbers -> digits, strings as is."""
    if isinstance(a, bool):
        return "yes" if a else "no"
    if isinstance(a, (int, float)) and float(a).is_integer():
        return str(int(a))
    if isinstance(a, str):
        s = a.strip().lower()
        return {"true": "yes", "false": "no"}.get(s, s)
    return str(a)


def scene_lookup(scenes: Sequence[SymbolicScene]) -> dict:
    """Map image_index (and image_filename) -> position in ``scenes``."""
    out: dict = {}
    for k, s in enumerate(scenes):
        idx = s.image_index if s.image_index is not None else k
        out[("index", idx)] = k
        if s.image_filename:
            out[("file", s.image_filename)] = k
    return out


def question_scene(q: dict, lookup: dict, where: str) -> int:
    """Position of the question's scene; FormatError naming the question if absent."""
    k = lookup.get(("index", q.get("image_index")))
    if k is None and "image_filename" in q:
        k = lookup.get(("file", q["image_filename"]))
    if k is None:
        raise FormatError(f"{where}, field 'image_index': no scene {q.get('image_index')!r} "
                          f"({q.get('image_filename')!r}) in the scenes file")
    return k
