"""Generate every variant of a domain-shift factor with the split sizes of a profile.

    python scripts/generate_suite.py --factor all --profile mini --out data/generated --workers 2

Variants of one factor share the seed, so their layouts line up (easy/mid/hard show the same
scenes). Resumable like generate_dataset.py: rerun the same command after an interruption.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nsvqa.generation.dataset import PROFILES, generate_split, job_for
from nsvqa.generation.variants import FACTORS, load_variant


@dataclass(frozen=True)
class SuiteProfile:
    """Images per split (train, val, test) of a profile; the image size is the profile's."""

    train: int
    val: int
    test: int


SUITE_PROFILES = {"tiny": SuiteProfile(6, 3, 3), "mini": SuiteProfile(600, 150, 150),
                  "full": SuiteProfile(20000, 5000, 5000)}  # full: the paper's split sizes


def variants_of(factor: str) -> list[str]:
    if factor == "all":
        return list(dict.fromkeys(v for vs in FACTORS.values() for v in vs))
    return list(FACTORS[factor])


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--factor", choices=[*FACTORS, "all"], default="all")
    p.add_argument("--profile", choices=sorted(SUITE_PROFILES), default="mini")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    sizes, img = SUITE_PROFILES[args.profile], PROFILES[args.profile]
    t0 = time.perf_counter()
    for name in variants_of(args.factor):
        for split in load_variant(name).available_splits:
            job = job_for(args.out, name, split, getattr(sizes, split), args.seed, img.width, img.height)
            res = generate_split(job, workers=args.workers, progress=not args.no_progress)
            print(f"{name}/{split}: rendered {res['rendered']}, already done {res['skipped']}", file=sys.stderr)
    print(f"suite {args.factor} ({args.profile}) in {time.perf_counter() - t0:.1f} s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
