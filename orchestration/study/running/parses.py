"""What a piece's program executors read, committed, and executed again at the code of today.

:func:`export_parses` copies, gzipped, what the executors of a piece (NS-VQA, P-NSVQA and
P-NSVQA-exact, on parsed and on ground-truth programs) read on each test split into
``RESULTS/pieces/<piece>/parses/``: the scene parses (``<test>/likelihoods.json.gz``), the parsed
programs (``<test>/programs.json.gz``), the test questions (``<test>/questions.json.gz``; the
scenes too, ``<test>/scenes.json.gz``, where the split's ID/OOD flag reads them), and the cuts a
model chose on val (``tuned/<model>.json``). :func:`reexecute` runs those executors on them
through the models' own ``predict`` and names every answer that differs from the committed
predictions (``run_study.py --reexecute``). The data and run folders are not needed.
"""
from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from executors.io import read_json
from nsvqa.artifacts.predictions import predictions_path, read_predictions
from nsvqa.artifacts.questions import questions_path
from nsvqa.artifacts.scenes import scenes_path
from orchestration.experiment import VariantRun
from nsvqa.fileio import write_atomic
from nsvqa.models import TUNED, ModelSpec, PredictInputs
from orchestration.models import get as get_model
from orchestration.study.settings.pieces import PARSES, Piece, PieceSetup, piece_dir


def executor_labels(piece: Piece) -> list[str]:
    """The piece's models that answer from the run's parses through a program executor (they
    read nothing but the parses, the questions and their val cuts)."""
    out = []
    for label in piece.models:
        spec = ModelSpec.from_label(label)
        model = get_model(spec.name)
        if model.uses_parses and model.family == "modular" and not model.trainable:
            out.append(label)
    return out


def _gz(src: Path, dst: Path) -> None:
    write_atomic(dst, gzip.compress(src.read_bytes(), mtime=0))


def export_parses(setup: PieceSetup, results: str | os.PathLike) -> Path | None:
    """Copy what the piece's executors read (module docstring) from its run and data folders into
    ``RESULTS/pieces/<piece>/parses/``; returns that folder, None when the piece has no executor.

    Raises:
        FileNotFoundError: a parse, questions file or val cut the piece's executors read is not
            there (named).
    """
    piece = setup.piece
    labels = executor_labels(piece)
    if not labels:
        return None
    run = VariantRun(setup.runs, piece.variant, piece.seed)
    out = piece_dir(results, piece) / PARSES
    needs_programs = any(not ModelSpec.from_label(m).gt_programs for m in labels)
    for test in piece.tests:
        folder = Path(setup.data) / test
        files = {"likelihoods.json.gz": run.parsed(test, "likelihoods"),
                 "questions.json.gz": questions_path(folder, "test")}
        if needs_programs:
            files["programs.json.gz"] = run.parsed(test, "programs")
        if scenes_path(folder, "test").is_file() and test.startswith("sys-"):
            files["scenes.json.gz"] = scenes_path(folder, "test")
        for name, src in files.items():
            if not src.is_file():
                raise FileNotFoundError(f"{src}: piece {piece.name} reads it on test {test}; not there")
            _gz(src, out / test / name)
    for name in sorted({ModelSpec.from_label(m).name for m in labels}):
        tuned = run.model_dir(name) / TUNED
        if tuned.is_file():
            write_atomic(out / "tuned" / f"{name}.json", tuned.read_bytes())
    return out


def reexecute(results: str | os.PathLike) -> dict[str, Any]:
    """Every done piece with committed parses (its models and tests as its ``piece.json`` records), its executors run again on them at this code;
    returns ``{"pieces": [...], "answers": n compared, "differ": ["<file>: question <i>: committed X,
    now Y", ...]}``."""
    differ, pieces, n = [], [], 0
    for record in sorted(Path(results, "pieces").glob(f"*/{PARSES}")):
        folder = record.parent
        if not (folder / "piece.json").is_file():
            continue
        p = read_json(folder / "piece.json", allow_nan=True)["piece"]  # what the piece ran, as it ran
        piece = Piece(p["variant"], int(p["seed"]), p["group"], tuple(p["models"]), tuple(p["tests"]))
        parses = folder / PARSES
        pieces.append(folder.name)
        with tempfile.TemporaryDirectory(prefix="nsvqa-reexec-") as tmp:
            root, run_dir = Path(tmp) / "data", Path(tmp) / "run"
            for test in piece.tests:
                src = parses / test
                qdst = questions_path(root / test, "test")
                qdst.parent.mkdir(parents=True, exist_ok=True)
                qdst.write_bytes(gzip.decompress((src / "questions.json.gz").read_bytes()))
                if (src / "scenes.json.gz").is_file():
                    sdst = scenes_path(root / test, "test")
                    sdst.parent.mkdir(parents=True, exist_ok=True)
                    sdst.write_bytes(gzip.decompress((src / "scenes.json.gz").read_bytes()))
                for kind in ("likelihoods", "programs"):
                    if (src / f"{kind}.json.gz").is_file():
                        (Path(tmp) / test).mkdir(exist_ok=True)
                        (Path(tmp) / test / f"{kind}.json").write_bytes(
                            gzip.decompress((src / f"{kind}.json.gz").read_bytes()))
            for label in executor_labels(piece):
                spec = ModelSpec.from_label(label)
                model_dir = run_dir / spec.name
                model_dir.mkdir(parents=True, exist_ok=True)
                if (parses / "tuned" / f"{spec.name}.json").is_file():
                    shutil.copy(parses / "tuned" / f"{spec.name}.json", model_dir / TUNED)
                for test in piece.tests:
                    got = get_model(spec.name).predict(
                        model_dir, root, test, "test", spec=spec,
                        inputs=PredictInputs(likelihoods=Path(tmp) / test / "likelihoods.json",
                                             programs=(Path(tmp) / test / "programs.json") if not spec.gt_programs
                                             else None, seed=piece.seed))
                    committed = folder / "predictions" / (predictions_path(".", label, piece.variant, test).name + ".gz")
                    was = {p.question_index: p.prediction for p in read_predictions(committed)}
                    for p in got:
                        n += 1
                        if was.get(p.question_index) != p.prediction:
                            differ.append(f"{committed}: question {p.question_index}: committed "
                                          f"{was.get(p.question_index)!r}, now {p.prediction!r}")
    return {"pieces": pieces, "answers": n, "differ": differ}


__all__ = ["PARSES", "executor_labels", "export_parses", "reexecute"]
