"""mDETR's val grounding curves (L1 and 1 - GIoU per matched box, and the val QA accuracy) of
several runs, from their checkpoints: the picture that says whether the grounding converges.

    .venv/bin/python results/image_baselines_mini/grounding_curves.py OUT_STEM RUN:LABEL [RUN:LABEL ...]

Writes OUT_STEM.json and OUT_STEM.png.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from nsvqa.fileio import write_json_atomic
from nsvqa.training.checkpoint import load_checkpoint


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("runs", nargs="+", metavar="RUN:LABEL")
    args = p.parse_args(argv)
    curves = {}
    for spec in args.runs:
        run, label = spec.rsplit(":", 1)
        ck = load_checkpoint(Path(run) / "baseline.pt")
        extra, cfg = ck.get("extra") or {}, ck["config"]
        acc = []
        tb = Path(run) / "tb"
        if tb.is_dir():
            ea = EventAccumulator(str(tb))
            ea.Reload()
            if "val/accuracy" in ea.Tags()["scalars"]:
                acc = [[e.step, e.value] for e in ea.Scalars("val/accuracy")]
        curves[label] = {"run": run, "pretrain_steps": cfg["pretrain_steps"],
                         "options": {k: cfg.get(k) for k in ("input_norm", "reference_points", "query_selection",
                                                             "qa_text")},
                         "val_grounding": extra.get("val_grounding", []), "val_accuracy": acc}
    write_json_atomic(args.out.with_suffix(".json"), curves, indent=1)

    fig, axs = plt.subplots(1, 3, figsize=(13, 3.6))
    for label, c in curves.items():
        g = c["val_grounding"]
        if g:
            axs[0].plot([r[0] for r in g], [r[2] for r in g], marker="o", ms=3, label=label)
            axs[1].plot([r[0] for r in g], [r[1] for r in g], marker="o", ms=3, label=label)
        if c["val_accuracy"]:
            axs[2].plot([r[0] for r in c["val_accuracy"]], [100 * r[1] for r in c["val_accuracy"]], marker="o", ms=3,
                        label=label)
    for ax, title in zip(axs, ("val 1 − GIoU per matched box", "val L1 per matched box", "val QA accuracy (%)")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step (pretraining, then QA fine-tuning)")
        ax.grid(alpha=0.3)
    pre = next(iter(curves.values()))["pretrain_steps"]
    for ax in axs:
        ax.axvline(pre, color="grey", lw=0.8, ls="--")
    axs[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out.with_suffix(".png"), dpi=120)
    print(f"wrote {args.out.with_suffix('.json')} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
