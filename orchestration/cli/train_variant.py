"""Train every model on one domain variant and write its predictions on every variant of the factor.

    python scripts/train_variant.py --data data/suite --variant mid --models nsvqa,pnsvqa,pnsvqa-exact \
        --profile mini --out runs/visual --factor visual --jobs 2

Trains what the models need once (NS-VQA, P-NSVQA and NSCL share the scene and question parsers),
trains every model that has a run of its own (the baselines), resumes where an earlier call
stopped, parses the test split of every test variant, and writes
``RUNS/<variant>[-seed<S>]/predictions/<model>__train-<variant>__test-<test>.jsonl``. Models: every
registered name (``orchestration.models``: the pipeline models and the baselines), and
``<model>+gtprog`` (ground-truth programs: no question parser) for those that support it.
Then ``scripts/evaluate_rd.py --runs RUNS --out REPORT`` writes the robustness report.
"""
from __future__ import annotations

import argparse
import logging
import sys

from executors.errors import FormatError
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import ConfigError, check_run_outside_data, parse_checked
from nsvqa.pretrained import PretrainedError
from nsvqa.training.checkpoint import CheckpointError
from nsvqa.fileio import FolderInUse, OutputFolder
from nsvqa.training import RunMismatch
from nsvqa.training.cli import interruptible
from nsvqa.generation.variants import FACTORS, VariantError
from orchestration.training_args import add_training_args

PROG = "nsvqa-train-variant"


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="dataset root holding one folder per variant")
    p.add_argument("--variant", required=True, help="the training variant")
    p.add_argument("--out", type=OutputFolder, required=True, help="runs root (one folder per variant and seed)")
    p.add_argument("--factor", choices=sorted(FACTORS), default=None,
                   help="test on this factor's variants (default: every factor the variant belongs to)")
    p.add_argument("--tests", default=None, help="comma-separated test variants instead of the factor's")
    add_training_args(p)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parse_checked(parser, argv, "out")
    check_run_outside_data(parser, args.out, args.data)  # a runs root inside the data root: refused
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    with needs_extra(PROG):
        import torch  # heavy, as are the two below (the registry's models import torch): after parsing

        from orchestration.experiment import ExperimentError, train_variant
        from orchestration.experiment_cli import spec_from_args
    if args.threads:
        torch.set_num_threads(args.threads)

    def work() -> int:
        try:
            models, spec = spec_from_args(args)
            tests = args.tests.split(",") if args.tests else None
            for seed in args.seed:
                train_variant(args.data, args.variant, args.out, models=models, spec=spec, seed=seed, factor=args.factor,
                              tests=tests, split=args.split, skip_missing=args.skip_missing)
        except (RunMismatch, FolderInUse, ExperimentError, VariantError, FormatError, CheckpointError, ConfigError,
                PretrainedError, FileNotFoundError) as e:  # the project's input errors; a bug keeps its traceback
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
        return 0

    return interruptible(PROG, work)


if __name__ == "__main__":
    sys.exit(main())
