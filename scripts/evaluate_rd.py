"""Relative Degrade report from predictions files: accuracy matrices, RD, calibration, head/tail, ID/OOD.

    python scripts/evaluate_rd.py --runs runs/ --out reports/rd

Reads every ``predictions/<model>__train-<variant>__test-<variant>.jsonl`` under the run folders
and writes ``report.json``, ``report.md``, ``report.tex`` and PNG heatmaps / reliability diagrams
to ``--out``. Several files for one (model, train, test) are several runs (seeds): their mean and
standard deviation are reported.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nsvqa.evaluation import METRICS, ConceptSplit, evaluate
from nsvqa.predictions import PredictionFormatError, find_prediction_files, read_predictions
from nsvqa.report import write_report


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, nargs="+", required=True,
                   help="run directories (each with predictions/), folders of them, or predictions/ folders")
    p.add_argument("--out", type=Path, required=True, help="report directory")
    p.add_argument("--metric", choices=METRICS, default="accuracy",
                   help="matrix entries and RD: accuracy (a hit guess counts) or accuracy_no_guess")
    p.add_argument("--bins", type=int, default=10, help="confidence bins of ECE and reliability diagrams")
    p.add_argument("--allow-partial-rd", action="store_true",
                   help="average RD over the cells that exist instead of leaving it out when one is missing")
    p.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if args.bins < 1:
        print(f"error: --bins must be >= 1, got {args.bins}", file=sys.stderr)
        return 2
    try:
        files = find_prediction_files(args.runs)
        cells = {key: [read_predictions(f) for f in paths] for key, paths in files.items()}
    except (FileNotFoundError, PredictionFormatError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not files:
        print(f"error: no predictions/<model>__train-<v>__test-<v>.jsonl under {[str(r) for r in args.runs]}",
              file=sys.stderr)
        return 2
    report = evaluate(cells, metric=args.metric, n_bins=args.bins, allow_partial=args.allow_partial_rd,
                      concept_split=ConceptSplit.from_catalogue(),
                      files={k: [str(f) for f in v] for k, v in files.items()})
    written = write_report(report, args.out, plots=not args.no_plots)
    n_files = sum(len(v) for v in files.values())
    print(f"{n_files} predictions files, {len(files)} cells -> {len(written)} files in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
