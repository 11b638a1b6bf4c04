"""Relative Degrade report from predictions files: accuracy matrices, RD, calibration, head/tail, ID/OOD.

    python scripts/evaluate_rd.py --runs runs/ --out reports/rd

Reads every ``predictions/<model>__train-<variant>__test-<variant>.jsonl`` under the run folders
and writes ``report.json``, ``report.md``, ``report.tex`` and PNG heatmaps / reliability diagrams
to ``--out``. Several files for one (model, train, test) are several runs (seeds): their mean and
standard deviation are reported.

Every file is checked before it is scored: not empty, one prediction per question of its test split
(under --data, else under the data root the run's config.json records, where it still exists) with
that split's answers and hashes, and the same questions, answers and hashes as every other file on
the same test variant; anything else is one line naming the file and the line, exit status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nsvqa.evaluation import METRICS, N_BOOT
from executors.errors import FormatError
from nsvqa.evaluation.report import failures_per_model, invalid_program_warning, report_from_runs
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import parse_checked
from nsvqa.fileio import OutputFolder


PROG = "nsvqa-evaluate-rd"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, nargs="+", required=True,
                   help="run directories (each with predictions/), folders of them, or predictions/ folders")
    p.add_argument("--out", type=OutputFolder, required=True, help="report directory")
    p.add_argument("--metric", choices=METRICS, default="accuracy",
                   help="matrix entries and RD: accuracy (a hit guess counts) or accuracy_no_guess")
    p.add_argument("--bins", type=int, default=10, help="confidence bins of ECE and reliability diagrams")
    p.add_argument("--allow-partial-rd", action="store_true",
                   help="average RD over the cells that exist instead of leaving it out when one is missing")
    p.add_argument("--n-boot", type=int, default=N_BOOT,
                   help="bootstrap replicates of each RD's 95%% interval over the test images (and training seeds "
                        "where a cell has several runs; 0: none)")
    p.add_argument("--data", type=Path, default=None,
                   help="data root of the test variants, to check each file against its test split (default: the "
                        "one each run's config.json records, where it still exists)")
    p.add_argument("--split", default=None, help="the test split of --data (default: the run's, else test)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    if args.bins < 1:
        print(f"error: --bins must be >= 1, got {args.bins}", file=sys.stderr)
        return 2
    if args.n_boot < 0:
        print(f"error: --n-boot must be >= 0, got {args.n_boot}", file=sys.stderr)
        return 2
    try:
        with needs_extra(PROG, "eval"):  # matplotlib for the PNGs, scipy for some tests: imported where drawn or run
            report, written = report_from_runs(args.runs, args.out, metric=args.metric, bins=args.bins,
                                               allow_partial=args.allow_partial_rd, plots=not args.no_plots,
                                               n_boot=args.n_boot, data=args.data, split=args.split)
    except (FileNotFoundError, FormatError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    warning = invalid_program_warning(failures_per_model((c["model"], c["overall"]) for c in report["cells"]))
    if warning:
        print(warning, file=sys.stderr)
    n_files = sum(len(c["files"]) for c in report["cells"])
    print(f"{n_files} predictions files, {len(report['cells'])} cells -> {len(written)} files in {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
