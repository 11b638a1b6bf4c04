"""``nsvqa-run-study``'s run (:mod:`orchestration.cli.run_study` parses and dispatches): the pending
pieces one after another (the default) or as jobs (``--launcher local|slurm``), from a frozen copy of
the committed code (``--frozen``), and a launch's own jobs: a variant folder's data (``--data-of``)
and a piece's parsers (``--parsers-of``). Each verb takes the parsed arguments and the study config
and returns the exit status. Imported by ``main`` after parsing: the study's stack loads torch."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from orchestration.cli.study_command import ESTIMATE_FROM, PROG
from orchestration.study.running.code_tree import FROZEN_ENV
from orchestration.study.running.code_tree import frozen_tree
from orchestration.study.running.launch import (LaunchOptions, generate_data, launch, past_cap, require_submitit,
                                                train_piece_parsers)
from orchestration.study.running.piece import lender_elsewhere, run_piece
from orchestration.study.settings.budget import budget, out_of_time, over_cap
from orchestration.study.settings.config import StudyConfig, StudyError
from orchestration.study.settings.pieces import Piece, pending_pieces, study_pieces


def run_frozen(args: argparse.Namespace, argv: list[str]) -> int:
    """--frozen: this command again, without --frozen, from a frozen worktree of HEAD (it does not
    return); 2 when there is no checkout to freeze."""
    try:
        where, dirty = frozen_tree(args.runs, sweep=True)
    except StudyError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if dirty:
        print(f"{PROG}: running the committed code of {where}; left out, uncommitted:\n{dirty}", file=sys.stderr)
    env = {**os.environ, FROZEN_ENV: str(where),
           "PYTHONPATH": os.pathsep.join([str(where), *filter(None, [os.environ.get("PYTHONPATH")])])}
    os.execve(sys.executable, [sys.executable, str(where / "scripts" / "run_study.py"),
                               *(a for a in argv if a != "--frozen")], env)


def generate_data_of(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--data-of (a data job): the splits the --only pieces (every piece without it) read of one
    variant folder."""
    generate_data(args.data_of, study_pieces(cfg) if not args.only else
                  [p for p in study_pieces(cfg) if p.name in args.only.split(",")], args.data, cfg,
                  workers=args.workers, progress=not args.no_progress)
    return 0


