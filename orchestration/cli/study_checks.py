"""``nsvqa-run-study``'s one-off checks (:mod:`orchestration.cli.run_study` parses and dispatches):
the redundancy scale check (``--scale-check``) and the perception schedule check
(``--perception-check``), each resumable. Each verb takes the parsed arguments and the study config
and returns the exit status. Imported by ``main`` after parsing: the study's stack loads torch."""
from __future__ import annotations

import argparse
import sys
import time

from orchestration.cli.study_command import PROG
from orchestration.study.checks.perception_schedule import OutOfTime, run_perception_check
from orchestration.study.checks.scale import run_scale_check
from orchestration.study.settings.config import StudyConfig
from orchestration.study.settings.perception_record import PERCEPTION_RESULTS
from orchestration.study.settings.scale_record import SCALE_RESULTS


def scale_check(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--scale-check: the question parsers of the redundancy training variants at 1x and 10x the questions."""
    rec = run_scale_check(args.data, args.runs, args.results, cfg, seed=args.scale_seed, workers=args.workers,
                          device=args.device, progress=not args.no_progress, train_scene_parser=args.scale_scene_parser)
    print(f"{PROG}: scale check ({', '.join(f'{k}x' for k in rec['scales'])}) -> "
          f"{args.results / SCALE_RESULTS}", file=sys.stderr)
    return 0


def perception_check(args: argparse.Namespace, cfg: StudyConfig) -> int:
    """--perception-check: the visual training variants' attribute heads on longer schedules; 4 when
    --time-left runs out before the next head."""
    try:
        rec = run_perception_check(args.data, args.runs, args.results, cfg, train_base=args.perception_base,
                                   jobs=args.jobs, workers=args.workers, device=args.device,
                                   progress=not args.no_progress,
                                   deadline=None if args.time_left is None else time.monotonic() + 60 * args.time_left)
    except OutOfTime as e:
        print(f"{PROG}: perception check: {e} (--time-left)", file=sys.stderr)
        return 4
    s = rec["search"]
    print(f"{PROG}: perception check: {s['stopped']} after {', '.join(map(str, s['tried']))} epochs, the "
          f"heads of {s['chosen']} epochs -> {args.results / PERCEPTION_RESULTS}", file=sys.stderr)
    return 0
