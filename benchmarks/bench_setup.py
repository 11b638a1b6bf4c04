"""A newcomer's first contact: ``make demo`` and ``make test`` on a fresh clone, set-up included.

    python benchmarks/bench_setup.py                      # both, each on its own fresh clone of HEAD
    python benchmarks/bench_setup.py --steps demo --warm-cache
    python benchmarks/bench_setup.py --rev 1a2b3c4 --keep

Each step gets its own ``git clone`` of ``--repo`` (default: this checkout) at ``--rev`` (default
HEAD; committed files only, so uncommitted changes are not measured and a note says so), in a
temporary folder. In it ``make venv`` runs first and then the step (``make demo``, ``make test``),
each timed: the wall clock (``time.perf_counter``) and the children's CPU time (user + system,
``resource.getrusage``); the row's total is what ``make demo`` / ``make test`` alone would take
there. By default the installer's cache (``UV_CACHE_DIR``) is a new empty folder per clone, as
on a new machine; ``--warm-cache`` keeps the caller's. Variables naming local data
(``NSVQA_*``), ``PYTHONPATH`` and ``VIRTUAL_ENV`` are removed from the steps' environment.

Targets (issue 44): ``make demo`` <= 120 s with the same accuracy, ``make test`` <= 300 s with no
test dropped. The row carries the demo's accuracies (from its ``report.json``) and the test
summary (passed / skipped / failed), so that a faster run that answers differently or runs fewer
tests shows as such. Output of each command: ``runs/bench/setup-<step>.log``; results:
``runs/bench/bench_setup.json`` (written atomically). Exit status 1 when a command fails (its
log's tail is printed), 2 for bad arguments; a missed target is informational (0).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nsvqa.fileio import write_json_atomic

REPO = Path(__file__).resolve().parents[1]
#: step -> (make target, target seconds, what else must hold)
STEPS = {"demo": ("demo", 120.0, "same accuracy"), "test": ("test", 300.0, "no test dropped")}
#: where ``make demo`` writes its report, relative to the clone (the Makefile's DEMO_OUT)
DEMO_REPORT = Path("outputs/demo/report/visual/report.json")
#: pytest's closing summary: "1352 passed, 42 skipped in 300.1s"
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", type=Path, default=REPO, help="repository to clone (default: this checkout)")
    p.add_argument("--rev", default="HEAD", help="revision to measure (default: HEAD)")
    p.add_argument("--steps", nargs="+", choices=sorted(STEPS), default=["demo", "test"])
    p.add_argument("--warm-cache", action="store_true",
                   help="keep the caller's UV_CACHE_DIR (default: a new empty one per clone, as on a new machine)")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where the clones go (default: a new temporary folder, removed afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the clones")
    p.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "bench_setup.json")
    return p


def _env(cache: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NSVQA_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if cache is not None:
        env["UV_CACHE_DIR"] = str(cache)
    return env


def _timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> dict:
    """Run ``cmd`` with its output appended to ``log``: wall s, children's CPU s, exit status."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}  (in {cwd})\n")
        f.flush()
        rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"command": " ".join(cmd), "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "returncode": rc}


def demo_accuracy(clone: Path) -> dict[str, dict[str, float]]:
    """model -> test variant -> accuracy, from the demo's report (empty when it has none)."""
    try:
        report = json.loads((clone / DEMO_REPORT).read_text())
    except (OSError, ValueError):
        return {}
    out: dict[str, dict[str, float]] = {}
    for c in report.get("cells", []):
        out.setdefault(c["model"], {})[c["test"]] = c["value"]
    return out


def test_summary(log: Path) -> dict[str, int]:
    """passed / skipped / failed ... from the last pytest summary line in ``log``."""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if SUMMARY.search(ln) and " in " in ln]
    return {k if not k.startswith("error") else "errors": int(n) for n, k in SUMMARY.findall(lines[-1])} if lines else {}


