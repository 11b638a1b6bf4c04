"""How long each ``nsvqa-*`` command takes to answer ``--help`` (issue 78: <= 1 s on an idle core).

    python benchmarks/bench_cli_startup.py                 # every command of pyproject.toml, 3 runs each
    python benchmarks/bench_cli_startup.py --repeat 5 --only nsvqa-evaluate-rd nsvqa-run-study
    python benchmarks/bench_cli_startup.py --scripts       # the same through the shims, python scripts/x.py

Each command of ``[project.scripts]`` runs as ``python -m <module> --help`` (the module its console
entry point names; ``--scripts``: ``python scripts/<name>.py --help``) in a fresh interpreter,
``--repeat`` times. A row is the median of the child's CPU time (user + system,
``resource.getrusage``), which a loaded machine disturbs less than the wall clock, and the median
wall time beside it; the command's exit status and whether ``usage:`` names the console command
are shown too. Results: a table on stdout and ``runs/bench/bench_cli_startup.json`` (written
atomically). A benchmark, not a test: nothing is asserted about the times; the exit status is 1
only when a command fails to answer ``--help``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the target of issue 78, per command, on an idle core
TARGET_S = 1.0


def commands() -> dict[str, str]:
    """Console name -> module of every ``[project.scripts]`` entry."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    return {name: target.split(":")[0] for name, target in sorted(scripts.items())}


def time_help(argv: list[str]) -> tuple[float, float, int, str]:
    """(CPU seconds of the child, wall seconds, exit status, first line of stdout) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    first = (proc.stdout or proc.stderr).splitlines()[0] if (proc.stdout or proc.stderr) else ""
    return cpu, wall, proc.returncode, first


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="runs per command (the median is reported)")
    p.add_argument("--only", nargs="+", default=None, metavar="COMMAND", help="these console commands only")
    p.add_argument("--scripts", action="store_true", help="run the shims (python scripts/<name>.py) instead")
    p.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "bench_cli_startup.json",
                   help="results JSON")
    args = p.parse_args(argv)
    table = commands()
    if args.only:
        unknown = sorted(set(args.only) - set(table))
        if unknown:
            p.error(f"unknown commands {unknown}; valid: {', '.join(table)}")
        table = {k: v for k, v in table.items() if k in args.only}
    rows, failed = [], 0
    print(f"{'command':32s} {'CPU s':>6s} {'wall s':>6s}  rc  usage names it")
    for name, module in table.items():
        script = REPO / "scripts" / f"{module.rsplit('.', 1)[1]}.py"
        run = [sys.executable, str(script), "--help"] if args.scripts else [sys.executable, "-m", module, "--help"]
        if args.scripts and not script.is_file():
            continue
        runs = [time_help(run) for _ in range(args.repeat)]
        cpu, wall = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        rc, first = runs[-1][2], runs[-1][3]
        failed += rc != 0
        named = first.startswith(f"usage: {name} ")
        rows.append({"command": name, "module": module, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
                     "exit_status": rc, "usage_names_it": named, "first_line": first[:200],
                     "within_target": cpu <= TARGET_S})
        print(f"{name:32s} {cpu:6.2f} {wall:6.2f} {rc:3d}  {'yes' if named else 'no: ' + first[:60]}", flush=True)
    load = os.getloadavg()
    result = {"target_s": TARGET_S, "repeat": args.repeat, "through": "scripts" if args.scripts else "python -m",
              "python": platform.python_version(), "cpus": os.cpu_count(), "load_average": [round(x, 2) for x in load],
              "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.out)
    over = [r["command"] for r in rows if not r["within_target"]]
    print(f"{len(rows) - len(over)} of {len(rows)} within {TARGET_S:g} s CPU (load average {load[0]:.1f}); "
          f"over: {', '.join(over) or 'none'}; results in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
