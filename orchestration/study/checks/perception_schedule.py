"""The perception schedule check: is the modular models' visual Relative Degrade an effect of how
short their attribute heads trained? A floor of the study beside :mod:`orchestration.study.running.piece`
(it uses :mod:`orchestration.experiment` and :mod:`nsvqa.training`; nothing in the package imports it).

For each training variant of :data:`~orchestration.study.settings.perception_record.PERCEPTION_FACTOR`, the
*base run* is the study's run of that variant and seed under the runs root (``RUNS/<variant>``, the
folder the study's modular piece trains): its detector, attribute head (the study's schedule, the
base), question parser and NSCL. It is the committed piece's run only while the runs root holds
the weights that piece learned; one trained again (``train_base``, or with other torch threads)
learns other weights, so the check's arm at the study's schedule then answers otherwise than the
committed cells, which the report says from the record
(:func:`orchestration.study.report.perception.base_runs_text`). The check

1. executes the study's modular models (:attr:`StudyConfig.groups` ``"modular"``) in the base run
   again (:func:`orchestration.experiment.train_variant` with the study's settings: everything it
   finds trained is reused, parses whose checkpoints did not change included), so that both
   schedules' predictions come from the code of one commit;
2. trains the attribute heads again, from scratch, on longer schedules (epochs), each on the base
   run's detector (``SceneParserConfig.detector``; stage ``attributes``, the study's scene-parser
   settings otherwise, the same seed) and the base run's crop caches (linked, never rebuilt), into
   ``RUNS/perception-schedule/heads/<E>ep/<run>/scene_parser/``, in the order and until the rule of
   :func:`~orchestration.study.settings.perception_record.schedule_search` stops (on the val metric; the
   schedule chosen among those tried is the one of the highest end-to-end val accuracy,
   :data:`~orchestration.study.settings.perception_record.SELECT_METRIC`, which the heads log after each
   epoch: the study's scene settings must give ``e2e_eval_images`` above 0); with
   ``jobs`` 2, every head of a schedule at once, each in a process of one torch thread;
3. executes the models with a schedule's heads: before each longer schedule, those of the schedule
   the search would choose so far, where its heads are on this machine and the deadline allows
   (so that the chosen ones need not be trained again in a later call); part of a schedule trained
   when the deadline left time for no more, in that call; the chosen schedule's in any case. The
   heads of a schedule train all in one call where the time left allows them (with their
   execution, else alone), else the first that fit with their execution (:func:`heads_that_fit`),
   the others in the next call. Each is a variant run
   ``RUNS/perception-schedule/<E>ep/<run>/`` whose scene parser is that head beside the base detector
   (:attr:`TrainSpec.scene_runs`) and whose question parser is the base run's (linked: found
   finished); NSCL trains again on that run's parses with the study's config and seed.

So the two schedules' predictions differ in the attribute head alone. Under
``RESULTS/perception_schedule/`` it writes the predictions, gzipped, labelled with their schedule
(:func:`~orchestration.study.settings.perception_record.perception_label`: ``pnsvqa.3ep``, ``pnsvqa.24ep``),
and ``perception_schedule.json`` (docs/formats.md): per scene parser the heads of every schedule
tried (per-epoch val metrics from the head's log, the final ones from its checkpoint, its weights
digest, its seconds), the search, per schedule and training variant the run executed (its commit,
checkpoints, weights digests, torch threads and seconds), and ``other_seconds``. Every step is
written as it ends; a (schedule, variant) whose predictions are all there is skipped, a head
recorded is not trained again for its value, a finished head is found finished, and a stopped run
resumes from its checkpoints.

The record, not the runs root, carries the check from one working period to the next: where the
runs root lost a base run (a new machine), ``train_base`` trains what the step needs again (the
scene parser before heads, the question parser before the chosen schedule executes; its seconds
in ``other_seconds``) with the torch threads the record gives, and the check goes on only if it
learned the weights the record holds (:func:`nsvqa.training.checkpoint.weights_digest`); a chosen
head trained again must match its record the same way. The report reads the predictions
(:func:`orchestration.study.report.perception.perception_finding`) and the record.
"""
from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import time
from pathlib import Path
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Mapping, Sequence

import torch

from executors.io import read_json
from nsvqa.artifacts.predictions import CellKey, read_predictions, write_predictions
from nsvqa.fileio import sha256_file, write_json_atomic
from nsvqa.generation.variants import FACTORS, load_variant
from nsvqa.training.checkpoint import CheckpointError, load_checkpoint, sidecar_path, weights_digest
from nsvqa.training.loading import DETECTOR_CHECKPOINT, HEAD_CHECKPOINT, HEAD_KIND, QUESTION_CHECKPOINT
from nsvqa.training.scene_config import SceneParserConfig
from orchestration.experiment import VariantRun, train_parsers, train_variant
from orchestration.train_spec import TrainSpec
import orchestration.study.running.piece as study_run
from orchestration.study.settings.perception_record import (LONG_SCHEDULES, PERCEPTION_FACTOR, PERCEPTION_METRIC,
                                                            PERCEPTION_RESULTS, PERCEPTION_RUNS, PLATEAU_RISE,
                                                            SELECT_METRIC, check_schedules, perception_label,
                                                            perception_record_path, read_perception_record,
                                                            schedule_search)
from orchestration.study.settings.budget import PARSER_STEPS
from orchestration.study.settings.pieces import Piece, canonical, piece_dir, piece_setup, scene_source, study_spec
from orchestration.study.settings.config import STUDY, STUDY_FILE, StudyConfig, StudyError, results_config

