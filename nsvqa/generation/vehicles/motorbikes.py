"""The four motorbikes (chopper, dirtbike, scooter, cruiser)."""
from __future__ import annotations

import math

import numpy as np

from nsvqa.generation.primitives import beam, box, cylinder, lathe, loft, mirror_y, tube
from nsvqa.generation.vehicles.model import VehicleModel, _Build
from nsvqa.generation.vehicles.pieces import (_chain, _exhaust, _fender, _fork, _handle, _loop, _mb_wheel, _mirror,
                                              _pegs, _strip)


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
