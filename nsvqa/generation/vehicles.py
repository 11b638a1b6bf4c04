"""The 21 procedural Super-CLEVR vehicles, built in code from primitives as named parts.

One per shape a scene can hold (``Ontology.scene_values('shape')``): the question generator's
22nd shape, ``addi`` ("regular car"), is never placed by the official image generator and has no
model here either.

Every vehicle is modelled in metres and then normalised to the canonical frame: front toward +x,
left toward +y, up +z, resting on z = 0 (lowest vertex), centred in x/y on its bounding box, the
longest horizontal side exactly 1.0 long. UVs are scaled with the geometry, so one uv unit is one
canonical length unit on every part (textures keep one scale across a vehicle).

Each vehicle's ``parts`` hold exactly the part names of ``parts.per_shape`` in the Super-CLEVR
ontology (in that order), each a visible piece of its own; everything else (chassis, cabin, frame,
fuselage, windows, struts, extra saddles ...) is in ``body``. Plural part names ending in ``_s``
(``door_left_s``, ``footrest_left_s``, ``exhaust_right_s``) are one mesh with several pieces.

The models are deterministic (no randomness) and cached; their arrays are read-only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from executors.ontology import load_ontology

from nsvqa.generation import primitives as P
from nsvqa.generation.meshes import Mesh
from nsvqa.generation.primitives import (beam, box, cylinder, ellipsoid, lathe, loft, merge, mirror_y, prism, tube,
                                         wheel, wing)

__all__ = ["VehicleModel", "build_vehicle", "SHAPES", "CATEGORIES", "category_of"]

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
    """A vehicle in its canonical frame (see the module docstring).

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


# =============================================================================== 2D helpers
def _strip(pts, thick: float, y0: float, y1: float, out=(0.0, 1.0), inset_top: float = 0.0) -> Mesh:
    """A slab of ``thick`` lying on the x-z polyline ``pts`` (offset toward ``out``), extruded
    across y from ``y0`` to ``y1`` (hoods, roofs, tailgates, glass on slopes)."""
    p = np.asarray(pts, float)
    seg = np.diff(p, axis=0)
    sn = np.stack([-seg[:, 1], seg[:, 0]], 1)
    sn /= np.linalg.norm(sn, axis=1, keepdims=True)
    if (sn.sum(0) @ np.asarray(out, float)) < 0:
        sn = -sn
    vn = np.zeros_like(p)
    vn[:-1] += sn
    vn[1:] += sn
    vn /= np.linalg.norm(vn, axis=1, keepdims=True)
    # mitre: keep the slab thickness at the corners
    mit = np.ones(len(p))
    for i in range(1, len(p) - 1):
        mit[i] = 1.0 / max(float(vn[i] @ sn[i]), 0.4)
    poly = np.concatenate([p, (p + vn * (thick * mit)[:, None])[::-1]])
    return prism(poly, y0, y1, plane="xz", inset_top=inset_top)


def _inset_convex(poly, d: float) -> np.ndarray:
    """Convex polygon (k, 2) shrunk by ``d`` (each edge moved inward)."""
    p = np.asarray(poly, float)
    area = 0.5 * np.sum(p[:, 0] * np.roll(p[:, 1], -1) - np.roll(p[:, 0], -1) * p[:, 1])
    if area < 0:
        p = p[::-1]
    k = len(p)
    lines = []
    for i in range(k):
        a, b = p[i], p[(i + 1) % k]
        t = (b - a) / np.linalg.norm(b - a)
        n = np.array([-t[1], t[0]])  # inward for a CCW polygon
        lines.append((a + n * d, t))
    out = []
    for i in range(k):
        (a1, t1), (a2, t2) = lines[i - 1], lines[i]
        m = np.array([t1, -t2]).T
        s = np.linalg.solve(m, a2 - a1)
        out.append(a1 + s[0] * t1)
    return np.array(out)


def _clip_x(poly, xmin: float, xmax: float) -> np.ndarray:
    """Convex polygon (k, 2) clipped to xmin <= x <= xmax (Sutherland-Hodgman)."""
    def clip(pts, keep, inter):
        res = []
        for i in range(len(pts)):
            a, b = pts[i - 1], pts[i]
            ka, kb = keep(a), keep(b)
            if kb:
                if not ka:
                    res.append(inter(a, b))
                res.append(b)
            elif ka:
                res.append(inter(a, b))
        return res

    def at(x0):
        return lambda a, b: a + (b - a) * ((x0 - a[0]) / (b[0] - a[0]))

    pts = [np.asarray(q, float) for q in poly]
    pts = clip(pts, lambda q: q[0] >= xmin, at(xmin))
    if pts:
        pts = clip(pts, lambda q: q[0] <= xmax, at(xmax))
    return np.array(pts)


def _arch(xa: float, R: float, clear: float, n: int = 7, k: float = 1.14):
    """Wheel-arch cut-out points (rear to front) for a side profile whose bottom is at ``clear``."""
    Ra = R * k
    d = math.asin(min(0.999, (R - clear) / Ra))
    return [(xa + Ra * math.cos(a), R + Ra * math.sin(a)) for a in np.linspace(math.pi + d, -d, n)]


def _arc(center, r: float, a0: float, a1: float, n: int, y: float = 0.0) -> np.ndarray:
    """Points of a circular arc in the x-z plane (angles in degrees, 0 = +x, 90 = +z)."""
    a = np.radians(np.linspace(a0, a1, n))
    cx, cz = center
    return np.stack([cx + r * np.cos(a), np.full(n, y), cz + r * np.sin(a)], 1)


def _loop(c1, r1: float, c2, r2: float, y: float, n: int = 7) -> np.ndarray:
    """Closed belt path (x-z plane at ``y``) around two circles: c1 in front of c2."""
    c1, c2 = np.asarray(c1, float), np.asarray(c2, float)
    d = c1 - c2
    base = math.degrees(math.atan2(d[1], d[0]))
    a = _arc(c1, r1, base - 90, base + 90, n, y)
    b = _arc(c2, r2, base + 90, base + 270, n, y)
    return np.concatenate([a, b])


# =============================================================================== cars
@dataclass
class _Car:
    L: float
    W: float
    R: float
    tw: float
    xf: float          # front axle x
    xb: float          # back axle x
    clear: float       # body bottom z
    belt: float        # top of the lower body (window line)
    nose: float        # z of the front top edge
    ws: float          # x of the windscreen base
    rf: float          # x of the roof's front edge
    H: float           # total height (top of the roof)
    rb: float          # x of the roof's back edge
    bb: float          # x of the cabin's back base
    style: str         # "hatch", "sedan", "truck"
    tumble: float = 0.12
    rails: bool = False
    flares: bool = False
    bed_floor: float = 0.0


