"""The perception schedule check's finding and its section of the report, from what the check
committed (:mod:`orchestration.study.checks.perception_schedule` runs it): its predictions
(``RESULTS/perception_schedule/predictions/``, labels ``<model>.<E>ep``) and its record. Beside
:mod:`orchestration.study.report.findings`, whose rules and intervals it uses; the report adds its row to
the findings (:func:`perception_check`).

The comparison of the heads judges the modular models that read the attribute head
(:attr:`nsvqa.models.Model.reads_attribute_head`: NS-VQA, P-NSVQA); NSCL, which learns its concepts
from the detections, reads none, so its difference between two schedules is retraining noise: it
is left out of both verdicts and shown as a control. "Non-modular more robust" is judged against
the non-modular models pooled over the training seeds the study's visual factor pools for them
(its report's ``factors.visual.models.<model>.seeds``), by the main finding's rule
(:func:`~orchestration.study.report.findings.verdict` on each modular − non-modular RD difference).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from nsvqa.artifacts.predictions import CellKey, Prediction, parse_predictions_name, read_predictions
from nsvqa.evaluation.accuracies import accuracy
from nsvqa.evaluation.comparison import rd_bootstrap
from nsvqa.evaluation.degrade import factor_layout, factor_relative_degrade
from nsvqa.evaluation.resampling import N_BOOT, bound_precision, percentile_interval
from orchestration.study.report.findings import (MODULAR, NON_MODULAR, _ci, _declared, _finding, _pct, deciding,
                                                 level_verdict, paper_figures, verdict)
from orchestration.study.settings.perception_record import (PERCEPTION_FACTOR, PERCEPTION_RESULTS,
                                                            parse_perception_label, perception_label,
                                                            perception_summary, read_perception_record)
from orchestration.study.settings.pieces import Piece

#: The models whose RDs the finding reports: the paper's modular ones decide, exact inference beside them.
REPORTED = (*MODULAR, "pnsvqa-exact")
KEY = "visual_perception_schedule"


def perception_cells(results: str | Path) -> dict[CellKey, list[list[Prediction]]]:
    """The check's committed predictions, keyed by their cell; empty when it has not run."""
    folder = Path(results) / PERCEPTION_RESULTS / "predictions"
    return {parse_predictions_name(f): [read_predictions(f)] for f in sorted(folder.glob("*.jsonl.gz"))}


def reads_attribute_head(model: str) -> bool:
    """``model``'s class declares that its answers read the attribute head
    (:attr:`nsvqa.models.Model.reads_attribute_head`)."""
    return _declared(model, "reads_attribute_head", False)


def _answers(preds: Sequence[Prediction]) -> list[tuple[int, str | None]]:
    return sorted((p.question_index, p.prediction) for p in preds)


def same_answers(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], model: str,
                 schedules: Sequence[int]) -> bool | None:
    """Whether ``model`` gives the same answer to every question of every cell with the heads of
    each of ``schedules`` (two or more); None where fewer than two of them have its predictions."""
    by = {e: {(k.train, k.test): [p for run in v for p in run] for k, v in cells.items()
              if k.model == perception_label(model, e)} for e in schedules}
    have = [e for e in schedules if by[e]]
    if len(have) < 2:
        return None
    first = by[have[0]]
    return all(set(by[e]) == set(first) and all(_answers(by[e][c]) == _answers(first[c]) for c in first)
               for e in have[1:])


