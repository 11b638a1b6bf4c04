"""Scenes as the executors see them.

* :class:`SymbolicScene` — hard attributes per object (a ground-truth scene, or the argmax of a
  parsed one), read from the CLEVR v1.0 / Super-CLEVR scene JSON.
* :class:`SceneLikelihoods` — the perception -> reasoning hand-off of P-NSVQA: for N detected
  objects, a detection probability, one distribution per attribute, per-part distributions and a
  position with its uncertainty. Shapes are documented on the class and checked on construction.
"""
from __future__ import annotations

import math
from itertools import chain
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import FormatError, InvalidObjectReference
from .ontology import Ontology

#: Image-plane directions (x to the right, y down): objects lower in the image are in front.
IMAGE_DIRECTIONS = {"left": (-1.0, 0.0), "right": (1.0, 0.0), "front": (0.0, 1.0), "behind": (0.0, -1.0)}
#: Axes of an NS-VQA derendered ``position`` [along right, along front, height]: the scene's 3D
#: coordinates already projected onto its right and front directions.
POSITION_DIRECTIONS = {"left": (-1.0, 0.0, 0.0), "right": (1.0, 0.0, 0.0), "front": (0.0, 1.0, 0.0),
                       "behind": (0.0, -1.0, 0.0)}
PART_BITS = 32  # part k of object i has id bit i * PART_BITS + k in the deterministic executor


def check_image_filename(name: Any, where: str) -> str:
    """Reject an ``image_filename`` that is absolute or climbs out of the image folder."""
    if type(name) is str and name and name != ".." and not any(c in name for c in "/\\:"):
        return name  # a plain file name: nothing to climb out of, no anchor
    if not isinstance(name, str) or not name:
        raise FormatError(f"{where}, field 'image_filename': expected a relative file name, got {name!r}")
    for p in (PurePosixPath(name), PureWindowsPath(name)):
        if p.is_absolute() or p.anchor or ".." in p.parts:
            raise FormatError(f"{where}, field 'image_filename': {name!r} must be relative and stay "
                              "inside the image folder")
    return name


