"""The record of the redundancy scale check (:mod:`orchestration.study.checks.scale` runs it): where it lives under
the results and runs roots, ``scale.json`` read and counted, and the labels of its predictions.
Data only, beside the plan: the report and the budget read it without loading the check.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsvqa.fileio import read_json_record
from orchestration.study.settings.config import StudyError


#: The factor of the scale check: its training variants' question parsers are trained again on more
#: questions of the same training scenes (:mod:`orchestration.study.checks.scale`).
SCALE_FACTOR = "redundancy"
#: ``RESULTS/<SCALE_RESULTS>/``: the scale check's gzipped predictions (``predictions/``, labels
#: :func:`scale_label`) and ``scale.json``.
SCALE_RESULTS = "redundancy_scale"
#: ``RUNS/<SCALE_RUNS>/<k>x/``: the scale check's variant runs at ``k`` times the questions.
SCALE_RUNS = "redundancy-scale"

#: ``budget`` row of the scale check's hours.
SCALE_BUDGET_GROUP = "redundancy scale check"


def scale_record_path(results: str | os.PathLike) -> Path:
    """``RESULTS/<SCALE_RESULTS>/scale.json``: the scale check's record (:mod:`orchestration.study.checks.scale`)."""
    return Path(results) / SCALE_RESULTS / "scale.json"


def read_scale_record(results: str | os.PathLike) -> dict[str, Any]:
    """The scale check's record (:func:`scale_record_path`), ``{}`` when the check has not run.

    Raises:
        StudyError: the file is there but is not a JSON object (the file named).
    """
    return read_json_record(scale_record_path(results), StudyError,
                            "the scale check's finished runs and their seconds") or {}


def scale_runs(record: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """A scale record's finished runs: scale -> training variant -> the run's entry."""
    return {int(k): dict(e.get("runs") or {}) for k, e in (record.get("scales") or {}).items()}


def scale_seconds(record: Mapping[str, Any], path: str = "scale.json") -> float:
    """The compute a scale record accounts for: every finished run's ``seconds`` and every entry of
    ``other_seconds`` (work the check did outside its runs, such as a scene parser it trained, or
    attempts whose runs were discarded, entered by hand with a ``what``).

    Raises:
        StudyError: a run or an entry without a number in ``seconds`` (``path`` and the item named).
    """
    items = [(f"scales.{k}.runs.{v}", r) for k, runs in scale_runs(record).items() for v, r in runs.items()]
    return sum_seconds(items, record, path)


def machine_seconds(entry: Mapping[str, Any]) -> float:
    """An entry's ``seconds`` of the machine: its own over its ``at_once`` (the processes that ran at
    once in its batch, sharing the machine; 1 where not recorded)."""
    return float(entry["seconds"]) / max(1, int(entry.get("at_once") or 1))


def sum_seconds(items: Sequence[tuple[str, Mapping[str, Any]]], record: Mapping[str, Any], path: str) -> float:
    """The machine time of a check record's ``items`` ((where, entry) pairs) and of every entry of
    its ``other_seconds``: their :func:`machine_seconds` summed.

    Raises:
        StudyError: an entry without a number in ``seconds`` (``path`` and ``where`` named).
    """
    items = [*items, *((f"other_seconds[{i}]", o) for i, o in enumerate(record.get("other_seconds") or []))]
    total = 0.0
    for where, item in items:
        try:
            total += machine_seconds(item)
        except (KeyError, TypeError, ValueError) as e:
            raise StudyError(f"{path}: {where}: no number in field seconds ({type(e).__name__}: {e})") from e
    return total


def scale_label(model: str, scale: int) -> str:
    """The label of ``model``'s predictions at ``scale`` times the training questions (``pnsvqa.10x``)."""
    return f"{model}.{int(scale)}x"


def parse_scale_label(label: str) -> tuple[str, int] | None:
    """(model, scale) of a :func:`scale_label`, None for a label of no scale."""
    model, dot, k = label.rpartition(".")
    if not dot or not model or not k.endswith("x") or not k[:-1].isdigit():
        return None
    return model, int(k[:-1])


__all__ = ["machine_seconds", "sum_seconds", "SCALE_FACTOR", "SCALE_RESULTS", "SCALE_RUNS", "SCALE_BUDGET_GROUP", "scale_record_path",
           "read_scale_record", "scale_runs", "scale_seconds", "scale_label", "parse_scale_label"]
