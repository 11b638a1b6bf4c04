"""Small pure-numpy mesh builders for the procedural vehicles.

Every builder returns a closed :class:`~nsvqa.generation.meshes.Mesh` with float32 vertex arrays,
uint32 indices, triangles wound counter-clockwise seen from outside and unit normals. UVs are in
units of surface length (one uv unit per unit of model length), so a procedural texture has the
same scale on every part; builders that place geometry directly (``center``/``size`` arguments)
keep that property, and the optional ``transform`` should be rigid (rotation + translation).

Conventions used by the builders:

* A *ring surface* is a grid of points ``rings[i, j]``: rows ``i`` (sections along a path or a
  profile) by columns ``j`` (points around a section, closed). Two consecutive identical rows or
  columns make a crease (hard edge); rows that collapse to one point are poles. Degenerate
  triangles are dropped. Orientation is fixed afterwards from the signed volume, so callers do
  not need to care about the order of their points.
* Flat polygons (boxes, prisms, caps) are triangulated by ear clipping and get planar uvs in a
  tangent frame of the face whose ``u`` axis is horizontal.

Helpers ``rot_x/rot_y/rot_z/translate/compose`` build 4x4 matrices.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from nsvqa.generation.meshes import Mesh

__all__ = [
    "EMPTY", "rot_x", "rot_y", "rot_z", "translate", "compose", "axis_frame",
    "polygons", "ring_surface", "box", "prism", "lathe", "cylinder", "cone", "ellipsoid",
    "sweep", "tube", "beam", "loft", "superellipse_ring", "wheel", "wing", "airfoil_ring",
    "merge", "mirror_y", "signed_volume",
]

_EPS = 1e-12


def _mesh(p, n, uv, idx) -> Mesh:
    return Mesh(np.ascontiguousarray(p, dtype=np.float32), np.ascontiguousarray(n, dtype=np.float32),
                np.ascontiguousarray(uv, dtype=np.float32),
                np.ascontiguousarray(np.asarray(idx).reshape(-1, 3), dtype=np.uint32))


EMPTY = _mesh(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 2)), np.zeros((0, 3)))


# --------------------------------------------------------------------------- transforms
def rot_x(deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    m = np.eye(4)
    m[1:3, 1:3] = [[c, -s], [s, c]]
    return m


def rot_y(deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    m = np.eye(4)
    m[0, 0], m[0, 2], m[2, 0], m[2, 2] = c, s, -s, c
    return m


def rot_z(deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    m = np.eye(4)
    m[0:2, 0:2] = [[c, -s], [s, c]]
    return m


def translate(x: float, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z) if np.ndim(x) == 0 else np.asarray(x, float)[:3]
    return m


def compose(*ms: np.ndarray) -> np.ndarray:
    """``compose(A, B, C)`` applies C first, then B, then A (matrix product A @ B @ C)."""
    out = np.eye(4)
    for m in ms:
        out = out @ m
    return out


def axis_frame(axis) -> np.ndarray:
    """A 3x3 rotation whose third column is the unit ``axis`` ('x', 'y', 'z' or a vector)."""
    if isinstance(axis, str):
        a = np.eye(3)["xyz".index(axis)]
    else:
        a = np.asarray(axis, float)
        a = a / np.linalg.norm(a)
    ref = np.array([0.0, 0.0, 1.0]) if abs(a[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(ref, a)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(a, e1)
    return np.stack([e1, e2, a], axis=1)


def _apply(mesh: Mesh, transform) -> Mesh:
    """``mesh`` moved by a 4x4 ``transform`` (keep it rigid so uvs stay in length units); a
    mirroring transform gets its winding flipped so faces stay outward."""
    if transform is None:
        return mesh
    m = np.asarray(transform, float)
    out = mesh.transformed(m)
    if np.linalg.det(m[:3, :3]) < 0:
        out = _mesh(out.positions, out.normals, out.uvs, out.indices[:, [0, 2, 1]])
    return out


# --------------------------------------------------------------------------- flat polygons
def _newell(poly: np.ndarray) -> np.ndarray:
    q = np.roll(poly, -1, axis=0)
    n = np.array([np.sum((poly[:, 1] - q[:, 1]) * (poly[:, 2] + q[:, 2])),
                  np.sum((poly[:, 2] - q[:, 2]) * (poly[:, 0] + q[:, 0])),
                  np.sum((poly[:, 0] - q[:, 0]) * (poly[:, 1] + q[:, 1]))])
    return n


def _tangent_frame(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t, b): t horizontal where possible, (t, b, n) right-handed."""
    t = np.cross([0.0, 0.0, 1.0], n)
    if np.linalg.norm(t) < 1e-6:
        t = np.array([1.0, 0.0, 0.0]) if n[2] > 0 else np.array([-1.0, 0.0, 0.0])
    t = t / np.linalg.norm(t)
    return t, np.cross(n, t)


