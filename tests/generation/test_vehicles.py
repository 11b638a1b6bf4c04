"""The procedural vehicles: part names, mesh validity, canonical frame, part placement,
visibility of every part, category/shape proportions, determinism — and the mesh primitives."""
from __future__ import annotations

import math

import numpy as np
import pytest

from executors.ontology import load_ontology
from nsvqa.generation import primitives as P
from nsvqa.generation.meshes import Mesh
from nsvqa.generation.vehicles import CATEGORIES, SHAPES, build_vehicle, category_of

ONTO = load_ontology("superclevr")
GROUND = ("car", "bus", "motorbike", "bicycle")
MAX_TRIANGLES = 4000


def _all_meshes(vm):
    return [("body", vm.body)] + list(vm.parts.items())


def _tri_normals(m: Mesh) -> np.ndarray:
    t = m.positions.astype(np.float64)[m.indices.astype(np.int64)]
    return np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])


def _words(name: str) -> set[str]:
    return set(name.split("_"))


# ------------------------------------------------------------------------------------ ontology
def test_shapes_match_the_ontology():
    """One model per placed shape; the question generator's 22nd shape, addi ("regular car"),
    has none (the official image generator never places it either)."""
    assert SHAPES == tuple(ONTO.scene_values("shape"))
    placed = {c: tuple(s for s in v if s in SHAPES) for c, v in ONTO.categories.items()}
    assert placed == CATEGORIES
    assert len(SHAPES) == 21
    assert set(ONTO.values("shape")) - set(SHAPES) == {"addi"}
    with pytest.raises(KeyError, match="vehicle shape 'addi' has no model"):
        build_vehicle("addi")


@pytest.mark.parametrize("shape", SHAPES)
def test_part_names_are_exactly_the_ontology_list(shape):
    vm = build_vehicle(shape)
    assert vm.shape == shape
    assert tuple(vm.parts) == ONTO.parts_of(shape)


# ------------------------------------------------------------------------------------ meshes
@pytest.mark.parametrize("shape", SHAPES)
def test_meshes_are_valid(shape):
    vm = build_vehicle(shape)
    for name, m in _all_meshes(vm):
        assert m.n_triangles > 0, name
        assert m.positions.dtype == np.float32 and m.normals.dtype == np.float32, name
        assert m.uvs.dtype == np.float32 and m.indices.dtype == np.uint32, name
        assert np.isfinite(m.positions).all() and np.isfinite(m.normals).all() and np.isfinite(m.uvs).all(), name
        assert int(m.indices.max()) < len(m.positions), name
        np.testing.assert_allclose(np.linalg.norm(m.normals, axis=1), 1.0, atol=1e-4, err_msg=name)
        fn = _tri_normals(m)
        assert (np.linalg.norm(fn, axis=1) > 0).all(), f"{name}: degenerate triangles"
        # counter-clockwise from outside: the winding agrees with the vertex normals ...
        vn = m.normals[m.indices.astype(np.int64)].sum(1)
        assert (np.einsum("ij,ij->i", fn, vn) > 0).mean() > 0.995, f"{name}: winding disagrees with normals"
        # ... and every mesh is a closed outward surface (a renderer may cull back faces)
        _check_closed(m)
    assert vm.n_triangles <= MAX_TRIANGLES
    assert vm.body_glass.shape == (vm.body.n_triangles,) and vm.body_glass.dtype == bool
    if category_of(shape) in ("car", "bus"):
        assert vm.body_glass.mean() > 0.05                      # windows


@pytest.mark.parametrize("shape", SHAPES)
def test_uvs_are_in_surface_length_units(shape):
    """uv area matches surface area (textures keep one scale on every part)."""
    for name, m in _all_meshes(build_vehicle(shape)):
        t = m.positions.astype(np.float64)[m.indices.astype(np.int64)]
        u = m.uvs.astype(np.float64)[m.indices.astype(np.int64)]
        a3 = np.linalg.norm(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), axis=1).sum()
        d = u[:, 1:] - u[:, :1]
        a2 = np.abs(d[:, 0, 0] * d[:, 1, 1] - d[:, 0, 1] * d[:, 1, 0]).sum()
        assert 0.9 < a2 / a3 < 1.35, (name, a2 / a3)


