"""Paired comparison of two models on the same questions (bootstrap interval of the accuracy
difference, exact McNemar test), the pairs the report compares by default (each P-NSVQA model
against the NS-VQA model with the same program source), and the bootstrap of a factor's Relative
Degrade (:func:`rd_bootstrap`: an interval for each model's RD and for the difference of two).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from nsvqa.artifacts.predictions import CellKey, Prediction
from nsvqa.evaluation.accuracies import FallbackFlags
from nsvqa.evaluation.degrade import factor_relative_degrade
from nsvqa.models import ModelSpec


def paired_comparison(a: Sequence[Sequence[Prediction]], b: Sequence[Sequence[Prediction]], *,
                      n_boot: int = 2000, seed: int = 0) -> dict | None:
    """Model A against model B on the same questions (run i of A paired with run i of B, questions
    matched by index; a guess counts when it hits).

    Returns ``{"n", "acc_a", "acc_b", "diff", "ci95": [lo, hi], "a_only", "b_only", "p_mcnemar"}``:
    accuracies, A - B, its 95% percentile bootstrap interval over questions, the questions only one
    model gets right, and the exact McNemar test's two-sided p-value (binomial on the discordant
    pairs, scipy); None when no question is shared.
    """
    from scipy.stats import binomtest  # heavy: scipy.stats takes seconds to import, only for McNemar's test

    ca, cb = [], []
    for ra, rb in zip(a, b):
        by_q = {p.question_index: p.correct for p in rb}
        for p in ra:
            if p.question_index in by_q:
                ca.append(p.correct)
                cb.append(by_q[p.question_index])
    if not ca:
        return None
    x, y = np.asarray(ca, dtype=float), np.asarray(cb, dtype=float)
    d = x - y
    rng = np.random.default_rng(seed)
    boots = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(1)
    a_only, b_only = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
    p = binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
    return {"n": len(d), "acc_a": float(x.mean()), "acc_b": float(y.mean()), "diff": float(d.mean()),
            "ci95": percentile_interval(boots),
            "a_only": a_only, "b_only": b_only, "p_mcnemar": float(p)}


def rd_bootstrap(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], factor: str, trains: Sequence[str],
                 tests: Sequence[str], models: Sequence[str], *, metric: str = "accuracy",
                 allow_partial: bool = False, n_boot: int = 1000, seed: int = 0) -> dict:
    """Each model's RD of ``factor`` recomputed on ``n_boot`` bootstrap replicates of the test
    questions (numpy arrays, model -> replicates; NaN where a replicate's RD is undefined).

    A replicate draws the test questions with replacement, once: every cell (every model, every
    training variant, every run) is scored on the same draw. Test variants that ask the same
    questions (the same :attr:`Prediction.question_hash`: one question intent on one layout, as the
    variants of a factor share them) are drawn together, so each drawn question counts on every
    variant that asks it: the accuracy drops an RD averages are paired. Variants whose questions are
    other ones (no shared hash; or predictions without a hash, keyed by variant and
    ``question_index``) are drawn apart. The uncertainty of the test sets is what the interval covers (not
    that of training: one seed is one seed), and the RDs of two models are paired, so the
    percentiles of their replicates' difference give the difference's interval. Counts are
    integers and each replicate's accuracy one division, so the same predictions and seed give
    the same bytes on every machine.
    """
    rng = np.random.default_rng(seed)
    keys = [k for k in cells if k.model in models and k.train in trains and k.test in tests]

    def qkey(test: str, p: Prediction) -> tuple[str, ...]:
        return ("hash", p.question_hash) if p.question_hash is not None else ("index", test, str(p.question_index))

    asked = {s: {qkey(s, p) for k in keys if k.test == s for run in cells[k] for p in run} for s in tests}
    reps: dict[CellKey, np.ndarray] = {}
    for group in _sharing_groups([s for s in tests if asked[s]], asked):
        index = sorted(set().union(*(asked[s] for s in group)))
        n, pos = len(index), {q: i for i, q in enumerate(index)}
        draw = rng.integers(0, n, size=(n_boot, n)) + n * np.arange(n_boot)[:, None]
        weights = np.bincount(draw.ravel(), minlength=n_boot * n).reshape(n_boot, n)
        for k in sorted(k for k in keys if k.test in group):
            per_run = []
            for run in cells[k]:
                have, ok = np.zeros(n, np.int64), np.zeros(n, np.int64)
                for p in run:
                    i = pos[qkey(k.test, p)]
                    have[i] = 1
                    ok[i] = p.correct and (metric == "accuracy" or not p.guessed)
                with np.errstate(invalid="ignore", divide="ignore"):
                    per_run.append((weights @ ok) / (weights @ have))
            reps[k] = np.mean(per_run, axis=0) if per_run else np.full(n_boot, np.nan)
    out = {}
    for m in models:
        mine = {(k.train, k.test): v for k, v in reps.items() if k.model == m}
        values = np.full(n_boot, np.nan)
        for b in range(n_boot):
            acc = {c: (None if np.isnan(v[b]) else float(v[b])) for c, v in mine.items()}
            r = factor_relative_degrade(factor, acc, trains, tests, allow_partial=allow_partial).value
            values[b] = np.nan if r is None else r
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


def percentile_interval(values) -> list[float] | None:
    """The 95% percentile interval of bootstrap replicates, None when one is undefined (NaN)."""
    values = np.asarray(values, dtype=float)
    if not len(values) or np.isnan(values).any():
        return None
    return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]


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
