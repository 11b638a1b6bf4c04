"""Import the official Super-CLEVR release as one variant folder (images, scenes, questions, COCO masks).

    python scripts/import_superclevr.py --release /data/superCLEVR --out data/generated --variant superclevr
    python scripts/import_superclevr.py --release $NSVQA_REFERENCE/superclevr --out /tmp/data \\
        --questions $NSVQA_REFERENCE/superclevr/superCLEVR_questions_official_objects.json --split test=0-9

The release's split ranges by default (image_index 0-19,999 train, 20,000-24,999 val, 25,000-29,999
test; a release written by scripts/export_superclevr.py: the ranges it recorded), or --split
SPLIT=FIRST-LAST (repeatable). Images, masks and boxes are resized to --width x --height. Scenes
without 'obj_mask_box' are imported for evaluation only (no annotations file; said, and recorded
in the manifest). See docs/formats.md, "Importing and exporting the official release".
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nsvqa.generation.official import OfficialRelease, add_release_args, import_release, parse_split_ranges
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import parse_checked


PROG = "nsvqa-import-superclevr"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    p.add_argument("--release", type=Path, help="the release folder (superCLEVR_scenes.json, images/, "
                                                "superCLEVR_questions_30k.json); default: the scenes file's folder")
    add_release_args(p)
    p.add_argument("--out", type=Path, required=True, help="dataset root (the variant folder is made inside)")
    p.add_argument("--variant", default="superclevr", help="name of the variant folder")
    p.add_argument("--split", action="append", default=[], metavar="SPLIT=FIRST-LAST",
                   help="image_index range of a split, both ends included (repeatable); default: the release's")
    p.add_argument("--skip-unknown-parts", action="store_true",
                   help="leave out masks of part names the object's shape does not have (default: an error)")
    p.add_argument("--overwrite", action="store_true", help="replace splits already imported into the folder")
    p.add_argument("--workers", type=int, default=1, help="processes converting the release's scenes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    if args.release is None and args.scenes is None:
        print(f"{PROG}: error: give --release or --scenes", file=sys.stderr)
        return 2
    try:
        ranges = parse_split_ranges(args.split) if args.split else None
        release = OfficialRelease.find(args.release or args.scenes.parent, args.scenes, args.questions, args.images)
        with needs_extra(PROG):  # [full]: PIL, pycocotools and the renderer, imported where used
            res = import_release(release, args.out / args.variant, splits=ranges, width=args.width,
                                 height=args.height, unknown_parts="skip" if args.skip_unknown_parts else "error",
                                 overwrite=args.overwrite, workers=args.workers, progress=not args.no_progress)
    except ValueError as e:  # OfficialFormatError included
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    for name, s in res.splits.items():
        print(f"{res.folder}: {name}: {s['images']} images (image_index {s['range'][0]}-{s['range'][1]}), "
              f"{s['questions']} questions, " + ("COCO annotations" if s["annotations"] else "evaluation only"),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
