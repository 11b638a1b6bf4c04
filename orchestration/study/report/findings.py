"""The paper's findings, each checked against the study's numbers and given a status by a fixed
rule on the intervals that decide it (docs/evaluation.md, "Findings").

Two kinds of claim. A *comparison* is a claim about a sign, A above (or below) B; its intervals
are 95% intervals of A − B (a paired bootstrap over the test questions, Wilson intervals, or a t
interval of a mean error). With every interval on the claimed side it is ``reproduced``; with
every one on the other side ``reversed``; with some on the other side and none on the claimed one
``not reproduced``; with some on the claimed side and some undecided or opposite, or all
undecided, ``inconclusive``. A *level* is a claim about a size the paper gives (an RD above 12%,
about 20%, a gap of 2.96 points); its intervals are our quantity's, set against the paper's
figure: ``reproduced`` when every one lies on the claimed side (or, for "about", holds the
figure), ``not reproduced`` when some lie wholly on the other side and none on the claimed one,
``inconclusive`` otherwise; a level is never "reversed". Without its inputs (a piece not run yet)
a finding is ``pending``. The intervals cover the test questions, and the training seeds where a
cell has several (the in-domain cells; a factor's where every training variant ran them): a finding
whose cells hold one seed says so. The paper's figures come from one cited table,
``data/paper/super_clevr.json``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from executors.io import read_json
from nsvqa.artifacts.predictions import CellKey, Prediction, parse_predictions_name, read_predictions
from nsvqa.evaluation.accuracies import ConceptSplit, accuracy, count_errors, head_tail_accuracy, wilson_interval
from nsvqa.evaluation.comparison import paired_comparison, rd_bootstrap
from nsvqa.evaluation.resampling import N_BOOT, bound_precision, percentile_interval, widen
from nsvqa.evaluation.degrade import factor_layout, factor_relative_degrade
from nsvqa.models import ModelSpec
from orchestration.models import executors, get as get_model
from orchestration.study.settings.scale_record import SCALE_FACTOR, SCALE_RESULTS, parse_scale_label, scale_label

#: The paper's figures the findings test, with where each is printed (one cited table).
PAPER_FILE = Path(__file__).resolve().parents[3] / "data" / "paper" / "super_clevr.json"


def paper_figures(path: str | Path = PAPER_FILE) -> dict[str, float]:
    """Figure name -> value, from the cited table ``path`` (:data:`PAPER_FILE`)."""
    return {k: float(v["value"]) for k, v in read_json(Path(path))["figures"].items()}

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


def level_verdict(intervals: Sequence[Sequence[float] | None], side: int) -> str:
    """The status of a level claim from the 95% intervals of ``ours − the paper's figure``:
    ``side`` +1 claims above, −1 below, 0 about (the interval holds 0)."""
    got = [ci for ci in intervals if ci is not None]
    if not got:
        return "pending"
    if side == 0:
        hold = [ci[0] <= 0 <= ci[1] for ci in got]
        oppose = [not h for h in hold]
    else:
        hold = [(ci[0] > 0) if side > 0 else (ci[1] < 0) for ci in got]
        oppose = [(ci[1] < 0) if side > 0 else (ci[0] > 0) for ci in got]
    if all(hold):
        return "reproduced"
    if any(oppose) and not any(hold):
        return "not reproduced"
    return "inconclusive"


def _pct(x: float | None, signed: bool = False) -> str:
    return "—" if x is None else (f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}")


def _ci(ci: Sequence[float] | None, signed: bool = True) -> str:
    return "" if ci is None else f" [{_pct(ci[0], signed)}, {_pct(ci[1], signed)}]"


def _finding(key: str, paper: str, ours: Sequence[str], intervals, side: int, decided_by: str,
             missing: str = "the pieces it needs", *, level: bool = False, rests_on: str = "—",
             headline: str | None = None, basis: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One finding: ``status`` by :func:`verdict` (or :func:`level_verdict` for a ``level``) on
    ``intervals`` (kept, with ``side`` and ``level``, for the correction: :func:`decide`),
    ``rests_on`` the non-modular side it is judged against, ``headline`` the part of ``ours`` a
    one-line summary shows (default: its first part), ``basis`` what the comparison rests on
    (:func:`qualifiers` reads it: ``non_modular`` models, ``seeds``, ``programs``, ``gt_status``;
    ``cells``, beside ``intervals``: the [training variant, model] cells each interval rests on).
    ``qualifier`` is left empty: :func:`decide` writes it, by one rule, for every finding."""
    status = (level_verdict if level else verdict)(intervals, side)
    parts = [o for o in ours if o]
    pending = status == "pending"
    return {"key": key, "paper": paper,
            "ours": "; ".join(parts) if not pending else f"pending: needs {missing}",
            "headline": (headline or (parts[0] if parts else "")) if not pending else "pending",
            "status": status, "qualifier": "", "decided_by": decided_by, "rests_on": rests_on,
            "intervals": [None if ci is None else [float(ci[0]), float(ci[1])] for ci in intervals],
            "side": side, "level": level, "basis": dict(basis or {})}


_NUMBER = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def qualifiers(row: Mapping[str, Any], corrected: str | None = None) -> str:
    """Every qualifier of a finding, by one rule on what it rests on (``row["basis"]``): one model
    on its non-modular side; the training seeds its compared cells pool (the fewest, where they
    differ: "one training seed", "two training seeds", ...); parsed programs, where the same
    comparison with ground-truth programs reads otherwise; and a status that holds at 95% but not
    after the multiple-comparison correction (``corrected``: the status on the widened intervals).
    Empty for a pending finding."""
    if row["status"] == "pending":
        return ""
    b, out = row.get("basis", {}), []
    side = b.get("non_modular") or []
    if len(side) == 1:
        out.append(f"rests on {side[0]} alone")
    if b.get("seeds"):
        n = int(b["seeds"])
        out.append(f"{_NUMBER.get(n, str(n))} training seed{'s' if n > 1 else ''}")
    if b.get("programs") == "parsed" and b.get("gt_status") not in (None, row["status"]):
        out.append(f"with parsed programs; with ground-truth programs {b['gt_status']}")
    if corrected is not None and corrected != row["status"]:
        out.append(f"at 95% only: {corrected} after the multiple-comparison correction")
    return "; ".join(out)


