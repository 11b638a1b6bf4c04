"""Paired comparison of two models on the same questions (bootstrap interval of the accuracy
difference, exact McNemar test) and the pairs the report compares by default: each P-NSVQA model
against the NS-VQA model with the same program source.
"""
from __future__ import annotations

from typing import Sequence

from nsvqa.artifacts.predictions import Prediction


def paired_comparison(a: Sequence[Sequence[Prediction]], b: Sequence[Sequence[Prediction]], *,
                      n_boot: int = 2000, seed: int = 0) -> dict | None:
    """Model A against model B on the same questions (run i of A paired with run i of B, questions
    matched by index; a guess counts when it hits).

    Returns ``{"n", "acc_a", "acc_b", "diff", "ci95": [lo, hi], "a_only", "b_only", "p_mcnemar"}``:
    accuracies, A - B, its 95% percentile bootstrap interval over questions, the questions only one
    model gets right, and the exact McNemar test's two-sided p-value (binomial on the discordant
    pairs, scipy); None when no question is shared.
    """
    import numpy as np
    from scipy.stats import binomtest

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
            "ci95": [float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))],
            "a_only": a_only, "b_only": b_only, "p_mcnemar": float(p)}


def default_comparisons(models: Sequence[str]) -> list[tuple[str, str]]:
    """Each P-NSVQA model against the NS-VQA model with the same program source (the same
    ``gt_programs`` option of its :class:`~nsvqa.models.ModelSpec`)."""
    from nsvqa.models import ModelSpec

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