def base_runs_text(record: Mapping[str, Any], cells: Mapping[CellKey, Sequence[Sequence[Prediction]]],
                   study: Mapping[tuple[str, str, str, int], Sequence[Prediction]],
                   pieces: Sequence[Mapping[str, Any]], models: Sequence[str] = REPORTED, *,
                   short: bool = False) -> str:
    """Which base runs the check's arm at the study's schedule executed, and how they differ from the
    study's committed pieces, from the record and the predictions alone: the torch threads each base
    run trained with (``runs.<base>.<variant>.threads``) against those of the study's modular piece
    of that variant and the record's seed (``pieces``: the report's, ``machine.torch_threads``), and
    how many of the arm's cells (``models`` × the factor's cells) answer otherwise than the
    committed cell of that seed (``study``, keyed (model, train, test, seed)), the cell of the
    largest accuracy difference named. Empty without the record's base runs. ``short``: the clause a
    one-line summary carries, only where the cells differ (else empty)."""
    base, seed = record.get("base_epochs"), int(record.get("seed", 0))
    runs = (record.get("runs") or {}).get(str(base)) or {}
    if not runs:
        return ""
    trains, tests = factor_layout(PERCEPTION_FACTOR)
    mine = {v: r.get("threads") for v, r in sorted(runs.items())}
    names = {Piece(v, seed, "modular", (), ()).name: v for v in mine}
    theirs = {names[p["name"]]: (p.get("machine") or {}).get("torch_threads") for p in pieces if p.get("name") in names}

    def threads(of: Mapping[str, Any]) -> str:
        got = set(of.values())
        if len(got) == 1 and None not in got:
            n = got.pop()
            return f"{n} torch thread{'s' if n != 1 else ''}"
        return "torch threads " + ", ".join(f"{v} {'—' if n is None else n}" for v, n in of.items())

    compared, differ = 0, []
    for m in models:
        for tr in trains:
            for te in tests:
                ours = [p for run in cells.get(CellKey(perception_label(m, base), tr, te), []) for p in run]
                committed = study.get((m, tr, te, seed))
                if not ours or committed is None:
                    continue
                compared += 1
                if _answers(ours) != _answers(committed):
                    differ.append((abs(accuracy(ours).accuracy - accuracy(committed).accuracy), m, tr, te,
                                   accuracy(ours).accuracy, accuracy(committed).accuracy))
    text = (f"the check's {base}-epoch arm executed its own base runs of seed {seed} (record runs.{base}.<variant>), "
            f"trained with "
            f"{threads(mine)}; the study's seed-{seed} modular pieces trained with "
            f"{threads({v: theirs.get(v) for v in mine}) if theirs else 'threads no committed piece records'}")
    if short:
        return "" if not differ else (
            f"its {base}-epoch arm is not the study's pieces' runs ({threads(mine)}, the pieces "
            f"{threads({v: theirs.get(v) for v in mine}) if theirs else 'unrecorded'}; {len(differ)} of "
            f"{compared} cells answer otherwise)")
    if not compared:
        return text + f"; no committed seed-{seed} cell to compare its cells with"
    if not differ:
        return text + f"; all {compared} of its cells answer as the committed seed-{seed} cells (the study's runs)"
    _, m, tr, te, a, b = max(differ)
    return (text + f", so they are not the study's pieces' runs: {len(differ)} of its {compared} cells answer "
                   f"otherwise than the committed seed-{seed} cell (largest: {m} {tr} → {te} {_pct(a)} against "
                   f"{_pct(b)})")


def _point_rd(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], label: str, trains, tests):
    acc = {(k.train, k.test): accuracy([p for run in v for p in run]).accuracy for k, v in cells.items()
           if k.model == label}
    return factor_relative_degrade(PERCEPTION_FACTOR, acc, trains, tests) if acc else None


