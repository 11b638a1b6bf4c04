"""Launching the study's pending pieces as jobs: side by side on this machine (``local``) or on a
SLURM cluster (``slurm``), through submitit (the ``cluster`` extra: ``pip install ".[cluster]"``,
imported only by :func:`launch` and the job wrapper). The sequential launcher (one piece after
another in the calling process) stays in ``scripts/run_study.py``; this module is the floor above
:mod:`orchestration.study.running.piece` (docs/cluster.md; why it is built this way: docs/decisions.md, 2026-12-05).

A launch is a list of :class:`Job` (:func:`plan_jobs`), each a call of ``scripts/run_study.py``
from one code tree (a frozen git worktree of HEAD, :func:`orchestration.study.running.code_tree.frozen_tree`) with absolute data, runs and
results folders, so that every job writes where the submitting checkout reads:

    data-<variant>        generate the splits the launched pieces read of one variant (once, before
                          them; a variant whose splits are complete gets no job)
    parsers-<piece>       (``nodes * gpus_per_node`` > 1) train the piece's parsers data-parallel,
                          one process per GPU, into its run folder
    <piece>               run the piece (:func:`orchestration.study.running.piece.run_piece`; it resumes from its run
                          folder's checkpoints and finds its data and parsers there)

and its dependencies, read from the plan:

    - a job waits for the data jobs of every variant it reads (``afterok``);
    - the jobs of one run folder ``RUNS/<variant>[-seed<N>]`` (its groups read, merge and rewrite
      the same ``summary.json``) run one after another in plan order (``afterany``: a failed piece
      frees the folder);
    - the pieces that use one scene parser (:func:`orchestration.study.settings.pieces.scene_source`) wait for the
      first of them in plan order, the one that trains it (``afterok``).
"""
from __future__ import annotations

import math
import os
import shlex
import signal
import subprocess
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from executors.io import read_json
from nsvqa.config import AUTO_DEVICE, resolve_device
from nsvqa.fileio import write_json_atomic
from nsvqa.generation.dataset import PROFILES, is_complete, job_for
from nsvqa.generation.suite import generate_suite
from nsvqa.generation.variants import load_variant
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.training.scene_config import SceneParserConfig
from orchestration.models import needs as model_needs, parse_specs
from orchestration.study.settings.budget import BUDGET_ANALOG, budget, pending_rows
from orchestration.study.running.code_tree import FROZEN_ENV, SCRIPT
from orchestration.study.settings.pieces import (Piece, PieceSetup, piece_setup, run_folder, scene_parser_folder,
                                                 study_pieces, trains_scene_parser, uses_scene_parser)
from orchestration.study.settings.config import STUDY, STUDY_FILE, StudyConfig, StudyError, results_config

#: The launchers ``run_study.py --launcher`` offers; ``sequential`` runs in the calling process.
LAUNCHERS = ("sequential", "local", "slurm")

#: The one line a launcher other than ``sequential`` fails with when submitit is not installed.
NEEDS_EXTRA = ('the {launcher} launcher needs submitit, the "cluster" extra: pip install ".[cluster]" '
               '(or .venv/bin/python -m pip install submitit)')



#: What a child's stderr says when it stopped on a folder another process holds (FolderInUse).
_BUSY = re.compile(r"FolderInUse|: (run folder|split \S+) in use by ")


class LaunchError(StudyError):
    """A launch that cannot go on as asked (a missing extra, a failed submission, a failed job)."""