#: Format version of ``perception_schedule.json``.
PERCEPTION_FORMAT = 1
#: The attribute stage's crop caches (``<name>.pt`` in a scene-parser run), linked from the base run.
CROP_CACHES = ("crops_train_gt", "crops_train_det", "crops_val_gt")
_EPOCH_LINE = re.compile(r"attributes epoch (\d+) val (\S.*)$")


class OutOfTime(StudyError):
    """The check's next step is projected to end after its deadline: it is not started."""


def _per_core(entry: Mapping[str, Any]) -> float:
    """How many processes shared each core while ``entry`` (a head or run of the record) ran: its
    ``at_once`` over its ``cores``, at least 1 (1 where not recorded)."""
    return max(1.0, int(entry.get("at_once") or 1) / max(1, int(entry.get("cores") or 1)))


def head_projection(record: Mapping[str, Any], epochs: int, heads: int, cores: int = 1) -> float | None:
    """Seconds that ``heads`` heads of ``epochs`` epochs are projected to take, sharing ``cores``
    cores (one each at most), at the slowest seconds per epoch on a core of its own of the heads
    ``record`` holds: a head's seconds over the heads that trained at once per core (its
    ``at_once`` over its ``cores``, 1 where not recorded). None where it holds none."""
    rates = [float(h["seconds"]) / int(h["epochs"]) / _per_core(h) for hs in (record.get("heads") or {}).values()
             for h in hs.values() if h.get("seconds") and int(h.get("epochs") or 0) > 0]
    if not rates or heads <= 0:
        return None if heads > 0 else 0.0
    return max(rates) * epochs * max(1.0, heads / max(1, cores))


def heads_that_fit(n: int, left: float | None, heads_need: Callable[[int], float | None],
                   runs_need: Callable[[int], float | None]) -> int:
    """How many of ``n`` heads to train now, with ``left`` seconds (None: no limit): all of them
    where they fit with the runs that execute them after (``heads_need(k)``, ``runs_need(k)``: the
    projected seconds of the first ``k``; None: no projection, taken as 0); else all of them where
    they fit alone (a schedule's heads all trained give the search its next step; their runs wait
    until it chooses them); else the most that fit with theirs, so that what is trained is executed
    in the same call; else the most that fit alone; 0 where not one does."""
    if left is None:
        return n
    with_runs, alone = (heads_need, runs_need), (heads_need,)
    tries = [(n, with_runs), (n, alone)] + [(k, fs) for fs in (with_runs, alone) for k in range(n - 1, 0, -1)]
    return next((k for k, fs in tries if sum(f(k) or 0.0 for f in fs) <= left), 0)


def perception_variants(cfg: StudyConfig = STUDY) -> tuple[list[str], list[str]]:
    """(training variants, test variants) of the check's factor, aliases resolved."""
    variants = FACTORS[PERCEPTION_FACTOR]
    trains = [canonical(v, cfg) for v in variants if not load_variant(v).test_only]
    return list(dict.fromkeys(trains)), list(dict.fromkeys(canonical(v, cfg) for v in variants))


def study_epochs(cfg: StudyConfig = STUDY) -> int:
    """The study's attribute-head schedule (epochs): its profile's, under its scene overrides."""
    return SceneParserConfig.from_profile(".", cfg.profile, **dict(cfg.scene_overrides)).attr_epochs


def epoch_metrics(log: str | os.PathLike, epochs: int) -> list[dict[str, float]]:
    """The val metrics a scene-parser run's ``train.log`` gives after each attribute epoch 1 ..
    ``epochs`` (``{"epoch": e, "object.material": ..., ...}``, 4 decimals), the last line of each
    epoch where several calls logged it; ``[]`` without a log."""
    path = Path(log)
    if not path.is_file():
        return []
    got: dict[int, dict[str, float]] = {}
    for line in path.read_text(errors="replace").splitlines():
        m = _EPOCH_LINE.search(line)
        if m:
            pairs = (kv.split("=", 1) for kv in m[2].split() if "=" in kv)
            got[int(m[1])] = {"epoch": int(m[1]), **{k: float(v) for k, v in pairs}}
    return [got[e] for e in sorted(got) if 1 <= e <= epochs]


def _head(scene_dir: Path, seconds: bool = True) -> dict[str, Any]:
    """A trained head's entry in the record (``seconds``: its checkpoint's training clock, every
    call that trained it; False for the study's own head, whose compute is the study's)."""
    ck = load_checkpoint(scene_dir / HEAD_CHECKPOINT, kind=HEAD_KIND)
    epochs = int(ck["train_state"].get("epoch", 0))
    extra = ck.get("extra") or {}
    return {"epochs": epochs, "scene_parser": str(scene_dir), "detector": ck["config"].get("detector"),
            "attributes_sha256": sha256_file(scene_dir / HEAD_CHECKPOINT),
            "attributes_weights": weights_digest(scene_dir / HEAD_CHECKPOINT, HEAD_KIND),
            "final": dict(extra.get("val") or {}),
            "val": epoch_metrics(scene_dir / "train.log", epochs),
            "seconds": float(extra.get("seconds", 0.0)) if seconds else None}


def _finished(path: Path, epochs: int) -> bool:
    try:
        state = load_checkpoint(path, kind=HEAD_KIND)["train_state"]
    except CheckpointError:
        return False
    return bool(state.get("finished")) and int(state.get("epoch", -1)) == epochs


