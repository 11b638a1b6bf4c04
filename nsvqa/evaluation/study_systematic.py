"""The systematic splits set against the in-domain generalization paper, point by point.

That paper (Schott et al., "Visual representation learning does not generalize strongly within the
same domain", ICLR 2022) regresses generative factors (R²) on its random, composition,
interpolation and extrapolation splits; the study answers questions on splits built the same way
(``data/variants/sys-*.json``). Its pattern, as five points, each compared with ours by a fixed rule
on 95% intervals (Wilson for accuracies and shares, t for a mean error):

1. ``random_to_systematic``: accuracy drops from the random split to the systematic ones: each
   systematic split's out-of-distribution (OOD) accuracy against the random split's.
2. ``extrapolation_hardest``: extrapolation is the hardest split: its OOD accuracy against the
   other systematic splits'.
3. ``modular_factors``: in-distribution factors are still inferred while the OOD one fails
   ("surprisingly modular"): on sys-composition the scene parser's drop (ID val split − OOD test)
   on the held-out factor (colour) against its drop on the factor whose values all were seen
   (shape).
4. ``toward_training``: OOD predictions are pulled toward the training distribution: wrong colours
   of held-out pairs land on colours training showed with the category (against uniform); counts
   on held-out scenes fall short of the truth.
5. ``models_agree``: models agree with each other rather than with the ground truth: where NS-VQA
   and P-NSVQA both answer an OOD question wrongly (NS-VQA's guesses left out), how often they give
   the same wrong answer, against the rate their wrong answers' frequencies give by chance.

Each point reads ``agrees``, ``differs`` or ``cannot say`` (with why), with our numbers.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from nsvqa.artifacts.predictions import Prediction
from nsvqa.evaluation.accuracies import wilson_interval

VERDICTS = ("agrees", "differs", "cannot say")
#: The models whose answers the points read (they share the split's scene parser).
MODELS = ("pnsvqa", "nsvqa")
SYSTEMATIC = ("sys-composition", "sys-interpolation", "sys-extrapolation")

Cells = Mapping[tuple[str, str, str, int], Sequence[Prediction]]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _acc(row: Mapping[str, Any] | None) -> tuple[float, list[float]] | None:
    """(accuracy, Wilson interval) of a systematic section's ``id`` / ``ood`` / ``overall`` entry."""
    if not row or not row.get("n"):
        return None
    ci = row.get("ci95") or wilson_interval(row["n_correct"], row["n"])
    return row["accuracy"], ci


def _point(key: str, paper: str, verdict: str, ours: Sequence[str], why: str = "") -> dict[str, Any]:
    assert verdict in VERDICTS
    return {"key": key, "paper": paper, "verdict": verdict, "ours": "; ".join(o for o in ours if o),
            "why": why}


def _by_intervals(key: str, paper: str, ours: Sequence[str], hold: Sequence[bool], oppose: Sequence[bool],
                  missing: str) -> dict[str, Any]:
    """A point decided on Wilson intervals: agrees when every comparison holds the paper's side,
    differs when one holds the other, cannot say otherwise (or, without comparisons, ``missing``)."""
    if not ours:
        return _point(key, paper, "cannot say", [], missing)
    verdict = "agrees" if all(hold) else "differs" if any(oppose) else "cannot say"
    return _point(key, paper, verdict, ours, "" if verdict != "cannot say" else "some Wilson intervals overlap")


def _random_to_systematic(sysr: Mapping[str, Any]) -> dict[str, Any]:
    paper = "accuracy (R²) drops sharply from the random split to the systematic ones"
    ours, below, above = [], [], []
    for m in MODELS:
        rand = _acc((sysr.get("sys-random") or {}).get(m, {}).get("overall"))
        for s in SYSTEMATIC:
            ood = _acc((sysr.get(s) or {}).get(m, {}).get("ood"))
            if rand is None or ood is None:
                continue
            ours.append(f"{m}: {s} OOD {_pct(ood[0])} against sys-random {_pct(rand[0])} "
                        f"({100 * (ood[0] - rand[0]):+.1f} points)")
            below.append(ood[1][1] < rand[1][0])
            above.append(ood[1][0] > rand[1][1])
    return _by_intervals("random_to_systematic", paper, ours, below, above,
                         "needs sys-random and a systematic split with OOD questions")


def _extrapolation_hardest(sysr: Mapping[str, Any]) -> dict[str, Any]:
    paper = "extrapolation is the hardest split"
    ours, hold, oppose = [], [], []
    for m in MODELS:
        ex = _acc((sysr.get("sys-extrapolation") or {}).get(m, {}).get("ood"))
        others = {s: _acc((sysr.get(s) or {}).get(m, {}).get("ood")) for s in SYSTEMATIC[:-1]}
        others = {s: a for s, a in others.items() if a is not None}
        if ex is None or not others:
            continue
        ours.append(f"{m}: OOD sys-extrapolation {_pct(ex[0])}, " + ", ".join(
            f"{s} {_pct(a[0])}" for s, a in others.items()))
        hold += [ex[1][1] < a[1][0] for a in others.values()]
        oppose += [ex[1][0] > a[1][1] for a in others.values()]
    return _by_intervals("extrapolation_hardest", paper, ours, hold, oppose,
                         "needs sys-extrapolation and another systematic split")


