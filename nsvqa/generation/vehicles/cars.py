"""The five cars (suv, wagon, minivan, sedan, truck): one parametric builder and its table."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nsvqa.generation.primitives import beam, box, prism, wheel
from nsvqa.generation.vehicles.model import VehicleModel, _Build
from nsvqa.generation.vehicles.pieces import _arch, _clip_x, _fender, _inset_convex, _strip


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
