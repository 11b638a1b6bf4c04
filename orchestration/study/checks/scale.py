"""The redundancy scale check: is P-NSVQA's Relative Degrade on question redundancy an effect of how
few questions its question parser learned from? A floor of the study beside
:mod:`orchestration.study.running.piece` (it uses :mod:`orchestration.experiment` and :mod:`nsvqa.training`; nothing in the
package imports it).

For each scale ``k`` and each training variant of the factor (:data:`orchestration.study.settings.scale_record.SCALE_FACTOR`),
one variant run under ``RUNS/redundancy-scale/<k>x/`` trains a question parser on the variant's
training questions and ``(k - 1)`` times as many more of the same training scenes
(``extra_questions_per_image``: nothing rendered), with its own number of steps, and tests the
models on every variant of the factor. Every run uses one scene parser and its parses: the one of
the study's default-variant run with the same seed (``RUNS/<default>-seed<S>``;
:attr:`orchestration.train_spec.TrainSpec.scene_runs`), so the scales differ in the question parser alone.

Under ``RESULTS/redundancy_scale/`` it writes the predictions, gzipped, labelled with their scale
(:func:`orchestration.study.settings.scale_record.scale_label`: ``pnsvqa.10x``), and ``scale.json``: per scale the parser's steps
and per training variant the questions per training image, the parser's val exact match, its
seconds per step and the wall seconds of the run; the scene parser used; the commit of each run;
under ``other_seconds`` the time of work outside the runs (a scene parser trained here). A
(scale, variant) whose predictions are all there is skipped, so a stopped call resumes where it
stopped (a stopped run resumes from its checkpoints). The report reads the predictions alone
(:func:`orchestration.study.report.findings.scale_finding`).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from executors.io import read_json
from nsvqa.artifacts.predictions import CellKey, read_predictions, write_predictions
from nsvqa.artifacts.questions import questions_path, read_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from orchestration.experiment import VariantRun, train_parsers, train_variant
from nsvqa.fileio import sha256_file, write_json_atomic
from nsvqa.generation.variants import FACTORS, load_variant
import orchestration.study.running.piece as study_run
from orchestration.study.settings.pieces import Piece, canonical, piece_setup, scene_source, study_spec
from orchestration.study.settings.scale_record import (SCALE_FACTOR, SCALE_RESULTS, SCALE_RUNS, read_scale_record,
                                                       scale_label, scale_record_path)
from orchestration.study.settings.config import STUDY, STUDY_FILE, StudyConfig, StudyError, results_config
from nsvqa.training.checkpoint import CheckpointError, load_checkpoint
from nsvqa.training.loading import DETECTOR_CHECKPOINT, HEAD_CHECKPOINT, QUESTION_CHECKPOINT
from nsvqa.training.more_questions import EXTRA_QUESTIONS
from nsvqa.training.question_config import QuestionParserConfig

#: Format version of ``scale.json``.
SCALE_FORMAT = 1
#: The models of the check: the two executors on the parsed programs (exact inference is free).
SCALE_MODELS = ("pnsvqa", "nsvqa", "pnsvqa-exact")
#: A trained scene parser's files.
SCENE_FILES = (DETECTOR_CHECKPOINT, HEAD_CHECKPOINT)
#: The question parser's steps at 10 times the questions (the mini profile's schedule).
STEPS_AT_10X = 4800


def scale_variants(cfg: StudyConfig = STUDY) -> tuple[list[str], list[str]]:
    """(training variants, test variants) of :data:`~orchestration.study.settings.scale_record.SCALE_FACTOR`, aliases resolved."""
    variants = FACTORS[SCALE_FACTOR]
    trains = [canonical(v, cfg) for v in variants if not load_variant(v).test_only]
    return list(dict.fromkeys(trains)), list(dict.fromkeys(canonical(v, cfg) for v in variants))


def split_counts(folder: str | os.PathLike, split: str = "train") -> tuple[int, int]:
    """(questions, images) of a variant's split: its questions file's records and its scenes.

    Raises:
        StudyError: a split without scenes or questions (the file named).
        FormatError: a malformed file.
    """
    qpath, spath = questions_path(folder, split), scenes_path(folder, split)
    n_q, n_img = len(read_questions(qpath)), len(read_scenes(spath))
    if not n_q or not n_img:
        raise StudyError(f"{qpath if not n_q else spath}: empty; the scale check asks more questions of "
                         f"every training image")
    return n_q, n_img


def default_steps(cfg: StudyConfig = STUDY) -> dict[int, int]:
    """The question parser's steps per scale: the study's at 1x, :data:`STEPS_AT_10X` at 10x."""
    return {1: QuestionParserConfig.from_profile(".", cfg.profile, **dict(cfg.question_overrides)).steps,
            10: STEPS_AT_10X}


def _scene_record(scene_dir: Path) -> dict[str, Any]:
    return {"scene_parser": str(scene_dir),
            **{f"{f.split('.')[0]}_sha256": sha256_file(scene_dir / f) for f in SCENE_FILES}}


def _parser_record(run: VariantRun, steps: int) -> dict[str, Any]:
    """What the run's question-parser checkpoint records: val exact match and seconds per step."""
    try:
        extra = load_checkpoint(run.question_dir / QUESTION_CHECKPOINT).get("extra") or {}
    except CheckpointError:
        return {}
    seconds = extra.get("supervised_seconds")
    return {"val_exact": (extra.get("supervised_val") or {}).get("exact"),
            "seconds": seconds, "seconds_per_step": None if seconds is None or not steps else seconds / steps}