def _car(shape: str, c: _Car) -> VehicleModel:
    b = _Build(shape)
    L, W, R, tw = c.L, c.W, c.R, c.tw
    roof_t = 0.05
    Hc = c.H - roof_t
    front, rear = L / 2, -L / 2
    # ---- lower body: side profile with wheel arches, extruded across the width
    arches = _arch(c.xb, R, c.clear) + _arch(c.xf, R, c.clear)
    bottom = [(rear + 0.12, c.clear)] + arches + [(front - 0.12, c.clear)]
    nose = [(front, c.clear + 0.16), (front, c.nose - 0.07), (front - 0.1, c.nose)]
    if c.style == "truck":
        top = [(c.ws, c.belt), (c.bb, c.belt), (c.bb, c.bed_floor), (rear + 0.02, c.bed_floor)]
        back = [(rear, c.bed_floor - 0.04), (rear, c.clear + 0.14)]
    else:
        top = [(c.ws, c.belt), (rear + 0.08, c.belt)]
        back = [(rear, c.belt - 0.08), (rear, c.clear + 0.14)]
    b.add(prism(bottom + nose + top + back, -W / 2, W / 2, plane="xz"))
    # ---- cabin (greenhouse) with tumblehome, and its glass
    Wc = W - 0.08
    cab = [(c.ws, c.belt), (c.rf, Hc), (c.rb, Hc), (c.bb, c.belt)]
    b.add(prism(cab, -Wc / 2, Wc / 2, plane="xz", inset_top=c.tumble))

    def half_w(z):
        return Wc / 2 - c.tumble * (z - c.belt) / (Hc - c.belt)

    gl = _inset_convex(cab, 0.055)
    gl[:, 1] = np.maximum(gl[:, 1], c.belt + 0.06)
    n_doors = 1 if c.style == "truck" else 2
    x_d1 = min(c.ws - 0.03, c.xf - R * 1.14 - 0.04)
    x_d0 = c.bb + 0.08 if c.style == "truck" else c.xb + R * 1.14 + 0.06
    split = x_d0 + 0.47 * (x_d1 - x_d0)
    cuts = [-np.inf, split, np.inf] if n_doors == 2 else [-np.inf, np.inf]
    if c.style == "hatch":
        cuts = [-np.inf, x_d0 - 0.02, split, np.inf]
    for lo_x, hi_x in zip(cuts[:-1], cuts[1:]):
        pg = _clip_x(gl, lo_x + 0.04, hi_x - 0.04)
        if len(pg) < 3:
            continue
        z0, z1 = pg[:, 1].min(), pg[:, 1].max()
        y = half_w(z0) + 0.008
        b.win(prism(pg, -y, y, plane="xz", inset_top=c.tumble * (z1 - z0) / (Hc - c.belt)))
    # windscreen and rear window glass on the slopes
    for A, B in (((c.ws, c.belt), (c.rf, Hc)), ((c.rb, Hc), (c.bb, c.belt))):
        A, B = np.array(A), np.array(B)
        if c.style == "hatch" and A[0] < 0:
            continue  # the hatch's rear window sits on the tailgate (below)
        d = (B - A) / np.linalg.norm(B - A)
        gw = 2 * half_w(max(A[1], B[1])) - 0.12
        b.win(_strip([A + d * 0.06, B - d * 0.05], 0.012, -gw / 2, gw / 2, out=(0.3 if A[0] > 0 else -0.3, 1)))
    # ---- roof, hood
    top_w = Wc - 2 * c.tumble + 0.03
    b.part("roof", _strip([(c.rf + 0.03, Hc), (c.rb - 0.01, Hc)], roof_t, -top_w / 2, top_w / 2, out=(0, 1)))
    if c.rails:
        for s in (1, -1):
            b.add(box((0.5 * (c.rf + c.rb), s * (top_w / 2 - 0.06), c.H + 0.04),
                      (abs(c.rf - c.rb) * 0.85, 0.04, 0.05)))
    if c.flares:  # off-road wheel-arch flares
        for xa in (c.xf, c.xb):
            b.add_sym(_fender((xa, R), R * 1.14 + 0.03, -8, 188, 0.1, thick=0.06, n=9, y=W / 2 - 0.03))
    b.part("hood",
           _strip([(front - 0.1, c.nose), (c.ws, c.belt)], 0.035, -(W / 2 - 0.06), W / 2 - 0.06, out=(0, 1)))
    # ---- trunk: deck lid, tailgate or cargo bed
    if c.style == "sedan":
        b.part("trunk",
               _strip([(c.bb - 0.02, c.belt), (rear + 0.08, c.belt), (rear, c.belt - 0.08), (rear, c.belt - 0.2)],
                      0.035, -(W / 2 - 0.06), W / 2 - 0.06, out=(-0.3, 1)))
    elif c.style == "hatch":
        gate_w = 2 * half_w(Hc - 0.1) - 0.02
        path = [(rear, c.clear + 0.32), (rear, c.belt), (c.rb, Hc - 0.04)]
        b.part("trunk", _strip(path, 0.035, -gate_w / 2, gate_w / 2, out=(-1, 0)))
        A, B = np.array([rear - 0.035, c.belt + 0.03]), np.array([c.rb - 0.035, Hc - 0.1])
        b.win(_strip([A, B], 0.01, -(gate_w / 2 - 0.08), gate_w / 2 - 0.08, out=(-1, 0)))
    else:  # truck bed
        x0, x1 = rear - 0.02, c.bb - 0.06
        zf, zt = c.bed_floor, c.belt + 0.02
        bed = [box(((x0 + x1) / 2, 0, zf + 0.015), (x1 - x0, W - 0.1, 0.03)),
               box((x1 - 0.03, 0, (zf + zt) / 2), (0.06, W - 0.04, zt - zf)),   # front wall
               box((x0 + 0.03, 0, (zf + zt) / 2 + 0.02), (0.06, W - 0.04, zt - zf + 0.04))]  # tailgate
        for s in (1, -1):
            z_lo = R * 2.2
            bed.append(box(((x0 + x1) / 2, s * (W / 2 - 0.03), (z_lo + zt) / 2), (x1 - x0, 0.07, zt - z_lo)))
        b.part("trunk", *bed)
    # ---- doors (thin panels proud of the sides) with handles
    door_z0, door_z1 = c.clear + 0.1, c.belt - 0.02
    spans = [("front_left_door", split + 0.01, x_d1)] if n_doors == 2 else [("front_left_door", x_d0, x_d1)]
    if n_doors == 2:
        spans.append(("back_left_door", x_d0, split - 0.01))
    for name, x0, x1 in spans:
        dm = [box(((x0 + x1) / 2, W / 2 + 0.012, (door_z0 + door_z1) / 2), (x1 - x0, 0.03, door_z1 - door_z0)),
              box((x0 + 0.14, W / 2 + 0.035, door_z1 - 0.12), (0.12, 0.025, 0.035))]
        b.pair(name, name.replace("left", "right"), *dm)
    # ---- mirrors on stalks at the A pillar
    mz = c.belt + 0.09
    mirror = [beam([(c.ws - 0.08, Wc / 2 - 0.02, mz - 0.04), (c.ws - 0.1, W / 2 + 0.08, mz)], 0.03, 0.04,
                   normal=(0, 0, 1)),
              box((c.ws - 0.1, W / 2 + 0.15, mz + 0.03), (0.08, 0.2, 0.15))]
    b.pair("left_mirror", "right_mirror", *mirror)
    # ---- lights, bumpers, plates, grille
    hl_z = c.nose - 0.16
    b.pair("left_head_light", "right_head_light", box((front + 0.005, W / 2 - 0.25, hl_z), (0.05, 0.36, 0.15)))
    b.add(box((front + 0.005, 0, hl_z), (0.03, W - 0.9, 0.16)))   # grille
    tl_x = rear - 0.005 if c.style != "truck" else rear - 0.035
    tl_z = c.belt - 0.16 if c.style != "truck" else c.belt - 0.12
    b.pair("left_tail_light", "right_tail_light", box((tl_x, W / 2 - 0.14, tl_z), (0.05, 0.26, 0.2)),
           box((tl_x + 0.09, W / 2 + 0.006, tl_z), (0.16, 0.03, 0.2)))
    bz = c.clear + 0.12
    b.part("front_bumper", box((front + 0.04, 0, bz), (0.16, W - 0.02, 0.2)))
    b.part("back_bumper", box((rear - 0.04, 0, bz), (0.16, W - 0.02, 0.2)))
    if "front_license_plate" in b.parts:
        b.part("front_license_plate", box((front + 0.13, 0, bz), (0.025, 0.5, 0.12)))
    if "back_license_plate" in b.parts:
        b.part("back_license_plate", box((rear - 0.13, 0, bz), (0.025, 0.5, 0.12)))
    # ---- wheels at the corners
    yw = W / 2 - tw / 2 - 0.01
    for xa, fb in ((c.xf, "front"), (c.xb, "back")):
        w = wheel((xa, yw, R), R, tw, tire_ratio=0.36, segments=16)
        b.pair(f"{fb}_left_wheel", f"{fb}_right_wheel", w)
    return b.finish()


_CARS = {
    "suv": _Car(L=4.7, W=1.9, R=0.4, tw=0.28, xf=1.45, xb=-1.4, clear=0.32, belt=1.1, nose=1.02, ws=1.05,
                rf=0.5, H=1.84, rb=-2.26, bb=-2.35, style="hatch", tumble=0.1, rails=True, flares=True),
    "wagon": _Car(L=4.8, W=1.8, R=0.32, tw=0.23, xf=1.42, xb=-1.42, clear=0.2, belt=0.86, nose=0.74, ws=0.95,
                  rf=0.12, H=1.46, rb=-2.12, bb=-2.4, style="hatch", tumble=0.12, rails=True),
    "minivan": _Car(L=4.9, W=1.92, R=0.34, tw=0.24, xf=1.52, xb=-1.5, clear=0.2, belt=0.96, nose=0.86, ws=1.82,
                    rf=0.78, H=1.8, rb=-2.32, bb=-2.45, style="hatch", tumble=0.1),
    "sedan": _Car(L=4.8, W=1.8, R=0.32, tw=0.23, xf=1.42, xb=-1.42, clear=0.18, belt=0.84, nose=0.74, ws=0.92,
                  rf=0.18, H=1.42, rb=-0.95, bb=-1.55, style="sedan", tumble=0.14),
    "truck": _Car(L=5.3, W=1.95, R=0.39, tw=0.28, xf=1.75, xb=-1.62, clear=0.32, belt=1.14, nose=1.06, ws=1.05,
                  rf=0.55, H=1.9, rb=-0.36, bb=-0.42, style="truck", tumble=0.1, bed_floor=0.88),
}


# =============================================================================== buses
def _bus_side_windows(b: _Build, x0: float, x1: float, z0: float, z1: float, y: float, skip, n_max: int = 99,
                      pane: float = 1.3):
    """Glass panes along one side (y sign chooses the side) between x0 and x1, avoiding ``skip``
    spans (doors)."""
    n = max(1, min(n_max, int(round((x1 - x0) / pane))))
    w = (x1 - x0) / n
    for i in range(n):
        xa, xz = x0 + i * w + 0.07, x0 + (i + 1) * w - 0.07
        if any(xa < s1 + 0.05 and xz > s0 - 0.05 for s0, s1 in skip):
            continue
        b.win(box(((xa + xz) / 2, y, (z0 + z1) / 2), (xz - xa, 0.025, z1 - z0)))


def _bus_shell(x0: float, x1: float, W: float, Hb: float, clear: float, axles, R: float,
               front_round: float = 0.3, rear_round: float = 0.2) -> Mesh:
    bottom = [(x0 + 0.1, clear)]
    for xa in sorted(axles):
        bottom += _arch(xa, R, clear, n=7, k=1.12)
    bottom += [(x1 - 0.1, clear)]
    front = [(x1, clear + 0.1), (x1, Hb - front_round), (x1 - front_round * 0.6, Hb)]
    back = [(x0 + rear_round * 0.5, Hb), (x0, Hb - rear_round), (x0, clear + 0.1)]
    return prism(bottom + front + back, -W / 2, W / 2, plane="xz")


