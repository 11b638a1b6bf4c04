"""Official Super-CLEVR scenes re-rendered by this project's generator, beside the official renders.

An official scene file gives, per object, its attributes, its ground position and rotation
(``3d_coords``, ``rotation``) and where the official camera saw it (``pixel_coords``: x, y and the
depth along the viewing axis, at the render's resolution). That is enough to put this project's
vehicles where the official ones stand and to look at them from the official camera:

- :func:`fit_camera` finds the pinhole camera (eye, ground target, vertical field of view, no
  roll) whose projection of the objects' ``3d_coords`` best matches their ``pixel_coords`` (scipy
  least squares on pixels and depth);
- :func:`official_layout` turns the scene's objects into a :class:`~nsvqa.generation.sampler.Layout`
  (sizes as this generator draws them, the parts whose colour or material differ from their object
  as part overrides);
- :func:`rerender_scene` renders it with the generator's renderer and light rig and measures, in
  each object's mask of that render, the mean colour of both images: where the object lies in both
  (the centre the camera fit puts there), how its shading differs.

Used by ``scripts/rerender_official.py`` (results under ``results/transfer/renders/``), to see where
our renders differ from the release's: see docs/variants.md (Render looks).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from PIL import Image
from scipy.ndimage import binary_dilation, binary_erosion
from scipy.optimize import least_squares

from executors import Ontology

from nsvqa.generation.looks import DEFAULT_LOOK, OFFICIAL_SIZES, get_look
from nsvqa.generation.renderer import Camera, Renderer
from nsvqa.generation.sampler import CAMERA_EYE, Layout, PlacedObject
from nsvqa.generation.scenes import draw_items, ground_for, lights_for, model_extents

#: Degrees added to an official ``rotation`` to turn this project's model of a category the way the
#: official one stands: this generator's models run along x, the official cars, buses, motorbikes
#: and aeroplanes along y (their ``info_box``), its bicycles along x (seen on the ten sample renders).
ROTATION_OFFSETS_DEG = {"car": 90.0, "bus": 90.0, "motorbike": 90.0, "aeroplane": 90.0, "bicycle": 0.0}


def rotation_offset(shape: str, onto: Ontology) -> float:
    """The offset of :data:`ROTATION_OFFSETS_DEG` for ``shape``'s category (0 when unknown)."""
    return ROTATION_OFFSETS_DEG.get(onto.category_of(shape) or "", 0.0)


@dataclass(frozen=True)
class CameraFit:
    """The camera :func:`fit_camera` found and how well it reproduces the scene's pixels.

    Attributes:
        camera: eye, target on the ground plane, vertical field of view (degrees).
        rms_px: root mean square distance between projected and given pixel positions, in
            pixels of the given resolution.
        max_px: the largest of those distances.
        width, height: the resolution ``pixel_coords`` are given at.
    """

    camera: Camera
    rms_px: float
    max_px: float
    width: int
    height: int


def pixel_coords(obj: Mapping[str, Any], where: str) -> tuple[tuple[float, float, float], tuple[int, int] | None]:
    """``(x, y, depth)`` and the resolution they are given at (None when the file does not say) of an
    official object's ``pixel_coords`` (``[[x, y, depth], [W, H]]`` in Super-CLEVR, ``[x, y,
    depth]`` in CLEVR)."""
    pc = obj.get("pixel_coords")
    try:
        if isinstance(pc[0], (list, tuple)):
            (x, y, d), (w, h) = pc[0], pc[1]
            return (float(x), float(y), float(d)), (int(w), int(h))
        x, y, d = pc
        return (float(x), float(y), float(d)), None
    except (TypeError, ValueError, IndexError):
        raise ValueError(f"{where}, field 'pixel_coords': expected [x, y, depth] or [[x, y, depth], [W, H]], "
                         f"got {pc!r}") from None


