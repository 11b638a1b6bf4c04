"""The perception schedule check's finding and its section of the report, from what the check
committed (:mod:`orchestration.study.perception_schedule` runs it): its predictions
(``RESULTS/perception_schedule/predictions/``, labels ``<model>.<E>ep``) and its record. Beside
:mod:`orchestration.study.findings`, whose rules and intervals it uses; the report adds its row to
the findings (:func:`perception_check`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from nsvqa.artifacts.predictions import CellKey, Prediction, parse_predictions_name, read_predictions
from nsvqa.evaluation.accuracies import accuracy
from nsvqa.evaluation.comparison import rd_bootstrap
from nsvqa.evaluation.degrade import factor_layout, factor_relative_degrade
from nsvqa.evaluation.resampling import N_BOOT, bound_precision, percentile_interval
from orchestration.study.findings import (MODULAR, NON_MODULAR, _ci, _finding, _pct, deciding, level_verdict,
                                          paper_figures, verdict)
from orchestration.study.perception_record import (PERCEPTION_FACTOR, PERCEPTION_RESULTS, parse_perception_label,
                                                   perception_label, perception_summary, read_perception_record)

#: The models whose RDs the finding reports: the paper's modular ones decide, exact inference beside them.
REPORTED = (*MODULAR, "pnsvqa-exact")
KEY = "visual_perception_schedule"


def perception_cells(results: str | Path) -> dict[CellKey, list[list[Prediction]]]:
    """The check's committed predictions, keyed by their cell; empty when it has not run."""
    folder = Path(results) / PERCEPTION_RESULTS / "predictions"
    return {parse_predictions_name(f): [read_predictions(f)] for f in sorted(folder.glob("*.jsonl.gz"))}


def _point_rd(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], label: str, trains, tests):
    acc = {(k.train, k.test): accuracy([p for run in v for p in run]).accuracy for k, v in cells.items()
           if k.model == label}
    return factor_relative_degrade(PERCEPTION_FACTOR, acc, trains, tests) if acc else None


def perception_finding(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], figure: float,
                       study: Mapping[tuple[str, str, str, int], Sequence[Prediction]] | None = None, *,
                       chosen: int | None = None, searching: Sequence[int] | None = None,
                       stopped: str | None = None, non_modular: Sequence[str] = NON_MODULAR,
                       n_boot: int = N_BOOT) -> dict[str, Any]:
    """The modular models' visual RD with the study's attribute heads and with the heads of the
    check's chosen schedule (``cells``: :func:`perception_cells`; the smallest schedule among its
    labels and ``chosen``, by default the largest; pending while ``searching``, the schedules
    tried by a search not over; ``stopped`` "cap" when the search ended at its last schedule, where
    the claim says the heads were trained to the cap rather than to their plateau), each with its
    bootstrap interval and the paired difference of the two (one
    :func:`~nsvqa.evaluation.comparison.rd_bootstrap` draw of the test images for every label and
    for the non-modular models of ``study``, the study's predictions keyed (model, train, test,
    seed): seed 0). Its line says, at each schedule, the status of the paper's level
    "modular RD > ``figure``" (a fraction; :func:`level_verdict` on NSCL's, NS-VQA's and P-NSVQA's
    RD intervals) and of "non-modular more robust" (:func:`verdict` on each modular − non-modular
    RD difference), and whether either changes. Decided as that level at the chosen schedule;
    pending (saying what is missing) until the check has predictions above the study's schedule."""
    trains, tests = factor_layout(PERCEPTION_FACTOR)
    schedules = sorted({p[1] for k in cells if (p := parse_perception_label(k.model)) is not None})
    low, high = (schedules[0], schedules[-1] if chosen is None else chosen) if schedules else (None, None)
    trained = "to the search's last schedule, not all at a plateau" if stopped == "cap" else "to their plateau"
    paper = (f"visual: NSCL, NS-VQA, P-NSVQA RD > {100 * figure:g}% with the attribute heads trained {trained}"
             + (f" ({high} epochs; the study's {low})" if high != low and searching is None else ""))
    decided_by = f"each modular RD's bootstrap interval with the longer heads against the paper's {100 * figure:g}%"
    rds, why = {}, "no predictions"
    for m in REPORTED:
        for s in dict.fromkeys(x for x in (low, high) if x is not None):
            rd = _point_rd(cells, perception_label(m, s), trains, tests)
            if rd is not None and rd.value is not None:
                rds[perception_label(m, s)] = rd.value
            elif rd is not None and s == high:
                why = rd.reason
    if searching is not None or high is None or high == low or not any(perception_label(m, high) in rds
                                                                        for m in MODULAR):
        missing = (f"the perception schedule check's search, not over (heads tried: "
                   f"{', '.join(map(str, searching)) or 'none'} epochs)" if searching is not None else
                   "the perception schedule check (scripts/run_study.py --perception-check; not run yet)"
                   if high is None else f"the perception schedule check's longer heads (only {low} epochs run)"
                   if high == low else f"the modular models' visual RD at {high} epochs, which the check's "
                                       f"predictions do not give ({why})")
        return _finding(KEY, paper, [], [], +1, decided_by, level=True, missing=missing)
    side = {CellKey(m, tr, te): [p] for (m, tr, te, s), p in (study or {}).items()
            if s == 0 and m in non_modular and tr in trains and te in tests}
    nons = [n for n in non_modular if (rd := _point_rd(side, n, trains, tests)) is not None and rd.value is not None]
    reps = rd_bootstrap({**cells, **side}, PERCEPTION_FACTOR, trains, tests, [*rds, *nons], n_boot=n_boot)

    def decides(values):
        return deciding(percentile_interval(values), bound_precision(values))

    ours, level, robust = [], {}, {}
    for s in (low, high):
        have = [perception_label(m, s) for m in MODULAR if perception_label(m, s) in rds]
        level[s] = [None if (ci := decides(reps[a])) is None else [ci[0] - figure, ci[1] - figure] for a in have]
        robust[s] = [decides(reps[a] - reps[n]) for a in have for n in nons]
    for m in REPORTED:
        a, b = perception_label(m, low), perception_label(m, high)
        if b not in rds:
            continue
        text = f"{m} RD {_pct(rds[b])}{_ci(percentile_interval(reps[b]), False)} at {high} epochs"
        if a in rds:
            text += (f", {_pct(rds[a])}{_ci(percentile_interval(reps[a]), False)} at {low}; {high} − {low} "
                     f"{_pct(rds[b] - rds[a], True)}{_ci(percentile_interval(reps[b] - reps[a]))}")
        ours.append(text)

    def change(name: str, statuses: Mapping[int, str]) -> str:
        moved = "unchanged" if statuses[low] == statuses[high] else "changes"
        return f"{name}: {statuses[low]} at {low} epochs, {statuses[high]} at {high} ({moved})"

    lines = [change(f"modular > {100 * figure:g}%", {s: level_verdict(level[s], +1) for s in (low, high)}),
             change(f"non-modular more robust (against {', '.join(nons)})",
                    {s: verdict(robust[s], +1) for s in (low, high)}) if nons else
             "non-modular more robust: no non-modular visual RD to judge against"]
    status = level_verdict(level[high], +1)
    reading = {"reproduced": f"with heads of {high} epochs every modular RD stays above the paper's level",
               "not reproduced": f"with heads of {high} epochs the paper's level is not reached",
               "inconclusive": f"cannot say at {high} epochs"}.get(status, "")
    return _finding(KEY, paper, [reading, "; ".join(lines), *ours], level[high], +1, decided_by, level=True,
                    headline=f"{reading}; {'; '.join(lines)}", basis={"seeds": 1})


