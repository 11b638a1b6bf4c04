"""Show why one question of a variant run was answered as it was (a PNG and an HTML page).

    python scripts/explain.py --run runs/visual/mid --data data/suite/hard --split test --index 3
    python scripts/explain.py --run RUN --data ROOT/VARIANT --index 3 --question-index 61 \\
        --model pnsvqa-exact --gt-programs --out figures

RUN is a variant run of ``scripts/train_variant.py`` (it holds ``parsed/<VARIANT>/likelihoods.json``
and ``programs.json``). The figure shows image ``--index`` with its parsed objects outlined and
labelled, the question (default: the first one about the image), the ground-truth answer, the
program, per step the probabilistic executor's distribution (P-NSVQA) beside the deterministic
executor's output on the most likely scene (NS-VQA), and both final answers. Writes
``<out>/<VARIANT>_<split>_img<I>_q<Q>.png`` and ``.html`` (default ``<out>``: ``RUN/explain``) and
prints their paths.

Exit status: 0 on success, 2 for bad input (a missing file, an image or question that is not there).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from executors.errors import FormatError
from orchestration.explain import MODELS, ExplainError, default_paths, explain, render_html, render_png
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import check_outputs

PROG = "nsvqa-explain"


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, type=Path, help="variant run folder (holds parsed/<variant>/)")
    p.add_argument("--data", required=True, type=Path, help="ROOT/VARIANT: the test variant's dataset folder")
    p.add_argument("--split", default="test", help="the parsed split (default: test)")
    p.add_argument("--index", required=True, type=int, help="image index")
    p.add_argument("--question-index", type=int, default=None,
                   help="position of the question in the questions file (default: the first about the image)")
    p.add_argument("--model", choices=tuple(MODELS), default="pnsvqa", help="probabilistic model shown")
    p.add_argument("--gt-programs", action="store_true",
                   help="run the ground-truth program instead of the question parser's")
    p.add_argument("--out", type=Path, default=None, help="output folder (default: RUN/explain)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parser.parse_args(argv)
    check_outputs(parser, args.out if args.out is not None else args.run / "explain")
    try:
        with needs_extra(PROG):  # [full]: torch, pycocotools, PIL and matplotlib, imported where used
            ex = explain(args.run, args.data, args.split, args.index, args.question_index, model=args.model,
                         gt_programs=args.gt_programs)
            png, page = default_paths(args.run, ex, args.out)
            render_png(ex, ex["image_path"], png)
            render_html(ex, png, page)
    except (ExplainError, FormatError, ValueError, OSError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(png)
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
