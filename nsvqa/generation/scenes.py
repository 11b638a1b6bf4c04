"""One generated image: layout -> render -> visibility -> parts/textures -> final render -> JSON.

The scene record follows the Super-CLEVR schema (docs/formats.md) and adds, per object, its COCO
RLE ``mask`` and ``bbox`` and the masks of its visible parts (``part_masks``), so annotations can
be rebuilt from the scenes file alone.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from executors import Ontology, SymbolicScene

from nsvqa.generation.annotations import label_rles
from nsvqa.generation.looks import get_look
from nsvqa.generation.meshes import Mesh
from nsvqa.generation.renderer import Camera, DrawItem, Lights, Renderer
from nsvqa.generation.sampler import (Layout, PlacementError, SceneParams, choose_parts, choose_textures,
                                      sample_layout, streams)
from nsvqa.generation.vehicles import build_vehicle

#: Reference resolution of the visibility thresholds.
_REF_PIXELS = 320 * 240


@lru_cache(maxsize=None)
def model_extents(shape: str) -> tuple[float, float, float]:
    """(length, width, height) of the canonical model of ``shape``."""
    m = build_vehicle(shape)
    lo = np.min([p.bounds()[0] for p in [m.body, *m.parts.values()]], axis=0)
    hi = np.max([p.bounds()[1] for p in [m.body, *m.parts.values()]], axis=0)
    ext = hi - lo
    return float(ext[0]), float(ext[1]), float(ext[2])


#: Window glass: dark and shiny whatever the object's colour (part of the body: part id 0).
GLASS_RGB = (0.10, 0.12, 0.15)


@lru_cache(maxsize=None)
def body_meshes(shape: str) -> tuple[Mesh, Mesh | None]:
    """The body of ``shape`` split into its coloured surface and its window glass (or None)."""
    model = build_vehicle(shape)
    glass = model.body_glass
    if glass is None or not np.any(glass):
        return model.body, None
    b = model.body
    sub = lambda keep: Mesh(b.positions, b.normals, b.uvs, np.ascontiguousarray(b.indices[keep]))  # noqa: E731
    return sub(~glass), sub(glass)


def object_matrix(scale: float, rotation_deg: float, position: tuple[float, float]) -> np.ndarray:
    """Model -> world: uniform scale, rotation about +z, translation on the ground."""
    t = math.radians(rotation_deg)
    c, s = math.cos(t), math.sin(t)
    m = np.eye(4)
    m[:3, :3] = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) * scale
    m[0, 3], m[1, 3] = position
    return m


def draw_items(layout: Layout, onto: Ontology) -> list[DrawItem]:
    """The body and every part of every object, coloured by the object or its part override."""
    rgb = {c: tuple(v / 255.0 for v in c_rgb) for c, c_rgb in onto.rgb.items()}
    items = []
    for i, o in enumerate(layout.objects):
        model = build_vehicle(o.shape)
        mat = object_matrix(o.scale, o.rotation, o.position)
        body, glass = body_meshes(o.shape)
        items.append(DrawItem(body, mat, rgb[o.color], o.material == "metal", o.texture, i, 0))
        if glass is not None:
            items.append(DrawItem(glass, mat, GLASS_RGB, True, "none", i, 0))
        for k, (name, mesh) in enumerate(model.parts.items()):
            pa = o.parts.get(name)
            color = rgb[pa["color"]] if pa else rgb[o.color]
            metal = (pa["material"] if pa else o.material) == "metal"
            tex = pa.get("texture", o.texture) if pa else o.texture
            items.append(DrawItem(mesh, mat, color, metal, tex, i, k + 1))
    return items


@dataclass
class GeneratedImage:
    """Rendered pixels, exact id maps and the scene record of one image."""

    rgb: np.ndarray
    object_ids: np.ndarray
    part_ids: np.ndarray
    scene: dict


def object_centers(layout: Layout) -> np.ndarray:
    """(N, 3) centre of each object: its ground position at half its height (``3d_coords``)."""
    return np.array([(o.position[0], o.position[1], model_extents(o.shape)[2] * o.scale / 2)
                     for o in layout.objects], dtype=float)


def camera_for(layout: Layout) -> Camera:
    return Camera(eye=layout.camera_eye, target=(0.0, 0.0, 0.0), fov_y_deg=get_look(layout.look).fov_y_deg)


def lights_for(layout: Layout) -> Lights:
    """The light rig of the layout's look with the layout's jitter on the key and fill directions."""
    base = get_look(layout.look).lights()
    key = np.asarray(base.key_dir) + layout.key_jitter
    fill = np.asarray(base.fill_dir) + layout.fill_jitter
    return dataclasses.replace(base, key_dir=tuple(map(float, key / np.linalg.norm(key))),
                               fill_dir=tuple(map(float, fill / np.linalg.norm(fill))))


def ground_for(layout: Layout) -> tuple[float, float, float]:
    """The ground's colour in the layout's look."""
    return get_look(layout.look).ground_color


def generate_image(renderer: Renderer, onto: Ontology, params: SceneParams, seed: int, index: int,
                   split: str, image_filename: str) -> GeneratedImage:
    """Sample, check visibility and render image ``index`` of a split.

    A try whose objects do not fit on the ground (:class:`~nsvqa.generation.sampler.PlacementError`:
    ten large aeroplanes, say) is rejected like one with a hidden object, and the next try draws a
    new layout from the same stream, as CLEVR's generator starts a scene again with new objects.
    An image generated before this rule existed is the same bytes: none of its tries failed to place.

    Raises:
        RuntimeError: no layout with every object placed and visible within ``params.max_retries`` tries.
    """
    rng = streams(seed, index)
    extents = {s: model_extents(s)[:2] for s in onto.scene_values("shape")}  # no model for addi
    h, w = renderer.height, renderer.width
    scale = (h * w) / _REF_PIXELS
    min_obj, min_part = params.min_object_pixels * scale, params.min_part_pixels * scale
    for _ in range(params.max_retries):
        try:
            layout = sample_layout(rng["layout"], onto, params, extents)
        except PlacementError:
            continue
        # the id pass alone decides visibility (and is the same for every complexity level)
        # every object centre in the frame (3% margin) and enough of every object visible
        pix = camera_for(layout).project(object_centers(layout), w, h)
        if not (np.all((pix[:, 0] > 0.03 * w) & (pix[:, 0] < 0.97 * w))
                and np.all((pix[:, 1] > 0.03 * h) & (pix[:, 1] < 0.97 * h))):
            continue
        object_ids, part_ids = renderer.render_ids(draw_items(layout, onto), camera_for(layout))
        counts = np.bincount(object_ids.ravel() + 1, minlength=len(layout.objects) + 1)[1:]
        if np.all(counts >= min_obj):
            break
    else:
        raise RuntimeError(f"image {index}: no layout with every object placed and visible (>= {min_obj:.0f} px) "
                           f"in {params.max_retries} tries")
    # the parts a mid-level image of this layout recolours, chosen at every level (from their own
    # random stream): easy shows none of them, but asks the questions mid asks (VISUAL_PARTS)
    weights = params.weights.validated(onto)
    visual_parts = []
    for i, o in enumerate(layout.objects):
        names = onto.parts_of(o.shape)
        pix = np.bincount(part_ids[object_ids == i].ravel(), minlength=len(names) + 1)
        visible = [n for k, n in enumerate(names) if pix[k + 1] >= min_part]
        visual_parts.append(choose_parts(rng["parts"], onto, o, visible, params.max_parts, weights))
    if params.complexity != "easy":
        for o, parts in zip(layout.objects, visual_parts):
            o.parts = copy.deepcopy(parts)
        if params.complexity == "hard":
            for o in layout.objects:
                choose_textures(rng["texture"], onto, o)
    result = renderer.render(draw_items(layout, onto), camera_for(layout), lights_for(layout), ground_for(layout))
    scene = scene_record(layout, result, onto, index, split, image_filename, renderer)
    if params.complexity == "easy":  # the same parts listed, looking like their object (as drawn)
        for o, parts in zip(scene["objects"], visual_parts):
            o["parts"] = plain_parts(o, parts)
    scene[VISUAL_PARTS] = visual_parts
    return GeneratedImage(result.rgb, result.object_ids, result.part_ids, scene)


def plain_parts(obj: Mapping[str, Any], parts: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``parts`` (names) listed with the attributes of their object ``obj``: how the easy level
    lists the parts the mid level recolours, so that the questions about them are asked there too
    ("what colour is the wheel of the blue car": blue)."""
    return {name: {"color": obj["color"], "material": obj["material"], "size": obj["size"]} for name in parts}


