"""Fixtures of the executor tests.

* Tiny hand-written scenes (fresh dicts: tests may edit them). Every scene has three objects and
  is written out in full here, so a failing assertion can be checked by hand.
* The reference question files, loaded once per session (skipped without ``$NSVQA_REFERENCE``).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from executors import Ontology, Program, SymbolicScene, load_ontology
from executors.io import load_questions, load_scenes, parse_program, question_scene, scene_lookup

RELATIONS = ("left", "right", "front", "behind")
#: Axis-aligned directions: +x is right, +y is behind.
AXIS_DIRECTIONS = {"right": [1.0, 0.0, 0.0], "left": [-1.0, 0.0, 0.0], "behind": [0.0, 1.0, 0.0],
                   "front": [0.0, -1.0, 0.0], "above": [0.0, 0.0, 1.0], "below": [0.0, 0.0, -1.0]}


@pytest.fixture(scope="session")
def clevr():
    return load_ontology("clevr")


@pytest.fixture(scope="session")
def superclevr():
    return load_ontology("superclevr")


@pytest.fixture
def sc_json() -> dict:
    """Three vehicles with parts.

    ==  =========  ======  ========  =====  ==========  ==========================================
    i   shape      color   material  size   3d_coords   parts (index in the shape's part list)
    ==  =========  ======  ========  =====  ==========  ==========================================
    0   truck      red     metal     large  (0, 0, 0)   hood (13): rubber; front_left_wheel (15): blue
    1   suv        blue    rubber    small  (1, 0, 0)   back_left_wheel (11): yellow
    2   tandem     red     rubber    large  (-1, 1, 0)  wheel_front (1): green; fork (3): metal
    ==  =========  ======  ========  =====  ==========  ==========================================

    Relations from coordinates (margin 0.2): right of 0: [1]; right of 2: [0, 1];
    left of 1: [0, 2]; behind 0 and 1: [2]; front of 2: [0, 1].
    The given ``relationships`` deliberately differ (right of 0 is [2]) so a test can tell
    which source ``relate`` used.
    """
    return {
        "image_index": 7,
        "image_filename": "superCLEVR_new_000007.png",
        "directions": dict(AXIS_DIRECTIONS),
        "objects": [
            {"shape": "truck", "color": "red", "material": "metal", "size": "large",
             "3d_coords": [0.0, 0.0, 0.0], "pixel_coords": [[320, 240, 10.0], [640, 480]],
             "parts": {"hood": {"color": "red", "material": "rubber", "size": "large"},
                       "front_left_wheel": {"color": "blue"}}},
            {"shape": "suv", "color": "blue", "material": "rubber", "size": "small",
             "3d_coords": [1.0, 0.0, 0.0], "pixel_coords": [[420, 240, 10.0], [640, 480]],
             "parts": {"back_left_wheel": {"color": "yellow"}}},
            {"shape": "tandem", "color": "red", "material": "rubber", "size": "large",
             "3d_coords": [-1.0, 1.0, 0.0], "pixel_coords": [[220, 200, 12.0], [640, 480]],
             "parts": {"wheel_front": {"color": "green"}, "fork": {"material": "metal"}}},
        ],
        "relationships": {
            "right": [[2], [], []], "left": [[], [], [0]],
            "front": [[], [], []], "behind": [[], [], []],
        },
    }


@pytest.fixture
def clevr_json() -> dict:
    """Three CLEVR objects: 0 large red metal cube, 1 small blue rubber sphere, 2 large red
    rubber cylinder; positions as in ``sc_json``, no ``relationships``."""
    return {
        "image_index": 0,
        "image_filename": "CLEVR_val_000000.png",
        "directions": dict(AXIS_DIRECTIONS),
        "objects": [
            {"shape": "cube", "color": "red", "material": "metal", "size": "large",
             "3d_coords": [0.0, 0.0, 0.7], "pixel_coords": [320, 240, 10.0]},
            {"shape": "sphere", "color": "blue", "material": "rubber", "size": "small",
             "3d_coords": [1.0, 0.0, 0.35], "pixel_coords": [420, 240, 10.0]},
            {"shape": "cylinder", "color": "red", "material": "rubber", "size": "large",
             "3d_coords": [-1.0, 1.0, 0.7], "pixel_coords": [220, 200, 12.0]},
        ],
    }


# ---------------------------------------------------------------------- reference data
@dataclass
class Dataset:
    name: str
    ontology: Ontology
    scenes: list[SymbolicScene]
    questions: list[dict]
    programs: list[Program]
    scene_of: list[int]  # position in ``scenes`` of each question's scene


def _load(scenes_path, questions_path, name) -> Dataset:
    scenes, onto = load_scenes(scenes_path)
    qs = load_questions(questions_path)
    lookup = scene_lookup(scenes)
    where = [f"{questions_path.name}, question {i}" for i in range(len(qs))]
    progs = [parse_program(q, onto, w) for q, w in zip(qs, where)]
    return Dataset(name, onto, scenes, qs, progs,
                   [question_scene(q, lookup, w) for q, w in zip(qs, where)])


@pytest.fixture(scope="session")
def clevr_data(reference_dir) -> Dataset:
    d = reference_dir / "clevr"
    return _load(d / "CLEVR_val_scenes_500.json", d / "CLEVR_val_questions_500_official.json", "clevr")


@pytest.fixture(scope="session")
def sc_objects(reference_dir) -> Dataset:
    d = reference_dir / "superclevr"
    return _load(d / "superCLEVR_scenes.json", d / "superCLEVR_questions_official_objects.json", "objects")


@pytest.fixture(scope="session")
def sc_parts(reference_dir) -> Dataset:
    d = reference_dir / "superclevr"
    return _load(d / "superCLEVR_scenes.json", d / "superCLEVR_questions_official_parts.json", "parts")
