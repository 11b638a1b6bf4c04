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
from typing import Any

from nsvqa.cli import command_parser, needs_extra
from nsvqa.training.cli import add_run_args, train_main
from nsvqa.training.question_config import QuestionParserConfig


PROG = "nsvqa-train-question-parser"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    add_run_args(p, QuestionParserConfig, checkpoint="the checkpoint")
    return p


def main(argv: list[str] | None = None) -> int:
    return train_main(get_args_parser(), argv, QuestionParserConfig, train)


def train(cfg: QuestionParserConfig, out: Any, **kwargs: Any) -> Any:
    """:func:`nsvqa.training.question_parser.train_question_parser`, imported once the arguments are parsed."""
    with needs_extra(PROG):
        from nsvqa.training.question_parser import train_question_parser  # heavy (the trainer, torch): after parsing
    return train_question_parser(cfg, out, **kwargs)


if __name__ == "__main__":
    sys.exit(main())