def perception_finding(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], figure: float,
                       study: Mapping[tuple[str, str, str, int], Sequence[Prediction]] | None = None, *,
                       chosen: int | None = None, searching: Sequence[int] | None = None,
                       stopped: str | None = None, non_modular: Sequence[str] = NON_MODULAR,
                       pooled: Mapping[str, Sequence[int]] | None = None, base_runs: str = "",
                       base_short: str = "", n_boot: int = N_BOOT) -> dict[str, Any]:
    """The modular models' visual RD with the study's attribute heads and with the heads of the
    check's chosen schedule (``cells``: :func:`perception_cells`; the smallest schedule among its
    labels and ``chosen``, by default the largest; pending while ``searching``, the schedules
    tried by a search not over; ``stopped`` "cap" where the search ended at its last schedule,
    which the claim says), each with its bootstrap interval and the paired difference of the two
    (one :func:`~nsvqa.evaluation.comparison.rd_bootstrap` draw of the test images for every label
    and for the non-modular models of ``study``, the study's predictions keyed (model, train, test,
    seed), each pooled over its seeds in ``pooled`` (model -> the training seeds the study's visual
    factor pools for it; default seed 0), so that a cell of several seeds also draws its seeds, as
    the main finding's do).

    Its line says, at each schedule, the status of the paper's level "modular RD > ``figure``" (a
    fraction; :func:`level_verdict` on the RD intervals of the paper's modular models that read the
    attribute head, :func:`reads_attribute_head`: NS-VQA, P-NSVQA) and of "non-modular more robust"
    (the main finding's rule: :func:`verdict` on each such modular − non-modular RD difference),
    and whether either changes. A modular model that reads no attribute head (NSCL) is left out of
    both: its difference between schedules is retraining noise, shown as a control (with whether its
    answers are the same with the heads of every longer schedule executed). ``base_runs``, and
    ``base_short`` for the one-line summary: what :func:`base_runs_text` says of the base runs the
    check executed. Decided as that level at
    the chosen schedule; pending (saying what is missing) until the check has predictions above the
    study's schedule."""
    trains, tests = factor_layout(PERCEPTION_FACTOR)
    schedules = sorted({p[1] for k in cells if (p := parse_perception_label(k.model)) is not None})
    low, high = (schedules[0], schedules[-1] if chosen is None else chosen) if schedules else (None, None)
    readers = [m for m in MODULAR if reads_attribute_head(m)]
    controls = [m for m in REPORTED if not reads_attribute_head(m)]
    capped = "; the search stopped at its last schedule, not every head at a plateau" if stopped == "cap" else ""
    paper = (f"visual: NSCL, NS-VQA, P-NSVQA RD > {100 * figure:g}% with the attribute heads trained longer"
             + (f" ({high} epochs, chosen on end-to-end val accuracy; the study's {low}{capped})"
                if high != low and searching is None else ""))
    decided_by = (f"each RD's bootstrap interval with the longer heads against the paper's {100 * figure:g}%, "
                  f"for the models that read the attribute head")
    rds, why = {}, "no predictions"
    for m in REPORTED:
        for s in dict.fromkeys(x for x in (low, high) if x is not None):
            rd = _point_rd(cells, perception_label(m, s), trains, tests)
            if rd is not None and rd.value is not None:
                rds[perception_label(m, s)] = rd.value
            elif rd is not None and s == high:
                why = rd.reason
    if searching is not None or high is None or high == low or not any(perception_label(m, high) in rds
                                                                        for m in readers):
        missing = (f"the perception schedule check's search, not over (heads tried: "
                   f"{', '.join(map(str, searching)) or 'none'} epochs)" if searching is not None else
                   "the perception schedule check (scripts/run_study.py --perception-check; not run yet)"
                   if high is None else f"the perception schedule check's longer heads (only {low} epochs run)"
                   if high == low else f"the modular models' visual RD at {high} epochs, which the check's "
                                       f"predictions do not give ({why})")
        return _finding(KEY, paper, [], [], +1, decided_by, level=True, missing=missing)
    side: dict[CellKey, list[list[Prediction]]] = {}
    seeds_of = {n: sorted({int(x) for x in (pooled or {}).get(n) or [0]}) for n in non_modular}
    for n in non_modular:
        for tr in trains:
            for te in tests:
                runs = [list(study[(n, tr, te, x)]) for x in seeds_of[n] if (n, tr, te, x) in (study or {})]
                if runs and len(runs) == len(seeds_of[n]):
                    side[CellKey(n, tr, te)] = runs
    nons = [n for n in non_modular if (rd := _point_rd(side, n, trains, tests)) is not None and rd.value is not None]
    reps = rd_bootstrap({**cells, **side}, PERCEPTION_FACTOR, trains, tests, [*rds, *nons], n_boot=n_boot)

    def decides(values):
        return deciding(percentile_interval(values), bound_precision(values))

    ours, level, robust = [], {}, {}
    for s in (low, high):
        have = [perception_label(m, s) for m in readers if perception_label(m, s) in rds]
        level[s] = [None if (ci := decides(reps[a])) is None else [ci[0] - figure, ci[1] - figure] for a in have]
        robust[s] = [decides(reps[a] - reps[n]) for a in have for n in nons]
    for m in REPORTED:
        a, b = perception_label(m, low), perception_label(m, high)
        if b not in rds:
            continue
        text = (f"{m}{' (control)' if m in controls else ''} RD {_pct(rds[b])}"
                f"{_ci(percentile_interval(reps[b]), False)} at {high} epochs")
        if a in rds:
            text += (f", {_pct(rds[a])}{_ci(percentile_interval(reps[a]), False)} at {low}; {high} − {low} "
                     f"{_pct(rds[b] - rds[a], True)}{_ci(percentile_interval(reps[b] - reps[a]))}")
        ours.append(text)

    def change(name: str, statuses: Mapping[int, str]) -> str:
        moved = "unchanged" if statuses[low] == statuses[high] else "changes"
        return f"{name}: {statuses[low]} at {low} epochs, {statuses[high]} at {high} ({moved})"

    def pooled_text(n: str) -> str:
        return f"{n} seed{'s' if len(seeds_of[n]) > 1 else ''} {', '.join(map(str, seeds_of[n]))}" + (
            " pooled" if len(seeds_of[n]) > 1 else "")

    judged = ", ".join(readers)
    lines = [change(f"modular > {100 * figure:g}% ({judged})", {s: level_verdict(level[s], +1) for s in (low, high)}),
             change(f"non-modular more robust ({judged} against {'; '.join(pooled_text(n) for n in nons)}, as the "
                    f"main finding)", {s: verdict(robust[s], +1) for s in (low, high)}) if nons else
             "non-modular more robust: no non-modular visual RD to judge against"]
    notes = []
    for m in [c for c in controls if perception_label(c, high) in rds]:
        longer = [e for e in schedules if e > low]
        same = same_answers(cells, m, longer)
        evidence = ("" if same is None else f" (its answers with the heads of {' and '.join(map(str, longer))} "
                                            f"epochs are {'the same' if same else 'not the same'})")
        notes.append(f"{m} reads no attribute head{evidence}, so it is left out of both verdicts: its {high} − {low} "
                     f"is retraining noise, shown as a control")
    status = level_verdict(level[high], +1)
    reading = {"reproduced": f"with heads of {high} epochs every RD of {judged} stays above the paper's level",
               "not reproduced": f"with heads of {high} epochs the paper's level is not reached ({judged})",
               "inconclusive": f"cannot say at {high} epochs"}.get(status, "")
    return _finding(KEY, paper, [reading, "; ".join(lines), *notes, base_runs, *ours], level[high], +1, decided_by,
                    level=True, headline="; ".join(x for x in (reading, *lines, base_short) if x), basis={"seeds": 1})