@dataclass(frozen=True)
class LaunchOptions:
    """How jobs are shaped and where they go.

    Attributes:
        launcher: ``local`` or ``slurm``.
        parallel: jobs side by side (``local``).
        threads: torch CPU threads of each job (None: torch's default).
        device, jobs, workers: the pieces' ``--device``, ``--jobs``, ``--workers``. A ``device`` of
            ``auto`` is resolved where the jobs run: with ``slurm``, ``cuda`` when ``gpus_per_node``
            asks for GPUs, else ``cpu``; with ``local``, this machine's (:func:`resolve_device`).
        nodes, gpus_per_node: the shape of a parsers job (data-parallel over ``nodes *
            gpus_per_node`` processes); a piece job has one node and ``min(gpus_per_node, 1)`` GPU.
        partition, account, cpus_per_task, slurm: SLURM's (``slurm``: more ``#SBATCH`` flags).
        margin: a job's time limit is its projection times ``1 + margin`` (:func:`time_limit`).
        floor_minutes: the least time limit of a job.
        unprojected_minutes: the time limit of a job nothing projects (data jobs, groups no
            committed piece has measured).
        requeues: how many times a timed-out job is requeued (a preempted one always is).
        folder: submitit's folder (scripts, pickles, logs), on a filesystem every node sees.
        estimate_from: a results folder of committed pieces (``results/study``) whose steps, scaled
            to this study (:func:`scaled_estimate`), project the pieces its own results do not
            (a new folder at another scale); None: such pieces get ``unprojected_minutes``.
        gpu_speedup: the assumed throughput of one GPU over the machine ``estimate_from`` was
            measured on, for pieces on a CUDA device (1 on a CPU).
        retrain_lender: each piece job runs even where it would train again a scene parser that a
            committed piece trained on another CPU (``run_study.py --retrain-lender``).
    """

    launcher: str = "local"
    parallel: int = 2
    threads: int | None = None
    device: str = AUTO_DEVICE
    jobs: int = 2
    workers: int = 2
    nodes: int = 1
    gpus_per_node: int = 0
    partition: str | None = None
    account: str | None = None
    cpus_per_task: int | None = None
    slurm: Mapping[str, str] = field(default_factory=dict)
    margin: float = 0.5
    floor_minutes: int = 30
    unprojected_minutes: int = 240
    requeues: int = 3
    folder: Path = Path("runs/study/launch")
    estimate_from: Path | None = None
    gpu_speedup: float = 100.0
    retrain_lender: bool = False

    def __post_init__(self) -> None:
        if self.device == AUTO_DEVICE:
            where = ("cuda" if self.gpus_per_node > 0 else "cpu") if self.launcher == "slurm" else resolve_device()
            object.__setattr__(self, "device", where)


@dataclass(frozen=True)
class Job:
    """One job of a launch: ``run_study.py argv`` (with the launch's common arguments), after the
    jobs named in ``after_ok`` succeed and those in ``after_any`` end."""

    name: str
    kind: str  # "data", "parsers" or "piece"
    argv: tuple[str, ...]
    after_ok: tuple[str, ...] = ()
    after_any: tuple[str, ...] = ()
    minutes: int = 60
    tasks: int = 1
    nodes: int = 1
    gpus_per_node: int = 0


# ---------------------------------------------------------------------------- the plan of a launch
def data_needs(pieces: Sequence[Piece], data: str | os.PathLike,
               cfg: StudyConfig = STUDY) -> dict[str, dict[str, Any]]:
    """The data the pieces read, by variant folder relative to ``data`` (``mid``, ``parts/mid``):
    ``{"root", "variant", "questions", "splits"}`` each: the train, val and test splits of a piece's
    own variant and of its scene parser's, the test split of each test variant (what
    :func:`orchestration.study.running.piece.generate_piece_data` generates or finds)."""
    out: dict[str, dict[str, Any]] = {}
    for piece in pieces:
        setup = piece_setup(piece, data, ".", cfg)
        for v, splits in setup.splits.items():
            key = (Path(setup.data).relative_to(data) / v).as_posix()
            entry = out.setdefault(key, {"root": Path(setup.data), "variant": v, "questions": setup.questions,
                                         "splits": set()})
            entry["splits"] |= set(splits)
    for entry in out.values():
        order = load_variant(entry["variant"]).available_splits
        entry["splits"] = [s for s in order if s in entry["splits"]]
    return out


def data_complete(entry: Mapping[str, Any], cfg: StudyConfig = STUDY) -> bool:
    """Whether every split of a :func:`data_needs` entry is there, whole, at the study's sizes."""
    width, height = PROFILES[cfg.image_profile].width, PROFILES[cfg.image_profile].height
    return all(is_complete(job_for(Path(entry["root"]), entry["variant"], s, getattr(cfg.sizes, s), cfg.data_seed,
                                   width, height, entry["questions"])) for s in entry["splits"])


