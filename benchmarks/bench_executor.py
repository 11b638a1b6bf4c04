#!/usr/bin/env python3
"""Executor throughput benchmark: questions per second on ONE CPU core (and on a GPU if present).

Measured, on the CLEVR reference set (5,000 official questions on 500 val scenes) and on the
Super-CLEVR part questions (450 questions on 10 scenes):

* the deterministic executor (``DeterministicExecutor``, Python big-int bit sets);
* the batched probabilistic executor on numpy, modes ``threshold`` and ``exact``, float32 and
  float64, on one-hot likelihoods built from the ground-truth scenes;
* the same on torch CPU tensors (both modes, float32, ``torch.set_num_threads(1)``);
* the same on CUDA (both modes, float32) when ``torch.cuda.is_available()``, else skipped with a note.

Figures (the definition of ``questions_per_second`` in scripts/execute_programs.py): only
``executor.execute(prepared)`` is timed; loading scenes and questions, parsing programs and
``executor.prepare`` (compiling programs and scenes, building likelihoods) happen outside the
timed region (``prepare_s`` is reported separately, measured once, cold). Each configuration is run
once to warm up, then at least ``--repeat`` times and until ``--min-time`` seconds of timed runs
have accumulated; ``median`` and ``best`` are questions / (median or shortest run time). Nothing
runs between two timed calls (no ``gc.collect()``: it would evict the executor's buffers from the
caches and cost ~30 %; the collector itself stays on, as in a real run). Every run's answers must equal
the reference answers (100 %); a wrong answer fails the benchmark (exit status 1). Missed targets
are informational only (never a non-zero exit).

The process pins itself to one core (the first allowed CPU, or ``--cpu``) and sets
OMP/MKL/OPENBLAS_NUM_THREADS=1 before numpy is imported.

Usage::

    python benchmarks/bench_executor.py                    # `make bench`
    python benchmarks/bench_executor.py --backends deterministic,numpy --min-time 0.5
    python benchmarks/bench_executor.py --scenes S.json --questions Q.json --out runs/bench/x.json

Exit status: 0 (also when the reference files are absent: a note is printed), 1 when an executor
answered a question wrongly, 2 for bad arguments.
"""
# One core: the thread counts of the BLAS / OpenMP runtimes must be fixed before numpy (or torch)
# is imported, so this comes before every other import.
import os

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
for _name in THREAD_ENV:
    os.environ[_name] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

from executors import DeterministicExecutor, ProbabilisticExecutor  # noqa: E402
from executors.errors import ExecutionError  # noqa: E402
from executors.io import (load_questions, load_scenes, normalize_answer, parse_program,  # noqa: E402
                          question_scene, scene_lookup)
from executors.scene import SceneLikelihoods  # noqa: E402
from nsvqa.fileio import atomic_open

PROG = "bench_executor.py"
REFERENCE = REPO.parent / "shared" / "reference"
DEFAULT_SCENES = REFERENCE / "clevr" / "CLEVR_val_scenes_500.json"
DEFAULT_QUESTIONS = REFERENCE / "clevr" / "CLEVR_val_questions_500_official.json"
DEFAULT_SC_SCENES = REFERENCE / "superclevr" / "superCLEVR_scenes.json"
DEFAULT_SC_QUESTIONS = REFERENCE / "superclevr" / "superCLEVR_questions_official_parts.json"
DEFAULT_OUT = REPO / "runs" / "bench" / "bench_executor.json"
BACKENDS = ("deterministic", "numpy", "torch", "cuda")