def _bus(shape: str) -> VehicleModel:
    b = _Build(shape)
    W, R, tw, clear = 2.55, 0.52, 0.32, 0.32
    roof_t = 0.12
    if shape == "articulated":
        L, H = 18.0, 3.1
    elif shape == "double":
        L, H = 11.2, 4.35
    elif shape == "school":
        L, H, W = 11.0, 3.15, 2.45
    else:
        L, H = 12.0, 3.15
    Hb = H - roof_t
    front, rear = L / 2, -L / 2
    y_side = W / 2 + 0.008
    door_l, door_top = 1.2, min(2.7, Hb - 0.3)
    xf = front - (2.6 if shape != "school" else 0.95)
    xb = rear + (3.3 if shape != "articulated" else 2.6)
    roof_parts = []
    if shape == "articulated":
        j0, j1 = -1.5, -2.5                                     # joint between the two segments
        x_mid_axle = j0 + 1.6
        b.add(_bus_shell(j0, front, W, Hb, clear, [xf, x_mid_axle], R))
        b.add(_bus_shell(rear, j1, W, Hb, clear, [xb], R))
        # bellows: a narrower, slightly lower ribbed section
        for i in range(5):
            xa = j1 + (j0 - j1) * (i + 0.5) / 5
            b.add(box((xa, 0, (clear + Hb) / 2 + 0.05),
                      ((j0 - j1) / 5 * 0.9, W - (0.12 if i % 2 else 0.22), Hb - clear - 0.25)))
        b.add(box(((j0 + j1) / 2, 0, clear + 0.25), (j0 - j1 + 0.6, 0.5, 0.2)))   # turntable
        mid_w = wheel((x_mid_axle, W / 2 - tw / 2 - 0.04, R), R, tw, tire_ratio=0.38, segments=16)
        b.add_sym(mid_w)
        roof_parts += [box(((j0 + front) / 2 - 0.1, 0, Hb + roof_t / 2), (front - j0 - 0.5, W - 0.12, roof_t)),
                       box(((rear + j1) / 2 + 0.05, 0, Hb + roof_t / 2), (j1 - rear - 0.4, W - 0.12, roof_t))]
        spans_r = [(front - 0.25 - door_l, front - 0.25), (0.6 - door_l / 2 + 2.4, 0.6 + door_l / 2 + 2.4),
                   (j1 - 1.8 - door_l, j1 - 1.8)]
        b.part("door_front_right", _bus_door(*spans_r[0], -W / 2, clear, door_top))
        b.part("door_mid_right", _bus_door(*spans_r[1], -W / 2, clear, door_top))
        b.part("door_back_right", _bus_door(*spans_r[2], -W / 2, clear, door_top))
        for x0, x1 in ((j0 + 0.2, front - 0.3), (rear + 0.3, j1 - 0.2)):
            _bus_side_windows(b, x0, x1, 1.25, 2.6, y_side, [])
            _bus_side_windows(b, x0, x1, 1.25, 2.6, -y_side, spans_r)
        b.part("trunk", box((rear - 0.02, 0, 1.15), (0.05, W - 0.7, 1.0)))
        ws_x = front
    else:
        if shape == "school":
            hood_x = front - 1.55
            b.add(_bus_shell(rear, hood_x, W, Hb, clear, [xb], R, front_round=0.15, rear_round=0.15))
            # bonnet: a lower, narrower engine hood in front of the windscreen, over the front axle
            bon = [(hood_x - 0.1, 0.95), (front - 0.05, 0.95), (front, 1.05), (front - 0.06, 1.38),
                   (front - 0.6, 1.5), (hood_x - 0.1, 1.6)]
            b.add(prism(bon, -(W / 2 - 0.32), W / 2 - 0.32, plane="xz"))
            b.add(box(((front + hood_x) / 2 + 0.05, 0, (clear + 1.0) / 2),
                      (front - hood_x - 0.1, W - 2 * tw - 0.25, 1.0 - clear)))
            b.add(box((front + 0.01, 0, 1.2), (0.04, W - 1.2, 0.3)))                        # grille
            for sg in (1, -1):                                                                # wheel fenders
                b.add(_fender((xf, R), R + 0.1, -5, 185, tw + 0.14, thick=0.05, n=9,
                              y=sg * (W / 2 - tw / 2 - 0.04)))
            # rounded roof: a shallow arch across the bus
            ys = np.linspace(-W / 2 + 0.02, W / 2 - 0.02, 9)
            arch = [(y, Hb - 0.02 + 0.22 * (1 - (2 * y / W) ** 2)) for y in ys]
            arch = arch + [(W / 2 - 0.02, Hb - 0.05), (-W / 2 + 0.02, Hb - 0.05)]
            roof_parts.append(prism(arch, rear + 0.08, hood_x - 0.05, plane="yz"))
            spans_r = [(hood_x - 0.15 - 0.9, hood_x - 0.15)]
            spans_l = [(-0.6, 0.6)]
            b.part("door_front_right", _bus_door(*spans_r[0], -W / 2, clear, door_top))
            b.part("door_mid_left", _bus_door(*spans_l[0], W / 2, clear, door_top))
            _bus_side_windows(b, rear + 0.5, hood_x - 0.3, 1.55, 2.45, y_side, spans_l, pane=0.95)
            _bus_side_windows(b, rear + 0.5, hood_x - 1.2, 1.55, 2.45, -y_side, spans_r, pane=0.95)
            b.win(box((hood_x + 0.01, 0, 2.15), (0.03, W - 0.3, 1.0)))                       # windscreen
            b.add(box((rear + 1.2, 0, 0.25), (0.4, W - 0.2, 0.1)))
            ws_x = hood_x
        else:
            b.add(_bus_shell(rear, front, W, Hb, clear, [xf, xb], R))
            ws_x = front
            roof_parts.append(box((-0.05, 0, Hb + roof_t / 2), (L - 0.6, W - 0.12, roof_t)))
            if shape == "double":
                spans_r = [(front - 0.25 - door_l, front - 0.25), (-0.3 - door_l / 2, -0.3 + door_l / 2)]
                spans_l = [(front - 0.25 - door_l, front - 0.25), (-1.2 - door_l / 2, -1.2 + door_l / 2)]
                door_top = 2.3
                b.part("door_front_right", _bus_door(*spans_r[0], -W / 2, clear, door_top))
                b.part("door_mid_right", _bus_door(*spans_r[1], -W / 2, clear, door_top))
                b.part("door_front_left", _bus_door(*spans_l[0], W / 2, clear, door_top))
                b.part("door_mid_left", _bus_door(*spans_l[1], W / 2, clear, door_top))
                for s, sk in ((1, spans_l), (-1, spans_r)):
                    _bus_side_windows(b, rear + 0.3, front - 0.3, 1.2, 2.15, s * y_side, sk)
                    _bus_side_windows(b, rear + 0.3, front - 0.3, 2.75, 3.85, s * y_side, [])
                    b.add(box((0, s * (W / 2 + 0.004), 2.45), (L - 0.4, 0.02, 0.12)))       # deck band
                b.win(box((front + 0.01, 0, 3.3), (0.03, W - 0.3, 0.85)))                  # upper deck front
                b.win(box((rear - 0.01, 0, 3.3), (0.03, W - 0.4, 0.8)))
            else:
                spans_r = [(front - 0.25 - door_l, front - 0.25), (0.3 - door_l / 2, 0.3 + door_l / 2),
                           (xb - R * 1.2 - 0.5 - door_l, xb - R * 1.2 - 0.5)]
                b.part("door_front_right", _bus_door(*spans_r[0], -W / 2, clear, door_top))
                b.part("door_mid_right", _bus_door(*spans_r[1], -W / 2, clear, door_top))
                b.part("door_back_right", _bus_door(*spans_r[2], -W / 2, clear, door_top))
                _bus_side_windows(b, rear + 0.3, front - 0.3, 1.25, 2.6, y_side, [])
                _bus_side_windows(b, rear + 0.3, front - 0.3, 1.25, 2.6, -y_side, spans_r)
            roof_parts.append(box((-0.8, 0, Hb + roof_t + 0.12), (2.2, 1.5, 0.24)))         # roof AC unit
            if "trunk" in b.parts:
                b.part("trunk", box((rear - 0.02, 0, 1.1), (0.05, W - 0.7, 0.9)))
            b.win(box((front + 0.01, 0, 1.9 if shape != "double" else 1.65),
                      (0.03, W - 0.25, 1.3 if shape != "double" else 1.0)))
        b.win(box((rear - 0.01, 0, 2.2), (0.03, W - 0.5, 0.7)))
    b.part("roof", *roof_parts)
    # ---- lights, bumpers, plates, mirrors, wheels
    if shape == "school":
        hl_x, hl_z, hl_y = front + 0.01, 1.2, W / 2 - 0.55
    else:
        hl_x, hl_z, hl_y = front + 0.01, 0.85, W / 2 - 0.32
    b.pair("head_light_left", "head_light_right", box((hl_x, hl_y, hl_z), (0.06, 0.45, 0.28)))
    # tail lights wrap around the rear corners (seen from behind and from the side)
    b.pair("tail_light_left", "tail_light_right", box((rear - 0.015, W / 2 - 0.13, 1.35), (0.05, 0.22, 0.85)),
           box((rear + 0.1, W / 2 + 0.012, 1.35), (0.2, 0.03, 0.85)))
    bz = clear + (0.14 if shape != "school" else 0.3)
    if "bumper_front" in b.parts:
        b.part("bumper_front",
               box((front + 0.07, 0, bz), (0.16, W - 0.05 if shape != "school" else W - 0.15, 0.34)))
    b.part("bumper_back", box((rear - 0.07, 0, bz), (0.16, W - 0.05, 0.34)))
    b.part("license_plate_front", box((front + 0.165, 0, bz), (0.03, 0.7, 0.22)))
    b.part("license_plate_back", box((rear - 0.165, 0, bz), (0.03, 0.7, 0.22)))
    mz = Hb - 0.35 if shape != "double" else 2.6
    mx = ws_x
    stalk = [(mx - 0.05, W / 2 - 0.1, mz), (mx + 0.25, W / 2 + 0.15, mz - 0.05),
             (mx + 0.35, W / 2 + 0.22, mz - 0.35)]
    mirror = [tube(stalk, 0.03, segments=6),
              box((mx + 0.35, W / 2 + 0.22, mz - 0.62), (0.08, 0.24, 0.5))]
    b.pair("mirror_left", "mirror_right", *mirror)
    yw = W / 2 - tw / 2 - 0.04
    b.pair("wheel_front_left", "wheel_front_right", wheel((xf, yw, R), R, tw, tire_ratio=0.38, segments=16))
    b.pair("wheel_back_left", "wheel_back_right", wheel((xb, yw, R), R, tw, tire_ratio=0.38, segments=16))
    return b.finish()


