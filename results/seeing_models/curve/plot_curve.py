"""The learning curve over questions per training image (issue 46): objmac's test accuracy and image
dependence on ``mid`` (seed 2, the mini schedule of 6,000 steps) at 10, 50 and 100 questions per
image, from the ``mid.json`` of each point (``summarize.py``); the question-only LSTM and the
study's floor drawn beside them.

    .venv/bin/python results/seeing_models/curve/plot_curve.py

Reads results/seeing_models/mid.json (50 questions: 10 + 40 extra) and curve/q10, curve/q100;
writes curve/curve.json, curve/curve.md and curve/curve.png.
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

from nsvqa.fileio import write_atomic, write_json_atomic  # noqa: E402

HERE = Path(__file__).resolve().parent
POINTS = {10: HERE / "q10" / "mid.json", 50: HERE.parent / "mid.json", 100: HERE / "q100" / "mid.json"}
MODEL = "objmac"


def points() -> tuple[list[dict], dict]:
    rows, doc = [], None
    for q, path in sorted(POINTS.items()):
        if not path.is_file():
            continue
        doc = json.loads(path.read_text())
        r = next(r for r in doc["models"] if r["model"] == MODEL)
        rows.append({"questions_per_image": q, "accuracy": r["accuracy"], "image_margin": r["image_margin"],
                     "image_margin_ci95": r["image_margin_ci95"], "image_dependence": r["image_dependence"],
                     "image_dependence_ci95": r["image_dependence_ci95"], "train_minutes": r["train_minutes"],
                     "clears_floor": r["clears_floor"], "source": str(path.relative_to(HERE.parent))})
    return rows, doc


def main() -> int:
    rows, doc = points()
    lstm, floor = doc["reference"]["accuracy"], doc["floor"]
    q = [r["questions_per_image"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    a.plot(q, [r["accuracy"] for r in rows], "o-", label=MODEL)
    a.axhline(lstm, color="grey", ls=":", label=f"question-only LSTM ({lstm:.1f})")
    a.axhline(lstm + floor["image_margin"], color="red", ls="--", label=f"floor: margin +{floor['image_margin']:.0f}")
    a.set(xlabel="questions per training image", ylabel="test accuracy %", xscale="log", xticks=q, xticklabels=q)
    a.legend(fontsize=7)
    dep = [r["image_dependence"] for r in rows]
    err = [[d - r["image_dependence_ci95"][0] for d, r in zip(dep, rows)],
           [r["image_dependence_ci95"][1] - d for d, r in zip(dep, rows)]]
    b.errorbar(q, dep, yerr=err, fmt="o-", capsize=3, label=MODEL)
    b.axhline(floor["image_dependence"], color="red", ls="--", label=f"floor: {floor['image_dependence']:.0f}")
    b.set(xlabel="questions per training image", ylabel="image dependence, points", xscale="log", xticks=q,
          xticklabels=q)
    b.legend(fontsize=7)
    fig.suptitle(f"{MODEL} on mid, seed 2, 6,000 steps: more questions of the same 2,000 images", fontsize=9)
    fig.tight_layout()
    fig.savefig(HERE / "curve.png", dpi=120)
    write_json_atomic(HERE / "curve.json", {"model": MODEL, "reference_lstm": lstm, "floor": floor, "points": rows})
    lines = ["| questions per image | test accuracy | image margin [95% CI] | image dependence [95% CI] | clears the floor "
             "| train min |", "|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["image_margin_ci95"]
        dlo, dhi = r["image_dependence_ci95"]
        lines.append(f"| {r['questions_per_image']} | {r['accuracy']:.1f} | {r['image_margin']:+.1f} [{lo:+.1f}, "
                     f"{hi:+.1f}] | {r['image_dependence']:+.1f} [{dlo:+.1f}, {dhi:+.1f}] | "
                     f"{'yes' if r['clears_floor'] else 'no'} | {r['train_minutes']:.1f} |")
    write_atomic(HERE / "curve.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
