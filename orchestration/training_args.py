"""The options that ``nsvqa-train-variant`` and ``nsvqa-run-factor`` share (:func:`add_training_args`):
the arguments of :func:`orchestration.experiment.train_variant` on the command line.

It loads no torch (nor the registry, whose models import it), so that both commands answer
``--help`` at once; :func:`orchestration.experiment_cli.spec_from_args` reads the options back, after
parsing, into model labels and a :class:`~orchestration.train_spec.TrainSpec` (an unknown model is
one error line there, listing the registered ones).
"""
from __future__ import annotations

import argparse

from nsvqa.artifacts.likelihoods import PARSE_MIN_SCORE
from nsvqa.models import GT_PROGRAMS_SUFFIX, PROFILE_NAMES


def add_training_args(p: argparse.ArgumentParser) -> None:
    """Add the arguments of :func:`~orchestration.experiment.train_variant` that ``train_variant.py`` and
    ``run_factor.py`` share (:func:`orchestration.experiment_cli.spec_from_args` reads them back)."""
    p.add_argument("--models", default=None,
                   help="comma-separated labels of registered models (orchestration.models: the pipeline models "
                        f"and the baselines), each optionally with {GT_PROGRAMS_SUFFIX} (ground-truth programs, for "
                        "the models that support them); an unknown one is an error listing the registered ones "
                        "(default: orchestration.experiment.DEFAULT_MODELS: NS-VQA and both P-NSVQA)")
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


__all__ = ["add_training_args"]