def perception_check(report: dict[str, Any], results: str | Path,
                     study: Mapping[tuple[str, str, str, int], Sequence[Prediction]],
                     rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (the findings) with the check's finding (:func:`perception_finding` on ``results``'
    predictions at the schedule the rule chooses,
    :func:`~orchestration.study.settings.perception_record.record_search`, the study's ``study``, each
    non-modular model pooled over the seeds ``report``'s visual factor pools for it) after the
    visual modular level's row (else last); where the check has a record, also its summary in
    ``report["perception_schedule"]``
    (:func:`~orchestration.study.settings.perception_record.perception_summary`, with ``base_runs``:
    :func:`base_runs_text` against ``report["pieces"]``)."""
    record = read_perception_record(results)
    summary = perception_summary(record)
    cells = perception_cells(results)
    base = base_runs_text(record, cells, study, report.get("pieces") or []) if record else ""
    short = base_runs_text(record, cells, study, report.get("pieces") or [], short=True) if record else ""
    if summary is not None:
        report["perception_schedule"] = {**summary, "base_runs": base}
    s = summary or {}
    tried = sorted({int(e) for hs in (record.get("heads") or {}).values() for e in hs} - {record.get("base_epochs")})
    models = ((report.get("factors") or {}).get(PERCEPTION_FACTOR) or {}).get("models") or {}
    row = perception_finding(cells, paper_figures()["visual_modular_min"] / 100, study,
                             chosen=s.get("chosen"), stopped=s.get("stopped"),
                             searching=tried if record and not s.get("stopped") else None,
                             pooled={m: v.get("seeds") or [0] for m, v in models.items()}, base_runs=base,
                             base_short=short)
    out = [dict(r) for r in rows]
    at = next((i + 1 for i, r in enumerate(out) if r["key"] == "visual_modular_level"), len(out))
    return [*out[:at], row, *out[at:]]


def perception_markdown(report: Mapping[str, Any]) -> list[str]:
    """The report's section on the check (lines; none without a record): how the search ended,
    the schedule the rule chose and on what, the base runs it executed, and per scene parser the
    val metrics of each schedule tried (the stopping one and the end-to-end one the schedule is
    chosen on, with their means), its plateau and its hours."""
    s = report.get("perception_schedule")
    if not s:
        return []
    order = sorted({int(e) for r in s["variants"].values() for e in r["val"]} | {s["base_epochs"]})
    ended = {"plateau": "stopped at a plateau", "cap": "stopped at the last schedule"}
    select, mean, smean = s.get("select"), s.get("mean") or {}, s.get("select_mean") or {}
    chosen = s.get("chosen")
    why = ""
    if chosen is not None and str(chosen) in smean:
        others = [e for e in order[1:] if e != chosen and str(e) in smean]
        best = max(others, key=lambda e: smean[str(e)], default=None)
        why = (f" (mean val {select} {_pct(smean[str(chosen)])}%"
               + (f", next {_pct(smean[str(best)])}% at {best}" if best is not None else "")
               + f"; mean val {s['metric']} {_pct(mean.get(str(chosen)))}%)")
    recorded = (f" The record's own search, run under the earlier rule (the highest mean val {s['metric']}), "
                f"chose {s['recorded_chosen']} epochs; the report applies the rule in force to its heads."
                if s.get("recorded_chosen") is not None else "")
    base = f" {s['base_runs'][:1].upper()}{s['base_runs'][1:]}." if s.get("base_runs") else ""
    lines = ["## Perception schedule check: the attribute heads trained longer", "",
             f"The visual factor's attribute heads trained again from scratch on the detectors of the check's base "
             f"runs, schedule after schedule ({', '.join(map(str, s['schedules']))} epochs), until no head's val "
             f"{s['metric']} rose by {100 * s['rise']:g} points or more; of the schedules tried, the one of the "
             f"highest mean val {select} (end-to-end: the executors on val questions with the head; ties: fewer "
             f"epochs) executes the modular models (the finding on the visual level with longer heads above). "
             f"Search: {ended.get(s['stopped'], 'not over')} after {', '.join(map(str, order[1:])) or 'no longer'} "
             f"epochs; chosen: {chosen or '—'} epochs{why}; {s['hours']:.1f} hours (`perception_schedule/`)."
             f"{recorded}{base}", "",
             "| scene parser | " + " | ".join(f"val {s['metric']} % at {e}" for e in order)
             + " | " + " | ".join(f"val {select} % at {e}" for e in order)
             + " | val object.shape % (study → chosen) | plateau | hours |",
             "|---|" + "---|" * (2 * len(order) + 3)]
    for v, r in s["variants"].items():
        val = r["val"]
        shape = [val.get(str(e), {}).get("object.shape") for e in (s["base_epochs"], chosen)]
        lines.append(f"| {v} | " + " | ".join(_pct(val.get(str(e), {}).get(s["metric"])) for e in order)
                     + " | " + " | ".join(_pct(val.get(str(e), {}).get(select)) for e in order)
                     + f" | {_pct(shape[0])} → {_pct(shape[1])} | {r['plateau']} | {r['hours']:.1f} |")
    if mean or smean:
        lines.append("| mean | " + " | ".join(_pct(mean.get(str(e))) for e in order)
                     + " | " + " | ".join(_pct(smean.get(str(e))) for e in order) + " | | | |")
    return lines + [""]


__all__ = ["KEY", "REPORTED", "base_runs_text", "perception_cells", "perception_check", "perception_finding",
           "perception_markdown", "reads_attribute_head", "same_answers"]
