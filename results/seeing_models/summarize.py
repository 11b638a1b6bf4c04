"""The seeing models' numbers on ``mid`` (issue 46): per model of one variant run, test accuracy with
its interval, the image margin over the question-only LSTM (paired on the same test questions), the
image dependence (the run's image-shuffle test), accuracy per question type, the validation curve of
its training log, training minutes (of the model itself; "—" for one that trains nothing of its own:
the run's parsers are NS-VQA's and P-NSVQA's), and whether it clears the study's floor.

    .venv/bin/python results/seeing_models/summarize.py RUNS/mid-seed2 OUT_DIR [--lstm PREDICTIONS]

RUNS/mid-seed2 is a ``scripts/train_variant.py`` run with ``--image-shuffle`` (its ``summary.json``,
``predictions/`` and each model's ``train.log``). ``--lstm``: the question-only reference's
predictions on the same test split (default: the study's committed ``mid`` LSTM, seed 0).
Writes OUT_DIR/mid.json and OUT_DIR/mid.md (and, with ``--predictions``, the run's predictions gzipped).
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from nsvqa.artifacts.predictions import QUESTION_TYPE_NAMES, predictions_path, read_predictions, write_predictions
from nsvqa.evaluation import accuracy, accuracy_by_type, paired_comparison
from nsvqa.fileio import write_atomic, write_json_atomic

LSTM = "results/study/pieces/mid-seed0-film/predictions/lstm__train-mid__test-mid.jsonl.gz"
#: the study's floor for a non-modular model (issue 46): image margin and image dependence, points
FLOOR = {"image_margin": 15.0, "image_dependence": 10.0}
VAL = re.compile(r"step (\d+) .*val accuracy=([0-9.]+) \((\d+) questions\)")


def val_curve(log: Path) -> list[dict]:
    """The ``(step, val accuracy)`` lines of a training log, the last run of each step kept."""
    out: dict[int, dict] = {}
    if log.is_file():
        for m in VAL.finditer(log.read_text()):
            out[int(m[1])] = {"step": int(m[1]), "val_accuracy": float(m[2]), "val_questions": int(m[3])}
    return [out[k] for k in sorted(out)]


def summarize(run: Path, lstm: Path) -> dict:
    summary = json.loads((run / "summary.json").read_text())
    variant = summary["variant"]
    ref = read_predictions(lstm)
    rows = []
    for label, dep in summary.get("image_dependence", {}).items():
        preds = read_predictions(predictions_path(run, label, variant, variant))
        acc = accuracy(preds)
        margin = paired_comparison([preds], [ref])
        d = dep[variant]
        row = {"model": label, "n": acc.n, "accuracy": 100 * acc.accuracy, "guessed": acc.n_guessed,
               "image_margin": 100 * margin["diff"], "image_margin_ci95": [100 * x for x in margin["ci95"]],
               "image_dependence": 100 * d["dependence"], "image_dependence_ci95": [100 * x for x in d["ci95"]],
               "shuffled_accuracy": 100 * d["shuffled_accuracy"],
               "by_type": {t: 100 * a.accuracy for t, a in accuracy_by_type(preds).items()},
               "train_minutes": (summary["seconds"][f"model_{label}"] / 60 if f"model_{label}" in summary["seconds"]
                                 else None),
               "val_curve": val_curve(run / "baselines" / label / "train.log")}
        row["clears_floor"] = all(row[k] >= v for k, v in FLOOR.items())
        rows.append(row)
    return {"run": str(run), "variant": variant, "seed": summary["seed"], "profile": summary["profile"],
            "reference": {"model": "lstm", "predictions": str(lstm), "accuracy": 100 * accuracy(ref).accuracy},
            "floor": FLOOR, "seconds": summary["seconds"], "models": rows}


def markdown(doc: dict) -> str:
    types = list(dict.fromkeys(t for r in doc["models"] for t in r["by_type"]))
    head = ["model", "test accuracy", "image margin [95% CI]", "image dependence [95% CI]", "clears the floor",
            "train min", *(QUESTION_TYPE_NAMES.get(t, t) for t in types)]
    lines = [f"`{doc['variant']}`, seed {doc['seed']}, profile {doc['profile']}; image margin over the "
             f"question-only LSTM ({doc['reference']['accuracy']:.1f}%, `{doc['reference']['predictions']}`), paired "
             f"on the same {doc['models'][0]['n'] if doc['models'] else 0} test questions; floor: margin >= "
             f"+{doc['floor']['image_margin']:.0f}, dependence >= {doc['floor']['image_dependence']:.0f}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in doc["models"]:
        lo, hi = r["image_margin_ci95"]
        dlo, dhi = r["image_dependence_ci95"]
        lines.append("| " + " | ".join([
            r["model"], f"{r['accuracy']:.1f}", f"{r['image_margin']:+.1f} [{lo:+.1f}, {hi:+.1f}]",
            f"{r['image_dependence']:+.1f} [{dlo:+.1f}, {dhi:+.1f}]", "yes" if r["clears_floor"] else "no",
            "—" if r["train_minutes"] is None else f"{r['train_minutes']:.1f}", *(f"{r['by_type'].get(t, float('nan')):.1f}" for t in types)]) + " |")
    curves = [r for r in doc["models"] if r["val_curve"]]
    if curves:
        lines += ["", "Validation accuracy during training (the training loop's val questions, its own tokens):", ""]
        for r in curves:
            pts = ", ".join(f"{p['val_accuracy'] * 100:.1f} at {p['step']:,}" for p in r["val_curve"])
            lines.append(f"- {r['model']}: {pts}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--lstm", type=Path, default=Path(LSTM), help=f"question-only predictions (default: {LSTM})")
    ap.add_argument("--predictions", action="store_true",
                    help="also copy the run's test and image-shuffled predictions, gzipped, to OUT_DIR/predictions/ "
                         "and OUT_DIR/shuffled/ (what margin and dependence re-derive from)")
    args = ap.parse_args(argv)
    doc = summarize(args.run, args.lstm)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "mid.json", doc)
    write_atomic(args.out / "mid.md", markdown(doc))
    if args.predictions:
        for sub, src in (("predictions", args.run / "predictions"), ("shuffled", args.run / "shuffled" / "predictions")):
            for f in sorted(src.glob("*.jsonl")):
                write_predictions(args.out / sub / (f.name + ".gz"), read_predictions(f))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
