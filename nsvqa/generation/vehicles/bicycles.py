"""The four bicycles (road, utility, mountain, tandem)."""
from __future__ import annotations

import math

import numpy as np

from nsvqa.generation.meshes import Mesh
from nsvqa.generation.primitives import beam, box, cylinder, loft, merge, mirror_y, tube, wheel
from nsvqa.generation.vehicles.model import VehicleModel, _Build
from nsvqa.generation.vehicles.pieces import _chain, _fender, _fork, _handle, _strip


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


#: The frame of each bicycle but the tandem: wheel radius, tyre radius, front and back axle x, head
#: tube top and bottom, seat tube top, half the handlebar width (metres).
_FRAMES = {
    "road": (0.34, 0.016, 0.6, -0.4, (0.55, 0, 0.82), (0.58, 0, 0.68), (-0.17, 0, 0.82), 0.21),
    "mountain": (0.36, 0.032, 0.68, -0.45, (0.55, 0, 0.86), (0.6, 0, 0.74), (-0.17, 0, 0.74), 0.33),
    "utility": (0.34, 0.022, 0.64, -0.46, (0.5, 0, 0.86), (0.55, 0, 0.68), (-0.2, 0, 0.78), 0.28),
}


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
    R, tr, xf, xb, ht_top, ht_bot, st_top, bars_half = _FRAMES[shape]
    ht_top, ht_bot, st_top = np.array(ht_top), np.array(ht_bot), np.array(st_top)
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