#: Key of a per-image record (not of the merged scenes file) that holds, per object, the parts the
#: mid level of the layout recolours (``{name: {"color", "material", "size"}}``), at every visual
#: level: the question engine asks every level the questions of the mid-level scene
#: (:func:`question_scene`), so that easy, mid and hard share their questions, as in the paper.
#: The easy level lists the same parts with their object's attributes (:func:`plain_parts`).
VISUAL_PARTS = "visual_parts"


def question_scene(record: Mapping[str, Any]) -> tuple[dict, list[dict]]:
    """(the scene the questions of a layout are asked about, the other visual levels' forms of it
    whose programs must run too) from a per-image record at any visual level.

    The question scene is the mid level: every object with the parts of :data:`VISUAL_PARTS` (the
    record's own parts when it has no such key) and no texture (texture filters are off). The other
    form is the easy level: the same parts listed, with their object's colour and material
    (:func:`plain_parts`). The hard level asks the same programs as mid over the same colours and
    materials, so it needs no form of its own. The record itself is left unchanged.
    """
    objects = record.get("objects", [])
    parts = record.get(VISUAL_PARTS) or [o.get("parts", {}) for o in objects]
    if len(parts) != len(objects):
        raise ValueError(f"scene {record.get('image_index')}: {VISUAL_PARTS} has {len(parts)} entries for "
                         f"{len(objects)} objects")
    base = {k: v for k, v in record.items() if k != VISUAL_PARTS}
    mid = {**base, "objects": [{**o, "parts": copy.deepcopy(p), "texture": "none"} for o, p in zip(objects, parts)]}
    easy = {**base, "objects": [{**o, "parts": plain_parts(o, p), "texture": "none"} for o, p in zip(objects, parts)]}
    return mid, [easy]


