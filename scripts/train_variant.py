"""Train every model on one domain variant and write its predictions on every variant of the factor.

    python scripts/train_variant.py --data data/suite --variant mid --models nsvqa,pnsvqa,pnsvqa-exact \
        --profile mini --out runs/visual --factor visual --jobs 2

Trains what the models need once (NS-VQA and P-NSVQA share the scene and question parsers), resumes
where an earlier call stopped, parses the test split of every test variant, and writes
``RUNS/<variant>[-seed<S>]/predictions/<model>__train-<variant>__test-<test>.jsonl``. Models:
nsvqa, pnsvqa, pnsvqa-exact, and each with +gtprog (ground-truth programs: no question parser).
Then ``scripts/evaluate_rd.py --runs RUNS --out REPORT`` writes the robustness report.
"""
from __future__ import annotations

import argparse
import logging
import sys

from executors.errors import FormatError
from nsvqa.checkpoint import CheckpointError
from nsvqa.experiment import DEFAULT_MODELS, MODELS, ExperimentError, TrainSpec, train_variant
from nsvqa.generation.variants import FACTORS, VariantError

PROG = "train_variant.py"


def add_training_args(p: argparse.ArgumentParser) -> None:
    """Arguments shared with run_factor.py."""
    p.add_argument("--models", default=",".join(DEFAULT_MODELS),
                   help=f"comma-separated; valid: {', '.join(MODELS)}")
    p.add_argument("--profile", default="mini", help="parser profile: tiny, demo, mini or full")
    p.add_argument("--seed", type=int, nargs="+", default=[0], help="one run per seed")
    p.add_argument("--split", default="test", help="split of the test variants")
    p.add_argument("--jobs", type=int, default=1,
                   help="2+: train the question parser in a subprocess beside the scene parser")
    p.add_argument("--device", default="cpu")
    p.add_argument("--scene-set", action="append", metavar="NAME=VALUE",
                   help="scene-parser config override (e.g. det_iterations=400); repeatable")
    p.add_argument("--question-set", action="append", metavar="NAME=VALUE",
                   help="question-parser config override (e.g. steps=800); repeatable")
    p.add_argument("--parse-min-score", type=float, default=0.05,
                   help="keep detections scoring at least this when parsing test images; P-NSVQA uses the "
                        "scores as existence probabilities, NS-VQA keeps those >= 0.5 (default 0.05)")
    p.add_argument("--skip-missing", action="store_true", help="skip test variants without data instead of failing")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads of this process")
    p.add_argument("--no-progress", action="store_true")


def spec_from_args(args: argparse.Namespace) -> tuple[list[str], TrainSpec]:
    """(models, TrainSpec); ``--scene-set`` / ``--question-set`` values are parsed with the types of
    the scene- and question-parser config fields (errors name the option and the field)."""
    from nsvqa.config import parse_assignments
    from nsvqa.question_config import QuestionParserConfig
    from nsvqa.scene_config import SceneParserConfig

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    spec = TrainSpec(profile=args.profile,
                     scene_overrides=parse_assignments(args.scene_set, SceneParserConfig, "--scene-set"),
                     question_overrides=parse_assignments(args.question_set, QuestionParserConfig, "--question-set"),
                     jobs=args.jobs, device=args.device, progress=not args.no_progress,
                     parse_min_score=args.parse_min_score)
    return models, spec


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="dataset root holding one folder per variant")
    p.add_argument("--variant", required=True, help="the training variant")
    p.add_argument("--out", required=True, help="runs root (one folder per variant and seed)")
    p.add_argument("--factor", choices=sorted(FACTORS), default=None,
                   help="test on this factor's variants (default: every factor the variant belongs to)")
    p.add_argument("--tests", default=None, help="comma-separated test variants instead of the factor's")
    add_training_args(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    try:
        models, spec = spec_from_args(args)
        tests = args.tests.split(",") if args.tests else None
        for seed in args.seed:
            train_variant(args.data, args.variant, args.out, models=models, spec=spec, seed=seed, factor=args.factor,
                          tests=tests, split=args.split, skip_missing=args.skip_missing)
    except (ExperimentError, VariantError, FormatError, CheckpointError, ValueError, KeyError, TypeError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