def deciding_intervals(rows: Sequence[Mapping[str, Any]]) -> int:
    """How many intervals decide the findings ``rows`` (those not pending): the family the
    correction counts."""
    return sum(len([ci for ci in r.get("intervals", []) if ci is not None]) for r in rows if r["status"] != "pending")


def decide(rows: Sequence[Mapping[str, Any]], k: int) -> list[dict[str, Any]]:
    """``rows`` with ``corrected`` (each status on its intervals widened to the Bonferroni level over
    ``k``: :func:`~nsvqa.evaluation.resampling.widen`) and ``qualifier`` (:func:`qualifiers`)."""
    out = []
    for r in rows:
        r = dict(r)
        if r["status"] != "pending" and r.get("intervals"):
            wide = [widen(ci, k) for ci in r["intervals"]]
            r["corrected"] = (level_verdict if r.get("level") else verdict)(wide, r["side"])
        else:
            r["corrected"] = r["status"]
        r["qualifier"] = qualifiers(r, r["corrected"])
        out.append(r)
    return out


def deciding(ci: Sequence[float] | None, precision: float | None) -> list[float] | None:
    """A bootstrap interval as it decides a status: widened by the Monte-Carlo error of its bounds
    (``precision``, :func:`~nsvqa.evaluation.resampling.bound_precision`), so that a bound counts on
    a side of 0 only when it clears it by more than another bootstrap seed could move it."""
    if ci is None:
        return None
    p = precision or 0.0
    return [ci[0] - p, ci[1] + p]


def _seeds(report: Mapping[str, Any], factor: str, models: Sequence[str]) -> int:
    """The fewest training seeds among ``models``' RDs on ``factor`` (the report's ``seeds`` of each:
    those pooled on every training variant; one where it has none)."""
    ms = report["factors"].get(factor, {}).get("models", {})
    return min((len(ms[m].get("seeds") or [0]) for m in models if m in ms), default=1)


def _rd_ci(report: Mapping[str, Any], factor: str, model: str) -> Sequence[float] | None:
    """``model``'s RD interval on ``factor`` as it decides (:func:`deciding`); None without an RD."""
    m = report["factors"].get(factor, {}).get("models", {}).get(model)
    return None if m is None or m.get("rd") is None else deciding(m.get("rd_ci95"), m.get("rd_precision"))


#: The modular models that execute programs, and their ground-truth-program twins.
GT_TWIN = {m: ModelSpec(m, gt_programs=True).label for m in executors(gt_programs=False)}


def _level_rds(report, key, paper, factor, models, figure, side, judged: "_Side | None" = None) -> dict[str, Any]:
    """A level claim on the RDs of ``models``: each RD's interval against ``figure`` (a fraction)."""
    rests_on = _judged(report, factor, judged)

    def shifted(ms):
        cis = [_rd_ci(report, factor, m) for m in ms]
        return [None if ci is None else [ci[0] - figure, ci[1] - figure] for ci in cis]

    parsed = any(m in GT_TWIN for m in models)
    gt = [GT_TWIN.get(m, m) for m in models]
    gt_status = level_verdict(shifted(gt), side) if parsed and any(_rd_ci(report, factor, m) for m in GT_TWIN.values()) \
        else None
    return _finding(key, paper, [_rds(report, factor, models)], shifted(models), side,
                    f"each RD's bootstrap interval against the paper's {100 * figure:g}%",
                    missing=f"every training variant of the {factor} factor", level=True, rests_on=rests_on,
                    basis={"non_modular": _judged_models(report, factor, judged),
                           "seeds": _seeds(report, factor, [m for m in models if _rd_ci(report, factor, m)]),
                           "programs": "parsed" if parsed else None, "gt_status": gt_status,
                           "cells": [_trained_cells(report, factor, [m]) for m in models]})


def non_modular_side(report: Mapping[str, Any], models: Sequence[str] = ("film", "mdetr"),
                     label: str = "paper-recipe") -> str:
    """Which non-modular models a finding is judged against, each with its image margin in domain
    (points over the question-only model) and, where scored, its image dependence: a reader sees
    whether the side that looks robust sees the image."""
    rows = {r["model"]: r for r in report.get("in_domain", [])}
    out = []
    for m in models:
        r = rows.get(m, {})
        bits = [] if r.get("image_margin") is None else [f"image margin {100 * r['image_margin']:+.1f}"]
        if r.get("image_dependence") is not None:
            bits.append(f"image dependence {100 * r['image_dependence']:+.1f}")
        seen = perception_of(m)
        out.append(f"{m}{f' [{seen}]' if seen else ''} ({', '.join(bits)})" if bits else m)
    return f"{label} " + ", ".join(out) if out else "—"


def _declared(label: str, trait: str, default: Any) -> Any:
    """A trait the class of the model ``label`` names declares (``default``: not a registered model)."""
    try:
        return getattr(get_model(ModelSpec.from_label(label).name), trait)
    except (KeyError, ValueError):
        return default


def perception_of(model: str) -> str:
    """What ``model`` sees the image through, as its class declares it (empty: nothing to say)."""
    return _declared(model, "perception", "")


def shares_modular_perception(model: str) -> bool:
    """``model``'s class declares that it reads the modular pipeline's own scene parser."""
    return _declared(model, "shares_modular_perception", False)


