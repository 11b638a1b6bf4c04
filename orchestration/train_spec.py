"""How a variant run trains its parsers and models: :class:`TrainSpec`, a value and nothing else
(no torch, no file is read), what :func:`orchestration.experiment.train_variant` takes and what the
study builds once per piece (:func:`orchestration.study.settings.pieces.piece_setup`)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from nsvqa.artifacts.likelihoods import PARSE_MIN_SCORE
from nsvqa.config import AUTO_DEVICE, resolve_device


@dataclass
class TrainSpec:
    """How to train the parsers and models of a variant run.

    Attributes:
        profile: the profile of the parsers and of every model (``tiny``, ``demo``, ``mini``, ``full``).
        scene_overrides, question_overrides: config fields over the parser profiles'.
        model_overrides: model name -> config fields over its profile's.
        parse_min_score: detection score above which the scene parser keeps a detection when
            parsing the test splits (None: the scene-parser config's, 0.5). The default 0.05 keeps
            uncertain detections: P-NSVQA weighs them by their scores, NS-VQA drops those < 0.5.
            On the visual factor (mini, a detector of 600 iterations) this raised P-NSVQA from
            28.2% to 31.2% in-domain and left NS-VQA at 27.9%.
        jobs: 2 or more trains the question parser in a second process (1 thread) beside the scene
            parser (the other threads), which halves the wall time on a 2-core machine.
        device: torch device of the parsers and the models; ``auto`` (the default): CUDA when present,
            else the CPU.
        pretrained: trained parsers to use instead of training them: ``pretrained:<name>`` (a
            set shipped in ``pretrained/``, sha256-checked; :mod:`nsvqa.pretrained`) or a folder
            holding ``scene_parser/`` and ``question_parser/``. Nothing is trained then: a
            trainable model runs only when the set holds it (``<model>/`` of a shipped set,
            ``baselines/<model>/`` of a run folder), and every model keeps the cuts shipped with it.
        image_shuffle: also write each model's predictions with every test question paired with
            another image of its split (:func:`write_shuffled_predictions`, derangement seed
            ``shuffle_seed``) and put its image dependence in the summary.
        scene_variant: a variant with the same scenes and images as the one trained
            (:meth:`~nsvqa.generation.variants.Variant.same_scenes`: ``mid`` for ``rd-`` and
            ``rd+``): the run uses the scene parser of that variant's run with the same seed,
            training it there, on that variant's data, if it is not yet trained. It is the parser
            the run would train on its own images; training it once saves the most expensive step.
        scene_runs: another runs root whose run of ``scene_variant`` (default: the variant trained),
            with the same seed, holds a trained scene parser: the run uses that parser and copies
            that run's parses of the same images, and never trains or writes there (a missing
            parser is an error).
    """

    profile: str = "mini"
    scene_overrides: dict = field(default_factory=dict)
    question_overrides: dict = field(default_factory=dict)
    model_overrides: dict = field(default_factory=dict)
    jobs: int = 1
    device: str = AUTO_DEVICE
    progress: bool = True
    parse_min_score: float | None = PARSE_MIN_SCORE
    pretrained: str | None = None
    scene_variant: str | None = None
    scene_runs: str | os.PathLike | None = None
    image_shuffle: bool = False
    shuffle_seed: int = 0

    def __post_init__(self) -> None:
        self.device = resolve_device(self.device)  # "auto": CUDA when present, else the CPU


__all__ = ["TrainSpec"]