def time_limit(projected_minutes: float | None, opts: LaunchOptions) -> int:
    """A job's time limit in minutes: its projection times ``1 + opts.margin``, at least
    ``opts.floor_minutes``; ``opts.unprojected_minutes`` without a projection."""
    if projected_minutes is None:
        return opts.unprojected_minutes
    return max(opts.floor_minutes, int(math.ceil(projected_minutes * (1 + opts.margin))))


def _piece_parsers(setup: PieceSetup) -> tuple[bool, bool]:
    """(scene parser, question parser) the piece's models need and the piece trains itself."""
    return setup.trains_scene_parser, model_needs(parse_specs(list(setup.piece.models))).question_parser


def plan_jobs(todo: Sequence[Piece], data: str | os.PathLike, runs: str | os.PathLike, results: str | os.PathLike,
              cfg: StudyConfig, opts: LaunchOptions, *, projected: Mapping[str, float | None] | None = None,
              ) -> list[Job]:
    """The jobs that run ``todo`` (pending pieces, in plan order) and their dependencies (the
    module's docstring), in an order where each job comes after those it waits for.

    Args:
        projected: piece name -> its projected minutes (default: :func:`orchestration.study.settings.budget.budget`'s).
    """
    if projected is None:
        projected = {p["piece"]: p["minutes"] for p in pending_rows(budget(results, cfg))}
        if opts.estimate_from is not None and any(projected.get(p.name) is None for p in todo):
            speedup = opts.gpu_speedup if opts.device.startswith("cuda") else 1.0
            est = scaled_estimate(opts.estimate_from, results_config(opts.estimate_from), cfg, gpu_speedup=speedup)
            scaled = {r["piece"]: r["measured_scale_minutes"] / speedup for r in est["rows"]}
            projected = {p.name: projected.get(p.name) if projected.get(p.name) is not None
                         else scaled.get(p.name) for p in todo}
    common = ("--data", str(Path(data).resolve()), "--runs", str(Path(runs).resolve()),
              "--results", str(Path(results).resolve()), "--no-progress",
              *(("--threads", str(opts.threads)) if opts.threads else ()))
    jobs: list[Job] = []
    needs = data_needs(todo, data, cfg)
    names = ",".join(p.name for p in todo)
    data_job: dict[str, str] = {}
    for key, entry in needs.items():
        if data_complete(entry, cfg):
            continue
        name = f"data-{key.replace('/', '-')}"
        data_job[key] = name
        jobs.append(Job(name, "data", (*common, "--only", names, "--data-of", key, "--workers", str(opts.workers)),
                        minutes=opts.unprojected_minutes))
    last_in_folder: dict[Path, str] = {}
    scene_trainer: dict[Path, str] = {}
    world = opts.nodes * max(opts.gpus_per_node, 1)
    gpus = 1 if opts.device.startswith("cuda") else 0  # a piece trains on one device
    for piece in todo:
        setup = piece_setup(piece, data, runs, cfg)
        mine = {(setup.data.relative_to(data) / v).as_posix() for v in setup.splits}
        reads = [name for k, name in data_job.items() if k in mine]  # in the order the data jobs were made
        folder = setup.run
        after_any = (last_in_folder[folder],) if folder in last_in_folder else ()
        after_ok = list(reads)
        scene = setup.scene_parser
        if scene is not None:
            if scene in scene_trainer:
                after_ok.append(scene_trainer[scene])
            else:
                scene_trainer[scene] = piece.name
        minutes = projected.get(piece.name)
        if world > 1 and scene is not None and any(_piece_parsers(setup)):
            pname = f"parsers-{piece.name}"
            jobs.append(Job(pname, "parsers", (*common, "--only", piece.name, "--parsers-of", piece.name,
                                               "--device", opts.device),
                            tuple(dict.fromkeys(after_ok)), after_any, time_limit(minutes, opts),
                            tasks=world, nodes=opts.nodes, gpus_per_node=opts.gpus_per_node))
            after_ok, after_any = [pname], ()
        jobs.append(Job(piece.name, "piece", (*common, "--only", piece.name, "--pieces", "1", "--over-cap",
                                              "--device", opts.device, "--jobs", str(opts.jobs),
                                              "--workers", str(opts.workers),
                                              *(("--retrain-lender",) if opts.retrain_lender else ())),
                        tuple(dict.fromkeys(after_ok)), after_any, time_limit(minutes, opts), gpus_per_node=gpus))
        last_in_folder[folder] = piece.name
    return jobs


