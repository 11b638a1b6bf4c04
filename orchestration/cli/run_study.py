"""The Super-CLEVR robustness study, piece by piece: run what is not committed, or check the tables.

    python scripts/run_study.py --list                   # the plan, and which pieces are done
    python scripts/run_study.py --budget                 # hours spent; each pending piece projected
    python scripts/run_study.py --pieces 1               # run the next pending piece (resumable)
    python scripts/run_study.py --only mid-seed0-modular # run that piece
    python scripts/run_study.py --pieces 9 --time-left 170 # as many as end within 170 minutes
    python scripts/run_study.py --pieces 1 --frozen      # from a frozen copy of the committed code
    python scripts/run_study.py --report                 # rebuild results/study's tables
    python scripts/run_study.py --check                  # rebuild them in memory; fail if one differs
    python scripts/run_study.py --perception             # perception.json of done pieces that lack one
    python scripts/run_study.py --scale-check            # the redundancy scale check (resumable)
    python scripts/run_study.py --perception-check       # the perception schedule check (resumable)
    python scripts/run_study.py --launcher local --parallel 2 --pieces 4 # 4 pieces, 2 side by side
    python scripts/run_study.py --launcher slurm --partition gpu --device cuda --gpus-per-node 1 # every pending piece
    python scripts/run_study.py --config data/study/paper.json --estimate # the paper config's compute, estimated

Every size and schedule is in one study config: ``orchestration.study.STUDY`` (the shipped study), or a
JSON file of its fields given with ``--config`` for a new results folder (a larger study on a GPU:
``{"sizes": {"train": 20000, "val": 5000, "test": 5000}, "profile": "full", ...}``). The first piece
run into a folder records the config in ``RESULTS/study.json``; later calls read it from there, and
refuse a ``--config`` that differs from it. A piece writes its gzipped predictions and
``piece.json`` under ``RESULTS/pieces/<piece>/``; a piece with a ``piece.json`` is done and skipped.
Commit each finished piece before starting the next (``make study`` runs one piece at a time).
``--launcher local|slurm`` runs the pending pieces as jobs through submitit (the ``cluster`` extra),
from a frozen worktree of HEAD, in the order their shared data, run folders and scene parsers
allow (:mod:`orchestration.study.launch`, docs/cluster.md).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from executors.io import read_json
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import resolve_device
from nsvqa.fileio import write_atomic, write_json_atomic

PROG = "nsvqa-run-study"
#: set in the environment of a run from a frozen copy (--frozen): the copy's folder
FROZEN = "NSVQA_FROZEN_CODE"
#: the committed pieces whose steps, scaled, estimate a study at another scale (--estimate, and the
#: time limits of a launch into a folder without committed pieces of its own)
ESTIMATE_FROM = Path(__file__).resolve().parents[2] / "results" / "study"


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=Path("data/generated/study"), help="dataset root")
    p.add_argument("--runs", type=Path, default=Path("runs/study"), help="runs root (checkpoints; not committed)")
    p.add_argument("--results", type=Path, default=Path("results/study"), help="committed results")
    p.add_argument("--config", type=Path, default=None, metavar="STUDY_JSON",
                   help="the study config's fields to change (JSON), for a new RESULTS folder; default: the "
                        "one RESULTS/study.json records, else the shipped study (orchestration.study.STUDY)")
    p.add_argument("--readme", type=Path, default=None,
                   help="the README whose results table --report writes and --check compares (between its "
                        "results-table markers); default README.md when --results is the default")
    p.add_argument("--list", action="store_true", help="print the plan and stop")
    p.add_argument("--budget", action="store_true",
                   help="print the hours the committed pieces took and each pending piece's projection "
                        "(from the committed pieces' step times) against the study's cap")
    p.add_argument("--report", action="store_true", help="rebuild RESULTS' report from the committed predictions")
    p.add_argument("--check", action="store_true",
                   help="rebuild the report's tables in memory; exit 1 if one differs from RESULTS'")
    p.add_argument("--compare", type=Path, default=None, metavar="REPORT_JSON",
                   help="print a run's visual-factor report (e.g. make demo's) beside the study's committed "
                        "predictions on the same questions")
    p.add_argument("--picture", type=Path, default=None, metavar="PNG",  # its record: PNG.json; --check reads results/demo/demo.json
                   help="with --compare: also draw one test question, its parsed program and every model's answer "
                        "beside each model's accuracy per test variant (the README's picture)")
    p.add_argument("--perception", action="store_true",
                   help="write perception.json for the done pieces that lack one, from their run folders' parses")
    p.add_argument("--export-parses", action="store_true",
                   help="commit what the executors of each done piece read (parses, programs, questions, val cuts; "
                        "pieces/<piece>/parses/) for the pieces that lack them, from their run and data folders")
    p.add_argument("--reexecute", action="store_true",
                   help="run NS-VQA, P-NSVQA and P-NSVQA-exact again, at this code, on every piece's committed "
                        "parses; exit 1 if an answer differs from the committed predictions")
    p.add_argument("--scale-check", action="store_true",
                   help="the redundancy scale check: question parsers of the redundancy training variants on 1x "
                        "and 10x the questions, one scene parser (RUNS/mid-seed<N>'s); predictions and scale.json "
                        "in RESULTS/redundancy_scale/ (resumable)")
    p.add_argument("--scale-scene-parser", action="store_true",
                   help="with --scale-check: train RUNS/mid-seed<N>'s scene parser if it is not there (the study's "
                        "settings), e.g. in a clone whose mid-seed<N>-modular piece is committed")
    p.add_argument("--scale-seed", type=int, default=2, metavar="N",
                   help="seed of the scale check's runs and of the mid run whose scene parser they use")
    p.add_argument("--perception-check", action="store_true",
                   help="the perception schedule check (issue 64): the visual training variants' attribute heads "
                        "trained again on longer schedules (orchestration.study's LONG_SCHEDULES epochs) on the "
                        "detectors of their study "
                        "runs (RUNS/<variant>) until val object material stops rising; the modular models executed "
                        "with the study's heads and the chosen ones; predictions and perception_schedule.json in "
                        "RESULTS/perception_schedule/ (resumable)")
    p.add_argument("--perception-base", action="store_true",
                   help="with --perception-check: train what a visual training variant's study run lacks (its "
                        "parsers, NSCL) there, with the study's settings, instead of stopping")
    p.add_argument("--pieces", type=int, default=None,
                   help="how many pending pieces to run (in plan order); default 1, every one with --launcher")
    p.add_argument("--only", default=None, help="comma-separated piece names to run (if pending)")
    p.add_argument("--over-cap", action="store_true",
                   help="run a piece even if it takes the study past its budget_hours cap (otherwise such a "
                        "piece is not started and the exit status is 3)")
    p.add_argument("--retrain-lender", action="store_true",
                   help="run a piece whose scene parser (borrowed, or shared with another group of its run folder) "
                        "this machine lacks even where a committed piece trained it on another CPU or torch thread "
                        "count (the two then read different perceptions; otherwise such a piece is not started and "
                        "the exit status is 5; with --launcher, each piece job)")
    p.add_argument("--time-left", type=float, default=None, metavar="MINUTES",
                   help="wall time this call may use (a session's or a batch job's end): a piece projected to "
                        "end after it is not started (exit 4); projections leave out data generation, minutes per piece; "
                        "with --perception-check, heads projected to end after it")
    p.add_argument("--jobs", type=int, default=2, help="2: the question parser trains beside the scene parser")
    p.add_argument("--workers", type=int, default=2, help="rendering processes")
    p.add_argument("--device", default="auto",
                   help="torch device of the training: auto (CUDA when present, else the CPU; with --launcher "
                        "slurm, cuda when --gpus-per-node asks for GPUs), cpu, cuda")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--frozen", action="store_true",
                   help="run the pieces from a frozen copy of the committed code (a git worktree of HEAD, "
                        "RUNS/code-<commit>), so that editing the checkout while a piece runs cannot change or "
                        "break it; uncommitted changes are not in the copy; older copies are removed")
    g = p.add_argument_group("launching pieces as jobs (docs/cluster.md; local and slurm need the cluster extra)")
    # not choices: orchestration.study.launch.LAUNCHERS, checked after parsing (the study package
    # imports torch, which --help does not wait for)
    g.add_argument("--launcher", default="sequential",
                   help="sequential: one piece after another in this process; local: PARALLEL jobs side by side "
                        "on this machine; slurm: one job per piece submitted with sbatch, with dependencies")
    g.add_argument("--parallel", type=int, default=2, help="local: jobs side by side")
    g.add_argument("--partition", default=None, help="slurm: the partition")
    g.add_argument("--account", default=None, help="slurm: the account")
    g.add_argument("--cpus-per-task", type=int, default=None, help="slurm: CPUs of each task")
    g.add_argument("--slurm", action="append", default=[], metavar="KEY=VALUE",
                   help="slurm: another #SBATCH flag (e.g. qos=high), repeatable")
    g.add_argument("--gpus-per-node", type=int, default=0,
                   help="GPUs of a job's node; above 1 (or with --nodes above 1) each piece's parsers train "
                        "data-parallel in a job of their own, one process per GPU")
    g.add_argument("--nodes", type=int, default=1, help="nodes of a parsers job")
    g.add_argument("--time-margin", type=float, default=0.5,
                   help="a job's time limit is its projection (--budget) times 1 + this")
    g.add_argument("--time-unprojected", type=int, default=240, metavar="MINUTES",
                   help="the time limit of a job nothing projects (data generation, a group never measured); a "
                        "piece that RESULTS' own committed pieces do not project is projected by --estimate's scaling")
    g.add_argument("--requeues", type=int, default=3, help="times a timed-out job is requeued")
    g.add_argument("--launch-folder", type=Path, default=None,
                   help="submitit's scripts, pickles and logs (default RUNS/launch/jobs; on a shared filesystem)")
    g.add_argument("--code", type=Path, default=None,
                   help="the code tree the jobs run (default: a frozen worktree of HEAD, RUNS/launch/code-<commit>); "
                        "it must not change while they run")
    g.add_argument("--data-of", default=None, metavar="KEY",
                   help="(a data job) generate the splits the --only pieces read of one variant folder, then stop")
    g.add_argument("--parsers-of", default=None, metavar="PIECE",
                   help="(a parsers job) train the piece's parsers into its run folder, data-parallel when started "
                        "with WORLD_SIZE > 1, then stop")
    g.add_argument("--estimate", action="store_true",
                   help="print the compute of this config's plan, estimated from results/study's measured steps "
                        "(an estimate: the work of each step scaled, then divided by --gpu-speedup)")
    g.add_argument("--gpu-speedup", type=float, default=100.0,
                   help="--estimate and a launch's time limits on a CUDA device: assumed throughput of one GPU over "
                        "the 2-core CPU results/study was measured on")
    return p


def _launch(args: argparse.Namespace, todo: list, cfg: StudyConfig) -> int:
    """--launcher local|slurm: the first --pieces pending pieces (every one by default) that the cap
    allows, as jobs from a frozen code tree."""
    from orchestration.study.code_tree import frozen_tree  # main has loaded the study (torch) by now; not at
    from orchestration.study.launch import LaunchOptions, launch, past_cap, require_submitit  # the top: --help

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


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    with needs_extra(PROG):
        import torch  # heavy, as is the study's stack below (torch, PIL, pycocotools, scipy): after parsing

        from orchestration.study import (SCALE_RESULTS, StudyConfig, StudyError, budget, budget_markdown, is_done,
                                         is_reduced, out_of_time, over_cap, pending_pieces, piece_dir, piece_setup,
                                         read_scale_record, results_config, scale_runs, study_pieces)
        from orchestration.study.demo import (DEMO_BLOCK, DEMO_PICTURE, demo_block_reproduces, demo_comparison,
                                              demo_figure, demo_table, write_demo_block)
        from orchestration.study.launch import (LAUNCHERS, estimate_line, generate_data, scaled_estimate,
                                                train_piece_parsers)
        from orchestration.study.parses import PARSES, export_parses, reexecute
        from orchestration.study.perception_record import PERCEPTION_RESULTS, read_perception_record, record_search
        from orchestration.study.perception_schedule import OutOfTime, run_perception_check
        from orchestration.study.publish import check_study_report, write_study_report
        from orchestration.study.run import lender_elsewhere, run_piece, write_perception
        from orchestration.study.scale import run_scale_check, scale_variants
    if args.launcher not in LAUNCHERS:
        parser.error(f"argument --launcher: invalid choice: {args.launcher!r} (choose from {', '.join(LAUNCHERS)})")
    if args.launcher != "slurm":  # slurm: LaunchOptions resolves "auto" from --gpus-per-node (the jobs' nodes)
        args.device = resolve_device(args.device)
    if args.frozen and os.environ.get(FROZEN) is None:
        try:
            from orchestration.study.code_tree import frozen_tree  # not at the top: --help loads no study

            where, dirty = frozen_tree(args.runs, sweep=True)
        except StudyError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
        if dirty:
            print(f"{PROG}: running the committed code of {where}; left out, uncommitted:\n{dirty}", file=sys.stderr)
        env = {**os.environ, FROZEN: str(where),
               "PYTHONPATH": os.pathsep.join([str(where), *filter(None, [os.environ.get("PYTHONPATH")])])}
        os.execve(sys.executable, [sys.executable, str(where / "scripts" / "run_study.py"),
                                   *(a for a in argv if a != "--frozen")], env)
    docs_root = None  # the repository whose docs quote the study: the default results' own
    if args.results == parser.get_default("results"):
        docs_root = Path(".")
        if args.readme is None:
            args.readme = Path("README.md")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        given = None
        if args.config is not None:
            try:
                given = StudyConfig.from_json(read_json(args.config), source=str(args.config))  # strict JSON
            except (OSError, ValueError) as e:
                raise StudyError(f"{args.config}: cannot read the study config ({e})") from e
        cfg = results_config(args.results, given)
        if args.list:
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
        if args.budget:
            print(budget_markdown(budget(args.results, cfg)), end="")
            return 0
        if args.compare:
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
        if args.check:
            bad = check_study_report(args.results, cfg, readme=args.readme, docs_root=docs_root)
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
        if args.report:
            written = write_study_report(args.results, cfg, readme=args.readme, docs_root=docs_root)
            print(f"{PROG}: {len(written)} report files in {args.results} ({args.results / 'report.md'})",
                  file=sys.stderr)
            return 0
        if args.export_parses:
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
        if args.reexecute:
            t0 = time.monotonic()
            got = reexecute(args.results)
            for line in got["differ"][:50]:
                print(f"{PROG}: {line}", file=sys.stderr)
            print(f"{PROG}: {'FAILED' if got['differ'] else 'ok'}: {got['answers']:,} answers of "
                  f"{len(got['pieces'])} pieces with committed parses re-executed in {time.monotonic() - t0:.0f} s; "
                  f"{len(got['differ'])} differ", file=sys.stderr)
            return 1 if got["differ"] else 0
        if args.perception:
            for piece in study_pieces(cfg):
                if is_done(args.results, piece) and not (piece_dir(args.results, piece) / "perception.json").exists():
                    out = write_perception(piece_setup(piece, args.data, args.runs, cfg), args.results)
                    if out is not None:
                        print(f"{PROG}: {out}", file=sys.stderr)
            return 0
        if args.scale_check:
            rec = run_scale_check(args.data, args.runs, args.results, cfg, seed=args.scale_seed, workers=args.workers,
                                  device=args.device, progress=not args.no_progress,
                                  train_scene_parser=args.scale_scene_parser)
            print(f"{PROG}: scale check ({', '.join(f'{k}x' for k in rec['scales'])}) -> "
                  f"{args.results / SCALE_RESULTS}", file=sys.stderr)
            return 0
        if args.perception_check:
            try:
                rec = run_perception_check(args.data, args.runs, args.results, cfg, train_base=args.perception_base,
                                           jobs=args.jobs, workers=args.workers, device=args.device,
                                           progress=not args.no_progress,
                                           deadline=None if args.time_left is None else
                                           time.monotonic() + 60 * args.time_left)
            except OutOfTime as e:
                print(f"{PROG}: perception check: {e} (--time-left)", file=sys.stderr)
                return 4
            s = rec["search"]
            print(f"{PROG}: perception check: {s['stopped']} after {', '.join(map(str, s['tried']))} epochs, the "
                  f"heads of {s['chosen']} epochs -> {args.results / PERCEPTION_RESULTS}", file=sys.stderr)
            return 0
        if args.estimate:
            est = scaled_estimate(ESTIMATE_FROM, results_config(ESTIMATE_FROM), cfg, gpu_speedup=args.gpu_speedup)
            print(estimate_line(est, ESTIMATE_FROM))
            return 0
        if args.data_of:
            generate_data(args.data_of, study_pieces(cfg) if not args.only else
                          [p for p in study_pieces(cfg) if p.name in args.only.split(",")], args.data, cfg,
                          workers=args.workers, progress=not args.no_progress)
            return 0
        if args.parsers_of:
            piece = next((p for p in study_pieces(cfg) if p.name == args.parsers_of), None)
            if piece is None:
                raise StudyError(f"--parsers-of {args.parsers_of}: not a piece of the study")
            train_piece_parsers(piece, args.data, args.runs, cfg, device=args.device, progress=not args.no_progress)
            return 0
        todo = pending_pieces(args.results, cfg, only=args.only.split(",") if args.only else None)
        if args.launcher != "sequential":
            return _launch(args, todo, cfg)
        deadline = None if args.time_left is None else time.monotonic() + 60 * args.time_left
        for piece in todo[:args.pieces or 1]:
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
            print(f"{PROG}: piece {piece.name}: {', '.join(piece.models)} on {piece.variant} "
                  f"(seed {piece.seed}), tested on {', '.join(piece.tests)}", file=sys.stderr)
            rec = run_piece(piece, args.data, args.runs, args.results, cfg, jobs=args.jobs, workers=args.workers,
                            device=args.device, progress=not args.no_progress)
            print(f"{PROG}: piece {piece.name} done in {rec['seconds']['total'] / 60:.1f} min -> "
                  f"{args.results / 'pieces' / piece.name}", file=sys.stderr)
        if not todo:
            print(f"{PROG}: {'those pieces are' if args.only else 'every piece of the study is'} done", file=sys.stderr)
    except (StudyError, FileNotFoundError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
