"""LSTM: a question-only baseline (the question's LSTM encoding -> MLP over the answers).

It sees no image, so it measures how much of a dataset the question alone answers (the answer
priors of each question form). Network: word embeddings -> LSTM (last layer's final hidden state)
-> Linear-ReLU-Dropout-Linear -> logits over the answer vocabulary. Trained and run by
:mod:`baselines.common`; the prediction's probability is the softmax probability of the answer.
"""
from __future__ import annotations

import torch
from torch import nn

from . import register
from .common import NeuralBaseline, QuestionEncoder, QuestionModelConfig, mlp


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


_SCHEDULE = dict(weight_decay=0.0, grad_clip=5.0)
PROFILES = {
    "tiny": dict(steps=40, batch=16, lr=3e-3, warmup=5, eval_every=20, val_questions=32,
                 word_dim=32, hidden=64, layers=1, mlp_hidden=64, dropout=0.0, **_SCHEDULE),
    "demo": dict(steps=1000, batch=64, lr=2e-3, warmup=100, eval_every=500, val_questions=500,
                 word_dim=64, hidden=128, layers=1, mlp_hidden=256, dropout=0.1, **_SCHEDULE),
    # mid, 600 images (11,959 questions), 1 CPU thread: 32 s, test accuracy 33.5% (majority: 25.6%)
    "mini": dict(steps=1500, batch=64, lr=2e-3, warmup=100, eval_every=500, val_questions=1000,
                 word_dim=64, hidden=128, layers=1, mlp_hidden=256, dropout=0.1, **_SCHEDULE),
    # a GPU run at the paper's data scale (not yet measured)
    "full": dict(steps=40000, batch=256, lr=1e-3, warmup=1000, eval_every=2000, val_questions=5000,
                 word_dim=300, hidden=512, layers=2, mlp_hidden=1024, dropout=0.2, **_SCHEDULE),
}


@register("lstm")
class LSTMBaseline(NeuralBaseline):
    """Question-only LSTM + MLP (:class:`LSTMNet`)."""

    family = "question-only"

    config_class = QuestionModelConfig
    profiles = PROFILES
    uses_images = False

    def build_model(self, cfg: QuestionModelConfig, num_words: int, num_answers: int) -> LSTMNet:
        return LSTMNet(num_words, num_answers, word_dim=cfg.word_dim, hidden=cfg.hidden, layers=cfg.layers,
                       mlp_hidden=cfg.mlp_hidden, dropout=cfg.dropout)


__all__ = ["LSTMNet", "LSTMBaseline", "PROFILES"]