def _rd_pairs(report: Mapping[str, Any], factor: str, pairs: Sequence[tuple[str, str]]):
    """(A − B text, interval) of the RD comparisons of ``factor`` among ``pairs``, in their order."""
    return [(text, ci) for text, ci, _ in _rd_pairs_of(report, factor, pairs)]


def _rd_pairs_of(report: Mapping[str, Any], factor: str, pairs: Sequence[tuple[str, str]]):
    """:func:`_rd_pairs` with the (A, B) of each comparison made."""
    comps = {(c["a"], c["b"]): c for c in report["factors"].get(factor, {}).get("rd_comparisons", [])}
    out = []
    for a, b in pairs:
        c = comps.get((a, b))
        if c is not None:
            out.append((f"{a} − {b} {_pct(c['diff'], True)}{_ci(c['ci95'])}", deciding(c["ci95"], c.get("precision")),
                        (a, b)))
    return out


def _trained_cells(report: Mapping[str, Any], factor: str, models: Sequence[str]) -> list[list[str]]:
    """The (training variant, model) cells an RD of ``models`` on ``factor`` is trained in."""
    return [[t, m] for m in models for t in report["factors"].get(factor, {}).get("train_variants", [])]


def _rds(report: Mapping[str, Any], factor: str, models: Sequence[str]) -> str:
    """The RDs of ``models`` with their intervals, and which of them have none yet (a training
    variant of theirs not run): a finding decided without a model the paper names says so."""
    ms = report["factors"].get(factor, {}).get("models", {})
    have = [m for m in models if m in ms and ms[m]["rd"] is not None]
    text = "RD " + ", ".join(f"{m} {_pct(ms[m]['rd'])}{_ci(ms[m].get('rd_ci95'), False)}" for m in have)
    missing = [m for m in models if m not in have]
    return text + (f" (no RD for {', '.join(missing)}: not every training variant run)" if missing else "")


class _Side:
    """The non-modular models a run of :func:`findings` judges against, and what to call them."""

    def __init__(self, models: Sequence[str], label: str):
        self.models, self.label = tuple(models), label


def _judged_models(report: Mapping[str, Any], factor: str, judged: "_Side | None") -> list[str] | None:
    """The models of the non-modular side with an RD on ``factor`` (None: no side judged)."""
    if judged is None:
        return None
    return [m for m in judged.models if _rd_ci(report, factor, m) is not None]


def _judged(report: Mapping[str, Any], factor: str, judged: "_Side | None") -> str:
    """The non-modular side of a finding on ``factor``: the side's models with an RD there."""
    have = _judged_models(report, factor, judged)
    return non_modular_side(report, have, judged.label) if have else "—"


def _rd_finding(report, key, paper, factor, pairs, side, models, judged: "_Side | None" = None) -> dict[str, Any]:
    rests_on = _judged(report, factor, judged)
    made = _rd_pairs_of(report, factor, pairs)
    got = [(t, ci) for t, ci, _ in made]
    parsed = any(m in GT_TWIN for pair in pairs for m in pair)
    gt_pairs = _rd_pairs(report, factor, [(GT_TWIN.get(a, a), GT_TWIN.get(b, b)) for a, b in pairs]) if parsed else []
    return _finding(key, paper, [_rds(report, factor, models), "; ".join(t for t, _ in got)],
                    [ci for _, ci in got], side, "paired bootstrap of the RD differences (points)",
                    missing=f"every training variant of the {factor} factor", rests_on=rests_on,
                    headline="; ".join(t for t, _ in got) or None,
                    basis={"non_modular": _judged_models(report, factor, judged),
                           "seeds": _seeds(report, factor, [m for _, _, ab in made for m in ab]),
                           "programs": "parsed" if parsed else None,
                           "gt_status": verdict([ci for _, ci in gt_pairs], side) if gt_pairs else None,
                           "cells": [_trained_cells(report, factor, ab) for _, _, ab in made]})


def findings(report: Mapping[str, Any], cells: Cells, default: str = "mid",
             scale: Mapping[CellKey, Sequence[Sequence[Prediction]]] | None = None, *,
             non_modular: Sequence[str] = NON_MODULAR, label: str = "paper-recipe") -> list[dict[str, Any]]:
    """Every finding of the paper the issue lists, with ours and its status: ``{"key", "paper",
    "ours", "status", "qualifier", "decided_by", "rests_on"}``. ``report``: the study's report JSON
    (its factors' RDs, intervals and comparisons, the in-domain rows, the systematic section);
    ``cells``: the committed predictions, keyed (model, train, test, seed); ``scale``: the
    redundancy scale check's (:func:`scale_cells`; None or empty: not run); ``non_modular``: the
    models that stand for the paper's FiLM and mDETR (``label`` names them in ``rests_on``)."""
    paper = paper_figures()
    NON = tuple(non_modular)
    judged = _Side(NON, label)
    side = non_modular_side(report, NON, label)
    # in domain: every training seed of the default variant a model has (a two-level bootstrap)
    dom: dict[str, list[Sequence[Prediction]]] = {}
    dom_seeds: dict[str, list[int]] = {}
    for (m, tr, te, s), p in sorted(cells.items(), key=lambda kv: kv[0][3]):
        if tr == te == default:
            dom.setdefault(m, []).append(p)
            dom_seeds.setdefault(m, []).append(s)

    out = [_in_domain_modular(paper, dom, dom_seeds, default, NON, side),
           *_in_domain_pnsvqa(report, paper, cells, default, dom_seeds)]
    out += _rd_findings(report, paper, cells, scale, NON, judged, side)
    return out


