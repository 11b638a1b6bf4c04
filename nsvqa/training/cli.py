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
from typing import Any, Callable, Sequence

import torch

from nsvqa.config import add_config_args, config_overrides, parse_checked


def add_run_args(parser: argparse.ArgumentParser, cls: type, *, checkpoint: str) -> Any:
    """Add ``--data``, ``--out``, ``--profile`` (``cls``'s profiles, default ``mini``), ``--threads``,
    ``--resume`` (continue from ``checkpoint``, e.g. "the checkpoint", in ``--out``),
    ``--no-progress``, then one option per field of ``cls`` (:func:`nsvqa.config.add_config_args`).
    Returns the config fields' argument group (for aliases)."""
    parser.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT")
    parser.add_argument("--out", required=True, help="run directory")
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
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = cls.from_profile(args.data, args.profile, **config_overrides(args, cls))
    run = train(cfg, args.out, resume=args.resume, progress=not args.no_progress)
    print(f"run directory: {run.path}")
    return 0