def fit_camera(points: np.ndarray, pixels: np.ndarray, width: int, height: int,
               start: Sequence[float] = CAMERA_EYE) -> CameraFit:
    """The pinhole camera that best projects world ``points`` (N, 3) to ``pixels`` (N, 3: x, y,
    depth) in a ``width x height`` image.

    Parameters: the eye (3), the point on the ground plane it looks at (2) and the vertical field
    of view; the camera has no roll (world z is up in the image). Residuals: x and y in pixels, and
    the depth in world units scaled to pixels by the image height (so that a tenth of a unit
    weighs like a few pixels). Needs three points or more.
    """
    pts = np.asarray(points, np.float64).reshape(-1, 3)
    pix = np.asarray(pixels, np.float64).reshape(-1, 3)
    if len(pts) < 3 or len(pts) != len(pix):
        raise ValueError(f"fit_camera needs 3 or more points with their pixels, got {len(pts)} and {len(pix)}")
    depth_weight = height / 10.0

    def camera(p: np.ndarray) -> Camera:
        return Camera(eye=tuple(p[:3]), target=(float(p[3]), float(p[4]), 0.0), fov_y_deg=float(p[5]))

    def residuals(p: np.ndarray) -> np.ndarray:
        proj = camera(p).project(pts, width, height)
        return np.concatenate([proj[:, 0] - pix[:, 0], proj[:, 1] - pix[:, 1],
                               (proj[:, 2] - pix[:, 2]) * depth_weight])

    x0 = np.array([*map(float, start), 0.0, 0.0, 40.0])
    lo = np.array([-50, -50, 0.1, -20, -20, 5.0])
    hi = np.array([50, 50, 50, 20, 20, 120.0])
    sol = least_squares(residuals, x0, bounds=(lo, hi), x_scale="jac")
    cam = camera(sol.x)
    proj = cam.project(pts, width, height)
    dist = np.hypot(proj[:, 0] - pix[:, 0], proj[:, 1] - pix[:, 1])
    return CameraFit(cam, float(np.sqrt(np.mean(dist ** 2))), float(dist.max()), int(width), int(height))


def official_layout(scene: Mapping[str, Any], onto: Ontology, where: str = "scene",
                    look: str = DEFAULT_LOOK) -> tuple[Layout, CameraFit]:
    """This generator's layout of an official scene, and the fitted official camera.

    Each object keeps its shape, colour, material, size, ground position (``3d_coords`` x, y) and
    rotation (``rotation`` degrees + the shape's offset, :func:`rotation_offset`); it is drawn at
    the size ``look`` gives it (:mod:`nsvqa.generation.looks`). Parts whose
    colour or material differ from their object's become part overrides (names this generator's
    model of the shape lacks are left out). The camera is fitted to the objects' centres: the
    official ``3d_coords`` x, y, and z at half the height this generator gives the object, as the
    official generator puts it at the object's centre.
    """
    objects, points, pixels, size = [], [], [], None
    for j, o in enumerate(scene.get("objects", [])):
        ow = f"{where}, object {j}"
        try:
            shape, color, material, sz = o["shape"], o["color"], o["material"], o["size"]
            x, y = float(o["3d_coords"][0]), float(o["3d_coords"][1])
            rotation = float(o.get("rotation", 0.0))
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise ValueError(f"{ow}: missing or malformed field ({e})") from None
        if sz not in OFFICIAL_SIZES:
            raise ValueError(f"{ow}, field 'size': {sz!r} is not one of {sorted(OFFICIAL_SIZES)}")
        names = set(onto.parts_of(shape))
        parts = {}
        for name, pa in (o.get("parts") or {}).items():
            if name in names and isinstance(pa, Mapping) and (
                    pa.get("color", color) != color or pa.get("material", material) != material):
                parts[name] = {"color": pa.get("color", color), "material": pa.get("material", material),
                               "size": sz}
        try:
            scale = get_look(look).scale(shape, sz)
        except ValueError as e:
            raise ValueError(f"{ow}: {e}") from None
        objects.append(PlacedObject(shape, color, material, sz, scale, rotation + rotation_offset(shape, onto), (x, y),
                                    parts=parts))
        (px, py, pd), res = pixel_coords(o, ow)
        size = res or size
        points.append((x, y, model_extents(shape)[2] * scale / 2))
        pixels.append((px, py, pd))
    if size is None:
        raise ValueError(f"{where}: the objects' pixel_coords do not give the render's resolution; "
                         "pass the scenes of a Super-CLEVR release ([[x, y, depth], [W, H]])")
    fit = fit_camera(np.array(points), np.array(pixels), size[0], size[1])
    layout = Layout(objects, tuple(fit.camera.eye), 1.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), look)
    return layout, fit