def _in_domain_modular(paper: Mapping[str, Any], dom: Mapping[str, list[Sequence[Prediction]]],
                       dom_seeds: Mapping[str, list[int]], default: str, NON: tuple[str, ...],
                       side: Mapping[str, Any]) -> dict[str, Any]:
    """The finding that the modular models beat the non-modular ones ``NON`` in domain (``dom``: each
    model's predictions on ``default`` per training seed, ``dom_seeds`` those seeds)."""
    def paired(a, b):
        return paired_comparison(dom[a], dom[b]) if a in dom and b in dom else None

    comps = [(a, b, paired(a, b)) for a in MODULAR for b in NON]
    comps = [c for c in comps if c[2] is not None]
    acc = {m: sum(accuracy(r).accuracy for r in dom[m]) / len(dom[m]) for m in (*MODULAR, *NON) if m in dom}
    worst = min(comps, key=lambda c: c[2]["diff"], default=None)
    seeds_of = lambda ms: min((len(dom[m]) for m in ms if m in dom), default=1)  # noqa: E731
    return _finding(
        "in_domain_modular", f"modular > non-modular in domain (FiLM {paper['in_domain_film']:g}, "
                             f"mDETR {paper['in_domain_mdetr']:g}, the modular ones higher)",
        [", ".join(f"{m} {_pct(a)}" + (f" (mean of seeds {', '.join(map(str, dom_seeds[m]))})"
                                       if len(dom[m]) > 1 else "") for m, a in acc.items()),
         "" if worst is None else f"smallest gap {worst[0]} − {worst[1]} {_pct(worst[2]['diff'], True)}"
                                  f"{_ci(worst[2]['ci95'])}"],
        [deciding(c[2]["ci95"], c[2]["precision"]) for c in comps], +1,
        "paired bootstrap (images; training seeds where a cell has several) of "
                                           "each modular − non-modular accuracy difference",
        rests_on=side, basis={"non_modular": [m for m in NON if m in dom], "seeds": seeds_of((*MODULAR, *NON)),
                              "precision": max((c[2]["precision"] or 0 for c in comps), default=None),
                              "cells": [[[default, a], [default, b]] for a, b, _ in comps]})


def _in_domain_pnsvqa(report: Mapping[str, Any], paper: Mapping[str, Any], cells: Cells, default: str,
                      dom_seeds: Mapping[str, list[int]]) -> list[dict[str, Any]]:
    """The findings that P-NSVQA beats NS-VQA in domain, and by the paper's gap, over the training
    seeds both have on ``default`` (``dom_seeds``: each model's), with the mechanism seed by seed."""
    seeds = [s for s in dom_seeds.get("pnsvqa", []) if s in dom_seeds.get("nsvqa", [])]
    per_seed = []
    for s in seeds:
        a, b = cells.get(("pnsvqa", default, default, s)), cells.get(("nsvqa", default, default, s))
        per_seed.append((s, a, b, paired_comparison([a], [b])))
    pooled = paired_comparison([p for _, p, _, _ in per_seed], [q for _, _, q, _ in per_seed]) if per_seed else None
    # the mechanism first: NS-VQA's guesses follow failed executions; on the questions it answers
    mech, guessed = [], 0
    for s, a, b, c in per_seed:
        ran = {p.question_index for p in b if not p.guessed}
        nb = accuracy(b)
        guessed += nb.n_guessed
        on_ran = paired_comparison([[p for p in a if p.question_index in ran]],
                                   [[p for p in b if p.question_index in ran]])
        failed = sum(p.guessed and p.execution_error for p in b)
        mech.append(f"seed {s}: {nb.n_guessed} NS-VQA guesses, {failed} of them after a failed execution; on the "
                    f"{len(ran)} questions its program answers, P-NSVQA − NS-VQA {_pct(on_ran['diff'], True)}"
                    f"{_ci(on_ran['ci95'])}" if on_ran else "")
    spread = ""
    if len(per_seed) > 1:  # the paper's ± is the standard deviation over its 3 seeds
        sd = {m: report.get("seeds", {}).get(m, {}) for m in ("pnsvqa", "nsvqa")}
        if all(v.get("std") is not None for v in sd.values()):
            spread = (f"over seeds {', '.join(str(s) for s, *_ in per_seed)}: pnsvqa {_pct(sd['pnsvqa']['mean'])} "
                      f"± {100 * sd['pnsvqa']['std']:.2f}, nsvqa {_pct(sd['nsvqa']['mean'])} ± "
                      f"{100 * sd['nsvqa']['std']:.2f} (standard deviation; the paper's ± "
                      f"{paper['in_domain_std_pnsvqa']:.2f} and ± {paper['in_domain_std_nsvqa']:.2f})")
    exact = _finding(
        "in_domain_pnsvqa", f"P-NSVQA > NS-VQA in domain (+{paper['in_domain_pnsvqa_gap']:g}; "
                            f"±{paper['in_domain_std_pnsvqa']:.2f} / ±{paper['in_domain_std_nsvqa']:.2f} over 3 seeds)",
        [*mech,
         "" if pooled is None else f"over seeds {', '.join(map(str, seeds))}: {_pct(pooled['acc_a'])} vs "
                                   f"{_pct(pooled['acc_b'])}, {_pct(pooled['diff'], True)}{_ci(pooled['ci95'])}",
         spread],
        [] if pooled is None else [deciding(pooled["ci95"], pooled["precision"])], +1,
        "paired bootstrap of P-NSVQA − NS-VQA over seeds and images",
        headline=None if pooled is None else f"{_pct(pooled['diff'], True)}{_ci(pooled['ci95'])} over "
                                             f"{len(seeds)} seeds; on the questions NS-VQA's programs answer "
                                             f"{mech[0].split('P-NSVQA − NS-VQA ')[-1] if mech else '—'} (seed "
                                             f"{seeds[0] if seeds else '—'})",
        basis={"seeds": len(per_seed), "precision": None if pooled is None else pooled["precision"]})
    gap = paper["in_domain_pnsvqa_gap"] / 100
    return [exact, _finding(
        "in_domain_pnsvqa_gap", f"P-NSVQA − NS-VQA in domain ≈ +{paper['in_domain_pnsvqa_gap']:g} points",
        ["" if pooled is None else f"gap {_pct(pooled['diff'], True)}{_ci(pooled['ci95'])} over seeds "
                                   f"{', '.join(map(str, seeds))}; NS-VQA's {guessed} guesses on failed programs "
                                   f"widen it (seed by seed above)"],
        [] if pooled is None or pooled["ci95"] is None else
        [[x - gap for x in deciding(pooled["ci95"], pooled["precision"])]], 0,
        f"paired bootstrap of P-NSVQA − NS-VQA over seeds and images against the paper's "
        f"+{paper['in_domain_pnsvqa_gap']:g}", level=True, basis={"seeds": len(per_seed)})]


