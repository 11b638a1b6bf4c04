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

from nsvqa.config import add_config_args, config_overrides
from nsvqa.training.scene_config import SceneParserConfig
from nsvqa.training.scene_parser import train_scene_parser


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--profile", choices=SceneParserConfig.profile_names(), default="mini")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoints in --out")
    p.add_argument("--no-progress", action="store_true")
    g = add_config_args(p, SceneParserConfig)
    g.add_argument("--no-part-crops", dest="attr_parts", action="store_false", default=None,
                   help="train the head on object crops only (= --no-attr-parts)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = SceneParserConfig.from_profile(args.data, args.profile, **config_overrides(args, SceneParserConfig))
    run = train_scene_parser(cfg, args.out, resume=args.resume, progress=not args.no_progress)
    print(f"run directory: {run.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
