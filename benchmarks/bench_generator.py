"""Generator speed: images/s on one core, everything included (sampling, visibility render,
final render, masks to RLE, relationships, PNG encoding, JSON records written to disk).

    python benchmarks/bench_generator.py [--images 40] [--variants mid hard]

Pins the process to one core (llvmpipe's threads inherit the affinity). Target: >= 25 images/s per
core at 320x240. Writes runs/bench/bench_generator.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=40, help="images per configuration at 320x240")
    p.add_argument("--variants", nargs="+", default=["easy", "mid", "hard"])
    p.add_argument("--sizes", nargs="+", default=["320x240", "640x480"])
    p.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "bench_generator.json")
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from nsvqa.generation.dataset import generate_split, job_for  # after the pin: BLAS threads started on import stay on that core

    rows = []
    for size in args.sizes:
        w, h = (int(x) for x in size.split("x"))
        n = args.images if w * h <= 320 * 240 else max(5, args.images // 4)
        for v in args.variants:
            with tempfile.TemporaryDirectory() as tmp:
                job = job_for(Path(tmp), v, "val", n, 0, w, h)
                generate_split(job_for(Path(tmp) / "warm", v, "val", 1, 99, w, h),
                               progress=False)  # warm-up: context, shaders, vehicle meshes
                t = time.perf_counter()
                generate_split(job, progress=False, finalize=False)
                dt = time.perf_counter() - t
            rows.append({"size": size, "variant": v, "images": n, "seconds": round(dt, 3),
                         "images_per_second": round(n / dt, 2)})
            print(f"{size:8s} {v:5s} {n:4d} images  {n / dt:7.2f} images/s  "
                  + (f"{'PASS' if n / dt >= 25 else 'BELOW'} (target >= 25/s per core)" if w * h <= 320 * 240 else ""))
    out = {"rows": rows, "machine": {"platform": platform.platform(), "python": sys.version.split()[0],
                                    "cpus_used": 1}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
