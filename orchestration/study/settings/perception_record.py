"""The record of the perception schedule check (:mod:`orchestration.study.checks.perception_schedule` runs
it): where it lives under the results and runs roots, the labels of its predictions, the rule that
stops its search for the attribute heads' schedule, and ``perception_schedule.json`` read, counted
and summed up per training variant. Data and arithmetic, beside the plan: the report and the budget
read it without loading the check.

The rule (:func:`schedule_search`): the heads of every training variant of
:data:`PERCEPTION_FACTOR` train again from scratch at each schedule of :data:`LONG_SCHEDULES` in
turn (epochs doubling); the search stops at the first schedule where no variant's val metric
(:data:`PERCEPTION_METRIC`) rises by :data:`PLATEAU_RISE` or more over the schedule before it (the
study's own schedule before the first), or at the last schedule. The schedule chosen is the one of
those tried with the highest end-to-end val accuracy (:data:`SELECT_METRIC`, the record's
``select``: the executors on val questions with the head) averaged over the variants (ties: fewer
epochs), not the one of the highest val metric: a head can name materials better and still
serve the executors worse (its position regressed). One schedule for every variant, so that an
RD, which mixes its training variants' heads, compares two schedules. The report applies the rule
to the record's heads (:func:`record_search`), so a record searched under an earlier rule is read
under this one.
"""
from __future__ import annotations

import math
import os
import statistics
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsvqa.fileio import read_json_record
from orchestration.study.settings.scale_record import machine_seconds, sum_seconds
from orchestration.study.settings.config import StudyError

#: The factor of the check: its training variants' attribute heads are trained on longer schedules.
PERCEPTION_FACTOR = "visual"
#: ``RESULTS/<PERCEPTION_RESULTS>/``: the check's gzipped predictions (``predictions/``, labels
#: :func:`perception_label`) and ``perception_schedule.json``.
PERCEPTION_RESULTS = "perception_schedule"
#: ``RUNS/<PERCEPTION_RUNS>/``: ``heads/<E>ep/<run>/scene_parser/`` (a head of ``E`` epochs on the
#: study run's detector) and ``<E>ep/<run>/`` (the variant run that executes with it).
PERCEPTION_RUNS = "perception-schedule"
#: The val metric the search stops on (:func:`nsvqa.training.scene_parser.crop_accuracy`'s key:
#: object material on the val split's ground-truth crops, a fraction), reported beside the
#: selection metric, and the shape accuracy reported beside both.
PERCEPTION_METRIC = "object.material"
SHAPE_METRIC = "object.shape"
#: The val metric the schedule is chosen on among those tried: P-NSVQA's end-to-end accuracy on
#: the val questions of the head's training variant (the run's detector and the head as trained,
#: ground-truth programs, the first ``e2e_eval_images`` val images; the head's ``final`` key, as
#: :mod:`nsvqa.training.scene_parser` logs it), a fraction averaged over the variants.
SELECT_METRIC = "e2e.pnsvqa.all"
#: A head whose per-epoch val metric stays within ``rise`` over the last this share (or more) of
#: its epochs, and at least two, is flat there, not still rising (:func:`plateau_text`).
FLAT_SHARE = 0.25
#: The longer schedules, in epochs, tried in order (each head trained from scratch).
LONG_SCHEDULES = (6, 12, 24, 48)
#: A rise of the val metric below this (a fraction: 0.5 points) is no rise.
PLATEAU_RISE = 0.005
#: ``budget`` row of the check's hours (issue 64's reruns: :func:`orchestration.study.settings.budget.rerun_hours`).
PERCEPTION_BUDGET_GROUP = "perception schedule check"


def perception_record_path(results: str | os.PathLike) -> Path:
    """``RESULTS/<PERCEPTION_RESULTS>/perception_schedule.json``: the check's record."""
    return Path(results) / PERCEPTION_RESULTS / "perception_schedule.json"


def read_perception_record(results: str | os.PathLike) -> dict[str, Any]:
    """The check's record (:func:`perception_record_path`), ``{}`` when the check has not run.

    Raises:
        StudyError: the file is there but is not a JSON object (the file named).
    """
    return read_json_record(perception_record_path(results), StudyError,
                            "the perception schedule check's heads, runs and their seconds") or {}


