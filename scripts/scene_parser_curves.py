"""Learning curves of scene-parser runs against training minutes, from their tensorboard logs.

    python scripts/scene_parser_curves.py --run runs/scene/mid_lite0 --run runs/scene/mid_scratch:scratch \
        --out results/scene_parser_mini/curves

Writes OUT.json (every logged point: detector val AP50 of objects and listed parts, the head's val
accuracy per epoch, end-to-end NS-VQA / P-NSVQA val accuracy per epoch, each with its training
minutes) and OUT.png (three panels, one colour per run). ``RUN:LABEL`` names a run in the legend.
What is logged is set by the run's config (``det_eval_every``, ``e2e_eval_images``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nsvqa.config import HelpFormatter, check_outputs
from nsvqa.evaluation.curves import learning_curves, plot_curves
from nsvqa.fileio import write_json_atomic


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--run", action="append", required=True, help="a scene-parser run directory (RUN or RUN:LABEL)")
    p.add_argument("--out", required=True, help="output path without suffix: OUT.json and OUT.png are written")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parser.parse_args(argv)
    check_outputs(parser, f"{args.out}.json")
    curves = []
    for spec in args.run:
        run, _, label = spec.partition(":")
        curves.append(learning_curves(run, label or None))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out.with_suffix(".json"), {"runs": curves}, indent=1)
    plot_curves(curves, out.with_suffix(".png"))
    for c in curves:
        det, e2e = c["detector"], c["end_to_end"]
        last = det[-1] if det else {}
        print(f"{c['label']}: detector {len(det)} points, last box AP50 {last.get('box_AP50', float('nan')):.3f} "
              f"at {last.get('minutes', float('nan')):.1f} min; end-to-end {len(e2e)} points"
              + (f", last NS-VQA {e2e[-1].get('nsvqa.all', float('nan')):.3f}" if e2e else ""))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
