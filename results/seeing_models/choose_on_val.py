"""The seeing model chosen on val (issue 64, point 2): among every non-modular variant tried on
``mid`` (each ``*/mid.json`` and ``mid.json`` that ``summarize.py`` wrote here), and among each one's
validation checkpoints, the one with the highest val accuracy; test accuracy is printed beside it,
never read by the choice.

    .venv/bin/python results/seeing_models/choose_on_val.py   # writes choice.json and choice.md here
    .venv/bin/python results/seeing_models/choose_on_val.py --model regionmac-trace   # its variants alone:
                                                              # choice-regionmac-trace.json and .md
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from nsvqa.fileio import write_atomic, write_json_atomic
from orchestration.models import executors

HERE = Path(__file__).resolve().parent
#: the models that are not candidates: the modular ones a summary lists beside the seeing ones
MODULAR = set(executors())


def candidates() -> list[dict]:
    """One row per (run folder, model): its val-best checkpoint, the final one, and the test
    accuracy of the checkpoint the run kept (its last)."""
    out = []
    for f in sorted(HERE.glob("**/mid.json")):
        run = f.parent.relative_to(HERE).as_posix()
        for m in json.loads(f.read_text())["models"]:
            if m["model"] in MODULAR or not m.get("val_curve"):
                continue
            best = max(m["val_curve"], key=lambda c: (c["val_accuracy"], -c["step"]))
            last = m["val_curve"][-1]
            out.append({"run": run, "variant": m["model"] if run == "." else f"{run} ({m['model']})", "model": m["model"], "val_best": best["val_accuracy"],
                        "val_best_step": best["step"], "val_last": last["val_accuracy"], "last_step": last["step"],
                        "test_accuracy_kept": m["accuracy"] / 100, "clears_floor": m.get("clears_floor")})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="choose among this model's variants alone (writes choice-MODEL.json/.md)")
    args = ap.parse_args(argv)
    rows = [r for r in candidates() if args.model is None or r["model"] == args.model]
    if not rows:
        raise SystemExit(f"no summary here holds model {args.model!r}")
    stem = "choice" if args.model is None else f"choice-{args.model}"
    chosen = max(rows, key=lambda r: r["val_best"])
    record = {"rule": "the highest val accuracy over every variant and every validation checkpoint (test unread)",
              "chosen": chosen, "candidates": rows,
              "kept_checkpoint_is_val_best": chosen["val_best_step"] == chosen["last_step"]}
    write_json_atomic(HERE / f"{stem}.json", record, indent=1)
    title = "The seeing model chosen on val" if args.model is None else f"The {args.model} variant chosen on val"
    lines = [f"# {title}", "", f"Rule: {record['rule']}. Written by `choose_on_val.py`.", "",
             "| variant (run folder, model) | val best (step) | val last (step) | test, kept checkpoint | clears the floor |",
             "|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: -r["val_best"]):
        lines.append(f"| {r['variant']} | {100 * r['val_best']:.1f} ({r['val_best_step']}) | "
                     f"{100 * r['val_last']:.1f} ({r['last_step']}) | {100 * r['test_accuracy_kept']:.1f} | "
                     f"{r['clears_floor']} |")
    lines += ["", f"Chosen: `{chosen['variant']}`, val {100 * chosen['val_best']:.1f} at step "
                  f"{chosen['val_best_step']}; the checkpoint the study runs is "
                  f"{'that one (its last)' if record['kept_checkpoint_is_val_best'] else 'its last, not the val-best'}."]
    write_atomic(HERE / f"{stem}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