def _rd_findings(report: Mapping[str, Any], paper: Mapping[str, Any], cells: Cells,
                 scale: Mapping[CellKey, Sequence[Sequence[Prediction]]] | None, NON: tuple[str, ...],
                 judged: _Side, side: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Table 2's findings: each factor's RDs, modular against the non-modular models ``NON``, the
    scale check's, the tail's, the best of the factors and the systematic splits'."""
    out = []
    mod_vs = [(a, b) for a in MODULAR for b in NON]
    red = _rd_finding(report, "redundancy", "redundancy: modular RD < 2%, non-modular ≈ 20%", "redundancy",
                      mod_vs, -1, (*MODULAR, *NON), judged=judged)
    gt_models = [ModelSpec(name=a, gt_programs=True).label for a in ("nsvqa", "pnsvqa")]
    gt = _rd_pairs(report, "redundancy", [(a, b) for a in gt_models for b in NON])
    if gt and red["status"] != "pending":
        red["ours"] += (f"; with ground-truth programs {_rds(report, 'redundancy', gt_models)}"
                        f", {'; '.join(t for t, _ in gt)}")
    out.append(red)
    out.append(_level_rds(report, "redundancy_modular_level", "redundancy: modular RD < 2%", "redundancy",
                          MODULAR, paper["redundancy_modular_max"] / 100, -1))
    out.append(_level_rds(report, "redundancy_nonmodular_level", "redundancy: non-modular RD ≈ 20%", "redundancy",
                          NON, paper["redundancy_nonmodular"] / 100, 0, judged=judged))
    out.append(scale_finding(scale or {}, paper["redundancy_modular_max"] / 100))
    out.append(_rd_finding(report, "visual", "visual: non-modular more robust than modular (RD)",
                           "visual", mod_vs, +1, (*MODULAR, *NON), judged=judged))
    out.append(_level_rds(report, "visual_nonmodular_level", "visual: FiLM, mDETR RD < 10%", "visual",
                          NON, paper["visual_nonmodular_max"] / 100, -1, judged=judged))
    out.append(_level_rds(report, "visual_modular_level", "visual: NSCL, NS-VQA, P-NSVQA RD > 12%", "visual",
                          MODULAR, paper["visual_modular_min"] / 100, +1))
    out.append(_rd_finding(report, "visual_pnsvqa", f"visual: P-NSVQA's RD {paper['visual_pnsvqa_gain']:g} points "
                           "below NS-VQA's", "visual", [("pnsvqa", "nsvqa")], -1, ("pnsvqa", "nsvqa")))
    out.append(_level_rds(report, "distribution_prior_modular", "distribution: NSCL's and NS-VQA's RD > 20% "
                          "(every prior model's)", "distribution", ("nscl", "nsvqa"),
                          paper["distribution_prior_min"] / 100, +1))
    out.append(_level_rds(report, "distribution_prior_nonmodular", "distribution: FiLM's and mDETR's RD > 20% "
                          "(every prior model's)", "distribution", NON, paper["distribution_prior_min"] / 100,
                          +1, judged=judged))
    out.append(_rd_finding(report, "distribution_nsvqa", "distribution: NS-VQA best of the prior models (by > 7.5)",
                           "distribution", [*(("nsvqa", b) for b in NON), ("nsvqa", "nscl")], -1,
                           ("nsvqa", *NON, "nscl"), judged=judged))
    out.append(_rd_finding(report, "distribution_pnsvqa", "distribution: P-NSVQA's RD below NS-VQA's (21 → 14)",
                           "distribution", [("pnsvqa", "nsvqa")], -1, ("pnsvqa", "nsvqa")))
    out.append(_tail_finding(cells))
    comp = _rd_finding(report, "compositionality", "compositionality: P-NSVQA beats the non-modular models",
                       "compositionality", [("pnsvqa", b) for b in NON], -1,
                       ("pnsvqa", *NON), judged=judged)
    out.append(comp)
    out.append(_rd_finding(report, "compositionality_nonmodular", "compositionality: the non-modular models beat "
                           "NSCL and NS-VQA", "compositionality",
                           [(a, b) for a in ("nscl", "nsvqa") for b in NON], +1,
                           ("nscl", "nsvqa", *NON), judged=judged))
    out.append(_best_of_factors(report, paper, side, NON))
    out.append(_systematic_finding(report, cells))
    return out


def scale_cells(results: str | Path) -> dict[CellKey, list[list[Prediction]]]:
    """The redundancy scale check's committed predictions (``RESULTS/redundancy_scale/predictions/``,
    labels ``<model>.<k>x``), keyed by their cell; empty when the check has not run."""
    folder = Path(results) / SCALE_RESULTS / "predictions"
    return {parse_predictions_name(f): [read_predictions(f)] for f in sorted(folder.glob("*.jsonl.gz"))}


def scale_finding(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], figure: float,
                  models: Sequence[str] = ("pnsvqa", "nsvqa"), n_boot: int = N_BOOT) -> dict[str, Any]:
    """P-NSVQA's redundancy RD when its question parser learned from more questions (the scale
    check: labels ``<model>.<k>x``): each model's RD at the smallest and the largest scale with its
    bootstrap interval, and the paired difference of the two (one :func:`rd_bootstrap` draw of the
    test questions for every label). Decided as a level (:func:`level_verdict`) by P-NSVQA's RD
    interval at the largest scale against the paper's ``figure`` (a fraction: modular RD below it):
    wholly above, the reversal survives that scale (``not reproduced``); wholly below, the paper's
    figure is reproduced there; else undecided. Pending without predictions at a scale above 1."""
    trains, tests = factor_layout(SCALE_FACTOR)
    scales = sorted({parsed[1] for k in cells if (parsed := parse_scale_label(k.model)) is not None})
    low, high = (scales[0], scales[-1]) if scales else (1, 10)
    key, paper = "redundancy_scale", f"redundancy: P-NSVQA's reversal at {high}x the questions (modular RD < " \
                                     f"{100 * figure:g}%)"
    decided_by = f"P-NSVQA's RD bootstrap interval at {high}x the questions against the paper's {100 * figure:g}%"
    labels = {(m, s): scale_label(m, s) for m in models for s in (low, high)}
    rds: dict[str, float] = {}
    why = "no predictions"
    for label in dict.fromkeys(labels.values()):
        acc = {(k.train, k.test): accuracy([p for run in v for p in run]).accuracy
               for k, v in cells.items() if k.model == label}
        rd = factor_relative_degrade(SCALE_FACTOR, acc, trains, tests) if acc else None
        if rd is not None and rd.value is not None:
            rds[label] = rd.value
        elif rd is not None and label == labels[("pnsvqa", high)]:
            why = rd.reason
    if high == 1 or labels[("pnsvqa", high)] not in rds:
        missing = ("the redundancy scale check (scripts/run_study.py --scale-check; not run yet)" if not scales else
                   "the redundancy scale check above 1x the questions" if high == 1 else
                   f"P-NSVQA's RD at {high}x the questions, which the scale check's predictions do not give ({why})")
        return _finding(key, paper, [], [], -1, decided_by, level=True, missing=missing)
    reps = rd_bootstrap(cells, SCALE_FACTOR, trains, tests, list(rds), n_boot=n_boot)
    ci = {label: percentile_interval(r) for label, r in reps.items()}
    ours = []
    for m in models:
        a, b = labels[(m, low)], labels[(m, high)]
        if b not in rds:
            continue
        text = f"{m} RD at {high}x {_pct(rds[b])}{_ci(ci[b], False)}"
        if a in rds and low != high:
            text += (f", at {low}x {_pct(rds[a])}{_ci(ci[a], False)}; {high}x − {low}x "
                     f"{_pct(rds[b] - rds[a], True)}{_ci(percentile_interval(reps[b] - reps[a]))}")
        ours.append(text)
    top = deciding(ci[labels[("pnsvqa", high)]], bound_precision(reps[labels[("pnsvqa", high)]]))
    status = level_verdict([None if top is None else [top[0] - figure, top[1] - figure]], -1)
    reading = {"not reproduced": f"the reversal survives at {high}x the questions",
               "reproduced": f"reproduced at {high}x the questions: the reversal was one of scale",
               "inconclusive": f"cannot say at {high}x the questions"}.get(status, "")
    return _finding(key, paper, [reading, *ours], [None if top is None else [top[0] - figure, top[1] - figure]], -1,
                    decided_by, level=True, basis={"seeds": 1})