def _ear_clip(p2: np.ndarray) -> list[tuple[int, int, int]]:
    """Triangulate a simple CCW 2D polygon (k, 2) by ear clipping."""
    idx = list(range(len(p2)))
    # drop consecutive duplicates
    idx = [i for k, i in enumerate(idx) if np.linalg.norm(p2[i] - p2[idx[k - 1]]) > 1e-12]
    tris: list[tuple[int, int, int]] = []

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    guard = 0
    while len(idx) > 3 and guard < 10000:
        guard += 1
        m = len(idx)
        for k in range(m):
            i0, i1, i2 = idx[k - 1], idx[k], idx[(k + 1) % m]
            a, b, c = p2[i0], p2[i1], p2[i2]
            if cross(a, b, c) <= 1e-14:
                continue
            inside = False
            for j in idx:
                if j in (i0, i1, i2):
                    continue
                p = p2[j]
                if cross(a, b, p) >= -1e-12 and cross(b, c, p) >= -1e-12 and cross(c, a, p) >= -1e-12:
                    inside = True
                    break
            if not inside:
                tris.append((i0, i1, i2))
                idx.pop(k)
                break
        else:  # no ear found (degenerate input): fan the rest
            tris += [(idx[0], idx[k], idx[k + 1]) for k in range(1, len(idx) - 1)]
            return tris
    if len(idx) == 3:
        tris.append(tuple(idx))
    return tris


def _polygon_tris(poly: np.ndarray, normal: np.ndarray | None = None):
    """(positions (k,3), normal (3,), uvs (k,2), local triangles) of a planar polygon."""
    n = _newell(poly) if normal is None else normal
    n = n / max(np.linalg.norm(n), _EPS)
    t, b = _tangent_frame(n)
    p2 = np.stack([poly @ t, poly @ b], axis=1)
    return n, p2, _ear_clip(p2)


def polygons(polys: Iterable[np.ndarray], orient: bool = True) -> Mesh:
    """Flat-shaded mesh of planar simple polygons (each (k, 3), CCW seen from outside).

    With ``orient`` the whole set is flipped when its signed volume is negative (so a closed
    polyhedron whose faces are consistently wound comes out facing outward either way).
    """
    polys = [np.asarray(p, float) for p in polys]
    if orient:
        vol = sum(_poly_volume(p) for p in polys)
        if vol < 0:
            polys = [p[::-1] for p in polys]
    P, N, UV, I = [], [], [], []
    off = 0
    for poly in polys:
        if len(poly) < 3 or np.linalg.norm(_newell(poly)) < 1e-14:
            continue
        n, p2, tris = _polygon_tris(poly)
        if not tris:
            continue
        P.append(poly)
        N.append(np.repeat(n[None], len(poly), 0))
        UV.append(p2)
        I.append(np.asarray(tris) + off)
        off += len(poly)
    if not P:
        return EMPTY
    return _compact(_mesh(np.concatenate(P), np.concatenate(N), np.concatenate(UV), np.concatenate(I)))


def _poly_volume(poly: np.ndarray) -> float:
    # fan triangulation's contribution to the signed volume (exact for planar polygons)
    p0 = poly[0]
    return float(sum(np.dot(p0, np.cross(poly[k], poly[k + 1])) for k in range(1, len(poly) - 1)) / 6.0)


def signed_volume(mesh: Mesh) -> float:
    """Signed enclosed volume (> 0 for a closed mesh facing outward)."""
    p = mesh.positions.astype(np.float64)
    t = p[mesh.indices.astype(np.int64)]
    return float(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0)