# ---------------------------------------------------------------------------- what a job runs
def generate_data(key: str, pieces: Sequence[Piece], data: str | os.PathLike, cfg: StudyConfig = STUDY, *,
                  workers: int = 1, progress: bool = True, echo: Callable[[str], None] = print) -> None:
    """A data job: generate (or complete) the splits the pieces read of the variant folder ``key``
    (:func:`data_needs`' key, e.g. ``mid`` or ``parts/mid``).

    Raises:
        StudyError: no piece of ``pieces`` reads ``key`` (the keys they read listed).
    """
    needs = data_needs(pieces, data, cfg)
    if key not in needs:
        raise StudyError(f"no piece of {', '.join(p.name for p in pieces)} reads {key!r}; they read "
                         f"{', '.join(sorted(needs))}")
    e = needs[key]
    generate_suite(e["root"], "all", cfg.image_profile, seed=cfg.data_seed, workers=workers, progress=progress,
                   variants=[e["variant"]], splits={e["variant"]: e["splits"]}, questions=e["questions"],
                   sizes=cfg.sizes, echo=echo)


def train_piece_parsers(piece: Piece, data: str | os.PathLike, runs: str | os.PathLike, cfg: StudyConfig = STUDY,
                        *, device: str = "cpu", progress: bool = True) -> dict[str, float]:
    """A parsers job: train (or resume, or find finished) the scene parser the piece owns and its
    question parser into its run folder, one after the other, with the piece's own
    :attr:`~orchestration.study.settings.pieces.PieceSetup.spec` (so its piece job resumes them); under
    ``WORLD_SIZE`` > 1 (set by the job from submitit's task environment) every process calls this
    and they train data-parallel (:mod:`nsvqa.training.distributed`; rank 0 writes). Returns seconds
    per parser."""
    from orchestration.experiment import VariantRun, train_parsers  # the training stack, only in a parsers job

    setup = piece_setup(piece, data, runs, cfg, jobs=1, device=device, progress=progress)
    scene, question = _piece_parsers(setup)
    run = VariantRun(setup.runs, piece.variant, piece.seed, scene_variant=setup.scene_variant)
    return train_parsers(setup.data / piece.variant, run, setup.spec, scene, question,
                         scene_data=setup.data / setup.scene_variant)


