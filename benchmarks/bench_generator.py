"""Generator speed: images/s on one core, everything included (sampling, visibility render,
final render, masks to RLE, relationships, PNG encoding, JSON records written to disk).

    python benchmarks/bench_generator.py [--images 40] [--variants mid hard] [--rounds 3]
    python benchmarks/bench_generator.py --sizes 320x240 --variants mid --profile

Pins the process to one core (llvmpipe's threads inherit the affinity). Each configuration is
generated ``--rounds`` times after a warm-up; the rates are the medians, in wall-clock time and in
the process's CPU time (``time.process_time``: the renderer's threads included; on a shared core
the wall clock also counts other processes' turns). Target: >= 25 images/s per core at 320x240.

``--profile`` runs each configuration once more under cProfile (CPU clock) and prints the time
per stage (the profiler inflates the Python-heavy stages most: docs/performance.md). Writes runs/bench/bench_generator.json.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Stages of ``--profile``: (label, functions whose cumulative time it is), in pipeline order.
STAGES = (
    ("scene sampling (layout, placement)", ("sampler.py:sample_layout",)),
    ("visibility id pass", ("renderer.py:render_ids",)),
    ("final render (shadow, colour, FXAA, read back)", ("renderer.py:render",)),
    ("masks to COCO RLE", ("annotations.py:label_rles",)),
    ("scene record (rest: relationships, coordinates)", ("scenes.py:scene_record",)),
    ("PNG encoding", ("dataset.py:png_bytes",)),
    ("PNG file written", ("fileio.py:write_atomic",)),
    ("scene JSON (dumps, written)", ("fileio.py:write_json_atomic",)),
)


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=40, help="images per configuration at 320x240")
    p.add_argument("--variants", nargs="+", default=["easy", "mid", "hard"])
    p.add_argument("--sizes", nargs="+", default=["320x240", "640x480"])
    p.add_argument("--rounds", type=int, default=3, help="runs per configuration (medians reported)")
    p.add_argument("--profile", action="store_true",
                   help="profile one run of each configuration (CPU clock): time per stage")
    p.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "bench_generator.json")
    return p


def _run(dataset, root: Path, variant: str, n: int, w: int, h: int,
         profiler: cProfile.Profile | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of generating ``n`` images (no finalize) into a fresh folder."""
    job = dataset.job_for(root, variant, "val", n, 0, w, h)
    t, c = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    dataset.generate_split(job, progress=False, finalize=False)
    if profiler is not None:
        profiler.disable()
    return time.perf_counter() - t, time.process_time() - c


def stage_table(stats: pstats.Stats, n: int) -> list[dict]:
    """CPU ms per image of each of :data:`STAGES` (cumulative times; the scene record's row
    without its masks, the PNG file's row without the JSON's writes) and of the whole run."""
    cum: dict[str, float] = {}
    name = lambda f: f"{Path(f[0]).name}:{f[2]}"  # noqa: E731
    for f, (_, _, _, ct, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if name(f) == "fileio.py:write_atomic":  # the JSON's own write is counted in its row
            ct -= sum(c[3] for g, c in callers.items() if name(g) == "fileio.py:write_json_atomic")
        cum[name(f)] = cum.get(name(f), 0.0) + ct
    rows = []
    for label, funcs in STAGES:
        s = sum(cum.get(f, 0.0) for f in funcs)
        if label.startswith("scene record"):
            s -= cum.get("annotations.py:label_rles", 0.0)
        rows.append({"stage": label, "ms_per_image": round(1e3 * s / n, 2)})
    total = cum.get("dataset.py:generate_split", 0.0)
    rows.append({"stage": "everything (generate_split)", "ms_per_image": round(1e3 * total / n, 2)})
    return rows


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from nsvqa.generation import dataset  # after the pin: BLAS threads started on import stay on that core

    rows, profiles = [], []
    for size in args.sizes:
        w, h = (int(x) for x in size.split("x"))
        n = args.images if w * h <= 320 * 240 else max(5, args.images // 4)
        for v in args.variants:
            with tempfile.TemporaryDirectory() as tmp:
                dataset.generate_split(dataset.job_for(Path(tmp) / "warm", v, "val", 1, 99, w, h),
                                       progress=False)  # warm-up: context, shaders, vehicle meshes
                if args.profile:
                    prof = cProfile.Profile(time.process_time)
                    _run(dataset, Path(tmp) / "profile", v, n, w, h, prof)
                    table = stage_table(pstats.Stats(prof), n)
                    profiles.append({"size": size, "variant": v, "images": n, "stages": table})
                    print(f"{size} {v}: CPU ms per image under cProfile ({n} images)")
                    for r in table:
                        print(f"  {r['stage']:50s} {r['ms_per_image']:7.2f}")
                walls, cpus = [], []
                for k in range(args.rounds):
                    dt, dc = _run(dataset, Path(tmp) / f"run{k}", v, n, w, h)
                    walls.append(dt)
                    cpus.append(dc)
            wall_rate, cpu_rate = n / statistics.median(walls), n / statistics.median(cpus)
            rows.append({"size": size, "variant": v, "images": n, "rounds": args.rounds,
                         "seconds": round(statistics.median(walls), 3),
                         "images_per_second": round(wall_rate, 2),
                         "cpu_images_per_second": round(cpu_rate, 2)})
            print(f"{size:8s} {v:5s} {n:4d} images  {wall_rate:7.2f} images/s wall  {cpu_rate:7.2f} CPU  "
                  + (f"{'PASS' if wall_rate >= 25 else 'BELOW'} (target >= 25/s per core)"
                     if w * h <= 320 * 240 else ""))
    out = {"rows": rows, "profiles": profiles,
           "machine": {"platform": platform.platform(), "python": sys.version.split()[0], "cpus_used": 1,
                       "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