def _drop(id_acc: float, id_n: int, ood_acc: float, ood_n: int) -> tuple[float, list[float]]:
    """ID − OOD with the interval spanned by the two Wilson intervals' extremes."""
    a, b = wilson_interval(round(id_acc * id_n), id_n), wilson_interval(round(ood_acc * ood_n), ood_n)
    return id_acc - ood_acc, [a[0] - b[1], a[1] - b[0]]


def _modular_factors(sysr: Mapping[str, Any]) -> dict[str, Any]:
    paper = "factors seen in training are still inferred while the held-out one fails (\"surprisingly modular\")"
    sp = ((sysr.get("sys-composition") or {}).get("scene parser") or {})
    ref, ood = sp.get("val") or {}, sp.get("ood") or {}
    if not ref.get("objects") or not ood.get("objects") or ood.get("object.color") is None:
        return _point("modular_factors", paper, "cannot say", [],
                      "needs the sys-composition scene parser's perception (val and OOD objects)")
    drops = {f: _drop(ref[f"object.{f}"], ref["objects"], ood[f"object.{f}"], ood["objects"])
             for f in ("color", "shape")}
    ours = [f"sys-composition scene parser, val (ID) → held-out pairs (OOD): colour {_pct(ref['object.color'])} → "
            f"{_pct(ood['object.color'])} (drop {100 * drops['color'][0]:.1f} points), shape "
            f"{_pct(ref['object.shape'])} → {_pct(ood['object.shape'])} (drop {100 * drops['shape'][0]:.1f})"]
    c, s = drops["color"][1], drops["shape"][1]
    verdict = "agrees" if c[0] > s[1] else "differs" if c[1] < s[0] else "cannot say"
    return _point("modular_factors", paper, verdict, ours,
                  "the held-out factor's drop against the seen one's; the val split holds every category, "
                  "the test split only those with held-out colours, so part of the shape drop is the category mix")


def _toward_training(report: Mapping[str, Any], cells: Cells) -> dict[str, Any]:
    paper = "OOD predictions are pulled toward the training distribution"
    for f in report.get("findings", []):
        if f["key"] == "systematic":
            if f["status"] == "pending":
                return _point("toward_training", paper, "cannot say", [], "needs sys-composition or sys-extrapolation")
            verdict = {"reproduced": "agrees", "reversed": "differs", "not reproduced": "differs"}.get(
                f["status"], "cannot say")
            return _point("toward_training", paper, verdict, [f["ours"]], f"the systematic finding: {f['status']}")
    return _point("toward_training", paper, "cannot say", [], "no systematic finding in the report")


def _models_agree(cells: Cells) -> dict[str, Any]:
    paper = "models agree with each other on OOD inputs, not with the ground truth"
    ours, hold, oppose = [], [], []
    for s in SYSTEMATIC:
        a, b = (cells.get((m, s, s, 0)) for m in MODELS)
        if a is None or b is None:
            continue
        by_q = {p.question_index: p for p in b}
        both = [(p, by_q[p.question_index]) for p in a if p.ood and p.question_index in by_q
                and not p.correct and not by_q[p.question_index].correct and not by_q[p.question_index].guessed
                and not p.guessed]
        if len(both) < 10:
            continue
        same = sum(p.prediction == q.prediction for p, q in both)
        chance = 0.0  # two independent wrong answers with the models' own frequencies, per question type
        for qtype in {p.question_type for p, _ in both}:
            xs = [(p, q) for p, q in both if p.question_type == qtype]
            fa, fb = Counter(p.prediction for p, _ in xs), Counter(q.prediction for _, q in xs)
            chance += len(xs) / len(both) * sum(fa[v] / len(xs) * fb[v] / len(xs) for v in fa)
        ci = wilson_interval(same, len(both))
        ours.append(f"{s}: both wrong on {len(both)} OOD questions, the same wrong answer on {_pct(same / len(both))}% "
                    f"[{_pct(ci[0])}, {_pct(ci[1])}] (chance from their answer frequencies {_pct(chance)}%)")
        hold.append(ci[0] > chance)
        oppose.append(ci[1] < chance)
    if not ours:
        return _point("models_agree", paper, "cannot say", [], "needs a systematic piece with both models")
    verdict = "agrees" if all(hold) else "differs" if any(oppose) else "cannot say"
    return _point("models_agree", paper, verdict, ours,
                  "both read the same scene parse, so their agreement is partly shared perception (the paper's "
                  "models were trained apart)")


def generalization_points(report: Mapping[str, Any], cells: Cells) -> list[dict[str, Any]]:
    """The five points of the module docstring: ``{"key", "paper", "verdict", "ours", "why"}``.
    ``report``: the study's report JSON (its ``systematic`` section and findings); ``cells``: the
    committed predictions, keyed (model, train, test, seed)."""
    sysr = report.get("systematic", {})
    return [_random_to_systematic(sysr), _extrapolation_hardest(sysr), _modular_factors(sysr),
            _toward_training(report, cells), _models_agree(cells)]


def generalization_markdown(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The points as a Markdown table (lines)."""
    lines = ["| the in-domain generalization paper | ours | verdict | note |", "|---|---|---|---|"]
    for p in points:
        lines.append(f"| {p['paper']} | {p['ours'] or '—'} | **{p['verdict']}** | {p['why'] or '—'} |")
    return lines


__all__ = ["VERDICTS", "generalization_points", "generalization_markdown"]
