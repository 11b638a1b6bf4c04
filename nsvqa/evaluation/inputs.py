"""The predictions files a report reads, checked before it scores them (``scripts/evaluate_rd.py``,
``scripts/run_factor.py``: :func:`nsvqa.evaluation.report.report_from_runs`).

A report takes the gold answers from the predictions files and pairs models by ``question_index``,
so a file that was edited, cut short or left empty would be scored as it is. Here every file is
checked, before any score:

* it holds predictions (an empty file is an error, not a row of "—");
* against its test split, where one is known (``--data ROOT``, or the ``data`` and ``split`` that
  the run folder's ``config.json`` records and that still exist): one prediction per question of
  ``ROOT/<test>/questions/<split>_questions.json``, none more, each with the file's answer and
  ``question_hash``;
* against every other file on the same test variant (other models, seeds, training variants): the
  same questions, with the same answers and hashes. So every paired test of the report runs over
  the same questions.

Errors are :class:`~nsvqa.artifacts.predictions.PredictionFormatError` naming the file, the line
and the field, and the file or questions file it disagrees with.
"""
from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Mapping, Sequence

from executors.io import normalize_answer, read_json

from nsvqa.artifacts.predictions import CellKey, Prediction, PredictionFormatError
from nsvqa.artifacts.questions import questions_path, read_questions
from nsvqa.fileio import is_variant_folder


def _line_of(path: Path, question_index: int) -> str:
    """``"line N"`` of the record of ``question_index`` in a predictions file (for messages)."""
    import gzip  # only when a message names a line

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            try:
                if line.strip() and json.loads(line).get("question_index") == question_index:
                    return f"line {n}"
            except (ValueError, AttributeError):
                continue
    return "a line"


def _split_of(path: Path, data: str | os.PathLike | None, split: str | None, test: str) -> Path | None:
    """The questions file a predictions file is about: under ``data`` when given, else under the
    data root its run folder's ``config.json`` records (None when there is no such record, or the
    root it records is gone: the files are then checked against each other only). A data root that
    is there without the test variant's split is an error, with ``data`` or from the record."""
    if data is None:
        try:
            record = read_json(path.parent.parent / "config.json", allow_nan=True)
        except (OSError, ValueError):  # FormatError included: no run's config to follow
            return None
        config = record.get("config") if isinstance(record, dict) else None  # RunDir's {"config", "command", ...}
        if not isinstance(config, dict) or not isinstance(config.get("data"), str):
            return None
        data, split = config["data"], split or config.get("split") or "test"
        if is_variant_folder(data):  # a variant folder (train_baseline's --data): the root is above it
            data = str(Path(data).parent)
        q = questions_path(Path(data) / test, split)
        if not q.is_file() and Path(data).is_dir():  # the data root is there, without this test variant
            raise PredictionFormatError(f"{path}: its test variant {test!r} is not in the data root {data} its run's "
                                        f"{path.parent.parent / 'config.json'} records (no {q}): predictions are "
                                        f"scored against their questions only; pass --data with the root that holds it")
        return q if q.is_file() else None
    q = questions_path(Path(data) / test, split or "test")
    if not q.is_file():
        raise PredictionFormatError(f"{path}: its test split {q} (--data {data}) is not there")
    return q


def _mismatch(path: Path, p: Prediction, field: str, mine, theirs, other: str) -> PredictionFormatError:
    return PredictionFormatError(f"{path}, {_line_of(path, p.question_index)}, field {field!r}: {mine!r} for "
                                 f"question_index {p.question_index}, but {other} has {theirs!r}: the file was edited "
                                 f"or is of other questions; regenerate it")


def check_prediction_files(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]],
                           files: Mapping[CellKey, Sequence[str | os.PathLike]], *,
                           data: str | os.PathLike | None = None, split: str | None = None) -> None:
    """Check every predictions file of ``cells`` (key -> one list of predictions per file of
    ``files``, in the same order) as the module docstring says, before a report scores them.

    Args:
        data: the data root of the test variants (None: each run folder's ``config.json``'s, where
            it still exists; files of no known data root are checked against each other only).
        split: the test split (None: the run's, else ``test``).

    Raises:
        PredictionFormatError: an empty file, a file missing questions of its test split or
            holding others, or an answer or hash that differs from the split's or from another
            file's on the same test variant; the message names the file, the line and the field.
    """
    reference: dict[str, tuple[str, dict[int, tuple[str, str | None]]]] = {}
    for key, runs in cells.items():
        for preds, path in zip(runs, files[key]):
            path = Path(path)
            if not preds:
                raise PredictionFormatError(f"{path}: no predictions (an empty file); a cell is never scored from "
                                            f"nothing: regenerate it, or remove it")
            qfile = _split_of(path, data, split, key.test)
            if qfile is not None and f"questions:{qfile}" not in reference:
                gold = {q.question_index: (q.answer, q.question_hash) for q in read_questions(qfile, require_answer=True)}
                reference[f"questions:{qfile}"] = (str(qfile), gold)
            against = [reference[f"questions:{qfile}"]] if qfile is not None else []
            if key.test in reference:
                against.append(reference[key.test])
            mine = {p.question_index: p for p in preds}
            for other, gold in against:
                for p in preds:
                    if p.question_index not in gold:
                        raise PredictionFormatError(f"{path}, {_line_of(path, p.question_index)}, field "
                                                    f"'question_index': {p.question_index} is no question of {other}")
                    answer, qhash = gold[p.question_index]
                    if normalize_answer(p.answer) != normalize_answer(answer):
                        raise _mismatch(path, p, "answer", p.answer, answer, other)
                    if p.question_hash is not None and qhash is not None and p.question_hash != qhash:
                        raise _mismatch(path, p, "question_hash", p.question_hash, qhash, other)
                missing = [i for i in gold if i not in mine]
                if missing:
                    raise PredictionFormatError(f"{path}: {len(missing)} questions of {other} have no prediction "
                                                f"(question_index {missing[0]} the first): the file was cut short")
            reference.setdefault(key.test, (str(path), {p.question_index: (p.answer, p.question_hash) for p in preds}))


def probability_cut(text: str) -> float:
    """An argparse ``type`` for a probabilistic executor's threshold: a number in (0, 1].

    Raises:
        argparse.ArgumentTypeError: anything else (the value named).
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a probability in (0, 1], got {text!r}")
    return value


__all__ = ["check_prediction_files", "probability_cut"]