def _bus_door(x0: float, x1: float, y_face: float, clear: float, top: float) -> Mesh:
    """Two door leaves proud of the side at ``y_face`` (sign gives the side)."""
    s = 1.0 if y_face > 0 else -1.0
    y = y_face + s * 0.02
    xm = (x0 + x1) / 2
    z0 = clear + 0.08
    return merge([box(((x0 + xm) / 2 - 0.01, y, (z0 + top) / 2), (xm - x0 - 0.03, 0.045, top - z0)),
                  box(((xm + x1) / 2 + 0.01, y, (z0 + top) / 2), (x1 - xm - 0.03, 0.045, top - z0))])


# =============================================================================== motorbikes
def _fork(head_top, head_bot, axle, half: float, r: float) -> Mesh:
    """Two fork legs from the lower clamp to the axle (at y = ±half), clamps and steerer."""
    ht, hb, ax = (np.asarray(p, float) for p in (head_top, head_bot, axle))
    legs = [tube([hb + (0, s * half, 0), ax + (0, s * half, 0)], r, segments=8) for s in (1, -1)]
    clamps = [beam([p + (0, half + r * 1.5, 0), p - (0, half + r * 1.5, 0)], 0.05, 0.08, normal=(0, 0, 1))
              for p in (ht, hb)]
    axle_rod = cylinder(ax + (0, half + r, 0), ax - (0, half + r, 0), r * 0.5, segments=6)
    return merge(legs + clamps + [axle_rod, tube([hb, ht], r * 1.1, segments=8)])


def _handle(clamp, half: float, rise: float = 0.0, back: float = 0.0, r: float = 0.016,
            grip_r: float = 0.022) -> Mesh:
    """Left half of a handlebar from the clamp to the grip end (mirror for the right)."""
    c = np.asarray(clamp, float)
    p1 = c + (0, 0.02, 0)
    p2 = c + (-back * 0.3, half * 0.55, rise * 0.7)
    p3 = c + (-back, half, rise)
    grip0 = c + (-back, half * 0.72, rise) if rise == 0 and back == 0 else p2 + (p3 - p2) * 0.4
    lever = beam([p2 + (0.02, 0.02, 0), p3 + (0.1, -0.02, -0.01)], 0.015, 0.025, normal=(0, 0, 1))
    return merge([tube([p1, p2, p3], r, segments=6), cylinder(grip0, p3 + (p3 - p2) * 0.05, grip_r, segments=8),
                  lever])


def _mirror(base, head) -> Mesh:
    base, head = np.asarray(base, float), np.asarray(head, float)
    return merge([tube([base, head], 0.008, segments=5),
                  ellipsoid(head + (0, 0, 0.03), (0.02, 0.06, 0.045), rows=4, segments=8)])


def _mb_wheel(x: float, R: float, tw: float, **kw) -> Mesh:
    return wheel((x, 0, R), R, tw, **kw)


def _fender(center, r: float, a0: float, a1: float, width: float, thick: float = 0.012, n: int = 8,
            y: float = 0.0) -> Mesh:
    """A mudguard: a flat band of ``width`` (along y) bent on an arc of radius ``r`` (x-z plane)."""
    return beam(_arc(center, r, a0, a1, n, y), width, thick, normal=(0, 1, 0))


def _chain(c1, r1: float, c2, r2: float, y: float) -> Mesh:
    return beam(_loop(c1, r1, c2, r2, y), 0.02, 0.014, normal=(0, 1, 0), closed=True)


def _pegs(points, y: float, length: float = 0.1, r: float = 0.015) -> Mesh:
    return merge([cylinder((x, y, z), (x, y + length, z), r, segments=6) for x, z in points])


def _exhaust(path, r: float, muffler_from: float, muffler_r: float) -> Mesh:
    """A pipe along ``path`` ending in a muffler over its last ``muffler_from`` metres."""
    p = np.asarray(path, float)
    d = p[-1] - p[-2]
    d /= np.linalg.norm(d)
    start = p[-1] - d * muffler_from
    return merge([tube(p[:-1].tolist() + [start.tolist()], r, segments=7),
                  cylinder(start - d * 0.02, p[-1], muffler_r, radius1=muffler_r * 0.85, segments=10)])


