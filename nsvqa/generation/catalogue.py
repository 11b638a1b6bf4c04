"""Building the variant catalogue ``nsvqa/generation/data/variants/`` (what ``scripts/build_variants.py`` writes).

The concept-distribution weights and the shape -> color matrices are the figures of the
Super-CLEVR generator (Li et al., CVPR 2023; ``dist/*.npz`` of Lizw14/Super-CLEVR, a copy
committed in ``tests/fixtures/reference/superclevr/dist``): ``orig`` is the long tail (a = 2), ``a1`` the slight one
(a = 1.3), ``co_sub`` / ``co_super`` the co-1 / co-2 matrices. The systematic splits follow Schott et
al. (ICLR 2022): random / interpolation / extrapolation over the number of objects and the camera
distance, composition over shape category x color.

The catalogue's index (``catalogue.json``: :func:`catalogue_index`) holds the factors
(:data:`FACTOR_TABLE`) and the aliases (:data:`ALIASES`); :func:`catalogue` the variants' specs.
Without the generator's npz files the tables are read back from the committed variants
(:class:`Tables`), so a clone rebuilds the catalogue byte for byte. Reading the catalogue is
:mod:`nsvqa.generation.variants`; nothing here is needed for that.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from executors.io import read_json
from nsvqa.generation.variants import VariantError

SOURCE = "Super-CLEVR generator dist/*.npz (Li et al., CVPR 2023; Lizw14/Super-CLEVR, BSD)"
DEFAULT = {"complexity": "mid", "redundancy": "rd"}
OBJECT_COUNTS = list(range(3, 11))
CAMERA_SCALES = [0.8, 0.9, 1.0, 1.1, 1.2, 1.3]


#: Where a clone finds each table when the npz files are absent: the committed variant that holds it.
WEIGHT_VARIANTS = {"a1": "slt", "orig": "long", "head": "head", "tail": "tail", "oppo": "oppo"}
MATRIX_VARIANTS = {"sub": "co-1", "super": "co-2"}
COLORS = ["gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow"]

#: The catalogue's index (nsvqa/generation/data/variants/catalogue.json): the factors, their variants in table order,
#: report titles, RD rules (docs/evaluation.md) and table labels.
CATALOGUE_ABOUT = ("The domain-shift factors: each lists its variants in table order (<name>.json in this folder). "
                   "title: how reports name the factor; rd: how its Relative Degrade is computed "
                   "(docs/evaluation.md): plain, head_tail (with the variants playing each role) or null (none "
                   "defined); labels: a variant's name in this factor's tables; tested_on_itself: each variant is "
                   "its own experiment (train and test on it alone). aliases: variant -> the variant whose "
                   "data are the same bytes with one seed (same scenes and questions): a study trains the "
                   "target once and reads its predictions under both names.")
FACTOR_TABLE = {
    "visual": {"title": "visual complexity", "variants": ["easy", "mid", "hard"], "rd": "plain"},
    "redundancy": {"title": "question redundancy", "variants": ["rd-", "mid", "rd+"], "rd": "plain",
                   "labels": {"mid": "rd (mid)"}},
    "distribution": {"title": "concept distribution", "variants": ["bal", "slt", "long", "head", "tail", "oppo"],
                     "rd": "head_tail",
                     "roles": {"head": "head", "tail": "tail", "long": "long", "oppo": "oppo", "bal": "bal"}},
    "compositionality": {"title": "concept compositionality", "variants": ["co-0", "co-1", "co-2"], "rd": "plain"},
    "systematic": {"title": "systematic splits",
                   "variants": ["sys-random", "sys-composition", "sys-interpolation", "sys-extrapolation"],
                   "rd": None, "tested_on_itself": True},
}
#: Variant -> the variant with the same scene and question parameters (only name and description
#: differ): ``co-0`` is ``mid`` (colors independent of shapes), ``bal`` is ``hard`` (uniform concepts
#: on textured scenes). :func:`catalogue` checks it.
ALIASES = {"co-0": "mid", "bal": "hard"}


class Tables:
    """The generator's concept-distribution tables: from its ``dist/*.npz`` files when ``dist``
    exists, else read back from the committed variants in ``committed`` (what a clone has).

    Raises (on first use of a table):
        VariantError: no ``dist`` folder and no committed variant that holds the table.
    """

    def __init__(self, dist: Path | None, committed: Path):
        self.dist = dist if dist is not None and dist.is_dir() else None
        self.committed = committed

    @property
    def source(self) -> str:
        return str(self.dist) if self.dist else f"the committed variants in {self.committed}"

    def _variant(self, name: str) -> dict:
        path = self.committed / f"{name}.json"
        if not path.is_file():
            raise VariantError(f"no --dist folder and no committed {path} to read the tables from")
        return read_json(path)["scene"]

    def weights(self, attr: str, file_attr: str, kind: str) -> dict[str, float]:
        if self.dist is None:
            return self._variant(WEIGHT_VARIANTS[kind])["weights"][attr]
        d = np.load(self.dist / f"{file_attr}_dist_{kind}.npz", allow_pickle=True)
        return {str(n): round(float(w), 6) for n, w in zip(d["names"], d["dist"])}

    def matrix(self, kind: str) -> dict[str, list[float]]:
        if self.dist is None:
            return self._variant(MATRIX_VARIANTS[kind])["shape_color"]
        d = np.load(self.dist / f"shape_color_co_{kind}.npz", allow_pickle=True)
        names = [str(n) for n in d["names"]]
        shapes, colors = names[:21], names[21:]
        assert colors == COLORS, colors
        return {s: [round(float(x), 6) for x in row] for s, row in zip(shapes, d["dist"])}


def _grid() -> list[tuple[int, float]]:
    return [(n, s) for n in OBJECT_COUNTS for s in CAMERA_SCALES]


def systematic(kind: str) -> dict:
    """Train and test (object count, camera scale) pairs of a systematic split."""
    grid = _grid()
    if kind == "random":  # ~30% of the grid trains, the other ~70% tests, drawn at random
        rng = np.random.default_rng(0)
        held = {grid[k] for k in rng.choice(len(grid), size=round(0.7 * len(grid)), replace=False)}
    elif kind == "interpolation":  # interior values of both factors
        held = {(n, s) for n, s in grid if n in (6, 7) or s == 1.0}
    elif kind == "extrapolation":  # values beyond a threshold on either factor
        held = {(n, s) for n, s in grid if n >= 9 or s >= 1.3}
    else:
        raise ValueError(kind)
    train = [p for p in grid if p not in held]
    test_pairs = sorted(held)
    tr_n, te_n = {n for n, _ in train}, {n for n, _ in test_pairs}
    tr_s, te_s = {s for _, s in train}, {s for _, s in test_pairs}
    return {
        "train": {"joint": [list(p) for p in train]},
        "val": {"joint": [list(p) for p in train]},
        "test": {"joint": [list(p) for p in test_pairs]},
        "ood": {"factors": ["num_objects", "camera_scale"],
                "test_only": {"num_objects": sorted(te_n - tr_n), "camera_scale": sorted(te_s - tr_s),
                              "pairs": [list(p) for p in sorted(set(test_pairs) - set(train))]},
                "train_only": {"num_objects": sorted(tr_n - te_n), "camera_scale": sorted(tr_s - te_s)}},
    }


#: composition: this block of shape category x color combinations never occurs in training.
HELD_CATEGORIES = ["car", "bus"]
HELD_COLORS = ["red", "blue", "green"]


def composition(ontology: dict) -> dict:
    """Train on every (shape, color) pair except a block of category x color; test on the block."""
    colors = ontology["attributes"]["color"]["values"]
    cats = ontology["attributes"]["shape"]["categories"]
    unplaced = set(ontology["attributes"]["shape"].get("unplaced", ()))  # addi: no scene holds one
    train, test = {}, {}
    for cat, shapes in cats.items():
        for s in shapes:
            if s in unplaced:
                continue
            held = cat in HELD_CATEGORIES
            train[s] = [0.0 if held and c in HELD_COLORS else 1.0 for c in colors]
            test[s] = [1.0 if held and c in HELD_COLORS else 0.0 for c in colors]
    pairs = [[cat, c] for cat in HELD_CATEGORIES for c in HELD_COLORS]
    return {"train": {"shape_color": train}, "val": {"shape_color": train}, "test": {"shape_color": test},
            "ood": {"factors": ["shape_category", "color"], "test_only": {"pairs": pairs},
                    "train_only": {"pairs": [[cat, c] for cat in cats for c in colors if [cat, c] not in pairs]}}}


def catalogue(tables: Tables, ontology: dict) -> dict[str, dict]:
    """Every variant's spec, name -> the JSON written to ``<out>/<name>.json``, in the
    catalogue's order; ``tables`` gives the concept weights and matrices, ``ontology`` (the parsed
    ontology JSON) the colors and shape categories of the composition split."""
    v: dict[str, dict] = {}

    def add(name, factor, description, scene=None, questions=None, test_only=False, splits=None, ood=None):
        # the factor a variant belongs to is the catalogue index's (FACTOR_TABLE): the spec holds
        # its scene and question parameters only (factor None: a variant of no factor)
        assert factor is None or name in FACTOR_TABLE[factor]["variants"], (name, factor)
        spec = {"name": name, "description": description,
                "scene": {"complexity": DEFAULT["complexity"], **(scene or {})},
                "questions": {"redundancy": DEFAULT["redundancy"], **(questions or {})},
                "test_only": test_only}
        if splits:
            spec["splits"] = splits
        if ood:
            spec["ood"] = ood
        v[name] = spec

    add("easy", "visual", "whole objects of one color and material")
    v["easy"]["scene"]["complexity"] = "easy"
    add("mid", "visual", "default: up to 3 visible parts per object recoloured (also rd, bal's "
        "untextured counterpart and co-0)")
    add("hard", "visual", "mid plus random textures on objects and parts", {"complexity": "hard"})
    add("rd-", "redundancy", "no redundant attribute or relation in questions", questions={"redundancy": "rd-"})
    add("rd+", "redundancy", "every attribute and relation that holds is added", questions={"redundancy": "rd+"})
    for name, kind, desc, test_only in (
            ("bal", None, "balanced concepts (uniform), on textured scenes", False),
            ("slt", "a1", "slightly long-tailed concepts, d_i ~ 1.3^-i", False),
            ("long", "orig", "long-tailed concepts, d_i ~ 2^-i", False),
            ("head", "head", "test only: the frequent half of each concept, uniform", True),
            ("tail", "tail", "test only: the rare half of each concept, uniform", True),
            ("oppo", "oppo", "test only: the long tail reversed", True)):
        scene = {"complexity": "hard"}
        if kind:
            scene["weights"] = {a: tables.weights(a, f, kind) for a, f in
                                (("shape", "shape"), ("color", "color"), ("material", "mat"))}
            scene["weights_source"] = SOURCE + f", {kind}"
        add(name, "distribution", desc, scene, test_only=test_only)
    add("co-0", "compositionality", "default: colors independent of shapes (= mid)")
    add("co-1", "compositionality", "every shape of a category has a different color distribution",
        {"shape_color": tables.matrix("sub"), "weights_source": SOURCE + ", co_sub"})
    add("co-2", "compositionality", "shapes of one category share a color distribution, categories differ",
        {"shape_color": tables.matrix("super"), "weights_source": SOURCE + ", co_super"})
    for kind, desc in (("random", "random ~70% of the (object count, camera scale) grid held out"),
                       ("composition", "held out: cars and buses in red, blue or green (every category "
                                       "and color still seen in training)"),
                       ("interpolation", "held out: interior object counts (6, 7) and camera scale 1.0"),
                       ("extrapolation", "held out: object counts >= 9 or camera scale >= 1.3")):
        s = composition(ontology) if kind == "composition" else systematic(kind)
        add(f"sys-{kind}", "systematic", desc, splits={k: s[k] for k in ("train", "val", "test")}, ood=s["ood"])
    add("mid-v2", None, "mid drawn in render look v2, matched to the official renders: official vehicle sizes, "
        "CLEVR's camera, dimmer lights and metal (nsvqa.generation.looks; no factor)", {"look": "v2"})
    for alias, target in ALIASES.items():  # same scenes and questions with one seed: the same bytes
        assert {k: x for k, x in v[alias].items() if k not in ("name", "description")} == \
               {k: x for k, x in v[target].items() if k not in ("name", "description")}, (alias, target)
    return v


def catalogue_index() -> dict[str, Any]:
    """The catalogue's index as written to ``catalogue.json`` beside the variants (read back by
    :func:`nsvqa.generation.variants.factors` and :func:`~nsvqa.generation.variants.aliases`)."""
    return {"about": CATALOGUE_ABOUT, "factors": FACTOR_TABLE, "aliases": ALIASES}