def _compact(mesh: Mesh) -> Mesh:
    """Drop degenerate triangles and unreferenced vertices."""
    p = mesh.positions.astype(np.float64)
    idx = mesh.indices.astype(np.int64)
    if idx.size:
        t = p[idx]
        area = np.linalg.norm(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), axis=1)
        scale = max(float(np.ptp(p, axis=0).max()), 1e-9)
        idx = idx[area > 1e-10 * scale * scale]
    used = np.zeros(len(p), bool)
    used[idx.ravel()] = True
    remap = np.cumsum(used) - 1
    return _mesh(p[used], mesh.normals[used], mesh.uvs[used], remap[idx])


# --------------------------------------------------------------------------- ring surfaces
def ring_surface(rings, *, wrap_rows: bool = False, cap_start: bool = False, cap_end: bool = False,
                 smooth: bool = True) -> Mesh:
    """Closed surface through a grid of points ``rings`` (R, C, 3), columns closed around.

    ``cap_start``/``cap_end`` close the first/last ring with a flat polygon (skip them for rings
    that collapse to a point). ``wrap_rows`` joins the last ring back to the first (a torus).
    """
    G = np.asarray(rings, float)
    R, C = G.shape[:2]
    # Logical vertex ids for smooth normals: seam duplicates share an id, poles merge.
    pole = np.array([np.ptp(G[i], axis=0).max() < 1e-9 for i in range(R)])
    rows = list(range(R)) + ([0] if wrap_rows else [])
    P = np.concatenate([np.concatenate([G[i], G[i][:1]]) for i in rows])  # (R', C+1, 3) flattened
    Rp, Cp = len(rows), C + 1
    lid = np.array([(rows[i] * C + (0 if pole[rows[i]] else j % C)) for i in range(Rp) for j in range(Cp)])
    # uvs: u = chord length around each ring, v = chord length along each column
    Pg = P.reshape(Rp, Cp, 3)
    u = np.concatenate([np.zeros((Rp, 1)), np.cumsum(np.linalg.norm(np.diff(Pg, axis=1), axis=2), axis=1)], 1)
    v = np.concatenate([np.zeros((1, Cp)), np.cumsum(np.linalg.norm(np.diff(Pg, axis=0), axis=2), axis=0)], 0)
    u = u - u[:, -1:] / 2.0  # centre each ring's u range (keeps the seam on the back side)
    UV = np.stack([u, v], axis=-1).reshape(-1, 2)
    ii, jj = np.meshgrid(np.arange(Rp - 1), np.arange(Cp - 1), indexing="ij")
    a = (ii * Cp + jj).ravel()
    b, c, d = a + 1, a + Cp + 1, a + Cp
    tris = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    def outward(i0: int, step: int) -> np.ndarray:
        """Direction out of the end ring ``i0``: away from the next ring with another centre."""
        c0 = G[i0].mean(0)
        for k in range(1, R):
            d = c0 - G[i0 + step * k].mean(0)
            if np.linalg.norm(d) > 1e-9:
                return d
        return c0 - G.reshape(-1, 3).mean(0)

    caps = []
    if cap_start and not pole[0]:
        caps.append((G[0], outward(0, 1)))
    if cap_end and not pole[-1]:
        caps.append((G[-1], outward(R - 1, -1)))
    cap_polys = []
    for ring, outward in caps:
        ring = _dedupe_ring(ring)
        if _newell(ring) @ outward < 0:
            ring = ring[::-1]
        cap_polys.append(ring)
    cap_mesh = polygons(cap_polys, orient=False) if cap_polys else EMPTY
    # orientation from the signed volume of the closed whole
    t = P[tris]
    vol = np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0
    if cap_mesh.n_triangles:
        vol += signed_volume(cap_mesh)
    if vol < 0:
        tris = tris[:, [0, 2, 1]]
    t = P[tris]
    fn = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])  # area-weighted face normals
    area = np.linalg.norm(fn, axis=1)
    keep = area > 1e-10 * max(float(np.ptp(P, axis=0).max()), 1e-9) ** 2
    tris, fn = tris[keep], fn[keep]
    if smooth:
        acc = np.zeros((R * C, 3))
        for k in range(3):
            np.add.at(acc, lid[tris[:, k]], fn)
        N = acc[lid]
        ln = np.linalg.norm(N, axis=1, keepdims=True)
        N = np.where(ln > 1e-15, N / np.maximum(ln, 1e-30), np.array([0.0, 0.0, 1.0]))
        surf = _compact(_mesh(P, N, UV, tris))
    else:
        fnn = fn / np.linalg.norm(fn, axis=1, keepdims=True)
        surf = _mesh(P[tris].reshape(-1, 3), np.repeat(fnn, 3, 0), UV[tris].reshape(-1, 2),
                     np.arange(3 * len(tris)).reshape(-1, 3))
    return Mesh.concat([surf, cap_mesh]) if cap_mesh.n_triangles else surf


