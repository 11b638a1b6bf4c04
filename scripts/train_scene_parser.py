"""Train the scene parser (Mask R-CNN detector + ResNet attribute head) on one generated variant.

    python scripts/train_scene_parser.py --data data/generated/mini/mid --profile mini --out runs/scene/mid
    python scripts/train_scene_parser.py ... --resume          # continue after an interruption
    python scripts/train_scene_parser.py ... --stage attributes  # only the head (uses RUN_DIR/detector.pt)
    python scripts/train_scene_parser.py ... --head-width 32 --set det_anchor_sizes=8,16,32  # any config field

Every field of nsvqa.training.scene_config.SceneParserConfig is an option (--field-name VALUE, or
--set NAME=VALUE) over the profile's value; the network fields are saved in the checkpoints.

RUN_DIR gets config.json (resolved config + command line), train.log, tb/ (tensorboard),
detector.pt and attributes.pt (atomic checkpoints that rebuild their model alone).
"""
from __future__ import annotations

import argparse
import sys

import torch

from nsvqa.config import HelpFormatter, add_config_args, check_outputs, config_overrides
from nsvqa.training.scene_config import SceneParserConfig
from nsvqa.training.scene_parser import train_scene_parser


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--profile", choices=SceneParserConfig.profile_names(), default="mini", help="the training profile (the config's sizes and schedule)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoints in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = add_config_args(p, SceneParserConfig)
    g.add_argument("--no-part-crops", dest="attr_parts", action="store_false", default=None,
                   help="train the head on object crops only (= --no-attr-parts)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = get_args_parser()
    args = parser.parse_args(argv)
    check_outputs(parser, args.out)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = SceneParserConfig.from_profile(args.data, args.profile, **config_overrides(args, SceneParserConfig))
    run = train_scene_parser(cfg, args.out, resume=args.resume, progress=not args.no_progress)
    print(f"run directory: {run.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
