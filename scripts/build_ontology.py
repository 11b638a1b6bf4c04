"""Write ``executors/data/ontologies/{clevr,superclevr}.json`` from the facts of the reference releases.

The Super-CLEVR ontology is read from the generator's property and part files
(``properties_cgpart.json``, ``part_dict.json``) and, where present, cross-checked against the
question generator's ``metadata_part.json``; the CLEVR one from the CLEVR v1.0 facts
(Johnson et al. 2017). The output is checked in; this script documents where it came from and
regenerates it when the reference files change (a copy of those files is committed in
tests/fixtures/reference/superclevr, see tests/fixtures/README.md; the checked-in output is all a user needs)::

    python scripts/build_ontology.py --superclevr tests/fixtures/reference/superclevr --out executors/data/ontologies
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from nsvqa.fileio import write_json_atomic
from nsvqa.config import HelpFormatter, parse_checked

# CLEVR v1.0 (Johnson et al., 2017): three shapes, eight colors, two materials, two sizes.
CLEVR_COLORS = {
    "gray": [87, 87, 87], "red": [173, 35, 35], "blue": [42, 75, 215], "green": [29, 105, 20],
    "brown": [129, 74, 25], "purple": [129, 38, 192], "cyan": [41, 208, 208],
    "yellow": [255, 238, 51],
}
RELATIONS = ["left", "right", "front", "behind"]
# Words that name a position on a vehicle; spoken part names put them first ("wheel_front_left"
# -> "front left wheel") and generic part filters drop them ("wheel").
DIRECTION_WORDS = ["front", "back", "left", "right", "mid", "center"]
# Answer names of Super-CLEVR shapes whose spoken form differs from the key (docs/executors.md; the
# question generator's ``metadata_part.json`` "Shapename").
SUPERCLEVR_SPOKEN_SHAPES = {
    "addi": "regular car",
    "articulated": "articulated bus", "regular": "regular bus", "double": "double bus",
    "school": "school bus", "road": "road bike", "utility": "utility bike",
    "mountain": "mountain bike", "tandem": "tandem bike",
}
# The column order of every per-shape array (likelihoods, attribute heads, sampling weights).
# ``addi`` ("regular car") is last although the generator lists it after ``truck``: it is the one
# shape the question generator knows (``metadata_part.json``, ``properties_cgpart.json``'s
# ``info_hier``) but the image generator never places (``part_dict.json`` has no entry for it),
# so no scene holds one. Keeping it last leaves the 21 placed shapes at the columns they had
# before it was added, and 21-column tables read as the first 21 columns.
SUPERCLEVR_SHAPE_ORDER = [
    "suv", "wagon", "minivan", "sedan", "truck",
    "articulated", "regular", "double", "school",
    "chopper", "dirtbike", "scooter", "cruiser",
    "jet", "fighter", "biplane", "airliner",
    "road", "utility", "mountain", "tandem",
    "addi",
]


def spoken_part_name(name: str) -> str:
    """``front_left_wheel``/``wheel_front_left`` -> "front left wheel"; ``exhaust_left_s`` -> "left exhaust"."""
    tokens = name.split("_")
    if tokens[-1] == "s":
        tokens = tokens[:-1]
    directions = [t for t in tokens if t in DIRECTION_WORDS]
    rest = [t for t in tokens if t not in DIRECTION_WORDS]
    return " ".join(directions + rest)


def generic_part_name(name: str) -> str:
    """The part noun without position words: ``wheel_front_left`` -> ``wheel``."""
    tokens = [t for t in name.split("_") if t not in DIRECTION_WORDS and t != "s" and not t.isdigit()]
    return "_".join(tokens)


def clevr_ontology() -> dict:
    return {
        "name": "clevr",
        "info": {"source": "CLEVR v1.0 (Johnson et al., CVPR 2017), CC-BY 4.0"},
        "attributes": {
            "shape": {"values": ["cube", "sphere", "cylinder"]},
            "color": {"values": list(CLEVR_COLORS), "rgb": CLEVR_COLORS},
            "material": {"values": ["rubber", "metal"]},
            "size": {"values": ["large", "small"], "scale": {"large": 0.7, "small": 0.35}},
        },
        "relations": RELATIONS,
        "relation_margin": 0.2,
    }


def superclevr_ontology(reference: Path) -> dict:
    props = json.loads((reference / "properties_cgpart.json").read_text())
    part_dict = json.loads((reference / "part_dict.json").read_text())
    # The shape hierarchy is the question generator's: every shape it can name, with the shapes
    # the image generator never places (no part list) still in their category.
    hier = {cat: list(shapes) for cat, shapes in props["info_hier"].items()}
    known = {s for shapes in hier.values() for s in shapes}
    shapes = [s for s in SUPERCLEVR_SHAPE_ORDER if s in known]
    assert sorted(shapes) == sorted(known), "shape list out of date with properties_cgpart.json info_hier"
    assert set(part_dict) <= known, "part_dict.json names shapes info_hier lacks"
    unplaced = [s for s in shapes if s not in part_dict]
    metadata = reference / "metadata_part.json"
    if metadata.exists():  # the question generator's own copy of the hierarchy and spoken names
        types = json.loads(metadata.read_text())["types"]
        assert {c: list(v) for c, v in types["Shape"].items()} == hier, "metadata_part.json hierarchy differs"
        assert all(types["Shapename"][s] == SUPERCLEVR_SPOKEN_SHAPES.get(s, s) for s in shapes), \
            "metadata_part.json spoken shape names differ"
    textures = ["none" if t == "None" else t for t in props["textures"]]
    all_parts = sorted({p for names in part_dict.values() for p in names})
    generic = sorted({generic_part_name(p) for p in all_parts} - set(all_parts))
    return {
        "name": "superclevr",
        "info": {"source": "Super-CLEVR generator (Li et al., CVPR 2023; Lizw14/Super-CLEVR, BSD): "
                           "properties_cgpart.json, part_dict.json and metadata_part.json"},
        "attributes": {
            "shape": {
                "values": shapes,
                "categories": hier,
                "spoken": {s: SUPERCLEVR_SPOKEN_SHAPES.get(s, s) for s in shapes},
                # named by questions, never placed in a scene (no model, no parts)
                "unplaced": unplaced,
            },
            "color": {"values": list(props["colors"]), "rgb": props["colors"]},
            "material": {"values": list(props["materials"])},
            "size": {"values": list(props["sizes"]), "scale": props["sizes"]},
            "texture": {"values": textures, "aliases": {"None": "none"}},
        },
        "relations": RELATIONS,
        "relation_margin": 0.2,
        "parts": {
            "per_shape": {s: part_dict[s] for s in shapes if s in part_dict},
            "spoken": {p: spoken_part_name(p) for p in all_parts},
            # A partname filter value matches every part whose name contains it (docs/executors.md):
            # a full name ("wheel_front") or a generic noun ("wheel") -> the names it keeps.
            "filters": {v: sorted(p for p in all_parts if v in p) for v in sorted(set(all_parts) | set(generic))},
            "direction_words": DIRECTION_WORDS,
            "part_attributes": ["color", "material", "size", "texture"],
        },
    }


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--superclevr", type=Path, default=Path("tests/fixtures/reference/superclevr"),
                   help="folder of the Super-CLEVR generator's properties_cgpart.json, part_dict.json and "
                        "metadata_part.json (default: tests/fixtures/reference/superclevr, the committed copy)")
    p.add_argument("--out", type=Path, default=Path("executors/data/ontologies"),
                   help="folder of the ontology JSON files to write")
    return p


def main(argv: list[str] | None = None) -> None:
    args = parse_checked(get_args_parser(), argv, "out")
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "clevr.json", clevr_ontology(), indent=1)
    write_json_atomic(args.out / "superclevr.json", superclevr_ontology(args.superclevr), indent=1)
    print(f"wrote {args.out}/clevr.json and {args.out}/superclevr.json")


if __name__ == "__main__":
    main()