def _motorbike(shape: str) -> VehicleModel:
    b = _Build(shape)
    if shape == "chopper":
        Rf, Rb, twf, twb = 0.34, 0.31, 0.09, 0.22
        xf, xb = 1.05, -0.85
        rake, head_top = 38.0, np.array([0.42, 0, 1.02])
    elif shape == "dirtbike":
        Rf, Rb, twf, twb = 0.36, 0.34, 0.09, 0.12
        xf, xb = 0.74, -0.74
        rake, head_top = 27.0, np.array([0.43, 0, 1.08])
    elif shape == "scooter":
        Rf, Rb, twf, twb = 0.22, 0.22, 0.11, 0.12
        xf, xb = 0.66, -0.62
        rake, head_top = 24.0, np.array([0.5, 0, 0.98])
    else:  # cruiser (touring)
        Rf, Rb, twf, twb = 0.33, 0.33, 0.13, 0.17
        xf, xb = 0.8, -0.82
        rake, head_top = 30.0, np.array([0.5, 0, 0.98])
    axle_f, axle_b = np.array([xf, 0, Rf]), np.array([xb, 0, Rb])
    d = np.array([-math.sin(math.radians(rake)), 0, math.cos(math.radians(rake))])   # steering axis, up
    # fork from the axle up the steering axis to the head (head_top given; head bottom on the axis)
    t = np.dot(head_top - axle_f, d)
    head_top = axle_f + d * t
    head_bot = head_top - d * 0.2
    fork_half = twf / 2 + 0.03
    knob = 0.06 if shape == "dirtbike" else 0.0
    spokes = 10 if shape in ("chopper", "dirtbike") else 0
    segs = 32 if knob else 20
    b.part("wheel_front", _mb_wheel(xf, Rf, twf, tire_ratio=0.3 if shape != "scooter" else 0.42, segments=segs,
                                    knobs=knob, spokes=spokes))
    b.part("wheel_back", _mb_wheel(xb, Rb, twb, tire_ratio=0.32 if shape != "scooter" else 0.42, segments=segs,
                                   knobs=knob, spokes=spokes))
    b.part("fork", _fork(head_top, head_bot, axle_f, fork_half, 0.022 if shape != "dirtbike" else 0.028))
    # steering head tube (body)
    b.add(tube([head_bot - d * 0.02, head_top + d * 0.02], 0.035, segments=8))
    clamp = head_top + d * 0.05 + np.array([-0.02, 0, 0])
    b.add(tube([head_top, clamp], 0.02, segments=6))
    if shape == "chopper":
        pivot = np.array([-0.32, 0, 0.36])
        # frame: backbone from the head to the seat, down tubes to the engine cradle, swingarm
        b.add(tube([head_top, (-0.05, 0, 0.82), (-0.42, 0, 0.66), (-0.55, 0, 0.62)], 0.028, segments=7),
              tube([head_bot, (0.25, 0, 0.3), (-0.25, 0, 0.22), pivot], 0.026, segments=7))
        b.add_sym(tube([pivot + (0, 0.07, 0), axle_b + (0, 0.14, 0)], 0.022, segments=6),
                  tube([(-0.55, 0.07, 0.62), axle_b + (0, 0.14, 0.02)], 0.018, segments=6))
        b.part("gas_tank", loft([(0.33, 0.92, 0, 0), (0.28, 0.92, 0.08, 0.07), (0.1, 0.9, 0.13, 0.1),
                                 (-0.1, 0.84, 0.11, 0.09), (-0.2, 0.8, 0, 0)], k=12))
        b.part("seat", loft([(-0.18, 0.72, 0.02, 0.02), (-0.25, 0.68, 0.13, 0.05), (-0.45, 0.69, 0.16, 0.06),
                             (-0.58, 0.75, 0.1, 0.05), (-0.62, 0.78, 0.02, 0.02)], k=10))
        # V-twin engine: crankcase + two cylinders in a V
        eng = [box((-0.02, 0, 0.33), (0.3, 0.2, 0.2)),
               cylinder((0.02, 0, 0.4), (0.18, 0, 0.7), 0.065, segments=10),
               cylinder((-0.05, 0, 0.4), (-0.17, 0, 0.68), 0.065, segments=10),
               box((0.2, 0, 0.72), (0.12, 0.1, 0.06)), box((-0.19, 0, 0.71), (0.12, 0.1, 0.06))]
        b.part("engine", *eng)
        b.part("panel", box((-0.3, 0.085, 0.48), (0.22, 0.03, 0.18)),
               box((-0.3, -0.085, 0.48), (0.22, 0.03, 0.18)))
        b.part("fender_front", _fender((xf, Rf), Rf + 0.05, 20, 120, twf + 0.05))
        b.part("fender_back", _fender((xb, Rb), Rb + 0.05, 20, 150, twb + 0.06))
        b.part("drive_chain", _chain((-0.02, 0.3), 0.07, (xb, Rb), 0.12, 0.16))
        b.pair("footrest_left_s", "footrest_right_s",
               _pegs([(0.3, 0.3), (-0.35, 0.4)], 0.13, length=0.14, r=0.022),
               box((0.3, 0.22, 0.33), (0.12, 0.08, 0.02)))
        pipes = ([(0.18, -0.06, 0.62), (0.22, -0.16, 0.42), (0.05, -0.18, 0.28), (-1.02, -0.18, 0.3)],
                 [(-0.17, -0.06, 0.62), (-0.22, -0.2, 0.5), (-0.35, -0.24, 0.44), (-1.05, -0.24, 0.46)])
        b.part("exhaust_right_s", *[_exhaust(pipe, 0.025, 0.45, 0.042) for pipe in pipes])
        # ape-hanger bars
        b.pair("handle_left", "handle_right", _handle(clamp, 0.36, rise=0.25, back=0.14))
        b.pair("mirror_left", "mirror_right", _mirror(clamp + (-0.05, 0.18, 0.12), clamp + (-0.08, 0.3, 0.35)))
        b.part("headlight_center",
               lathe([(0, 0), (0.08, 0), (0.08, 0), (0.075, -0.08), (0, -0.1)], center=head_bot + (0.09, 0, -0.02),
                     axis="x", segments=12))
        b.part("windscreen",
               _strip([(head_top[0] + 0.07, head_top[2] - 0.02), (head_top[0] + 0.02, head_top[2] + 0.3)],
                      0.012, -0.17, 0.17, out=(1, 0)))
        b.part("taillight_center", box((-0.93, 0, 0.68), (0.06, 0.14, 0.07)))
        # sissy bar
        b.add(tube([(-0.58, 0.1, 0.68), (-0.66, 0.1, 1.0), (-0.66, -0.1, 1.0), (-0.58, -0.1, 0.68)], 0.014,
                   segments=5))
        b.add(box((-0.85, 0, 0.64), (0.2, 0.04, 0.04)))
    elif shape == "dirtbike":
        pivot = np.array([-0.12, 0, 0.48])
        b.add(tube([head_top, (0.0, 0, 0.86), (-0.32, 0, 0.86)], 0.025, segments=7),
              tube([head_bot, (0.18, 0, 0.3), (-0.08, 0, 0.26), pivot, (-0.32, 0, 0.86)], 0.024, segments=7))
        b.add_sym(beam([pivot + (0, 0.07, 0), axle_b + (0, 0.08, 0)], 0.06, 0.03, normal=(0, 0, 1)))
        b.add(tube([pivot + (0, 0, 0.1), (-0.32, 0, 0.5)], 0.035, segments=6))           # shock
        b.part("gas_tank", loft([(0.32, 0.86, 0, 0), (0.28, 0.88, 0.1, 0.07), (0.1, 0.88, 0.13, 0.09),
                                 (-0.05, 0.9, 0.1, 0.06), (-0.08, 0.92, 0, 0)], k=10))
        b.part("seat", loft([(0.05, 0.95, 0.02, 0.02), (0.0, 0.96, 0.1, 0.04), (-0.4, 0.96, 0.1, 0.04),
                             (-0.6, 0.94, 0.06, 0.03), (-0.64, 0.93, 0, 0)], k=8))
        b.part("engine", box((0.02, 0, 0.38), (0.3, 0.18, 0.22)),
               cylinder((0.05, 0, 0.45), (0.12, 0, 0.7), 0.07, segments=10),
               box((0.13, 0, 0.72), (0.12, 0.11, 0.05)))
        # radiator shrouds + front number plate = front cover
        b.part("cover_front",
               *[_strip([(0.35, 0.78), (0.08, 0.9), (-0.05, 0.72)], 0.015, s * 0.11, s * 0.15,
                        out=(0, 1)) for s in (1, -1)],
               _strip([(head_top[0] + 0.05, head_top[2] - 0.25), (head_top[0] + 0.12, head_top[2] + 0.02)], 0.012,
                      -0.11, 0.11, out=(1, 0)))
        # rear side plates under the seat = back cover; centre side panel below the seat = panel
        b.part("cover_back", _strip([(-0.3, 0.92), (-0.72, 0.98), (-0.7, 0.82)], 0.01, 0.1, 0.115, out=(0, 1)),
               _strip([(-0.3, 0.92), (-0.72, 0.98), (-0.7, 0.82)], 0.01, -0.115, -0.1, out=(0, 1)))
        b.part("panel", box((-0.18, 0.1, 0.75), (0.24, 0.025, 0.2)), box((-0.18, -0.1, 0.75), (0.24, 0.025, 0.2)))
        b.part("fender_front",
               _strip([(head_bot[0] + 0.38, head_bot[2] - 0.12), (head_bot[0] + 0.1, head_bot[2] - 0.08),
                       (head_bot[0] - 0.25, head_bot[2] - 0.1)], 0.012, -0.07, 0.07, out=(0, 1)))
        b.part("drive_chain", _chain((0.0, 0.36), 0.05, (xb, Rb), 0.1, 0.1))
        b.pair("footrest_left_s", "footrest_right_s", _pegs([(-0.06, 0.36)], 0.09, length=0.14, r=0.022))
        b.part("exhaust_right_s",
               _exhaust([(0.12, -0.04, 0.6), (0.2, -0.1, 0.45), (0.0, -0.13, 0.5), (-0.3, -0.13, 0.78),
                         (-0.72, -0.13, 0.85)], 0.024, 0.32, 0.05))
        b.pair("handle_left", "handle_right", _handle(clamp, 0.4, rise=0.04, back=0.05))
        # rear fender (body): long, high tail
        b.add(_strip([(-0.6, 0.92), (-0.92, 0.96)], 0.012, -0.07, 0.07, out=(0, 1)))
    elif shape == "scooter":
        b.add(tube([head_bot, (0.35, 0, 0.3), (0.1, 0, 0.22), (-0.3, 0, 0.28)], 0.03, segments=7))
        b.part("panel", _strip([(0.38, 0.3), (-0.22, 0.3)], 0.04, -0.17, 0.17, out=(0, 1)))            # floorboard
        # leg shield and front apron
        b.part("cover_front",
               _strip([(0.42, 0.3), (0.5, 0.7), (0.5, 0.85)], 0.05, -0.22, 0.22, out=(1, 0), inset_top=0.05),
               loft([(0.66, 0.73, 0, 0), (0.62, 0.74, 0.1, 0.14), (0.5, 0.7, 0.14, 0.2), (0.45, 0.68, 0.13, 0.18)],
                    k=10))
        b.part("cover_back", loft([(-0.18, 0.5, 0.02, 0.02), (-0.2, 0.5, 0.15, 0.2), (-0.45, 0.55, 0.17, 0.2),
                                   (-0.75, 0.62, 0.12, 0.14), (-0.82, 0.64, 0, 0)], k=12))
        b.part("seat", loft([(0.0, 0.76, 0.02, 0.02), (-0.05, 0.78, 0.16, 0.05), (-0.45, 0.8, 0.16, 0.06),
                             (-0.66, 0.83, 0.1, 0.04), (-0.7, 0.83, 0, 0)], k=10))
        b.part("engine", box((-0.35, 0.11, 0.3), (0.34, 0.1, 0.16)),
               cylinder((-0.18, 0.1, 0.3), (-0.05, 0.1, 0.25), 0.06, segments=8))
        b.part("drive_chain",
               beam(_loop((-0.25, 0.3), 0.06, (xb, Rb), 0.09, -0.1), 0.05, 0.06, normal=(0, 1, 0), closed=True))
        b.part("fender_back", _fender((xb, Rb), Rb + 0.05, 40, 150, twb + 0.06))
        b.part("exhaust_left_s",
               _exhaust([(-0.3, 0.1, 0.22), (-0.45, 0.15, 0.2), (-0.85, 0.15, 0.3)], 0.025, 0.3, 0.055))
        b.pair("handle_left", "handle_right", _handle(clamp, 0.33, rise=0.0, back=0.04))
        cx, cz = clamp[0], clamp[2]
        b.add(loft([(cx + 0.12, cz, 0, 0), (cx + 0.08, cz, 0.1, 0.06), (cx - 0.08, cz, 0.12, 0.07),
                    (cx - 0.12, cz, 0, 0)], k=8))  # bar cover
        b.part("headlight_center", box((clamp[0] + 0.12, 0, clamp[2]), (0.06, 0.16, 0.07), taper=(0.6, 0.9)))
        b.pair("mirror_left", "mirror_right", _mirror(clamp + (0, 0.12, 0.03), clamp + (-0.05, 0.24, 0.24)))
        b.part("taillight_center", box((-0.82, 0, 0.6), (0.05, 0.16, 0.07)))
    else:  # cruiser / touring
        pivot = np.array([-0.3, 0, 0.38])
        b.add(tube([head_top, (0.05, 0, 0.76), (-0.4, 0, 0.66), (-0.65, 0, 0.66)], 0.03, segments=7),
              tube([head_bot, (0.3, 0, 0.28), (-0.2, 0, 0.22), pivot], 0.028, segments=7))
        b.add_sym(tube([pivot + (0, 0.08, 0), axle_b + (0, 0.12, 0)], 0.024, segments=6))
        b.part("gas_tank", loft([(0.42, 0.82, 0, 0), (0.38, 0.84, 0.11, 0.08), (0.15, 0.84, 0.17, 0.11),
                                 (-0.08, 0.78, 0.15, 0.08), (-0.14, 0.74, 0, 0)], k=12))
        b.part("seat", loft([(-0.08, 0.7, 0.02, 0.02), (-0.12, 0.68, 0.18, 0.06), (-0.42, 0.68, 0.18, 0.06),
                             (-0.55, 0.78, 0.16, 0.07), (-0.75, 0.8, 0.13, 0.06), (-0.8, 0.79, 0, 0)], k=10))
        b.add(box((0.02, 0, 0.34), (0.36, 0.24, 0.22)),                 # engine (not a part here)
               cylinder((0.07, 0, 0.42), (0.25, 0, 0.66), 0.075, segments=10),
               cylinder((-0.02, 0, 0.42), (-0.14, 0, 0.64), 0.075, segments=10))
        b.part("panel", box((-0.3, 0.1, 0.48), (0.22, 0.03, 0.2)), box((-0.3, -0.1, 0.48), (0.22, 0.03, 0.2)))
        # batwing fairing on the fork with the windscreen above it
        fx = head_top[0] + 0.12
        hz = head_top[2]
        b.part("cover_front", loft([(fx + 0.12, hz - 0.08, 0, 0), (fx + 0.1, hz - 0.08, 0.12, 0.08),
                                    (fx, hz - 0.06, 0.4, 0.14), (fx - 0.12, hz - 0.05, 0.42, 0.15),
                                    (fx - 0.16, hz - 0.05, 0.0, 0.0)], k=12))
        b.part("windscreen",
               _strip([(fx - 0.02, hz + 0.06), (fx - 0.12, hz + 0.32)], 0.012, -0.3, 0.3, out=(1, 0.3)))
        b.part("headlight_center",
               lathe([(0, 0), (0.07, 0), (0.07, 0), (0, 0.04)], center=(fx + 0.11, 0, hz - 0.08), axis="x",
                     segments=10))
        b.pair("headlight_left", "headlight_right",
               lathe([(0, 0), (0.055, 0), (0.055, 0), (0, 0.04)], center=(fx + 0.04, 0.25, hz - 0.2), axis="x",
                     segments=8))
        # saddlebags = back cover, with the tail lights and plate on the rear fender
        bag = loft([(-0.55, 0.46, 0, 0, 0.27), (-0.57, 0.46, 0.09, 0.15, 0.27), (-0.92, 0.47, 0.1, 0.16, 0.27),
                    (-0.98, 0.48, 0, 0, 0.27)], k=10)
        b.part("cover_back", bag, mirror_y(bag))
        b.part("fender_front", _fender((xf, Rf), Rf + 0.04, 25, 135, twf + 0.06, thick=0.02))
        b.part("fender_back", _fender((xb, Rb), Rb + 0.05, 0, 160, twb + 0.08, thick=0.02))
        b.pair("taillight_left", "taillight_right", box((-1.07, 0.1, 0.64), (0.06, 0.09, 0.07)))
        b.part("license_plate", box((-1.1, 0, 0.5), (0.02, 0.24, 0.14)))
        b.part("drive_chain", _chain((-0.02, 0.32), 0.08, (xb, Rb), 0.12, 0.13))
        b.pair("footrest_left_s", "footrest_right_s", box((0.2, 0.22, 0.3), (0.25, 0.1, 0.02)),
               _pegs([(-0.45, 0.45)], 0.17, length=0.08))
        pipe = [(0.25, 0.05, 0.62), (0.32, 0.14, 0.4), (0.1, 0.18, 0.25), (-1.05, 0.18, 0.3)]
        exh = _exhaust(pipe, 0.026, 0.45, 0.048)
        b.pair("exhaust_left_s", "exhaust_right_s", exh)
        b.pair("handle_left", "handle_right", _handle(clamp, 0.36, rise=0.05, back=0.12))
        b.pair("mirror_left", "mirror_right",
               _mirror((fx - 0.1, 0.33, hz - 0.02), (fx - 0.1, 0.4, hz + 0.1)))
    return b.finish()


