"""Attribute vocabularies, the shape hierarchy and part lists of a dataset.

An :class:`Ontology` is loaded from ``executors/data/ontologies/<name>.json`` (see
``scripts/build_ontology.py`` for where the facts come from) or from any JSON file or dict of the
same schema. It answers three kinds of questions for the executors and validators:

* which values an attribute takes, in a fixed order (the column order of likelihood arrays),
  and which of them objects of a scene can take (:meth:`Ontology.scene_values`: Super-CLEVR's
  question generator knows a 22nd shape, ``addi`` "regular car", that its image generator never
  places, so questions may name it and no scene holds one);
* which concrete values a filter value keeps (a Super-CLEVR category such as ``car`` keeps every
  car; a generic part name such as ``wheel`` keeps every wheel);
* how a value is spoken in an answer (``articulated`` -> "articulated bus",
  ``wheel_front_left`` -> "front left wheel").
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable, Mapping

from .strict_json import read_json
from .errors import FormatError

#: Attributes in their canonical order; an ontology uses the ones it defines.
ATTRIBUTE_ORDER = ("shape", "color", "material", "size", "texture")

#: Where the built-in ontologies ship inside this package (``executors/data/ontologies/<name>.json``),
#: read through :mod:`importlib.resources`: found after any install and in a copy of ``executors/``.
_BUILTIN = ("data", "ontologies")


@dataclass(frozen=True)
class Ontology:
    """Vocabularies of one dataset.

    Args:
        name: short name (``"clevr"``, ``"superclevr"``).
        attributes: attribute -> ordered tuple of canonical values.
        categories: shape category -> tuple of shapes (empty for CLEVR).
        spoken: attribute -> {value: answer string} where the answer differs from the value.
        aliases: attribute -> {alternative spelling: canonical value} accepted on input.
        relations: spatial relation names.
        relation_margin: minimum projected distance for a relation between 3D positions.
        parts_per_shape: shape -> ordered part names (the order defines part ids ``"<obj>_<k>"``).
        part_spoken: part name -> spoken form.
        partname_filters: filter value (full or generic part name) -> part names it keeps.
        part_attributes: attributes a part carries.
        rgb: color -> (r, g, b) in 0..255, as rendered.
        unplaced: attribute -> values that questions may name but no generated or released scene
            holds (Super-CLEVR: shape ``addi``, which has no model and no parts). They keep their
            column in every per-value array (always probability 0 in a parsed scene); what is
            sampled, rendered, detected or predicted per object uses :meth:`scene_values`.
    """

    name: str
    attributes: Mapping[str, tuple[str, ...]]
    categories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    spoken: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    aliases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    relations: tuple[str, ...] = ("left", "right", "front", "behind")
    relation_margin: float = 0.2
    parts_per_shape: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    part_spoken: Mapping[str, str] = field(default_factory=dict)
    partname_filters: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    part_attributes: tuple[str, ...] = ()
    rgb: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    unplaced: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, d: Mapping, source: str = "<dict>") -> "Ontology":
        """Build from the JSON schema of ``executors/data/ontologies/*.json``; errors name ``source``."""
        try:
            attrs = d["attributes"]
            attributes = {a: tuple(attrs[a]["values"]) for a in ATTRIBUTE_ORDER if a in attrs}
            shape = attrs.get("shape", {})
            parts = d.get("parts", {})
            spoken = {a: dict(attrs[a].get("spoken", {})) for a in attributes}
            aliases = {a: dict(attrs[a].get("aliases", {})) for a in attributes}
            return cls(
                name=str(d["name"]),
                attributes=attributes,
                categories={c: tuple(v) for c, v in shape.get("categories", {}).items()},
                spoken=spoken,
                aliases=aliases,
                relations=tuple(d.get("relations", ("left", "right", "front", "behind"))),
                relation_margin=float(d.get("relation_margin", 0.2)),
                parts_per_shape={s: tuple(v) for s, v in parts.get("per_shape", {}).items()},
                part_spoken=dict(parts.get("spoken", {})),
                partname_filters={k: tuple(v) for k, v in parts.get("filters", {}).items()},
                part_attributes=tuple(parts.get("part_attributes", ())),
                rgb={c: tuple(v) for c, v in attrs.get("color", {}).get("rgb", {}).items()},
                unplaced={a: tuple(attrs[a]["unplaced"]) for a in attributes if attrs[a].get("unplaced")},
            )
        except (KeyError, TypeError) as e:
            raise FormatError(f"{source}: malformed ontology, missing or bad field {e}") from None

    def __post_init__(self) -> None:
        for a, vals in self.unplaced.items():
            bad = [v for v in vals if v not in self.attributes.get(a, ())]
            if bad:
                raise FormatError(f"ontology {self.name!r}: unplaced {a} values {bad} are not values of "
                                  f"{a!r}; valid: {list(self.attributes.get(a, ()))}")
        names = tuple(sorted({p for v in self.parts_per_shape.values() for p in v}))
        object.__setattr__(self, "_part_names", names)
        by_spoken: dict[str, list[str]] = {}
        for n in names:
            by_spoken.setdefault(self.part_spoken.get(n, n.replace("_", " ")), []).append(n)
        object.__setattr__(self, "_alike", {n: tuple(v) for v in by_spoken.values() for n in v})
        object.__setattr__(self, "_caches", {})

    def cache(self, name: str) -> dict:
        """A dict owned by one consumer (``name``) that lives as long as this ontology object.

        The executors keep there what depends only on the vocabularies and a program's structure
        (validated structures, accepted values, compiled step templates), so that questions of one
        template share it. Entries must be immutable and derived from this ontology alone.
        """
        c = self._caches.get(name)  # type: ignore[attr-defined]
        if c is None:
            c = self._caches[name] = {}  # type: ignore[attr-defined]
        return c

    def __hash__(self) -> int:  # dict fields make the dataclass hash fail; the name is enough
        return hash((self.name, self.attributes.get("shape")))

    # ------------------------------------------------------------------ attribute values
    @property
    def attribute_names(self) -> tuple[str, ...]:
        """Attributes this ontology defines, in canonical order."""
        return tuple(self.attributes)

    @property
    def has_parts(self) -> bool:
        return bool(self.parts_per_shape)

    def values(self, attribute: str) -> tuple[str, ...]:
        """Ordered canonical values of ``attribute``; raises KeyError listing valid attributes."""
        try:
            return self.attributes[attribute]
        except KeyError:
            raise KeyError(f"attribute {attribute!r} not in ontology {self.name!r}; "
                           f"valid: {sorted(self.attributes)}") from None

    def scene_values(self, attribute: str) -> tuple[str, ...]:
        """Values objects of a scene take, in :meth:`values` order: every value except the
        ``unplaced`` ones (Super-CLEVR: the 21 shapes without ``addi``). What scene sampling,
        rendering, detectors and attribute heads range over; raises KeyError like :meth:`values`."""
        vals = self.values(attribute)
        skip = self.unplaced.get(attribute, ())
        return tuple(v for v in vals if v not in skip) if skip else vals

    def canonical(self, attribute: str, value: str) -> str | None:
        """The canonical spelling of ``value`` (aliases resolved), or None if unknown."""
        vals = self.attributes.get(attribute, ())
        if value in vals:
            return value
        return self.aliases.get(attribute, {}).get(value)

    def filter_values(self, attribute: str) -> tuple[str, ...]:
        """Values a ``filter_<attribute>`` node may carry (shape categories included)."""
        vals = self.values(attribute)
        if attribute == "shape":
            return vals + tuple(self.categories)
        return vals

    def matching(self, attribute: str, value: str) -> tuple[str, ...]:
        """Concrete values kept by a filter value; a category expands to its shapes.

        Returns an empty tuple for a value the ontology does not know.
        """
        if attribute == "shape" and value in self.categories:
            return self.categories[value]
        c = self.canonical(attribute, value)
        return (c,) if c is not None else ()

    def spoken_value(self, attribute: str, value: str) -> str:
        """Answer string of a canonical value (``articulated`` -> "articulated bus")."""
        if attribute == "partname":
            return self.part_spoken.get(value, value.replace("_", " "))
        return self.spoken.get(attribute, {}).get(value, value)

    def category_of(self, shape: str) -> str | None:
        for cat, shapes in self.categories.items():
            if shape in shapes:
                return cat
        return None

    # ------------------------------------------------------------------ parts
    @property
    def part_names(self) -> tuple[str, ...]:
        """All distinct part names, sorted (the part axis of likelihood arrays)."""
        return self._part_names  # type: ignore[attr-defined]

    def parts_of(self, shape: str) -> tuple[str, ...]:
        return self.parts_per_shape.get(shape, ())

    def alike_partnames(self, key: str) -> tuple[str, ...]:
        """Part names spoken like ``key``, itself included. Super-CLEVR spells 17 spoken names
        with two keys, one per family of models (``front_right_wheel`` on cars,
        ``wheel_front_right`` on buses and aeroplanes)."""
        return self._alike.get(key, (key,))  # type: ignore[attr-defined]

    def partname_key(self, key: str, shapes: Iterable[str]) -> str | None:
        """The key spoken like ``key`` that the models ``shapes`` use, when they agree on one
        (None when they use several, or have no such part)."""
        alike = self.alike_partnames(key)
        if len(alike) == 1:
            return key
        used = {n for s in shapes for n in self.parts_of(s) if n in alike}
        return used.pop() if len(used) == 1 else None

    def partname_matching(self, value: str) -> tuple[str, ...]:
        """Part names a ``partfilter_partname`` value keeps (``wheel`` -> every wheel)."""
        return self.partname_filters.get(value, ())

    # ------------------------------------------------------------------ answers
    def answer_vocabulary(self) -> dict[str, list[str]]:
        """Spoken answers per answer type (integers as strings up to 10, booleans yes/no).

        Attribute answers are those a ``query_<attr>`` over a scene can give: the
        :meth:`scene_values` (no "regular car": no scene holds an ``addi``)."""
        vocab = {a: [self.spoken_value(a, v) for v in self.scene_values(a)] for a in self.attributes}
        if self.has_parts:
            vocab["partname"] = sorted({self.spoken_value("partname", p) for p in self.part_names})
        vocab["integer"] = [str(i) for i in range(11)]
        vocab["bool"] = ["yes", "no"]
        return vocab


def ontology_dir() -> Path:
    """Folder of the built-in ontologies: ``$NSVQA_ONTOLOGY_DIR``, else ``data/ontologies`` inside
    this package, found through :mod:`importlib.resources` (after a regular, editable, ``--target``
    or ``--user`` install, and in a copy of ``executors/`` placed in another project)."""
    if "NSVQA_ONTOLOGY_DIR" in os.environ:
        return Path(os.environ["NSVQA_ONTOLOGY_DIR"])
    folder = resources.files(__package__).joinpath(*_BUILTIN)
    if not isinstance(folder, Path):  # a zip import: the package's files are not on disk
        raise FileNotFoundError(f"the built-in ontologies need {__package__} installed as files, not "
                                f"imported from {folder}; set NSVQA_ONTOLOGY_DIR to a folder of them")
    return folder


@lru_cache(maxsize=16)
def load_ontology(name_or_path: str | os.PathLike = "superclevr") -> Ontology:
    """Load a built-in ontology by name (``clevr``, ``superclevr``) or a JSON file by path."""
    p = Path(name_or_path)
    if not p.suffix:
        p = ontology_dir() / f"{name_or_path}.json"
        if not p.exists():
            names = sorted(q.stem for q in ontology_dir().glob("*.json"))
            raise FileNotFoundError(f"no ontology named {str(name_or_path)!r} in {ontology_dir()}; "
                                    f"valid names: {names}")
    return Ontology.from_dict(read_json(p), source=str(p))  # strict JSON: FormatError naming the file