def _dedupe_ring(ring: np.ndarray) -> np.ndarray:
    keep = [k for k in range(len(ring)) if np.linalg.norm(ring[k] - ring[k - 1]) > 1e-12]
    return ring[keep]


# --------------------------------------------------------------------------- solids
def box(center, size, *, taper=(1.0, 1.0), shift=(0.0, 0.0), transform=None) -> Mesh:
    """Axis-aligned box of ``size`` (sx, sy, sz) at ``center``; the top face is scaled by
    ``taper`` (tx, ty) and moved by ``shift`` (dx, dy) — a frustum or a sloped wedge."""
    cx, cy, cz = center
    hx, hy, hz = np.asarray(size, float) / 2
    tx, ty = taper
    dx, dy = shift
    quad = ((-1, -1), (1, -1), (1, 1), (-1, 1))
    lo = [(cx + sx * hx, cy + sy * hy, cz - hz) for sx, sy in quad]
    hi = [(cx + dx + sx * hx * tx, cy + dy + sy * hy * ty, cz + hz) for sx, sy in quad]
    v = np.array(lo + hi)
    faces = [[3, 2, 1, 0], [4, 5, 6, 7], [0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6], [3, 0, 4, 7]]
    return _apply(polygons([v[f] for f in faces]), transform)


def prism(profile, y0: float, y1: float, *, plane: str = "xz", inset_top: float = 0.0,
          transform=None) -> Mesh:
    """Extrusion of a simple 2D polygon ``profile`` (k, 2).

    ``plane`` names the profile's axes; the extrusion runs along the third axis from ``y0`` to
    ``y1`` ('xz' -> side profile extruded across y, 'yz' -> cross-section along x, 'xy' -> plan
    extruded up z). ``inset_top`` narrows the extrusion linearly with the profile's second
    coordinate (tumblehome of a car cabin): at the top both ends move in by that amount.
    """
    pr = np.asarray(profile, float)
    pr = _dedupe_ring(pr)
    a_ax, b_ax = "xyz".index(plane[0]), "xyz".index(plane[1])
    c_ax = 3 - a_ax - b_ax
    bmin, bmax = pr[:, 1].min(), pr[:, 1].max()
    f = (pr[:, 1] - bmin) / max(bmax - bmin, 1e-12) * inset_top

    def ring(c: np.ndarray) -> np.ndarray:
        out = np.zeros((len(pr), 3))
        out[:, a_ax], out[:, b_ax], out[:, c_ax] = pr[:, 0], pr[:, 1], c
        return out

    r0, r1 = ring(y0 + f * np.sign(y1 - y0)), ring(y1 - f * np.sign(y1 - y0))
    k = len(pr)
    faces = [r0, r1[::-1]] + [np.array([r0[(i + 1) % k], r0[i], r1[i], r1[(i + 1) % k]]) for i in range(k)]
    return _apply(polygons(faces), transform)


def lathe(profile, *, center=(0, 0, 0), axis="z", segments: int = 16, smooth: bool = True,
          closed_profile: bool = False, phase: float = 0.0, transform=None) -> Mesh:
    """Surface of revolution of ``profile`` [(radius, height), ...] around ``axis`` through
    ``center``. Ends at radius 0 are poles; other ends are capped flat. Repeat a profile point
    for a hard edge. ``closed_profile`` joins the last point back to the first (a torus)."""
    pr = np.asarray(profile, float)
    F = axis_frame(axis)
    th = phase + np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    circ = np.stack([np.cos(th), np.sin(th)], 1)  # (C, 2)
    rings = (pr[:, None, 0:1] * (circ[None] @ F[:, :2].T) + pr[:, None, 1:2] * F[:, 2][None, None]
             + np.asarray(center, float))
    m = ring_surface(rings, wrap_rows=closed_profile, cap_start=not closed_profile and pr[0, 0] > 0,
                     cap_end=not closed_profile and pr[-1, 0] > 0, smooth=smooth)
    return _apply(m, transform)