def perception_check(report: dict[str, Any], results: str | Path,
                     study: Mapping[tuple[str, str, str, int], Sequence[Prediction]],
                     rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (the findings) with the check's finding (:func:`perception_finding` on ``results``'
    predictions, the study's ``study``) after the visual modular level's row (else last); where the
    check has a record, also its summary in ``report["perception_schedule"]``
    (:func:`~orchestration.study.perception_record.perception_summary`)."""
    record = read_perception_record(results)
    summary = perception_summary(record)
    if summary is not None:
        report["perception_schedule"] = summary
    search = record.get("search") or {}
    tried = sorted({int(e) for hs in (record.get("heads") or {}).values() for e in hs} - {record.get("base_epochs")})
    row = perception_finding(perception_cells(results), paper_figures()["visual_modular_min"] / 100, study,
                             chosen=search.get("chosen"), stopped=search.get("stopped"),
                             searching=tried if record and not search.get("stopped") else None)
    out = [dict(r) for r in rows]
    at = next((i + 1 for i, r in enumerate(out) if r["key"] == "visual_modular_level"), len(out))
    return [*out[:at], row, *out[at:]]


def perception_markdown(report: Mapping[str, Any]) -> list[str]:
    """The report's section on the check (lines; none without a record): how the search ended and
    per scene parser the val metric of each schedule tried, its plateau and its hours."""
    s = report.get("perception_schedule")
    if not s:
        return []
    order = sorted({int(e) for r in s["variants"].values() for e in r["val"]} | {s["base_epochs"]})
    ended = {"plateau": "stopped at a plateau", "cap": "stopped at the last schedule"}
    lines = ["## Perception schedule check: the attribute heads trained longer", "",
             f"The visual factor's attribute heads trained again from scratch on the study runs' detectors, "
             f"schedule after schedule ({', '.join(map(str, s['schedules']))} epochs), until no head's val "
             f"{s['metric']} rose by {100 * s['rise']:g} points or more; the schedule of the highest mean val "
             f"{s['metric']} executes the modular models (the finding on the visual level with longer heads above). "
             f"Search: {ended.get(s['stopped'], 'not over')} after {', '.join(map(str, order[1:])) or 'no longer'} epochs; "
             f"chosen: {s['chosen'] or '—'} epochs; {s['hours']:.1f} hours (`perception_schedule/`).", "",
             "| scene parser | " + " | ".join(f"val {s['metric']} % at {e}" for e in order)
             + " | val object.shape % (study → chosen) | plateau | hours |",
             "|---|" + "---|" * (len(order) + 3)]
    for v, r in s["variants"].items():
        val = r["val"]
        shape = [val.get(str(e), {}).get("object.shape") for e in (s["base_epochs"], s["chosen"])]
        lines.append(f"| {v} | " + " | ".join(_pct(val.get(str(e), {}).get(s["metric"])) for e in order)
                     + f" | {_pct(shape[0])} → {_pct(shape[1])} | {r['plateau']} | {r['hours']:.1f} |")
    return lines + [""]


__all__ = ["KEY", "REPORTED", "perception_cells", "perception_check", "perception_finding", "perception_markdown"]
