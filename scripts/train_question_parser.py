"""Train the question parser (bi-LSTM encoder, attention decoder) on one generated variant.

    python scripts/train_question_parser.py --data data/generated/mini/mid --profile mini --out runs/qp/mid
    python scripts/train_question_parser.py ... --resume      # continue after an interruption
    python scripts/train_question_parser.py ... --reinforce   # then REINFORCE on answers (NS-VQA)
    python scripts/train_question_parser.py ... --steps 800 --set lr=1e-3   # any config field, typed

Every field of nsvqa.training.question_config.QuestionParserConfig is an option (--field-name VALUE, or
--set NAME=VALUE) over the profile's value.

RUN_DIR gets config.json (resolved config + command line), train.log, tb/ (tensorboard) and
question_parser.pt (an atomic checkpoint with the vocabularies, that rebuilds the model alone).
"""
from __future__ import annotations

import argparse
import sys

import torch

from nsvqa.config import HelpFormatter, add_config_args, check_outputs, config_overrides
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.training.question_parser import train_question_parser


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--profile", choices=QuestionParserConfig.profile_names(), default="mini", help="the training profile (the config's sizes and schedule)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_args(p, QuestionParserConfig)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parser.parse_args(argv)
    check_outputs(parser, args.out)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = QuestionParserConfig.from_profile(args.data, args.profile, **config_overrides(args, QuestionParserConfig))
    run = train_question_parser(cfg, args.out, resume=args.resume, progress=not args.no_progress)
    print(f"run directory: {run.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