@dataclass
class SymbolicScene:
    """Objects with hard attribute values.

    Attributes:
        objects: per object, attribute -> canonical value (every attribute of the ontology;
            a missing texture reads as ``none``).
        parts: per object, part name -> {attribute: value}, only parts whose attributes differ
            from the object's (what ``object2part`` yields, as in the official engine).
        coords: (N, 3) world coordinates or None.
        directions: relation -> unit 3-vector (scene JSON ``directions``) or None.
        pixel_coords: (N, 2) image-plane centers or None.
        relationships: relation -> per object i, the list of j in that relation to i, or None.
        image_index, image_filename: identification, as in the scene JSON.
        relation_margin: the margin of relations computed from ``coords`` (None: the ontology's
            ``relation_margin``; 0.0 for NS-VQA derendered scenes).
    """

    ontology: Ontology
    objects: list[dict[str, str]]
    parts: list[dict[str, dict[str, str]]] = field(default_factory=list)
    coords: np.ndarray | None = None
    directions: dict[str, np.ndarray] | None = None
    pixel_coords: np.ndarray | None = None
    relationships: dict[str, list[list[int]]] | None = None
    image_index: int | None = None
    image_filename: str | None = None
    relation_margin: float | None = None
    _compiled: Any = field(default=None, repr=False, compare=False)
    #: what executors derive from this scene and reuse (its one-hot likelihoods, their arrays)
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.objects)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], ontology: Ontology, *, where: str = "scene") -> "SymbolicScene":
        """Read one scene of the release format; errors name ``where``, the object and the field.

        Also reads NS-VQA's derendered scenes (``{"objects": [{shape, color, material, size,
        "position": [x, y, z]}]}`` with neither ``3d_coords`` nor ``relationships``): ``position``
        is taken as the 3D coordinates projected onto the right and front directions (how NS-VQA
        makes it from ``3d_coords``), so j is right of i when x_j > x_i, left when x_j < x_i, in
        front when y_j > y_i and behind when y_j < y_i, with no margin (NS-VQA's rule).

        Raises:
            FormatError: a missing field, a value outside the ontology (valid values listed), an
                unsafe ``image_filename``, or a part the object's shape does not have.
            InvalidObjectReference: ``relationships`` naming an object the scene does not have.
        """
        if type(d) is not dict and not isinstance(d, Mapping):
            raise FormatError(f"{where}: expected an object, got {type(d).__name__}")
        objs = d.get("objects")
        if not isinstance(objs, list):
            raise FormatError(f"{where}, field 'objects': missing or not a list")
        objects, parts = [], []
        coords, pixels = [], []
        table = _attr_table(ontology)
        for i, o in enumerate(objs):
            obj = None
            if type(o) is dict:  # well-formed objects: one lookup per attribute
                try:
                    obj = {a: t[o.get(a)] for a, t in table}
                except (KeyError, TypeError):
                    obj = None
            if obj is None:  # every check, with its error
                if type(o) is not dict and not isinstance(o, Mapping):
                    raise FormatError(f"{where}, object {i}: expected an object")
                obj = {a: _attr(ontology, a, o, f"{where}, object {i}") for a in ontology.attributes}
            objects.append(obj)
            parts.append(_parts(ontology, o, obj, f"{where}, object {i}") if o.get("parts") else {})
            coords.append(o.get("3d_coords"))
            pixels.append(_pixel(o.get("pixel_coords"), where, i))
        n = len(objects)
        c = _float_array(coords, (n, 3), f"{where}, field '3d_coords'") if n and all(x is not None for x in coords) else None
        if c is None and n and d.get("relationships") is None and all(
                type(o) is dict and o.get("position") is not None for o in objs):
            # NS-VQA's derendered scene: projected positions (see the docstring)
            c = _float_array([o["position"] for o in objs], (n, 3), f"{where}, field 'position'")
            fname = d.get("image_filename")
            return cls(ontology, objects, parts, c,
                       {r: np.asarray(POSITION_DIRECTIONS[r], dtype=float) for r in ontology.relations},
                       None, None, d.get("image_index"),
                       None if fname is None else check_image_filename(fname, where), relation_margin=0.0)
        px = np.asarray(pixels, dtype=float).reshape(n, 2) if n and all(x is not None for x in pixels) else None
        dirs = None
        dd = d.get("directions")
        if isinstance(dd, Mapping):
            rels = ontology.relations
            fast = None
            if all(r in dd for r in rels):  # all at once; on any doubt, one by one (their errors)
                try:
                    fast = np.asarray([dd[r] for r in rels], dtype=float)
                except (TypeError, ValueError, OverflowError):
                    fast = None
                if fast is not None and (fast.shape != (len(rels), 3) or not np.isfinite(fast).all()):
                    fast = None
            if fast is not None:
                dirs = dict(zip(rels, fast))
            else:
                dirs = {r: _float_array(dd[r], (3,), f"{where}, field 'directions.{r}'")
                        for r in rels if r in dd}
                if len(dirs) != len(rels):
                    dirs = None
        rel = None
        if d.get("relationships") is not None:
            rel = _relationships(d["relationships"], ontology, n, where)
        fname = d.get("image_filename")
        if fname is not None:
            fname = check_image_filename(fname, where)
        return cls(ontology, objects, parts, c, dirs, px, rel, d.get("image_index"), fname)

    # ------------------------------------------------------------------ relations
    def relation_lists(self) -> dict[str, list[list[int]]]:
        """relation -> for each object i, the objects j in that relation to i.

        From ``relationships`` when the scene has them; else from 3D coordinates (j is right of i
        when dot(c_j - c_i, directions['right']) > margin); else from image-plane positions.
        """
        if self.relationships is not None:
            return self.relationships
        if len(self) <= 1:  # nothing can be in a relation to anything else
            return {r: [[] for _ in range(len(self))] for r in self.ontology.relations}
        if self.coords is not None and self.directions is not None:
            pos, dirs = self.coords, self.directions
            margin = self.ontology.relation_margin if self.relation_margin is None else self.relation_margin
        elif self.pixel_coords is not None:
            pos, margin = self.pixel_coords, 0.0
            dirs = {r: np.asarray(v) for r, v in IMAGE_DIRECTIONS.items()}
        else:
            name = self.image_filename or self.image_index
            raise FormatError(f"scene {name!r}: has neither 'relationships' nor positions (3d_coords "
                              "with directions, or pixel_coords) to compute relations from")
        out = {}
        for r in self.ontology.relations:
            proj = pos @ dirs[r]
            diff = proj[None, :] - proj[:, None]  # [i, j] = projection of c_j - c_i
            out[r] = [list(map(int, np.flatnonzero(diff[i] > margin))) for i in range(len(self))]
        return out

    # ------------------------------------------------------------------ export
    def to_json(self) -> dict:
        """Release-format scene (attributes, parts, coordinates, relationships)."""
        objs = []
        for i, o in enumerate(self.objects):
            d: dict[str, Any] = dict(o)
            if self.parts and self.parts[i]:
                d["parts"] = {k: dict(v) for k, v in self.parts[i].items()}
            if self.coords is not None:
                d["3d_coords"] = [float(x) for x in self.coords[i]]
            if self.pixel_coords is not None:
                d["pixel_coords"] = [float(x) for x in self.pixel_coords[i]]
            objs.append(d)
        out: dict[str, Any] = {"objects": objs, "relationships": self.relation_lists()}
        if self.directions is not None:
            out["directions"] = {k: [float(x) for x in v] for k, v in self.directions.items()}
        if self.image_index is not None:
            out["image_index"] = self.image_index
        if self.image_filename is not None:
            out["image_filename"] = self.image_filename
        return out