def _best_of_factors(report: Mapping[str, Any], paper: Mapping[str, float], side: str,
                     non_modular: Sequence[str] = NON_MODULAR) -> dict[str, Any]:
    """P-NSVQA's RD lowest of the paper's models on 3 of the 4 factors: on each factor, P-NSVQA's RD
    against every other model's (paired bootstrap). A factor counts for the claim when every
    difference lies below 0, against it when one lies above."""
    need = int(paper["pnsvqa_best_factors"])
    others = ("nsvqa", "nscl", *non_modular)
    if not any(_rd_ci(report, f, m) is not None for f in report.get("factors", {}) for m in non_modular):
        side = "—"  # no RD of the non-modular side anywhere: it is not judged against them
    best, beaten, undecided, ours = [], [], [], []
    factors = report.get("study", {}).get("factors") or list(report["factors"])
    for f in factors:
        got = _rd_pairs(report, f, [("pnsvqa", o) for o in others])
        if not got:
            continue
        if all(ci is not None and ci[1] < 0 for _, ci in got):
            best.append(f)
        elif any(ci is not None and ci[0] > 0 for _, ci in got):
            beaten.append(f"{f} (" + ", ".join(t for t, ci in got if ci is not None and ci[0] > 0) + ")")
        else:
            undecided.append(f)
    n = len(best) + len(beaten) + len(undecided)
    # as a level of counts: at least `need` factors decided best, against the factors left to reach it
    intervals = [] if n < len(factors) or n == 0 else [
        [len(best) - need + 0.5, len(best) + len(undecided) - need + 0.5]]
    ours = [f"lowest on {len(best)} of {n}: {', '.join(best) or 'none'}",
            f"beaten on {'; '.join(beaten)}" if beaten else "",
            f"undecided on {', '.join(undecided)}" if undecided else ""]
    return _finding("pnsvqa_best", f"P-NSVQA's RD the lowest on {need} of the 4 factors", ours, intervals, +1,
                    "paired RD bootstrap of P-NSVQA against each other model, per factor", level=True,
                    missing="every factor's training variants", rests_on=side,
                    basis={"non_modular": None if side == "—" else list(non_modular),
                           "seeds": min((_seeds(report, f, ("pnsvqa", *others)) for f in factors), default=1),
                           "counts": True})


