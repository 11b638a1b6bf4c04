"""Running a piece of the robustness study: the floor above the plan (:mod:`orchestration.study.settings.pieces`, pieces
and budget, data and arithmetic) that generates a piece's data, trains and tests its models through
:mod:`orchestration.experiment`, measures its scene parser's perception and commits its predictions and
``piece.json`` under ``RESULTS/pieces/<piece>/``. Nothing in the package imports it."""
from __future__ import annotations

import functools
import os
import platform
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from executors.io import read_json
from nsvqa.artifacts.predictions import read_predictions, write_predictions
from nsvqa.evaluation.perception import MIN_EXIST, perception
from nsvqa.artifacts.summary import read_summary
from orchestration.experiment import VariantRun, train_variant
from nsvqa.fileio import write_json_atomic
from nsvqa.generation.suite import generate_suite
from nsvqa.generation.variants import load_variant
from orchestration.study.settings.attempts import (PIECE_FORMAT, attempt_seconds, attempt_starts,
                                                   close_stopped_attempts, read_ledger)
from orchestration.study.settings.budget import lacks_scene_parser, sharer_machines
from orchestration.study.settings.pieces import (Piece, PieceSetup, lenders, piece_dir, piece_setup, sharers)
from orchestration.study.settings.config import STUDY, STUDY_FILE, StudyConfig, StudyError, results_config
from orchestration.study.running.parses import export_parses
from nsvqa.training.checkpoint import CheckpointError, load_checkpoint, weights_digest
from nsvqa.training.loading import (DETECTOR_CHECKPOINT, DETECTOR_KIND, HEAD_CHECKPOINT, HEAD_KIND, QUESTION_CHECKPOINT,
                                    QUESTION_KIND)
from nsvqa.training.engine import native_bf16


def generate_piece_data(setup: PieceSetup, cfg: StudyConfig = STUDY, *, workers: int = 1, progress: bool = True,
                        echo: Callable[[str], None] = print) -> None:
    """Generate (or find) the splits the piece reads (:attr:`PieceSetup.splits`), with the study's
    sizes, seed and the piece's question set."""
    generate_suite(setup.data, "all", cfg.image_profile, seed=cfg.data_seed, workers=workers, progress=progress,
                   variants=list(setup.splits), splits=setup.splits, questions=setup.questions, sizes=cfg.sizes,
                   echo=echo)