# =============================================================================== aeroplanes
def _fuselage(L: float, D: float, z: float, nose: float = 0.12, tail: float = 0.3, tail_up: float = 0.3,
              k: int = 14, exponent: float = 2.0, hw_scale: float = 1.0) -> Mesh:
    """A round fuselage from x = L/2 (nose) to -L/2 (tail), centreline at height ``z``."""
    r = D / 2
    xs = [L / 2, L / 2 - nose * L * 0.25, L / 2 - nose * L * 0.6, L / 2 - nose * L, -L / 2 + tail * L,
          -L / 2 + tail * L * 0.45, -L / 2]
    sc = [0.0, 0.55, 0.85, 1.0, 1.0, 0.6, 0.12]
    zc = [z - r * 0.2, z - r * 0.12, z - r * 0.04, z, z, z + r * tail_up * 0.6, z + r * tail_up]
    return loft([(x, zz, r * s * hw_scale, r * s) for x, zz, s in zip(xs, zc, sc)], k=k, exponent=exponent)


def _gear(x: float, y: float, z_top: float, R: float, w: float, twin: bool = False) -> tuple[Mesh, Mesh]:
    """(wheel(s), strut) of a landing gear leg whose wheels touch z = 0."""
    if twin:
        wh = merge([wheel((x, y + s * (w * 0.65), R), R, w, tire_ratio=0.4, segments=12) for s in (1, -1)])
    else:
        wh = wheel((x, y, R), R, w, tire_ratio=0.4, segments=12)
    strut = merge([tube([(x, y, R), (x, y, z_top)], R * 0.18, segments=6),
                   cylinder((x, y - w * 1.3, R), (x, y + w * 1.3, R), R * 0.12, segments=6)])
    return wh, strut


def _propeller(center, r: float, blades: int, chord: float, spinner: float, phase: float = 20.0) -> Mesh:
    c = np.asarray(center, float)
    ms = [lathe([(spinner, 0), (spinner, 0), (spinner * 0.6, spinner * 1.1), (0, spinner * 1.6)],
                center=c, axis="x", segments=10)]
    for k in range(blades):
        a = math.radians(phase + 360.0 * k / blades)
        dvec = np.array([0, math.cos(a), math.sin(a)])
        tip = c + dvec * r
        ms.append(beam([c + dvec * spinner * 0.5 + (0.02 * r, 0, 0), tip + (0.02 * r, 0, 0)], chord, chord * 0.18,
                       normal=np.cross(dvec, (1, 0, 0)) * 0.9 + np.array([0.45, 0, 0])))
    return merge(ms)


