"""The systematic splits and the fallback toward training frequencies, and both set against the
in-domain generalization paper, point by point.

The report's sections (each a JSON section, its Markdown, and the fallback's plot):

* :func:`systematic_section`: per systematic split (trained and tested on itself, seed 0) and
  model, accuracy overall, on questions about seen (ID) and held-out (OOD) values, OOD minus ID,
  and the count answers' error (:func:`count_error`); the split's scene parser's perception.
  :func:`systematic_markdown` renders it.
* :func:`fallback_section`: on the distribution factor's ``tail`` and ``oppo`` tests, the head
  share of the wrong attribute answers per model and training variant (:data:`FALLBACK_TRAINS`),
  with ``long`` minus ``bal``. :func:`fallback_markdown` renders it, :func:`fallback_figure` draws
  it.
* :func:`generalization_points`: the comparison with the paper below.
  :func:`generalization_markdown` renders it.

That paper (Schott et al., "Visual representation learning does not generalize strongly within the
same domain", ICLR 2022) regresses generative factors (R²) on its random, composition,
interpolation and extrapolation splits; the study answers questions on splits built the same way
(``nsvqa/generation/data/variants/sys-*.json``). Its pattern, as seven points, each compared with ours by a fixed rule
on 95% intervals (Wilson for accuracies and shares, t for a mean error):

1. ``random_to_composition``, ``random_to_interpolation``, ``random_to_extrapolation``: accuracy
   drops on held-out values, judged per split (the paper's drops differ by split and dataset) and
   like with like: the split's out-of-distribution (OOD) accuracy against its own in-distribution
   (ID) accuracy, one trained model on one test set (the random split's accuracy is beside it);
   on a split whose test questions are all held out, against the random split's accuracy.
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

import statistics
from collections import Counter
from typing import Any, Mapping, Sequence

from nsvqa.artifacts.predictions import CellKey, Prediction
from nsvqa.evaluation.accuracies import (FALLBACK_ATTRIBUTES, ConceptSplit, accuracy, count_errors, fallback_share,
                                         head_fallback, id_ood_accuracy, wilson_interval)
from nsvqa.evaluation.comparison import paired_fallback
from nsvqa.evaluation.report import md_table, pct
from nsvqa.generation.variants import FACTORS, load_variant

VERDICTS = ("agrees", "differs", "cannot say")
#: The models whose answers the points read (they share the split's scene parser).
MODELS = ("pnsvqa", "nsvqa")
SYSTEMATIC = ("sys-composition", "sys-interpolation", "sys-extrapolation")

Cells = Mapping[tuple[str, str, str, int], Sequence[Prediction]]


# ---------------------------------------------------------------------------- the systematic splits
def count_error(predictions) -> dict[str, Any] | None:
    """On the count questions among ``predictions`` with a numeric prediction: how many, and the
    mean signed error of the predicted number (predicted minus true); None without one. A model
    pulled toward the training range of counts under-answers above it and over-answers below it."""
    errs = count_errors(predictions)
    return {"n": len(errs), "mean_error": statistics.fmean(errs)} if errs else None


def systematic_section(cells: Mapping[tuple[str, str, str, int], Sequence[Prediction]],
                       perception: Mapping[str, Any]) -> dict[str, Any]:
    """Per systematic split (trained and tested on itself, seed 0) and model: accuracy overall, on
    questions about seen (ID) and about held-out (OOD) values or combinations, with 95% intervals,
    and OOD minus ID; and under ``"scene parser"`` its perception there (ID / OOD objects, the
    fallback toward training values) when committed. ``cells``: the committed predictions, keyed
    (model, train, test, seed); ``perception``: scene parser -> test variant -> its perception."""
    out: dict[str, Any] = {}
    for split in FACTORS["systematic"]:
        got = perception.get(split, {}).get(split)
        if got is not None:
            out.setdefault(split, {})["scene parser"] = got
    for (model, train, test, seed), preds in sorted(cells.items()):
        if seed != 0 or train != test or train not in FACTORS["systematic"]:
            continue
        groups = id_ood_accuracy(preds) or {}
        row: dict[str, Any] = {"overall": accuracy(preds).to_json()}
        for k in ("id", "ood"):
            a = groups.get(k)
            row[k] = None if a is None or not a.n else {**a.to_json(), "ci95": wilson_interval(a.n_correct, a.n),
                                                         "count_error": count_error(
                                                             p for p in preds if p.ood == (k == "ood"))}
        row["ood_minus_id"] = (row["ood"]["accuracy"] - row["id"]["accuracy"]
                               if row["id"] is not None and row["ood"] is not None else None)
        out.setdefault(train, {})[model] = row
    return out


def systematic_markdown(systematic: Mapping[str, Any]) -> list[str]:
    """:func:`systematic_section`'s JSON as a Markdown section (lines, a blank one last)."""
    lines = ["## Systematic splits: questions about seen (ID) and held-out (OOD) values", "",
             "Each split trained and tested on itself (seed 0); accuracy % with 95% Wilson intervals.", ""]
    rows, seen = [], []
    for split, models in systematic.items():
        for m, r in models.items():
            if m == "scene parser":
                seen.append((split, r))
                continue
            cell = {k: ("—" if r[k] is None else f"{pct(r[k]['accuracy'])} [{pct(r[k]['ci95'][0])}, "
                                                 f"{pct(r[k]['ci95'][1])}] ({r[k]['n']})") for k in ("id", "ood")}
            ce = [(r[k] or {}).get("count_error") for k in ("id", "ood")]
            rows.append([split, m, pct(r["overall"]["accuracy"]), cell["id"], cell["ood"],
                         "—" if r["ood_minus_id"] is None else f"{100 * r['ood_minus_id']:+.1f}",
                         " / ".join("—" if c is None else f"{c['mean_error']:+.2f} ({c['n']})" for c in ce)])
    lines += md_table(["split", "model", "overall", "ID (questions)", "OOD (questions)", "OOD − ID (points)",
                       "count answers' error ID / OOD"], rows)
    lines.append("")
    if seen:
        lines += ["The scene parser on the split's ID and OOD objects (held-out pair, or an image with a "
                  "held-out count or camera scale), and where its errors on held-out values land; "
                  "\"ID (val split)\": the same parser on the split's val split, training values only "
                  "(a test split may hold no ID object):", ""]
        prow = []

        def prow_of(split, label, x, fall):
            return [split, label, str(x["objects"]), pct(x["recall"]), pct(x["object.shape"]),
                    pct(x["object.color"]), "—" if x.get("count_error") is None else f"{x['count_error']:+.2f}",
                    fall]

        for split, r in seen:
            if r.get("val") is not None:  # the ID reference: the split's val split (training values only)
                prow.append(prow_of(split, "ID (val split)", r["val"], "—"))
            for g in ("id", "ood"):
                if not (r.get(g) or {}).get("objects"):  # none of this kind in the test split
                    continue
                fb = r.get("fallback") or {}
                if "wrong_colors" in fb:
                    fall = ("—" if g == "id" or fb["seen_with_category"] is None else
                            f"{pct(fb['seen_with_category'])}% of {fb['wrong_colors']} wrong colours seen with "
                            f"the category in training (uniform: {pct(fb['uniform'])}%)")
                else:
                    f = fb.get(g) or {}
                    fall = ("—" if f.get("to_training_count") is None else
                            f"{pct(f['to_training_count'])}% of {f['miscounted']} miscounted images on a "
                            f"training count")
                prow.append(prow_of(split, g.upper(), r[g], fall))
        lines += md_table(["split", "objects", "n", "recall %", "shape %", "color %", "count error",
                           "fallback toward training"], prow)
        lines.append("")
    return lines