class ScriptJob:
    """What a submitit job calls: ``python SCRIPT argv`` from the code tree ``code`` (its
    ``PYTHONPATH`` and :data:`FROZEN_ENV`), in a child process that ignores SLURM's warning signal.
    A job of several tasks exports ``torch.distributed``'s variables (``RANK``, ``LOCAL_RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``) from submitit's environment first.

    A child that stops on a folder another process holds (:class:`nsvqa.fileio.FolderInUse`: a
    split or a shared scene parser that a piece beside it opened for a moment to find it finished)
    is run again after ``busy_wait_s``, up to ``busy_tries`` times; the piece resumes where it was.

    Preempted or near its time limit, submitit calls :meth:`checkpoint`: the child is interrupted
    (SIGINT: the piece closes its attempt as stopped) and the same call is requeued; the next run
    resumes from the run folder's checkpoints.

    Raises (when called):
        LaunchError: the script exits with a status other than 0.
    """

    def __init__(self, name: str, argv: Sequence[str], code: str | os.PathLike, tasks: int = 1, *,
                 busy_wait_s: float = 30.0, busy_tries: int = 10) -> None:
        self.name, self.argv, self.code, self.tasks = name, tuple(argv), str(code), tasks
        self.busy_wait_s, self.busy_tries = busy_wait_s, busy_tries
        self._child: subprocess.Popen | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_child"}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__dict__.update(state)
        self._child = None

    def command(self) -> list[str]:
        return [sys.executable, str(Path(self.code) / SCRIPT), *self.argv]

    def __call__(self) -> int:
        env = {**os.environ, FROZEN_ENV: self.code,
               "PYTHONPATH": os.pathsep.join([self.code, *filter(None, [os.environ.get("PYTHONPATH")])])}
        if self.tasks > 1:
            from submitit.helpers import TorchDistributedEnvironment  # optional dependency: only inside a job
            d = TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)
            env.update(RANK=str(d.rank), LOCAL_RANK=str(d.local_rank), WORLD_SIZE=str(d.world_size),
                       LOCAL_WORLD_SIZE=str(d.local_world_size), MASTER_ADDR=str(d.master_addr),
                       MASTER_PORT=str(d.master_port))
        for attempt in range(1, self.busy_tries + 1):
            print(f"{self.name}: {shlex.join(self.command())}", flush=True)
            rc, busy = self._run(env)
            if rc == 0 or not busy or attempt == self.busy_tries:
                break
            print(f"{self.name}: a folder was in use; again in {self.busy_wait_s:g} s", file=sys.stderr, flush=True)
            time.sleep(self.busy_wait_s)
        if rc != 0:
            raise LaunchError(f"job {self.name}: {SCRIPT} exited with status {rc} (its output is above)")
        return rc

    def _run(self, env: Mapping[str, str]) -> tuple[int, bool]:
        """The child's exit status, and whether it stopped on a folder in use (its stderr, copied
        to this process's as it comes)."""
        self._child = subprocess.Popen(self.command(), env=dict(env), cwd=self.code, stderr=subprocess.PIPE,
                                       text=True, errors="replace",
                                       preexec_fn=lambda: signal.signal(signal.SIGUSR2, signal.SIG_IGN))
        busy = []

        def copy(stream: Any) -> None:
            for line in stream:
                sys.stderr.write(line)
                if _BUSY.search(line):
                    busy.append(line)
            sys.stderr.flush()

        reader = threading.Thread(target=copy, args=(self._child.stderr,), daemon=True)
        reader.start()
        while (rc := self._child.poll()) is None:  # not wait(): its lock would block checkpoint()'s reaping
            time.sleep(0.5)
        reader.join(timeout=10)
        return rc, bool(busy)

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """Interrupt the child (SIGINT, then SIGKILL after 60 s) and requeue this call."""
        from submitit.helpers import DelayedSubmission  # optional dependency: only inside a job

        child = self._child
        if child is not None and child.returncode is None:
            try:
                child.send_signal(signal.SIGINT)
                for _ in range(600):  # reaped here: this runs in a signal handler, maybe inside poll()
                    if os.waitpid(child.pid, os.WNOHANG)[0]:
                        break
                    time.sleep(0.1)
                else:
                    child.kill()
            except (ChildProcessError, ProcessLookupError):
                pass  # already gone
        return DelayedSubmission(ScriptJob(self.name, self.argv, self.code, self.tasks,
                                           busy_wait_s=self.busy_wait_s, busy_tries=self.busy_tries))


# ---------------------------------------------------------------------------- submitting
def require_submitit(launcher: str) -> Any:
    """The submitit module.

    Raises:
        LaunchError: it is not installed (:data:`NEEDS_EXTRA`: one line naming the extra).
    """
    try:
        import submitit  # optional dependency (the cluster extra): only the local and slurm launchers use it
    except ImportError:
        raise LaunchError(NEEDS_EXTRA.format(launcher=launcher)) from None
    return submitit


def _setup(code: str | os.PathLike) -> list[str]:
    """A job's shell lines before Python starts: the code tree first on its path, so that the job's
    wrapper (:class:`ScriptJob`, unpickled from this module) is the frozen tree's too."""
    q = shlex.quote(str(code))
    return [f"export {FROZEN_ENV}={q}", f'export PYTHONPATH={q}"${{PYTHONPATH:+:$PYTHONPATH}}"']


def _dependency(job: Job, ids: Mapping[str, str]) -> str | None:
    parts = [f"afterok:{ids[n]}" for n in job.after_ok if n in ids]
    parts += [f"afterany:{ids[n]}" for n in job.after_any if n in ids]
    return ",".join(parts) or None