#: The official CLEVR question engine's executor on the 5,000 reference questions, one quiet core.
OFFICIAL_ENGINE_QPS = 80_000
#: Informational targets (questions/s): deterministic and batched probabilistic on one core, GPU.
TARGETS = {"deterministic": 80_000, "cpu": 800_000, "gpu": 5_000_000}


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenes", type=Path, default=DEFAULT_SCENES,
                   help="CLEVR scenes JSON (default: ../shared/reference/clevr/CLEVR_val_scenes_500.json; "
                        "../shared/reference is the developers' reference data, absent in a clone)")
    p.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS,
                   help="CLEVR questions JSON (default: ../shared/reference/clevr/"
                        "CLEVR_val_questions_500_official.json, developers' reference data)")
    p.add_argument("--sc-scenes", type=Path, default=DEFAULT_SC_SCENES,
                   help="Super-CLEVR scenes JSON (default: ../shared/reference/superclevr/superCLEVR_scenes.json, "
                        "developers' reference data)")
    p.add_argument("--sc-questions", type=Path, default=DEFAULT_SC_QUESTIONS,
                   help="Super-CLEVR part questions JSON (default: ../shared/reference/superclevr/"
                        "superCLEVR_questions_official_parts.json, developers' reference data)")
    p.add_argument("--no-superclevr", action="store_true", help="only the CLEVR set")
    p.add_argument("--backends", default=",".join(BACKENDS),
                   help=f"comma-separated subset of {','.join(BACKENDS)} (default: all; cuda only if available)")
    p.add_argument("--repeat", type=int, default=7, help="at least this many timed runs per configuration (default: 7)")
    p.add_argument("--min-time", type=float, default=1.0,
                   help="...and at least this many seconds of timed runs (default: 1.0)")
    p.add_argument("--max-repeat", type=int, default=10_000,
                   help="at most this many timed runs (bounds --min-time on tiny sets; default: 10000)")
    p.add_argument("--replicate", type=int, default=1,
                   help="repeat each question list K times (larger batches, e.g. for a GPU; default: 1)")
    p.add_argument("--max-batch", type=int, default=None,
                   help="probabilistic executor's questions per chunk (default: the executor's)")
    p.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the first allowed one)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help="JSON results (default: runs/bench/bench_executor.json, git-ignored)")
    return p


def info(msg: str = "") -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------- environment
def pin_to_one_core(cpu: int | None) -> tuple[int | None, str]:
    """Restrict this process to one core; returns (core, note)."""
    if not hasattr(os, "sched_setaffinity"):
        return None, "os.sched_setaffinity unavailable: not pinned to one core"
    allowed = sorted(os.sched_getaffinity(0))
    core = allowed[0] if cpu is None else cpu
    if core not in allowed:
        raise ValueError(f"--cpu {core} is not among the allowed cores {allowed}")
    os.sched_setaffinity(0, {core})
    return core, f"pinned to core {core} (allowed: {allowed})"


