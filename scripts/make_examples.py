"""Write the bundled example ``data/examples/{scenes,questions}.json``.

Three small Super-CLEVR-style scenes (3-5 vehicles with a few differently coloured parts) and
questions that touch every kind of program step: count and exist, queries, category filters,
relations, ``same_color``, comparisons, union/intersect and the part functions. The scene and the
question text are written here by hand; everything derived is computed, never typed in:

* ``relationships`` from ``3d_coords`` and ``directions`` with the 0.2 margin rule
  (:meth:`executors.SymbolicScene.relation_lists`);
* ``pixel_coords`` by a simple projection along the camera directions;
* every ``answer`` by :class:`executors.DeterministicExecutor` on the program.

One question carries a deliberately malformed program (a ``filter_color`` node with empty
``value_inputs``, the known defect of the official generator); its answer is what the question
asks for, computed from the intended program. The output is deterministic; regenerate with::

    python scripts/make_examples.py            # writes data/examples/
    python scripts/make_examples.py --check    # exit 1 if the checked-in files differ
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from executors import DeterministicExecutor, Program, SymbolicScene, load_ontology
from nsvqa.fileio import write_atomic
from nsvqa.config import HelpFormatter, parse_checked

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "data" / "examples"
SPLIT = "example"
MALFORMED_NOTE = "malformed on purpose: shows the InvalidProgram error"

# Ground height of an object's centre by size (Super-CLEVR scales: large 3.5, small 1.8 units of
# a 0.1 m model; these only need to look plausible, relations use the x-y plane).
HEIGHT = {"large": 0.45, "small": 0.23}

# (camera angle in degrees, objects). Each object: shape, color, material, size, (x, y) on the
# ground, rotation in degrees, and up to 3 parts whose attributes differ from the object's.
SCENES: list[tuple[float, list[dict[str, Any]]]] = [
    (41.0, [
        dict(shape="school", color="yellow", material="metal", size="large", xy=(-2.0, 1.5), rotation=212.0,
             parts={"door_mid_left": {"color": "red"},
                    "wheel_front_left": {"color": "blue", "material": "rubber"}}),
        dict(shape="suv", color="red", material="rubber", size="small", xy=(1.2, -0.8), rotation=75.5,
             parts={"hood": {"color": "blue", "material": "metal"},
                    "front_left_wheel": {"color": "yellow"}}),
        dict(shape="tandem", color="blue", material="metal", size="small", xy=(2.5, 2.2), rotation=318.0,
             parts={"wheel_front": {"color": "red", "material": "rubber"},
                    "fork": {"color": "gray"}}),
        dict(shape="sedan", color="gray", material="metal", size="large", xy=(-1.0, -2.4), rotation=140.25,
             parts={"roof": {"color": "cyan", "material": "rubber"},
                    "front_right_door": {"color": "red"}}),
    ]),
    (-25.0, [
        dict(shape="fighter", color="green", material="metal", size="large", xy=(-1.6, -1.1), rotation=27.0,
             parts={"wing_left": {"color": "purple"},
                    "engine_right": {"color": "gray", "material": "rubber"}}),
        dict(shape="chopper", color="purple", material="rubber", size="small", xy=(1.9, 0.4), rotation=263.5,
             parts={"gas_tank": {"color": "yellow", "material": "metal"},
                    "wheel_back": {"color": "gray"},
                    "exhaust_right_s": {"color": "cyan", "material": "metal"}}),
        dict(shape="truck", color="green", material="rubber", size="large", xy=(0.3, 2.6), rotation=101.0,
             parts={"front_left_door": {"color": "brown"},
                    "trunk": {"color": "purple", "material": "metal"}}),
    ]),
    (120.0, [
        dict(shape="articulated", color="brown", material="rubber", size="large", xy=(-2.4, 0.2), rotation=5.0,
             parts={"door_front_right": {"color": "cyan"},
                    "roof": {"color": "yellow", "material": "metal"}}),
        dict(shape="wagon", color="cyan", material="metal", size="small", xy=(1.5, 1.8), rotation=190.0,
             parts={"back_left_door": {"color": "red", "material": "rubber"}}),
        dict(shape="mountain", color="red", material="metal", size="small", xy=(0.6, -1.7), rotation=286.0,
             parts={"saddle": {"color": "brown", "material": "rubber"},
                    "wheel_front": {"color": "gray", "material": "rubber"},
                    "wheel_back": {"color": "gray", "material": "rubber"}}),
        dict(shape="biplane", color="blue", material="rubber", size="large", xy=(2.7, -0.9), rotation=45.0,
             parts={"propeller": {"color": "yellow", "material": "metal"},
                    "wing_left": {"color": "red"},
                    "wheel_front": {"color": "gray"}}),
        dict(shape="scooter", color="yellow", material="metal", size="small", xy=(-0.7, 2.9), rotation=150.0,
             parts={"seat": {"color": "brown", "material": "rubber"},
                    "cover_front": {"color": "blue"}}),
    ]),
]

# (scene, question, program in prefix tokens, note). Prefix form: each function is followed by
# its inputs; "f[v]" carries value v. The malformed one is written valid and then broken.
QUESTIONS: list[tuple[int, str, str, str | None]] = [
    (0, "How many cars are there?",
     "count filter_shape[car] scene", None),
    (0, "What is the shape of the large yellow metal vehicle?",
     "query_shape unique filter_material[metal] filter_color[yellow] filter_size[large] scene", None),
    (0, "How many things are to the right of the school bus?",
     "count relate[right] unique filter_shape[school] scene", None),
    (0, "What color is the wheel of the tandem bike?",
     "partquery_color unique partfilter_partname[wheel] object2part unique filter_shape[tandem] scene", None),
    (0, "Which part of the suv is blue?",
     "partquery_partname unique partfilter_color[blue] object2part unique filter_shape[suv] scene", None),
    (0, "How many objects have a red door?",
     "count part2object partfilter_partname[door] partfilter_color[red] object2part scene", None),
    (1, "Is there a purple object?",
     "exist filter_color[purple] scene", None),
    (1, "What color is the chopper?",
     "query_color unique filter_shape[chopper] scene", None),
    (1, "How many other things have the same color as the fighter?",
     "count same_color unique filter_shape[fighter] scene", None),
    (1, "Are there more rubber things than metal things?",
     "greater_than count filter_material[rubber] scene count filter_material[metal] scene", None),
    (1, "How many green things are there?",
     "count filter_color[green] scene", MALFORMED_NOTE),
    (2, "Are there as many buses as bicycles?",
     "equal_integer count filter_shape[bus] scene count filter_shape[bicycle] scene", None),
    (2, "How many things are red or large?",
     "count union filter_color[red] scene filter_size[large] scene", None),
    (2, "How many objects are both left of the scooter and behind the wagon?",
     "count intersect relate[left] unique filter_shape[scooter] scene "
     "relate[behind] unique filter_shape[wagon] scene", None),
]


def image_filename(index: int) -> str:
    return f"{SPLIT}_{index:06d}.png"


def directions(angle_deg: float) -> dict[str, list[float]]:
    """Unit camera directions on the ground plane, as in the release scene files."""
    a = math.radians(angle_deg)
    right = (round(math.cos(a), 6), round(math.sin(a), 6), 0.0)
    behind = (-right[1], right[0], 0.0)
    neg = lambda v: [-x + 0.0 for x in v]  # noqa: E731  (+0.0 turns -0.0 into 0.0)
    return {"right": list(right), "left": neg(right), "behind": list(behind), "front": neg(behind),
            "above": [0.0, 0.0, 1.0], "below": [0.0, 0.0, -1.0]}


def build_scene(index: int, angle: float, objects: list[dict[str, Any]], onto) -> dict:
    dirs = directions(angle)
    objs = []
    for o in objects:
        x, y = o["xy"]
        c = [x, y, HEIGHT[o["size"]]]
        r = sum(a * b for a, b in zip(c, dirs["right"]))
        f = sum(a * b for a, b in zip(c, dirs["front"]))
        parts = {}
        for name, diff in o["parts"].items():
            pa = {"color": o["color"], "material": o["material"], "size": o["size"], **diff}
            if all(pa[k] == o[k] for k in pa):
                raise ValueError(f"scene {index}, {o['shape']}: part {name!r} does not differ from its object")
            parts[name] = pa
        objs.append({
            "shape": o["shape"], "color": o["color"], "material": o["material"], "size": o["size"],
            "rotation": o["rotation"], "3d_coords": [round(v, 4) for v in c],
            # camera in front of the scene: right -> larger x, front (closer) -> larger y, less depth
            "pixel_coords": [int(round(320 + 52 * r)), int(round(245 + 34 * f)), round(11.0 - f, 4)],
            "parts": parts,
        })
    scene = {"image_index": index, "image_filename": image_filename(index), "split": SPLIT,
             "directions": dirs, "objects": objs}
    sym = SymbolicScene.from_json(scene, onto, where=f"example scene {index}")  # validates too
    scene["relationships"] = sym.relation_lists()
    return scene


def build_question(qi: int, scene_index: int, text: str, prefix: str, note: str | None,
                   scene: SymbolicScene, executor: DeterministicExecutor) -> dict:
    program = Program.from_prefix(prefix.split())
    answer = executor.run(program, scene, trace=False).answer
    nodes = program.to_json()
    q: dict[str, Any] = {"question_index": qi, "image_index": scene_index,
                         "image_filename": image_filename(scene_index), "split": SPLIT,
                         "question": text, "program": nodes, "answer": answer}
    if note is not None:
        # the known defect of the official generator: a filter whose value went missing
        for n in nodes:
            if n["type"].startswith("filter_"):
                n["value_inputs"] = []
                break
        q["note"] = note
    return q


def build() -> tuple[dict, dict]:
    """The scenes and questions documents."""
    onto = load_ontology("superclevr")
    scenes = [build_scene(i, angle, objs, onto) for i, (angle, objs) in enumerate(SCENES)]
    symbolic = [SymbolicScene.from_json(s, onto, where=f"example scene {i}") for i, s in enumerate(scenes)]
    ex = DeterministicExecutor(onto)
    questions = [build_question(qi, si, text, prefix, note, symbolic[si], ex)
                 for qi, (si, text, prefix, note) in enumerate(QUESTIONS)]
    info = {"split": SPLIT, "version": "1.0", "generator": "scripts/make_examples.py",
            "description": "hand-written Super-CLEVR-style example for the executors demo and tests"}
    return {"info": info, "scenes": scenes}, {"info": info, "questions": questions}


def dumps(doc: Any) -> str:
    """JSON with two-space indentation that keeps lists of scalars and flat objects (a part's
    attributes, a program node) on one line, so the files stay short and diff well."""
    return _dumps(doc, "") + "\n"


def _flat(x: Any) -> bool:
    if isinstance(x, list):  # scalars, or lists of scalars (a relation's per-object lists)
        return all(not isinstance(v, dict) and (not isinstance(v, list) or _flat(v)) for v in x)
    if isinstance(x, dict):
        return all(not isinstance(v, dict) and (not isinstance(v, list) or _flat(v)) for v in x.values())
    return True


def _dumps(x: Any, pad: str) -> str:
    if _flat(x) and (not isinstance(x, dict) or len(x) <= 4):
        return json.dumps(x)
    inner = pad + "  "
    if isinstance(x, list):
        return "[\n" + ",\n".join(inner + _dumps(v, inner) for v in x) + "\n" + pad + "]"
    items = [f"{inner}{json.dumps(k)}: {_dumps(v, inner)}" for k, v in x.items()]
    return "{\n" + ",\n".join(items) + "\n" + pad + "}"


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description="Write the bundled example scenes and questions.")
    p.add_argument("--out-dir", type=Path, default=DEFAULT_OUT, help="output folder (default: data/examples)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if the files in --out-dir differ from what would be written")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out_dir")
    scenes, questions = build()
    files = {args.out_dir / "scenes.json": dumps(scenes), args.out_dir / "questions.json": dumps(questions)}
    if args.check:
        stale = [str(p) for p, text in files.items() if not p.is_file() or p.read_text() != text]
        for p in stale:
            print(f"out of date: {p} (run scripts/make_examples.py)", file=sys.stderr)
        return 1 if stale else 0
    for p, text in files.items():
        write_atomic(p, text)
        print(f"wrote {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