def _link(src: Path, dst: Path) -> None:
    """``dst`` as a hard link to ``src`` (a copy across file systems), with the checkpoint's sha256
    sidecar; what is there already is kept. Only files that are replaced by renaming, never written
    in place, are linked."""
    for a, b in ((src, dst), (sidecar_path(src), sidecar_path(dst))):
        if b.exists() or not a.is_file():
            continue
        b.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)


def train_head(data: Path, base_scene: Path, out: Path, epochs: int, cfg: StudyConfig, seed: int,
               device: str = "cpu", progress: bool = True) -> bool:
    """Train an attribute head of ``epochs`` epochs from scratch into the scene-parser folder
    ``out`` on ``data`` (a variant folder), for the detector of ``base_scene`` (linked into ``out``
    beside it, with ``base_scene``'s crop caches), the study's scene-parser settings otherwise;
    a stopped one resumes. Returns False when ``out`` holds it finished already (nothing done)."""
    from nsvqa.training.scene_parser import train_scene_parser  # heavy: the detector's stack, only to train

    if _finished(out / HEAD_CHECKPOINT, epochs):
        return False
    for name in (DETECTOR_CHECKPOINT, *(f"{c}.pt" for c in CROP_CACHES)):
        _link(base_scene / name, out / name)
    scfg = SceneParserConfig.from_profile(str(data), cfg.profile, seed=seed, device=device,
                                          **{**dict(cfg.scene_overrides), "stage": "attributes",
                                             "attr_epochs": epochs,
                                             "detector": str((base_scene / DETECTOR_CHECKPOINT).resolve())})
    train_scene_parser(scfg, out, resume=True, progress=progress)
    return True


