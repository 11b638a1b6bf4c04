"""The command line of a script that trains one component from its config class into a run
directory (``scripts/train_scene_parser.py``, ``scripts/train_question_parser.py``)::

    def get_args_parser():
        p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=...)
        add_run_args(p, QuestionParserConfig, checkpoint="the checkpoint")
        return p

    def main(argv=None):
        return train_main(get_args_parser(), argv, QuestionParserConfig, train_question_parser)
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any, Callable, Sequence

from executors.errors import FormatError
from nsvqa.cli import needs_extra
from nsvqa.config import add_config_args, check_run_outside_data, config_overrides, parse_checked
from nsvqa.fileio import DiskFull, FolderInUse, OutputFolder
from nsvqa.training import RunMismatch


def add_run_args(parser: argparse.ArgumentParser, cls: type, *, checkpoint: str) -> Any:
    """Add ``--data``, ``--out``, ``--profile`` (``cls``'s profiles, default ``mini``), ``--threads``,
    ``--resume`` (continue from ``checkpoint``, e.g. "the checkpoint", in ``--out``),
    ``--no-progress``, then one option per field of ``cls`` (:func:`nsvqa.config.add_config_args`).
    Returns the config fields' argument group (for aliases)."""
    parser.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT")
    parser.add_argument("--out", type=OutputFolder, required=True, help="run directory")
    parser.add_argument("--profile", choices=cls.profile_names(), default="mini",
                        help="the training profile (the config's sizes and schedule)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--resume", action="store_true", help=f"continue from {checkpoint} in --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return add_config_args(parser, cls)


def train_main(parser: argparse.ArgumentParser, argv: Sequence[str] | None, cls: type,
               train: Callable[..., Any]) -> int:
    """``main`` of such a script: parse ``argv`` (``--out`` checked before any work), set torch's
    threads, resolve the config (``cls.from_profile`` with the field options), run
    ``train(cfg, out, resume=, progress=)`` (it returns the run directory, a ``RunDir``) and print
    where it is. Returns the exit status, 0."""
    args = parse_checked(parser, argv, "out")
    check_run_outside_data(parser, args.out, args.data, variant_folder=True)  # a run inside the data: refused
    if args.threads:
        with needs_extra(parser.prog):
            import torch  # heavy: after parsing, so that the commands answer --help at once

        torch.set_num_threads(args.threads)
    cfg = cls.from_profile(args.data, args.profile, **config_overrides(args, cls))

    def work() -> int:
        try:
            run = train(cfg, args.out, resume=args.resume, progress=not args.no_progress)
        except (RunMismatch, FolderInUse, FormatError) as e:  # another config or writer, a bad input file
            print(f"{parser.prog}: error: {e}", file=sys.stderr)
            return 2
        print(f"run directory: {run.path}")
        return 0

    return interruptible(parser.prog, work, "rerun the same command" + ("" if args.resume else " with --resume")
                         + " to resume")


def interruptible(prog: str, work: Callable[[], int], rerun: str = "rerun the same command to resume") -> int:
    """``work()`` (a script's work, returning its exit status) with Ctrl-C and SIGTERM turned into
    one line on stderr, ``<prog>: interrupted (SIGTERM) [at step S of T of WHAT, checkpoint saved]:
    <rerun>``, and the exit status 128 + the signal's number. Training checkpoints at the signal
    (:func:`nsvqa.training.engine.train_steps`); elsewhere SIGTERM stops like Ctrl-C. A full disk
    (:class:`nsvqa.fileio.DiskFull`: the file, the bytes it needs, the bytes free) is one line
    ``<prog>: error: ...: free space, then <rerun>`` and the exit status 1."""
    with needs_extra(prog):
        from nsvqa.training.engine import Interrupted  # heavy (torch): the commands' parsers import this module

    def on_term(signum, _frame):
        raise Interrupted(signum)

    old = signal.signal(signal.SIGTERM, on_term) if threading.current_thread() is threading.main_thread() else None
    try:
        return work()
    except DiskFull as e:  # a checkpoint, a parse, a record: the file it would replace is kept
        print(f"{prog}: error: {e}: free space, then {rerun}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        stop = e if isinstance(e, Interrupted) else Interrupted(signal.SIGINT)
        print(f"{prog}: {stop}: {rerun}", file=sys.stderr)
        return 128 + stop.signum
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
