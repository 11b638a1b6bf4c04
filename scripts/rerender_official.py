"""Official Super-CLEVR scenes re-rendered by this generator, beside the official renders.

    python scripts/rerender_official.py --release $NSVQA_REFERENCE/superclevr --range 0-9 \\
        --out results/transfer/renders

For each scene of the range: the official render (resized) and this generator's render of the same
scene from the fitted official camera (nsvqa.generation.rerender), side by side in
OUT/side_by_side.png (ours alone in OUT/ours.png: the side-by-side holds the release's images, which
this repository does not redistribute); OUT/report.json holds each camera fit, each object's mean colour in both
images (in the mask of our render) and the gaps per material and colour; OUT/report.md the tables.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from executors import load_ontology
from nsvqa.config import HelpFormatter, parse_checked
from nsvqa.fileio import OutputFolder, write_atomic, write_json_atomic
from nsvqa.generation.dataset import image_side, png_bytes
from nsvqa.generation.official import OfficialFormatError, OfficialRelease, index_scenes
from nsvqa.generation.renderer import Renderer, RendererUnavailable
from nsvqa.generation.rerender import Rerender, colour_gaps, rerender_scene

PROG = "rerender_official.py"


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--release", type=Path, required=True, help="the release folder (superCLEVR_scenes.json, images/)")
    p.add_argument("--scenes", type=Path, help="the scenes file (default: RELEASE/superCLEVR_scenes.json)")
    p.add_argument("--images", type=Path, help="the image folder (default: RELEASE/images)")
    p.add_argument("--range", default="0-9", metavar="FIRST-LAST", help="image_index range (default 0-9)")
    p.add_argument("--look", default="v1", help="this generator's render look (nsvqa.generation.looks): v1 (default), v2")
    p.add_argument("--width", type=image_side, default=320, help="image width in pixels (16 to 4096)")
    p.add_argument("--height", type=image_side, default=240, help="image height in pixels (16 to 4096)")
    p.add_argument("--out", type=OutputFolder, required=True, help="report folder")
    return p


def markdown(report: dict) -> str:
    lines = [f"# Official scenes re-rendered by this generator (look `{report['look']}`)", "",
             f"{len(report['scenes'])} scenes of `{report['scenes_file']}`, at {report['width']}x{report['height']}. "
             "Left: the official render; right: ours from the fitted official camera.", "",
             "## Camera fits", "",
             "| image | objects | eye | fov (deg) | rms px | max px |", "|---|---|---|---|---|---|"]
    for s in report["scenes"]:
        c = s["camera"]
        lines.append(f"| {s['image_index']} | {len(s['objects'])} | {', '.join(f'{v:.2f}' for v in c['eye'])} | "
                     f"{c['fov_y_deg']:.1f} | {c['rms_px']:.1f} | {c['max_px']:.1f} |")
    lines += ["", "Pixels are given at the official resolution.", "",
              "## Mean colour in our objects' masks (and on the ground, away from every object)", "",
              "| material / colour | objects | ours RGB | theirs RGB | ours brightness | theirs brightness | mean abs diff |",
              "|---|---|---|---|---|---|---|"]
    for key, g in report["colour_gaps"].items():
        lines.append(f"| {key} | {g['objects']} | {g['ours_rgb']} | {g['theirs_rgb']} | {g['ours_brightness']} | "
                     f"{g['theirs_brightness']} | {g['mean_abs_rgb_diff']} |")
    return "\n".join(lines) + "\n"


def scene_record(scene: dict, r: Rerender) -> dict:
    """The report's entry of official ``scene`` re-rendered as ``r``
    (:func:`~nsvqa.generation.rerender.rerender_scene`): its index and file name, the fitted camera
    (eye, target, vertical field of view, fit errors in official pixels, the official resolution),
    and its objects' and ground's colours."""
    cam = r.fit.camera
    return {"image_index": scene["image_index"], "image_filename": scene["image_filename"],
            "camera": {"eye": [round(float(v), 3) for v in cam.eye],
                       "target": [round(float(v), 3) for v in cam.target],
                       "fov_y_deg": round(cam.fov_y_deg, 2), "rms_px": round(r.fit.rms_px, 2),
                       "max_px": round(r.fit.max_px, 2), "resolution": [r.fit.width, r.fit.height]},
            "objects": r.objects, "ground": r.ground}


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    try:
        first, last = (int(v) for v in args.range.split("-"))
    except ValueError:
        print(f"{PROG}: --range {args.range!r}: expected FIRST-LAST", file=sys.stderr)
        return 2
    try:  # the importer's reader: the paths and every scene's index and file name checked
        release = OfficialRelease.find(args.release, scenes=args.scenes, questions=(), images=args.images)
        scenes, _ = index_scenes(release.scenes)
    except OfficialFormatError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    scenes_file, images = release.scenes, release.images
    chosen = [s for s in scenes if first <= int(s.get("image_index", -1)) <= last]
    if not chosen:
        print(f"{PROG}: {scenes_file}: no scene with image_index in {first}-{last}", file=sys.stderr)
        return 2
    onto = load_ontology("superclevr")
    try:
        renderer = Renderer(args.width, args.height)
    except RendererUnavailable as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    rows, records, all_objects, grounds = [], [], [], []
    try:
        for s in chosen:
            where = f"{scenes_file}, scene {s['image_index']}"
            path = images / s["image_filename"]
            try:
                with Image.open(path) as im:
                    official = np.asarray(im.convert("RGB"))
            except OSError as e:
                print(f"{PROG}: {where}, field 'image_filename': cannot read {path} ({e})", file=sys.stderr)
                return 2
            try:
                r = rerender_scene(renderer, onto, s, official, where, look=args.look)
            except ValueError as e:
                print(f"{PROG}: {e}", file=sys.stderr)
                return 2
            rows.append(np.concatenate([r.theirs, r.ours], 1))
            records.append(scene_record(s, r))
            all_objects += r.objects
            grounds.append(r.ground)
    finally:
        renderer.release()
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "side_by_side.png", png_bytes(np.concatenate(rows, 0)))
    write_atomic(args.out / "ours.png", png_bytes(np.concatenate([row[:, args.width:] for row in rows], 0)))
    report = {"scenes_file": str(scenes_file), "range": [first, last], "look": r.look, "width": args.width,
              "height": args.height, "scenes": records, "colour_gaps": colour_gaps(all_objects, grounds)}
    write_json_atomic(args.out / "report.json", report, indent=1)
    write_atomic(args.out / "report.md", markdown(report))
    print(markdown(report))
    print(f"{PROG}: wrote {args.out}/side_by_side.png, ours.png, report.json, report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
