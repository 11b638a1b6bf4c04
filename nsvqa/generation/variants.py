"""The variant catalogue: one frozen spec per name in
``nsvqa/generation/data/variants/<name>.json``.

A spec names its domain-shift factor, the scene parameters (visual complexity, concept weights,
shape -> color matrix), the question redundancy level, optional per-split overrides (the
systematic splits train and test on different factor values) and, for those, which factor values
are train-only and test-only (``ood``), so the evaluator can score ID and OOD concepts apart.
:mod:`nsvqa.generation.catalogue` builds the catalogue and cites where its figures come from
(``scripts/build_variants.py`` writes it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from executors.errors import FormatError
from executors.io import read_json
from executors import Ontology

from nsvqa.generation.looks import DEFAULT_LOOK
from nsvqa.generation.sampler import COMPLEXITIES, ConceptWeights, SceneParams

#: The built-in catalogue: ``nsvqa/generation/data/variants/*.json``, shipped inside the package and
#: found through :mod:`importlib.resources` (after any install).
VARIANT_DIR = Path(resources.files(__package__) / "data" / "variants")
REDUNDANCY = ("rd-", "rd", "rd+")
SPLITS = ("train", "val", "test")

#: The catalogue's index in the variant folder: the factors, their variants in table order, how
#: reports name them and how their RD is computed, and the aliases (variants with the same data).
#: The one source of which variant belongs to which factor (a variant's JSON holds its scene and
#: question parameters only).
CATALOGUE = "catalogue.json"
RD_RULES = ("plain", "head_tail", None)


@dataclass(frozen=True)
class Factor:
    """One domain-shift factor of the catalogue (``nsvqa/generation/data/variants/catalogue.json``).

    Attributes:
        name, title: the factor's key and how reports name it.
        variants: its variants in table order (the test-only ones included).
        rd: how its Relative Degrade is computed: ``plain``, ``head_tail`` (the concept-distribution
            rule; ``roles`` names the head, tail, long, oppo and bal variants) or None (not defined).
        labels: a variant's name in this factor's tables (``mid`` is ``rd (mid)`` in redundancy's).
        tested_on_itself: each variant is its own experiment, trained and tested on itself alone.
    """

    name: str
    title: str
    variants: tuple[str, ...]
    rd: str | None = "plain"
    roles: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    tested_on_itself: bool = False


_CACHE: dict[tuple[str, int], tuple[dict[str, Factor], dict[str, str]]] = {}


def _index() -> tuple[dict[str, Factor], dict[str, str]]:
    """(factors, aliases) of ``variant_dir()/catalogue.json``, read again when the file changes.

    Raises:
        VariantError: a missing or malformed catalogue (the file and field named).
    """
    path = variant_dir() / CATALOGUE
    try:
        key = (str(path), path.stat().st_mtime_ns)
    except OSError:
        raise VariantError(f"{path}: the variant catalogue's index is missing") from None
    if key not in _CACHE:
        try:
            index = read_json(path)
            out = {}
            for name, f in index["factors"].items():
                where = f"{path}, factor {name!r}"
                fac = Factor(name, str(f.get("title", name)), tuple(str(v) for v in f["variants"]), f.get("rd", "plain"),
                             dict(f.get("roles", {})), dict(f.get("labels", {})), bool(f.get("tested_on_itself", False)))
                if fac.rd not in RD_RULES:
                    raise VariantError(f"{where}, field 'rd': {fac.rd!r} not in {RD_RULES}")
                if fac.rd == "head_tail" and set(fac.roles) != {"head", "tail", "long", "oppo", "bal"}:
                    raise VariantError(f"{where}, field 'roles': the head_tail rule needs the variants of "
                                       f"head, tail, long, oppo and bal")
                out[name] = fac
            aliases = {str(a): str(t) for a, t in index.get("aliases", {}).items()}
        except FormatError as e:  # strict JSON (executors.io.read_json): the file and the record named
            raise VariantError(str(e)) from None
        except (KeyError, TypeError, AttributeError) as e:
            raise VariantError(f"{path}: missing or bad field {e}") from None
        _CACHE.clear()
        _CACHE[key] = (out, aliases)
    return _CACHE[key]


def factors() -> dict[str, Factor]:
    """The catalogue's factors, in its order (read from ``variant_dir()/catalogue.json``, again
    when the file changes).

    Raises:
        VariantError: a missing or malformed catalogue (the file and field named).
    """
    return _index()[0]


def aliases() -> dict[str, str]:
    """The catalogue's aliases: variant -> the variant whose data are the same bytes with one seed
    (the same scene and question parameters; ``co-0`` -> ``mid``, ``bal`` -> ``hard``), in its
    order. A study trains the target once and reads its predictions under both names.

    Raises:
        VariantError: a missing or malformed catalogue (the file and field named).
    """
    return dict(_index()[1])


def get_factor(name: str) -> Factor:
    """The factor ``name`` of the catalogue.

    Raises:
        KeyError: an unknown factor (the valid ones listed).
    """
    fs = factors()
    if name not in fs:
        raise KeyError(f"unknown factor {name!r}; valid: {list(fs)}")
    return fs[name]


class _FactorVariants(Mapping):
    """Factor -> its variants, read from the catalogue on each use (:func:`factors`)."""

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return factors()[name].variants

    def __iter__(self):
        return iter(factors())

    def __len__(self) -> int:
        return len(factors())

    def __repr__(self) -> str:
        return f"FACTORS({dict(self)!r})"


#: Domain-shift factor -> its variants in table order (the default one included: ``mid`` is the rd
#: level of question redundancy), as the catalogue's index lists them. Test-only variants (head,
#: tail, oppo) are marked in their specs.
FACTORS: Mapping[str, tuple[str, ...]] = _FactorVariants()


def primary_factor(variant: str) -> str:
    """The first factor of the catalogue that lists ``variant`` ("" when none does)."""
    return next((f.name for f in factors().values() if variant in f.variants), "")


#: The fields of a variant's spec that decide its scenes and images (with one seed); the others
#: (name, description, questions) do not.
SCENE_KEYS = ("scene", "splits", "test_only", "ood")


class VariantError(ValueError):
    """A malformed or unknown variant spec (the message names the file and the field)."""


@dataclass(frozen=True)
class Variant:
    """One named domain variant.

    Attributes:
        name, factor, description: identification (factor: visual, redundancy, distribution,
            compositionality or systematic).
        scene: scene parameters shared by every split.
        redundancy: question redundancy level (rd-, rd, rd+).
        test_only: only a test split exists (head, tail, oppo).
        splits: split -> scene parameter overrides.
        ood: factor values that occur only in training / only in testing.
        source: the file the spec was read from.
    """

    name: str
    factor: str
    description: str
    scene: Mapping[str, Any]
    redundancy: str = "rd"
    test_only: bool = False
    splits: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    ood: Mapping[str, Any] | None = None
    source: str = "<dict>"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "<dict>") -> "Variant":
        try:
            red = d.get("questions", {}).get("redundancy", "rd")
            factor = str(d["factor"]) if "factor" in d else primary_factor(str(d["name"]))
            v = cls(str(d["name"]), factor, str(d.get("description", "")), dict(d["scene"]),
                    red, bool(d.get("test_only", False)), dict(d.get("splits", {})), d.get("ood"), source)
        except (KeyError, TypeError, AttributeError) as e:
            raise VariantError(f"{source}: missing or bad field {e}") from None
        if red not in REDUNDANCY:
            raise VariantError(f"{source}, field 'questions.redundancy': {red!r} not in {REDUNDANCY}")
        if v.scene.get("complexity", "mid") not in COMPLEXITIES:
            raise VariantError(f"{source}, field 'scene.complexity': {v.scene.get('complexity')!r} "
                               f"not in {COMPLEXITIES}")
        bad = set(v.splits) - set(SPLITS)
        if bad:
            raise VariantError(f"{source}, field 'splits': unknown split(s) {sorted(bad)}; valid: {SPLITS}")
        return v

    @property
    def available_splits(self) -> tuple[str, ...]:
        return ("test",) if self.test_only else SPLITS

    def spec(self) -> dict:
        """The spec as JSON (what the manifest records)."""
        out = {"name": self.name, "factor": self.factor, "description": self.description,
               "scene": dict(self.scene), "questions": {"redundancy": self.redundancy},
               "test_only": self.test_only}
        if self.splits:
            out["splits"] = {k: dict(v) for k, v in self.splits.items()}
        if self.ood is not None:
            out["ood"] = self.ood
        return out

    def same_scenes(self, other: "Variant") -> bool:
        """Whether ``other`` generates the same scenes and images as this variant with one seed: the
        same scene parameters, split overrides, held-out values and splits; only the questions may
        differ (``rd-`` / ``rd+`` and ``mid``). A scene parser trained on one serves the other."""
        mine, theirs = self.spec(), other.spec()
        return all(mine.get(k) == theirs.get(k) for k in SCENE_KEYS)

    def scene_params(self, split: str, onto: Ontology) -> SceneParams:
        """Scene parameters of ``split`` (the shared ones with the split's overrides).

        Raises:
            VariantError: a split the variant does not have, or a bad weight table.
        """
        if split not in self.available_splits:
            raise VariantError(f"variant {self.name!r} has no {split!r} split (only {self.available_splits})")
        s = {**self.scene, **self.splits.get(split, {})}
        w = s.get("weights", {})
        weights = ConceptWeights(
            shape=_vector(w.get("shape"), onto.scene_values("shape"), f"{self.source}, field 'scene.weights.shape'"),
            color=_vector(w.get("color"), onto.values("color"), f"{self.source}, field 'scene.weights.color'"),
            material=_vector(w.get("material"), onto.values("material"),
                             f"{self.source}, field 'scene.weights.material'"),
            shape_color=_matrix(s.get("shape_color"), onto, f"{self.source}, field 'shape_color'"))
        try:
            weights.validated(onto)
            joint = tuple((int(n), float(c)) for n, c in s["joint"]) if s.get("joint") else None
            return SceneParams(complexity=s.get("complexity", "mid"), weights=weights, joint=joint,
                               look=str(s.get("look", DEFAULT_LOOK)))
        except (ValueError, TypeError) as e:
            raise VariantError(f"{self.source}, split {split!r}: {e}") from None


def _vector(table: Mapping[str, float] | None, names: tuple[str, ...], where: str) -> np.ndarray | None:
    if table is None:
        return None
    if not isinstance(table, Mapping) or set(table) != set(names):
        raise VariantError(f"{where}: expected a weight for each of {list(names)}")
    return np.array([float(table[n]) for n in names])


def _matrix(table: Mapping[str, list] | None, onto: Ontology, where: str) -> np.ndarray | None:
    if table is None:
        return None
    shapes = onto.scene_values("shape")  # the placed shapes (no row for Super-CLEVR's addi)
    if not isinstance(table, Mapping) or set(table) != set(shapes):
        raise VariantError(f"{where}: expected a row for each of the {len(shapes)} shapes")
    m = np.array([table[s] for s in shapes], dtype=float)
    if m.shape != (len(shapes), len(onto.values("color"))):
        raise VariantError(f"{where}: expected {len(onto.values('color'))} color weights per shape")
    return m


def variant_dir() -> Path:
    """``$NSVQA_VARIANT_DIR``, else the built-in catalogue (:data:`VARIANT_DIR`)."""
    if "NSVQA_VARIANT_DIR" in os.environ:
        return Path(os.environ["NSVQA_VARIANT_DIR"])
    return VARIANT_DIR


def list_variants() -> list[str]:
    """Names of the catalogue's variants."""
    return sorted(p.stem for p in variant_dir().glob("*.json") if p.name != CATALOGUE)


def load_variant(name_or_path: str | os.PathLike) -> Variant:
    """A variant by catalogue name (``long``, ``rd+``, ``sys-composition``...) or JSON path.

    Raises:
        VariantError: unknown name (the valid ones are listed) or a malformed file.
    """
    p = Path(name_or_path)
    if p.suffix != ".json":
        p = variant_dir() / f"{name_or_path}.json"
        if not p.exists() or p.name == CATALOGUE:
            raise VariantError(f"unknown variant {str(name_or_path)!r}; valid: {list_variants()}")
    try:
        data = read_json(p)
    except FormatError as e:  # strict JSON (executors.io.read_json): the file and the record named
        raise VariantError(str(e)) from None
    return Variant.from_dict(data, source=str(p))
