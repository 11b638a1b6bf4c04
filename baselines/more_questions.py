"""More training questions about the same training images, for the models that learn from answers
alone: FiLM's CLEVR recipe uses ~70 questions per image, and one image's ten are far fewer.

:class:`MoreQuestions` is the mixin a :class:`baselines.classifier.NeuralBaseline` takes to add them
(its config has ``extra_questions_per_image``); the questions are
:func:`nsvqa.training.more_questions.extra_questions` of the training scenes.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from executors.ontology import Ontology
from nsvqa.artifacts.questions import Question
from nsvqa.training.more_questions import EXTRA_QUESTIONS, extra_questions


class MoreQuestions:
    """Mixin of a :class:`~baselines.classifier.NeuralBaseline` whose config has
    ``extra_questions_per_image`` (0: the train file's questions only): the training questions are
    the train file's followed by :func:`~nsvqa.training.more_questions.extra_questions` of the
    training scenes (``RUN/extra_questions.json``)."""

    def training_questions(self, cfg: Any, folder: Path, records: Sequence[Question], run_path: Path,
                           onto: Ontology) -> list[Question]:
        n = int(getattr(cfg, "extra_questions_per_image", 0))
        if n <= 0:
            return list(records)
        more = extra_questions(folder, "train", n, Path(run_path) / EXTRA_QUESTIONS, seed=cfg.seed, ontology=onto)
        return list(records) + [q for q in more if q.question is not None and q.answer is not None]


__all__ = ["MoreQuestions"]
