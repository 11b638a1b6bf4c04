"""The four buses (articulated, regular, double, school)."""
from __future__ import annotations

import numpy as np

from nsvqa.generation.meshes import Mesh
from nsvqa.generation.primitives import box, merge, prism, tube, wheel
from nsvqa.generation.vehicles.model import VehicleModel, _Build
from nsvqa.generation.vehicles.pieces import _arch, _fender


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