def submit_slurm(jobs: Sequence[Job], code: str | os.PathLike, opts: LaunchOptions,
                 echo: Callable[[str], None] = print) -> dict[str, str]:
    """Submit ``jobs`` to SLURM in order (``sbatch`` through submitit's SlurmExecutor), each with
    its time limit, partition, GPUs and ``--dependency`` on the jobs it waits for; returns job name
    -> SLURM job id (also written to ``FOLDER/submitted.json``, merged over earlier launches').

    Raises:
        LaunchError: ``squeue`` still lists a job of an earlier launch (its pieces would run twice).
    """
    submitit = require_submitit("slurm")
    path = Path(opts.folder) / "submitted.json"
    old = read_json(path, allow_nan=True) if path.is_file() else {}
    alive = _queued(old.values())
    if alive:
        raise LaunchError(f"jobs of an earlier launch are still queued or running ({', '.join(sorted(alive))}; "
                          f"{path}): a second launch would run their pieces twice; wait for them or scancel them")
    ids: dict[str, str] = {}
    for job in jobs:
        ex = submitit.SlurmExecutor(folder=Path(opts.folder) / "%j", max_num_timeout=opts.requeues)
        params: dict[str, Any] = dict(job_name=job.name, time=job.minutes, nodes=job.nodes,
                                      ntasks_per_node=job.tasks // job.nodes, signal_delay_s=120, setup=_setup(code))
        if job.gpus_per_node:
            params["gpus_per_node"] = job.gpus_per_node
        for k, v in (("partition", opts.partition), ("account", opts.account), ("cpus_per_task", opts.cpus_per_task)):
            if v is not None:
                params[k] = v
        dep = _dependency(job, ids)
        if dep:
            params["dependency"] = dep
        # a job whose afterok can no longer be met leaves the queue instead of pending forever
        params["additional_parameters"] = {"kill_on_invalid_dep": "yes", **opts.slurm}
        ex.update_parameters(**params)
        ids[job.name] = ex.submit(ScriptJob(job.name, job.argv, code, job.tasks)).job_id
        echo(f"submitted {job.name}: SLURM job {ids[job.name]} ({job.minutes} min"
             + (f", after {dep}" if dep else "") + ")")
    write_json_atomic(path, {**old, **ids}, indent=1)
    return ids


def _queued(ids: Sequence[str] | Any) -> set[str]:
    """The SLURM job ids of ``ids`` that ``squeue`` still lists (pending, running, requeued)."""
    ids = [str(i) for i in ids]
    if not ids:
        return set()
    try:
        out = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(ids)], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise LaunchError(f"squeue: {e} (needed to see whether an earlier launch's jobs still run)") from None
    return {line.split("_")[0].strip() for line in out.splitlines() if line.strip()} & set(ids)


def run_local(jobs: Sequence[Job], code: str | os.PathLike, opts: LaunchOptions, *, poll_s: float = 0.5,
              echo: Callable[[str], None] = print) -> dict[str, str]:
    """Run ``jobs`` on this machine, ``opts.parallel`` at a time (submitit's LocalExecutor: one
    process per task, its time limit, requeued when it runs out), each when the jobs it waits for
    have ended (``after_ok``: succeeded). With a CUDA device the machine has ``opts.gpus_per_node``
    GPUs (at least 1): a job starts when its GPUs are free and sees only those
    (``CUDA_VISIBLE_DEVICES``). Returns job name -> ``done``, ``failed`` or ``skipped`` (a job it
    needed failed)."""
    submitit = require_submitit("local")
    names = {j.name for j in jobs}
    free = list(range(max(opts.gpus_per_node, 1))) if opts.device.startswith("cuda") else []
    state: dict[str, str] = {}
    running: dict[str, tuple[Any, list[int]]] = {}
    waiting = list(jobs)
    while waiting or running:
        for name, (sj, gpus) in list(running.items()):
            if sj.done():
                del running[name]
                free += gpus
                try:
                    sj.results()  # every task's
                    state[name] = "done"
                except Exception:  # the job's failure: its traceback is in its log
                    state[name] = "failed"
                    echo(f"{name}: failed; its log: {Path(opts.folder) / sj.job_id}/{sj.job_id}_*_log.err")
        for job in list(waiting):
            if any(state.get(n) in ("failed", "skipped") for n in job.after_ok):
                waiting.remove(job)
                state[job.name] = "skipped"
                echo(f"{job.name}: not started (a job it needs failed: {', '.join(job.after_ok)})")
                continue
            want = job.gpus_per_node * job.nodes if opts.device.startswith("cuda") else 0
            if (len(running) >= opts.parallel or len(free) < want
                    or any(n in names and n not in state for n in (*job.after_ok, *job.after_any))):
                continue
            gpus, free = free[:want], free[want:]
            ex = submitit.LocalExecutor(folder=Path(opts.folder) / "%j", max_num_timeout=opts.requeues)
            ex.update_parameters(timeout_min=job.minutes, tasks_per_node=job.tasks, gpus_per_node=len(gpus),
                                 visible_gpus=tuple(gpus), setup=_setup(code))
            running[job.name] = (ex.submit(ScriptJob(job.name, job.argv, code, job.tasks)), gpus)
            waiting.remove(job)
            echo(f"started {job.name} ({job.minutes} min limit" + (f", GPUs {gpus}" if gpus else "") + ")")
        if running:
            time.sleep(poll_s)
    return state