def _tail_finding(cells: Cells) -> dict[str, Any]:
    """NSCL trained on ``long``: its accuracy on the ``tail`` test variant against the ``long`` one
    (the paper's 60.6% against 91%: its Table 1 cells, which its text calls "the head-tail
    results"), decided by the two Wilson intervals. Beside it, not deciding: the tail-concept
    questions of the ``long`` test against its other questions."""
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
                    missing="the piece trained on long", basis={"seeds": 1, "cells": [[["long", "nscl"]]] * len(intervals)})


def _systematic_finding(report: Mapping[str, Any], cells: Cells) -> dict[str, Any]:
    """Held-out values pulled toward training ones: on sys-composition the scene parser's wrong
    colours of held-out (category, colour) objects land on colours training showed with the
    category more often than a uniform wrong colour would; on sys-extrapolation (counts ≥ 9 held
    out) the count answers on held-out scenes fall further short of the truth than on seen scenes
    (each executor's error on seen scenes is its own bias: the threshold executor undercounts there
    too, so only the excess counts as a pull toward training counts)."""
    from scipy.stats import ttest_ind  # heavy: scipy.stats takes seconds to import, only for this test

    sysr = report.get("systematic", {})
    ours, intervals, rest = [], [], []
    fb = (sysr.get("sys-composition", {}).get("scene parser") or {}).get("fallback") or {}
    if fb.get("wrong_colors") and fb.get("seen_with_category") is not None:
        n = fb["wrong_colors"]
        w = wilson_interval(round(fb["seen_with_category"] * n), n)
        intervals.append([w[0] - fb["uniform"], w[1] - fb["uniform"]])  # above uniform: toward training
        rest.append([["sys-composition", "pnsvqa"]])  # the scene parser of the modular piece
        ours.append(f"sys-composition: {_pct(fb['seen_with_category'])}%{_ci(w, False)} of {n} wrong colours of "
                    f"held-out pairs are colours training showed with the category (uniform {_pct(fb['uniform'])}%)")
    # counts: a pull toward training counts is the held-out error beyond the executor's own bias, so
    # each model's mean count error on held-out scenes is set against its error on seen ones (Welch)
    ex = "sys-extrapolation"
    for model in ("pnsvqa-exact", "pnsvqa", "nsvqa"):
        preds = cells.get((model, ex, ex, 0))
        if preds is None:
            continue
        ood = count_errors(p for p in preds if p.ood and not p.guessed)  # a guess after a failed program: no count
        ind = count_errors(p for p in preds if p.ood is False and not p.guessed)
        rand = cells.get((model, "sys-random", "sys-random", 0))
        rnd = count_errors(p for p in rand if not p.guessed) if rand is not None else []
        # the reference: seen scenes of the split itself where its test has some, else the executor on
        # sys-random (in distribution: its own training split's scenes)
        ref, where = (ind, "seen ones") if len(ind) > 1 else (rnd, "sys-random's (in distribution)")
        if len(ood) > 1 and len(ref) > 1 and len(set(ood) | set(ref)) > 1:
            ci = ttest_ind(ood, ref, equal_var=False).confidence_interval(0.95)
            intervals.append([-float(ci.high), -float(ci.low)])  # further short than in distribution: toward training
            rest.append([[ex, model]] + ([] if ref is ind else [["sys-random", model]]))
            mo, mi = sum(ood) / len(ood), sum(ref) / len(ref)
            ours.append(f"{ex}, {model}: count error on held-out scenes {mo:+.2f} ({len(ood)}), on {where} "
                        f"{mi:+.2f} ({len(ref)}), the difference {mo - mi:+.2f} [{ci.low:+.2f}, {ci.high:+.2f}] "
                        f"(guesses left out)")
    return _finding("systematic", "OOD predictions regress to training frequencies (systematic splits)", ours,
                    intervals, +1, "Wilson interval of the fallback share against uniform; Welch t interval of "
                    "the count error on held-out scenes against seen ones (the executor's own bias removed)",
                    basis={"seeds": 1, "cells": rest},
                    missing="the sys-composition or sys-extrapolation piece" + (
                        " (the same question asked of the distribution factor: \"Fallback toward the training "
                        "frequencies\" below)" if (report.get("fallback") or {}).get("tests") else ""))


def seeing_groups(groups: Mapping[str, Sequence[str]]) -> list[str]:
    """The groups of non-modular models that see, in the config's order: those whose every model's
    class declares what it sees the image through (:func:`perception_of`). Each is judged in a
    column of its own."""
    return [g for g, models in groups.items() if models and all(perception_of(m) for m in models)]


