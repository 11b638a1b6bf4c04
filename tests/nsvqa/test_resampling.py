"""nsvqa.evaluation.resampling: images are the unit drawn, training runs the level above them."""
from __future__ import annotations

import numpy as np
import pytest

from nsvqa.artifacts.predictions import Prediction
from nsvqa.evaluation import paired_comparison
from nsvqa.evaluation.resampling import bound_precision, percentile_interval, seed_weights, widen


def run(correct_images, n_images=60, per_image=10, image_index=True):
    """Questions grouped by image; every question of an image right or every one wrong."""
    return [Prediction(question_index=i * per_image + q, question_type="exist", answer="yes",
                       prediction="yes" if i in correct_images else "no",
                       image_index=i if image_index else None)
            for i in range(n_images) for q in range(per_image)]


def test_questions_of_one_image_are_drawn_together():
    a = run(set(range(0, 60, 2)))          # half the images right
    b = run(set(range(0, 60, 3)))          # a third
    by_image = paired_comparison([a], [b], n_boot=4000)
    by_question = paired_comparison([run(set(range(0, 60, 2)), image_index=False)],
                                    [run(set(range(0, 60, 3)), image_index=False)], n_boot=4000)
    assert by_image["diff"] == pytest.approx(by_question["diff"])
    wi = by_image["ci95"][1] - by_image["ci95"][0]
    wq = by_question["ci95"][1] - by_question["ci95"][0]
    assert wi > 2.5 * wq  # ten perfectly correlated questions an image: about sqrt(10) wider


def test_several_runs_add_the_spread_of_training_seeds_and_pair_runs_in_order():
    base = run(set(range(0, 60, 2)))
    spread = [run(set(range(0, 60, k))) for k in (2, 4, 1)]  # a cell whose seeds disagree
    one = paired_comparison([base], [run(set(range(0, 60, 3)))], n_boot=4000)
    three = paired_comparison(spread, [run(set(range(0, 60, 3)))] * 3, n_boot=4000)
    assert three["seeds"] == [3, 3] and one["seeds"] == [1, 1]
    assert three["ci95"][1] - three["ci95"][0] > 1.5 * (one["ci95"][1] - one["ci95"][0])
    w = seed_weights(3, 1000, np.random.default_rng(0))
    assert w.shape == (1000, 3) and np.allclose(w.sum(1), 1) and (w == 0).any()
    assert np.array_equal(seed_weights(1, 5, np.random.default_rng(0)), np.ones((5, 1)))
    # the same predictions and seed: the same bytes
    assert paired_comparison(spread, [base] * 3, n_boot=500) == paired_comparison(spread, [base] * 3, n_boot=500)


def test_bound_precision_shrinks_with_replicates_and_widen_reaches_the_bonferroni_level():
    rng = np.random.default_rng(1)
    small, large = bound_precision(rng.normal(size=1000)), bound_precision(rng.normal(size=100_000))
    assert large < small / 5 and large < 0.05
    assert bound_precision([0.0, np.nan]) is None and percentile_interval([np.nan]) is None
    lo, hi = widen([-1.96, 1.96], 20)  # about ±3.02 for 20 intervals at 95% overall
    assert hi == pytest.approx(3.023, abs=0.01) and lo == pytest.approx(-hi)
    assert widen([1.0, 3.0], 1) == pytest.approx([1.0, 3.0]) and widen(None, 5) is None
