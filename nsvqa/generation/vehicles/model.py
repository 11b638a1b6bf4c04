"""The canonical vehicle: shape names per category, :class:`VehicleModel`, and the part-wise assembly
that normalises a built vehicle to the canonical frame (see :mod:`nsvqa.generation.vehicles`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from executors.ontology import load_ontology

from nsvqa.generation.meshes import Mesh
from nsvqa.generation.primitives import merge, mirror_y


CATEGORIES: dict[str, tuple[str, ...]] = {
    "car": ("suv", "wagon", "minivan", "sedan", "truck"),
    "bus": ("articulated", "regular", "double", "school"),
    "motorbike": ("chopper", "dirtbike", "scooter", "cruiser"),
    "aeroplane": ("jet", "fighter", "biplane", "airliner"),
    "bicycle": ("road", "utility", "mountain", "tandem"),
}
SHAPES: tuple[str, ...] = tuple(s for shapes in CATEGORIES.values() for s in shapes)


def category_of(shape: str) -> str:
    for cat, shapes in CATEGORIES.items():
        if shape in shapes:
            return cat
    raise KeyError(f"unknown vehicle shape {shape!r}; valid: {SHAPES}")


@dataclass(frozen=True, eq=False)
class VehicleModel:
    """A vehicle in its canonical frame (see :mod:`nsvqa.generation.vehicles`).

    Attributes:
        shape: the shape name (one of :data:`SHAPES`).
        parts: part name -> mesh, keys exactly ``load_ontology('superclevr').parts_of(shape)`` in
            that order, every mesh non-empty.
        body: all other geometry, coloured like the object.
        body_glass: optional hint, a bool per ``body`` triangle marking window glass (a renderer
            may darken those; ignoring it is fine, the glass is ordinary body geometry).
    """

    shape: str
    parts: dict[str, Mesh]
    body: Mesh
    body_glass: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    @property
    def n_triangles(self) -> int:
        return self.body.n_triangles + sum(m.n_triangles for m in self.parts.values())

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.body.bounds()
        for m in self.parts.values():
            a, b = m.bounds()
            lo, hi = np.minimum(lo, a), np.maximum(hi, b)
        return lo, hi


# =============================================================================== assembly
class _Build:
    """Collects meshes per part name, body and glass, then normalises."""

    def __init__(self, shape: str):
        self.shape = shape
        self.names = load_ontology("superclevr").parts_of(shape)
        if not self.names:
            raise KeyError(f"no parts listed for shape {shape!r}")
        self.parts: dict[str, list[Mesh]] = {n: [] for n in self.names}
        self.body: list[Mesh] = []
        self.glass: list[Mesh] = []

    def part(self, name: str, *meshes: Mesh) -> None:
        if name not in self.parts:
            raise KeyError(f"{self.shape}: {name!r} is not one of its parts {self.names}")
        self.parts[name].extend(meshes)

    def pair(self, left: str, right: str, *meshes_left: Mesh) -> None:
        """Add meshes built on the left (+y) side to ``left`` and their mirror image to ``right``."""
        self.part(left, *meshes_left)
        self.part(right, *[mirror_y(m) for m in meshes_left])

    def add(self, *meshes: Mesh) -> None:
        self.body.extend(meshes)

    def add_sym(self, *meshes_left: Mesh) -> None:
        self.body.extend(meshes_left)
        self.body.extend(mirror_y(m) for m in meshes_left)

    def win(self, *meshes: Mesh) -> None:
        self.glass.extend(meshes)

    def finish(self) -> VehicleModel:
        missing = [n for n, ms in self.parts.items() if not any(m.n_triangles for m in ms)]
        if missing:
            raise RuntimeError(f"{self.shape}: parts without geometry: {missing}")
        parts = {n: merge(self.parts[n]) for n in self.names}
        body_solid, glass = merge(self.body), merge(self.glass)
        body = merge([body_solid, glass])
        mask = np.zeros(body.n_triangles, bool)
        mask[body_solid.n_triangles:] = True
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for m in [body, *parts.values()]:
            a, b = m.bounds()
            lo, hi = np.minimum(lo, a), np.maximum(hi, b)
        shift = np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2]])
        scale = 1.0 / max(hi[0] - lo[0], hi[1] - lo[1])

        def norm(m: Mesh) -> Mesh:
            p = ((m.positions.astype(np.float64) - shift) * scale).astype(np.float32)
            p[:, 2] = np.maximum(p[:, 2], 0.0)  # exact zero at the ground despite rounding
            out = Mesh(p, m.normals.copy(), (m.uvs.astype(np.float64) * scale).astype(np.float32),
                       m.indices.copy())
            for a in (out.positions, out.normals, out.uvs, out.indices):
                a.setflags(write=False)
            return out

        mask.setflags(write=False)
        return VehicleModel(self.shape, {n: norm(parts[n]) for n in self.names}, norm(body), mask)