def _one_thread(log_path: Path, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a process of the check's own (:func:`in_processes`): one torch thread, its
    output to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
    torch.set_num_threads(1)
    return fn(*args)


def in_processes(calls: Sequence[tuple[Callable[..., Any], tuple, Path]], *, parallel: bool,
                 done: Callable[[int, Any], None], what: str) -> None:
    """Run ``calls`` ((a picklable function, its arguments, a log path) each): one after the other
    in this process, or, with ``parallel`` and more than one, all at once, each in a spawned process
    of one torch thread (:func:`_one_thread`; the processes share the machine's cores), which learns
    what one process with one thread learns. ``done(i, result)`` is called in this process as call
    ``i`` ends, in the order they end.

    Raises:
        StudyError: a call's process failed (``what`` and its log named); the others run to their
            end first.
    """
    if not parallel or len(calls) <= 1:
        for i, (fn, args, _) in enumerate(calls):
            done(i, fn(*args))
        return
    failed = []
    with ProcessPoolExecutor(max_workers=len(calls), mp_context=multiprocessing.get_context("spawn")) as ex:
        futures = {ex.submit(_one_thread, log, fn, *args): i for i, (fn, args, log) in enumerate(calls)}
        for f in as_completed(futures):
            i = futures[f]
            try:
                result = f.result()
            except Exception as e:  # noqa: BLE001  reported after the others end
                failed.append(f"{type(e).__name__}: {e}; see {calls[i][2]}")
                continue
            done(i, result)
    if failed:
        raise StudyError(f"the perception check's {what}: {len(failed)} failed: {'; '.join(failed)}")


def _train_base(data: Path, run: VariantRun, spec: TrainSpec, scene: bool, question: bool, scene_data: Path) -> float:
    """A base run's lost parsers trained again (:func:`orchestration.experiment.train_parsers`); its seconds."""
    t0 = time.perf_counter()
    train_parsers(data, run, spec, scene, question, scene_data=scene_data)
    return time.perf_counter() - t0


def _execute_job(data: Path, v: str, run_root: Path, models: Sequence[str], spec: TrainSpec, seed: int,
                 tests: Sequence[str]) -> tuple[dict[str, Any], float]:
    """The models of the run of ``v`` under ``run_root`` trained and tested
    (:func:`orchestration.experiment.train_variant`); its summary and seconds."""
    t0 = time.perf_counter()
    summary = train_variant(data, v, run_root, models=list(models), spec=spec, seed=seed, tests=list(tests))
    return summary, time.perf_counter() - t0


def execution_projection(record: Mapping[str, Any], results: str | os.PathLike, variants: Sequence[str],
                         tests: Sequence[str], seed: int, cores: int = 1) -> float | None:
    """Seconds that executing the models with a schedule's heads (NSCL trained again, tuning,
    tests) for ``variants`` is projected to take, sharing ``cores`` cores: per variant, the slowest
    such steps of its runs at longer schedules that ``record`` holds (``runs.<E>.<v>.steps``), else
    those of the study's committed modular piece of it (``RESULTS/pieces/<v>-seed<seed>-modular``,
    its tests among ``tests``); None where neither gives a number."""
    per = []
    for v in variants:
        steps = [{k: float(x) / _per_core(r[v]) for k, x in r[v]["steps"].items()} for e, r in (record.get("runs") or {}).items()
                 if int(e) != int(record.get("base_epochs", -1)) and v in r and r[v].get("steps")]
        if not steps:
            try:
                piece = read_json(piece_dir(results, Piece(v, seed, "modular", (), ())) / "piece.json", allow_nan=True)
                steps = [piece["seconds"]["attempts"][-1]["steps"]]
            except (OSError, ValueError, KeyError, IndexError, TypeError):
                continue
        per.append(max(sum(float(x) for k, x in st.items() if k not in (*PARSER_STEPS, "total")
                           and (not k.startswith("test_") or k[5:] in tests)) for st in steps))
    return max(per) * max(1.0, len(variants) / max(1, cores)) if per else None


def train_heads(todo: Sequence[tuple[Path, Path, Path]], epochs: int, cfg: StudyConfig, *, seed: int,
                jobs: int = 1, device: str = "cpu", progress: bool = True,
                done: Callable[[int, bool], None] = lambda i, trained: None) -> None:
    """Train the heads ``todo`` ((data, base scene parser, out) each, as :func:`train_head`) of
    ``epochs`` epochs: one after the other in this process with ``jobs`` 1, else all at once, each
    in a process of one torch thread (its output in ``<out>.log``; :func:`in_processes`).
    ``done(i, trained)`` is called in this process as head ``i`` ends.

    Raises:
        StudyError: a head's process failed (its log named); the others run to their end first.
    """
    calls = [(train_head, (data, base_scene, out, epochs, cfg, seed, device, progress and jobs <= 1),
              out.with_name(out.name + ".log")) for data, base_scene, out in todo]
    in_processes(calls, parallel=jobs > 1, done=done, what=f"heads of {epochs} epochs")


def _threads() -> int:
    return torch.get_num_threads()


def weights(run: VariantRun) -> dict[str, str]:
    """The weights digests (:func:`nsvqa.training.checkpoint.weights_digest`) of a run's detector,
    attribute head and question parser, those it holds."""
    return study_run.parser_weights(run.scene_dir, run.question_dir)


def _spec(cfg: StudyConfig, variant: str, *, jobs: int, device: str, progress: bool,
          scene_runs: Path | None = None) -> TrainSpec:
    """The study's settings for a modular run of ``variant`` (as :func:`orchestration.study.running.piece.run_piece`
    gives them), its scene parser under ``scene_runs`` when given."""
    return study_spec(cfg, scene_variant=scene_source(variant, cfg), scene_runs=scene_runs, jobs=jobs, device=device,
                      progress=progress)


def _run_entry(run: VariantRun, summary: Mapping[str, Any], models: Sequence[str], tests: Sequence[str],
               seconds: float) -> dict[str, Any]:
    return {"commit": study_run._commit(), "run": str(run.path), "scene_parser": str(run.scene_dir),
            "detector_sha256": sha256_file(run.scene_dir / DETECTOR_CHECKPOINT),
            "attributes_sha256": sha256_file(run.scene_dir / HEAD_CHECKPOINT),
            "question_parser_sha256": sha256_file(run.question_dir / QUESTION_CHECKPOINT),
            "weights": weights(run), "threads": _threads(), "seconds": seconds,
            "accuracy": {m: {t: summary["accuracy"][m][t]["accuracy"] for t in tests} for m in models}}


def run_perception_check(data: str | os.PathLike, runs: str | os.PathLike, results: str | os.PathLike,
                         cfg: StudyConfig = STUDY, *, seed: int = 0, schedules: Sequence[int] = LONG_SCHEDULES,
                         rise: float = PLATEAU_RISE, models: Sequence[str] | None = None, train_base: bool = False,
                         jobs: int = 2, workers: int = 2, device: str = "cpu", progress: bool = True,
                         deadline: float | None = None, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the perception schedule check (module docstring) and return what
    ``perception_schedule.json`` holds.

    Args:
        data, runs, results: the study's data, runs and results roots (``results`` must record
            ``cfg``, :func:`orchestration.study.settings.config.results_config`).
        seed: the seed of the base runs and of every head and run of the check.
        schedules, rise: the longer schedules tried and the smallest rise of the val metric that
            counts (:func:`~orchestration.study.settings.perception_record.schedule_search`).
        models: the models executed (default: the study's modular group).
        train_base: train what a base run lacks (its scene parser, question parser, NSCL) here,
            with the study's settings, as its modular piece would; without it a base run without
            trained parsers is an error.
        jobs: 2 trains a base run's question parser beside its scene parser, and the heads of a
            schedule, and the base runs trained again, all at once (:func:`in_processes`).
        deadline: a :func:`time.monotonic` time: heads projected to end after it
            (:func:`head_projection`) are not started (:class:`OutOfTime`), so that a working
            period ends between steps, with what it did recorded.

    Raises:
        StudyError: before any work: schedules that do not rise above the study's, without
            ``train_base`` a base run without trained parsers (named, with the commands that
            train it), a record there of another seed, rule or models, or a base head of another
            schedule than the study's; later: a base run or head trained again to other weights
            than the record's, or one to be trained again with other torch threads;
            :class:`OutOfTime` before heads that would end after ``deadline``.
    """
    check = _Check(data, runs, results, cfg, seed=seed, schedules=schedules, rise=rise, models=models,
                   train_base=train_base, jobs=jobs, device=device, progress=progress, deadline=deadline, echo=echo)
    check.refuse()
    check.start()
    for v in check.trains:  # the factor's data with the study's sizes
        setup = piece_setup(Piece(v, seed, "modular", check.models, tuple(check.tests)), check.data, check.runs,
                            check.cfg)
        study_run.generate_piece_data(setup, check.cfg, workers=workers, progress=progress, echo=echo)
    check.run_base()  # 1. the study's schedule, in the base runs
    search = check.search()  # 2. the longer heads, until the rule stops
    # 3. the chosen schedule: the base runs' detector and question parser, the chosen head
    check.run_schedule(search["chosen"], required=True)
    return check.record


class _Check:
    """One call of :func:`run_perception_check` (its arguments, as it names them): the check's
    settings, the record it writes as each step ends, and its steps."""

    def __init__(self, data: str | os.PathLike, runs: str | os.PathLike, results: str | os.PathLike,
                 cfg: StudyConfig, *, seed: int, schedules: Sequence[int], rise: float, models: Sequence[str] | None,
                 train_base: bool, jobs: int, device: str, progress: bool, deadline: float | None,
                 echo: Callable[[str], None]) -> None:
        self.cfg = cfg = results_config(results, cfg)
        self.data, self.runs, self.results = Path(data), Path(runs), Path(results)
        self.models = tuple(cfg.groups["modular"] if models is None else models)
        self.base_epochs = study_epochs(cfg)
        self.schedules = [int(e) for e in schedules]
        self.seed, self.rise, self.train_base, self.jobs, self.device = seed, rise, train_base, jobs, device
        self.progress, self.deadline, self.echo = progress, deadline, echo
        try:
            check_schedules(self.base_epochs, self.schedules)
        except ValueError as e:
            raise StudyError(f"the perception check's {e}") from None
        self.trains, self.tests = perception_variants(cfg)
        self.sources = {v: scene_source(v, cfg) for v in self.trains}
        self.base = {v: VariantRun(self.runs, v, seed, scene_variant=self.sources[v] if self.sources[v] != v else None)
                     for v in self.trains}
        self.record_path = perception_record_path(self.results)
        self.old = read_perception_record(self.results)
        self.out = self.results / PERCEPTION_RESULTS / "predictions"
        self.check_root = self.runs / PERCEPTION_RUNS
        self.rule = {"seed": seed, "metric": PERCEPTION_METRIC, "select": SELECT_METRIC, "rise": rise,
                     "schedules": self.schedules, "base_epochs": self.base_epochs, "models": list(self.models)}
        self.record: dict[str, Any] = {}

    def heads(self, e: int) -> Path:
        """The runs root of the scene parsers whose heads train ``e`` epochs."""
        return self.check_root / "heads" / f"{e}ep"

    def wanted(self, epochs: int, v: str) -> dict[tuple[str, str], Path]:
        return {(m, t): self.out / (CellKey(perception_label(m, epochs), v, t).filename() + ".gz")
                for m in self.models for t in self.tests}

    def done(self, epochs: int, v: str) -> bool:
        ran = (self.old.get("runs") or {}).get(str(epochs), {})
        return v in ran and all(p.is_file() for p in self.wanted(epochs, v).values())

    def save(self) -> None:
        """The record written (after every step)."""
        write_json_atomic(self.record_path, self.record, indent=1)

    def refuse(self) -> None:
        """Every refusal before any work (:func:`run_perception_check`'s first ``Raises``)."""
        cfg, old, rule, base, seed = self.cfg, self.old, self.rule, self.base, self.seed
        if SELECT_METRIC.startswith("e2e.") and SceneParserConfig.from_profile(
                ".", cfg.profile, **dict(cfg.scene_overrides)).e2e_eval_images < 1:
            raise StudyError(f"the perception check chooses its schedule on {SELECT_METRIC} (end-to-end val accuracy "
                             f"after each head epoch), which the study's scene-parser settings do not measure "
                             f"(e2e_eval_images 0 in profile {cfg.profile!r}); give e2e_eval_images in its scene "
                             f"overrides")
        differ = [k for k, v in rule.items() if k in old and old[k] != v]
        if differ:
            raise StudyError(f"{self.record_path}: the check there ran with another {', '.join(differ)} "
                             f"({'; '.join(f'{k} {old[k]!r}, now {rule[k]!r}' for k in differ)}); give another "
                             f"results folder")
        todo = [v for v in self.trains if not self.done(self.base_epochs, v)]
        missing = [(v, p) for v in todo for p in (base[v].scene_dir / DETECTOR_CHECKPOINT, base[v].scene_dir /
                                                  HEAD_CHECKPOINT, base[v].question_dir / QUESTION_CHECKPOINT)
                   if not p.is_file()]
        if missing and not self.train_base:
            v, path = missing[0]
            raise StudyError(f"{path}: the perception check executes the study's run of {v} seed {seed}, whose "
                             f"parsers are not trained there; train them with scripts/run_study.py --only "
                             f"{v}-seed{seed}-modular (where that piece is committed, into another results folder: "
                             f"--results <folder> --config {self.results / STUDY_FILE}), or add --perception-base "
                             f"to train them here with the study's settings")
        for v in self.trains:
            path = base[v].scene_dir / HEAD_CHECKPOINT
            got = (int(load_checkpoint(path, kind=HEAD_KIND)["config"]["attr_epochs"]) if path.is_file()
                   else self.base_epochs)
            if got != self.base_epochs:
                raise StudyError(f"{path}: a head of {got} epochs; the study's schedule, the check's base, is "
                                 f"{self.base_epochs}")

    def start(self) -> None:
        """The results folder's ``study.json`` where it lacks one, and the record, from the one there."""
        old = self.old
        if not (self.results / STUDY_FILE).exists():
            write_json_atomic(self.results / STUDY_FILE, self.cfg.to_json(), indent=1)
        self.record = {"format": PERCEPTION_FORMAT, "factor": PERCEPTION_FACTOR, "study": self.cfg.to_json(),
                       **self.rule, "trains": self.trains, "tests": self.tests, "heads": dict(old.get("heads") or {}),
                       "search": dict(old.get("search") or {}), "runs": dict(old.get("runs") or {}),
                       "other_seconds": list(old.get("other_seconds") or [])}

    def spec(self, v: str, jobs: int, scene_runs: Path | None = None) -> TrainSpec:
        return _spec(self.cfg, v, jobs=jobs, device=self.device, progress=self.progress, scene_runs=scene_runs)

    def lost_parts(self, vs: Sequence[str], question: bool) -> dict[str, list[str]]:
        """What the base runs of ``vs`` lost (``scene parser``, and ``question parser`` with
        ``question``), those that lost something; every refusal to train it again first."""
        lost = {}
        for v in vs:  # every refusal before any work
            entry, run = self.record["runs"][str(self.base_epochs)][v], self.base[v]
            parts = [p for p, gone in (("scene parser", not all((run.scene_dir / n).is_file() for n in
                                                                (DETECTOR_CHECKPOINT, HEAD_CHECKPOINT))),
                                       ("question parser", question and not (run.question_dir / QUESTION_CHECKPOINT)
                                        .is_file())) if gone]
            if not parts:
                continue
            what = " and ".join(parts)
            if not self.train_base:
                raise StudyError(f"{run.path}: the base run of {v} lacks its {what}; run the check where the study's "
                                 f"runs are, or add --perception-base to train them again here (their weights are "
                                 f"checked against the record's)")
            if not entry.get("weights"):
                raise StudyError(f"{self.record_path}: runs.{self.base_epochs}.{v} records no weights digests, so its "
                                 f"{what} trained again could not be checked against the one the check ran on; train "
                                 f"the run again by hand (scripts/run_study.py --only {v}-seed{self.seed}-modular "
                                 f"--results <folder> --config {self.results / STUDY_FILE}), compare its predictions "
                                 f"with the check's {self.base_epochs}-epoch ones, then run the check again")
            if entry.get("threads") not in (None, _threads()):
                raise StudyError(f"{self.record_path}: runs.{self.base_epochs}.{v} trained with {entry['threads']} "
                                 f"torch threads, this process has {_threads()}: give --threads {entry['threads']} "
                                 f"(another count learns other weights)")
            lost[v] = parts
        return lost

    def restore(self, vs: Sequence[str], question: bool) -> None:
        """The base runs of ``vs`` complete (their scene parsers; their question parsers too with
        ``question``): what the runs root lost trained again with the study's settings where
        ``train_base`` (all at once with ``jobs`` 2, :func:`in_processes`), and their weights checked
        against the digests the record holds (those it lacks recorded from what is there)."""
        lost, base, jobs = self.lost_parts(vs, question), self.base, self.jobs
        order = list(lost)
        for v in order:
            self.echo(f"perception check: the base run of {v} seed {self.seed} lost its {' and '.join(lost[v])}; "
                      f"trained again in {base[v].path}")
        calls = [(_train_base, (self.data / v, base[v], _spec(self.cfg, v, jobs=1 if len(order) > 1 else jobs,
                                                               device=self.device,
                                                               progress=self.progress and len(order) == 1),
                                "scene parser" in lost[v], "question parser" in lost[v], self.data / self.sources[v]),
                  base[v].path / "perception_restore.log") for v in order]

        def ended(i: int, seconds: float) -> None:
            self.record["other_seconds"].append({"what": f"the base run of {order[i]}: its "
                                                         f"{' and '.join(lost[order[i]])} trained again (the runs "
                                                         f"root lost them)",
                                                 "commit": study_run._commit(), "seconds": seconds,
                                                 "at_once": len(order) if jobs > 1 else 1})
            self.save()

        in_processes(calls, parallel=jobs > 1, done=ended, what="base runs trained again")
        for v in vs:
            entry, run = self.record["runs"][str(self.base_epochs)][v], base[v]
            got, want = weights(run), dict(entry.get("weights") or {})
            differ = [k for k in want if k in got and got[k] != want[k]]
            if differ:
                raise StudyError(f"{run.path}: the base run of {v} holds other weights than the check ran on "
                                 f"({', '.join(differ)}: {', '.join(f'{got[k][:12]}, recorded {want[k][:12]}' for k in differ)}"
                                 f"): trained on another CPU or with other threads; the check cannot go on with it "
                                 f"(another results folder starts it over)")
            entry["weights"] = {**got, **want}
        self.save()

    def execute(self, epochs: int, vs: Sequence[str], root: Callable[[str], Path],
                spec: Callable[[str, int], TrainSpec]) -> None:
        """The models of the runs of ``vs`` (under ``root(v)``, settings ``spec(v, jobs)``), their
        predictions labelled ``epochs``: all at once with ``jobs`` 2 (:func:`in_processes`; each
        run's output in ``RUNS/perception-schedule/logs/``)."""
        jobs, models, tests, seed = self.jobs, self.models, self.tests, self.seed
        parallel = jobs > 1 and len(vs) > 1
        for v in vs:
            self.echo(f"perception check {epochs}ep {v}: {', '.join(models)} in {root(v)}")
        calls = [(_execute_job, (self.data, v, root(v), models, spec(v, 1 if parallel else jobs), seed, tests),
                  self.check_root / "logs" / f"{epochs}ep_{v}.log") for v in vs]

        def ended(i: int, result: tuple[dict[str, Any], float]) -> None:
            v, (summary, seconds) = vs[i], result
            sp = spec(v, jobs)
            run = VariantRun(root(v), v, seed, scene_variant=sp.scene_variant if sp.scene_variant != v else None,
                             scene_runs=None if sp.scene_runs is None else Path(sp.scene_runs))
            for (m, t), path in self.wanted(epochs, v).items():
                write_predictions(path, read_predictions(run.predictions(m, t)))
            self.record["runs"].setdefault(str(epochs), {})[v] = {
                **_run_entry(run, summary, models, tests, seconds), "steps": dict(summary.get("seconds") or {}),
                "at_once": len(vs) if parallel else 1, "cores": jobs}
            self.save()

        in_processes(calls, parallel=parallel, done=ended, what=f"runs of {epochs} epochs")

    def run_schedule(self, e: int, required: bool, only: Sequence[str] | None = None) -> None:
        """Step 3 for the heads of ``e`` epochs: the models executed with them for the training
        variants not done at ``e``, on the base runs' detectors and question parsers (trained again
        where lost), the heads trained again where lost. Not started where projected to end after
        the deadline: :class:`OutOfTime` when ``required``, else said and skipped. ``only``: those
        training variants alone."""
        trains, deadline, seed = self.trains, self.deadline, self.seed
        left = [v for v in trains if not self.done(e, v) and (only is None or v in only)]
        for v in trains:
            if self.done(e, v):
                self.echo(f"perception check {e}ep {v}: done, skipped")
        if not left:
            return
        need = execution_projection(self.record, self.results, left, self.tests, seed, self.jobs)
        if deadline is not None and need is not None and time.monotonic() + need > deadline:
            why = (f"the models with the heads of {e} epochs on {', '.join(left)} not executed: projected "
                   f"{need / 60:.0f} min, {max(0.0, deadline - time.monotonic()) / 60:.0f} min left")
            if required:
                raise OutOfTime(f"{why}; what is done is in {self.record_path}")
            self.echo(f"perception check: {why}; they run when the search has chosen them")
            return
        self.restore(left, question=True)
        lost = list(dict.fromkeys(self.sources[v] for v in left if not _finished(
            VariantRun(self.heads(e), self.sources[v], seed).scene_dir / HEAD_CHECKPOINT, e)))
        if lost:  # their folders gone since they were recorded
            self.train(e, lost)
        for v in left:
            run = VariantRun(self.check_root / f"{e}ep", v, seed)
            _link(self.base[v].question_dir / QUESTION_CHECKPOINT, run.question_dir / QUESTION_CHECKPOINT)
        self.execute(e, left, lambda v: self.check_root / f"{e}ep",
                     lambda v, j: self.spec(v, j, scene_runs=self.heads(e)))

    def train(self, epochs: int, srcs: Sequence[str]) -> list[str]:
        """The heads of ``srcs`` of ``epochs`` epochs trained (or found finished) and recorded, ``jobs``
        at a time; a head that was recorded before and is trained again must learn the weights the
        record holds. Where the deadline leaves time for some of them only, the first that fit
        (:func:`heads_that_fit`); returns those trained. :class:`OutOfTime` where none fits."""
        if not srcs:
            return []
        record, jobs, seed, deadline = self.record, self.jobs, self.seed, self.deadline
        left = None if deadline is None else deadline - time.monotonic()
        k = heads_that_fit(len(srcs), left, lambda k: head_projection(record, epochs, k, jobs),
                           lambda k: execution_projection(record, self.results, [v for v in self.trains
                                                                                 if self.sources[v] in srcs[:k]],
                                                          self.tests, seed, jobs))
        if k == 0:
            need = head_projection(record, epochs, len(srcs), jobs) or 0.0
            raise OutOfTime(f"the heads of {epochs} epochs of {', '.join(srcs)} not started: projected "
                            f"{need / 60:.0f} min, {max(0.0, left or 0.0) / 60:.0f} min left; "
                            f"what is done is in {self.record_path}")
        if k < len(srcs):
            self.echo(f"perception check: the heads of {epochs} epochs of {', '.join(srcs[:k])} now, of "
                      f"{', '.join(srcs[k:])} in a later call: all of them are projected to end after the time left")
        srcs = list(srcs[:k])
        for src in srcs:
            self.echo(f"perception check: the attribute head of {src} seed {seed}, {epochs} epochs, in "
                      f"{VariantRun(self.heads(epochs), src, seed).scene_dir}")
        todo = [(self.data / src, self.base[src].scene_dir, VariantRun(self.heads(epochs), src, seed).scene_dir)
                for src in srcs]
        at_once = {"at_once": len(todo) if jobs > 1 else 1, "cores": jobs}  # the machine time and rate they had
        train_heads(todo, epochs, self.cfg, seed=seed, jobs=jobs, device=self.device, progress=self.progress,
                    done=lambda i, trained: self.head_ended(srcs[i], todo[i][2], epochs, trained, at_once))
        return srcs

    def head_ended(self, src: str, scene: Path, epochs: int, trained: bool, at_once: dict[str, int]) -> None:
        """The head of ``src`` of ``epochs`` epochs in ``scene`` recorded as it ends (``trained``:
        trained in this call, ``at_once`` beside others): one trained again where its folder was lost
        must have learned the weights the record holds, and its seconds count beside the first's."""
        record = self.record
        old = record["heads"].setdefault(src, {}).get(str(epochs), {})
        got = _head(scene) | (at_once if trained else {})
        if old.get("attributes_weights") not in (None, got["attributes_weights"]):
            raise StudyError(f"{scene}: the head of {src} of {epochs} epochs trained again learned other weights "
                             f"than the record's ({got['attributes_weights'][:12]}, recorded "
                             f"{old['attributes_weights'][:12]}): the check cannot go on with it")
        if old and trained:  # trained again where its folder was lost: its seconds count beside the first's
            record["other_seconds"].append({"what": f"the head of {src} of {epochs} epochs trained again (the "
                                                    f"runs root lost it)", "commit": study_run._commit(),
                                            "seconds": got["seconds"], "at_once": at_once["at_once"]})
            got["seconds"] = old.get("seconds", got["seconds"])
            for k in at_once:  # the first training's, with its seconds
                got.pop(k, None)
        record["heads"][src][str(epochs)] = {**old, **got} | ({"commit": study_run._commit()}
                                                             if trained and not old else {})
        self.save()

    def run_base(self) -> None:
        """Step 1: the study's schedule, in the base runs (what they lack trained with the study's
        settings); their heads recorded."""
        for v in self.trains:
            if self.done(self.base_epochs, v):
                self.echo(f"perception check {self.base_epochs}ep {v}: done, skipped")
        firsts = [v for v in self.trains if not self.done(self.base_epochs, v)]
        self.execute(self.base_epochs, firsts, lambda v: self.runs, lambda v, j: self.spec(v, j))
        for v in firsts:
            self.record["heads"].setdefault(self.sources[v], {})[str(self.base_epochs)] = _head(
                self.base[v].scene_dir, seconds=False)
        self.save()

    def search(self) -> dict[str, Any]:
        """Step 2: the longer heads, schedule after schedule, until the rule stops (every head of a
        schedule first; a head recorded is not trained again for its value), the schedule the search
        would choose so far executed before each; the search recorded and returned."""
        record, trains, sources, seed = self.record, self.trains, self.sources, self.seed
        values: dict[int, dict[str, float]] = {}
        selects: dict[int, dict[str, float | None]] = {}  # the metric the schedule is chosen on
        for src, hs in record["heads"].items():
            for e, h in hs.items():
                values.setdefault(int(e), {})[src] = h["final"][PERCEPTION_METRIC]
                selects.setdefault(int(e), {})[src] = h["final"].get(SELECT_METRIC)
        srcs = list(dict.fromkeys(sources.values()))
        while (search := self.search_now(values, selects, srcs))["next"] is not None:
            e, lead = search["next"], search["leader"]
            if lead is not None:  # the schedule the search would choose now, executed while its heads are here
                self.run_schedule(lead, required=False, only=[v for v in trains if _finished(
                    VariantRun(self.heads(lead), sources[v], seed).scene_dir / HEAD_CHECKPOINT, lead)])
            self.restore(srcs, question=False)
            trained = self.train(e, [src for src in srcs if src not in values.get(e, {})])
            values[e] = {src: record["heads"][src][str(e)]["final"][PERCEPTION_METRIC] for src in srcs
                         if str(e) in record["heads"].get(src, {})}
            selects[e] = {src: record["heads"][src][str(e)]["final"].get(SELECT_METRIC) for src in values[e]}
            rest = [src for src in srcs if src not in values[e]]
            if rest:
                if trained:  # part of a schedule, executed while this call has its heads
                    self.run_schedule(e, required=False, only=[v for v in trains if sources[v] in trained])
                raise OutOfTime(f"the heads of {e} epochs of {', '.join(rest)} not started: no time left for them "
                                f"after those of {', '.join(trained)}; what is done is in {self.record_path}")
        record["search"] = {**{k: search[k] for k in ("tried", "stopped", "chosen")},
                            "mean": {str(e): m for e, m in search["mean"].items()},
                            "select_mean": {str(e): m for e, m in search["select_mean"].items()}}
        self.save()
        chosen, base_epochs = search["chosen"], self.base_epochs
        self.echo(f"perception check: {search['stopped']} after {', '.join(map(str, search['tried']))} epochs; the "
                  f"heads of {chosen} epochs (mean val {SELECT_METRIC} {100 * search['select_mean'][chosen]:.1f}%, "
                  f"{100 * search['select_mean'][base_epochs]:.1f}% at {base_epochs}; val {PERCEPTION_METRIC} "
                  f"{100 * search['mean'][chosen]:.1f}%, {100 * search['mean'][base_epochs]:.1f}%)")
        return search

    def search_now(self, values: Mapping[int, Mapping[str, float]], selects: Mapping[int, Mapping[str, float | None]],
                   srcs: Sequence[str]) -> dict[str, Any]:
        """The rule (:func:`schedule_search`) on the heads of every scene parser in ``srcs`` so far."""
        kept = {e: vs for e, vs in values.items() if e in (self.base_epochs, *self.schedules)
                and all(s in vs for s in srcs)}
        try:
            return schedule_search(kept, self.base_epochs, self.schedules, self.rise,
                                   select={e: selects[e] for e in kept})
        except ValueError as e:
            raise StudyError(f"{self.record_path}: {e} ({SELECT_METRIC}: the heads' end-to-end val accuracy)") from None


__all__ = ["CROP_CACHES", "PERCEPTION_FORMAT", "OutOfTime", "epoch_metrics", "execution_projection", "head_projection",
           "heads_that_fit", "in_processes", "perception_variants", "run_perception_check", "study_epochs", "train_head", "train_heads",
           "weights"]
