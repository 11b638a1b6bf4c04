"""Parse questions into programs with a trained question parser; score them when possible.

    python scripts/parse_questions.py --checkpoint runs/qp/mid --questions Q.json --out programs.json
    python scripts/parse_questions.py ... --scenes S.json --metrics metrics.json   # + answer accuracy
    python scripts/execute_programs.py --scenes S.json --questions Q.json --programs programs.json

``--out`` is a programs file, the same shape the experiment writes (``RUN/parsed/<variant>/
programs.json``, :mod:`nsvqa.artifacts.programs`): ``{"provenance", "questions_file", "programs":
[{"program", "valid", "error"}]}``, one record per question in file order; ``program`` is null for
an invalid decode (``error`` says why). ``scripts/execute_programs.py --programs`` executes it on
the questions' scenes. Prints one JSON line: ``{"n", "exact", "valid", "answer_accuracy", ...}`` —
exact against the ground-truth programs when the questions have them, answer accuracy from
executing the parsed programs on ``--scenes`` (invalid decodes and failed executions count as
wrong).

Exit status: 0 on success, 2 for bad input (a missing file, a malformed record or checkpoint).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from executors.errors import ExecutionError, FormatError
from executors.io import load_scenes
from nsvqa.artifacts.programs import ParsedPrograms, write_programs
from nsvqa.training.checkpoint import CheckpointError
from nsvqa.fileio import EmptyOutput, OutputFile, keep_unless_filled, write_json_atomic
from nsvqa.evaluation.question_parser import read_question_items, score_parses
from nsvqa.pretrained import PretrainedError, resolve_checkpoint
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import check_outputs, resolve_device

PROG = "nsvqa-parse-questions"


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True,
                   help="run directory or question_parser.pt, or a shipped set: pretrained:NAME (e.g. pretrained:mid-mini)")
    p.add_argument("--questions", required=True, type=Path, help="questions JSON ({'questions': [...]} or list)")
    p.add_argument("--out", required=True, type=OutputFile,
                   help="programs file to write (one record per question; an existing one is never replaced by "
                        "an empty parse)")
    p.add_argument("--scenes", type=Path, default=None, help="ground-truth scenes: also score answers")
    p.add_argument("--metrics", type=OutputFile, default=None, help="also write the summary JSON here")
    p.add_argument("--beam", type=int, default=1, help="beam size (1: greedy)")
    p.add_argument("--batch-size", type=int, default=256, help="questions decoded per batch")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument("--device", default="auto", type=resolve_device,
                   help="torch device: auto (CUDA when present, else the CPU), cpu, cuda")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    return p


def run(args: argparse.Namespace) -> dict:
    with needs_extra(PROG):
        from nsvqa.training.loading import load_question_parser  # heavy (torch): after parsing
    args.checkpoint = resolve_checkpoint(args.checkpoint, "question_parser")
    parser = load_question_parser(args.checkpoint, args.device)
    items = read_question_items(args.questions, parser.ontology, require_program=False, limit=args.limit)
    keep_unless_filled(args.out, len(items), "questions")  # before the parse: an empty one replaces nothing
    scenes = load_scenes(args.scenes, parser.ontology)[0] if args.scenes is not None else None
    t0 = time.perf_counter()
    parsed = parser.parse([it.question for it in items], beam_size=args.beam, batch_size=args.batch_size)
    seconds = time.perf_counter() - t0
    scores, _ = score_parses(items, parsed, parser.ontology, scenes, where=str(args.questions))
    provenance = {"checkpoint": str(args.checkpoint), "beam": args.beam, "limit": args.limit}
    write_programs(args.out, ParsedPrograms.from_parses(parsed, provenance=provenance,
                                                        questions_file=args.questions))
    summary = scores.summary() | {"beam": args.beam, "parse_seconds": seconds,
                                  "questions_per_second": len(items) / seconds if seconds > 0 else None}
    if args.metrics is not None:
        write_json_atomic(args.metrics, summary | {"checkpoint": str(args.checkpoint),
                                                   "questions_file": str(args.questions),
                                                   "scenes_file": str(args.scenes) if args.scenes else None},
                          indent=1)
    return summary


def main(argv: list[str] | None = None) -> int:
    p = get_args_parser()
    args = p.parse_args(argv)
    check_outputs(p, args.out, args.metrics)
    if args.beam < 1:
        p.error("--beam must be >= 1")
    if args.threads:
        with needs_extra(PROG):
            import torch  # heavy: after parsing
        torch.set_num_threads(args.threads)
    try:
        summary = run(args)
    except (FormatError, CheckpointError, PretrainedError, ExecutionError, FileNotFoundError, EmptyOutput) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