def git_revision() -> str | None:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if rev.returncode != 0:
        return None
    return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def machine_info(torch_mod) -> dict:
    out = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "torch": getattr(torch_mod, "__version__", None),
        "cuda_device": None,
        "git": git_revision(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    out["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if torch_mod is not None and torch_mod.cuda.is_available():
        out["cuda_device"] = torch_mod.cuda.get_device_name(0)
    return out


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


# ---------------------------------------------------------------------- data
@dataclass
class Dataset:
    name: str
    scenes_path: Path
    questions_path: Path
    onto: Any
    scenes: list          # the scenes questions refer to, renumbered 0..k-1
    programs: list
    scene_index: list[int]
    gold: list[str]       # normalized reference answers
    load_s: float


def load_dataset(name: str, scenes_path: Path, questions_path: Path, replicate: int) -> Dataset:
    t0 = time.perf_counter()
    scenes, onto = load_scenes(scenes_path)
    questions = load_questions(questions_path)
    lookup = scene_lookup(scenes)
    programs, positions = [], []
    for i, q in enumerate(questions):
        where = f"{questions_path}, question {i}"
        positions.append(question_scene(q, lookup, where))
        programs.append(parse_program(q, onto, where))
    # as in execute_programs.py: only the scenes that questions refer to, renumbered 0..k-1
    used = sorted(set(positions))
    remap = {p: k for k, p in enumerate(used)}
    load_s = time.perf_counter() - t0
    gold = [normalize_answer(q.get("answer")) for q in questions]
    return Dataset(name, scenes_path, questions_path, onto, [scenes[p] for p in used],
                   programs * replicate, [remap[p] for p in positions] * replicate, gold * replicate, load_s)


# ---------------------------------------------------------------------- timing
def answer_key(a: Any) -> str:
    if isinstance(a, ExecutionError):
        return f"<{type(a).__name__}: {a}>"
    item = getattr(a, "item", None)  # numpy scalars
    if callable(item) and not isinstance(a, (str, bytes)):
        a = item()
    return normalize_answer(a)


def time_execute(fn: Callable[[], list], n: int, repeat: int, min_time: float, max_repeat: int,
                 sync: Callable[[], None] | None = None) -> tuple[dict, list[str], bool]:
    """Warm up once, then time ``fn()`` at least ``repeat`` times and ``min_time`` seconds.

    Returns (stats, answers of the warm-up run, whether every timed run gave the same answers).
    """
    def once() -> tuple[list, float, float]:
        if sync is not None:
            sync()
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        if sync is not None:
            sync()
        t1, c1 = time.perf_counter(), time.process_time()
        return out, t1 - t0, c1 - c0

    first, _, _ = once()
    keys = [answer_key(a) for a in first]
    stable = True
    walls: list[float] = []
    cpus: list[float] = []
    while len(walls) < repeat or (sum(walls) < min_time and len(walls) < max_repeat):
        out, wall, cpu = once()
        walls.append(wall)
        cpus.append(cpu)
        if len(out) != len(keys) or [answer_key(a) for a in out] != keys:
            stable = False
    med, best = statistics.median(walls), min(walls)
    stats = {
        "reps": len(walls),
        "median_s": med, "best_s": best, "worst_s": max(walls),
        "qps_median": n / med if med > 0 else None,
        "qps_best": n / best if best > 0 else None,
        # process CPU time / wall time over the timed runs: well below 1 on a CPU backend means
        # the core was shared (preemption) or the process waited
        "cpu_util": sum(cpus) / sum(walls) if sum(walls) > 0 else None,
    }
    return stats, keys, stable


def rule_breakdown(ex: ProbabilisticExecutor, chunks: list, min_time: float, repeat: int) -> dict | None:
    """Per rule: rows and milliseconds per execution of the prepared set (``_execute(timings=)``)."""
    timings: dict = {}
    reps, total = 0, 0.0
    try:
        for c in chunks:  # warm-up (the timed runs already allocated the buffers)
            ex._execute(c, keep=False, distributions=False, timings={})
        while reps < repeat or (total < min_time and reps < 1000):
            t0 = time.perf_counter()
            for c in chunks:
                ex._execute(c, keep=False, distributions=False, timings=timings)
            total += time.perf_counter() - t0
            reps += 1
    except TypeError as e:  # an executor without the timings hook
        return {"error": f"_execute(timings=...) not supported: {e}"}
    rules = sorted(timings.items(), key=lambda kv: -kv[1][1])
    in_rules = sum(s for _, (_, s) in rules)
    return {
        "reps": reps,
        "total_ms": 1e3 * total / reps,
        "outside_rules_ms": 1e3 * (total - in_rules) / reps,
        "rules": [{"rule": name, "rows": rows / reps, "ms": 1e3 * s / reps,
                   "ns_per_row": 1e9 * s / rows if rows else None,
                   "share": s / total if total > 0 else None} for name, (rows, s) in rules],
    }


# ---------------------------------------------------------------------- configurations
@dataclass
class Config:
    executor: str          # deterministic / probabilistic
    backend: str           # python / numpy / torch-cpu / cuda
    mode: str | None
    dtype: str | None
    target: str            # key of TARGETS

    @property
    def label(self) -> str:
        return " ".join(x for x in (self.executor, self.backend, self.mode, self.dtype) if x)


def configs(backends: set[str], torch_mod, notes: list[str]) -> list[Config]:
    out = []
    if "deterministic" in backends:
        out.append(Config("deterministic", "python", None, None, "deterministic"))
    if "numpy" in backends:
        for dtype in ("float32", "float64"):
            for mode in ("threshold", "exact"):
                out.append(Config("probabilistic", "numpy", mode, dtype, "cpu"))
    if "torch" in backends and torch_mod is not None:
        for mode in ("threshold", "exact"):
            out.append(Config("probabilistic", "torch-cpu", mode, "float32", "cpu"))
    if "cuda" in backends and torch_mod is not None:
        if torch_mod.cuda.is_available():
            for mode in ("threshold", "exact"):
                out.append(Config("probabilistic", "cuda", mode, "float32", "gpu"))
        else:
            notes.append("cuda: skipped, torch.cuda.is_available() is False on this machine")
    return out


def run_config(cfg: Config, ds: Dataset, args, torch_mod) -> tuple[dict, Any, list]:
    n = len(ds.programs)
    sync = None
    if cfg.executor == "deterministic":
        ex: Any = DeterministicExecutor(ds.onto)
        t0 = time.perf_counter()
        prepared: Any = ex.prepare(ds.programs, ds.scenes, ds.scene_index)
        prepare_s = time.perf_counter() - t0
    else:
        device = {"numpy": None, "torch-cpu": "cpu", "cuda": "cuda"}[cfg.backend]
        kw = {} if args.max_batch is None else {"max_batch": args.max_batch}
        ex = ProbabilisticExecutor(ds.onto, mode=cfg.mode, device=device, dtype=cfg.dtype, **kw)
        if cfg.backend == "cuda":
            sync = torch_mod.cuda.synchronize
            sync()
        t0 = time.perf_counter()
        liks = [SceneLikelihoods.from_scene(s) for s in ds.scenes]
        prepared = ex.prepare(ds.programs, liks, ds.scene_index)
        if sync is not None:
            sync()
        prepare_s = time.perf_counter() - t0
    stats, keys, stable = time_execute(lambda: ex.execute(prepared), n, args.repeat, args.min_time,
                                       args.max_repeat, sync)
    wrong = [(i, k, g) for i, (k, g) in enumerate(zip(keys, ds.gold)) if k != g]
    correct = n - len(wrong)
    target = TARGETS[cfg.target]
    row = {
        "dataset": ds.name, "executor": cfg.executor, "backend": cfg.backend, "mode": cfg.mode,
        "dtype": cfg.dtype, "n_questions": n, "prepare_s": prepare_s, **stats,
        "correct": correct, "accuracy": correct / n if n else None,
        "answers_stable": stable, "ok": not wrong and stable,
        "target_qps": target,
        "target_status": ("PASS" if (stats["qps_median"] or 0) >= target else "BELOW"),
        "vs_official_engine": (stats["qps_median"] or 0) / OFFICIAL_ENGINE_QPS,
    }
    return row, (ex, prepared), wrong


# ---------------------------------------------------------------------- output
def fmt_qps(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def print_table(rows: list[dict]) -> None:
    head = ("dataset", "executor", "backend", "mode", "dtype", "n", "reps", "median q/s", "best q/s",
            "median ms", "prepare s", "acc", "cpu", "x official", "target", "")
    body = []
    for r in rows:
        body.append((r["dataset"], r["executor"], r["backend"], r["mode"] or "-", r["dtype"] or "-",
                     str(r["n_questions"]), str(r["reps"]), fmt_qps(r["qps_median"]), fmt_qps(r["qps_best"]),
                     f"{1e3 * r['median_s']:.2f}", f"{r['prepare_s']:.3f}",
                     f"{100 * r['accuracy']:.1f}%" if r["accuracy"] is not None else "-",
                     f"{r['cpu_util']:.2f}" if r["cpu_util"] is not None else "-",
                     f"{r['vs_official_engine']:.1f}x", fmt_qps(r["target_qps"]),
                     r["target_status"] if r["ok"] else "FAILED"))
    widths = [max(len(h), *(len(b[k]) for b in body)) for k, h in enumerate(head)]
    right = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
    line = lambda cells: "  ".join(c.rjust(w) if k in right else c.ljust(w)  # noqa: E731
                                   for k, (c, w) in enumerate(zip(cells, widths))).rstrip()
    info(line(head))
    info(line(tuple("-" * w for w in widths)))
    for b in body:
        info(line(b))


def print_breakdown(name: str, bd: dict) -> None:
    if "error" in bd:
        info(f"per-rule breakdown ({name}): {bd['error']}")
        return
    info(f"\nper-rule breakdown, {name} (probabilistic numpy threshold float32; per execution of the "
         f"set, mean of {bd['reps']} runs with per-group timers on):")
    info(f"  {'rule':<22}{'rows':>8}{'ms':>9}{'ns/row':>9}{'share':>8}")
    for r in bd["rules"]:
        ns = f"{r['ns_per_row']:.0f}" if r["ns_per_row"] is not None else "-"
        info(f"  {r['rule']:<22}{r['rows']:>8.0f}{r['ms']:>9.3f}{ns:>9}{100 * r['share']:>7.1f}%")
    info(f"  {'(outside the rules)':<22}{'':>8}{bd['outside_rules_ms']:>9.3f}{'':>9}"
         f"{100 * bd['outside_rules_ms'] / bd['total_ms']:>7.1f}%")
    info(f"  {'total':<22}{'':>8}{bd['total_ms']:>9.3f}")


def write_json_atomic(path: Path, data: dict) -> None:
    with atomic_open(path, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parser.parse_args(argv)
    backends = {b.strip() for b in args.backends.split(",") if b.strip()}
    if not backends or backends - set(BACKENDS):
        parser.error(f"--backends: choose from {', '.join(BACKENDS)}")
    if args.repeat < 1 or args.max_repeat < args.repeat or args.min_time < 0 or args.replicate < 1:
        parser.error("need --repeat >= 1, --max-repeat >= --repeat, --min-time >= 0, --replicate >= 1")
    try:
        core, pin_note = pin_to_one_core(args.cpu)
    except ValueError as e:
        parser.error(str(e))
    notes: list[str] = [pin_note]
    load_start = load_average()

    # the first data set is the one the targets refer to (CLEVR unless --questions names another)
    primary = "clevr" if args.questions == DEFAULT_QUESTIONS else args.questions.stem
    wanted = [(primary, args.scenes, args.questions)]
    if not args.no_superclevr:
        wanted.append(("superclevr-parts", args.sc_scenes, args.sc_questions))
    present = []
    for name, s, q in wanted:
        missing = [str(p) for p in (s, q) if not p.is_file()]
        if missing:
            notes.append(f"{name}: skipped, file(s) not found: {', '.join(missing)}")
        else:
            present.append((name, s, q))
    if not present:
        for n in notes[1:]:
            info(f"{PROG}: note: {n}")
        info(f"{PROG}: no reference data, nothing to benchmark (the reference set lives in "
             f"../shared/reference next to the repository; pass --scenes/--questions to use other files)")
        return 0

    torch_mod = None
    if backends & {"torch", "cuda"}:
        try:
            import torch as torch_mod
        except ImportError:
            notes.append("torch not installed: torch-cpu and cuda skipped")
        else:
            torch_mod.set_num_threads(1)
            try:
                torch_mod.set_num_interop_threads(1)
            except RuntimeError:  # already set (torch used earlier in this process)
                pass
    cfgs = configs(backends, torch_mod, notes)
    machine = machine_info(torch_mod)

    info(f"{PROG}: {pin_note}; {', '.join(f'{v}=1' for v in THREAD_ENV)}"
         + (f"; torch threads {torch_mod.get_num_threads()}" if torch_mod is not None else ""))
    info(f"machine: {machine.get('cpu_model') or machine['processor'] or machine['machine']}, "
         f"{machine['cpu_count']} CPUs; {machine['platform']}; Python {machine['python']}, "
         f"numpy {machine['numpy']}, torch {machine['torch']}; load average {load_start}")
    info(f"timing: warm-up, then >= {args.repeat} runs and >= {args.min_time:g} s of runs per configuration; "
         f"execute() only (load and prepare outside)\n")

    datasets, rows, breakdowns, failures = [], [], {}, []
    for name, s, q in present:
        ds = load_dataset(name, s, q, args.replicate)
        datasets.append({"name": name, "scenes": str(s), "questions": str(q), "n_questions": len(ds.programs),
                         "n_scenes": len(ds.scenes), "replicate": args.replicate, "ontology": ds.onto.name,
                         "load_s": ds.load_s})
        info(f"{name}: {len(ds.programs)} questions on {len(ds.scenes)} scenes ({ds.onto.name}), "
             f"loaded and parsed in {ds.load_s:.2f} s")
        for cfg in cfgs:
            row, (ex, prepared), wrong = run_config(cfg, ds, args, torch_mod)
            rows.append(row)
            info(f"  {cfg.label:<42} median {fmt_qps(row['qps_median']):>7} q/s  best "
                 f"{fmt_qps(row['qps_best']):>7} q/s  ({row['reps']} runs)"
                 + ("" if row["ok"] else "  FAILED"))
            if wrong or not row["answers_stable"]:
                msg = (f"{name}, {cfg.label}: {len(wrong)} of {row['n_questions']} answers differ from the "
                       f"reference" + (", first (question, got, want): " + str(wrong[:5]) if wrong else "")
                       + ("" if row["answers_stable"] else "; answers changed between runs"))
                failures.append(msg)
                info(f"  ERROR: {msg}")
            if (cfg.backend, cfg.mode, cfg.dtype) == ("numpy", "threshold", "float32") and row["ok"]:
                breakdowns[name] = rule_breakdown(ex, prepared, args.min_time / 2, args.repeat)
            del ex, prepared
        info("")

    load_end = load_average()
    for r in rows:
        if r["backend"] != "cuda" and r["cpu_util"] is not None and r["cpu_util"] < 0.9:
            notes.append(f"{r['dataset']}, {r['executor']} {r['backend']} {r['mode'] or ''} "
                         f"{r['dtype'] or ''}: CPU time / wall time {r['cpu_util']:.2f} (< 0.9): "
                         f"the core was shared, figures are noisy")
    notes.append(f"load average (1, 5, 15 min) at start {load_start}, at end {load_end}")

    print_table(rows)
    for name, bd in breakdowns.items():
        print_breakdown(name, bd)

    info(f"\nreference: the official CLEVR engine executes the 5,000 CLEVR questions at "
         f"~{OFFICIAL_ENGINE_QPS // 1000}k q/s on one quiet core ('x official' = median / that).")
    info(f"targets (informational, median q/s on {primary}): deterministic >= 80k on one core, batched "
         "probabilistic >= 800k on one core, >= 5M on a GPU")
    clevr = [r for r in rows if r["dataset"] == primary and r["ok"]]
    summary = {}
    for key, label, sel in (
            ("deterministic", "deterministic (one core)", lambda r: r["executor"] == "deterministic"),
            ("cpu", "probabilistic, best CPU configuration (one core)",
             lambda r: r["executor"] == "probabilistic" and r["backend"] != "cuda"),
            ("gpu", "probabilistic on CUDA", lambda r: r["backend"] == "cuda")):
        cand = [r for r in clevr if sel(r)]
        if not cand:
            info(f"  {label:<50} not measured")
            summary[key] = None
            continue
        best = max(cand, key=lambda r: r["qps_median"] or 0)
        status = "PASS" if (best["qps_median"] or 0) >= TARGETS[key] else "BELOW"
        cfg = " ".join(x for x in (best["backend"], best["mode"], best["dtype"]) if x)
        info(f"  {label:<50} {fmt_qps(best['qps_median']):>7} q/s vs {fmt_qps(TARGETS[key]):>4}: {status}"
             f"  [{cfg}]")
        summary[key] = {"qps_median": best["qps_median"], "target_qps": TARGETS[key], "status": status,
                        "backend": best["backend"], "mode": best["mode"], "dtype": best["dtype"]}

    info("\nnotes:")
    for n in notes:
        info(f"  - {n}")

    result = {
        "benchmark": "bench_executor",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine,
        "settings": {"pinned_cpu": core, "thread_env": {v: os.environ.get(v) for v in THREAD_ENV},
                     "torch_threads": torch_mod.get_num_threads() if torch_mod is not None else None,
                     "repeat": args.repeat, "min_time_s": args.min_time, "max_repeat": args.max_repeat,
                     "replicate": args.replicate, "max_batch": args.max_batch, "gc_during_timing": True,
                     "backends": sorted(backends)},
        "reference": {"official_clevr_engine_qps": OFFICIAL_ENGINE_QPS},
        "targets": TARGETS,
        "datasets": datasets,
        "results": rows,
        "target_summary": {"dataset": primary, **summary},
        "rule_breakdown": breakdowns,
        "load_average": {"start": load_start, "end": load_end},
        "notes": notes,
        "failures": failures,
        "ok": not failures,
    }
    write_json_atomic(args.out, result)
    info(f"\nwrote {args.out}")
    if failures:
        print(f"\n{PROG}: FAILED: {len(failures)} configuration(s) did not reproduce the reference "
              f"answers:", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