def _aeroplane(shape: str) -> VehicleModel:
    b = _Build(shape)
    if shape == "airliner":
        L, D, span = 38.0, 4.0, 35.0
        zc = 3.6
        b.add(_fuselage(L, D, zc, nose=0.1, tail=0.22, tail_up=0.5))
        # cockpit windows and cabin window strips
        b.win(_strip([(L / 2 - 1.6, zc + 0.9), (L / 2 - 2.9, zc + 1.45)], 0.05, -1.0, 1.0, out=(1, 1)))
        for s in (1, -1):
            b.win(box((-1.5, s * (D / 2 - 0.02), zc + 0.65), (L * 0.62, 0.08, 0.35)))
        wr = (2.0, 1.6, zc - 1.2)
        lw = [wing((wr[0], 0.0, wr[2]), (wr[0] - 10.5, span / 2, wr[2] + 1.6), 7.5, 1.8, thickness=0.12)]
        b.pair("wing_left", "wing_right", *lw)
        b.add(box((0.0, 0, zc - 1.6), (9.0, 3.2, 1.0)))                                       # wing box fairing
        # engines under the wings with fans (the "propeller" part) in their intakes
        ex, ey, ez = 3.2, 6.2, zc - 2.0
        nac = lathe([(0, 3.2), (1.1, 3.2), (1.1, 3.2), (1.25, 2.2), (1.2, -0.6), (0.75, -1.6), (0.45, -1.6),
                     (0, -1.0)], center=(ex - 2.0, ey, ez), axis="x", segments=14)
        pylon = box((ex - 2.2, ey, ez + 1.35), (3.0, 0.35, 1.0))
        b.pair("engine_left", "engine_right", nac)
        b.add_sym(pylon)
        fan = [lathe([(0, 0), (1.0, 0), (1.0, 0), (0.5, 0.35), (0, 0.8)], center=(ex + 1.25, s * ey, ez), axis="x",
                     segments=12) for s in (1, -1)]
        b.part("propeller", *fan)
        fin = wing((-L / 2 + 6.5, 0, zc + 1.4), (-L / 2 + 1.6, 0, zc + 8.2), 6.2, 2.4, thickness=0.1,
                   vertical=True)
        b.part("fin", fin)
        b.pair("tailplane_left", "tailplane_right",
               wing((-L / 2 + 5.5, 0.5, zc + 0.6), (-L / 2 + 1.8, 6.3, zc + 1.3), 4.2, 1.6, thickness=0.1))
        doors = [box((x, D / 2 - 0.28, zc + 0.2), (0.9, 0.62, 1.9), taper=(1, 0.5))
                 for x in (L / 2 - 4.0, 4.0, -4.5, -L / 2 + 7.5)]
        b.pair("door_left_s", "door_right_s", *doors)
        nz_wh, nz_st = _gear(L / 2 - 5.0, 0, zc - 1.0, 0.7, 0.42, twin=True)
        b.part("wheel_front", nz_wh)
        b.add(nz_st)
        mw, ms = _gear(-2.5, 3.0, zc - 1.0, 0.95, 0.55, twin=True)
        b.pair("wheel_back_left", "wheel_back_right", mw)
        b.add_sym(ms)
    elif shape == "jet":
        # a regional turboprop: straight high wings, engines with propellers, T-tail
        L, D, span = 20.0, 2.6, 24.0
        zc = 2.4
        b.add(_fuselage(L, D, zc, nose=0.14, tail=0.28, tail_up=0.6))
        b.win(_strip([(L / 2 - 1.5, zc + 0.45), (L / 2 - 2.4, zc + 0.95)], 0.04, -0.7, 0.7, out=(1, 1)))
        for s in (1, -1):
            b.win(box((-0.5, s * (D / 2 - 0.02), zc + 0.35), (L * 0.5, 0.08, 0.3)))
        wz = zc + D / 2 - 0.2
        b.pair("wing_left", "wing_right",
               wing((2.2, 0.0, wz), (1.2, span / 2, wz + 0.3), 3.2, 1.5, thickness=0.14))
        b.add(loft([(3.0, wz, 0, 0), (2.5, wz + 0.1, 0.8, 0.3), (-1.5, wz + 0.05, 0.8, 0.3), (-2.0, wz, 0, 0)],
                   k=8))
        ex, ey, ez = 2.9, 4.3, wz - 0.25
        nac = lathe([(0, 1.8), (0.45, 1.8), (0.45, 1.8), (0.6, 1.2), (0.62, -1.5), (0.3, -3.5), (0, -3.9)],
                    center=(ex - 1.8, ey, ez), axis="x", segments=12)
        b.pair("engine_left", "engine_right", nac)
        b.part("propeller", _propeller((ex + 0.05, ey, ez), 1.7, 4, 0.35, 0.32),
               _propeller((ex + 0.05, -ey, ez), 1.7, 4, 0.35, 0.32))
        ftop = zc + 4.4
        b.part("fin",
               wing((-L / 2 + 4.2, 0, zc + 0.8), (-L / 2 + 1.2, 0, ftop), 3.6, 1.9, thickness=0.12, vertical=True))
        b.pair("tailplane_left", "tailplane_right",
               wing((-L / 2 + 1.5, 0.1, ftop - 0.05), (-L / 2 + 0.7, 3.6, ftop + 0.1), 1.9, 1.0, thickness=0.1))
        b.part("door_left_s", box((L / 2 - 3.5, D / 2 - 0.32, zc - 0.05), (0.85, 0.62, 1.6), taper=(1, 0.5)),
               box((-L / 2 + 5.0, D / 2 - 0.32, zc), (0.8, 0.62, 1.3), taper=(1, 0.5)))
        nz_wh, nz_st = _gear(L / 2 - 2.8, 0, zc - 0.6, 0.45, 0.26, twin=True)
        b.part("wheel_front", nz_wh)
        b.add(nz_st)
        mw, ms = _gear(ex - 1.6, ey, ez - 0.4, 0.6, 0.34, twin=True)
        b.pair("wheel_back_left", "wheel_back_right", mw)
        b.add_sym(ms)
    elif shape == "fighter":
        L = 17.0
        zc = 1.9
        b.add(loft([(L / 2, zc - 0.1, 0, 0), (L / 2 - 1.5, zc - 0.05, 0.35, 0.35), (L / 2 - 4.0, zc, 0.65, 0.62),
                    (L / 2 - 7.0, zc, 0.8, 0.7), (-L / 2 + 2.0, zc, 1.05, 0.62), (-L / 2 + 0.4, zc, 0.9, 0.5)],
                   k=12))
        b.win(ellipsoid((L / 2 - 4.2, 0, zc + 0.6), (1.8, 0.45, 0.45), rows=5, segments=10))  # canopy
        # intakes + engine nacelles running to twin nozzles
        eng = [loft([(2.6, zc - 0.15, 0, 0, 1.05), (2.5, zc - 0.15, 0.4, 0.5, 1.05),
                     (-L / 2 + 1.0, zc - 0.05, 0.55, 0.55, 0.62),
                     (-L / 2 + 0.2, zc - 0.05, 0.48, 0.48, 0.62)], k=10, exponent=3.0),
               lathe([(0.5, 0), (0.44, -1.1), (0.44, -1.1), (0.3, -1.0), (0, -0.8)],
                     center=(-L / 2 + 0.2, 0.62, zc - 0.05), axis="x", segments=10)]
        b.pair("engine_left", "engine_right", *eng)
        b.pair("wing_left", "wing_right",
               wing((2.2, 0.9, zc - 0.1), (-3.8, 5.4, zc - 0.3), 7.6, 1.4, thickness=0.05))
        b.pair("tailplane_left", "tailplane_right",
               wing((-L / 2 + 2.4, 1.0, zc - 0.1), (-L / 2 + 0.7, 3.4, zc - 0.2), 2.4, 0.9, thickness=0.05))
        fin_l = wing((-L / 2 + 4.3, 0.9, zc + 0.45), (-L / 2 + 1.4, 1.55, zc + 3.6), 3.4, 1.3, thickness=0.06,
                     vertical=True)
        b.part("fin", fin_l, mirror_y(fin_l))
        # landing gear in the body (the fighter lists no wheel parts)
        for x, y in ((L / 2 - 3.5, 0.0), (-1.5, 1.3), (-1.5, -1.3)):
            wh, st = _gear(x, y, zc - 0.4, 0.38, 0.22)
            b.add(wh, st)
        b.add(P.cone((L / 2 - 0.2, 0, zc - 0.1), (L / 2 + 1.0, 0, zc - 0.1), 0.05, segments=5))  # pitot
    else:  # biplane
        L, span = 7.2, 9.6
        zc = 1.45
        b.add(loft([(L / 2 - 0.3, zc + 0.05, 0.5, 0.55), (L / 2 - 1.3, zc + 0.05, 0.55, 0.6),
                    (-0.8, zc + 0.05, 0.45, 0.55), (-L / 2 + 0.15, zc + 0.3, 0.08, 0.12),
                    (-L / 2, zc + 0.32, 0, 0)], k=12, exponent=3.0))
        b.add(lathe([(0.5, 0.3), (0.62, 0.2), (0.62, -0.4), (0.5, -0.55)], center=(L / 2 - 0.3, 0, zc + 0.05),
                    axis="x", segments=14))  # engine cowl
        b.add(box((0.6, 0, zc + 0.62), (0.9, 0.7, 0.1)))                                      # cockpit rim
        z_lo, z_hi = zc - 0.45, zc + 1.25
        wl = [wing((1.9, 0.0, z_hi), (1.75, span / 2, z_hi + 0.1), 1.5, 1.3, thickness=0.1),
              wing((1.6, 0.4, z_lo), (1.45, span / 2 - 0.5, z_lo + 0.15), 1.35, 1.2, thickness=0.1)]
        b.pair("wing_left", "wing_right", *wl)
        b.add(box((1.15, 0, z_hi - 0.05), (1.4, 0.3, 0.05)))                                  # centre section
        for s in (1, -1):                                                                    # struts
            for x in (1.7, 0.9):
                b.add(tube([(x, s * 3.2, z_lo + 0.05), (x + 0.05, s * 3.3, z_hi)], 0.04, segments=5))
            b.add(tube([(1.5, s * 0.45, zc + 0.5), (1.5, s * 0.2, z_hi)], 0.035, segments=5))
        b.part("propeller", _propeller((L / 2 - 0.1, 0, zc + 0.05), 1.15, 2, 0.22, 0.18, phase=70.0))
        b.part("fin",
               wing((-L / 2 + 1.0, 0, zc + 0.4), (-L / 2 + 0.25, 0, zc + 1.5), 1.0, 0.6, thickness=0.1,
                    vertical=True))
        b.pair("tailplane_left", "tailplane_right",
               wing((-L / 2 + 0.9, 0.08, zc + 0.3), (-L / 2 + 0.5, 1.5, zc + 0.33), 0.85, 0.5, thickness=0.1))
        R = 0.38
        gx = L / 2 - 1.2
        wh = [wheel((gx, s * 0.95, R), R, 0.16, tire_ratio=0.3, segments=14) for s in (1, -1)]
        b.part("wheel_front", *wh)
        for s in (1, -1):
            b.add(tube([(gx, s * 0.95, R), (gx + 0.3, s * 0.3, zc - 0.45)], 0.04, segments=5),
                  tube([(gx, s * 0.95, R), (gx - 0.5, s * 0.3, zc - 0.45)], 0.04, segments=5))
        b.add(cylinder((gx, -1.05, R), (gx, 1.05, R), 0.04, segments=6))
        b.add(tube([(-L / 2 + 0.6, 0, zc - 0.1), (-L / 2 + 0.35, 0, 0.03)], 0.04, segments=5),
              ellipsoid((-L / 2 + 0.35, 0, 0.06), (0.1, 0.06, 0.06), rows=3, segments=6))      # tail skid
    return b.finish()


# =============================================================================== bicycles
def _bike_wheel(x: float, R: float, tire_r: float, knobs: float = 0.0) -> Mesh:
    return wheel((x, 0, R), R, tire_r * 2, tire_ratio=tire_r * 2.2 / R, segments=24, hub=True, spokes=8,
                 knobs=knobs)


def _crank(bb, angle_deg: float, y: float, length: float = 0.17) -> tuple[Mesh, np.ndarray]:
    """A crank arm at ``y`` from the bottom bracket; returns (mesh, pedal axle point)."""
    a = math.radians(angle_deg)
    bb = np.asarray(bb, float)
    end = bb + np.array([length * math.cos(a), y, length * math.sin(a)])
    return beam([bb + (0, y, 0), end], 0.03, 0.018, normal=(0, 1, 0)), end


def _pedal(p, side: float) -> Mesh:
    p = np.asarray(p, float)
    return merge([cylinder(p, p + (0, side * 0.03, 0), 0.008, segments=5),
                  box(p + (0, side * 0.08, 0), (0.1, 0.09, 0.025))])


def _saddle(x: float, z: float, wide: bool = False) -> Mesh:
    w = 0.11 if wide else 0.075
    return loft([(x + 0.14, z, 0.0, 0.0), (x + 0.12, z, 0.025, 0.02), (x, z + 0.005, 0.04, 0.025),
                 (x - 0.08, z + 0.01, w, 0.03), (x - 0.13, z + 0.01, w * 0.9, 0.028), (x - 0.14, z + 0.01, 0, 0)],
                k=10)