def _attr(onto: Ontology, a: str, o: Mapping, where: str) -> str:
    v = o.get(a)
    if v is None and a == "texture":
        return onto.values("texture")[0]  # untextured scenes have no texture field
    if v is None:
        raise FormatError(f"{where}: missing field {a!r}")
    c = onto.canonical(a, v) if isinstance(v, str) else None
    if c is None:
        raise FormatError(f"{where}, field {a!r}: {v!r} is not a valid {a}; valid: {list(onto.values(a))}")
    return c


def _attr_table(onto: Ontology) -> tuple:
    """Per attribute, (attribute, {raw value: canonical value}): values and aliases, and a
    missing texture (None) read as the first texture, as :func:`_attr` reads them."""
    cache = onto.cache("scene.attributes")
    t = cache.get("table")
    if t is None:
        t = []
        for a in onto.attributes:
            m = {**onto.aliases.get(a, {}), **{v: v for v in onto.values(a)}}
            if a == "texture":
                m[None] = onto.values("texture")[0]
            t.append((a, {k: v for k, v in m.items() if k is None or type(k) is str}))
        t = cache["table"] = tuple(t)
    return t


def _parts(onto: Ontology, o: Mapping, obj: dict[str, str], where: str) -> dict[str, dict[str, str]]:
    raw = o.get("parts") or {}
    if not isinstance(raw, Mapping):
        raise FormatError(f"{where}, field 'parts': expected an object")
    if raw and not onto.has_parts:
        raise FormatError(f"{where}, field 'parts': ontology {onto.name!r} has no parts")
    valid = onto.parts_of(obj.get("shape", ""))
    out = {}
    for name, attrs in raw.items():
        if name not in valid:
            raise FormatError(f"{where}, field 'parts': {name!r} is not a part of {obj['shape']!r}; "
                              f"valid: {list(valid)}")
        pw = f"{where}, part {name!r}"
        if not isinstance(attrs, Mapping):
            raise FormatError(f"{pw}: expected an object of part attributes, got {attrs!r}")
        attrs = dict(attrs)
        for a in onto.part_attributes:
            if a in onto.attributes:
                attrs.setdefault(a, obj[a])  # a part not described otherwise looks like its object
        out[name] = {a: _attr(onto, a, attrs, pw) for a in onto.part_attributes if a in onto.attributes}
    return out


