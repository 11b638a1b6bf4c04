"""The whole robustness experiment for a domain-shift factor: generate, train, predict, report.

    python scripts/run_factor.py --factor visual --models nsvqa,pnsvqa,pnsvqa-exact --profile mini \
        --data data/suite --runs runs --report reports --jobs 2

1. generates the factor's variants with the profile's split sizes (what exists is kept);
2. trains the models on every trainable variant of the factor (``--train-variants`` to choose) and
   writes their predictions on every variant of the factor (train_variant.py; distribution models
   are also tested on head, tail and oppo);
3. writes the report (evaluate_rd.py) to ``REPORT/<factor>`` and prints it.

Everything resumes: rerun the same command after an interruption. ``--factor all`` runs each factor.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

from executors.errors import FormatError
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import ConfigError, check_outputs, check_run_outside_data
from nsvqa.pretrained import PretrainedError
from nsvqa.training.checkpoint import CheckpointError
from nsvqa.fileio import FolderInUse, OutputFolder
from nsvqa.training import RunMismatch
from nsvqa.training.cli import interruptible
from nsvqa.generation.dataset import QUESTION_SETS, SplitSettingsDiffer, SplitWouldShrink
from nsvqa.generation.suite import SUITE_PROFILES, generate_suite
from nsvqa.generation.variants import FACTORS, VariantError, load_variant
from nsvqa.artifacts.predictions import PredictionFormatError
from nsvqa.evaluation.report import failures_per_model, invalid_program_warning, report_from_runs
from orchestration.training_args import add_training_args

PROG = "nsvqa-run-factor"


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--factor", choices=[*FACTORS, "all"], required=True, help="the domain-shift factor whose variants are generated, trained and tested ('all': every factor)")
    p.add_argument("--data", required=True, type=Path, help="dataset root (one folder per variant)")
    p.add_argument("--runs", required=True, type=OutputFolder, help="runs root; each factor gets RUNS/<factor>")
    p.add_argument("--report", required=True, type=OutputFolder, help="report root; each factor gets REPORT/<factor>")
    p.add_argument("--train-variants", default=None, help="comma-separated subset of the factor's variants to train on")
    p.add_argument("--data-profile", default=None,
                   help=f"split sizes when generating ({', '.join(SUITE_PROFILES)}; default: --profile)")
    p.add_argument("--data-seed", type=int, default=0, help="generation seed of the data (when generated)")
    p.add_argument("--questions", choices=sorted(QUESTION_SETS), default="object+part",
                   help="question set of the generated data: 'object' is the paper's (10 per image, the CLEVR 1.0 "
                        "templates); 'object+part' adds 10 part questions per image")
    p.add_argument("--workers", type=int, default=1, help="rendering processes")
    p.add_argument("--no-generate", action="store_true", help="fail on missing data instead of generating it")
    p.add_argument("--no-plots", action="store_true", help="write the report without its figures")
    p.add_argument("--allow-partial-rd", action="store_true",
                   help="RD over the training variants that were run (e.g. only the default one)")
    p.add_argument("--study-scene-parser", action="store_true",
                   help="the study's scene parser for object questions (objects only, no part crops, no stride-4 "
                        "level: orchestration.study.settings.config.STUDY.object_scene_parser()), on the profile's "
                        "detector schedule; --scene-set values go over it")
    add_training_args(p)
    return p


def trained_variants(args: argparse.Namespace, factor: str) -> list[str]:
    """The variants of ``factor`` to train on: ``--train-variants``, else every trainable one.

    Raises:
        ConfigError: a ``--train-variants`` name that is no trainable variant of the factor.
    """
    trainable = [v for v in FACTORS[factor] if not load_variant(v).test_only]
    chosen = args.train_variants.split(",") if args.train_variants else trainable
    bad = [v for v in chosen if v not in trainable]
    if bad:
        raise ConfigError(f"--train-variants {bad}: not trainable variants of {factor} ({', '.join(trainable)})")
    return chosen


def generate(args: argparse.Namespace, factor: str, chosen: list[str]) -> None:
    """Generate the splits of ``factor``'s variants that the run reads (what exists is kept): train
    and val of the variants trained on (none with ``--pretrained`` parsers), the test split of every one.

    Raises:
        ConfigError: a profile without split sizes (``--data-profile`` names them).
    """
    profile = args.data_profile or args.profile
    if profile not in SUITE_PROFILES:
        raise ConfigError(f"no split sizes for profile {profile!r}; pass --data-profile ({', '.join(SUITE_PROFILES)})")
    need = {v: (["train", "val", args.split] if v in chosen and not args.pretrained else [args.split])
            for v in FACTORS[factor]}
    generate_suite(args.data, factor, profile, seed=args.data_seed, workers=args.workers,
                   progress=not args.no_progress, splits=need, questions=args.questions)


def report(args: argparse.Namespace, factor: str, t0: float) -> None:
    """Write ``REPORT/<factor>`` from ``RUNS/<factor>`` and print it (its time counted from ``t0``)."""
    out = args.report / factor
    rd, written = report_from_runs([args.runs / factor], out, plots=not args.no_plots,
                                   allow_partial=args.allow_partial_rd)
    print((out / "report.md").read_text())
    warning = invalid_program_warning(failures_per_model((c["model"], c["overall"]) for c in rd["cells"]))
    if warning:
        print(warning, file=sys.stderr)
    print(f"{factor}: {len(written)} report files in {out} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parser.parse_args(argv)
    check_outputs(parser, args.runs, args.report, None if args.no_generate else args.data)
    check_run_outside_data(parser, args.runs, args.data, option="--runs")  # a runs root inside the data root
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    with needs_extra(PROG):
        import torch  # heavy, as are the three below (the registry's models and the study's stack): after parsing

        from orchestration.experiment import ExperimentError, train_variant
        from orchestration.experiment_cli import spec_from_args
        from orchestration.study.settings.config import STUDY
    if args.threads:
        torch.set_num_threads(args.threads)
    factors = list(FACTORS) if args.factor == "all" else [args.factor]

    def work() -> int:
        try:
            for factor in factors:
                t0 = time.perf_counter()
                chosen = trained_variants(args, factor)
                if not args.no_generate:
                    generate(args, factor, chosen)
                models, spec = spec_from_args(args)
                if args.study_scene_parser:
                    spec = replace(spec, scene_overrides={**STUDY.object_scene_parser(), **spec.scene_overrides})
                for v in chosen:
                    for seed in args.seed:
                        train_variant(args.data, v, args.runs / factor, models=models, spec=spec, seed=seed,
                                      factor=factor, split=args.split, skip_missing=args.skip_missing)
                report(args, factor, t0)
        except (RunMismatch, FolderInUse, SplitWouldShrink, SplitSettingsDiffer, ExperimentError, VariantError,
                FormatError, CheckpointError, PredictionFormatError, ConfigError, PretrainedError,
                FileNotFoundError) as e:  # the project's input errors; a bug keeps its traceback
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
        return 0

    return interruptible(PROG, work)


if __name__ == "__main__":
    sys.exit(main())
