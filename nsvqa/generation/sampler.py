"""Scene sampling: attributes from concept weights, non-overlapping layouts, parts and textures.

One image is a deterministic function of (seed, image index, parameters). Independent random
streams are drawn for the layout (objects, their attributes, positions, camera, lights), the
recoloured parts and the textures, so that the visual-complexity levels share everything they have
in common: for one seed, ``easy``, ``mid`` and ``hard`` give the same layout and object attributes;
``mid`` and ``hard`` recolour the same parts; ``hard`` only adds textures.

Concept distribution and compositionality (Super-CLEVR, docs/variants.md) enter as weights: shape,
color and material weights d_i (d_i proportional to a^-i for the long-tail variants), and an
optional 21 x 8 shape -> color matrix (co-1 / co-2) that replaces the color weights. Shapes range
over ``onto.scene_values('shape')``: the 21 shapes the Super-CLEVR image generator places, not the
question generator's 22nd, ``addi``, which no scene holds (as in the official release).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from executors import Ontology

from nsvqa.generation.looks import DEFAULT_LOOK, get_look

COMPLEXITIES = ("easy", "mid", "hard")
#: CLEVR's default camera position (Johnson et al. 2017), jittered per image.
CAMERA_EYE = (7.48, -6.51, 5.34)
CAMERA_JITTER = 0.5
LIGHT_JITTER = 0.1


def power_weights(n: int, a: float) -> np.ndarray:
    """d_i proportional to a^-i, i = 0..n-1, normalised (a = 1 uniform, 1.3 slight, 2 long tail)."""
    w = float(a) ** -np.arange(n, dtype=float)
    return w / w.sum()


#: Long-tail exponents of the Super-CLEVR concept-distribution variants (docs/variants.md).
TAIL_EXPONENTS = {"bal": 1.0, "slt": 1.3, "long": 2.0}


def distribution_weights(n: int, kind: str) -> np.ndarray:
    """Weights over n concepts (in the ontology's order) for a concept-distribution variant.

    ``bal`` / ``slt`` / ``long``: d_i proportional to a^-i with a = 1, 1.3, 2; the test-only
    ``head`` (the frequent half, uniform), ``tail`` (the rare half, uniform) and ``oppo`` (the
    long tail reversed).
    """
    if kind in TAIL_EXPONENTS:
        return power_weights(n, TAIL_EXPONENTS[kind])
    half = n // 2
    if kind == "head":
        w = np.r_[np.ones(n - half), np.zeros(half)]
    elif kind == "tail":
        w = np.r_[np.zeros(n - half), np.ones(half)]
    elif kind == "oppo":
        w = power_weights(n, TAIL_EXPONENTS["long"])[::-1].copy()
    else:
        raise ValueError(f"unknown distribution {kind!r}; valid: {sorted([*TAIL_EXPONENTS, 'head', 'tail', 'oppo'])}")
    return w / w.sum()


@dataclass(frozen=True)
class ConceptWeights:
    """Sampling weights over the ontology's values (None = uniform).

    Attributes:
        shape: (21,) weights over ``onto.scene_values('shape')`` (the placed shapes).
        color: (8,) weights over colors, used when ``shape_color`` is None.
        material: (2,) weights over materials.
        shape_color: (21, 8) rows P(color | shape) for the compositionality variants; a shape
            whose row is all zero does not occur.
    """

    shape: np.ndarray | None = None
    color: np.ndarray | None = None
    material: np.ndarray | None = None
    shape_color: np.ndarray | None = None

    def validated(self, onto: Ontology) -> "ConceptWeights":
        def norm(w, n, name):
            if w is None:
                return np.full(n, 1.0 / n)
            w = np.asarray(w, dtype=float)
            if w.shape != (n,) or np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
                raise ValueError(f"concept weights {name!r}: expected {n} non-negative weights, got {w!r}")
            return w / w.sum()

        n_s, n_c = len(onto.scene_values("shape")), len(onto.values("color"))
        shape = norm(self.shape, n_s, "shape")
        sc = None
        if self.shape_color is not None:
            # joint semantics: P(shape, color) ~ shape weight x matrix entry, so a shape whose row
            # is all zero never occurs
            sc = np.asarray(self.shape_color, dtype=float)
            if sc.shape != (n_s, n_c) or np.any(sc < 0) or not np.isfinite(sc).all():
                raise ValueError(f"concept weights 'shape_color': expected a non-negative ({n_s}, {n_c}) "
                                 f"matrix, got shape {sc.shape}")
            rows = sc.sum(1)
            shape = shape * (rows > 0)
            if shape.sum() <= 0:
                raise ValueError("concept weights 'shape_color': no shape with weight has a color")
            shape = shape / shape.sum()
            sc = sc / np.where(rows > 0, rows, 1.0)[:, None]
        return ConceptWeights(shape, norm(self.color, n_c, "color"),
                              norm(self.material, len(onto.values("material")), "material"), sc)


@dataclass(frozen=True)
class SceneParams:
    """Everything a scene depends on besides (seed, index).

    Attributes:
        complexity: ``easy`` | ``mid`` | ``hard``.
        min_objects, max_objects: object count range (inclusive).
        weights: concept weights.
        max_parts: at most this many recoloured parts per object (mid/hard).
        area: objects are placed with centres in [-area, area]^2.
        min_gap: free space between object footprints.
        min_object_pixels, min_part_pixels: visibility thresholds at 320x240 (scaled with the
            image area).
        max_retries: layouts tried before giving up with an error.
        camera_scales: distance of the camera from the scene centre, as multiples of CLEVR's
            camera distance, drawn uniformly per image.
        joint: when given, the (object count, camera scale) pairs allowed, drawn uniformly
            (the systematic splits hold combinations of these factors out of training).
        look: the render look (:mod:`nsvqa.generation.looks`): the vehicles' sizes and the
            camera's field of view.
    """

    complexity: str = "mid"
    min_objects: int = 3
    max_objects: int = 10
    weights: ConceptWeights = field(default_factory=ConceptWeights)
    max_parts: int = 3
    area: float = 3.0
    min_gap: float = 0.1
    min_object_pixels: int = 60
    min_part_pixels: int = 12
    max_retries: int = 50
    camera_scales: tuple[float, ...] = (1.0,)
    joint: tuple[tuple[int, float], ...] | None = None
    look: str = DEFAULT_LOOK

    def __post_init__(self) -> None:
        get_look(self.look)  # ValueError naming the looks
        if self.joint is not None:
            if not self.joint or any(n < 1 or s <= 0 for n, s in self.joint):
                raise ValueError(f"joint must list (object count >= 1, camera scale > 0) pairs, got {self.joint!r}")
        if not self.camera_scales or any(s <= 0 for s in self.camera_scales):
            raise ValueError(f"camera_scales must be positive, got {self.camera_scales!r}")
        if self.complexity not in COMPLEXITIES:
            raise ValueError(f"complexity must be one of {COMPLEXITIES}, got {self.complexity!r}")
        if not 1 <= self.min_objects <= self.max_objects:
            raise ValueError(f"need 1 <= min_objects <= max_objects, got {self.min_objects}, {self.max_objects}")


def streams(seed: int, index: int) -> dict[str, np.random.Generator]:
    """Independent generators for the layout, parts and textures of one image."""
    root = np.random.SeedSequence([int(seed), int(index)])
    lay, parts, tex = root.spawn(3)
    return {"layout": np.random.default_rng(lay), "parts": np.random.default_rng(parts),
            "texture": np.random.default_rng(tex)}


def sample_attributes(rng: np.random.Generator, onto: Ontology, weights: ConceptWeights, n: int) -> list[dict]:
    """Shape, color, material and size of ``n`` objects (``weights`` already validated)."""
    shapes, colors, mats = onto.scene_values("shape"), onto.values("color"), onto.values("material")
    sizes = onto.values("size")
    out = []
    for _ in range(n):
        s = int(rng.choice(len(shapes), p=weights.shape))
        cw = weights.shape_color[s] if weights.shape_color is not None else weights.color
        out.append({"shape": shapes[s], "color": colors[int(rng.choice(len(colors), p=cw))],
                    "material": mats[int(rng.choice(len(mats), p=weights.material))],
                    "size": sizes[int(rng.integers(len(sizes)))]})
    return out


def footprint(center: np.ndarray, half: np.ndarray, theta: float) -> np.ndarray:
    """(4, 2) corners of a rectangle with half extents ``half`` rotated by ``theta`` (radians)."""
    c, s = math.cos(theta), math.sin(theta)
    rot = np.array([[c, -s], [s, c]])
    corners = np.array([[1, 1], [1, -1], [-1, -1], [-1, 1]], dtype=float) * half
    return corners @ rot.T + center


def far_apart(ca: tuple[float, float], ra: float, cb: tuple[float, float], rb: float, gap: float) -> bool:
    """Whether two rectangles with centres ``ca``, ``cb`` and circumradii ``ra``, ``rb`` are so far
    apart that :func:`rectangles_overlap` of their corners with ``gap`` is False for certain.

    Along one of the first rectangle's two orthogonal edge normals the centres are at least
    ``D / sqrt(2)`` apart (``D`` their distance), and neither rectangle reaches further than its
    circumradius from its centre, so that normal separates them by more than ``gap`` when
    ``D > sqrt(2) * (ra + rb + gap)``; the 1e-9 margin is far above the test's rounding."""
    return math.hypot(ca[0] - cb[0], ca[1] - cb[1]) > math.sqrt(2.0) * (ra + rb + gap) + 1e-9


def rectangles_overlap(a: np.ndarray, b: np.ndarray, gap: float = 0.0) -> bool:
    """Separating-axis test of two convex quadrilaterals (corner arrays), with a minimum ``gap``."""
    return _Footprint(a).overlaps(_Footprint(b), gap)


class _Footprint:
    """A quadrilateral (corner array) with what the separating-axis test needs of it, computed on
    first use and kept: the unit normal of each edge and the quadrilateral's own span along it.

    :meth:`overlaps` compares exactly the numbers :func:`rectangles_overlap` always compared
    (the same numpy operations on the same arrays), so it gives the same answers."""

    __slots__ = ("corners", "centre", "radius", "_axes")

    def __init__(self, corners: np.ndarray, centre: tuple[float, float] = (0.0, 0.0), radius: float = 0.0):
        self.corners, self.centre, self.radius = corners, centre, radius
        self._axes: list[tuple[np.ndarray, float, float]] | None = None

    def axes(self) -> list[tuple[np.ndarray, float, float]]:
        """(unit edge normal, min, max of the corners along it) for each of the four edges."""
        if self._axes is None:
            poly, self._axes = self.corners, []
            c = poly.tolist()
            for (x0, y0), (x1, y1) in zip(c, c[1:] + c[:1]):
                axis = np.array([-(y1 - y0), x1 - x0])
                axis /= math.sqrt(axis.dot(axis))  # np.linalg.norm(axis), the same arithmetic
                proj = (poly @ axis).tolist()
                self._axes.append((axis, min(proj), max(proj)))
        return self._axes

    def separates(self, other: "_Footprint", gap: float) -> bool:
        """Whether one of this quadrilateral's edge normals separates ``other`` by at least ``gap``."""
        for axis, lo, hi in self.axes():
            proj = (other.corners @ axis).tolist()
            if hi + gap <= min(proj) or max(proj) + gap <= lo:
                return True
        return False

    def overlaps(self, other: "_Footprint", gap: float) -> bool:
        return not (self.separates(other, gap) or other.separates(self, gap))


@dataclass
class PlacedObject:
    """An object of a sampled layout (world units; rotation in degrees about +z)."""

    shape: str
    color: str
    material: str
    size: str
    scale: float
    rotation: float
    position: tuple[float, float]
    texture: str = "none"
    parts: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class Layout:
    """Objects, camera and light parameters of one image (before parts and textures)."""

    objects: list[PlacedObject]
    camera_eye: tuple[float, float, float]
    camera_scale: float
    key_jitter: tuple[float, float, float]   # added to the renderer's default light directions
    fill_jitter: tuple[float, float, float]
    look: str = DEFAULT_LOOK                 # camera, lights and ground (nsvqa.generation.looks)


class PlacementError(RuntimeError):
    """The sampled objects do not fit without overlap (:func:`sample_layout`): a caller redraws
    the whole layout, as it does for one with a hidden object."""


def sample_layout(rng: np.random.Generator, onto: Ontology, params: SceneParams,
                  extents: Mapping[str, tuple[float, float]]) -> Layout:
    """Objects at non-overlapping rotated footprints in [-area, area]^2, jittered camera/lights.

    Args:
        extents: shape -> (length, width) of the canonical model (longest side 1).

    Raises:
        PlacementError: no placement of all objects found within ``max_retries`` attempts.
    """
    weights = params.weights.validated(onto)
    if params.joint is not None:
        n, cam_scale = params.joint[int(rng.integers(len(params.joint)))]
    else:
        n = int(rng.integers(params.min_objects, params.max_objects + 1))
        cam_scale = params.camera_scales[int(rng.integers(len(params.camera_scales)))]
    attrs = sample_attributes(rng, onto, weights, n)
    placed: list[PlacedObject] = []
    for _ in range(params.max_retries):  # place all objects; start again when one does not fit
        placed = _place(rng, attrs, extents, params)
        if placed is not None:
            break
    else:
        raise PlacementError(f"could not place {n} objects ({', '.join(a['size'] + ' ' + a['shape'] for a in attrs)}) "
                           f"without overlap in [-{params.area}, {params.area}]^2 after {params.max_retries} attempts")
    eye = tuple(float(c * cam_scale + rng.uniform(-CAMERA_JITTER, CAMERA_JITTER)) for c in CAMERA_EYE)
    key = tuple(float(x) for x in rng.uniform(-LIGHT_JITTER, LIGHT_JITTER, 3))
    fill = tuple(float(x) for x in rng.uniform(-LIGHT_JITTER, LIGHT_JITTER, 3))
    return Layout(placed, eye, float(cam_scale), key, fill, params.look)


def _place(rng: np.random.Generator, attrs: list[dict], extents: Mapping[str, tuple[float, float]],
           params: SceneParams, tries: int = 100) -> list[PlacedObject] | None:
    """Positions and rotations for every object, or None when one finds no free spot."""
    placed: list[PlacedObject] = []
    rects: list[_Footprint] = []
    look = get_look(params.look)
    gap = params.min_gap
    for a in attrs:
        scale = look.scale(a["shape"], a["size"])
        length, width = extents[a["shape"]]
        half = np.array([length, width]) * (scale * look.footprint_scale) / 2
        radius = math.hypot(float(half[0]), float(half[1]))
        for _ in range(tries):
            pos = rng.uniform(-params.area, params.area, size=2)
            theta = float(rng.uniform(0, 2 * math.pi))
            centre = (float(pos[0]), float(pos[1]))
            rect = _Footprint(footprint(pos, half, theta), centre, radius)
            # the full test only for the neighbours that could touch (the same answers, faster)
            if not any(rect.overlaps(r, gap) for r in rects
                       if not far_apart(centre, radius, r.centre, r.radius, gap)):
                break
        else:
            return None
        rects.append(rect)
        placed.append(PlacedObject(a["shape"], a["color"], a["material"], a["size"], scale,
                                   math.degrees(theta), (float(pos[0]), float(pos[1]))))
    return placed


def choose_parts(rng: np.random.Generator, onto: Ontology, obj: PlacedObject, visible: Sequence[str],
                 max_parts: int, weights: ConceptWeights) -> dict[str, dict[str, str]]:
    """Up to ``max_parts`` of the ``visible`` parts of ``obj`` with a color and material that
    differ from the object's (at least the color differs), as in Super-CLEVR's ``parts``."""
    k = int(rng.integers(0, min(max_parts, len(visible)) + 1))
    names = [visible[i] for i in sorted(rng.choice(len(visible), size=k, replace=False))] if k else []
    colors, mats = onto.values("color"), onto.values("material")
    out = {}
    for name in names:
        cw = weights.color.copy()
        cw[colors.index(obj.color)] = 0.0
        if cw.sum() <= 0:
            cw = np.ones(len(colors))
            cw[colors.index(obj.color)] = 0.0
        out[name] = {"color": colors[int(rng.choice(len(colors), p=cw / cw.sum()))],
                     "material": mats[int(rng.integers(len(mats)))], "size": obj.size}
    return out


def choose_textures(rng: np.random.Generator, onto: Ontology, obj: PlacedObject) -> None:
    """Hard variant: a random texture for the object and for each of its recoloured parts."""
    tex = onto.values("texture")
    obj.texture = tex[int(rng.integers(len(tex)))]
    for pa in obj.parts.values():
        pa["texture"] = tex[int(rng.integers(len(tex)))]
