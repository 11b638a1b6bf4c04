"""Generate every variant of a domain-shift factor with the split sizes of a profile.

    python scripts/generate_suite.py --factor all --profile mini --out data/generated --workers 2

Variants of one factor share the seed, so their layouts line up (easy/mid/hard show the same
scenes). Resumable like generate_dataset.py: rerun the same command after an interruption.
"""
from __future__ import annotations

import argparse
import sys
import time

from nsvqa.generation.dataset import QUESTION_SETS, SplitSettingsDiffer, SplitWouldShrink
from nsvqa.generation.suite import SUITE_PROFILES, generate_suite, variants_of  # noqa: F401  (variants_of: for callers)
from nsvqa.generation.variants import FACTORS
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import parse_checked
from nsvqa.fileio import FolderInUse, OutputFolder


PROG = "nsvqa-generate-suite"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    p.add_argument("--factor", choices=[*FACTORS, "all"], default="all", help="generate the variants of this factor ('all': of every factor)")
    p.add_argument("--profile", choices=sorted(SUITE_PROFILES), default="mini", help="split sizes and image size of the suite")
    p.add_argument("--out", type=OutputFolder, required=True, help="dataset root (one folder per variant inside)")
    p.add_argument("--seed", type=int, default=0, help="generation seed (mixed with each split's name)")
    p.add_argument("--workers", type=int, default=1, help="rendering processes (the bytes do not depend on it)")
    p.add_argument("--questions", choices=sorted(QUESTION_SETS), default="object+part",
                   help="question set: 'object' is the paper's (10 per image); 'object+part' adds 10 part questions")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    t0 = time.perf_counter()
    try:
        with needs_extra(PROG):  # [full]: PIL, pycocotools and the renderer, imported where used
            generate_suite(args.out, args.factor, args.profile, seed=args.seed, workers=args.workers,
                           progress=not args.no_progress, questions=args.questions)
    except (SplitWouldShrink, SplitSettingsDiffer, FolderInUse) as e:  # an existing split is never replaced unasked
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(f"suite {args.factor} ({args.profile}) in {time.perf_counter() - t0:.1f} s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