@functools.lru_cache(maxsize=None)
def _commit() -> str | None:
    """HEAD when this process first asks: the code it imported. A process that runs several pieces
    runs that code to the end while HEAD moves on with each commit."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine() -> dict[str, Any]:
    """What the piece ran on: CPU, threads, whether it computes bf16 natively."""

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "native_bf16": native_bf16("cpu"), "torch": torch.__version__, "python": platform.python_version()}


def scene_parser_weights(setup: PieceSetup) -> dict[str, str] | None:
    """The weights digests (:func:`nsvqa.training.checkpoint.weights_digest`) of the scene parser the
    piece reads (:attr:`PieceSetup.scene_parser`, its own or borrowed): ``{"detector",
    "attributes"}``, what ``piece.json`` records so that the report can tell that the pieces reading
    one run folder read one perception. None for a piece that uses none."""
    return None if setup.scene_parser is None else parser_weights(setup.scene_parser / "scene_parser")


def parser_weights(scene_dir: Path | None = None, question_dir: Path | None = None) -> dict[str, str]:
    """The weights digests of the parsers that ``scene_dir`` (detector, attribute head) and
    ``question_dir`` (question parser) hold, by name, those present."""
    parts = [*(() if scene_dir is None else (("detector", scene_dir / DETECTOR_CHECKPOINT, DETECTOR_KIND),
                                              ("attributes", scene_dir / HEAD_CHECKPOINT, HEAD_KIND))),
             *(() if question_dir is None else (("question_parser", question_dir / QUESTION_CHECKPOINT, QUESTION_KIND),))]
    return {k: weights_digest(path, kind) for k, path, kind in parts if path.is_file()}


def detector_read(setup: PieceSetup, results: str | os.PathLike, weights: Mapping[str, str] | None,
                  trained_here: bool, cfg: StudyConfig = STUDY) -> dict[str, Any] | None:
    """Whose detector a piece that uses a scene parser read, for its ``piece.json``: ``{"weights":
    its digest, "of": the committed pieces sharing its run folder that record the same detector
    digest, "trained_here": whether this piece's call trained it (its run folder lacked it)}``.
    An empty ``of`` with ``trained_here`` says the piece read a detector of its own, trained with the
    study's settings; with neither, no committed sharer recorded its weights. None for a piece
    that uses none."""
    if weights is None or "detector" not in weights:
        return None
    of = []
    for other in sharers(setup.piece, cfg):
        path = piece_dir(results, other) / "piece.json"
        rec = read_json(path, allow_nan=True) if path.is_file() else {}
        if (rec.get("scene_parser_weights") or {}).get("detector") == weights["detector"]:
            of.append(other.name)
    return {"weights": weights["detector"], "of": of, "trained_here": trained_here}


def lender_elsewhere(piece: Piece, runs: str | os.PathLike, results: str | os.PathLike,
                     cfg: StudyConfig = STUDY) -> str | None:
    """Why ``piece`` should not run on this machine: the run folder whose scene parser it reads
    (:func:`~orchestration.study.settings.pieces.scene_parser_folder`: a lender's, or its own, shared with the
    other groups of its variant and seed) lacks it here, so the piece would train it first, and a
    committed piece that trains into that folder (:func:`~orchestration.study.settings.pieces.sharers`) ran on
    a machine not :func:`alike` this one (its ``piece.json``'s ``machine``), where training learns other
    weights: the two pieces would read two perceptions, and a factor's RD (or a comparison of a
    seeing model with the modular ones) would mix them. None where ``runs`` holds the scene parser,
    no such piece is committed, or they ran here alike."""
    setup = piece_setup(piece, ".", runs, cfg)
    folder = setup.scene_parser
    if folder is None or not lacks_scene_parser(folder) or setup.detector_only:
        return None  # a detector-only piece trains the detector again and records whose it read
    here, lent = machine(), lenders(piece, cfg)
    for other, path, there in sharer_machines(piece, results, cfg):
        if not alike(here, there):
            return (f"it reads the scene parser {other.name} {'lends' if other in lent else 'shares'}, "
                    f"which {folder} lacks, so it would train it again here ({here['cpu']}, "
                    f"{here['torch_threads']} torch thread(s), native bf16 {here['native_bf16']}); {path} ran on "
                    f"{there.get('cpu')} with {there.get('torch_threads')}, native bf16 {there.get('native_bf16')}, "
                    f"where training learns other weights, so the two pieces would not read one perception")
    return None


def alike(here: Mapping[str, Any], there: Mapping[str, Any]) -> bool:
    """Whether training on machine ``there`` (a ``piece.json``'s ``machine``) computes what it
    computes ``here``: the same CPU, torch thread count and native bf16 (which decides the
    detector's precision: one CPU name covers models with and without it). A record without
    ``native_bf16`` (the oldest pieces) is judged on the other two."""
    keys = ("cpu", "torch_threads") + (("native_bf16",) if "native_bf16" in there else ())
    return all(there.get(k) == here.get(k) for k in keys)


def checkpoint_seconds(run: str | os.PathLike) -> dict[str, dict[str, float]]:
    """The training seconds each checkpoint of a variant run records (its ``extra``: keys ending in
    ``seconds``, and a detector's ``val.train_minutes``), by path relative to the run: the cost of
    each network over every call that trained it, interruptions and resumes included."""

    run = Path(run)
    out: dict[str, dict[str, float]] = {}
    for path in sorted(run.glob("**/*.pt")):
        try:
            extra = load_checkpoint(path).get("extra") or {}
        except CheckpointError:
            continue
        got = {k: float(v) for k, v in extra.items() if k.endswith("seconds") and isinstance(v, (int, float))}
        minutes = (extra.get("val") or {}).get("train_minutes") if isinstance(extra.get("val"), dict) else None
        if isinstance(minutes, (int, float)):
            got["train_seconds"] = 60.0 * float(minutes)
        if got:
            out[path.relative_to(run).as_posix()] = got
    return out


def write_perception(setup: PieceSetup, results: str | os.PathLike) -> Path | None:
    """``RESULTS/pieces/<piece>/perception.json``: the piece's scene parser on each of its test
    variants' test split (:func:`nsvqa.evaluation.perception.perception`: recall, attribute
    accuracy and object counts, ID / OOD on a systematic split), from the parses in its run
    folder. None for a piece whose models use no scene parser. On a systematic split, whose test
    split may hold held-out values only (sys-composition's: only the held-out pairs), the test's
    entry also has ``val``: the same measures on the split's val split (training values only, the
    ID reference; parsed when NS-VQA chose its cuts).

    Raises:
        StudyError: a test variant's parse is missing from the run folder (the piece has not run
            here, or its run folder is gone).
    """

    if setup.scene_parser is None:
        return None
    piece = setup.piece
    run = VariantRun(setup.runs, piece.variant, piece.seed)

    def measure(variant: str, split: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        path = run.parsed(variant, "likelihoods", None if split == "test" else split)
        if not path.is_file():
            raise StudyError(f"{path}: no parse of {variant}'s {split} split in piece {piece.name}'s run folder")
        return perception(path, setup.data / variant, split, spec=spec)

    tests = {t: measure(t, "test", load_variant(t).spec()) for t in piece.tests}
    own = load_variant(piece.variant).spec()
    if own.get("ood"):  # a systematic split: its test split may hold no seen value, its val split is ID
        tests[piece.variant]["val"] = measure(piece.variant, "val", own)["all"]
    out = piece_dir(results, piece) / "perception.json"
    write_json_atomic(out, {"format": 1, "scene_parser_of": setup.scene_variant, "min_exist": MIN_EXIST,
                            "tests": tests}, indent=1)
    return out


def run_piece(piece: Piece, data: str | os.PathLike, runs: str | os.PathLike, results: str | os.PathLike,
              cfg: StudyConfig = STUDY, *, jobs: int = 2, workers: int = 2, device: str = "cpu",
              progress: bool = True, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Generate the piece's data, train and test its models (:func:`orchestration.experiment.train_variant`,
    resuming from ``runs``, with the image-shuffle test), then copy its predictions, gzipped, to
    ``RESULTS/pieces/<piece>/predictions/`` (the shuffled ones to ``shuffled/``) and write
    ``piece.json`` there (last). Returns what ``piece.json`` holds.

    Wall time: each call is an attempt in ``RUNS/<run>/study_<group>.json``, written when the call
    starts, given its generation seconds when training starts, and completed with its training
    seconds (each step's too) when it ends. A call that raises (an error, Ctrl-C) closes its attempt
    as stopped, with the error; an attempt a killed call left open is closed by the next call
    (:func:`close_stopped_attempts`: its seconds up to the last file it wrote, a lower bound), so
    ``seconds.total`` counts every attempt. ``piece.json`` also holds what each checkpoint records
    of its own training time (:func:`checkpoint_seconds`: every call that trained it, resumes
    included).
    """

    commit = _commit()  # the code this process runs (HEAD may move while it does)
    results_config(results, cfg)  # refuses a folder whose pieces ran under another config
    if not (Path(results) / STUDY_FILE).exists():
        write_json_atomic(Path(results) / STUDY_FILE, cfg.to_json(), indent=1)
    setup = piece_setup(piece, data, runs, cfg, jobs=jobs, device=device, progress=progress)  # once, here
    run = VariantRun(setup.runs, piece.variant, piece.seed)
    ledger_path = run.path / f"study_{piece.group}.json"
    ledger = read_ledger(ledger_path)
    written = [run.path] + [setup.data / v for v in setup.splits]
    ledger = close_stopped_attempts(ledger, written, later=attempt_starts(run.path, ledger_path))
    attempt: dict[str, Any] = {"started": time.time()}  # open until this call ends
    ledger["attempts"].append(attempt)
    write_json_atomic(ledger_path, ledger, indent=1)
    # this call trains the scene parser it reads
    trained_here = setup.scene_parser is not None and lacks_scene_parser(setup.scene_parser)
    try:
        t0 = time.perf_counter()
        generate_piece_data(setup, cfg, workers=workers, progress=progress, echo=echo)
        attempt["generate"] = time.perf_counter() - t0  # training starts: a stop from here on cuts a step
        write_json_atomic(ledger_path, ledger, indent=1)
        # the run's summary adds up every call's seconds: this call's are the difference
        before = (read_summary(run.path / "summary.json") or {}).get("seconds", {})
        t1 = time.perf_counter()
        summary = train_variant(setup.data, piece.variant, setup.runs, models=piece.models, spec=setup.spec,
                                seed=piece.seed, tests=piece.tests, echo=echo)
    except BaseException as e:  # an error or an interrupt: the attempt ends here, and says why
        attempt.update(stopped=True, seconds=time.time() - attempt["started"],
                       error=f"{type(e).__name__}: {e}"[:1000])
        write_json_atomic(ledger_path, ledger, indent=1)
        raise
    steps = {k: v - before.get(k, 0.0) for k, v in summary["seconds"].items() if v != before.get(k)}
    attempt.update(train_variant=time.perf_counter() - t1, steps=steps)
    write_json_atomic(ledger_path, ledger, indent=1)

    out = piece_dir(results, piece)
    accuracy: dict[str, dict[str, Any]] = {}
    for label in summary["models"]:
        if label not in piece.models:
            continue
        for t in piece.tests:
            src = run.predictions(label, t)
            preds = read_predictions(src)
            dst = out / "predictions" / (src.name + ".gz")
            write_predictions(dst, preds)
            accuracy.setdefault(label, {})[t] = summary["accuracy"][label][t]
            shuffled = run.shuffled_predictions(label, t)  # the image-shuffle test's (image dependence)
            if shuffled.is_file():
                write_predictions(out / "shuffled" / (shuffled.name + ".gz"), read_predictions(shuffled))
    write_perception(setup, results)
    export_parses(setup, results)  # what its executors read, for --reexecute at later commits
    record = {"format": PIECE_FORMAT, "piece": asdict(piece), "study": cfg.to_json(), "commit": commit,
              "machine": machine(), "scene_parser_of": setup.scene_variant, "questions": setup.questions,
              **({} if (weights := scene_parser_weights(setup)) is None else {"scene_parser_weights": weights}),
              **({} if (det := detector_read(setup, results, weights, trained_here, cfg)) is None else
                 {"detector_read": det}),
              "accuracy": accuracy,
              "seconds": {"total": sum(attempt_seconds(a) for a in ledger["attempts"]),
                          "attempts": ledger["attempts"], "checkpoints": checkpoint_seconds(run.path)}}
    write_json_atomic(out / "piece.json", record, indent=1)
    return record


__all__ = ["alike", "checkpoint_seconds", "detector_read", "generate_piece_data", "lender_elsewhere", "machine", "parser_weights", "run_piece",
           "scene_parser_weights", "write_perception"]
