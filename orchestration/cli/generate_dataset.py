"""Generate one split of a Super-CLEVR-style variant: images, scenes, COCO masks, manifest.

    python scripts/generate_dataset.py --out data/generated --variant mid --split train \
        --num-images 100 --seed 0 --workers 2

Resumable (rerun the same command after an interruption) and deterministic (the same arguments
give the same bytes for any --workers or --shard division). An existing split is never replaced by a
smaller one, or by one of other settings (--seed, --profile, --width, --height, --questions), without
--force; a split grown with the same settings renders only its new images.
"""
from __future__ import annotations

import argparse
import sys

from nsvqa.cli import command_parser, needs_extra
from nsvqa.fileio import FolderInUse, OutputFolder, OutputNotWritable, check_writable
from nsvqa.generation.dataset import (PROFILES, QUESTION_SETS, SPLITS, check_no_shrink, check_same_settings,
                                     generate_split, image_side, job_for)
from nsvqa.generation.variants import VariantError, list_variants


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard expects i/N, got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard i/N needs 0 <= i < N, got {text!r}")
    return i, n


PROG = "nsvqa-generate-dataset"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    p.add_argument("--out", type=OutputFolder, required=True, help="dataset root (one folder per variant inside)")
    p.add_argument("--variant", default="mid", help=f"catalogue name ({', '.join(list_variants())})")
    p.add_argument("--split", choices=SPLITS, default="train", help="which split of the variant to generate")
    p.add_argument("--num-images", type=int, required=True,
                   help="images in the split (10 or 20 questions each, see --questions); smaller than an "
                        "existing split's size is refused without --force")
    p.add_argument("--seed", type=int, default=0, help="generation seed (mixed with the split name)")
    p.add_argument("--workers", type=int, default=1, help="rendering processes (the bytes do not depend on it)")
    p.add_argument("--shard", type=_shard, default=(0, 1), help="i/N: render the indices k with k %% N == i (default 0/1: all of them)")
    p.add_argument("--profile", choices=sorted(PROFILES), default="mini",
                   help="image size: " + ", ".join(f"{k} {v.width}x{v.height}" for k, v in sorted(PROFILES.items())))
    p.add_argument("--width", type=image_side, help="overrides the profile's width (16 to 4096)")
    p.add_argument("--height", type=image_side, help="overrides the profile's height (16 to 4096)")
    p.add_argument("--questions", choices=sorted(QUESTION_SETS), default="object+part",
                   help="question set: 'object' is the paper's (10 per image, CLEVR 1.0 templates); "
                        "'object+part' adds 10 part questions per image")
    p.add_argument("--force", action="store_true",
                   help="replace an existing split even by a smaller one (its extra images are deleted) or by one of "
                        "other settings")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    prof = PROFILES[args.profile]
    try:
        job = job_for(args.out, args.variant, args.split, args.num_images, args.seed,
                      args.width or prof.width, args.height or prof.height, args.questions)
        check_writable(job.folder)
        check_no_shrink(job, args.force)
        check_same_settings(job, args.force)
    except (VariantError, OutputNotWritable, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    try:
        with needs_extra(PROG):  # [full]: PIL, pycocotools and the renderer, imported where used
            res = generate_split(job, workers=args.workers, shard=args.shard, progress=not args.no_progress,
                                 force=args.force)
    except FolderInUse as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(f"{job.folder}: {args.split}: rendered {res['rendered']}, already done {res['skipped']}"
          + (", split merged (scenes, COCO annotations, manifest)" if res["finalized"] else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