def train_parsers_of(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--parsers-of (a parsers job): the piece's parsers, trained into its run folder."""
    piece = next((p for p in study_pieces(cfg) if p.name == args.parsers_of), None)
    if piece is None:
        raise StudyError(f"--parsers-of {args.parsers_of}: not a piece of the study")
    train_piece_parsers(piece, args.data, args.runs, cfg, device=args.device, progress=not args.no_progress)
    return 0


def run_pieces(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """The pending pieces (--only's, else every one) in plan order: --pieces of them (1 by default)
    one after another here, or as jobs with --launcher local|slurm. A piece is not started past the
    cap (3), past --time-left (4), or where its scene parser's lender ran on another machine (5)."""
    todo = pending_pieces(args.results, cfg, only=args.only.split(",") if args.only else None)
    if args.launcher != "sequential":
        return launch_pieces(args, todo, cfg)
    deadline = None if args.time_left is None else time.monotonic() + 60 * args.time_left
    for piece in todo[:args.pieces or 1]:
        status = not_started(piece, args, cfg, deadline)
        if status:
            return status
        print(f"{PROG}: piece {piece.name}: {', '.join(piece.models)} on {piece.variant} "
              f"(seed {piece.seed}), tested on {', '.join(piece.tests)}", file=sys.stderr)
        rec = run_piece(piece, args.data, args.runs, args.results, cfg, jobs=args.jobs, workers=args.workers,
                        device=args.device, progress=not args.no_progress)
        print(f"{PROG}: piece {piece.name} done in {rec['seconds']['total'] / 60:.1f} min -> "
              f"{args.results / 'pieces' / piece.name}", file=sys.stderr)
    if not todo:
        print(f"{PROG}: {'those pieces are' if args.only else 'every piece of the study is'} done", file=sys.stderr)
    return 0


def not_started(piece: Piece, args: argparse.Namespace, cfg: StudyConfig, deadline: float | None) -> int:
    """Why ``piece`` is not started, said on stderr, as the exit status: 3 past the cap (unless
    --over-cap), 4 past ``deadline`` (a ``time.monotonic()``), 5 where its scene parser's lender ran
    on another machine (unless --retrain-lender); 0 when it may start."""
    b = budget(args.results, cfg)  # read once per piece: the cap and the time left both use it
    why = None if args.over_cap else over_cap(args.results, piece, cfg, b, args.runs)
    if why:
        print(f"{PROG}: piece {piece.name} not started: {why} (--budget shows the projection; "
              f"--over-cap runs it anyway)", file=sys.stderr)
        return 3
    why = None if deadline is None else out_of_time(args.results, piece, deadline - time.monotonic(), cfg, b,
                                                        args.runs)
    if why:
        print(f"{PROG}: piece {piece.name} not started: {why} (--time-left)", file=sys.stderr)
        return 4
    why = None if args.retrain_lender else lender_elsewhere(piece, args.runs, args.results, cfg)
    if why:
        print(f"{PROG}: piece {piece.name} not started: {why} (bring that run folder here, or "
              f"--retrain-lender)", file=sys.stderr)
        return 5
    return 0


def launch_pieces(args: argparse.Namespace, todo: list[Piece], cfg: StudyConfig) -> int:
    """--launcher local|slurm: the first --pieces pending pieces (every one by default) that the cap
    allows, as jobs from a frozen code tree."""
    require_submitit(args.launcher)  # one line, before any work, without the cluster extra
    todo = todo[:args.pieces] if args.pieces else todo
    why = None if args.over_cap else past_cap(todo, args.results, cfg)
    if why:
        print(f"{PROG}: not launched: {why} (--budget shows the projection; --over-cap launches them anyway)",
              file=sys.stderr)
        return 3
    if not todo:
        print(f"{PROG}: nothing to launch: {'those pieces are' if args.only else 'every piece is'} done", file=sys.stderr)
        return 0
    code = args.code
    if code is None:
        code, dirty = frozen_tree(args.runs / "launch")
        if dirty:
            print(f"{PROG}: the jobs run the committed code of {code}; left out, uncommitted:\n{dirty}", file=sys.stderr)
    opts = LaunchOptions(launcher=args.launcher, parallel=args.parallel, threads=args.threads, device=args.device,
                         jobs=args.jobs, workers=args.workers, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
                         partition=args.partition, account=args.account, cpus_per_task=args.cpus_per_task,
                         slurm=dict(kv.split("=", 1) for kv in args.slurm), margin=args.time_margin,
                         unprojected_minutes=args.time_unprojected, requeues=args.requeues,
                         folder=(args.launch_folder or args.runs / "launch" / "jobs").resolve(),
                         estimate_from=ESTIMATE_FROM if args.results.resolve() != ESTIMATE_FROM.resolve() else None,
                         gpu_speedup=args.gpu_speedup, retrain_lender=args.retrain_lender)
    out = launch(todo, args.data, args.runs, args.results, cfg, opts, Path(code).resolve(),
                 echo=lambda s: print(f"{PROG}: {s}", file=sys.stderr))
    if args.launcher == "slurm":
        print(f"{PROG}: {len(out)} jobs submitted (logs in {opts.folder}); when they end, run --report here",
              file=sys.stderr)
        return 0
    bad = sorted(n for n, s in out.items() if s != "done")
    print(f"{PROG}: {len(out) - len(bad)} of {len(out)} jobs done" + (f"; not done: {', '.join(bad)}" if bad else ""),
          file=sys.stderr)
    return 1 if bad else 0