@dataclass
class Rerender:
    """One official scene re-rendered (see :func:`rerender_scene`).

    Attributes:
        ours: (H, W, 3) uint8, this generator's render.
        theirs: (H, W, 3) uint8, the official render resized to (W, H).
        object_ids: (H, W) int, the object of each pixel of ``ours`` (-1: none).
        fit: the fitted camera.
        objects: per object: shape, colour, material, size, visible pixels in ``ours``, and the
            mean RGB of both images in the object's mask (eroded by one pixel), None when fewer than
            20 pixels remain.
        ground: the mean RGB of both images where neither ours has an object nor any object is
            near (the pixels 8 or more pixels away from every object of ours): ground and background.
    """

    ours: np.ndarray
    theirs: np.ndarray
    object_ids: np.ndarray
    fit: CameraFit
    objects: list[dict]
    ground: dict
    look: str = DEFAULT_LOOK


def rerender_scene(renderer: Renderer, onto: Ontology, scene: Mapping[str, Any], official_rgb: np.ndarray,
                   where: str = "scene", look: str = DEFAULT_LOOK) -> Rerender:
    """Render an official scene with this generator at ``look``'s sizes, from the fitted official
    camera (at the renderer's resolution), and measure both images in each object's mask."""
    layout, fit = official_layout(scene, onto, where, look)
    w, h = renderer.width, renderer.height
    result = renderer.render(draw_items(layout, onto), fit.camera, lights_for(layout), ground_for(layout))
    theirs = np.asarray(Image.fromarray(np.asarray(official_rgb, np.uint8)).resize((w, h), Image.Resampling.LANCZOS))
    ids = np.asarray(result.object_ids).astype(np.int64)
    ours = np.asarray(result.rgb, np.uint8)
    objects = []
    for i, o in enumerate(layout.objects):
        mask = ids == i
        core = binary_erosion(mask)
        rec = {"shape": o.shape, "color": o.color, "material": o.material, "size": o.size,
               "pixels": int(mask.sum()), "ours_rgb": None, "theirs_rgb": None}
        if core.sum() >= 20:
            rec["ours_rgb"] = [round(float(v), 1) for v in ours[core].mean(0)]
            rec["theirs_rgb"] = [round(float(v), 1) for v in theirs[core].mean(0)]
        objects.append(rec)
    far = ~binary_dilation(ids >= 0, iterations=8)
    ground = {"ours_rgb": [round(float(v), 1) for v in ours[far].mean(0)],
              "theirs_rgb": [round(float(v), 1) for v in theirs[far].mean(0)]}
    return Rerender(ours, theirs, ids, fit, objects, ground, look)


def colour_gaps(objects: Sequence[Mapping[str, Any]],
                grounds: Sequence[Mapping[str, Any]] = ()) -> dict[str, dict[str, Any]]:
    """Mean RGB of ours and theirs per (material, colour) and per material over every measured
    object of :attr:`Rerender.objects` lists (and ``ground`` over :attr:`Rerender.ground` of each
    scene, when given), with their mean brightness (0-255) and the mean absolute RGB difference:
    where shading differs, and by how much."""
    groups: dict[str, list[Mapping[str, Any]]] = {"ground": list(grounds)} if grounds else {}
    for o in objects:
        if o.get("ours_rgb") is None:
            continue
        groups.setdefault(f"{o['material']}/{o['color']}", []).append(o)
        groups.setdefault(o["material"], []).append(o)
    out = {}
    for key in sorted(groups):
        ours = np.array([o["ours_rgb"] for o in groups[key]])
        theirs = np.array([o["theirs_rgb"] for o in groups[key]])
        out[key] = {"objects": len(ours),
                    "ours_rgb": [round(float(v), 1) for v in ours.mean(0)],
                    "theirs_rgb": [round(float(v), 1) for v in theirs.mean(0)],
                    "ours_brightness": round(float(ours.mean()), 1),
                    "theirs_brightness": round(float(theirs.mean()), 1),
                    "mean_abs_rgb_diff": round(float(np.abs(ours - theirs).mean()), 1)}
    return out


__all__ = ["CameraFit", "Rerender", "ROTATION_OFFSETS_DEG", "rotation_offset", "colour_gaps", "fit_camera", "official_layout",
           "pixel_coords", "rerender_scene"]