# ---------------------------------------------------------------------------- the fallback
#: The distribution factor's training variants, flattest first, and the tests whose objects the
#: skewed ones saw least (``tail``: the rare half only; ``oppo``: the long tail reversed).
FALLBACK_TRAINS = ("bal", "slt", "long")
FALLBACK_TESTS = ("tail", "oppo")


def fallback_section(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]]) -> dict[str, Any]:
    """Where the wrong attribute answers land on the distribution factor's ``tail`` and ``oppo``
    tests (:func:`~nsvqa.evaluation.accuracies.head_fallback`): per test, model and training
    variant the head share of the wrong shape and colour answers beside a uniform wrong answer's,
    and ``long`` minus ``bal`` with its paired bootstrap interval. A model pulled toward its
    training frequencies answers head values more often the more its training skewed toward them
    (the in-domain generalization paper's finding, asked of the concept distribution factor).
    ``cells``: the factor's cells under its own variant names."""
    split = ConceptSplit.from_catalogue()
    weights = load_variant("long").scene["weights"]
    values = {a: [v for v, w in weights[a].items() if w > 0] for a in FALLBACK_ATTRIBUTES}
    tests: dict[str, Any] = {}
    for test in FALLBACK_TESTS:
        models = sorted({k.model for k in cells if k.test == test and k.train in FALLBACK_TRAINS})
        for m in models:
            flags = {t: head_fallback(cells[CellKey(m, t, test)][0], split, values)
                     for t in FALLBACK_TRAINS if CellKey(m, t, test) in cells}
            row: dict[str, Any] = {t: fallback_share(f) for t, f in flags.items()}
            if "long" in flags and "bal" in flags:
                row["long_minus_bal"] = paired_fallback(flags["long"], flags["bal"])
            tests.setdefault(test, {})[m] = row
    return {"attributes": list(FALLBACK_ATTRIBUTES), "trains": list(FALLBACK_TRAINS), "tests": tests}