def _pixel(p: Any, where: str, i: int) -> tuple[float, float] | None:
    """``pixel_coords`` of object ``i``: [x, y, depth] (CLEVR) or [[x, y, depth], [W, H]]
    (Super-CLEVR)."""
    if p is None:
        return None
    if type(p) is list and len(p) >= 2 and type(p[0]) is float and type(p[1]) is float:
        x, y = p[0], p[1]  # [x, y, depth] of floats: the common case
        if x - x == 0.0 and y - y == 0.0:  # finite (inf - inf and NaN - NaN are NaN)
            return x, y
    if type(p) is list and p and type(p[0]) in (int, float):
        pass  # [x, y, depth]: without the slower abstract-type checks below
    elif isinstance(p, Sequence) and p and isinstance(p[0], Sequence):
        p = p[0]
    try:
        x, y = float(p[0]), float(p[1])
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError
        return x, y
    except (TypeError, ValueError, IndexError, KeyError, OverflowError):
        raise FormatError(f"{where}, object {i}, field 'pixel_coords': expected [x, y, ...], got {p!r}") from None


def _float_array(x: Any, shape: tuple[int, ...], where: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise FormatError(f"{where}: expected numbers of shape {shape}, got {x!r}") from None
    if a.shape != shape:
        raise FormatError(f"{where}: expected shape {shape}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise FormatError(f"{where}: non-finite values")
    return a


def _relationships(rel: Any, onto: Ontology, n: int, where: str) -> dict[str, list[list[int]]]:
    if not isinstance(rel, Mapping):
        raise FormatError(f"{where}, field 'relationships': expected an object")
    given = [rel.get(r) for r in onto.relations]
    if all(type(x) is list and len(x) == n for x in given):  # every index checked at once
        inner = list(chain.from_iterable(given))
        if set(map(type, inner)) <= {list}:
            flat = list(chain.from_iterable(inner))
            if not flat or (set(map(type, flat)) == {int} and min(flat) >= 0 and max(flat) < n):
                return {r: list(map(list, x)) for r, x in zip(onto.relations, given)}
    out = {}  # one by one: the first bad entry is the one named
    for r in onto.relations:
        lists = rel.get(r)
        if not isinstance(lists, list) or len(lists) != n:
            raise FormatError(f"{where}, field 'relationships.{r}': expected one list per object ({n})")
        for i, js in enumerate(lists):
            if not isinstance(js, list):
                raise FormatError(f"{where}, field 'relationships.{r}', object {i}: expected a list "
                                  f"of object indices, got {js!r}")
            if all(type(j) is int and 0 <= j < n for j in js):
                continue
            for j in js:
                if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < n:
                    raise InvalidObjectReference(f"{where}, field 'relationships.{r}', object {i}: "
                                                 f"no object {j!r} in a scene of {n}")
        out[r] = [list(js) for js in lists]
    return out


# ====================================================================== likelihoods
@dataclass
class SceneLikelihoods:
    """Per-object probabilities of one parsed scene (N objects, P = ontology part names).

    Attributes:
        ontology: gives the column order of every distribution.
        exist: (N,) probability that each detection is a real object.
        attributes: attribute -> (N, K_attr) distribution over ``ontology.values(attr)``. A table
            over ``ontology.scene_values(attr)`` instead (K_attr minus the unplaced values: the 21
            Super-CLEVR shapes of files and parsers from before ``addi`` joined the ontology, or
            of a parser that never predicts it) is read with probability 0 in the unplaced
            columns (:func:`widen_columns`); any other width is a :class:`FormatError`.
        positions: (N, D) positions (D = 3 world coordinates or 2 image-plane coordinates).
        position_std: (N,) standard deviation of each position (0 = exact).
        directions: relation -> (D,) unit direction (checked: finite, and of unit length within
            :data:`UNIT_TOLERANCE` for the ontology's relations; other entries only finite).
        margin: distance along a direction below which no relation holds (checked: a real
            number, not a bool or a string, finite and >= 0).
        relations: optional relation -> (N, N) probability that j is in relation to i ([i, j]);
            when given it replaces the spatial likelihood (a scene's ``relationships``).
        part_exist: optional (N, P) probability that object i has part p as a distinct part.
        part_attributes: attribute -> (N, P, K_attr) distributions of each part.
        image_index: identification of the scene.
    """

    ontology: Ontology
    exist: np.ndarray
    attributes: dict[str, np.ndarray]
    positions: np.ndarray
    position_std: np.ndarray | None = None
    directions: dict[str, np.ndarray] | None = None
    margin: float = 0.0
    relations: dict[str, np.ndarray] | None = None
    part_exist: np.ndarray | None = None
    part_attributes: dict[str, np.ndarray] | None = None
    image_index: int | None = None

    def __post_init__(self) -> None:
        onto = self.ontology
        self.exist = _prob(self.exist, None, "exist", 1)
        n = self.exist.shape[0]
        for a in onto.attributes:
            if a not in self.attributes:
                raise FormatError(f"likelihoods: missing attribute {a!r}; expected {list(onto.attributes)}")
            self.attributes[a] = _prob(widen_columns(onto, a, self.attributes[a], f"attributes.{a}"),
                                       (n, len(onto.values(a))), f"attributes.{a}", 2, dist_axis=-1)
        self.positions = np.asarray(self.positions, dtype=float)
        if self.positions.size == 0 and n == 0:  # JSON of a (0, D) array is []
            d0 = (len(np.ravel(next(iter(self.directions.values()))))
                  if isinstance(self.directions, Mapping) and self.directions else 2)
            self.positions = self.positions.reshape(0, d0)
        if self.positions.ndim != 2 or self.positions.shape[0] != n or not np.all(np.isfinite(self.positions)):
            raise FormatError(f"likelihoods, field 'positions': expected finite ({n}, D), got {self.positions.shape}")
        d = self.positions.shape[1]
        self.position_std = (np.zeros(n) if self.position_std is None
                             else np.asarray(self.position_std, dtype=float).reshape(n))
        if np.any(self.position_std < 0) or not np.all(np.isfinite(self.position_std)):
            raise FormatError("likelihoods, field 'position_std': must be finite and >= 0")
        self.margin = _margin(self.margin)
        if self.directions is None:
            if d != 2:
                raise FormatError("likelihoods, field 'directions': required for non-image (D != 2) positions")
            self.directions = {r: np.asarray(v) for r, v in IMAGE_DIRECTIONS.items()}
        if not isinstance(self.directions, Mapping):
            raise FormatError(f"likelihoods, field 'directions': expected an object relation -> direction, "
                              f"got {type(self.directions).__name__}")
        self.directions = {r: _direction(v, d, r, r in onto.relations) for r, v in self.directions.items()}
        missing = set(onto.relations) - set(self.directions)
        if missing:
            raise FormatError(f"likelihoods, field 'directions': missing {sorted(missing)}")
        if self.relations is not None:
            self.relations = {r: _prob(self.relations[r], (n, n), f"relations.{r}", 2) for r in onto.relations}
        if self.part_exist is not None:
            p = len(onto.part_names)
            self.part_exist = _prob(self.part_exist, (n, p), "part_exist", 2)
            pa = self.part_attributes or {}
            self.part_attributes = {
                a: _prob(widen_columns(onto, a, pa[a], f"part_attributes.{a}"), (n, p, len(onto.values(a))),
                         f"part_attributes.{a}", 3, dist_axis=-1)
                if a in pa else np.broadcast_to(self.attributes[a][:, None, :], (n, p, len(onto.values(a))))
                for a in onto.part_attributes if a in onto.attributes}

    def __len__(self) -> int:
        return int(self.exist.shape[0])

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_scene(cls, scene: SymbolicScene) -> "SceneLikelihoods":
        """One-hot likelihoods of a symbolic scene (every detection certain).

        Relations are taken as 0/1 matrices from the scene's relations (its ``relationships``, or
        those computed from its positions), so that on these likelihoods the probabilistic
        executor answers exactly like the deterministic one.
        """
        onto = scene.ontology
        n = len(scene)
        objs = np.arange(n)
        attrs = {}
        for a in onto.attributes:
            vals = onto.values(a)
            column = {v: k for k, v in enumerate(vals)}
            m = np.zeros((n, len(vals)))
            m[objs, [column[o[a]] for o in scene.objects]] = 1.0
            attrs[a] = m
        rel = {}
        for r, lists in scene.relation_lists().items():
            m = np.zeros((n, n))
            m[[i for i, js in enumerate(lists) for _ in js], [j for js in lists for j in js]] = 1.0
            rel[r] = m
        if scene.coords is not None and scene.directions is not None:
            pos, dirs = scene.coords, scene.directions
            margin = onto.relation_margin if scene.relation_margin is None else scene.relation_margin
        elif scene.pixel_coords is not None:
            pos, dirs, margin = scene.pixel_coords, None, 0.0
        else:
            pos, dirs, margin = np.zeros((n, 2)), None, 0.0
        part_exist = part_attrs = None
        if onto.has_parts:
            names = onto.part_names
            index = {p: k for k, p in enumerate(names)}
            part_exist = np.zeros((n, len(names)))
            part_attrs = {}
            pattrs = [a for a in onto.part_attributes if a in onto.attributes]
            for a in pattrs:  # parts not described otherwise look like their object
                part_attrs[a] = np.repeat(attrs[a][:, None, :], len(names), axis=1)
            for i, parts in enumerate(scene.parts):
                for name, pa in parts.items():
                    k = index[name]
                    part_exist[i, k] = 1.0
                    for a in pattrs:
                        part_attrs[a][i, k, :] = 0.0
                        part_attrs[a][i, k, onto.values(a).index(pa[a])] = 1.0
        # built here from a validated scene, so already of the checked shapes and ranges: the
        # constructor's checks (most of the cost) are skipped; its normalisations are done here
        pos = np.asarray(pos, dtype=float)
        if dirs is None:
            dirs = IMAGE_DIRECTIONS
        dirs = {r: np.asarray(v, dtype=float).reshape(pos.shape[1]) for r, v in dirs.items()}
        out = cls.__new__(cls)
        out.__dict__.update(ontology=onto, exist=np.ones(n), attributes=attrs, positions=pos,
                            position_std=np.zeros(n), directions=dirs, margin=margin, relations=rel,
                            part_exist=part_exist, part_attributes=part_attrs, image_index=scene.image_index)
        return out

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict:
        """JSON-able dict (lists of floats) that :meth:`from_json` reads back exactly."""
        out: dict[str, Any] = {
            "exist": self.exist.tolist(),
            "attributes": {a: v.tolist() for a, v in self.attributes.items()},
            "positions": self.positions.tolist(),
            "position_std": self.position_std.tolist(),
            "directions": {r: v.tolist() for r, v in self.directions.items()},
            "margin": self.margin,
        }
        if self.image_index is not None:
            out["image_index"] = self.image_index
        if self.relations is not None:
            out["relations"] = {r: v.tolist() for r, v in self.relations.items()}
        if self.part_exist is not None:
            out["part_exist"] = self.part_exist.tolist()
            out["part_attributes"] = {a: np.asarray(v).tolist() for a, v in self.part_attributes.items()}
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], ontology: Ontology, *, where: str = "likelihoods") -> "SceneLikelihoods":
        try:
            return cls(ontology, d["exist"], {a: d["attributes"][a] for a in d["attributes"]},
                       d["positions"], d.get("position_std"), d.get("directions"), d.get("margin", 0.0),
                       d.get("relations"), d.get("part_exist"), d.get("part_attributes"), d.get("image_index"))
        except KeyError as e:
            raise FormatError(f"{where}: missing field {e}") from None
        except FormatError as e:
            if where == "likelihoods":
                raise
            raise FormatError(f"{where}: {e}") from None