def perception_label(model: str, epochs: int) -> str:
    """The label of ``model``'s predictions with attribute heads of ``epochs`` epochs (``pnsvqa.24ep``)."""
    return f"{model}.{int(epochs)}ep"


def parse_perception_label(label: str) -> tuple[str, int] | None:
    """(model, epochs) of a :func:`perception_label`, None for a label of no schedule."""
    model, dot, e = label.rpartition(".")
    if not dot or not model or not e.endswith("ep") or not e[:-2].isdigit():
        return None
    return model, int(e[:-2])


def check_schedules(base: int, schedules: Sequence[int]) -> None:
    """Raise ValueError unless ``schedules`` are one or more epochs, increasing, each above ``base``."""
    order = [base, *schedules]
    if len(order) < 2 or any(b <= a for a, b in zip(order, order[1:])):
        raise ValueError(f"schedules {list(schedules)}: one or more, increasing, each above the study's {base} epochs")


def schedule_search(values: Mapping[int, Mapping[str, float]], base: int, schedules: Sequence[int] = LONG_SCHEDULES,
                    rise: float = PLATEAU_RISE, select: Mapping[int, Mapping[str, float]] | None = None
                    ) -> dict[str, Any]:
    """Where the search for the heads' schedule stands (the module's rule).

    Args:
        values: epochs -> training variant -> the head's val metric the search stops on
            (:data:`PERCEPTION_METRIC`), for ``base`` and for the schedules trained so far (each
            with every variant of ``values[base]``).
        base: the study's schedule (epochs), the first reference.
        schedules: the longer schedules in the order they are tried (increasing, each above ``base``).
        rise: the smallest rise that counts (a fraction).
        select: epochs -> training variant -> the head's selection metric (:data:`SELECT_METRIC`),
            for ``base`` and the schedules tried; the leader is the tried schedule of its highest
            mean. None: ``values`` (chosen on the stopping metric).

    Returns:
        ``{"next": the schedule to train next, or None when the search is over; "tried": the
        schedules of the search so far; "stopped": "plateau" | "cap" | None (not over);
        "leader": the schedule the search would choose now (None before any was tried);
        "chosen": the leader once the search is over, None until then; "mean": epochs -> the
        stopping metric averaged over the variants, for ``base`` and ``tried``; "select_mean":
        the same of the selection metric}``.

    Raises:
        ValueError: ``schedules`` not increasing above ``base``, or a schedule of ``values``
            (of ``select``, for ``base`` and ``tried``) without every variant of ``base``.
    """
    check_schedules(base, schedules)
    variants = sorted(values[base])
    tried: list[int] = []
    stopped, nxt, prev = None, None, base
    for e in schedules:
        if e not in values:
            nxt = e
            break
        missing = [v for v in variants if v not in values[e]]
        if missing:
            raise ValueError(f"{e} epochs: no val metric for {', '.join(missing)}")
        tried.append(e)
        if all(values[e][v] - values[prev][v] < rise for v in variants):
            stopped = "plateau"
            break
        prev = e
    else:
        stopped = "cap"
    mean = {e: statistics.fmean(values[e][v] for v in variants) for e in (base, *tried)}
    chosen_on = values if select is None else select
    for e in (base, *tried):
        missing = [v for v in variants if chosen_on.get(e, {}).get(v) is None]
        if missing:
            raise ValueError(f"{e} epochs: no selection metric for {', '.join(missing)}")
    select_mean = {e: statistics.fmean(chosen_on[e][v] for v in variants) for e in (base, *tried)}
    leader = max(tried, key=lambda e: (select_mean[e], -e)) if tried else None
    return {"next": nxt if not stopped else None, "tried": tried, "stopped": stopped, "leader": leader,
            "chosen": leader if stopped else None, "mean": mean, "select_mean": select_mean}