def fallback_markdown(fb: Mapping[str, Any]) -> list[str]:
    """:func:`fallback_section`'s JSON as a Markdown section (lines, a blank one last)."""
    lines = ["## Fallback toward the training frequencies: the distribution factor", "",
             "The query questions of the `tail` and `oppo` tests whose answer is a "
             + " or a ".join(fb["attributes"]) + " (material has two values: a wrong one is always the "
             "other). Each cell: of the wrong answers that name another value of the asked attribute, the "
             "share that name a head value (frequent in `long` training; no `tail` object has one), with "
             "their number; a random guess after a failed program is left out (and counted: "
             "\"guessed\"), since no perception chose it. `uniform`: the share a wrong answer drawn uniformly from the other values "
             "would give (mean over the `long` column's wrong answers). `long − bal`: points, with a 95% "
             "paired bootstrap interval over the test's questions. A model that falls back on what "
             "training showed most answers head values more the more its training skewed: the in-domain "
             "generalization paper's finding on its systematic splits, asked here of the committed "
             "distribution pieces. Plot: [distribution/fallback.png](distribution/fallback.png).", ""]
    rows = []
    for test, models in fb["tests"].items():
        for m, r in models.items():
            d = r.get("long_minus_bal")
            u = (r.get("long") or {}).get("uniform")
            rows.append([test, m, *("—" if (r.get(t) or {}).get("share") is None else
                                    f"{pct(r[t]['share'])} ({r[t]['wrong']}"
                                    + (f"; {r[t]['guessed']} guessed" if r[t]["guessed"] else "") + ")"
                                    for t in fb["trains"]),
                         "—" if u is None else pct(u),
                         "—" if d is None else f"{100 * d['diff']:+.1f}" + (
                             "" if d["ci95"] is None else
                             f" [{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}]")])
    lines += md_table(["test", "model", *(f"trained on {t} %" for t in fb["trains"]), "uniform %",
                       "long − bal (points)"], rows)
    lines.append("")
    return lines


def fallback_figure(plt, fallback: Mapping[str, Any]):
    """The figure (drawn with the ``matplotlib.pyplot`` module ``plt``) of the head share of the
    wrong shape and colour answers per model and training variant, one panel per test, with a
    uniform wrong answer's share (on the ``long`` column's wrong answers) dotted; the models on
    ground-truth programs are left to the table."""
    tests = list(fallback["tests"])
    fig, axes = plt.subplots(1, len(tests), figsize=(5.2 * len(tests), 3.4), squeeze=False)
    trains = fallback["trains"]
    for ax, test in zip(axes[0], tests):
        models = [m for m in fallback["tests"][test] if "+gtprog" not in m]  # the table has those
        w = 0.8 / len(trains)
        for j, t in enumerate(trains):
            xs = [i + (j - (len(trains) - 1) / 2) * w for i in range(len(models))]
            ys = [100 * ((fallback["tests"][test][m].get(t) or {}).get("share") or 0.0) for m in models]
            ax.bar(xs, ys, width=w, label=t, edgecolor="black", linewidth=0.5)
        for i, m in enumerate(models):
            u = (fallback["tests"][test][m].get("long") or {}).get("uniform")
            if u is not None:
                ax.plot([i - 0.45, i + 0.45], [100 * u] * 2, color="black", linestyle=":")
        ax.set_xticks(range(len(models)), models, rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, 122)
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("head share of wrong answers (%)")
        ax.set_title(f"test {test}, wrong shape and colour answers (dotted: a uniform wrong answer)", fontsize=8)
        ax.legend(title="trained on", fontsize=7, title_fontsize=7, loc="upper center", ncol=len(trains))
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------- the in-domain generalization paper
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


