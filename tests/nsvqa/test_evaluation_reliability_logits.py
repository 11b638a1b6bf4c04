"""Temperature scaling and the top-label ECE of a classifier's logits (nsvqa.evaluation.reliability)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from nsvqa.evaluation.reliability import fit_temperature, top_label_ece


def _sampled(n: int = 4000, k: int = 5, seed: int = 0):
    """Logits and labels drawn from softmax(logits): calibrated at T = 1 by construction."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2.0, size=(n, k))
    p = softmax(logits, axis=1)
    labels = np.array([rng.choice(k, p=row) for row in p])
    return logits, labels


def test_an_overconfident_classifier_gets_back_its_temperature():
    logits, labels = _sampled()
    assert fit_temperature(logits, labels) == pytest.approx(1.0, abs=0.1)
    assert fit_temperature(3.0 * logits, labels) == pytest.approx(3.0, rel=0.1)  # sharpened 3x
    assert fit_temperature(np.zeros((0, 5)), np.zeros(0, dtype=int)) == 1.0


def test_scaling_by_the_fitted_temperature_lowers_the_ece():
    logits, labels = _sampled()
    sharp = 3.0 * logits
    before = top_label_ece(softmax(sharp, axis=1), labels)
    after = top_label_ece(softmax(sharp / fit_temperature(sharp, labels), axis=1), labels)
    assert before > 0.1 and after < 0.03


def test_ece_is_zero_for_certain_right_answers_and_the_miss_rate_for_certain_wrong_ones():
    probs = np.eye(3)[[0, 1, 2, 0]]
    assert top_label_ece(probs, np.array([0, 1, 2, 0])) == pytest.approx(0.0)
    assert top_label_ece(probs, np.array([0, 1, 2, 1])) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="probs must be"):
        top_label_ece(probs, np.array([0, 1]))