def _bicycle(shape: str) -> VehicleModel:
    b = _Build(shape)
    tube_r = 0.02
    if shape == "tandem":
        R, tr = 0.35, 0.02
        xf, xb = 1.02, -0.98
        bb1, bb2 = np.array([0.32, 0, 0.28]), np.array([-0.42, 0, 0.28])
        st1_top, st2_top = np.array([0.18, 0, 0.84]), np.array([-0.58, 0, 0.84])
        ht_top, ht_bot = np.array([0.86, 0, 0.86]), np.array([0.9, 0, 0.7])
        axle_f, axle_b = np.array([xf, 0, R]), np.array([xb, 0, R])
        # frame: two diamond-ish sections and a long boom
        b.add(tube([bb1, st1_top], tube_r, segments=6), tube([bb2, st2_top], tube_r, segments=6),
              tube([st2_top, st1_top, ht_top], tube_r, segments=6), tube([bb2, bb1, ht_bot], tube_r, segments=6),
              tube([st2_top + (0, 0, -0.05), bb1 + (0, 0, 0.05)], tube_r * 0.8, segments=6),
              tube([ht_bot, ht_top], tube_r * 1.3, segments=6))
        b.add_sym(tube([bb2 + (0, 0.05, 0), axle_b + (0, 0.05, 0), st2_top + (0, 0.01, -0.04)], tube_r * 0.7,
                       segments=5))
        b.add(_saddle(st1_top[0] - 0.05, st1_top[2] + 0.1), _saddle(st2_top[0] - 0.05, st2_top[2] + 0.1),
              tube([st1_top, st1_top + (-0.05, 0, 0.1)], 0.014, segments=5),
              tube([st2_top, st2_top + (-0.05, 0, 0.1)], 0.014, segments=5))
        # front bars (captain) and rear bars (stoker) in the body
        clamp = ht_top + np.array([0.02, 0, 0.1])
        b.add(tube([ht_top, clamp], 0.014, segments=5),
              _handle(clamp, 0.28, rise=0.02, back=0.12, r=0.012, grip_r=0.018),
              mirror_y(_handle(clamp, 0.28, rise=0.02, back=0.12, r=0.012, grip_r=0.018)))
        c2 = st1_top + np.array([-0.02, 0, 0.12])
        b.add(tube([st1_top + (0, 0, 0.06), c2], 0.012, segments=5),
              _handle(c2, 0.22, rise=0.0, back=0.05, r=0.012, grip_r=0.016),
              mirror_y(_handle(c2, 0.22, rise=0.0, back=0.05, r=0.012, grip_r=0.016)))
        for bb in (bb1, bb2):
            for y, ang in ((0.07, 200), (-0.07, 20)):
                cm, end = _crank(bb, ang, y)
                b.add(cm, _pedal(end, 1 if y > 0 else -1))
            b.add(cylinder(bb + (0, -0.05, 0), bb + (0, -0.06, 0), 0.09, segments=14))
        b.add(_chain(bb1[[0, 2]], 0.09, bb2[[0, 2]], 0.09, -0.055),
              _chain(bb2[[0, 2]], 0.08, axle_b[[0, 2]], 0.04, -0.07))
        b.part("wheel_front", _bike_wheel(xf, R, tr))
        b.part("wheel_back", _bike_wheel(xb, R, tr))
        b.part("fork", _fork(ht_top, ht_bot, axle_f, 0.045, 0.013))
        b.part("fender_front", _fender((xf, R), R + 0.04, 0, 150, 0.07, thick=0.01, n=10))
        b.part("fender_back", _fender((xb, R), R + 0.04, 20, 175, 0.07, thick=0.01, n=10))
        b.part("rearlight", box((xb - R - 0.06, 0, R + 0.1), (0.05, 0.08, 0.07)),
               box((xb - R - 0.03, 0, R + 0.05), (0.03, 0.02, 0.06)))
        return b.finish()
    if shape == "road":
        R, tr = 0.34, 0.016
        xf, xb = 0.6, -0.4
        ht_top, ht_bot = np.array([0.55, 0, 0.82]), np.array([0.58, 0, 0.68])
        st_top = np.array([-0.17, 0, 0.82])
        bars_half = 0.21
    elif shape == "mountain":
        R, tr = 0.36, 0.032
        xf, xb = 0.68, -0.45
        ht_top, ht_bot = np.array([0.55, 0, 0.86]), np.array([0.6, 0, 0.74])
        st_top = np.array([-0.17, 0, 0.74])
        bars_half = 0.33
    else:  # utility
        R, tr = 0.34, 0.022
        xf, xb = 0.64, -0.46
        ht_top, ht_bot = np.array([0.5, 0, 0.86]), np.array([0.55, 0, 0.68])
        st_top = np.array([-0.2, 0, 0.78])
        bars_half = 0.28
    bb = np.array([0.0, 0, 0.28])
    axle_f, axle_b = np.array([xf, 0, R]), np.array([xb, 0, R])
    if shape == "utility":  # step-through frame: a curved down tube, no top tube
        b.add(tube([ht_top - (0, 0, 0.03), (0.4, 0, 0.5), (0.2, 0, 0.3), bb], tube_r * 1.3, segments=7),
              tube([bb, st_top], tube_r * 1.1, segments=7))
    else:
        b.add(tube([bb, st_top], tube_r, segments=7),
              tube([st_top - (0, 0, 0.04), ht_top - (0, 0, 0.02)], tube_r, segments=7),
              tube([bb, ht_bot], tube_r * 1.2, segments=7))
    b.add(tube([ht_bot, ht_top], tube_r * 1.3, segments=7))
    b.add_sym(tube([bb + (0, 0.04, 0), axle_b + (0, 0.05, 0), st_top + (0, 0.01, -0.03)], tube_r * 0.65,
                   segments=5))
    # seat post + saddle
    sp_top = st_top + (st_top - bb) / np.linalg.norm(st_top - bb) * (0.12 if shape != "mountain" else 0.1)
    b.add(tube([st_top, sp_top], 0.014, segments=5))
    b.part("saddle", _saddle(sp_top[0] - 0.03, sp_top[2] + 0.025, wide=shape == "utility"))
    # fork, stem, bars
    fr = 0.014 if shape != "mountain" else 0.022
    b.part("fork", _fork(ht_top, ht_bot, axle_f, 0.05 if shape != "mountain" else 0.07, fr))
    stem_end = ht_top + (np.array([0.1, 0, 0.03]) if shape != "utility" else np.array([-0.02, 0, 0.12]))
    b.add(tube([ht_top, stem_end], 0.016, segments=5))
    if shape == "road":
        c = stem_end
        drop = [(0, 0.02, 0), (0, bars_half, 0), (0.1, bars_half, -0.02), (0.12, bars_half, -0.1),
                (0.07, bars_half, -0.16), (-0.02, bars_half, -0.15)]
        hl = tube([c + q for q in drop], 0.012, segments=6)
        b.pair("handle_left", "handle_right", hl)
        levers = [box(c + (0.11, s * bars_half, -0.05), (0.04, 0.03, 0.09)) for s in (1, -1)]
    elif shape == "mountain":
        hl = _handle(stem_end, bars_half, rise=0.02, back=0.02, r=0.012, grip_r=0.018)
        b.pair("handle_left", "handle_right", hl)
        levers = [box(stem_end + (0.03, s * (bars_half - 0.12), 0.0), (0.08, 0.02, 0.02)) for s in (1, -1)]
    else:
        hl = _handle(stem_end, bars_half, rise=0.03, back=0.18, r=0.012, grip_r=0.018)
        b.pair("handle_left", "handle_right", hl)
        levers = [box(stem_end + (-0.1, s * (bars_half - 0.08), 0.02), (0.08, 0.02, 0.02)) for s in (1, -1)]
    # brake system: calipers (road/utility) or disc brakes (mountain) + levers
    if shape == "mountain":
        brakes = [cylinder(axle_f + (0, 0.075, 0), axle_f + (0, 0.08, 0), 0.08, segments=12),
                  cylinder(axle_b + (0, 0.065, 0), axle_b + (0, 0.07, 0), 0.08, segments=12),
                  box(axle_f + (-0.06, 0.085, 0.05), (0.06, 0.02, 0.06)),
                  box(axle_b + (0.05, 0.075, 0.06), (0.06, 0.02, 0.06))]
    else:
        brakes = [box(ht_bot + (0.02, 0, -0.04), (0.04, 0.09, 0.05)),
                  box(axle_b + ((st_top - axle_b) * (R + 0.02) / np.linalg.norm(st_top - axle_b)),
                      (0.04, 0.09, 0.05))]
    b.part("brake_system", *brakes, *levers)
    # wheels
    knobs = 0.025 if shape == "mountain" else 0.0
    b.part("wheel_front", _bike_wheel(xf, R, tr, knobs=knobs))
    b.part("wheel_back", _bike_wheel(xb, R, tr, knobs=knobs))
    # cranks, pedals, chainring, chain (drive side = right)
    cr, pr_end = _crank(bb, 20, -0.075)
    cl, pl_end = _crank(bb, 200, 0.075)
    b.part("crank_arm_right", cr)
    b.part("crank_arm_left", cl)
    b.part("pedal_right", _pedal(pr_end, -1))
    b.part("pedal_left", _pedal(pl_end, 1))
    b.add(cylinder(bb + (0, -0.05, 0), bb + (0, -0.062, 0), 0.1, segments=16),
          cylinder(bb + (0, 0.07, 0), bb + (0, -0.07, 0), 0.025, segments=8))
    b.add(cylinder(axle_b + (0, -0.05, 0), axle_b + (0, -0.065, 0), 0.05, segments=10))
    b.part("drive_chain", _chain(bb[[0, 2]], 0.1, axle_b[[0, 2]], 0.05, -0.056))
    if shape == "utility":
        b.part("fender_front", _fender((xf, R), R + 0.045, 0, 150, 0.07, thick=0.01, n=10))
        b.part("fender_back", _fender((xb, R), R + 0.045, 10, 175, 0.07, thick=0.01, n=10))
        rack_z = R * 2 + 0.1
        carrier = [box((xb + 0.02, 0, rack_z), (0.42, 0.16, 0.02))]
        for s in (1, -1):
            carrier.append(tube([(xb - 0.15, s * 0.075, rack_z), (xb, s * 0.07, R)], 0.008, segments=4))
            carrier.append(tube([(xb + 0.2, s * 0.075, rack_z), st_top + (0.0, s * 0.04, -0.03)], 0.007,
                                segments=4))
            carrier.append(tube([(xb - 0.2, s * 0.08, rack_z), (xb + 0.23, s * 0.08, rack_z)], 0.009, segments=4))
        b.part("carrier", *carrier)
        b.part("side_stand", tube([bb + (-0.08, 0.06, 0.0), (-0.28, 0.16, 0.006)], 0.012, segments=5),
               box((-0.28, 0.165, 0.006), (0.05, 0.03, 0.012)))
        b.add(_strip([(0.14, 0.36), (-0.35, 0.42)], 0.01, -0.1, -0.065, out=(0, 1)))   # chain guard
    return b.finish()


# =============================================================================== entry point
@lru_cache(maxsize=None)
def build_vehicle(shape: str) -> VehicleModel:
    """The procedural model of ``shape`` (deterministic, cached; arrays are read-only).

    Raises:
        KeyError: ``shape`` is not one of :data:`SHAPES` (the ontology's unplaced ``addi`` included:
            the official image generator has no model for it either).
    """
    if shape not in SHAPES and shape in load_ontology("superclevr").unplaced.get("shape", ()):
        raise KeyError(f"vehicle shape {shape!r} has no model: questions may name it, but no scene "
                       f"places it (as in the Super-CLEVR release); valid: {SHAPES}")
    cat = category_of(shape)
    if cat == "car":
        return _car(shape, _CARS[shape])
    if cat == "bus":
        return _bus(shape)
    if cat == "motorbike":
        return _motorbike(shape)
    if cat == "aeroplane":
        return _aeroplane(shape)
    return _bicycle(shape)