def _random_to_systematic(sysr: Mapping[str, Any], split: str) -> dict[str, Any]:
    """Like with like: on the split itself, the same model on the same test images, its accuracy on
    questions about held-out values (OOD) against those about seen ones (ID); the random split's
    overall accuracy stands beside it, not deciding (it is another split's questions). A split whose
    test questions are all held out is set against the random split, as the paper does."""
    name = split.removeprefix("sys-")
    paper = (f"accuracy (R²) drops from the random split to {name} (large on MPI3D; on CelebGlow and "
             f"Shapes3D only slight for composition and interpolation, Schott et al. 2022, Sec. 5)")
    ours, below, above = [], [], []
    for m in MODELS:
        row = (sysr.get(split) or {}).get(m, {})
        ind, ood = _acc(row.get("id")), _acc(row.get("ood"))
        rand = _acc((sysr.get("sys-random") or {}).get(m, {}).get("overall"))
        if ood is None or (ind is None and rand is None):
            continue
        if ind is not None:  # the split's own seen questions: the same model on the same test images
            ref, what = ind, "its ID"
        else:  # a split whose every test question is held out: the random split, the paper's reference
            ref, what = rand, "sys-random (the split has no ID test question)"
        ours.append(f"{m}: {split} OOD {pct(ood[0])} against {what} {pct(ref[0])} "
                    f"({100 * (ood[0] - ref[0]):+.1f} points)"
                    + (f"; sys-random overall {pct(rand[0])}, not deciding" if ind is not None and rand is not None
                       else ""))
        below.append(ood[1][1] < ref[1][0])
        above.append(ood[1][0] > ref[1][1])
    return _by_intervals(f"random_to_{name}", paper, ours, below, above,
                         f"needs {split} with OOD questions, and its ID questions or sys-random")


def _extrapolation_hardest(sysr: Mapping[str, Any]) -> dict[str, Any]:
    paper = "extrapolation is the hardest split"
    ours, hold, oppose = [], [], []
    for m in MODELS:
        ex = _acc((sysr.get("sys-extrapolation") or {}).get(m, {}).get("ood"))
        others = {s: _acc((sysr.get(s) or {}).get(m, {}).get("ood")) for s in SYSTEMATIC[:-1]}
        others = {s: a for s, a in others.items() if a is not None}
        if ex is None or not others:
            continue
        ours.append(f"{m}: OOD sys-extrapolation {pct(ex[0])}, " + ", ".join(
            f"{s} {pct(a[0])}" for s, a in others.items()))
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
    ours = [f"sys-composition scene parser, val (ID) → held-out pairs (OOD): colour {pct(ref['object.color'])} → "
            f"{pct(ood['object.color'])} (drop {100 * drops['color'][0]:.1f} points), shape "
            f"{pct(ref['object.shape'])} → {pct(ood['object.shape'])} (drop {100 * drops['shape'][0]:.1f})"]
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
        ours.append(f"{s}: both wrong on {len(both)} OOD questions, the same wrong answer on {pct(same / len(both))}% "
                    f"[{pct(ci[0])}, {pct(ci[1])}] (chance from their answer frequencies {pct(chance)}%)")
        hold.append(ci[0] > chance)
        oppose.append(ci[1] < chance)
    if not ours:
        return _point("models_agree", paper, "cannot say", [], "needs a systematic piece with both models")
    verdict = "agrees" if all(hold) else "differs" if any(oppose) else "cannot say"
    return _point("models_agree", paper, verdict, ours,
                  "both read the same scene parse, so their agreement is partly shared perception (the paper's "
                  "models were trained apart)")


def generalization_points(report: Mapping[str, Any], cells: Cells) -> list[dict[str, Any]]:
    """The seven points of the module docstring: ``{"key", "paper", "verdict", "ours", "why"}``.
    ``report``: the study's report JSON (its ``systematic`` section and findings); ``cells``: the
    committed predictions, keyed (model, train, test, seed)."""
    sysr = report.get("systematic", {})
    return [*(_random_to_systematic(sysr, s) for s in SYSTEMATIC), _extrapolation_hardest(sysr),
            _modular_factors(sysr), _toward_training(report, cells), _models_agree(cells)]


def generalization_markdown(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The points as a Markdown table (lines)."""
    lines = ["| the in-domain generalization paper | ours | verdict | note |", "|---|---|---|---|"]
    for p in points:
        lines.append(f"| {p['paper']} | {p['ours'] or '—'} | **{p['verdict']}** | {p['why'] or '—'} |")
    return lines


__all__ = ["count_error", "systematic_section", "systematic_markdown", "FALLBACK_TRAINS", "FALLBACK_TESTS",
           "fallback_section", "fallback_markdown", "fallback_figure", "VERDICTS", "generalization_points",
           "generalization_markdown"]