def widen_columns(onto: Ontology, attribute: str, x: Any, name: str = "likelihoods") -> Any:
    """A distribution table over ``onto.values(attribute)`` (last axis, K columns) from one over
    ``onto.scene_values(attribute)`` (K' < K columns, the unplaced values left out): the unplaced
    columns are inserted as zeros. A table with K columns is returned as it is; one with another
    last-axis width raises :class:`FormatError` naming both accepted widths and the values. Input
    that is not a numeric array of at least two dimensions, and every table of an attribute
    without unplaced values, is returned as it is (the caller's shape check reports it).

    Example: a (N, 21) Super-CLEVR shape table becomes (N, 22) with column ``addi`` = 0.
    """
    full, placed = onto.values(attribute), onto.scene_values(attribute)
    if len(placed) == len(full):
        return x  # nothing unplaced: the caller's shape check reports a wrong width
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return x
    if a.ndim < 2 or a.size == 0 or a.shape[-1] == len(full):
        return x
    if a.shape[-1] == len(placed):
        out = np.zeros(a.shape[:-1] + (len(full),))
        out[..., [full.index(v) for v in placed]] = a
        return out
    raise FormatError(f"likelihoods, field {name!r}: {a.shape[-1]} columns, expected {len(full)} (one per "
                      f"{attribute} of ontology {onto.name!r}: {list(full)}) or {len(placed)} (the same "
                      f"without the unplaced {list(onto.unplaced[attribute])})")


