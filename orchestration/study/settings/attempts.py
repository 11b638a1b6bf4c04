"""A piece's records of its attempts: the ledger ``RUN/study_<group>.json`` (one entry per call,
open while the call runs), the seconds each attempt took, an attempt a kill stopped closed from
the files it wrote, and the format version of the ``piece.json`` a finished piece commits
(docs/formats.md, "piece.json"). Data only: :mod:`orchestration.study.running.piece` writes them, the budget reads them.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsvqa.fileio import read_json_record
from orchestration.study.settings.config import StudyError

#: Format version of ``piece.json``.
PIECE_FORMAT = 1


def attempt_seconds(attempt: Mapping[str, Any]) -> float:
    """The wall seconds of one attempt of a piece's ledger: a finished one's generation and
    training, a stopped one's ``seconds`` (:func:`close_stopped_attempts`)."""
    if attempt.get("stopped"):
        return float(attempt["seconds"])
    return float(attempt["generate"]) + float(attempt["train_variant"])


def stopped_in_training(attempt: Mapping[str, Any]) -> bool:
    """Whether an attempt stopped after its data were generated (a stop during generation cuts no
    training step short)."""
    return bool(attempt.get("stopped")) and "generate" in attempt


def read_ledger(path: str | os.PathLike) -> dict[str, Any]:
    """A piece's ledger of attempts (``RUN/study_<group>.json``: ``{"attempts": [{...}, ...]}``,
    docs/formats.md, "piece.json"); a fresh one where the file is missing.

    Raises:
        StudyError: the file is there but is not JSON, has no list ``attempts``, or an attempt
            whose ``started`` is not a number (the file and the item named) — the ledger holds the
            seconds of earlier attempts, so it is never replaced unread.
    """
    ledger = read_json_record(path, StudyError, "the piece's earlier attempts and their seconds")
    if ledger is None:
        return {"attempts": []}
    if not isinstance(ledger.get("attempts"), list):
        raise StudyError(f"{path}: field 'attempts': expected a list of attempts")
    for i, a in enumerate(ledger["attempts"]):
        if not isinstance(a, dict) or ("started" in a and not isinstance(a["started"], (int, float))):
            raise StudyError(f"{path}: attempts[{i}]: expected an object whose 'started' is a number")
    return ledger


def attempt_starts(run: Path, skip: Path) -> list[float]:
    """The start times recorded by the ledgers (``study_*.json``) of the run folder ``run`` other
    than ``skip``: the other groups' attempts that used the same folder (the ``later`` of
    :func:`close_stopped_attempts`).

    Raises:
        StudyError: a ledger :func:`read_ledger` refuses (the file named)."""
    return [float(a["started"]) for path in sorted(run.glob("study_*.json")) if path != skip
            for a in read_ledger(path)["attempts"] if "started" in a]


def close_stopped_attempts(ledger: Mapping[str, Any], written: Sequence[str | os.PathLike], *,
                           later: Sequence[float] = ()) -> dict[str, Any]:
    """``ledger`` with each open attempt (one whose call was killed before it ended: a ``started``
    time, no ``train_variant``) closed as ``{"started", "stopped": true, "seconds"}`` (keeping its
    ``generate`` seconds when it had reached training): the seconds from its start to the last
    modification of a file under ``written`` (the run folder and the data folders the piece
    writes), a lower bound of its wall time. Files modified after the next start of any attempt
    (its own ledger's, or one of ``later``: other pieces that used the same folders since) are not
    its own; an attempt that wrote nothing counts 0 seconds."""
    attempts = [dict(a) for a in ledger.get("attempts", [])]
    starts = sorted([float(a["started"]) for a in attempts if "started" in a] + [float(t) for t in later])
    for a in attempts:
        if "started" not in a or a.get("stopped") or "train_variant" in a:
            continue
        start = float(a["started"])
        until = next((t for t in starts if t > start), float("inf"))
        last = start
        for root in written:
            for folder, _, files in os.walk(root):
                for name in files:
                    try:
                        m = os.stat(os.path.join(folder, name)).st_mtime
                    except OSError:
                        continue
                    if start <= m < until:
                        last = max(last, m)
        a.update(stopped=True, seconds=last - start)
    return {**ledger, "attempts": attempts}



__all__ = ["PIECE_FORMAT", "attempt_seconds", "stopped_in_training", "read_ledger", "attempt_starts",
           "close_stopped_attempts"]