def _extra_count(run: VariantRun) -> int:
    path = run.question_dir / EXTRA_QUESTIONS
    if not path.is_file():
        return 0
    return len(read_json(path)["questions"])


def run_scale_check(data: str | os.PathLike, runs: str | os.PathLike, results: str | os.PathLike,
                    cfg: StudyConfig = STUDY, *, seed: int = 2, scales: Sequence[int] = (1, 10),
                    steps: Mapping[int, int] | None = None, models: Sequence[str] = SCALE_MODELS,
                    workers: int = 2, device: str = "cpu", progress: bool = True, train_scene_parser: bool = False,
                    echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the scale check (module docstring) and return what ``scale.json`` holds.

    Args:
        data, runs, results: the study's data, runs and results roots (``results`` must record
            ``cfg``, :func:`orchestration.study.settings.config.results_config`).
        seed: the seed of every run, and of the default-variant run whose scene parser they use.
        scales: how many times the training questions each question parser learns from (1: the
            train file's alone).
        steps: scale -> the question parser's steps (default :func:`default_steps`).
        train_scene_parser: train a missing scene parser of ``RUNS/<default>-seed<seed>`` here, with
            the study's settings (for a clone whose piece of that run is committed but whose runs
            are not there); without it a missing one is an error.

    Raises:
        StudyError: a scale below 1 or without steps, or, without ``train_scene_parser``, no trained
            scene parser in ``RUNS/<default>-seed<seed>`` (named, with the commands that train it),
            or a ``scale.json`` there that is not a JSON object — before any work.
    """
    cfg = results_config(results, cfg)
    steps = dict(default_steps(cfg) if steps is None else steps)
    bad = [k for k in scales if int(k) < 1 or k not in steps]
    if bad:
        raise StudyError(f"scales {bad}: a scale is an integer >= 1 with its question-parser steps (given for "
                         f"{sorted(steps)})")
    data, runs, results = Path(data), Path(runs), Path(results)
    trains, tests = scale_variants(cfg)
    sources = {v: scene_source(v, cfg) for v in trains}
    scene_runs = {VariantRun(runs, s, seed) for s in sources.values()}
    missing = [r for r in sorted(scene_runs, key=lambda r: r.path)
               if not all((r.scene_dir / f).is_file() for f in SCENE_FILES)]
    if missing and not train_scene_parser:
        r = missing[0]
        raise StudyError(f"{r.scene_dir}: no trained scene parser for the scale check; train it with "
                         f"scripts/run_study.py --only {r.variant}-seed{seed}-modular, or, where that piece is "
                         f"committed and its runs are not here, add --scale-scene-parser to train it with the "
                         f"study's settings")
    out = results / SCALE_RESULTS
    record_path = scale_record_path(results)
    record = read_scale_record(results)
    if record.get("seed") not in (None, seed):
        raise StudyError(f"{record_path}: the scale check there ran with seed {record['seed']}, not {seed}; "
                         f"give another results folder")
    if not (results / STUDY_FILE).exists():
        write_json_atomic(results / STUDY_FILE, cfg.to_json(), indent=1)
    record = {"format": SCALE_FORMAT, "factor": SCALE_FACTOR, "seed": seed, "study": cfg.to_json(),
              "models": list(models), "tests": tests, "scales": dict(record.get("scales") or {}),
              "other_seconds": list(record.get("other_seconds") or [])}

    for v in trains:  # the factor's data with the study's sizes (rd- / rd+ render mid's images again)
        study_run.generate_piece_data(piece_setup(Piece(v, seed, "modular", tuple(models), tuple(tests)), data, runs, cfg),
                                      cfg, workers=workers, progress=progress, echo=echo)
    for r in missing:  # what the run's modular piece would train first: the scene parser alone
        study_run.generate_piece_data(piece_setup(Piece(r.variant, seed, "modular", tuple(models), (r.variant,)), data,
                                                  runs, cfg), cfg, workers=workers, progress=progress, echo=echo)
        echo(f"scale check: training the scene parser of {r.variant} seed {seed} into {r.scene_dir}")
        t0 = time.perf_counter()
        train_parsers(data / r.variant, r, study_spec(cfg, device=device, progress=progress), scene=True, question=False)
        record["other_seconds"].append({"seconds": time.perf_counter() - t0, "commit": study_run._commit(),
                                        "what": f"the scene parser of {r.variant} seed {seed} ({r.scene_dir})"})
        write_json_atomic(record_path, record, indent=1)
    counts = {v: split_counts(data / v) for v in trains}
    per_image = {v: max(1, round(n_q / n_img)) for v, (n_q, n_img) in counts.items()}
    for k in scales:
        entry = record["scales"].setdefault(str(k), {"steps": steps[k], "runs": {}})
        if entry.get("steps") != steps[k]:
            raise StudyError(f"{record_path}: scale {k}x ran with {entry.get('steps')} question-parser steps, "
                             f"now {steps[k]}; give another results folder")
        for v in trains:
            labels = {m: scale_label(m, k) for m in models}
            dst = {(m, t): out / "predictions" / (CellKey(labels[m], v, t).filename() + ".gz")
                   for m in models for t in tests}
            if v in entry["runs"] and all(p.is_file() for p in dst.values()):
                echo(f"scale check {k}x {v}: done, skipped")
                continue
            extra = (int(k) - 1) * per_image[v]
            echo(f"scale check {k}x {v}: the question parser on {per_image[v]} + {extra} questions per training "
                 f"image, {steps[k]} steps; the scene parser of {runs / sources[v]}-seed{seed}")
            spec = study_spec(cfg, question_overrides={**cfg.question_overrides, "steps": steps[k],
                                                       "extra_questions_per_image": extra},
                              scene_variant=sources[v], scene_runs=runs, device=device, progress=progress)
            t0 = time.perf_counter()
            summary = train_variant(data, v, runs / SCALE_RUNS / f"{k}x", models=list(models), spec=spec, seed=seed,
                                    tests=tests, echo=echo)
            seconds = time.perf_counter() - t0
            run = VariantRun(runs / SCALE_RUNS / f"{k}x", v, seed, scene_variant=sources[v], scene_runs=runs)
            for (m, t), path in dst.items():
                write_predictions(path, read_predictions(run.predictions(m, t)))
            n_q, n_img = counts[v]
            n_extra = _extra_count(run)
            entry["runs"][v] = {
                "commit": study_run._commit(), "run": str(run.path), "images": n_img, "file_questions": n_q,
                "extra_questions": n_extra, "extra_questions_per_image": extra,
                "questions_per_image": (n_q + n_extra) / n_img, "parser": _parser_record(run, steps[k]),
                "scene_parse": _scene_record(run.scene_dir), "seconds": seconds,
                "accuracy": {m: {t: summary["accuracy"][m][t]["accuracy"] for t in tests} for m in models}}
            write_json_atomic(record_path, record, indent=1)  # after every run: a stopped call keeps the others
    write_json_atomic(record_path, record, indent=1)
    return record


__all__ = ["SCALE_FORMAT", "SCALE_MODELS", "STEPS_AT_10X", "default_steps", "run_scale_check", "scale_variants",
           "split_counts"]
