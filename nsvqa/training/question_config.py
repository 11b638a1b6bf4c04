"""The question parser's run config and its training schedules.

:class:`QuestionParserConfig` is one frozen config (:class:`nsvqa.config.Config`) holding the run's
identity, its schedule (the table :data:`PROFILES` below) and its network (the table
:data:`parsers.question.seq2seq.PROFILES`, next to the network). Both tables are read when the
config is resolved; a checkpoint stores the resolved fields, so it rebuilds the network it was
trained with whatever the tables say later.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from nsvqa.config import Config, as_fields
from parsers.question.seq2seq import PROFILES as NET_PROFILES


@dataclass(frozen=True)
class QuestionTrainProfile:
    """Schedule of a profile (the network sizes live in :mod:`parsers.question.seq2seq`)."""

    steps: int             # supervised steps
    batch: int
    lr: float
    eval_every: int        # steps between validations (and checkpoints)
    val_questions: int     # val questions scored at each validation (the first ones of the file)
    reinforce_steps: int   # REINFORCE steps (only with reinforce=True)
    reinforce_batch: int
    reinforce_lr: float


PROFILES = {
    "tiny": QuestionTrainProfile(60, 16, 3e-3, 30, 32, 8, 16, 1e-4),
    "mini": QuestionTrainProfile(4800, 64, 2e-3, 800, 1000, 300, 64, 1e-5),  # 100% exact on mid val (5,981 questions)
    # 93% exact on demo-size mid val (400 questions) at step 800; 600 steps on a cosine that ends there: 46%
    "demo": QuestionTrainProfile(800, 64, 2e-3, 200, 500, 100, 64, 1e-5),
    # NS-VQA: Adam 7e-4, batch 64; REINFORCE at 1e-5
    "full": QuestionTrainProfile(20000, 64, 7e-4, 1000, 5000, 20000, 64, 1e-5),
}


@dataclass(frozen=True)
class QuestionParserConfig(Config):
    """Resolved config of one question-parser run (written to RUN_DIR/config.json and to the
    checkpoint).

    Network (:class:`parsers.question.seq2seq.Seq2Seq`): ``word_dim``, ``hidden``, ``layers``,
    ``dropout``, ``max_decode_len``. Schedule: ``steps`` supervised steps of ``batch`` questions at
    ``lr``, validation on ``val_questions`` val questions every ``eval_every`` steps, gradient norm
    clipped at ``grad_clip``; with ``reinforce``, ``reinforce_steps`` REINFORCE steps of
    ``reinforce_batch`` at ``reinforce_lr``. Words seen fewer than ``min_word_count`` times are
    ``<UNK>``; ``max_train_questions`` keeps the first training questions only.
    """

    data: str
    profile: str = "mini"
    seed: int = 0
    device: str = "cpu"
    ontology: str = "superclevr"
    word_dim: int = 0
    hidden: int = 0
    layers: int = 0
    dropout: float = 0.0
    max_decode_len: int = 0
    steps: int = 0
    batch: int = 0
    lr: float = 0.0
    eval_every: int = 0
    val_questions: int = 0
    reinforce: bool = False
    reinforce_steps: int = 0
    reinforce_batch: int = 0
    reinforce_lr: float = 0.0
    min_word_count: int = 1
    grad_clip: float = 5.0
    max_train_questions: int | None = None

    PROFILES: ClassVar = PROFILES  # the schedules above
    MUST_MATCH: ClassVar[tuple[str, ...]] = ("data", "profile", "seed", "ontology", "word_dim", "hidden", "layers",
                                             "batch", "min_word_count", "max_train_questions")
    HELP: ClassVar = {
        "ontology": "superclevr (default) or clevr",
        "reinforce": "after the supervised steps, fine-tune with REINFORCE (reward: correct answer on the "
                     "ground-truth train scene)",
        "max_train_questions": "train on the first N training questions only",
    }

    @classmethod
    def profile_defaults(cls, profile: str) -> dict[str, Any]:
        """The schedule of :data:`PROFILES` and the network of :data:`parsers.question.seq2seq.PROFILES`."""
        return super().profile_defaults(profile) | as_fields(NET_PROFILES[profile])

    def check(self) -> None:
        super().check()
        for k in ("steps", "reinforce_steps", "val_questions"):
            if getattr(self, k) < 0:
                raise ValueError(f"{k} must be >= 0, got {getattr(self, k)}")
        for k in ("batch", "eval_every", "reinforce_batch", "max_decode_len", "layers"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")


__all__ = ["PROFILES", "QuestionTrainProfile", "QuestionParserConfig"]
