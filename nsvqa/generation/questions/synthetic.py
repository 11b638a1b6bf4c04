"""Synthetic scene records without rendering, for tests and benchmarks (:func:`synthetic_scene`)."""
from __future__ import annotations

import numpy as np

from executors import Ontology, SymbolicScene

#: Ground-plane directions of a CLEVR-like camera (those of the reference scenes, rounded).
CLEVR_DIRECTIONS = {"right": [0.6563, 0.7545, 0.0], "left": [-0.6563, -0.7545, 0.0],
                    "behind": [-0.7545, 0.6563, 0.0], "front": [0.7545, -0.6563, 0.0],
                    "above": [0.0, 0.0, 1.0], "below": [0.0, 0.0, -1.0]}


def synthetic_scene(onto: Ontology, rng: np.random.Generator, n_objects: int | None = None, *,
                    image_index: int = 0, max_parts: int = 3, textures: bool = False,
                    split: str = "synthetic") -> dict:
    """A scene record like the generator's, without rendering (for tests and benchmarks).

    Objects get uniform random attributes (shapes: the placed ones, ``onto.scene_values``),
    positions at least 1.0 apart on a 6 x 6 ground,
    up to ``max_parts`` recoloured parts (another color, any material, the object's size), and
    ``relationships`` computed by :meth:`executors.SymbolicScene.relation_lists` (0.2 margin
    along :data:`CLEVR_DIRECTIONS`).
    """
    n = int(rng.integers(3, 11)) if n_objects is None else int(n_objects)
    shapes, colors = onto.scene_values("shape"), onto.values("color")
    tex = [t for t in onto.values("texture") if t != "none"] if "texture" in onto.attributes else []
    pos: list[tuple[float, float]] = []
    objects = []
    for _ in range(n):
        for _ in range(200):
            p = (float(rng.uniform(-3, 3)), float(rng.uniform(-3, 3)))
            if all((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 >= 1.0 for q in pos):
                break
        pos.append(p)
        shape = shapes[int(rng.integers(len(shapes)))]
        size = ("large", "small")[int(rng.integers(2))]
        color = colors[int(rng.integers(len(colors)))]
        o = {"shape": shape, "size": size, "color": color,
             "material": ("rubber", "metal")[int(rng.integers(2))],
             "3d_coords": [p[0], p[1], 0.7 if size == "large" else 0.35], "rotation": float(rng.uniform(0, 360))}
        if textures:
            o["texture"] = ["none", *tex][int(rng.integers(len(tex) + 1))]
        names = onto.parts_of(shape)
        k = int(rng.integers(0, min(max_parts, len(names)) + 1))
        parts = {}
        for j in sorted(rng.choice(len(names), size=k, replace=False).tolist()) if k else []:
            others = [c for c in colors if c != color]
            pa = {"color": others[int(rng.integers(len(others)))],
                  "material": ("rubber", "metal")[int(rng.integers(2))], "size": size}
            if textures:
                pa["texture"] = tex[int(rng.integers(len(tex)))]
            parts[names[j]] = pa
        o["parts"] = parts
        objects.append(o)
    rec = {"image_index": image_index, "image_filename": f"synthetic_{image_index:06d}.png", "split": split,
           "directions": {k: list(v) for k, v in CLEVR_DIRECTIONS.items()}, "objects": objects}
    rec["relationships"] = SymbolicScene.from_json(rec, onto).relation_lists()
    return rec
