"""A variant run's ``summary.json`` (``RUNS/<variant>[-seed<S>]/summary.json``, docs/formats.md, "A run
folder"): what :func:`orchestration.experiment.train_variant` measured, kept across its calls.

``{"variant", "seed", "profile", "split", "tests": [...], "models": [...],
"accuracy": {label: {test variant: Accuracy.to_json()}}, "seconds": {step: wall seconds over every
call}, "image_dependence"?: {label: {test variant: {...} | null}}}``

A call reads the earlier summary before any work (:func:`read_summary`: one damaged from outside
stops the call instead of being replaced), merges its own over it (:func:`merged_summary`) and
writes the result atomically (:func:`write_summary`).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from executors.errors import FormatError
from nsvqa.fileio import read_json_record, write_json_atomic

#: The summary's file name in a run folder.
SUMMARY_FILE = "summary.json"


class SummaryFormatError(FormatError):
    """A ``summary.json`` that is there but cannot be read (the file named)."""


def summary_path(run: str | os.PathLike) -> Path:
    """``RUN/summary.json`` of the run folder ``run``."""
    return Path(run) / SUMMARY_FILE


def read_summary(path: str | os.PathLike) -> dict[str, Any] | None:
    """A run's ``summary.json`` (what :func:`orchestration.experiment.train_variant` wrote), None where there
    is none.

    Raises:
        SummaryFormatError: the file is there but is not a JSON object (the file named): it holds what
            earlier calls measured, so it is never replaced unread.
    """
    return read_json_record(path, SummaryFormatError, "the accuracies and seconds of the run's earlier calls")


def merged_summary(path: str | os.PathLike, new: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` (one :func:`~orchestration.experiment.train_variant` call's summary) over the run's earlier
    ``summary.json`` at ``path``: a call that trains some models keeps what earlier calls measured
    of the others (their accuracies; this call's win). ``seconds`` are the wall time each step took
    over every call (summed): a later call that finds a step finished adds the moment it took to
    see so, and a resumed step adds the time of its second part, so a finished step's cost is never
    overwritten. An earlier summary of another profile or split is replaced; an unreadable one is
    refused (:func:`read_summary`, :class:`SummaryFormatError`)."""
    old = read_summary(path)
    if old is None or any(old.get(k) != new[k] for k in ("variant", "seed", "profile", "split")):
        return dict(new)
    accuracy = {m: dict(row) for m, row in (old.get("accuracy") or {}).items()}
    seconds = dict(old.get("seconds") or {})
    for k, v in new["seconds"].items():
        seconds[k] = seconds.get(k, 0.0) + v
    for m, row in new["accuracy"].items():
        accuracy[m] = {**accuracy.get(m, {}), **row}
    dependence = {m: dict(row) for m, row in (old.get("image_dependence") or {}).items()}
    for m, row in (new.get("image_dependence") or {}).items():
        dependence[m] = {**dependence.get(m, {}), **row}
    return {**new, **({"image_dependence": dependence} if dependence else {}),
            "tests": list(dict.fromkeys([*(old.get("tests") or []), *new["tests"]])),
            "models": list(dict.fromkeys([*(old.get("models") or []), *new["models"]])),
            "accuracy": accuracy, "seconds": seconds}


def write_summary(path: str | os.PathLike, summary: Mapping[str, Any]) -> None:
    """Write ``summary`` to ``path`` atomically (indented JSON, as the runs hold it)."""
    write_json_atomic(path, summary, indent=1)


__all__ = ["SUMMARY_FILE", "SummaryFormatError", "summary_path", "read_summary", "merged_summary", "write_summary"]
