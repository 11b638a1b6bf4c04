"""``nsvqa-run-study``'s report and its views (:mod:`orchestration.cli.run_study` parses and
dispatches): the plan (``--list``), the budget (``--budget``), another config's compute
(``--estimate``), the report written and checked (``--report``, ``--check``), the demo beside it
(``--compare``), and what the report reads of the done pieces (``--perception``,
``--export-parses``, ``--reexecute``). Each verb takes the parsed arguments and the study config and
returns the exit status. Imported by ``main`` after parsing: the study's stack loads torch."""
from __future__ import annotations

import argparse
import os
import sys
import time

from executors.io import read_json
from nsvqa.fileio import write_atomic, write_json_atomic
from orchestration.cli.study_command import ESTIMATE_FROM, PROG
from orchestration.study.checks.scale import scale_variants
from orchestration.study.report.demo import (DEMO_BLOCK, DEMO_PICTURE, demo_block_reproduces, demo_comparison,
                                             demo_figure, demo_table, write_demo_block)
from orchestration.study.report.publish import check_study_report, write_study_report
from orchestration.study.running.launch import estimate_line, scaled_estimate
from orchestration.study.running.parses import export_parses, reexecute
from orchestration.study.running.piece import write_perception
from orchestration.study.settings.budget import budget, budget_markdown
from orchestration.study.settings.config import StudyConfig, results_config
from orchestration.study.settings.perception_record import read_perception_record, record_search
from orchestration.study.settings.pieces import PARSES, is_done, is_reduced, piece_dir, piece_setup, study_pieces
from orchestration.study.settings.scale_record import read_scale_record, scale_runs


def list_plan(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--list: each piece and whether it is done, then one line per scale of the scale check and one
    for the perception schedule check."""
    for p in study_pieces(cfg):  # part: committed with fewer models or tests (a widened seed piece)
        mark = ('part' if is_reduced(args.results, p) else 'done') if is_done(args.results, p) else '    '
        print(f"{mark}  {p.name:<34} {','.join(p.models)}  -> {','.join(p.tests)}")
    scale = read_scale_record(args.results)  # the scale check: one line per scale
    ran = scale_runs(scale)
    trains, tests = scale_variants(cfg)
    for k in sorted(set(ran) | {1, 10}):
        done = [v for v in trains if v in ran.get(k, {})]
        print(f"{'done' if done == trains else '    '}  {f'redundancy-scale-{k}x':<34} question parser "
              f"(seed {scale.get('seed', args.scale_seed)}) trained on {','.join(done) or 'none yet'} of "
              f"{','.join(trains)}  -> {','.join(tests)}")
    check = read_perception_record(args.results)  # the perception check: one line
    search = record_search(check) or {}  # the rule in force on its heads
    ran = set((check.get("runs") or {}).get(str(search.get("chosen")), {}))
    print(f"{'done' if search.get('chosen') and ran >= set(check['trains']) else '    '}  "
          f"{'perception-schedule':<34} attribute heads of the visual training variants, schedules tried: "
          f"{','.join(map(str, search.get('tried') or [])) or 'none yet'}, chosen: {search.get('chosen') or '—'}")
    return 0


def show_budget(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--budget: the hours spent and each pending piece's projection against the cap."""
    print(budget_markdown(budget(args.results, cfg)), end="")
    return 0


def show_estimate(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--estimate: the compute of this config's plan, scaled from results/study's measured steps."""
    est = scaled_estimate(ESTIMATE_FROM, results_config(ESTIMATE_FROM), cfg, gpu_speedup=args.gpu_speedup)
    print(estimate_line(est, ESTIMATE_FROM))
    return 0


def compare_demo(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--compare (and --picture): a run's report beside the study's committed predictions; with
    --picture, the picture, its record and the README's demo table."""
    run_report = read_json(args.compare)
    comparison = demo_comparison(run_report, args.results)
    print(demo_table(comparison))
    if args.picture:
        shown = demo_figure(args.picture, run_report, comparison)
        record = {"source": str(args.compare), "comparison": comparison, "example": shown}
        write_json_atomic(args.picture.with_suffix(".json"), record, indent=1)
        text = args.readme.read_text()
        if DEMO_BLOCK[0] in text:
            write_atomic(args.readme, write_demo_block(text, record, str(args.readme)).encode())
        print(f"{args.picture} (and its .json; {args.readme}'s demo table): {shown['test']} question "
              f"{shown['question_index']} ({shown['question']})")
    return 0


def check_report(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--check: the report rebuilt in memory against RESULTS' (and the README's demo table against
    its record); 1 when one differs, each named."""
    bad = check_study_report(args.results, cfg, readme=args.readme, docs_root=args.docs_root)
    if args.readme is not None and not demo_block_reproduces(args.readme, args.picture or DEMO_PICTURE):
        bad.append(f"{os.path.relpath(args.readme, args.results)}: its demo table differs from "
                   f"{(args.picture or DEMO_PICTURE).with_suffix('.json')} (make demo-picture)")
    for rel in bad:  # a file that differs, or "<file>: <what is wrong in it>"
        what = rel.partition(": ")
        print(f"{PROG}: {os.path.normpath(args.results / what[0])}: "
              f"{what[2] or 'differs from its rebuild from the committed predictions'}", file=sys.stderr)
    print(f"{PROG}: {'FAILED' if bad else 'ok'}: every table of {args.results} "
          f"{'does not reproduce' if bad else 'reproduces from the committed predictions'}", file=sys.stderr)
    return 1 if bad else 0


def write_report(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--report: RESULTS' report and the documents' generated blocks, from the committed predictions."""
    written = write_study_report(args.results, cfg, readme=args.readme, docs_root=args.docs_root)
    print(f"{PROG}: {len(written)} report files in {args.results} ({args.results / 'report.md'})", file=sys.stderr)
    return 0


def export_piece_parses(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--export-parses: the parses of each done piece that lacks them, from its run and data folders."""
    for piece in study_pieces(cfg):
        if is_done(args.results, piece) and not (piece_dir(args.results, piece) / PARSES).is_dir():
            try:
                out = export_parses(piece_setup(piece, args.data, args.runs, cfg), args.results)
            except FileNotFoundError as e:
                print(f"{PROG}: {piece.name}: not exported ({e})", file=sys.stderr)
                continue
            if out is not None:
                print(f"{PROG}: {out}", file=sys.stderr)
    return 0


def reexecute_parses(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--reexecute: the program executors again on every piece's committed parses; 1 when an answer
    differs from the committed predictions."""
    t0 = time.monotonic()
    got = reexecute(args.results)
    for line in got["differ"][:50]:
        print(f"{PROG}: {line}", file=sys.stderr)
    print(f"{PROG}: {'FAILED' if got['differ'] else 'ok'}: {got['answers']:,} answers of "
          f"{len(got['pieces'])} pieces with committed parses re-executed in {time.monotonic() - t0:.0f} s; "
          f"{len(got['differ'])} differ", file=sys.stderr)
    return 1 if got["differ"] else 0


def write_perceptions(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--perception: perception.json of each done piece that lacks one, from its run folders' parses."""
    for piece in study_pieces(cfg):
        if is_done(args.results, piece) and not (piece_dir(args.results, piece) / "perception.json").exists():
            out = write_perception(piece_setup(piece, args.data, args.runs, cfg), args.results)
            if out is not None:
                print(f"{PROG}: {out}", file=sys.stderr)
    return 0
