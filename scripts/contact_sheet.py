"""Contact sheets of the generator: the 21 vehicle shapes, and sample scenes in easy/mid/hard.

    python scripts/contact_sheet.py --out docs

writes ``docs/shapes.png`` (each shape alone, parts in contrasting colors so they can be checked)
and ``docs/variants.png`` (the same layouts in easy, mid and hard).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from executors import load_ontology
from nsvqa.generation.renderer import Camera, DrawItem, Lights, Renderer
from nsvqa.generation.scenes import GLASS_RGB, body_meshes, generate_image, object_matrix
from nsvqa.fileio import write_atomic
from nsvqa.generation.dataset import image_side, png_bytes
from nsvqa.generation.variants import load_variant
from nsvqa.generation.vehicles import build_vehicle
from nsvqa.config import HelpFormatter, parse_checked

PART_COLORS = ["red", "blue", "green", "yellow", "purple", "cyan", "brown"]


def shape_tile(renderer: Renderer, onto, shape: str, color: str, show_parts: bool) -> np.ndarray:
    model = build_vehicle(shape)
    rgb = {c: tuple(v / 255 for v in x) for c, x in onto.rgb.items()}
    mat = object_matrix(1.0, 20.0, (0.0, 0.0))
    body, glass = body_meshes(shape)
    items = [DrawItem(body, mat, rgb[color], False, "none", 0, 0)]
    if glass is not None:
        items.append(DrawItem(glass, mat, GLASS_RGB, True, "none", 0, 0))
    for k, mesh in enumerate(model.parts.values()):
        c = PART_COLORS[k % len(PART_COLORS)] if show_parts else color
        items.append(DrawItem(mesh, mat, rgb[c], show_parts and k % 2 == 1, "none", 0, k + 1))
    cam = Camera(eye=(1.05, -0.95, 0.7), target=(0.0, 0.0, 0.12), fov_y_deg=38.0)
    lights = Lights(key_dir=(-0.37, -0.56, 0.74), key_intensity=0.9, fill_dir=(0.7, -0.3, 0.6),
                    fill_intensity=0.35, ambient=0.25)
    return renderer.render(items, cam, lights).rgb


def label(img: np.ndarray, text: str) -> np.ndarray:
    im = Image.fromarray(img)
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, 7 * len(text) + 6, 13], fill=(255, 255, 255))
    d.text((3, 1), text, fill=(0, 0, 0))
    return np.asarray(im)


def grid(tiles: list[np.ndarray], cols: int) -> np.ndarray:
    h, w = tiles[0].shape[:2]
    rows = -(-len(tiles) // cols)
    out = np.full((rows * h, cols * w, 3), 255, np.uint8)
    for k, t in enumerate(tiles):
        r, c = divmod(k, cols)
        out[r * h:(r + 1) * h, c * w:(c + 1) * w] = t
    return out


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("docs"), help="folder the contact sheet PNG is written to")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="scene seeds, one row of the sheet each")
    p.add_argument("--width", type=image_side, default=320, help="image width in pixels (16 to 4096)")
    p.add_argument("--height", type=image_side, default=240, help="image height in pixels (16 to 4096)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    onto = load_ontology("superclevr")
    colors = onto.values("color")
    with Renderer(200, 150) as r:
        tiles = [label(shape_tile(r, onto, s, colors[k % len(colors)] if k % len(colors) else "gray", False), s)
                 for k, s in enumerate(onto.scene_values("shape"))]  # addi has no model
        parts = [label(shape_tile(r, onto, s, "gray", True), f"{s} parts") for s in onto.scene_values("shape")]
    write_atomic(args.out / "shapes.png", png_bytes(grid(tiles + parts, 7)))
    rows = []
    with Renderer(args.width, args.height) as r:
        for seed in args.seeds:
            for v in ("easy", "mid", "hard"):
                img = generate_image(r, onto, load_variant(v).scene_params("val", onto), seed, 0, "val", "x.png")
                rows.append(label(img.rgb, f"seed {seed} {v}"))
    write_atomic(args.out / "variants.png", png_bytes(grid(rows, 3)))
    print(f"wrote {args.out / 'shapes.png'} and {args.out / 'variants.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