def scene_record(layout: Layout, result, onto: Ontology, index: int, split: str, image_filename: str,
                 renderer: Renderer) -> dict:
    """The Super-CLEVR scene JSON of a rendered layout (with RLE masks and boxes)."""
    cam, lights = camera_for(layout), lights_for(layout)
    centers = object_centers(layout)
    pix = cam.project(centers, renderer.width, renderer.height)
    # one pass over each id map gives every object's and every visible part's RLE
    n_obj = len(layout.objects)
    obj_rles = label_rles(result.object_ids, range(n_obj))
    part_labels = np.where(result.part_ids > 0, result.object_ids.astype(np.int32) * 64 + result.part_ids, -1)
    present = np.unique(part_labels[part_labels >= 0])
    part_rles = label_rles(part_labels, present.tolist())
    objects = []
    for i, o in enumerate(layout.objects):
        rle, bbox = obj_rles[i]
        names = onto.parts_of(o.shape)
        part_masks = {names[lab % 64 - 1]: {"bbox": part_rles[lab][1], "mask": part_rles[lab][0]}
                      for lab in present[(present // 64) == i].tolist()}
        objects.append({
            "shape": o.shape, "color": o.color, "material": o.material, "size": o.size,
            "texture": o.texture, "rotation": round(o.rotation, 6),
            "3d_coords": [round(float(c), 6) for c in centers[i]],
            "pixel_coords": [round(float(pix[i, 0]), 3), round(float(pix[i, 1]), 3), round(float(pix[i, 2]), 4)],
            "parts": {n: dict(pa) for n, pa in o.parts.items()},
            "bbox": bbox, "mask": rle, "part_masks": part_masks,
        })
    record = {"image_index": index, "image_filename": image_filename, "split": split,
              "directions": cam.ground_directions(), "objects": objects,
              "camera": {"eye": list(cam.eye), "target": list(cam.target), "fov_y_deg": cam.fov_y_deg,
                         "distance_scale": layout.camera_scale},
              "lights": {"key": list(lights.key_dir), "fill": list(lights.fill_dir)}}
    # relationships exactly as the executors compute them (0.2 margin along the directions)
    sym = SymbolicScene.from_json({**record, "objects": [{k: v for k, v in o.items()
                                                          if k not in ("mask", "part_masks")}
                                                         for o in objects]}, onto)
    record["relationships"] = sym.relation_lists()
    return record