def launch(todo: Sequence[Piece], data: str | os.PathLike, runs: str | os.PathLike, results: str | os.PathLike,
           cfg: StudyConfig, opts: LaunchOptions, code: str | os.PathLike, *,
           echo: Callable[[str], None] = print) -> dict[str, str]:
    """Run or submit ``todo`` (pending pieces) as :func:`plan_jobs` lays them out, from the code
    tree ``code``: ``local`` waits for every job and returns name -> state; ``slurm`` submits and
    returns name -> SLURM job id. The results folder records the study config first (what each
    job then reads).

    Raises:
        LaunchError: submitit missing (:data:`NEEDS_EXTRA`), or an unknown launcher.
        StudyError: the results folder's config differs from ``cfg``.
    """
    if opts.launcher not in ("local", "slurm"):
        raise LaunchError(f"launcher {opts.launcher!r}: expected local or slurm (sequential runs in the script)")
    require_submitit(opts.launcher)  # one line before any work when the extra is missing
    if opts.launcher == "local" and opts.nodes != 1:
        raise LaunchError(f"the local launcher runs on this one machine: --nodes {opts.nodes} needs slurm")
    results_config(results, cfg)
    if not (Path(results) / STUDY_FILE).exists():
        write_json_atomic(Path(results) / STUDY_FILE, cfg.to_json(), indent=1)
    jobs = plan_jobs(todo, data, runs, results, cfg, opts)
    Path(opts.folder).mkdir(parents=True, exist_ok=True)
    if opts.launcher == "slurm":
        return submit_slurm(jobs, code, opts, echo=echo)
    return run_local(jobs, code, opts, echo=echo)


def past_cap(todo: Sequence[Piece], results: str | os.PathLike, cfg: StudyConfig) -> str | None:
    """Why launching ``todo`` would take the study past :attr:`StudyConfig.budget_hours` (None when
    it would not): the committed pieces reach the cap, or one of ``todo`` is projected past it
    (:func:`orchestration.study.settings.budget.budget`, the pending pieces in plan order). The pieces of
    :attr:`StudyConfig.seed_pieces` are held to the reruns' cap the same way, never to the study's."""
    b = budget(results, cfg)
    names = {t.name for t in todo}
    seeded = names & set(cfg.seed_pieces)
    r = b.get("reruns") or {}
    if names - seeded and b["spent_hours"] >= cfg.budget_hours:
        return f"the committed pieces took {b['spent_hours']:.1f} h, the study's {cfg.budget_hours:g}-hour cap"
    if seeded and r["spent_hours"] >= r["cap_hours"]:
        return f"issue 64's reruns and seed pieces took {r['spent_hours']:.1f} h, their {r['cap_hours']:g}-hour cap"
    beyond = [p["piece"] for p in b["pending"] if p["within_cap"] is False and p["piece"] in names]
    if beyond:
        return f"{', '.join(beyond)} would take the study past its {cfg.budget_hours:g}-hour cap"
    beyond = [p["piece"] for p in r.get("pending", []) if p["within_cap"] is False and p["piece"] in names]
    if beyond:
        return f"{', '.join(beyond)} would take issue 64's reruns past their {r['cap_hours']:g}-hour cap"
    return None