def record_search(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """:func:`schedule_search` on a record's heads under the record's rule (its ``metric``,
    ``rise``, ``schedules`` and ``base_epochs``; its ``select``, or :data:`SELECT_METRIC` for a
    record written before the rule chose on one), over the schedules every head has: the search
    as the rule in force reads it, whatever the record's own ``search`` says. None without the
    base's heads.

    Raises:
        StudyError: a head of the base or of a schedule tried without its stopping or selection
            metric (``heads.<variant>.<E>.final`` named).
    """
    heads = record.get("heads") or {}
    if "base_epochs" not in record or not heads:
        return None
    base = int(record["base_epochs"])
    metric, select = record.get("metric", PERCEPTION_METRIC), record.get("select", SELECT_METRIC)
    schedules = [int(e) for e in record.get("schedules") or LONG_SCHEDULES]
    complete = [e for e in (base, *schedules) if all(str(e) in hs for hs in heads.values())]
    if base not in complete:
        return None

    def finals(key: str) -> dict[int, dict[str, float]]:
        return {e: {v: hs[str(e)].get("final", {}).get(key) for v, hs in heads.items()} for e in complete}

    try:
        return schedule_search(finals(metric), base, schedules, float(record.get("rise", PLATEAU_RISE)),
                               select=finals(select))
    except ValueError as e:
        raise StudyError(f"perception_schedule.json: {e} (heads.<variant>.<E>.final: {metric}, {select})") from None


def flat_tail(curve: Sequence[Mapping[str, float]], metric: str, rise: float, epochs: int) -> int:
    """How many of the last epochs of a head's per-epoch val curve (``curve``: the record's
    ``heads.<variant>.<E>.val``, ``[{"epoch", metric: value}]``) the metric stays within ``rise``
    over (its highest minus its lowest there below ``rise``); 0 where the curve does not end at
    ``epochs`` or lacks the metric."""
    points = [(int(p["epoch"]), p[metric]) for p in curve if p.get(metric) is not None]
    if not points or points[-1][0] != epochs:
        return 0
    n, lo, hi = 0, float("inf"), float("-inf")
    for _, v in reversed(points):
        lo, hi = min(lo, v), max(hi, v)
        if round(hi - lo, 6) >= rise:
            break
        n += 1
    return n


def plateau_text(record: Mapping[str, Any], variant: str) -> str:
    """Where ``variant``'s head stopped rising, in the record's words: after the last schedule tried
    that rose by the record's ``rise`` or more over the one before, where the one after it rose by
    less (``"at 12 epochs (24 adds +0.2 points)"``; a rise that stops and resumes is no plateau).
    Where the last schedule still rose over the one before, its head's per-epoch val curve
    (``heads.<variant>.<E>.val``) decides: flat where the metric stays within ``rise`` over its
    last :data:`FLAT_SHARE` of the epochs or more, and at least two (:func:`flat_tail`;
    ``"flat over the last 18 of its 48 epochs (within 0.5 points; 48 adds +2.4 points over 24)"``),
    else ``"still rising at 48 epochs"``; ``"—"`` before any was tried."""
    heads = record.get("heads", {}).get(variant, {})
    metric, rise = record.get("metric", PERCEPTION_METRIC), float(record.get("rise", PLATEAU_RISE))
    base = int(record["base_epochs"]) if "base_epochs" in record else None
    # the search's schedules, or while it runs those of this variant's heads recorded so far
    tried = (record.get("search") or {}).get("tried") or sorted(int(e) for e in heads if int(e) != base)
    order = [base, *tried] if base is not None else []
    got = [(e, heads[str(e)]["final"].get(metric)) for e in order if str(e) in heads]
    if len(got) < 2 or any(v is None for _, v in got):
        return "—"
    steps = list(zip(got, got[1:]))
    last = max((i for i, ((_, va), (_, vb)) in enumerate(steps) if vb - va >= rise), default=-1)
    if last == len(steps) - 1:
        (a, va), (b, vb) = steps[-1]
        flat = flat_tail(heads[str(b)].get("val") or [], metric, rise, b)
        if flat >= max(2, math.ceil(FLAT_SHARE * b)):
            return (f"flat over the last {flat} of its {b} epochs (within {100 * rise:g} points; {b} adds "
                    f"{100 * (vb - va):+.1f} points over {a})")
        return f"still rising at {b} epochs"
    (a, va), (b, vb) = steps[last + 1]
    return f"at {a} epochs ({b} adds {100 * (vb - va):+.1f} points)"


def perception_seconds(record: Mapping[str, Any], path: str = "perception_schedule.json") -> float:
    """The compute a record accounts for: every head it trained (``heads.<variant>.<E>.seconds``;
    the study's own heads record none), every variant run it executed or trained
    (``runs.<E>.<variant>.seconds``), and every entry of ``other_seconds`` (entered by hand, with
    a ``what``: attempts whose seconds no entry holds).

    Raises:
        StudyError: an entry whose ``seconds`` is not a number (``path`` and the entry named).
    """
    items = [(f"heads.{v}.{e}", h) for v, hs in (record.get("heads") or {}).items() for e, h in hs.items()
             if h.get("seconds") is not None]
    items += [(f"runs.{e}.{v}", r) for e, rs in (record.get("runs") or {}).items() for v, r in rs.items()]
    return sum_seconds(items, record, path)


def perception_summary(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the report shows of a record (None for no record): the schedules compared, how the
    search ended and which schedule the rule chooses (:func:`record_search`; ``recorded_chosen``
    the record's own search's choice, where its rule chose another), the means of the stopping
    and selection metrics per schedule, the torch threads of each base run
    (``runs.<base>.<variant>.threads``), and per training variant the val metrics (stopping,
    shape, selection) of each schedule tried, its plateau (:func:`plateau_text`) and its hours."""
    if not record:
        return None
    search = record_search(record) or {}
    # every schedule whose heads are recorded: the search's so far while it runs
    seen = {int(e) for heads in (record.get("heads") or {}).values() for e in heads}
    order = sorted(seen | ({int(record["base_epochs"])} if "base_epochs" in record else set()))
    metric, select = record.get("metric", PERCEPTION_METRIC), record.get("select", SELECT_METRIC)
    recorded = (record.get("search") or {}).get("chosen")
    base_runs = (record.get("runs") or {}).get(str(record.get("base_epochs")), {})
    variants = {}
    for v, heads in (record.get("heads") or {}).items():
        variants[v] = {"val": {str(e): {k: heads[str(e)]["final"].get(k) for k in (metric, SHAPE_METRIC, select)}
                               for e in order if str(e) in heads},
                       "epochs_logged": {str(e): len(heads[str(e)].get("val") or []) for e in order if str(e) in heads},
                       "plateau": plateau_text(record, v),
                       "hours": round(sum(machine_seconds(h) for h in heads.values() if h.get("seconds") is not None)
                                      / 3600 + sum(machine_seconds(r[v]) for r in (record.get("runs") or {}).values()
                                                   if v in r) / 3600, 2)}
    return {"metric": metric, "select": select, "rise": record.get("rise"), "base_epochs": record.get("base_epochs"),
            "schedules": record.get("schedules"), "tried": search.get("tried") or [], "stopped": search.get("stopped"),
            "chosen": search.get("chosen"),
            "recorded_chosen": recorded if recorded is not None and recorded != search.get("chosen") else None,
            "mean": {str(e): m for e, m in (search.get("mean") or {}).items()},
            "select_mean": {str(e): m for e, m in (search.get("select_mean") or {}).items()},
            "threads": {v: r.get("threads") for v, r in base_runs.items()}, "variants": variants,
            "hours": round(perception_seconds(record) / 3600, 2)}


__all__ = ["PERCEPTION_FACTOR", "PERCEPTION_RESULTS", "PERCEPTION_RUNS", "PERCEPTION_METRIC", "SHAPE_METRIC",
           "SELECT_METRIC", "FLAT_SHARE", "LONG_SCHEDULES", "PLATEAU_RISE", "PERCEPTION_BUDGET_GROUP",
           "check_schedules", "perception_record_path", "read_perception_record", "perception_label",
           "parse_perception_label", "schedule_search", "record_search", "flat_tail", "plateau_text",
           "perception_seconds", "perception_summary"]
