"""The study's bootstrap: images are the unit drawn, training seeds the level above them.

A replicate draws the test images with replacement (every question of a drawn image counts as many
times as the image is drawn): the questions of one image share its scene and its parse, so they are
not independent draws. Where a cell holds several training runs (seeds), a replicate also draws the
runs with replacement and averages the drawn runs' accuracies (a two-level bootstrap: seeds, then
images); a cell of one run has no seed level, and an interval over it covers the test images only.
One draw of images is shared by every cell scored on those images, so differences between models,
and between test variants that ask the same questions, are paired. docs/evaluation.md states the
rule and the replicate count; docs/decisions.md says why this resampler, not
``scipy.stats.bootstrap``, draws them.

Counts are integers and a replicate's accuracy one division, so the same predictions and seed give
the same bytes on every machine.
"""
from __future__ import annotations

import math
from typing import Callable, Hashable, Iterable, Sequence

import numpy as np

from nsvqa.artifacts.predictions import Prediction

#: Replicates of every interval that decides a finding: with 20,000 the Monte-Carlo error of each
#: 95% bound is within 0.1 point for the study's intervals (:func:`bound_precision` measures it and
#: the report prints the largest).
N_BOOT = 20_000


def image_of(test: str, p: Prediction) -> tuple:
    """The unit a replicate draws for prediction ``p`` of test variant ``test``: its image; when the
    record names no image, the question itself (by its hash, shared by the variants that ask it,
    else by variant and index)."""
    if p.image_index is not None:
        return ("image", p.image_index)
    return ("question", p.question_hash) if p.question_hash is not None else ("question", test, p.question_index)


class ImageDraw:
    """``n_boot`` draws with replacement of a fixed set of units (images), as a weight matrix
    ``weights`` (n_boot × n_units, int64: how often each unit is drawn in each replicate).

    Args:
        units: the units (any hashable; sorted for a stable order).
        n_boot: replicates.
        rng: the generator the draw uses (consumed once).
    """

    def __init__(self, units: Iterable[Hashable], n_boot: int, rng: np.random.Generator):
        self.units = sorted(set(units), key=repr)
        self.position = {u: i for i, u in enumerate(self.units)}
        n = len(self.units)
        self.n_boot = n_boot
        draw = rng.integers(0, n, size=(n_boot, n)) + n * np.arange(n_boot)[:, None] if n else np.zeros((n_boot, 0), int)
        self.weights = np.bincount(draw.ravel(), minlength=n_boot * n).reshape(n_boot, n)

    def rate(self, hits: Iterable[tuple[Hashable, bool]]) -> np.ndarray:
        """Per replicate, the share of hits among the weighted items ``(unit, hit)`` (NaN where a
        replicate draws none of them)."""
        have = np.zeros(len(self.units), np.int64)
        ok = np.zeros(len(self.units), np.int64)
        for u, hit in hits:
            i = self.position[u]
            have[i] += 1
            ok[i] += bool(hit)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.weights @ ok) / (self.weights @ have)


def seed_weights(k: int, n_boot: int, rng: np.random.Generator | None) -> np.ndarray:
    """Weights (n_boot × k, rows summing to 1) of ``k`` training runs: each replicate draws ``k``
    runs with replacement. One run (or ``rng`` None): every replicate takes it, weight 1."""
    if k == 1 or rng is None:
        return np.full((n_boot, k), 1.0 / k)
    draw = rng.integers(0, k, size=(n_boot, k)) + k * np.arange(n_boot)[:, None]
    return np.bincount(draw.ravel(), minlength=n_boot * k).reshape(n_boot, k) / k


def runs_replicates(runs: Sequence[np.ndarray], seeds: np.ndarray) -> np.ndarray:
    """One cell's replicates from its runs' image-level replicates and the seed weights
    (:func:`seed_weights`, n_boot × len(runs))."""
    return (np.stack(runs, axis=1) * seeds).sum(1)


def percentile_interval(values) -> list[float] | None:
    """The 95% percentile interval of bootstrap replicates, None when one is undefined (NaN)."""
    values = np.asarray(values, dtype=float)
    if not len(values) or np.isnan(values).any():
        return None
    return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]


def bound_precision(values) -> float | None:
    """How far each 95% percentile bound of ``values`` may lie from the limit it estimates (the
    bound an infinite number of replicates would give): the larger half-width of the
    distribution-free 95% confidence interval of the 2.5th and the 97.5th percentile (order
    statistics at ranks ``B·p ± 1.96·sqrt(B·p·(1 − p))``). Same units as ``values``; None when a
    replicate is undefined."""
    v = np.sort(np.asarray(values, dtype=float))
    b = len(v)
    if not b or np.isnan(v).any():
        return None
    worst = 0.0
    for p in (0.025, 0.975):
        h = 1.96 * math.sqrt(b * p * (1 - p))
        lo, hi = max(0, math.floor(b * p - h)), min(b - 1, math.ceil(b * p + h))
        worst = max(worst, (v[hi] - v[lo]) / 2)
    return float(worst)


def widen(ci: Sequence[float] | None, k: int) -> list[float] | None:
    """A 95% interval widened about its midpoint to the Bonferroni level over ``k`` intervals:
    half-width × z(1 − 0.05 / (2k)) / z(0.975) (a normal approximation, the same for bootstrap,
    Wilson and t intervals)."""
    from scipy.stats import norm  # heavy: scipy.stats takes seconds to import, only for the correction

    if ci is None:
        return None
    mid, half = (ci[0] + ci[1]) / 2, (ci[1] - ci[0]) / 2
    f = float(norm.ppf(1 - 0.05 / (2 * max(k, 1))) / norm.ppf(0.975))
    return [mid - half * f, mid + half * f]


def paired_replicates(a: Sequence[Sequence[Prediction]], b: Sequence[Sequence[Prediction]],
                      hit: Callable[[Prediction], bool], *, n_boot: int, seed: int,
                      test: str = "") -> tuple[dict, np.ndarray, np.ndarray] | None:
    """Model A's and model B's accuracy replicates on the questions both runs of both hold (by
    ``question_index``): one image draw for both, and seed draws (one shared draw when A and B hold
    as many runs, run i of A then paired with run i of B: the same training run's parsers; else
    one each). Returns ``({"n", "acc_a", "acc_b", "seeds": [ka, kb]}, reps_a, reps_b)``, None when no
    question is shared."""
    shared = None
    for run in [*a, *b]:
        q = {p.question_index for p in run}
        shared = q if shared is None else shared & q
    if not shared:
        return None
    rng = np.random.default_rng(seed)
    units = {image_of(test, p) for p in a[0] if p.question_index in shared}
    draw = ImageDraw(units, n_boot, rng)
    sa = seed_weights(len(a), n_boot, rng)
    sb = sa if len(a) == len(b) else seed_weights(len(b), n_boot, rng)
    point, reps = [], []
    for runs, sw in ((a, sa), (b, sb)):
        per_run = []
        accs = []
        for run in runs:
            got = [(image_of(test, p), hit(p)) for p in run if p.question_index in shared]
            per_run.append(draw.rate(got))
            accs.append(sum(h for _, h in got) / len(got))
        point.append(sum(accs) / len(accs))
        reps.append(runs_replicates(per_run, sw))
    return {"n": len(shared), "acc_a": point[0], "acc_b": point[1], "seeds": [len(a), len(b)]}, reps[0], reps[1]


__all__ = ["N_BOOT", "ImageDraw", "bound_precision", "image_of", "paired_replicates", "percentile_interval",
           "runs_replicates", "seed_weights", "widen"]
