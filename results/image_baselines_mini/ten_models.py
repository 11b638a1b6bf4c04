"""The ten-model table of issue 17: every model's test accuracy on one variant run, per question
type, with its 95% interval, guesses and training minutes.

    .venv/bin/python results/image_baselines_mini/ten_models.py RUNS/mid OUT_DIR [--extra NAME=SECONDS ...]

RUNS/mid is a ``scripts/train_variant.py`` run (its ``predictions/``, ``summary.json`` and
checkpoints). Training time is read from each checkpoint (``train_seconds``, the question parser's
``supervised_seconds`` + ``reinforce_seconds``: the summary's seconds of a step that was found
finished are those of finding it), the val tuning from the summary; ``--extra`` gives what the run
did not spend itself (a scene parser trained elsewhere and copied in: ``--extra scene_parser=2562``).
Writes OUT_DIR/ten_models.json and ten_models.md.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from scipy.stats import binomtest

from nsvqa.artifacts.predictions import QUESTION_TYPE_NAMES, QUESTION_TYPES, predictions_path, read_predictions
from nsvqa.evaluation import accuracy, accuracy_by_type, paired_comparison
from nsvqa.fileio import write_atomic, write_json_atomic
from nsvqa.training.checkpoint import load_checkpoint

ORDER = ("random", "majority", "lstm", "cnn_lstm", "film", "mdetr", "nscl", "nsvqa", "pnsvqa", "pnsvqa-exact",
         "nscl+gtprog", "nsvqa+gtprog", "pnsvqa+gtprog")
PARSERS = ("nscl", "nsvqa", "pnsvqa", "pnsvqa-exact")  # trained on the run's scene and question parsers
#: the issue's targets: (model, reference, points the model must gain over the reference)
TARGETS = (("cnn_lstm", "lstm", 5.0), ("film", "lstm", 15.0), ("mdetr", "film", 0.0), ("nscl", "nsvqa", -10.0),
           ("pnsvqa", "nsvqa", 0.0))


def checkpoint_seconds(run: Path) -> dict[str, float]:
    """Training seconds recorded in the run's checkpoints: ``model_<name>``, ``question_parser``."""
    out = {}
    for ck in sorted((run / "baselines").glob("*/baseline.pt")):
        extra = load_checkpoint(ck).get("extra") or {}
        if "train_seconds" in extra:
            out[f"model_{ck.parent.name}"] = float(extra["train_seconds"])
    qp = run / "question_parser" / "question_parser.pt"
    if qp.is_file():
        extra = load_checkpoint(qp).get("extra") or {}
        out["question_parser"] = float(extra.get("supervised_seconds", 0.0)) + float(extra.get("reinforce_seconds", 0.0))
    return out


def minutes(label: str, seconds: dict[str, float]) -> tuple[float | None, float | None]:
    """(the model's own training minutes, its val tuning included; the minutes of the run's
    parsers it answers from, None for a model without)."""
    name = label.split("+")[0]
    own = seconds.get(f"model_{name}", 0.0) + seconds.get(f"tune_{name}", 0.0)
    parsers = None
    if name in PARSERS:
        parsers = (seconds.get("scene_parser", 0.0) + (0.0 if "+gtprog" in label else seconds.get("question_parser", 0.0))) / 60
    return (own / 60.0 if own else None), parsers


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--extra", action="append", default=[], metavar="NAME=SECONDS")
    args = p.parse_args(argv)
    summary = json.loads((args.run / "summary.json").read_text())
    seconds = {k: v for k, v in summary.get("seconds", {}).items() if k.startswith("tune_")}
    seconds.update(checkpoint_seconds(args.run))
    for e in args.extra:
        k, v = e.split("=", 1)
        seconds[k] = float(v)
    variant = summary["variant"]
    rows, preds_of = [], {}
    for label in ORDER:
        path = predictions_path(args.run, label, variant, variant)
        if not path.is_file():
            continue
        preds = preds_of[label] = read_predictions(path)
        acc = accuracy(preds)
        ci = binomtest(acc.n_correct, acc.n).proportion_ci(0.95, method="wilson")
        rows.append({"model": label, "n": acc.n, "accuracy": acc.accuracy, "ci95": [ci.low, ci.high],
                     "n_guessed": acc.n_guessed,
                     "by_type": {t: {"n": a.n, "accuracy": a.accuracy} for t, a in accuracy_by_type(preds).items()},
                     **dict(zip(("train_minutes", "parser_minutes"), minutes(label, seconds)))})
    targets = []
    for a, b, need in TARGETS:
        if a in preds_of and b in preds_of:
            c = paired_comparison([preds_of[a]], [preds_of[b]])
            targets.append({"model": a, "reference": b, "target_points": need, **c,
                            "met": 100 * c["diff"] >= need})
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "ten_models.json", {"run": str(args.run), "variant": variant, "split": summary["split"],
                                                    "seconds": seconds, "rows": rows, "targets": targets}, indent=1)
    head = ["model", "test acc. (95% CI)", "guessed"] + [QUESTION_TYPE_NAMES[t] for t in QUESTION_TYPES] + ["train min", "+ parsers min"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["model"], f"{100 * r['accuracy']:.1f} [{100 * r['ci95'][0]:.1f}, {100 * r['ci95'][1]:.1f}]",
                 str(r["n_guessed"])]
        cells += [f"{100 * r['by_type'][t]['accuracy']:.1f}" if t in r["by_type"] else "—" for t in QUESTION_TYPES]
        for k in ("train_minutes", "parser_minutes"):
            cells.append(f"{r[k]:.1f}" if r[k] is not None else "—")
        lines.append("| " + " | ".join(cells) + " |")
    n_type = {t: r["by_type"][t]["n"] for r in rows[:1] for t in r["by_type"]}
    lines += ["", "Questions per type: " + ", ".join(f"{QUESTION_TYPE_NAMES[t]} {n}" for t, n in n_type.items()) + "."]
    lines += ["", "| model − reference | target | difference, points (paired 95% CI) | only model / only reference right "
              "| McNemar p | met |", "|---|---|---|---|---|---|"]
    for t in targets:
        lines.append(f"| {t['model']} − {t['reference']} | ≥ {t['target_points']:+.0f} | {100 * t['diff']:+.1f} "
                     f"[{100 * t['ci95'][0]:+.1f}, {100 * t['ci95'][1]:+.1f}] | {t['a_only']} / {t['b_only']} | "
                     f"{t['p_mcnemar']:.2g} | {'yes' if t['met'] else 'no'} |")
    write_atomic(args.out / "ten_models.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
