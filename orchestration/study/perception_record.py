"""The record of the perception schedule check (:mod:`orchestration.study.perception_schedule` runs
it): where it lives under the results and runs roots, the labels of its predictions, the rule that
stops its search for the attribute heads' schedule, and ``perception_schedule.json`` read, counted
and summed up per training variant. Data and arithmetic, beside the plan: the report and the budget
read it without loading the check.

The rule (:func:`schedule_search`): the heads of every training variant of
:data:`PERCEPTION_FACTOR` train again from scratch at each schedule of :data:`LONG_SCHEDULES` in
turn (epochs doubling); the search stops at the first schedule where no variant's val metric
(:data:`PERCEPTION_METRIC`) rises by :data:`PLATEAU_RISE` or more over the schedule before it (the
study's own schedule before the first), or at the last schedule. The schedule chosen is the one of
those tried with the highest val metric averaged over the variants (ties: fewer epochs): one
schedule for every variant, so that an RD, which mixes its training variants' heads, compares two
schedules.
"""
from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsvqa.fileio import read_json_record
from orchestration.study.scale_record import machine_seconds, sum_seconds
from orchestration.study.study_config import StudyError

#: The factor of the check: its training variants' attribute heads are trained on longer schedules.
PERCEPTION_FACTOR = "visual"
#: ``RESULTS/<PERCEPTION_RESULTS>/``: the check's gzipped predictions (``predictions/``, labels
#: :func:`perception_label`) and ``perception_schedule.json``.
PERCEPTION_RESULTS = "perception_schedule"
#: ``RUNS/<PERCEPTION_RUNS>/``: ``heads/<E>ep/<run>/scene_parser/`` (a head of ``E`` epochs on the
#: study run's detector) and ``<E>ep/<run>/`` (the variant run that executes with it).
PERCEPTION_RUNS = "perception-schedule"
#: The val metric the schedule is chosen on (:func:`nsvqa.training.scene_parser.crop_accuracy`'s
#: key: object material on the val split's ground-truth crops, a fraction), and the one reported beside it.
PERCEPTION_METRIC = "object.material"
SHAPE_METRIC = "object.shape"
#: The longer schedules, in epochs, tried in order (each head trained from scratch).
LONG_SCHEDULES = (6, 12, 24, 48)
#: A rise of the val metric below this (a fraction: 0.5 points) is no rise.
PLATEAU_RISE = 0.005
#: ``budget`` row of the check's hours (issue 64's reruns: :func:`orchestration.study.cost.rerun_hours`).
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
                    rise: float = PLATEAU_RISE) -> dict[str, Any]:
    """Where the search for the heads' schedule stands (the module's rule).

    Args:
        values: epochs -> training variant -> the head's val metric, for ``base`` and for the
            schedules trained so far (each with every variant of ``values[base]``).
        base: the study's schedule (epochs), the first reference.
        schedules: the longer schedules in the order they are tried (increasing, each above ``base``).
        rise: the smallest rise that counts (a fraction).

    Returns:
        ``{"next": the schedule to train next, or None when the search is over; "tried": the
        schedules of the search so far; "stopped": "plateau" | "cap" | None (not over);
        "leader": the schedule the search would choose now (None before any was tried);
        "chosen": the leader once the search is over, None until then; "mean": epochs -> the
        metric averaged over the variants, for ``base`` and ``tried``}``.

    Raises:
        ValueError: ``schedules`` not increasing above ``base``, or a schedule of ``values``
            without every variant of ``base``.
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
    leader = max(tried, key=lambda e: (mean[e], -e)) if tried else None
    return {"next": nxt if not stopped else None, "tried": tried, "stopped": stopped, "leader": leader,
            "chosen": leader if stopped else None, "mean": mean}


def plateau_text(record: Mapping[str, Any], variant: str) -> str:
    """Where ``variant``'s head stopped rising, in the record's words: after the last schedule tried
    that rose by the record's ``rise`` or more over the one before, where the one after it rose by
    less (``"at 12 epochs (24 adds +0.2 points)"``; a rise that stops and resumes is no plateau),
    or ``"still rising at 48 epochs"``; ``"—"`` before any was tried."""
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
        return f"still rising at {got[-1][0]} epochs"
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
    search ended, and per training variant the val metric and shape accuracy of each schedule
    tried, its plateau (:func:`plateau_text`) and its hours."""
    if not record:
        return None
    search = record.get("search") or {}
    # every schedule whose heads are recorded: the search's so far while it runs
    seen = {int(e) for heads in (record.get("heads") or {}).values() for e in heads}
    order = sorted(seen | ({int(record["base_epochs"])} if "base_epochs" in record else set()))
    metric = record.get("metric", PERCEPTION_METRIC)
    variants = {}
    for v, heads in (record.get("heads") or {}).items():
        variants[v] = {"val": {str(e): {k: heads[str(e)]["final"].get(k) for k in (metric, SHAPE_METRIC)}
                               for e in order if str(e) in heads},
                       "epochs_logged": {str(e): len(heads[str(e)].get("val") or []) for e in order if str(e) in heads},
                       "plateau": plateau_text(record, v),
                       "hours": round(sum(machine_seconds(h) for h in heads.values() if h.get("seconds") is not None)
                                      / 3600 + sum(machine_seconds(r[v]) for r in (record.get("runs") or {}).values()
                                                   if v in r) / 3600, 2)}
    return {"metric": metric, "rise": record.get("rise"), "base_epochs": record.get("base_epochs"),
            "schedules": record.get("schedules"), "tried": search.get("tried") or [], "stopped": search.get("stopped"),
            "chosen": search.get("chosen"), "variants": variants,
            "hours": round(perception_seconds(record) / 3600, 2)}


__all__ = ["PERCEPTION_FACTOR", "PERCEPTION_RESULTS", "PERCEPTION_RUNS", "PERCEPTION_METRIC", "SHAPE_METRIC",
           "LONG_SCHEDULES", "PLATEAU_RISE", "PERCEPTION_BUDGET_GROUP", "check_schedules", "perception_record_path",
           "read_perception_record", "perception_label", "parse_perception_label", "schedule_search",
           "plateau_text", "perception_seconds", "perception_summary"]
