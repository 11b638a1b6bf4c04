"""The question parser's run config: its defaults and profiles.

:class:`QuestionParserConfig` is one frozen config (:class:`nsvqa.config.Config`) holding the run's
identity, its schedule and its network; its defaults are the ``mini`` profile and
:attr:`QuestionParserConfig.PROFILES` the fields the other profiles change. A checkpoint stores the
resolved fields, so it rebuilds the network it was trained with
(:meth:`parsers.question.seq2seq.Seq2Seq.from_config`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from nsvqa.config import Config


@dataclass(frozen=True)
class QuestionParserConfig(Config):
    """Resolved config of one question-parser run (written to RUN_DIR/config.json and to the
    checkpoint).

    Schedule: ``steps`` supervised steps of ``batch`` questions at ``lr``, validation on
    ``val_questions`` val questions every ``eval_every`` steps, gradient norm clipped at
    ``grad_clip``; with ``reinforce``, ``reinforce_steps`` REINFORCE steps of ``reinforce_batch`` at
    ``reinforce_lr``. Words seen fewer than ``min_word_count`` times are ``<UNK>``;
    ``max_train_questions`` keeps the first training questions only. ``extra_questions_per_image``
    (0: none) more questions of each training scene follow the train file's
    (:func:`nsvqa.training.more_questions.extra_questions`, in ``RUN_DIR/extra_questions.json``;
    nothing rendered), and the vocabularies cover them too. Network
    (:class:`parsers.question.seq2seq.Seq2Seq`): ``word_dim`` (word and program-token embeddings),
    ``hidden`` (encoder LSTM size per direction; the decoder has ``2 * hidden``), ``layers`` (of the
    encoder and of the decoder), ``dropout`` (on embeddings, between LSTM layers and before the
    output layer), ``max_decode_len`` (most program tokens a decode produces, ``<END>`` included).

    The defaults are the ``mini`` profile: 100% exact on mid val (5,981 questions).
    """

    data: str
    profile: str = "mini"
    seed: int = 0
    device: str = "auto"       # CUDA when present, else the CPU (nsvqa.config.resolve_device)
    ontology: str = "superclevr"
    word_dim: int = 64
    hidden: int = 96
    layers: int = 2
    dropout: float = 0.1
    max_decode_len: int = 48
    steps: int = 4800          # supervised steps
    batch: int = 64
    lr: float = 2e-3
    eval_every: int = 800      # steps between validations (and checkpoints)
    val_questions: int = 1000  # val questions scored at each validation (the first ones of the file)
    reinforce: bool = False
    reinforce_steps: int = 300  # REINFORCE steps (only with reinforce=True)
    reinforce_batch: int = 64
    reinforce_lr: float = 1e-5
    min_word_count: int = 1
    grad_clip: float = 5.0
    max_train_questions: int | None = None
    extra_questions_per_image: int = 0

    PROFILES: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "tiny": dict(word_dim=32, hidden=32, dropout=0.0, steps=60, batch=16, lr=3e-3, eval_every=30, val_questions=32,
                     reinforce_steps=8, reinforce_batch=16, reinforce_lr=1e-4),
        # 93% exact on demo-size mid val (400 questions) at step 800; 600 steps on a cosine that ends there: 46%
        "demo": dict(steps=800, eval_every=200, val_questions=500, reinforce_steps=100),
        "mini": {},
        # NS-VQA: 300-d embeddings, 256 hidden units per direction, 2 layers; Adam 7e-4, batch 64;
        # REINFORCE at 1e-5
        "full": dict(word_dim=300, hidden=256, max_decode_len=64, steps=20000, lr=7e-4, eval_every=1000,
                     val_questions=5000, reinforce_steps=20000),
    }
    MUST_MATCH: ClassVar[tuple[str, ...]] = ("data", "profile", "seed", "ontology", "word_dim", "hidden", "layers",
                                             "batch", "min_word_count", "max_train_questions",
                                             "extra_questions_per_image")
    #: a config saved before the field existed trained on the train file's questions alone
    ABSENT: ClassVar[Mapping[str, Any]] = {"extra_questions_per_image": 0}
    HELP: ClassVar = {
        "device": "torch device: auto (CUDA when present, else the CPU), cpu, cuda",
        "ontology": "superclevr (default) or clevr",
        "reinforce": "after the supervised steps, fine-tune with REINFORCE (reward: correct answer on the "
                     "ground-truth train scene)",
        "max_train_questions": "train on the first N training questions only",
        "extra_questions_per_image": "also train on N more questions of each training scene (generated, "
                                     "nothing rendered; RUN_DIR/extra_questions.json)",
    }

    def check(self) -> None:
        super().check()
        for k in ("steps", "reinforce_steps", "val_questions", "extra_questions_per_image"):
            if getattr(self, k) < 0:
                raise ValueError(f"{k} must be >= 0, got {getattr(self, k)}")
        for k in ("batch", "eval_every", "reinforce_batch", "max_decode_len", "layers"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")


__all__ = ["QuestionParserConfig"]
