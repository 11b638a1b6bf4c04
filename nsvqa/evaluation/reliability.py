"""Calibration of the predictions that carry a probability: equal-width reliability bins over
[0, 1], the expected calibration error over them (Naeini et al., AAAI 2015; Guo et al., ICML 2017)
and :class:`Calibration`, both together for one set of predictions; for a classifier's logits, the
top-label ECE (:func:`top_label_ece`) and the temperature that minimises the negative log-likelihood
(:func:`fit_temperature`; temperature scaling, Guo et al., ICML 2017).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from nsvqa.artifacts.predictions import Prediction


# ---------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class ReliabilityBin:
    """One confidence bin ``[lower, upper)`` (the last one closed).

    Attributes:
        n: predictions in the bin; ``confidence`` and ``accuracy`` are their means (None if empty).
    """

    lower: float
    upper: float
    n: int
    confidence: float | None
    accuracy: float | None

    def to_json(self) -> dict:
        return {"lower": self.lower, "upper": self.upper, "n": self.n, "confidence": self.confidence,
                "accuracy": self.accuracy}


def reliability_bins(probabilities: Sequence[float], correct: Sequence[bool], n_bins: int = 10) -> list[ReliabilityBin]:
    """Equal-width confidence bins over [0, 1].

    Args:
        probabilities: (N,) the probability of each prediction, in [0, 1].
        correct: (N,) whether each prediction is right.
        n_bins: number of bins M >= 1.

    Raises:
        ValueError: lengths differ, ``n_bins < 1`` or a probability outside [0, 1].
    """
    if len(probabilities) != len(correct):
        raise ValueError(f"{len(probabilities)} probabilities but {len(correct)} correctness flags")
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    conf = [0.0] * n_bins
    hits = [0] * n_bins
    count = [0] * n_bins
    for p, c in zip(probabilities, correct):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probability {p!r} outside [0, 1]")
        b = min(int(p * n_bins), n_bins - 1)
        conf[b] += p
        hits[b] += bool(c)
        count[b] += 1
    return [ReliabilityBin(m / n_bins, (m + 1) / n_bins, count[m],
                           conf[m] / count[m] if count[m] else None,
                           hits[m] / count[m] if count[m] else None) for m in range(n_bins)]


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> float | None:
    """``sum_m |B_m| / n * |acc(B_m) - conf(B_m)|`` over the bins (None when they are empty)."""
    n = sum(b.n for b in bins)
    if n == 0:
        return None
    return sum(b.n / n * abs(b.accuracy - b.confidence) for b in bins if b.n)


@dataclass(frozen=True)
class Calibration:
    """Calibration of the predictions that carry a probability.

    Attributes:
        n: predictions with a probability; ``coverage`` = n / all predictions.
        ece: expected calibration error; ``bins``: the reliability diagram.
    """

    n: int
    coverage: float
    ece: float | None
    bins: tuple[ReliabilityBin, ...]

    def to_json(self) -> dict:
        return {"n": self.n, "coverage": self.coverage, "ece": self.ece, "n_bins": len(self.bins),
                "bins": [b.to_json() for b in self.bins]}


def calibration(predictions: Sequence[Prediction], n_bins: int = 10) -> Calibration | None:
    """ECE and reliability bins over the predictions with a probability; None when none has one
    (a model without probabilities)."""
    with_p = [p for p in predictions if p.probability is not None]
    if not with_p:
        return None
    bins = reliability_bins([p.probability for p in with_p], [p.correct for p in with_p], n_bins)
    return Calibration(len(with_p), len(with_p) / len(predictions), expected_calibration_error(bins), tuple(bins))


# ---------------------------------------------------------------------------- a classifier's logits
def top_label_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> float | None:
    """ECE of the most likely class: ``probs`` (N, K) rows of a distribution, ``labels`` (N,) the
    true class; ``n_bins`` equal-width bins (None when N is 0)."""
    probs, labels = np.asarray(probs), np.asarray(labels)
    if probs.ndim != 2 or labels.shape != (probs.shape[0],):
        raise ValueError(f"probs must be (N, K) and labels (N,), got {probs.shape} and {labels.shape}")
    top = probs.argmax(axis=1)
    conf = np.clip(probs[np.arange(len(top)), top], 0.0, 1.0)
    return expected_calibration_error(reliability_bins(conf.tolist(), (top == labels).tolist(), n_bins))


def fit_temperature(logits: np.ndarray, labels: np.ndarray, bounds: tuple[float, float] = (0.05, 20.0)) -> float:
    """The temperature T in ``bounds`` minimising the mean negative log-likelihood of ``labels``
    (N,) under ``softmax(logits / T)`` (``logits`` (N, K)): a bounded scalar search over log T
    (scipy). 1.0 when N is 0."""
    from scipy.optimize import minimize_scalar  # the [eval] extra: only here
    from scipy.special import log_softmax

    logits, labels = np.asarray(logits, dtype=np.float64), np.asarray(labels, dtype=np.int64)
    if len(labels) == 0:
        return 1.0
    if logits.ndim != 2 or labels.shape != (logits.shape[0],):
        raise ValueError(f"logits must be (N, K) and labels (N,), got {logits.shape} and {labels.shape}")
    rows = np.arange(len(labels))

    def nll(log_t: float) -> float:
        return -float(np.mean(log_softmax(logits / np.exp(log_t), axis=1)[rows, labels]))

    res = minimize_scalar(nll, bounds=(np.log(bounds[0]), np.log(bounds[1])), method="bounded",
                          options={"xatol": 1e-4})
    return float(np.exp(res.x))
