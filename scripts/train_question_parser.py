"""Train the question parser (bi-LSTM encoder, attention decoder) on one generated variant.

    python scripts/train_question_parser.py --data data/generated/mini/mid --profile mini --out runs/qp/mid
    python scripts/train_question_parser.py ... --resume      # continue after an interruption
    python scripts/train_question_parser.py ... --reinforce   # then REINFORCE on answers (NS-VQA)

RUN_DIR gets config.json (resolved config + command line), train.log, tb/ (tensorboard) and
question_parser.pt (an atomic checkpoint with the vocabularies, that rebuilds the model alone).
"""
from __future__ import annotations

import argparse
import sys

import torch

from nsvqa.question_training import PROFILES, QuestionParserConfig, train_question_parser

OVERRIDES = (("steps", int), ("batch", int), ("lr", float), ("eval_every", int), ("val_questions", int),
             ("reinforce_steps", int), ("reinforce_batch", int), ("reinforce_lr", float), ("word_dim", int),
             ("hidden", int), ("layers", int), ("dropout", float), ("max_decode_len", int),
             ("min_word_count", int), ("grad_clip", float), ("max_train_questions", int))


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--profile", choices=sorted(PROFILES), default="mini")
    p.add_argument("--ontology", default=None, help="superclevr (default) or clevr")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--reinforce", action="store_true", default=None,
                   help="after the supervised steps, fine-tune with REINFORCE (reward: correct answer on the "
                        "ground-truth train scene)")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    p.add_argument("--no-progress", action="store_true")
    g = p.add_argument_group("overrides of the profile")
    for name, typ in OVERRIDES:
        g.add_argument("--" + name.replace("_", "-"), dest=name, type=typ, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    over = {k: getattr(args, k) for k, _ in OVERRIDES}
    over |= {"seed": args.seed, "device": args.device, "ontology": args.ontology, "reinforce": args.reinforce}
    cfg = QuestionParserConfig.resolve(args.data, args.profile, **over)
    run = train_question_parser(cfg, args.out, resume=args.resume, progress=not args.no_progress)
    print(f"run directory: {run.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
