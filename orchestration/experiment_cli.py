"""The command line of :mod:`orchestration.experiment`: the arguments of :func:`~orchestration.experiment.train_variant`
that ``scripts/train_variant.py`` and ``scripts/run_factor.py`` share (:func:`add_training_args`),
read back into model labels and a :class:`~orchestration.experiment.TrainSpec` (:func:`spec_from_args`:
``--scene-set`` / ``--question-set`` / ``--model-set`` parsed with the config fields' types).
"""
from __future__ import annotations

import argparse

from nsvqa.artifacts.likelihoods import PARSE_MIN_SCORE
from nsvqa.config import parse_overrides
from nsvqa.models import PROFILE_NAMES
from nsvqa.training.question_config import QuestionParserConfig
from orchestration import models as registry
from orchestration.experiment import DEFAULT_MODELS, TrainSpec


def add_training_args(p: argparse.ArgumentParser) -> None:
    """The arguments of :func:`~orchestration.experiment.train_variant` that ``train_variant.py`` and ``run_factor.py`` share
    (:func:`spec_from_args` reads them back)."""
    p.add_argument("--models", default=",".join(DEFAULT_MODELS),
                   help=f"comma-separated labels; registered: {', '.join(registry.names())} "
                        f"(+gtprog: ground-truth programs, for {', '.join(n for n in registry.names() if registry.get(n).supports_gt_programs)})")
    p.add_argument("--profile", choices=PROFILE_NAMES, default="mini",
                   help="parser and model profile; tiny is a smoke profile that does not learn, demo the smallest "
                        "that does")
    p.add_argument("--seed", type=int, nargs="+", default=[0], help="one run per seed")
    p.add_argument("--split", default="test", help="split of the test variants")
    p.add_argument("--jobs", type=int, default=1,
                   help="2+: train the question parser in a second process beside the scene parser")
    p.add_argument("--device", default="auto",
                   help="torch device of training and prediction: auto (CUDA when present, else the CPU), cpu, cuda")
    p.add_argument("--scene-set", action="append", metavar="NAME=VALUE",
                   help="scene-parser config override (e.g. det_iterations=400); repeatable")
    p.add_argument("--question-set", action="append", metavar="NAME=VALUE",
                   help="question-parser config override (e.g. steps=800); repeatable")
    p.add_argument("--parse-min-score", type=float, default=PARSE_MIN_SCORE,
                   help="keep detections scoring at least this when parsing test images; P-NSVQA uses the "
                        "scores as existence probabilities, NS-VQA keeps those >= 0.5 (default %(default)s)")
    p.add_argument("--model-set", action="append", metavar="MODEL.NAME=VALUE",
                   help="a model's config override (e.g. film.steps=500); repeatable")
    p.add_argument("--pretrained", default=None, metavar="pretrained:NAME|DIR",
                   help="use these trained parsers instead of training them: a shipped set "
                        "(pretrained:mid-mini) or a folder with scene_parser/ and question_parser/")
    p.add_argument("--scene-parser-of", default=None, metavar="VARIANT",
                   help="use (and train there, if absent) the scene parser of VARIANT's run with the same seed: "
                        "for variants with VARIANT's images (rd- and rd+ with mid)")
    p.add_argument("--image-shuffle", action="store_true",
                   help="also score the image-shuffle test: each test question asked of another image of its split "
                        "(predictions under RUN/shuffled/, image dependence in summary.json)")
    p.add_argument("--skip-missing", action="store_true", help="skip test variants without data instead of failing")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads of this process")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def spec_from_args(args: argparse.Namespace) -> tuple[list[str], TrainSpec]:
    """(model labels, :class:`TrainSpec`) from the arguments of :func:`add_training_args`;
    ``--scene-set`` / ``--question-set`` / ``--model-set`` values are parsed with the types of the
    scene-parser, question-parser and model config fields (errors name the option and the field).

    Raises:
        nsvqa.config.ConfigError: a malformed option (``--model-set`` takes MODEL.NAME=VALUE), a model
            that is unknown or has no config, a field or value the config does not take.
    """
    from nsvqa.training.scene_config import SceneParserConfig  # heavy: loads torch (the backbone's defaults)

    labels = [m.strip() for m in args.models.split(",") if m.strip()]
    configs = {n: registry.get(n).config_class for n in registry.names()}
    model_overrides = parse_overrides(args.model_set, configs, "--model-set", scope="MODEL")
    spec = TrainSpec(profile=args.profile,
                     scene_overrides=parse_overrides(args.scene_set, SceneParserConfig, "--scene-set"),
                     question_overrides=parse_overrides(args.question_set, QuestionParserConfig, "--question-set"),
                     model_overrides=model_overrides, jobs=args.jobs, device=args.device,
                     progress=not args.no_progress, parse_min_score=args.parse_min_score,
                     pretrained=args.pretrained, scene_variant=args.scene_parser_of,
                     image_shuffle=getattr(args, "image_shuffle", False))
    return labels, spec


__all__ = ["add_training_args", "spec_from_args"]
