"""Export splits of a variant folder in the official Super-CLEVR layout (obj_mask_box run-length masks).

    python scripts/export_superclevr.py --data data/generated/mid --split test --out /tmp/superclevr_mid

Writes OUT/superCLEVR_scenes.json (each scene's 'obj_mask_box' at the image's resolution, decoded
from the split's COCO annotations), OUT/superCLEVR_questions.json and OUT/images/. The scenes
file's info records each split's image_index range, which scripts/import_superclevr.py uses by
default. See docs/formats.md, "Importing and exporting the official release".
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nsvqa.generation.dataset import SPLITS
from nsvqa.generation.official import export_release
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import parse_checked


PROG = "nsvqa-export-superclevr"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="the variant folder ROOT/VARIANT")
    p.add_argument("--split", nargs="+", choices=SPLITS, default=None,
                   help="splits to export, in this order (default: every split the folder has)")
    p.add_argument("--out", type=Path, required=True, help="the release folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing export in OUT")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    try:
        with needs_extra(PROG):  # [full]: PIL, pycocotools and the renderer, imported where used
            res = export_release(args.data, args.out, splits=args.split, overwrite=args.overwrite)
    except ValueError as e:  # OfficialFormatError included
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    for name, s in res["splits"].items():
        print(f"{args.out}: {name}: {s['images']} images (image_index {s['range'][0]}-{s['range'][1]}), "
              f"{s['questions']} questions" + ("" if s["annotations"] else ", no masks"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
