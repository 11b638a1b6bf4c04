"""Paired comparison of two models on the same questions (bootstrap interval of the accuracy
difference over images and training seeds, exact McNemar test), the pairs the report compares by default (each P-NSVQA model
against the NS-VQA model with the same program source), and the bootstrap of a factor's Relative
Degrade (:func:`rd_bootstrap`: an interval for each model's RD and for the difference of two).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from nsvqa.artifacts.predictions import CellKey, Prediction
from nsvqa.evaluation.accuracies import FallbackFlags
from nsvqa.evaluation.degrade import factor_relative_degrade
from nsvqa.evaluation.resampling import (N_BOOT, ImageDraw, bound_precision, image_of, paired_replicates,
                                         percentile_interval, runs_replicates, seed_weights)
from nsvqa.models import ModelSpec


def paired_comparison(a: Sequence[Sequence[Prediction]], b: Sequence[Sequence[Prediction]], *,
                      n_boot: int = N_BOOT, seed: int = 0, metric: str = "accuracy") -> dict | None:
    """Model A against model B on the same questions: each a list of runs (training seeds) of one
    cell, questions matched by index; a guess counts when it hits (``metric`` "accuracy_no_guess":
    never).

    Returns ``{"n", "acc_a", "acc_b", "diff", "ci95": [lo, hi], "precision", "seeds": [ka, kb],
    "a_only", "b_only", "p_mcnemar"}``: accuracies (mean over runs), A - B, its 95% percentile
    interval from the bootstrap of :mod:`nsvqa.evaluation.resampling` (images drawn, and runs where
    a side has several; paired), the Monte-Carlo precision of its bounds, the runs per side, the
    questions only one model gets right (runs paired in order) and the exact McNemar test's
    two-sided p-value on them (binomial on the discordant pairs, scipy); None when no question is
    shared.
    """
    from scipy.stats import binomtest  # heavy: scipy.stats takes seconds to import, only for McNemar's test

    hit = _hit(metric)
    got = paired_replicates(a, b, hit, n_boot=n_boot, seed=seed)
    if got is None:
        return None
    out, ra, rb = got
    a_only = b_only = 0
    for runa, runb in zip(a, b):
        by_q = {p.question_index: hit(p) for p in runb}
        for p in runa:
            if p.question_index in by_q:
                a_only += hit(p) and not by_q[p.question_index]
                b_only += by_q[p.question_index] and not hit(p)
    p = binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
    d = ra - rb
    return {"n": out["n"], "acc_a": out["acc_a"], "acc_b": out["acc_b"], "diff": out["acc_a"] - out["acc_b"],
            "ci95": percentile_interval(d), "precision": bound_precision(d), "seeds": out["seeds"],
            "a_only": int(a_only), "b_only": int(b_only), "p_mcnemar": float(p)}


def _hit(metric: str):
    if metric == "accuracy":
        return lambda p: p.correct
    return lambda p: p.correct and not p.guessed


def rd_bootstrap(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], factor: str, trains: Sequence[str],
                 tests: Sequence[str], models: Sequence[str], *, metric: str = "accuracy",
                 allow_partial: bool = False, n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """Each model's RD of ``factor`` recomputed on ``n_boot`` bootstrap replicates (numpy arrays,
    model -> replicates; NaN where a replicate's RD is undefined).

    A replicate draws the test images with replacement, once: every cell (every model, every
    training variant) is scored on the same draw (:mod:`nsvqa.evaluation.resampling`). Test
    variants linked by at least one shared :attr:`Prediction.question_hash`, directly or through
    another variant, are one group, whose image indices are drawn together (one unit on every
    variant of the group), so the accuracy drops an RD averages are paired. Only variants linked by
    no shared hash are drawn apart (docs/evaluation.md, "Intervals"). A cell of several runs (training seeds) also draws its runs (one seed draw for every cell
    of as many runs); a cell of one run covers the test images only. The RDs of two models are
    paired, so the percentiles of their replicates' difference give the difference's interval.
    """
    rng = np.random.default_rng(seed)
    keys = [k for k in cells if k.model in models and k.train in trains and k.test in tests]
    hit = _hit(metric)

    def qkey(test: str, p: Prediction) -> tuple[str, ...]:
        return ("hash", p.question_hash) if p.question_hash is not None else ("index", test, str(p.question_index))

    asked = {s: {qkey(s, p) for k in keys if k.test == s for run in cells[k] for p in run} for s in tests}
    seeds = {n: seed_weights(n, n_boot, rng) for n in sorted({len(cells[k]) for k in keys if cells[k]})}
    reps: dict[CellKey, np.ndarray] = {}
    for group in _sharing_groups([s for s in tests if asked[s]], asked):
        draw = ImageDraw({image_of(k.test, p) for k in keys if k.test in group for run in cells[k] for p in run},
                         n_boot, rng)
        for k in sorted(k for k in keys if k.test in group):
            per_run = [draw.rate((image_of(k.test, p), hit(p)) for p in run) for run in cells[k]]
            reps[k] = runs_replicates(per_run, seeds[len(per_run)]) if per_run else np.full(n_boot, np.nan)
    out = {}
    for m in models:
        mine = {(k.train, k.test): v for k, v in reps.items() if k.model == m}
        with np.errstate(invalid="ignore", divide="ignore"):
            r = factor_relative_degrade(factor, mine, trains, tests, allow_partial=allow_partial).value
        values = np.full(n_boot, np.nan) if r is None else np.asarray(r, dtype=float)
        values[~np.isfinite(values)] = np.nan
        out[m] = values
    return out


def _sharing_groups(tests: Sequence[str], asked: Mapping[str, set]) -> list[list[str]]:
    """``tests`` in groups that share questions (connected by a shared key), in their order."""
    groups: list[list[str]] = []
    for s in tests:
        joined = [g for g in groups if any(asked[s] & asked[t] for t in g)]
        merged = [t for g in joined for t in g] + [s]
        groups = [g for g in groups if g not in joined] + [merged]
    order = {s: i for i, s in enumerate(tests)}
    return sorted((sorted(g, key=order.get) for g in groups), key=lambda g: order[g[0]])


def paired_fallback(a: Mapping[int, FallbackFlags], b: Mapping[int, FallbackFlags], *,
                    n_boot: int = 2000, seed: int = 0) -> dict | None:
    """The head share of A's wrong answers minus B's (:func:`~nsvqa.evaluation.accuracies.head_fallback`
    flags of two models, or one model trained on two variants, on the same test), with its 95%
    percentile bootstrap interval over the questions both read (the same draws for both; a
    replicate without a wrong answer on one side is undefined, and so is then the interval).
    Returns ``{"n", "diff", "ci95"}``, or None when a side has no wrong answer."""
    qs = sorted(set(a) & set(b))
    wa, ha = (np.array([getattr(a[q], f) for q in qs], dtype=float) for f in ("wrong", "head"))
    wb, hb = (np.array([getattr(b[q], f) for q in qs], dtype=float) for f in ("wrong", "head"))
    if not wa.sum() or not wb.sum():
        return None
    idx = np.random.default_rng(seed).integers(0, len(qs), size=(n_boot, len(qs)))
    with np.errstate(invalid="ignore", divide="ignore"):
        boots = ha[idx].sum(1) / wa[idx].sum(1) - hb[idx].sum(1) / wb[idx].sum(1)
    return {"n": len(qs), "diff": float(ha.sum() / wa.sum() - hb.sum() / wb.sum()), "ci95": percentile_interval(boots)}


def default_comparisons(models: Sequence[str]) -> list[tuple[str, str]]:
    """Each P-NSVQA model against the NS-VQA model with the same program source (the same
    ``gt_programs`` option of its :class:`~nsvqa.models.ModelSpec`)."""
    out = []
    for m in models:
        try:
            spec = ModelSpec.from_label(m)
        except ValueError:
            continue
        if spec.name.startswith("pnsvqa"):
            ns = ModelSpec("nsvqa", spec.gt_programs).label
            if ns in models:
                out.append((m, ns))
    return out
