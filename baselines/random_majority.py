"""Random and Majority: answer priors per question type, counted on the training split.

* ``majority`` answers every question with the most frequent training answer of its question type
  (ties: the alphabetically first); the probability is that answer's share of the type's training
  questions (its empirical frequency).
* ``random`` answers uniformly at random among the distinct training answers of the question's type;
  the draw is seeded by ``(config seed, question_index)``, so a run's predictions do not depend on
  the order or the subset of questions asked; the probability is ``1 / number of candidates``.

A question type absent from training falls back to the counts over all training questions. The
question types are those of :func:`nsvqa.artifacts.predictions.question_type` (the program's last function),
so training questions need programs. "Training" writes the counts into ``RUN/baseline.pt`` (kind
``baseline_<name>``, no weights), with ``config.json`` and ``train.log``; there is nothing to log to
tensorboard.
"""
from __future__ import annotations

from abc import abstractmethod
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np

from executors.ontology import load_ontology
from nsvqa.artifacts.predictions import load_question_meta
from nsvqa.models import ModelConfig, ModelSpec, PredictInputs
from nsvqa.training import RunDir
from nsvqa.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

from .base import Baseline
from .common import checkpoint_kind, checkpoint_path, config_from_dict
from .config import RUN_MUST_MATCH, check_run

CHECKPOINT = "baseline.pt"


@dataclass(frozen=True)
class PriorConfig(ModelConfig):
    """The fields of ``random``'s and ``majority``'s configs: the training data, the seed of
    ``random``'s draws, the run fields (:mod:`baselines.config`: optionally only the first
    ``max_train_questions`` training questions); ``device`` is unused. Each model's config states
    its name (:class:`MajorityConfig`, :class:`RandomConfig`)."""

    ontology: str = "superclevr"
    max_train_questions: int | None = None

    MUST_MATCH: ClassVar[tuple[str, ...]] = RUN_MUST_MATCH
    #: the profiles differ only in the data they are trained on
    PROFILES: ClassVar[dict[str, dict[str, Any]]] = {p: {} for p in ("tiny", "demo", "mini", "full")}

    def check(self) -> None:
        super().check()
        check_run(self)


@dataclass(frozen=True)
class MajorityConfig(PriorConfig):
    """``majority``'s config: :class:`PriorConfig`'s fields."""

    model: str = "majority"


@dataclass(frozen=True)
class RandomConfig(PriorConfig):
    """``random``'s config: :class:`PriorConfig`'s fields."""

    model: str = "random"


class PriorBaseline(Baseline):
    """Answer counts per question type; subclasses choose an answer from a type's counts and set
    ``config_class`` (a :class:`PriorConfig`)."""

    @abstractmethod
    def choose(self, counts: Mapping[str, int], rng: np.random.Generator) -> tuple[str, float]:
        """(answer, probability) from one question type's training counts (non-empty)."""

    def train(self, cfg: PriorConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
        if cfg.model != self.name:
            raise ValueError(f"config field 'model' is {cfg.model!r}, expected {self.name!r}")
        run = RunDir(out, cfg, resume=resume, must_match=("data", "model", "seed", "ontology", "max_train_questions"))
        try:
            path = run.path / CHECKPOINT
            if resume and path.exists():
                self._load(path)  # a usable checkpoint of this model: nothing to redo
                run.log(f"{path} exists; nothing to do")
                return run.path
            folder = Path(cfg.data)

            metas = load_question_meta(folder.parent, folder.name, "train", ontology=load_ontology(cfg.ontology))
            if cfg.max_train_questions is not None:
                metas = metas[:cfg.max_train_questions]
            if not metas:
                raise ValueError(f"{folder / 'questions' / 'train_questions.json'}: no training questions")
            by_type: dict[str, Counter] = {}
            for m in metas:
                by_type.setdefault(m.question_type, Counter())[m.answer] += 1
            counts = {t: dict(sorted(c.items())) for t, c in sorted(by_type.items())}
            save_checkpoint(path, kind=checkpoint_kind(self.name), config=asdict(cfg), state_dict={},
                            vocabularies={"answers_by_type": counts}, extra={"train_questions": len(metas)})
            run.log(f"{len(metas)} training questions from {folder}; answers per type: "
                    + ", ".join(f"{t} {len(c)}" for t, c in counts.items()))
        finally:
            run.close()
        return run.path

    def _load(self, path: Path) -> tuple[PriorConfig, dict[str, dict[str, int]]]:
        ck = load_checkpoint(path, kind=checkpoint_kind(self.name))
        counts = ck["vocabularies"].get("answers_by_type")
        if not isinstance(counts, dict) or not counts or not all(isinstance(c, dict) and c for c in counts.values()):
            raise CheckpointError(f"{path}, field 'vocabularies.answers_by_type': expected non-empty answer counts "
                                  f"per question type")
        return config_from_dict(self.config_class, ck["config"], str(path)), counts

    def predict(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "test", *,
                spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
                progress: bool = False) -> list:
        cfg, counts = self._load(checkpoint_path(run_dir))
        overall: Counter = Counter()
        for c in counts.values():
            overall.update(c)
        out = []
        for m in load_question_meta(root, variant, split, ontology=load_ontology(cfg.ontology)):
            rng = np.random.default_rng([cfg.seed, m.question_index])
            answer, p = self.choose(counts.get(m.question_type) or overall, rng)
            out.append(m.prediction(answer, p))
        return out


class MajorityBaseline(PriorBaseline):
    """The most frequent training answer of the question's type."""

    family = "question-only"
    config_class = MajorityConfig

    def choose(self, counts: Mapping[str, int], rng: np.random.Generator) -> tuple[str, float]:
        answer, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return answer, n / sum(counts.values())


class RandomBaseline(PriorBaseline):
    """A uniform draw among the distinct training answers of the question's type."""

    family = "question-only"
    config_class = RandomConfig

    def choose(self, counts: Mapping[str, int], rng: np.random.Generator) -> tuple[str, float]:
        options = sorted(counts)
        return options[int(rng.integers(len(options)))], 1.0 / len(options)


__all__ = ["PriorConfig", "MajorityConfig", "RandomConfig", "PriorBaseline", "MajorityBaseline", "RandomBaseline"]
