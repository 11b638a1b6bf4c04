"""Execute the programs of a question file (or a question parser's, --programs) on its scenes; score the answers.

Prints one JSON line on stdout::

    {"n", "correct", "accuracy", "invalid_programs", "execution_errors",
     "questions_per_second", "prepare_seconds", "executor", "mode"}

* ``accuracy`` = correct / n over every question: an invalid program (InvalidProgram /
  TypeMismatch when parsed) and a failed execution (e.g. UniquenessError) count as wrong.
  Answers are compared with :func:`executors.io.normalize_answer` on both sides.
* ``questions_per_second`` times only ``executor.execute(prepared)`` (the executed, valid
  programs); ``prepare_seconds`` is the time of compiling programs and scenes (and, for the
  probabilistic executor, of building likelihoods from the scenes or reading them).
* ``mode`` is the probabilistic count/exist mode, null for the deterministic executor.

Progress and the first invalid-program messages go to stderr. ``--out`` writes one JSON line per
question: ``{"question_index", "image_index", "answer", "gold", "correct", "error"}``, where
``question_index`` is the position in the questions file (as in the error messages).

Examples::

    python scripts/execute_programs.py --scenes data/examples/scenes.json \\
        --questions data/examples/questions.json --out runs/examples/predictions.jsonl
    python scripts/execute_programs.py --scenes S --questions Q --executor probabilistic --mode exact
    python scripts/execute_programs.py --scenes S --questions Q --programs programs.json  # parsed programs

Exit status: 0 on success, 2 for bad input (a missing file, a malformed record).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from executors.deterministic import DeterministicExecutor
from executors.errors import ExecutionError, FormatError, InvalidProgram
from executors.io import (load_questions, load_scenes, normalize_answer, parse_program, question_scene,
                          read_json, scene_lookup)
from executors.ontology import load_ontology
from executors.probabilistic import ProbabilisticExecutor
from executors.scene import SceneLikelihoods
from nsvqa.artifacts.programs import read_programs
from nsvqa.artifacts.records import check_same_image
from nsvqa.cli import command_parser
from nsvqa.config import check_outputs
from nsvqa.evaluation.inputs import probability_cut
from nsvqa.fileio import OutputFile, atomic_open

PROG = "nsvqa-execute-programs"
MAX_SHOWN_INVALID = 5


class InputError(Exception):
    """Bad input that ends the run with exit status 2 (the message is one line)."""


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--scenes", required=True, type=Path, help="scenes JSON ({'scenes': [...]}, list, or one scene)")
    p.add_argument("--questions", required=True, type=Path, help="questions JSON ({'questions': [...]} or list)")
    p.add_argument("--executor", choices=("deterministic", "probabilistic"), default="deterministic", help="which executor runs the programs")
    p.add_argument("--mode", choices=("threshold", "exact"), default="threshold",
                   help="probabilistic count/exist mode (default: threshold)")
    p.add_argument("--threshold", type=probability_cut, default=0.7,
                   help="probabilistic threshold mode cut, in (0, 1] (default: 0.7)")
    p.add_argument("--likelihoods", type=Path, default=None,
                   help="JSON {'scenes': [SceneLikelihoods.to_json() with image_index]} for the probabilistic "
                        "executor (default: one-hot likelihoods from the scenes)")
    p.add_argument("--programs", type=Path, default=None,
                   help="a programs file (scripts/parse_questions.py --out, or an experiment's parsed/<variant>/"
                        "programs.json): execute its programs, one per question, instead of the questions' own; "
                        "a null program counts as invalid")
    p.add_argument("--ontology", default="auto",
                   help="auto (detect from the scenes), clevr, superclevr or a path to an ontology JSON")
    p.add_argument("--out", type=OutputFile, default=None, help="write per-question predictions (JSON lines) here")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    return p


def info(msg: str) -> None:
    print(msg, file=sys.stderr)


def plain(a: Any) -> Any:
    """An answer as a plain JSON value (numpy scalars -> Python)."""
    item = getattr(a, "item", None)
    return item() if callable(item) and not isinstance(a, (str, bytes)) else a


def error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def write_jsonl_atomic(path: Path, rows: Sequence[dict]) -> None:
    """Write JSON lines through a temp file in the same folder and ``os.replace``."""
    with atomic_open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def resolve_ontology(spec: str):
    if spec == "auto":
        return None
    try:
        return load_ontology(spec)
    except FileNotFoundError as e:  # an unknown name lists the valid ones
        raise InputError(str(e).strip("'\"")) from None
    except OSError as e:
        raise InputError(f"cannot read ontology {spec}: {e.strerror or e}") from None


def load_likelihoods(path: Path, onto, needed: dict[int, Any]) -> dict[int, SceneLikelihoods]:
    """Likelihoods of the scenes in ``needed`` (scene position -> image_index), read from ``path``."""
    data = read_json(path)
    records = data.get("scenes") if isinstance(data, dict) else None
    if not isinstance(records, list):
        raise InputError(f"{path}: expected {{'scenes': [SceneLikelihoods JSON with image_index, ...]}}")
    by_index: dict[Any, tuple[int, dict]] = {}
    for k, r in enumerate(records):
        if not isinstance(r, dict) or "image_index" not in r:
            raise InputError(f"{path}, scene {k}: missing field 'image_index'")
        by_index[r["image_index"]] = (k, r)
    out = {}
    for pos, image_index in needed.items():
        if image_index not in by_index:
            raise InputError(f"{path}: no likelihoods for image_index {image_index!r}")
        k, r = by_index[image_index]
        # parse_scenes.py nests them under "likelihoods" beside the detections
        out[pos] = SceneLikelihoods.from_json(r.get("likelihoods", r), onto, where=f"{path}, scene {k}")
    return out


def parsed_program(record, onto, where: str):
    """The validated program of a programs-file record (InvalidProgram when the parser gave none)."""
    where = f"{where} (parsed program)"
    if record.program is None:
        raise InvalidProgram(f"{where}: the question parser gave no program ({record.error or 'no reason recorded'})")
    try:
        record.program.validate(onto)
    except InvalidProgram as e:
        raise e.with_context(where)
    return record.program


def make_executor(kind: str, onto, mode: str, threshold: float):
    if kind == "deterministic":
        return DeterministicExecutor(onto)
    return ProbabilisticExecutor(onto, mode=mode, threshold=threshold)


def run(args: argparse.Namespace) -> dict:
    for label, path in (("scenes", args.scenes), ("questions", args.questions), ("likelihoods", args.likelihoods),
                        ("programs", args.programs)):
        if path is not None and not path.is_file():
            raise InputError(f"{label} file not found: {path}")
    onto = resolve_ontology(args.ontology)
    scenes, onto = load_scenes(args.scenes, onto)
    questions = load_questions(args.questions)
    if args.limit is not None:
        questions = questions[:max(args.limit, 0)]
    if not questions:  # an existing --out is kept, not replaced by an empty one
        raise InputError(f"{args.questions}, field 'questions': no question to execute"
                         + (f" (--limit {args.limit})" if args.limit is not None else ""))
    info(f"{PROG}: {len(scenes)} scenes ({onto.name}) from {args.scenes}, "
         f"{len(questions)} questions from {args.questions}")

    parsed = None
    if args.programs is not None:  # one parsed program per question (after --limit)
        parsed = read_programs(args.programs, questions=len(questions)).programs

    lookup = scene_lookup(scenes)
    programs, positions, valid_q = [], [], []   # valid questions only
    errors: dict[int, str] = {}                 # question -> error text (invalid or failed)
    invalid = 0
    for i, q in enumerate(questions):
        where = f"{args.questions}, question {i}"
        pos = question_scene(q, lookup, where)  # FormatError: the question's scene is missing
        check_same_image(where, q.get("image_index"), q.get("image_filename"), scenes[pos].image_filename,
                         args.scenes, "scene")
        try:
            programs.append(parse_program(q, onto, where) if parsed is None else parsed_program(parsed[i], onto, where))
        except InvalidProgram as e:  # TypeMismatch included
            invalid += 1
            errors[i] = error_text(e)
            if invalid <= MAX_SHOWN_INVALID:
                info(f"{PROG}: invalid program: {e}")
            continue
        positions.append(pos)
        valid_q.append(i)
    if invalid > MAX_SHOWN_INVALID:
        info(f"{PROG}: ... and {invalid - MAX_SHOWN_INVALID} more invalid programs ({invalid} in all)")

    # Only the scenes that questions refer to are compiled, renumbered 0..k-1.
    used = sorted(set(positions))
    remap = {p: k for k, p in enumerate(used)}
    scene_index = [remap[p] for p in positions]
    executor = make_executor(args.executor, onto, args.mode, args.threshold)

    t0 = time.perf_counter()
    if args.executor == "deterministic":
        inputs: list = [scenes[p] for p in used]
    elif args.likelihoods is not None:
        liks = load_likelihoods(args.likelihoods, onto,
                                {p: scenes[p].image_index if scenes[p].image_index is not None else p for p in used})
        inputs = [liks[p] for p in used]
    else:
        inputs = [SceneLikelihoods.from_scene(scenes[p]) for p in used]
    prepared = executor.prepare(programs, inputs, scene_index)
    prepare_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    answers = executor.execute(prepared)
    exec_seconds = time.perf_counter() - t0

    predicted: dict[int, Any] = {}
    failed = 0
    for i, a in zip(valid_q, answers):
        if isinstance(a, ExecutionError):
            failed += 1
            errors[i] = error_text(a)
        else:
            predicted[i] = plain(a)

    rows, correct = [], 0
    for i, q in enumerate(questions):
        gold = q.get("answer")
        ans = predicted.get(i)
        ok = i in predicted and gold is not None and normalize_answer(ans) == normalize_answer(gold)
        correct += ok
        rows.append({"question_index": i, "image_index": q.get("image_index"),
                     "answer": ans, "gold": gold, "correct": ok, "error": errors.get(i)})
    if args.out is not None:
        write_jsonl_atomic(args.out, rows)
        info(f"{PROG}: wrote {len(rows)} predictions to {args.out}")

    n = len(questions)
    return {
        "n": n, "correct": correct, "accuracy": correct / n if n else None,
        "invalid_programs": invalid, "execution_errors": failed,
        "questions_per_second": len(programs) / exec_seconds if programs and exec_seconds > 0 else None,
        "prepare_seconds": prepare_seconds,
        "executor": args.executor, "mode": args.mode if args.executor == "probabilistic" else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parser.parse_args(argv)
    if args.likelihoods is not None and args.executor != "probabilistic":
        parser.error("--likelihoods needs --executor probabilistic")
    if args.limit is not None and args.limit < 0:
        parser.error("--limit must be >= 0")
    check_outputs(parser, args.out)
    try:
        summary = run(args)
    except FileNotFoundError as e:  # a file that vanished between the check and the read
        info(f"{PROG}: error: file not found: {e.filename}")
        return 2
    except (InputError, FormatError, ExecutionError) as e:
        info(f"{PROG}: error: {e}")
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
