"""LSTM: a question-only baseline (the question's LSTM encoding -> MLP over the answers).

It sees no image, so it measures how much of a dataset the question alone answers (the answer
priors of each question form). Network: word embeddings -> LSTM (last layer's final hidden state)
-> Linear-ReLU-Dropout-Linear -> logits over the answer vocabulary. Trained and run by
:mod:`baselines.common`; the prediction's probability is the softmax probability of the answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from nsvqa.models import ModelConfig

from .common import NeuralBaseline, QuestionEncoder, mlp
from .neural_config import QUESTION_MUST_MATCH, QUESTION_TINY, check_question


class LSTMNet(nn.Module):
    """Question LSTM + MLP classifier.

    Args:
        num_words, num_answers: vocabulary sizes; word_dim, hidden, layers: the LSTM;
        mlp_hidden, dropout: the classifier.

    ``forward(words (B, L) int64, lengths (B,) int64, images=None) -> logits (B, num_answers)``;
    ``images`` is accepted and ignored (the common interface of the baselines).
    """

    def __init__(self, num_words: int, num_answers: int, *, word_dim: int, hidden: int, layers: int,
                 mlp_hidden: int, dropout: float):
        super().__init__()
        self.question = QuestionEncoder(num_words, word_dim, hidden, layers, dropout)
        self.classifier = mlp(hidden, mlp_hidden, num_answers, dropout)

    def forward(self, words: torch.Tensor, lengths: torch.Tensor, images: torch.Tensor | None = None) -> torch.Tensor:
        return self.classifier(self.question(words, lengths))


@dataclass(frozen=True)
class LSTMConfig(ModelConfig):
    """lstm's config: the run fields and the schedule (:mod:`baselines.config`), then the question
    fields (:mod:`baselines.neural_config`: word embeddings of ``word_dim``, an LSTM of ``layers`` x
    ``hidden``, a classifier of ``mlp_hidden`` with ``dropout``). The defaults are the ``mini``
    profile, :attr:`PROFILES` the fields the other profiles change."""

    model: str = "lstm"
    ontology: str = "superclevr"
    max_train_questions: int | None = None
    steps: int = 1500
    lr: float = 2e-3
    weight_decay: float = 0.0
    warmup: int = 100
    eval_every: int = 500
    val_questions: int = 1000
    grad_clip: float = 5.0
    batch: int = 64
    min_word_count: int = 1
    word_dim: int = 64
    hidden: int = 128
    layers: int = 1
    mlp_hidden: int = 256
    dropout: float = 0.1

    MUST_MATCH: ClassVar[tuple[str, ...]] = QUESTION_MUST_MATCH
    PROFILES: ClassVar = {
        "tiny": QUESTION_TINY,
        "demo": dict(steps=1000, val_questions=500),
        # mid, 600 images (11,959 questions), 1 CPU thread: 32 s, test accuracy 33.5% (majority: 25.6%)
        "mini": {},
        # a GPU run at the paper's data scale (not yet measured)
        "full": dict(steps=40000, batch=256, lr=1e-3, warmup=1000, eval_every=2000, val_questions=5000, word_dim=300,
                     hidden=512, layers=2, mlp_hidden=1024, dropout=0.2),
    }

    def check(self) -> None:
        super().check()
        check_question(self)


class LSTMBaseline(NeuralBaseline):
    """Question-only LSTM + MLP (:class:`LSTMNet`)."""

    family = "question-only"

    config_class = LSTMConfig
    network = LSTMNet
    uses_images = False


__all__ = ["LSTMConfig", "LSTMNet", "LSTMBaseline"]
