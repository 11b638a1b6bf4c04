"""Pieces shared by several vehicle builders: 2D outlines (strips, insets, arches, arcs) and the
two-wheelers' fittings (forks, handlebars, fenders, chains, pegs, exhausts)."""
from __future__ import annotations

import math

import numpy as np

from nsvqa.generation.meshes import Mesh
from nsvqa.generation.primitives import beam, cylinder, ellipsoid, merge, prism, tube, wheel


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
