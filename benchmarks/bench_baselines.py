"""Baselines' training speed per profile: seconds per step and the projected schedule time.

    python benchmarks/bench_baselines.py [--models lstm cnn_lstm film mdetr nscl] [--profiles tiny mini]
                                         [--steps 20] [--device cuda] [--threads 1] [--data ROOT/VARIANT]

Each learned baseline trains ``--steps`` steps of the profile's network and batch through its own
``train`` (the real data path: image cache, batches, losses, optimizer), on ``--data`` or else on
a small dataset rendered at the generator's default size (8 training images of ``mid`` in a
temporary folder; needs the headless renderer). The step time is the run's ``step_seconds``
(training time over steps, the first step included); the projected time multiplies it by the
profile's number of steps (mDETR: pretraining + fine-tuning). Writes
runs/bench/bench_baselines.json and prints a table. Timings only: nothing is asserted.
"""
from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

import torch

from nsvqa.config import resolve_device
from nsvqa.fileio import write_json_atomic
from nsvqa.generation.dataset import generate_split, job_for
from nsvqa.training.checkpoint import load_checkpoint
from orchestration import models as registry

REPO = Path(__file__).resolve().parents[1]
LEARNED = ("lstm", "cnn_lstm", "film", "mdetr", "nscl")


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(LEARNED))
    p.add_argument("--profiles", nargs="+", default=["tiny", "mini"])
    p.add_argument("--steps", type=int, default=20, help="training steps timed per (model, profile)")
    p.add_argument("--device", default="auto", type=resolve_device, help="auto: CUDA when present, else the CPU")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--data", type=Path, default=None, help="a variant folder with a train split (default: render one)")
    p.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "bench_baselines.json")
    return p


def _render(root: Path) -> Path:
    generate_split(job_for(root, "mid", "train", 8, 0), progress=False)
    return root / "mid"


def _schedule(cfg) -> int:
    """Steps of the profile's whole schedule."""
    return int(cfg.steps) + int(getattr(cfg, "pretrain_steps", 0))


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    trainable = [n for n in registry.names() if registry.get(n).trainable]
    unknown = [m for m in args.models if m not in trainable]
    if unknown:
        print(f"unknown model(s) {unknown}; valid: {', '.join(trainable)}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_baselines_") as tmp:
        data = args.data or _render(Path(tmp) / "data")
        for name in args.models:
            model = registry.get(name)
            for prof in args.profiles:
                full = model.config(str(data), prof)
                names = {f.name for f in fields(full)}
                timed = {"steps": args.steps, "eval_every": args.steps, "val_questions": 0, "device": args.device}
                if "pretrain_steps" in names:  # half the timed steps in each phase
                    timed |= {"pretrain_steps": args.steps // 2, "steps": args.steps - args.steps // 2}
                cfg = model.config(str(data), prof, **{k: v for k, v in timed.items() if k in names})
                run = Path(tmp) / "runs" / f"{name}-{prof}"
                model.train(cfg, run, progress=False)
                extra = load_checkpoint(run / "baseline.pt")["extra"]
                step_s = float(extra.get("step_seconds", float("nan")))
                rows.append({"model": name, "profile": prof, "step_seconds": step_s, "schedule_steps": _schedule(full),
                             "schedule_hours": step_s * _schedule(full) / 3600})
                print(f"{name:9} {prof:5} {step_s:8.3f} s/step  -> {_schedule(full):6d} steps = "
                      f"{60 * rows[-1]['schedule_hours']:.1f} min", flush=True)
    write_json_atomic(args.out, {"device": args.device, "torch": torch.__version__, "machine": platform.machine(),
                                 "threads": torch.get_num_threads(), "steps_timed": args.steps,
                                 "data": str(args.data) if args.data else "rendered: 8 mid train images, 320x240",
                                 "rows": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