# ------------------------------------------------------------------------------------ frame
@pytest.mark.parametrize("shape", SHAPES)
def test_canonical_frame(shape):
    vm = build_vehicle(shape)
    lo, hi = vm.bounds()
    assert abs(lo[2]) < 1e-6
    assert abs(lo[0] + hi[0]) < 1e-5 and abs(lo[1] + hi[1]) < 1e-5
    assert max(hi[0] - lo[0], hi[1] - lo[1]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_part_directions(shape):
    """left/right by the sign of y, front parts ahead of back parts, lights and mirrors."""
    vm = build_vehicle(shape)
    centre = {n: m.positions.astype(np.float64).mean(0) for n, m in vm.parts.items()}
    for n, c in centre.items():
        w = _words(n)
        if "left" in w:
            assert c[1] > 0.01, n
        if "right" in w:
            assert c[1] < -0.01, n
        if {"center", "fork", "fin", "propeller", "saddle", "seat", "roof", "hood", "trunk", "gas",
                "carrier", "rearlight"} & w or n in ("engine", "panel", "license_plate", "drive_chain"):
            if category_of(shape) in ("motorbike", "bicycle") or w & {"center", "fin", "roof", "hood"}:
                assert abs(c[1]) < 0.1, n
        if "head" in w or "headlight" in w:
            assert c[0] > 0.15, n
        if w & {"tail", "taillight", "rearlight"} or n == "license_plate":
            assert c[0] < -0.2, n
        if n in ("fin", "tailplane_left", "tailplane_right"):
            assert c[0] < -0.2, n
        if "mirror" in w:
            assert c[0] > 0.0, n
        if n == "hood":
            assert c[0] > 0.2
        if n == "trunk":
            assert c[0] < -0.2
    fronts = [centre[n][0] for n in centre if "front" in _words(n)]
    backs = [centre[n][0] for n in centre if "back" in _words(n)]
    if fronts and backs:
        assert min(fronts) > max(backs)
    mids = [centre[n][0] for n in centre if "mid" in _words(n)]
    for x in mids:
        assert max(backs, default=-1) < x < min(fronts, default=1)
    # left/right pairs of wheels, lights, mirrors, wings ... mirror each other (cranks, pedals and
    # doors may sit elsewhere on the other side)
    for n in centre:
        if "left" in _words(n) and not _words(n) & {"door", "crank", "pedal", "exhaust"}:
            other = n.replace("left", "right")
            if other in centre:
                np.testing.assert_allclose(centre[n] * (1, -1, 1), centre[other], atol=0.03, err_msg=n)


@pytest.mark.parametrize("shape", SHAPES)
def test_wheels_touch_the_ground(shape):
    vm = build_vehicle(shape)
    wheels = [m for n, m in vm.parts.items() if "wheel" in _words(n)]
    assert wheels or shape == "fighter"      # the fighter lists no wheel part: its gear is body
    for m in wheels:
        assert float(m.positions[:, 2].min()) < 1e-3
    if category_of(shape) in GROUND and shape != "articulated":  # the articulated bus's middle axle is body
        assert float(vm.body.positions[:, 2].min()) > 0.005      # only wheels (and stands) reach the ground
    if category_of(shape) in ("car", "bus"):
        corners = {(("front" in _words(n)) * 2 - 1, ("left" in _words(n)) * 2 - 1)
                   for n in vm.parts if "wheel" in _words(n)}
        assert corners == {(1, 1), (1, -1), (-1, 1), (-1, -1)}
        for n, m in vm.parts.items():
            if "wheel" in _words(n):
                c = m.positions.mean(0)
                assert abs(c[0]) > 0.15 and abs(c[1]) > 0.05, n


def _ray_hits(origins: np.ndarray, d: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Whether each ray origins[i] + t d (t > 0) hits any triangle (Moller-Trumbore)."""
    v0, e1, e2 = tri[:, 0], tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    pv = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, pv)
    ok = np.abs(det) > 1e-12
    v0, e1, e2, pv, det = v0[ok], e1[ok], e2[ok], pv[ok], det[ok]
    inv = 1.0 / det
    tv = origins[:, None, :] - v0[None]
    u = np.einsum("stj,tj->st", tv, pv) * inv
    qv = np.cross(tv, e1[None])
    v = (qv @ d) * inv
    t = np.einsum("stj,tj->st", qv, e2) * inv
    return ((u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-6)).any(1)


_VIEW_DIRS = [np.array([math.cos(math.radians(30)) * math.cos(a), math.cos(math.radians(30)) * math.sin(a),
                        math.sin(math.radians(30))]) for a in np.radians(np.arange(8) * 45.0 + 10.0)]


def _part_visible(m: Mesh, every: np.ndarray) -> bool:
    """Whether some of ``m`` is seen, unoccluded by the triangles ``every`` (T, 3, 3), by a camera
    30 degrees up from one of 8 azimuths (12 sample points spread over ``m`` by area)."""
    t = m.positions.astype(np.float64)[m.indices.astype(np.int64)]
    fn = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    area = np.linalg.norm(fn, axis=1)
    pick = np.searchsorted(np.cumsum(area) / area.sum(), (np.arange(12) + 0.5) / 12)
    samples = t[pick].mean(1) + fn[pick] / area[pick, None] * 1e-4
    for d in _VIEW_DIRS:
        facing = fn[pick] @ d > 0
        if facing.any() and not _ray_hits(samples[facing], d, every).all():
            return True
    return False


def test_visibility_check_itself():
    outer = P.box((0, 0, 0.5), (2, 2, 1))
    inside, on_top = P.box((0, 0, 0.5), (0.5, 0.5, 0.5)), P.box((0, 0, 1.1), (0.5, 0.5, 0.2))
    for part, seen in ((inside, False), (on_top, True)):
        every = np.concatenate([m.positions.astype(np.float64)[m.indices.astype(np.int64)] for m in (outer, part)])
        assert _part_visible(part, every) is seen


@pytest.mark.parametrize("shape", SHAPES)
def test_every_part_is_visible_from_a_typical_camera(shape):
    """Each part shows some of its surface to a camera 30 degrees up, from one of 8 azimuths."""
    vm = build_vehicle(shape)
    every = np.concatenate([m.positions.astype(np.float64)[m.indices.astype(np.int64)]
                            for _, m in _all_meshes(vm)])
    hidden = [name for name, m in vm.parts.items() if not _part_visible(m, every)]
    assert not hidden, f"{shape}: hidden parts {hidden}"


# ------------------------------------------------------------------------------------ looks
def _stats(shape):
    vm = build_vehicle(shape)
    lo, hi = vm.bounds()
    e = hi - lo
    vol = sum(P.signed_volume(m) for _, m in _all_meshes(vm))
    wheel_ext = [m.bounds()[1] - m.bounds()[0] for n, m in vm.parts.items() if "wheel" in _words(n)]
    return dict(L=e[0], W=e[1], H=e[2], fill=vol / np.prod(e),
                tyre=max(w[1] / w[2] for w in wheel_ext) if wheel_ext else None)


def test_categories_differ_in_proportions():
    st = {s: _stats(s) for s in SHAPES}
    by = {c: [st[s] for s in shapes] for c, shapes in CATEGORIES.items()}
    lw = {c: [s["L"] / s["W"] for s in v] for c, v in by.items()}
    # buses are much longer for their width than cars; cars are solid boxes on wheels
    assert min(lw["bus"]) > 3.3 and max(lw["car"]) < 2.6 and min(lw["car"]) > 1.8
    assert min(s["fill"] for s in by["car"] + by["bus"]) > 0.3
    # aeroplanes have the largest footprint across (wings) and are flat
    assert min(s["W"] for s in by["aeroplane"]) > 0.5 > max(s["W"] for c in GROUND for s in by[c])
    assert max(s["H"] for s in by["aeroplane"]) < 0.35
    # two-wheelers are tall for their length and mostly air; bicycles are the thinnest of all
    for c in ("motorbike", "bicycle"):
        assert min(s["H"] / s["L"] for s in by[c]) > 0.3
        assert max(s["fill"] for s in by[c]) < 0.2
    assert max(s["fill"] for s in by["bicycle"]) < 0.6 * min(s["fill"] for s in by["motorbike"])
    assert max(s["tyre"] for s in by["bicycle"]) < 0.15 < min(s["tyre"] for s in by["motorbike"])
    # and cars are lower than two-wheelers for their length
    assert max(s["H"] / s["L"] for s in by["car"]) < min(s["H"] / s["L"] for s in by["motorbike"])


def _part_bounds(shape, name):
    return build_vehicle(shape).parts[name].bounds()


def test_cars_differ_in_details():
    st = {s: _stats(s) for s in CATEGORIES["car"]}
    assert min(st["suv"]["H"], st["minivan"]["H"]) > max(st["wagon"]["H"], st["sedan"]["H"]) + 0.02
    # minivan: one-box with a short hood; sedan: a trunk step below the roof; wagon: long roof
    hood = {s: np.ptp(build_vehicle(s).parts["hood"].positions[:, 0]) for s in st}
    assert hood["minivan"] < 0.6 * min(v for s, v in hood.items() if s != "minivan")
    assert _part_bounds("sedan", "trunk")[1][2] < _part_bounds("sedan", "roof")[0][2] - 0.08
    assert _part_bounds("wagon", "roof")[0][0] < _part_bounds("sedan", "roof")[0][0] - 0.15
    # truck: an open cargo bed (the trunk) behind a short cab
    tlo, thi = _part_bounds("truck", "trunk")
    assert thi[0] - tlo[0] > 0.3 and thi[2] < _part_bounds("truck", "roof")[0][2] - 0.05
    assert tlo[0] < -0.45


def test_buses_differ_in_details():
    st = {s: _stats(s) for s in CATEGORIES["bus"]}
    assert st["double"]["H"] > max(st[s]["H"] for s in st if s != "double") + 0.08         # two decks
    assert st["articulated"]["L"] / st["articulated"]["W"] > 5.0                           # two segments
    # the school bus has a bonnet: the front tenth of the body is much lower than the roof
    body = build_vehicle("school").body.positions
    assert body[body[:, 0] > 0.45, 2].max() < 0.65 * st["school"]["H"]
    for s in ("regular", "double", "articulated"):
        p = build_vehicle(s).body.positions
        assert p[p[:, 0] > 0.45, 2].max() > 0.8 * st[s]["H"]


def test_aeroplanes_differ_in_details():
    # biplane: each wing part holds an upper and a lower wing
    z = np.sort(build_vehicle("biplane").parts["wing_left"].positions[:, 2])
    assert np.diff(z).max() > 0.1
    for s in ("jet", "fighter", "airliner"):
        z = np.sort(build_vehicle(s).parts["wing_left"].positions[:, 2])
        assert np.diff(z).max() < 0.05
    # fighter: delta wings, longer than wide; airliner: doors all along a long fuselage
    st = {s: _stats(s) for s in CATEGORIES["aeroplane"]}
    assert st["fighter"]["W"] < 0.75 < min(st[s]["W"] for s in ("jet", "biplane", "airliner"))
    assert np.ptp(build_vehicle("airliner").parts["door_left_s"].positions[:, 0]) > 0.5
    # propellers at the front of the aircraft
    for s in ("jet", "biplane", "airliner"):
        vm = build_vehicle(s)
        assert vm.parts["propeller"].positions[:, 0].mean() > vm.parts["fin"].positions[:, 0].mean() + 0.3


def test_two_wheelers_differ_in_details():
    bikes = {s: build_vehicle(s) for s in CATEGORIES["motorbike"]}
    wheel_h = {s: np.ptp(v.parts["wheel_front"].positions[:, 2]) / _stats(s)["H"] for s, v in bikes.items()}
    assert wheel_h["scooter"] < 0.8 * min(h for s, h in wheel_h.items() if s != "scooter")  # small wheels
    rake = {s: np.ptp(v.parts["fork"].positions[:, 0]) / np.ptp(v.parts["fork"].positions[:, 2])
            for s, v in bikes.items()}
    assert rake["chopper"] > 1.2 * max(r for s, r in rake.items() if s != "chopper")          # raked fork
    seat = {s: v.parts["seat"].bounds()[0][2] for s, v in bikes.items()}
    assert seat["dirtbike"] == max(seat.values())                                             # tall
    cycles = {s: build_vehicle(s) for s in CATEGORIES["bicycle"]}
    tyre = {s: np.ptp(v.parts["wheel_front"].positions[:, 1]) / np.ptp(v.parts["wheel_front"].positions[:, 2])
            for s, v in cycles.items()}
    assert tyre["road"] == min(tyre.values()) and tyre["mountain"] == max(tyre.values())
    st = {s: _stats(s) for s in cycles}
    assert st["tandem"]["H"] == min(s["H"] for s in st.values())                             # long
    carrier, back = cycles["utility"].parts["carrier"], cycles["utility"].parts["wheel_back"]
    assert carrier.bounds()[1][2] > back.bounds()[1][2] and carrier.positions[:, 0].mean() < -0.2   # rear rack


# ------------------------------------------------------------------------------------ caching
def test_deterministic_and_cached():
    for shape in ("sedan", "double", "cruiser", "biplane", "tandem"):
        a = build_vehicle(shape)
        assert build_vehicle(shape) is a
        b = build_vehicle.__wrapped__(shape)
        for (na, ma), (nb, mb) in zip(_all_meshes(a), _all_meshes(b)):
            assert na == nb
            for x, y in ((ma.positions, mb.positions), (ma.normals, mb.normals), (ma.uvs, mb.uvs),
                         (ma.indices, mb.indices)):
                np.testing.assert_array_equal(x, y)
        assert not a.body.positions.flags.writeable


def test_unknown_shape():
    with pytest.raises(KeyError):
        build_vehicle("spaceship")


# ------------------------------------------------------------------------------------ primitives
PRIMS = {
    "box": lambda: P.box((0.1, 0.2, 0.3), (2, 1, 0.5)),
    "frustum": lambda: P.box((0, 0, 0), (2, 1, 1), taper=(0.5, 0.8), shift=(0.3, 0)),
    "prism": lambda: P.prism([(0, 0), (2, 0), (2, 1), (1, 1.5), (0.5, 1.5)], -0.5, 0.5, inset_top=0.1),
    "cylinder": lambda: P.cylinder((0, 0, 0), (1, 1, 1), 0.3),
    "cone": lambda: P.cone((0, 0, 0), (0, 0, 1), 0.5),
    "ellipsoid": lambda: P.ellipsoid((1, 2, 3), (1, 0.5, 0.3)),
    "loft": lambda: P.loft([(0, 0.5, 0, 0), (0.5, 0.5, 0.3, 0.3), (3, 0.5, 0.3, 0.35), (4, 0.7, 0.05, 0.05)]),
    "lathe": lambda: P.lathe([(0, 0), (1, 0), (1, 0), (0.8, 1), (0.8, 1), (0, 1)], axis="x"),
    "lathe_capped": lambda: P.lathe([(1, 0), (1, 0), (0.6, 1.1), (0, 1.6)], axis="y"),  # a hard-edged flat cap
    "wing": lambda: P.wing((0, 0.2, 0), (-0.5, 2, 0.2), 1.0, 0.4),
}
OPEN_SHAPED = {  # non-convex ones: checked for closure/orientation, not per-face outwardness
    "prism_notch": lambda: P.prism([(0, 0), (3, 0), (3, 1), (2, 1), (2, 0.5), (1, 0.5), (1, 1), (0, 1)],
                                   -0.5, 0.5),
    "tube": lambda: P.tube([(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)], 0.1),
    "loop": lambda: P.beam([(0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1)], 0.05, 0.02, normal=(0, 1, 0),
                           closed=True),
    "wheel": lambda: P.wheel((0, 0, 0.3), 0.3, 0.2, knobs=0.05),
    "spoked": lambda: P.wheel((0, 0, 0.3), 0.3, 0.03, tire_ratio=0.1, spokes=8, segments=20),
    "mirrored": lambda: P.mirror_y(P.wing((0, 0.2, 0), (-0.5, 2, 0.2), 1.0, 0.4)),
}


def _check_closed(m: Mesh) -> None:
    """Unit normals, positive enclosed volume, and every edge shared by two triangles running
    opposite ways (vertices welded by position)."""
    assert m.n_triangles > 0
    np.testing.assert_allclose(np.linalg.norm(m.normals, axis=1), 1.0, atol=1e-5)
    assert P.signed_volume(m) > 0
    # closed: every edge is shared by exactly two triangles running opposite ways
    key = np.round(m.positions.astype(np.float64), 6)
    _, vid = np.unique(key, axis=0, return_inverse=True)
    f = vid.ravel()[m.indices.astype(np.int64)]
    e = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    fwd = {tuple(x) for x in e}
    assert all((b, a) in fwd for a, b in fwd)


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_convex_primitives_face_outward(name):
    m = PRIMS[name]()
    _check_closed(m)
    t = m.positions.astype(np.float64)[m.indices.astype(np.int64)]
    fn = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    inside = m.positions.astype(np.float64).mean(0)
    assert (np.einsum("ij,ij->i", fn, t.mean(1) - inside) > 0).all()


@pytest.mark.parametrize("name", sorted(OPEN_SHAPED))
def test_other_primitives_are_closed_and_outward(name):
    _check_closed(OPEN_SHAPED[name]())


def test_primitive_sizes_and_uvs():
    b = P.box((0, 0, 0), (2, 1, 0.5))
    lo, hi = b.bounds()
    np.testing.assert_allclose(hi - lo, (2, 1, 0.5), atol=1e-6)
    assert P.signed_volume(b) == pytest.approx(1.0, rel=1e-5)
    c = P.cylinder((0, 0, 0), (0, 0, 2), 0.5, segments=64)
    assert P.signed_volume(c) == pytest.approx(math.pi * 0.25 * 2, rel=0.01)
    # one uv unit per unit of length along the cylinder and around it
    side = np.abs(c.normals[:, 2]) < 0.5
    assert np.ptp(c.uvs[side, 1]) == pytest.approx(2.0, rel=0.01)
    assert np.ptp(c.uvs[side, 0]) == pytest.approx(math.pi, rel=0.01)
    moved = P.box((0, 0, 0), (1, 1, 1), transform=P.compose(P.translate(1, 2, 3), P.rot_z(90)))
    np.testing.assert_allclose(moved.positions.mean(0), (1, 2, 3), atol=1e-6)
