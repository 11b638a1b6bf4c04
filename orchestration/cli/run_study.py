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

Every size and schedule is in one study config: ``orchestration.study.settings.config.STUDY`` (the
shipped study), or a JSON file of its fields given with ``--config`` for a new results folder (a larger study on a GPU:
``{"sizes": {"train": 20000, "val": 5000, "test": 5000}, "profile": "full", ...}``). The first piece
run into a folder records the config in ``RESULTS/study.json``; later calls read it from there, and
refuse a ``--config`` that differs from it. A piece writes its gzipped predictions and
``piece.json`` under ``RESULTS/pieces/<piece>/``; a piece with a ``piece.json`` is done and skipped.
Commit each finished piece before starting the next (``make study`` runs one piece at a time).
``--launcher local|slurm`` runs the pending pieces as jobs through submitit (the ``cluster`` extra),
from a frozen worktree of HEAD, in the order their shared data, run folders and scene parsers
allow (:mod:`orchestration.study.running.launch`, docs/cluster.md).

This module holds the options and ``main``, which picks the verb a call asks for; the verbs live
beside it, imported after parsing: :mod:`orchestration.cli.study_run` (the pieces, a launch, its
data and parsers jobs), :mod:`orchestration.cli.study_report` (the report, its check and the
views) and :mod:`orchestration.cli.study_checks` (the one-off checks).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from executors.io import read_json
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import resolve_device
from orchestration.cli.study_command import PROG
from orchestration.study.running.code_tree import FROZEN_ENV



def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=Path("data/generated/study"), help="dataset root")
    p.add_argument("--runs", type=Path, default=Path("runs/study"), help="runs root (checkpoints; not committed)")
    p.add_argument("--results", type=Path, default=Path("results/study"), help="committed results")
    p.add_argument("--config", type=Path, default=None, metavar="STUDY_JSON",
                   help="the study config's fields to change (JSON), for a new RESULTS folder; default: the "
                        "one RESULTS/study.json records, else the shipped study "
                        "(orchestration.study.settings.config.STUDY)")
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
                        "trained again on longer schedules (orchestration.study.settings.perception_record's "
                        "LONG_SCHEDULES epochs) on the detectors of their study runs (RUNS/<variant>) until val "
                        "object material stops rising; the modular models executed "
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
    # not choices: orchestration.study.running.launch.LAUNCHERS, checked after parsing (the study package
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


def main(argv: list[str] | None = None) -> int:
    """Parse, then run the one verb the flags ask for (the first flag of ``verbs`` given, else the
    pending pieces); the exit status: 2 on a study error, else the verb's."""
    parser = get_args_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    with needs_extra(PROG):
        import torch  # heavy, as is the study's stack the verbs import (torch, PIL, pycocotools, scipy): after parsing

        import orchestration.cli.study_checks as study_checks  # the verbs: the study's stack
        import orchestration.cli.study_report as study_report
        import orchestration.cli.study_run as study_run
        from orchestration.study.running.launch import LAUNCHERS
        from orchestration.study.settings.config import StudyConfig, StudyError, results_config
    if args.launcher not in LAUNCHERS:
        parser.error(f"argument --launcher: invalid choice: {args.launcher!r} (choose from {', '.join(LAUNCHERS)})")
    if args.launcher != "slurm":  # slurm: LaunchOptions resolves "auto" from --gpus-per-node (the jobs' nodes)
        args.device = resolve_device(args.device)
    if args.frozen and os.environ.get(FROZEN_ENV) is None:
        return study_run.run_frozen(args, argv)
    args.docs_root = None  # the repository whose docs quote the study: the default results' own
    if args.results == parser.get_default("results"):
        args.docs_root = Path(".")
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
        verbs = (("list", study_report.list_plan), ("budget", study_report.show_budget),
                 ("compare", study_report.compare_demo), ("check", study_report.check_report),
                 ("report", study_report.write_report), ("export_parses", study_report.export_piece_parses),
                 ("reexecute", study_report.reexecute_parses), ("perception", study_report.write_perceptions),
                 ("scale_check", study_checks.scale_check), ("perception_check", study_checks.perception_check),
                 ("estimate", study_report.show_estimate), ("data_of", study_run.generate_data_of),
                 ("parsers_of", study_run.train_parsers_of))  # the first flag given picks the verb
        verb = next((v for flag, v in verbs if getattr(args, flag)), study_run.run_pieces)
        return verb(args, cfg)
    except (StudyError, FileNotFoundError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
