"""The four aeroplanes (jet, fighter, biplane, airliner)."""
from __future__ import annotations

import math

import numpy as np

from nsvqa.generation import primitives as P
from nsvqa.generation.meshes import Mesh
from nsvqa.generation.primitives import beam, box, cylinder, ellipsoid, lathe, loft, merge, mirror_y, tube, wheel, wing
from nsvqa.generation.vehicles.model import VehicleModel, _Build
from nsvqa.generation.vehicles.pieces import _strip


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


def _cabin_windows(b: _Build, x: float, D: float, z: float, length: float, height: float) -> None:
    """A strip of cabin windows on each side (left first) of a fuselage of diameter ``D``, centred
    at (``x``, ``z``)."""
    for s in (1, -1):
        b.win(box((x, s * (D / 2 - 0.02), z), (length, 0.08, height)))


def _aeroplane(shape: str) -> VehicleModel:
    b = _Build(shape)
    if shape == "airliner":
        L, D, span = 38.0, 4.0, 35.0
        zc = 3.6
        b.add(_fuselage(L, D, zc, nose=0.1, tail=0.22, tail_up=0.5))
        # cockpit windows and cabin window strips
        b.win(_strip([(L / 2 - 1.6, zc + 0.9), (L / 2 - 2.9, zc + 1.45)], 0.05, -1.0, 1.0, out=(1, 1)))
        _cabin_windows(b, -1.5, D, zc + 0.65, L * 0.62, 0.35)
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
        _cabin_windows(b, -0.5, D, zc + 0.35, L * 0.5, 0.3)
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
