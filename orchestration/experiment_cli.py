"""The command line of :mod:`orchestration.experiment` read back: the options that ``train_variant.py``
and ``run_factor.py`` share (:func:`orchestration.training_args.add_training_args`, which builds
``--help`` without torch) into model labels and a :class:`~orchestration.train_spec.TrainSpec`
(:func:`spec_from_args`: ``--scene-set`` / ``--question-set`` / ``--model-set`` parsed with the
config fields' types). It needs the registry (torch): the commands import it after parsing.
"""
from __future__ import annotations

import argparse

from nsvqa.config import parse_overrides
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.training.scene_config import SceneParserConfig
from orchestration import models as registry
from orchestration.experiment import DEFAULT_MODELS
from orchestration.train_spec import TrainSpec


def spec_from_args(args: argparse.Namespace) -> tuple[list[str], TrainSpec]:
    """(model labels, :class:`TrainSpec`) from the arguments of
    :func:`orchestration.training_args.add_training_args`: ``--models`` (not given:
    :data:`~orchestration.experiment.DEFAULT_MODELS`); ``--scene-set`` / ``--question-set`` /
    ``--model-set`` values parsed with the types of the scene-parser, question-parser and model
    config fields (errors name the option and the field).

    Raises:
        nsvqa.config.ConfigError: a malformed option (``--model-set`` takes MODEL.NAME=VALUE), a model
            that is unknown or has no config, a field or value the config does not take.
    """
    labels = (list(DEFAULT_MODELS) if args.models is None
              else [m.strip() for m in args.models.split(",") if m.strip()])
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


__all__ = ["spec_from_args"]
