"""The paper's findings, each checked against the study's numbers and given a status by a fixed
rule on the interval that decides it (docs/evaluation.md, "Findings").

A finding is a claim about a sign: A is above (or below) B. Its intervals are 95% intervals of
A − B (a paired bootstrap over the test questions, a Wilson interval against a fixed level, or a
t interval of a mean error). With every interval on the claimed side the finding is
``reproduced``; with every one on the other side ``reversed``; with some on the other side and
none on the claimed one ``not reproduced`` (some of its comparisons hold the opposite, the rest
are undecided); with some on the claimed side and some undecided or opposite, or all undecided,
``inconclusive``; without its inputs (a piece not run yet) ``pending``. The intervals cover the
test questions only: one training seed is one seed.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from nsvqa.artifacts.predictions import Prediction
from nsvqa.evaluation.accuracies import count_errors, wilson_interval

STATUSES = ("reproduced", "not reproduced", "reversed", "inconclusive", "pending")
#: The paper's modular models with parsed programs, and its non-modular ones.
MODULAR = ("nscl", "nsvqa", "pnsvqa")
NON_MODULAR = ("film", "mdetr")

Cells = Mapping[tuple[str, str, str, int], Sequence[Prediction]]


def verdict(intervals: Sequence[Sequence[float] | None], side: int) -> str:
    """The status of a claim ``A − B > 0`` (``side`` +1) or ``< 0`` (−1) from the 95% intervals of
    its comparisons (None: a comparison that could not be made; no interval at all: pending)."""
    got = [ci for ci in intervals if ci is not None]
    if not got:
        return "pending"
    above = [ci[0] > 0 for ci in got]
    below = [ci[1] < 0 for ci in got]
    hold = [a if side > 0 else b for a, b in zip(above, below)]
    oppose = [b if side > 0 else a for a, b in zip(above, below)]
    if all(hold):
        return "reproduced"
    if all(oppose):
        return "reversed"
    if any(oppose) and not any(hold):
        return "not reproduced"
    return "inconclusive"


def _pct(x: float | None, signed: bool = False) -> str:
    return "—" if x is None else (f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}")


def _ci(ci: Sequence[float] | None, signed: bool = True) -> str:
    return "" if ci is None else f" [{_pct(ci[0], signed)}, {_pct(ci[1], signed)}]"


def _finding(key: str, paper: str, ours: Sequence[str], intervals, side: int, decided_by: str,
             missing: str = "the pieces it needs") -> dict[str, Any]:
    status = verdict(intervals, side)
    return {"key": key, "paper": paper, "ours": "; ".join(o for o in ours if o) if status != "pending" else f"pending: needs {missing}",
            "status": status, "decided_by": decided_by}


def _rd_pairs(report: Mapping[str, Any], factor: str, pairs: Sequence[tuple[str, str]]):
    """(A − B text, interval) of the RD comparisons of ``factor`` among ``pairs``, in their order."""
    comps = {(c["a"], c["b"]): c for c in report["factors"].get(factor, {}).get("rd_comparisons", [])}
    out = []
    for a, b in pairs:
        c = comps.get((a, b))
        if c is not None:
            out.append((f"{a} − {b} {_pct(c['diff'], True)}{_ci(c['ci95'])}", c["ci95"]))
    return out


def _rds(report: Mapping[str, Any], factor: str, models: Sequence[str]) -> str:
    """The RDs of ``models`` with their intervals, and which of them have none yet (a training
    variant of theirs not run): a finding decided without a model the paper names says so."""
    ms = report["factors"].get(factor, {}).get("models", {})
    have = [m for m in models if m in ms and ms[m]["rd"] is not None]
    text = "RD " + ", ".join(f"{m} {_pct(ms[m]['rd'])}{_ci(ms[m].get('rd_ci95'), False)}" for m in have)
    missing = [m for m in models if m not in have]
    return text + (f" (no RD for {', '.join(missing)}: not every training variant run)" if missing else "")


def _rd_finding(report, key, paper, factor, pairs, side, models) -> dict[str, Any]:
    got = _rd_pairs(report, factor, pairs)
    return _finding(key, paper, [_rds(report, factor, models), "; ".join(t for t, _ in got)],
                    [ci for _, ci in got], side, "paired bootstrap of the RD differences (points)",
                    missing=f"every training variant of the {factor} factor")


def findings(report: Mapping[str, Any], cells: Cells, default: str = "mid") -> list[dict[str, Any]]:
    """Every finding of the paper the issue lists, with ours and its status: ``{"key", "paper",
    "ours", "status", "decided_by"}``. ``report``: the study's report JSON (its factors' RDs,
    intervals and comparisons, the systematic section); ``cells``: the committed predictions,
    keyed (model, train, test, seed)."""
    from nsvqa.evaluation.accuracies import accuracy
    from nsvqa.evaluation.comparison import paired_comparison

    out = []
    dom = {m: p for (m, tr, te, s), p in cells.items() if tr == te == default and s == 0}

    def paired(a, b):
        return paired_comparison([dom[a]], [dom[b]]) if a in dom and b in dom else None

    # in domain
    comps = [(a, b, paired(a, b)) for a in MODULAR for b in NON_MODULAR]
    comps = [c for c in comps if c[2] is not None]
    acc = {m: accuracy(dom[m]).accuracy for m in (*MODULAR, *NON_MODULAR) if m in dom}
    worst = min(comps, key=lambda c: c[2]["diff"], default=None)
    out.append(_finding(
        "in_domain_modular", "modular > non-modular in domain (FiLM 53.2, mDETR 82.7, the modular ones higher)",
        [", ".join(f"{m} {_pct(a)}" for m, a in acc.items()),
         "" if worst is None else f"smallest gap {worst[0]} − {worst[1]} {_pct(worst[2]['diff'], True)}"
                                  f"{_ci(worst[2]['ci95'])}"],
        [c[2]["ci95"] for c in comps], +1, "paired bootstrap of each modular − non-modular accuracy difference"))
    seeds = sorted({s for (m, tr, te, s) in cells if m in ("pnsvqa", "nsvqa") and tr == te == default})
    per_seed = []
    for s in seeds:
        a, b = cells.get(("pnsvqa", default, default, s)), cells.get(("nsvqa", default, default, s))
        if a is not None and b is not None:
            per_seed.append((s, paired_comparison([a], [b])))
    spread = ""
    if len(per_seed) > 1:  # the paper's ± is the standard deviation over its 3 seeds
        sd = {m: report.get("seeds", {}).get(m, {}) for m in ("pnsvqa", "nsvqa")}
        if all(v.get("std") is not None for v in sd.values()):
            spread = (f"over seeds {', '.join(str(s) for s, _ in per_seed)}: pnsvqa {_pct(sd['pnsvqa']['mean'])} "
                      f"± {100 * sd['pnsvqa']['std']:.2f}, nsvqa {_pct(sd['nsvqa']['mean'])} ± {100 * sd['nsvqa']['std']:.2f} "
                      f"(standard deviation)")
    out.append(_finding(
        "in_domain_pnsvqa", "P-NSVQA > NS-VQA in domain (+2.96; ±0.10 / ±0.40 over 3 seeds)",
        [f"seed {s}: {_pct(c['acc_a'])} vs {_pct(c['acc_b'])}, {_pct(c['diff'], True)}{_ci(c['ci95'])}"
         for s, c in per_seed] + [spread],
        [c["ci95"] for _, c in per_seed], +1, "paired bootstrap of P-NSVQA − NS-VQA, every seed run"))

    # Table 2
    mod_vs = [(a, b) for a in MODULAR for b in NON_MODULAR]
    out.append(_rd_finding(report, "redundancy", "redundancy: modular RD < 2%, non-modular ≈ 20%", "redundancy",
                           mod_vs, -1, (*MODULAR, *NON_MODULAR)))
    out.append(_rd_finding(report, "visual", "visual: non-modular more robust (FiLM, mDETR RD < 10%; modular > 12%)",
                           "visual", mod_vs, +1, (*MODULAR, *NON_MODULAR)))
    out.append(_rd_finding(report, "visual_pnsvqa", "visual: P-NSVQA's RD 4.04 points below NS-VQA's", "visual",
                           [("pnsvqa", "nsvqa")], -1, ("pnsvqa", "nsvqa")))
    dist = report["factors"].get("distribution", {}).get("models", {})
    prior = [m for m in ("film", "mdetr", "nscl", "nsvqa") if dist.get(m, {}).get("rd") is not None]
    out.append(_finding(
        "distribution_prior", "distribution: every prior model's RD > 20%",
        [_rds(report, "distribution", ("film", "mdetr", "nscl", "nsvqa"))],
        [None if dist[m].get("rd_ci95") is None else [x - 0.20 for x in dist[m]["rd_ci95"]] for m in prior], +1,
        "each RD's bootstrap interval against 20%", missing="every training variant of the distribution factor"))
    out.append(_rd_finding(report, "distribution_nsvqa", "distribution: NS-VQA best of the prior models (by > 7.5)",
                           "distribution", [("nsvqa", "film"), ("nsvqa", "mdetr"), ("nsvqa", "nscl")], -1,
                           ("nsvqa", "film", "mdetr", "nscl")))
    out.append(_rd_finding(report, "distribution_pnsvqa", "distribution: P-NSVQA's RD below NS-VQA's (21 → 14)",
                           "distribution", [("pnsvqa", "nsvqa")], -1, ("pnsvqa", "nsvqa")))
    out.append(_tail_finding(cells))
    out.append(_rd_finding(report, "compositionality", "compositionality: P-NSVQA beats the non-modular models",
                           "compositionality", [("pnsvqa", "film"), ("pnsvqa", "mdetr")], -1,
                           ("pnsvqa", "film", "mdetr")))
    out.append(_systematic_finding(report, cells))
    return out


def _tail_finding(cells: Cells) -> dict[str, Any]:
    """NSCL trained on ``long``: its accuracy on the ``tail`` test variant against the ``long`` one
    (the paper's 60.6% against 91%: its Table 1 cells, which its text calls "the head-tail
    results"), decided by the two Wilson intervals. Beside it, not deciding: the tail-concept
    questions of the ``long`` test against its other questions."""
    from nsvqa.evaluation.accuracies import ConceptSplit, accuracy, head_tail_accuracy

    on_long, on_tail = cells.get(("nscl", "long", "long", 0)), cells.get(("nscl", "long", "tail", 0))
    ours, intervals = [], []
    if on_long is not None and on_tail is not None:
        a, b = accuracy(on_tail), accuracy(on_long)
        if a.n and b.n:
            t, r = wilson_interval(a.n_correct, a.n), wilson_interval(b.n_correct, b.n)
            intervals.append([t[0] - r[1], t[1] - r[0]])  # below when the tail interval lies wholly under
            ours.append(f"trained on long: the tail test {_pct(a.accuracy)}{_ci(t, False)} against the long test "
                        f"{_pct(b.accuracy)}{_ci(r, False)}")
    if intervals:  # the long test's own split, beside the deciding comparison
        groups = head_tail_accuracy(on_long, ConceptSplit.from_catalogue())
        tail = groups["tail"]
        rest_n = groups["head"].n + groups["other"].n
        rest_k = groups["head"].n_correct + groups["other"].n_correct
        if tail.n and rest_n:
            t, r = wilson_interval(tail.n_correct, tail.n), wilson_interval(rest_k, rest_n)
            ours.append(f"within the long test, tail-concept questions {_pct(tail.accuracy)}{_ci(t, False)} "
                        f"({tail.n}), the others {_pct(rest_k / rest_n)}{_ci(r, False)} ({rest_n}; not deciding)")
    return _finding("distribution_nscl_tail", "NSCL trained on long: the tail test far below the long test (60.6 vs 91)",
                    ours, intervals, -1, "Wilson intervals of the tail test against the long test (disjoint or not)",
                    missing="the piece trained on long")


def _systematic_finding(report: Mapping[str, Any], cells: Cells) -> dict[str, Any]:
    """Held-out values pulled toward training ones: on sys-composition the scene parser's wrong
    colours of held-out (category, colour) objects land on colours training showed with the
    category more often than a uniform wrong colour would; on sys-extrapolation (counts ≥ 9 held
    out) the count answers on held-out scenes fall short of the truth."""
    from scipy.stats import ttest_1samp

    sysr = report.get("systematic", {})
    ours, intervals = [], []
    fb = (sysr.get("sys-composition", {}).get("scene parser") or {}).get("fallback") or {}
    if fb.get("wrong_colors") and fb.get("seen_with_category") is not None:
        n = fb["wrong_colors"]
        w = wilson_interval(round(fb["seen_with_category"] * n), n)
        intervals.append([w[0] - fb["uniform"], w[1] - fb["uniform"]])  # above uniform: toward training
        ours.append(f"sys-composition: {_pct(fb['seen_with_category'])}%{_ci(w, False)} of {n} wrong colours of "
                    f"held-out pairs are colours training showed with the category (uniform {_pct(fb['uniform'])}%)")
    for model in ("pnsvqa", "nsvqa"):
        preds = cells.get((model, "sys-extrapolation", "sys-extrapolation", 0))
        if preds is None:
            continue
        errs = count_errors(p for p in preds if p.ood)
        if len(errs) > 1 and len(set(errs)) > 1:
            ci = ttest_1samp(errs, 0.0).confidence_interval(0.95)
            intervals.append([-float(ci.high), -float(ci.low)])  # short of the truth: toward training
            ours.append(f"sys-extrapolation, {model}: count answers on held-out scenes off by "
                        f"{sum(errs) / len(errs):+.2f} [{ci.low:+.2f}, {ci.high:+.2f}] ({len(errs)} questions)")
    return _finding("systematic", "OOD predictions regress to training frequencies (systematic splits)", ours,
                    intervals, +1, "Wilson interval of the fallback share against uniform; t interval of the "
                    "held-out count error against 0",
                    missing="the sys-composition or sys-extrapolation piece" + (
                        " (the same question asked of the distribution factor: \"Fallback toward the training "
                        "frequencies\" below)" if (report.get("fallback") or {}).get("tests") else ""))


def findings_markdown(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The findings as a Markdown table (lines)."""
    lines = ["| finding (paper) | ours (95% intervals) | status | decided by |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['paper']} | {r['ours']} | **{r['status']}** | {r['decided_by']} |")
    return lines


__all__ = ["STATUSES", "findings", "findings_markdown", "verdict"]