#: how far from 1 the length of a relation's direction may be (directions rounded to 4 digits, float32)
UNIT_TOLERANCE = 1e-3


def _margin(x: Any) -> float:
    """The likelihoods' ``margin`` as a float: a real number (not a bool or a string), finite, >= 0."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise FormatError(f"likelihoods, field 'margin': expected a number >= 0, got {type(x).__name__} {x!r}")
    try:
        m = float(x)
    except OverflowError:
        m = math.inf
    if not math.isfinite(m) or m < 0:
        raise FormatError(f"likelihoods, field 'margin': expected a finite number >= 0, got {x!r}")
    return m


def _direction(v: Any, d: int, name: str, relation: bool) -> np.ndarray:
    """One entry of the likelihoods' ``directions`` as a (D,) float array: finite, and of unit length
    when ``relation`` (a relation of the ontology; the others, e.g. ``above`` on a ground plane,
    are carried along unused)."""
    where = f"likelihoods, field 'directions.{name}'"
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise FormatError(f"{where}: expected {d} numbers, got {v!r}") from None
    if a.size != d:
        raise FormatError(f"{where}: expected {d} numbers (the positions' dimension), got shape {a.shape}")
    a = a.reshape(d)
    if not np.all(np.isfinite(a)):
        raise FormatError(f"{where}: non-finite values {a.tolist()}")
    if relation and abs(float(np.linalg.norm(a)) - 1.0) > UNIT_TOLERANCE:
        raise FormatError(f"{where}: expected a unit vector, got length {float(np.linalg.norm(a)):.6g}")
    return a


def _prob(x: Any, shape: tuple[int, ...] | None, name: str, ndim: int, dist_axis: int | None = None) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise FormatError(f"likelihoods, field {name!r}: not numeric") from None
    if a.size == 0 and shape is not None and 0 in shape:
        a = a.reshape(shape)  # zero objects: JSON keeps no inner dimensions ([] for (0, K))
    if a.ndim != ndim or (shape is not None and a.shape != shape):
        raise FormatError(f"likelihoods, field {name!r}: expected shape {shape or ('N',)}, got {a.shape}")
    if a.size and not (a.min() >= 0 and a.max() <= 1 + 1e-6):  # NaN fails both comparisons
        bad = np.argwhere(~np.isfinite(a) | (a < 0) | (a > 1 + 1e-6))[0]
        raise FormatError(f"likelihoods, field {name!r}, index {tuple(int(i) for i in bad)}: "
                          f"value {float(a[tuple(bad)])!r} is not a probability")
    if dist_axis is not None and a.size:
        s = a.sum(axis=dist_axis)
        if s.size and np.abs(s - 1).max() > 1e-4:
            bad = np.argwhere(np.abs(s - 1) > 1e-4)
            raise FormatError(f"likelihoods, field {name!r}, index {tuple(int(i) for i in bad[0])}: "
                              f"distribution sums to {float(s[tuple(bad[0])]):.6g}, not 1")
    return a


def logistic(x: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def spatial_likelihood(lik: SceneLikelihoods, relation: str) -> np.ndarray:
    """(N, N) probability that object j is in ``relation`` to object i (entry [i, j]).

    The projected distance t = dot(x_j - x_i, direction) - margin is uncertain with standard
    deviation s = sqrt(std_i^2 + std_j^2); the likelihood is the logistic CDF with that standard
    deviation, P(t > 0) = logistic(t * pi / (sqrt(3) * s)). It grows with the distance between
    the two centres along the direction (the paper's p_spatial) and, as s -> 0, becomes the
    deterministic rule t > 0. The diagonal is 0: nothing is left of itself.
    """
    proj = lik.positions @ lik.directions[relation]
    t = proj[None, :] - proj[:, None] - lik.margin
    s = np.sqrt(lik.position_std[:, None] ** 2 + lik.position_std[None, :] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(s > 0, logistic(t * math.pi / (math.sqrt(3.0) * np.where(s > 0, s, 1.0))),
                     (t > 0).astype(float))
    np.fill_diagonal(p, 0.0)
    return p


def argmax_scene(lik: SceneLikelihoods, min_part: float = 0.5, min_exist: float = 0.0) -> SymbolicScene:
    """The most likely scene: what NS-VQA's deterministic executor runs on.

    Every detection with ``exist >= min_exist`` becomes an object with the most likely value of
    each attribute; parts with ``part_exist >= min_part`` that the object's most likely shape has
    are listed with their most likely attributes. Relations come from the positions (ground-plane
    positions get a zero height) with the likelihoods' directions and margin, or from
    ``lik.relations`` thresholded at 0.5 when the likelihoods carry them.
    """
    onto = lik.ontology
    keep = [i for i in range(len(lik)) if lik.exist[i] >= min_exist]
    objects = [{a: onto.values(a)[int(np.argmax(lik.attributes[a][i]))] for a in onto.attributes} for i in keep]
    parts: list[dict[str, dict[str, str]]] = [{} for _ in objects]
    if lik.part_exist is not None:
        for k_obj, i in enumerate(keep):
            for k in np.flatnonzero(lik.part_exist[i] >= min_part):
                name = onto.part_names[k]
                if name not in onto.parts_of(objects[k_obj]["shape"]):
                    continue  # a part the most likely shape does not have
                parts[k_obj][name] = {a: onto.values(a)[int(np.argmax(v[i, k]))]
                                      for a, v in lik.part_attributes.items()}
    pos = lik.positions[keep]
    if pos.shape[1] == 2:
        pos = np.concatenate([pos, np.zeros((len(keep), 1))], 1)
    dirs = {r: (np.r_[v, 0.0] if len(v) == 2 else np.asarray(v)) for r, v in lik.directions.items()}
    relationships = None
    if lik.relations is not None:
        relationships = {r: [[keep.index(j) for j in keep if m[i, j] >= 0.5] for i in keep]
                         for r, m in lik.relations.items()}
    return SymbolicScene(onto, objects, parts, pos if len(keep) else None, dirs, None, relationships,
                         lik.image_index)