# ---------------------------------------------------------------------------- a study at another scale
#: The step kinds of :func:`orchestration.study.settings.budget.budget` and the work each scales with.
_SCALES = {"parsers": "scene", "parsers (shared scene parser)": "question", "test": "test",
           "test (own parser)": "test"}


def scaled_estimate(measured: str | os.PathLike, measured_cfg: StudyConfig, target: StudyConfig, *,
                    gpu_speedup: float) -> dict[str, Any]:
    """An estimate (not a measurement) of the compute of ``target``'s plan from the steps the
    pieces committed under ``measured`` took (run under ``measured_cfg``): each target piece's
    steps are the medians :func:`orchestration.study.settings.budget.budget` projects pending pieces from (its
    group's, or its analog's), each times the work ratio of its step kind:

        own scene parser (``parsers``)     detector iterations x batch x pixels
        question parser alone              question-parser steps x batch
        a model's training or tuning       training images x pixels
        each test                          test images x pixels

    (the configs resolved at each study's profile and overrides). The sum is the measuring
    machine's seconds at the target's scale; divided by ``gpu_speedup`` (an assumed throughput
    of one GPU over that machine, not measured) it is GPU-hours.
    """
    def work(cfg: StudyConfig) -> dict[str, float]:
        img = PROFILES[cfg.image_profile]
        px = img.width * img.height
        sc = SceneParserConfig.from_profile(".", cfg.profile, **cfg.scene_overrides)
        qp = QuestionParserConfig.from_profile(".", cfg.profile, **cfg.question_overrides)
        return {"scene": sc.det_iterations * sc.det_batch * px, "question": qp.steps * qp.batch,
                "model": cfg.sizes.train * px, "test": cfg.sizes.test * px}

    a, b = work(measured_cfg), work(target)
    ratio = {k: b[k] / a[k] for k in a}
    medians = budget(measured, measured_cfg)["step_minutes"]
    rows, total = [], 0.0
    for piece in study_pieces(target):
        steps = medians.get(piece.group) or medians.get(BUDGET_ANALOG.get(piece.group, ""), {})
        own = trains_scene_parser(piece, target)
        minutes = 0.0
        for key, m in steps.items():
            kind = key if key in _SCALES else key.split("_", 1)[0]
            if kind in ("model", "tune") and key.split("_", 1)[1] not in piece.models:
                continue
            if kind in ("parsers", "parsers (shared scene parser)"):
                if not uses_scene_parser(piece) or (kind == "parsers") != own:
                    continue
            if kind.startswith("test") and (kind == "test (own parser)") != own:
                continue
            n = len(piece.tests) if kind.startswith("test") else 1
            minutes += n * m * ratio[_SCALES.get(kind, "model")]
        rows.append({"piece": piece.name, "measured_scale_minutes": minutes})
        total += minutes
    return {"estimate": True, "ratios": ratio, "gpu_speedup": gpu_speedup, "pieces": len(rows),
            "machine_hours": total / 60, "gpu_hours": total / 60 / gpu_speedup, "rows": rows}


def estimate_line(est: Mapping[str, Any], measured: str | os.PathLike) -> str:
    """:func:`scaled_estimate` in one line that says it is an estimate."""
    return (f"ESTIMATE (not measured): {est['pieces']} pieces, {est['machine_hours']:,.0f} hours of the machine that "
            f"measured {measured}'s steps, {est['gpu_hours']:,.0f} GPU-hours at an assumed {est['gpu_speedup']:g}x "
            f"its throughput; work ratios " + ", ".join(f"{k} {v:,.1f}x" for k, v in est["ratios"].items()))


__all__ = ["LAUNCHERS", "NEEDS_EXTRA", "LaunchError", "LaunchOptions", "Job", "run_folder", "scene_parser_folder",
           "data_needs", "data_complete", "time_limit", "plan_jobs", "generate_data",
           "train_piece_parsers", "ScriptJob", "require_submitit", "submit_slurm", "run_local", "launch",
           "past_cap", "scaled_estimate", "estimate_line"]
