"""Train a baseline (random, majority, lstm, cnn_lstm, film, ...) on one variant; predict on any variant.

    python scripts/train_baseline.py --model lstm --data data/generated/mini/mid --profile mini --out runs/lstm/mid
    python scripts/train_baseline.py ... --resume                       # continue after an interruption
    python scripts/train_baseline.py ... --resume --predict data/generated/mini/hard --predict data/generated/mini/mid
    python scripts/train_baseline.py ... --predict-only --predict ROOT/VARIANT --split val

RUN_DIR gets config.json (resolved config + command line), train.log, tb/ (tensorboard) and
baseline.pt (an atomic checkpoint with the vocabularies, that rebuilds the model alone). Each
--predict ROOT/VARIANT writes RUN_DIR/predictions/<model>__train-<data variant>__test-<VARIANT>.jsonl,
which scripts/evaluate_rd.py --runs RUN_DIR reads. Config fields are overridden with
--set NAME=VALUE (e.g. --set steps=500 --set image_width=96), each value read as its field's type
(bool: true/false; a field that may be None: none).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from executors.errors import FormatError
from executors.io import read_json
from nsvqa.artifacts.predictions import predictions_path, write_predictions
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import ConfigError, check_run_outside_data, parse_checked, parse_overrides, resolve_device
from nsvqa.evaluation import accuracy
from nsvqa.models import PROFILE_NAMES, UnknownModel
from nsvqa.training.checkpoint import CheckpointError
from nsvqa.fileio import FolderInUse, OutputFolder
from nsvqa.training import RunMismatch
from nsvqa.training.cli import interruptible

PROG = "nsvqa-train-baseline"


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.split("\n\n")[0])
    # not choices: the registry imports torch, which --help does not wait for; an unknown name is
    # one error line listing the valid ones (:func:`trainable`, after parsing)
    p.add_argument("--model", required=True, help="a registered model that trains (e.g. lstm, film)")
    p.add_argument("--data", required=True, help="the training variant folder ROOT/VARIANT")
    p.add_argument("--out", type=OutputFolder, required=True, help="run directory")
    p.add_argument("--profile", choices=PROFILE_NAMES, default="mini", help="the training profile")
    p.add_argument("--seed", type=int, default=0, help="training seed")
    p.add_argument("--device", default="auto", type=resolve_device,
                   help="torch device: auto (CUDA when present, else the CPU), cpu, cuda")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", dest="overrides",
                   help="config override (e.g. steps=500), parsed with the field's type; repeatable")
    p.add_argument("--predict", action="append", metavar="ROOT/VARIANT", default=[],
                   help="after training, write predictions on this variant's --split; repeatable")
    p.add_argument("--split", default="test", help="split of the --predict variants")
    p.add_argument("--predict-only", action="store_true", help="skip training: predict with the run's checkpoint")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def trainable(registry: Any, name: str) -> Any:
    """The registered model ``name`` (:mod:`orchestration.models`), one that trains.

    Raises:
        UnknownModel: no model of that name trains (the ones that do listed).
    """
    valid = [n for n in registry.names() if registry.get(n).trainable]
    if name not in valid:
        raise UnknownModel(f"unknown baseline {name!r}; valid: {', '.join(valid)}")
    return registry.get(name)


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parse_checked(parser, argv, "out")
    check_run_outside_data(parser, args.out, args.data, variant_folder=True)  # a run inside the data: refused
    with needs_extra(PROG):
        import torch  # heavy, as is the next (the registry loads the models, and torch): after parsing

        from orchestration import models as registry
    if args.threads:
        torch.set_num_threads(args.threads)

    def work() -> int:
        try:
            model = trainable(registry, args.model)
            data = Path(args.data)
            if not args.predict_only:
                if not data.is_dir():
                    raise FileNotFoundError(f"--data {data}: no such directory (expected ROOT/VARIANT)")
                over = {"seed": args.seed, "device": args.device} | parse_overrides(args.overrides, model.config_class)
                cfg = model.config(str(data), args.profile, **over)
                model.train(cfg, args.out, resume=args.resume, progress=not args.no_progress)
                print(f"run directory: {args.out}")
            else:  # the predictions file names the training variant: it must be the run's
                cfg_path = Path(args.out) / "config.json"
                trained = (read_json(cfg_path, allow_nan=True).get("config", {}).get("data") if cfg_path.is_file()
                           else None)
                if trained is not None and Path(trained).name != data.name:
                    raise ConfigError(f"{cfg_path}, field 'data': the run was trained on {trained}, not on --data {data}")
            for target in args.predict:
                target = Path(target)
                if not target.is_dir():
                    raise FileNotFoundError(f"--predict {target}: no such directory (expected ROOT/VARIANT)")
                preds = model.predict(args.out, target.parent, target.name, args.split, device=args.device,
                                      progress=not args.no_progress)
                path = predictions_path(args.out, model.name, data.name, target.name)
                write_predictions(path, preds)
                acc = accuracy(preds)
                print(f"{path}: {acc.n} questions, accuracy {acc.accuracy:.4f}")
        except (RunMismatch, FolderInUse, UnknownModel, ConfigError, FormatError, CheckpointError,
                FileNotFoundError) as e:
            # the project's input errors only: a bug in a model keeps its traceback
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
        return 0

    return interruptible(PROG, work, "rerun the same command" + ("" if args.resume else " with --resume") + " to resume")


if __name__ == "__main__":
    sys.exit(main())