def measure_step(step: str, repo: Path, sha: str, work: Path, logs: Path, *, warm_cache: bool,
                 keep: bool) -> dict:
    """Clone ``repo`` at ``sha`` into ``work/clone-<step>`` (replacing one there), then time ``make
    venv`` and, when it succeeds, the step's make target there (:data:`STEPS`), both logged to
    ``logs/setup-<step>.log`` (emptied first); the installer's cache is ``work/uv-cache-<step>``
    unless ``warm_cache``. Returns the step's row: both timings, their totals, the target and
    whether it was met, and the demo's accuracies or the test summary. A failure prints the log's
    last 30 lines to stderr; without ``keep`` the clone and its cache are removed."""
    target, limit, condition = STEPS[step]
    clone = work / f"clone-{step}"
    if clone.exists():
        shutil.rmtree(clone)
    log = logs / f"setup-{step}.log"
    log.write_text("")
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(repo), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", "--detach", sha], check=True)
    cache = None if warm_cache else work / f"uv-cache-{step}"
    env = _env(cache)
    print(f"{step}: fresh clone of {sha[:12]} in {clone}; make venv, then make {target} "
          f"(log {log}) ...", flush=True)
    setup = _timed(["make", "venv"], clone, env, log)
    run = _timed(["make", target], clone, env, log) if setup["returncode"] == 0 else None
    ok = run is not None and run["returncode"] == 0
    total = setup["seconds"] + (run["seconds"] if run else 0.0)
    row = {"step": f"make {target}", "setup": setup, "run": run, "seconds": round(total, 1),
           "cpu_seconds": round(setup["cpu_seconds"] + (run["cpu_seconds"] if run else 0.0), 1),
           "target_seconds": limit, "condition": condition, "ok": ok,
           "meets_target": ok and total <= limit}
    if step == "demo":
        row["accuracy"] = demo_accuracy(clone)
    else:
        row["tests"] = test_summary(log)
    if not ok:
        print(f"{step}: FAILED; the end of {log}:", file=sys.stderr)
        print("\n".join(log.read_text(errors="replace").splitlines()[-30:]), file=sys.stderr)
    if not keep:
        shutil.rmtree(clone, ignore_errors=True)
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    return row


def print_rows(rows: list[dict], sha: str, warm_cache: bool) -> None:
    """The results table of :func:`measure_step`'s rows: per step its times against the target and
    the verdict (PASS, BELOW the target, FAILED), then the demo's accuracies or the test summary."""
    print(f"\nset-up included, fresh clone of {sha[:12]}, uv cache {'warm' if warm_cache else 'empty'}:")
    print(f"{'measure':38s} {'set-up s':>9s} {'step s':>8s} {'total s':>8s} {'CPU s':>7s} {'target':>8s}")
    for r in rows:
        verdict = "FAILED" if not r["ok"] else "PASS" if r["meets_target"] else "BELOW"
        print(f"{r['step'] + ' on a fresh clone':38s} {r['setup']['seconds']:9.1f} "
              f"{(r['run'] or {}).get('seconds', float('nan')):8.1f} {r['seconds']:8.1f} {r['cpu_seconds']:7.1f} "
              f"{'<= %d s' % r['target_seconds']:>8s}  {verdict}")
        if "accuracy" in r:
            for m, acc in r["accuracy"].items():
                print(f"    {m}: " + " / ".join(f"{t} {100 * a:.1f}" for t, a in acc.items()))
        if r.get("tests"):
            print("    " + ", ".join(f"{n} {k}" for k, n in r["tests"].items()))


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    notes = []
    rev = subprocess.run(["git", "-C", str(args.repo), "rev-parse", args.rev], capture_output=True, text=True)
    if rev.returncode:
        print(f"bench_setup: {args.repo}: no revision {args.rev!r}", file=sys.stderr)
        return 2
    sha = rev.stdout.strip()
    dirty = subprocess.run(["git", "-C", str(args.repo), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    if dirty and args.rev == "HEAD":
        notes.append("the checkout has uncommitted changes: they are not measured (the clone is of HEAD)")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="nsvqa-setup-"))
    work.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows, failed = [], False
    try:
        for step in args.steps:
            row = measure_step(step, args.repo, sha, work, args.out.parent, warm_cache=args.warm_cache,
                               keep=args.keep)
            rows.append(row)
            failed = failed or not row["ok"]
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    print_rows(rows, sha, args.warm_cache)
    for n in notes:
        print(f"note: {n}")
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    print(f"load average at the end: {load}")
    write_json_atomic(args.out, {"revision": sha, "warm_cache": args.warm_cache, "rows": rows, "notes": notes,
                                 "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                             "python": sys.version.split()[0], "load_average_end": load}},
                      indent=1)
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