def seeing_sides(groups: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """Each group of :func:`seeing_groups`: ``{"group", "models", "perception": {model: what it sees
    through}, "shares_modular_perception"}`` (every model reads the modular scene parser)."""
    return [{"group": g, "models": list(groups[g]), "perception": {m: perception_of(m) for m in groups[g]},
             "shares_modular_perception": all(map(shares_modular_perception, groups[g]))}
            for g in seeing_groups(groups)]


def with_seeing(rows: Sequence[Mapping[str, Any]],
                seeing: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """``rows`` (the findings judged against the paper-recipe models), each finding that is judged
    against a non-modular side given ``"seeing"``: per group that sees (``seeing``: group -> its
    :func:`findings` with the group's models as ``non_modular``), the same finding's ``status``,
    ``qualifier``, ``ours``, ``headline`` and ``rests_on``, under ``row["seeing"][group]``."""
    by = {g: {r["key"]: r for r in found} for g, found in seeing.items()}
    out = []
    for r in rows:
        r = dict(r)
        cells = {}
        for g, of_group in by.items():
            s = of_group.get(r["key"])
            if s is None or r.get("rests_on", "—") == s.get("rests_on", "—") == "—":
                continue  # judged against no non-modular model on either side
            if s.get("rests_on", "—") != "—":
                cells[g] = {k: s[k] for k in ("status", "qualifier", "ours", "headline", "rests_on", "corrected")
                            if k in s}
            else:  # no model of the group has run where it is decided
                cells[g] = {"status": "pending", "qualifier": "", "ours": "pending: needs the models that see on "
                            "the training variants it is decided on", "headline": "pending", "rests_on": "—"}
        if cells:
            r["seeing"] = cells
        out.append(r)
    return out


def seeing_cell(r: Mapping[str, Any], group: str, full: bool) -> str:
    """The verdict of finding ``r`` against the seeing ``group`` (with its figures when ``full``)."""
    s = (r.get("seeing") or {}).get(group)
    if s is None:
        return "—"
    text = f"**{s['status']}**" + (f" ({s['qualifier']})" if s.get("qualifier") else "")
    if full and s["status"] != "pending":
        text += f": {s['ours']}; against {s['rests_on']}"
    return text


def seeing_header(side: Mapping[str, Any]) -> str:
    """A column's header: the group's models and whose perception they see with."""
    whose = "the modular scene parser's" if side["shares_modular_perception"] else \
        ("its own" if len(side["models"]) == 1 else "their own")
    return f"against {', '.join(side['models'])} ({whose} perception)"


def seeing_sentence(sides: Sequence[Mapping[str, Any]]) -> str:
    """Which non-modular models see, and with whose perception (one sentence; empty: none)."""
    if not sides:
        return ""
    bits = [f"{', '.join(s['models'])} (" + "; ".join(dict.fromkeys(s["perception"].values())) + ")"
            + (", which reads the modular models' own scene parser: its column does not separate reasoning from "
               "perception" if s["shares_modular_perception"] else ", a perception of its own")
            for s in sides]
    return "The non-modular models that see, each judged in a column of its own: " + "; ".join(bits) + "."


def findings_markdown(rows: Sequence[Mapping[str, Any]], sides: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The findings as a Markdown table (lines), a column per group that sees (``sides``:
    :func:`seeing_sides`), and one line on how many intervals decide them."""
    lines = ["| finding (paper) | ours (95% intervals) | status | judged against | "
             + "".join(f"{seeing_header(s)} | " for s in sides) + "decided by |",
             "|---|---|---|---|" + "---|" * len(sides) + "---|"]
    for r in rows:
        status = f"**{r['status']}**" + (f" ({r['qualifier']})" if r.get("qualifier") else "")
        lines.append(f"| {r['paper']} | {r['ours']} | {status} | {r.get('rests_on', '—')} | "
                     + "".join(f"{seeing_cell(r, s['group'], True)} | " for s in sides) + f"{r['decided_by']} |")
    lines += ["", correction_line(rows)]
    return lines


def correction_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on the multiple-comparison correction the findings ``rows`` carry (``k`` and
    the replicates are in each row's ``correction``)."""
    c = next((r["correction"] for r in rows if r.get("correction")), None)
    if c is None:
        return ""
    return (f"Multiple comparisons: {c['findings']} findings (and their judgements against the models that see) "
            f"are decided on {c['k']} 95% intervals; each status is also judged on its intervals widened to the "
            f"Bonferroni level over {c['k']} ({100 * (1 - 0.05 / c['k']):.3f}%, a normal approximation about each "
            f"interval's midpoint), and a status that holds at 95% but not there says so (\"at 95% only\"). "
            f"Bootstrap intervals draw images (and training seeds where a cell has several) with "
            f"{c['n_boot']:,} replicates" + ("." if c["precision"] is None else
                                             f"; every bound lies within {100 * c['precision']:.2f} point of its limit."))


def decide_all(rows: Sequence[Mapping[str, Any]], seeing: Mapping[str, Sequence[Mapping[str, Any]]], *,
               n_boot: int, precision: float | None) -> list[dict[str, Any]]:
    """The findings ``rows`` and their judgements against each group that sees (``seeing``: group ->
    its findings; empty: none) decided together: one correction over every interval that decides
    any, then merged (:func:`with_seeing`). ``n_boot`` and ``precision`` (the largest Monte-Carlo
    error of a bound) are recorded in each row's ``correction``."""
    k = deciding_intervals([r for r in rows if not r.get("basis", {}).get("counts")])
    for found in seeing.values():
        k += deciding_intervals([r for r in found if r.get("rests_on", "—") != "—"
                                 and not r.get("basis", {}).get("counts")])
    k = max(k, 1)
    main = [_decided(r, k) for r in rows]
    merged = with_seeing(main, {g: [_decided(r, k) for r in found] for g, found in seeing.items()})
    decided = sum(r["status"] != "pending" for r in main)
    for r in merged:
        r["correction"] = {"k": k, "findings": decided, "n_boot": n_boot, "precision": precision}
    return merged


def _decided(r: Mapping[str, Any], k: int) -> dict[str, Any]:
    return decide([r], k)[0] if not r.get("basis", {}).get("counts") else {**r, "corrected": r["status"],
                                                                          "qualifier": qualifiers(r)}


__all__ = ["PAPER_FILE", "STATUSES", "correction_line", "decide", "decide_all", "deciding_intervals", "findings",
           "deciding", "findings_markdown", "perception_of", "qualifiers", "shares_modular_perception", "with_seeing",
           "seeing_groups", "seeing_sides", "seeing_cell", "seeing_header", "seeing_sentence", "level_verdict",
           "non_modular_side",
           "paper_figures", "scale_cells", "scale_finding", "verdict"]