def cylinder(p0, p1, radius: float, *, radius1: float | None = None, segments: int = 12,
             smooth: bool = True, transform=None) -> Mesh:
    """Capped cylinder (or truncated cone with ``radius1`` at ``p1``) from ``p0`` to ``p1``."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    L = float(np.linalg.norm(p1 - p0))
    r1 = radius if radius1 is None else radius1
    prof = [(0, 0), (radius, 0), (radius, 0), (r1, L), (r1, L), (0, L)]
    if r1 <= 0:
        prof = [(0, 0), (radius, 0), (radius, 0), (0, L)]
    return lathe(prof, center=p0, axis=p1 - p0, segments=segments, smooth=smooth, transform=transform)


def cone(base, tip, radius: float, *, segments: int = 12, transform=None) -> Mesh:
    """Cone with a flat base disc at ``base`` and its apex at ``tip``."""
    return cylinder(base, tip, radius, radius1=0.0, segments=segments, transform=transform)


def ellipsoid(center, radii, *, rows: int = 6, segments: int = 12, transform=None) -> Mesh:
    """Low-poly ellipsoid (UV sphere scaled by ``radii``)."""
    ph = np.linspace(-np.pi / 2, np.pi / 2, rows + 1)
    th = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    unit = np.stack([np.cos(ph)[:, None] * np.cos(th)[None], np.cos(ph)[:, None] * np.sin(th)[None],
                     np.repeat(np.sin(ph)[:, None], segments, 1)], -1)
    rings = unit * np.asarray(radii, float) + np.asarray(center, float)
    return _apply(ring_surface(rings), transform)


# --------------------------------------------------------------------------- sweeps and lofts
def _sweep_frames(path: np.ndarray, normal=None, closed: bool = False):
    """Tangents, normals, binormals and miter scales along a polyline."""
    n_pts = len(path)
    seg = np.diff(np.concatenate([path, path[:1]]) if closed else path, axis=0)
    seg_dir = seg / np.linalg.norm(seg, axis=1, keepdims=True)
    T = np.zeros_like(path)
    miter = np.ones(n_pts)
    for i in range(n_pts):
        if closed:
            a, b = seg_dir[i - 1], seg_dir[i % len(seg_dir)]
        else:
            a = seg_dir[max(i - 1, 0)]
            b = seg_dir[min(i, len(seg_dir) - 1)]
        t = a + b
        t = t / np.linalg.norm(t) if np.linalg.norm(t) > 1e-9 else b
        T[i] = t
        miter[i] = 1.0 / max(float(np.dot(t, b)), 0.35)
    N = np.zeros_like(path)
    if normal is not None:
        nv = np.asarray(normal, float)
        for i in range(n_pts):
            n = nv - np.dot(nv, T[i]) * T[i]
            N[i] = n / max(np.linalg.norm(n), 1e-12)
    else:  # parallel transport from an arbitrary start
        N[0] = axis_frame(T[0])[:, 0]
        for i in range(1, n_pts):
            n = N[i - 1] - np.dot(N[i - 1], T[i]) * T[i]
            N[i] = n / max(np.linalg.norm(n), 1e-12)
    B = np.cross(T, N)
    return T, N, B, miter, seg_dir


def sweep(path, section, *, normal=None, closed: bool = False, scales=None, smooth: bool = True,
          transform=None) -> Mesh:
    """Sweep a closed 2D ``section`` (k, 2) along a polyline ``path`` (n, 3).

    Section coordinates are (along the frame normal, along the binormal); ``normal`` fixes the
    frame normal (e.g. the normal of a planar path), otherwise it is parallel-transported.
    Corners are mitred; open ends are capped; ``closed`` makes a loop. ``scales`` (n,) scales the
    section per path point.
    """
    path = np.asarray(path, float)
    sec = np.asarray(section, float)
    T, N, B, miter, seg_dir = _sweep_frames(path, normal, closed)
    sc = np.ones(len(path)) if scales is None else np.asarray(scales, float)
    rings = []
    for i in range(len(path)):
        pts = sec[:, 0:1] * N[i] + sec[:, 1:2] * B[i]
        if miter[i] > 1.0 + 1e-9:
            # stretch along the bend direction so the tube keeps its thickness at the corner
            if closed:
                a, b = seg_dir[i - 1], seg_dir[i % len(seg_dir)]
            else:
                a, b = seg_dir[max(i - 1, 0)], seg_dir[min(i, len(seg_dir) - 1)]
            bend = b - a
            bend -= np.dot(bend, T[i]) * T[i]
            if np.linalg.norm(bend) > 1e-9:
                bend /= np.linalg.norm(bend)
                along = pts @ bend
                pts = pts + np.outer(along * (miter[i] - 1.0), bend)
        rings.append(path[i] + sc[i] * pts)
    m = ring_surface(np.array(rings), wrap_rows=closed, cap_start=not closed, cap_end=not closed,
                     smooth=smooth)
    return _apply(m, transform)


def _circle(r: float, k: int) -> np.ndarray:
    th = np.linspace(0, 2 * np.pi, k, endpoint=False)
    return np.stack([r * np.cos(th), r * np.sin(th)], 1)


def _rect(w: float, h: float) -> np.ndarray:
    """Rectangle section (w along the frame normal, h along the binormal) with hard corners."""
    c = [(-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2)]
    return np.array([p for q in c for p in (q, q)])


def tube(path, radius: float, *, segments: int = 8, closed: bool = False, normal=None,
         transform=None) -> Mesh:
    """Round tube of ``radius`` along a polyline (bike frames, forks, bars, exhaust pipes)."""
    return sweep(path, _circle(radius, segments), closed=closed, normal=normal, transform=transform)


def beam(path, size_n: float, size_b: float, *, normal=(0, 0, 1), closed: bool = False,
         transform=None) -> Mesh:
    """Rectangular bar along a polyline with flat faces (fenders, chains, struts, spokes, plates
    bent along a path): ``size_n`` along ``normal`` (made perpendicular to the path) and
    ``size_b`` along the third direction."""
    return sweep(path, _rect(size_n, size_b), normal=normal, closed=closed, smooth=True,
                 transform=transform)


def superellipse_ring(yc: float, zc: float, hw: float, hh: float, x: float, *, k: int = 12,
                      exponent: float = 2.5, flat_bottom: float = 1.0) -> np.ndarray:
    """Ring (k, 3) in the plane x = ``x``: a superellipse of half-width ``hw``, half-height
    ``hh`` centred at (yc, zc). ``flat_bottom`` < 1 squashes the lower half."""
    th = np.linspace(0, 2 * np.pi, k, endpoint=False) + np.pi / k
    c, s = np.cos(th), np.sin(th)
    e = 2.0 / exponent
    y = yc + hw * np.sign(c) * np.abs(c) ** e
    zz = np.sign(s) * np.abs(s) ** e
    z = zc + hh * np.where(zz < 0, zz * flat_bottom, zz)
    return np.stack([np.full(k, x), y, z], 1)


def loft(stations, *, k: int = 12, exponent: float = 2.5, smooth: bool = True, transform=None) -> Mesh:
    """Body of revolution-like loft along +x through superellipse sections.

    ``stations``: [(x, zc, half_width, half_height), ...] or with a 5th item ``yc``; a station
    with zero size is a pointed end; open ends are capped.
    """
    rings = []
    for st in stations:
        x, zc, hw, hh = st[:4]
        yc = st[4] if len(st) > 4 else 0.0
        rings.append(superellipse_ring(yc, zc, max(hw, 0.0), max(hh, 0.0), x, k=k, exponent=exponent))
    rings = np.array(rings)
    return _apply(ring_surface(rings, cap_start=True, cap_end=True, smooth=smooth), transform)


# --------------------------------------------------------------------------- vehicle parts
def wheel(center, radius: float, width: float, *, axis="y", tire_ratio: float = 0.35,
          segments: int = 16, hub: bool = True, knobs: float = 0.0, spokes: int = 0, transform=None) -> Mesh:
    """A wheel: rounded tire (a lathe of a rounded rectangle) plus a hub disc.

    ``tire_ratio`` is the tire's radial thickness relative to ``radius``; ``knobs`` > 0 makes
    every other tread column stick out by that fraction of the radius (knobbly tires);
    ``spokes`` > 0 adds thin spokes (bicycles) from the hub to the rim.
    """
    c = np.asarray(center, float)
    w = width / 2
    r_in = radius * (1.0 - tire_ratio)
    rr = min(w, (radius - r_in) / 2) * 0.6
    prof = [(r_in, -w * 0.8), (radius - rr, -w), (radius, -w + rr), (radius, w - rr),
            (radius - rr, w), (r_in, w * 0.8)]
    F = axis_frame(axis)
    th = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    circ = np.stack([np.cos(th), np.sin(th)], 1) @ F[:, :2].T
    pr = np.asarray(prof, float)
    radial = np.repeat(pr[:, 0:1], segments, 1)
    if knobs > 0:
        tread = pr[:, 0] >= radius - 1e-9
        bump = np.where(np.arange(segments) % 2 == 0, knobs * radius, 0.0)
        radial = radial + np.outer(tread, bump)
    rings = radial[..., None] * circ[None] + pr[:, None, 1:2] * F[:, 2][None, None] + c
    parts = [ring_surface(rings, wrap_rows=True, smooth=True)]
    if hub:
        hw = w * 0.75
        hr = r_in * 1.02
        prof_h = [(0, -hw * 1.1), (hr * 0.35, -hw * 1.1), (hr * 0.35, -hw * 1.1), (hr, -hw * 0.6),
                  (hr, -hw * 0.6), (hr, hw * 0.6), (hr, hw * 0.6), (hr * 0.35, hw * 1.1),
                  (hr * 0.35, hw * 1.1), (0, hw * 1.1)]
        if spokes:
            prof_h = [(0, -w * 1.2), (r_in * 0.12, -w * 1.2), (r_in * 0.12, -w * 1.2),
                      (r_in * 0.12, w * 1.2), (r_in * 0.12, w * 1.2), (0, w * 1.2)]
        parts.append(lathe(prof_h, center=c, axis=axis, segments=max(8, segments // 2 if spokes else segments)))
    if spokes:
        th_s = np.linspace(0, np.pi, spokes, endpoint=False)
        for k, t in enumerate(th_s):
            d = np.cos(t) * F[:, 0] + np.sin(t) * F[:, 1]
            off = F[:, 2] * (w * 0.3 * (1 if k % 2 else -1))
            parts.append(beam([c - d * r_in * 1.01 + off, c + d * r_in * 1.01 - off], radius * 0.012,
                              radius * 0.012, normal=F[:, 2]))
    return _apply(merge(parts), transform)


def airfoil_ring(chord: float, thickness: float) -> np.ndarray:
    """Airfoil-ish section (x back from the leading edge, z up), (8, 2), leading edge at x=0."""
    t = thickness
    return np.array([(0.0, 0.0), (0.08 * chord, 0.45 * t), (0.3 * chord, 0.5 * t), (0.7 * chord, 0.3 * t),
                     (chord, 0.03 * t), (chord, -0.03 * t), (0.7 * chord, -0.2 * t), (0.3 * chord, -0.35 * t),
                     (0.08 * chord, -0.3 * t)])


def wing(root, tip, root_chord: float, tip_chord: float, *, thickness: float = 0.12,
         vertical: bool = False, transform=None) -> Mesh:
    """Tapered, swept wing (or fin with ``vertical``) between the leading-edge points ``root`` and
    ``tip``; sections are airfoils in planes parallel to x-z (x-y for a fin), thickness relative
    to each chord."""
    rings = []
    for le, ch in ((np.asarray(root, float), root_chord), (np.asarray(tip, float), tip_chord)):
        a = airfoil_ring(ch, thickness * ch)
        pts = np.zeros((len(a), 3))
        pts[:, 0] = -a[:, 0]
        if vertical:
            pts[:, 1] = a[:, 1]
        else:
            pts[:, 2] = a[:, 1]
        rings.append(pts + le)
    m = ring_surface(np.array(rings), cap_start=True, cap_end=True, smooth=True)
    # planar uvs (plan view for a wing, side view for a fin): exact scale on a swept, tapered slab
    uv = m.positions[:, [0, 2]] if vertical else m.positions[:, [0, 1]]
    return _apply(_mesh(m.positions, m.normals, uv, m.indices), transform)


# --------------------------------------------------------------------------- combining
def merge(meshes: Sequence[Mesh]) -> Mesh:
    ms = [m for m in meshes if m.n_triangles]
    if not ms:
        return EMPTY
    return ms[0] if len(ms) == 1 else Mesh.concat(ms)


def mirror_y(mesh: Mesh) -> Mesh:
    """Mirror image across the x-z plane (y -> -y), winding fixed so faces stay outward."""
    p = mesh.positions.copy()
    p[:, 1] *= -1
    n = mesh.normals.copy()
    n[:, 1] *= -1
    uv = mesh.uvs.copy()
    uv[:, 0] *= -1
    return _mesh(p, n, uv, mesh.indices[:, [0, 2, 1]])
