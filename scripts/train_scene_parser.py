"""Train the scene parser (Mask R-CNN detector + ResNet attribute head) on one generated variant.

    python scripts/train_scene_parser.py --data data/generated/mini/mid --profile mini --out runs/scene/mid
    python scripts/train_scene_parser.py ... --resume          # continue after an interruption
    python scripts/train_scene_parser.py ... --stage attributes  # only the head (uses RUN_DIR/detector.pt)

RUN_DIR gets config.json (resolved config + command line), train.log, tb/ (tensorboard),
detector.pt and attributes.pt (atomic checkpoints that rebuild their model alone).
"""
from __future__ import annotations

import argparse
import sys

import torch

from nsvqa.scene_training import PROFILES, STAGES, SceneParserConfig, train_scene_parser


# config fields settable from the command line (--det-iterations ...), with their types
OVERRIDES = (("det_iterations", int), ("det_batch", int), ("det_lr", float), ("attr_epochs", int),
             ("attr_batch", int), ("attr_lr", float), ("det_crop_images", int), ("checkpoint_every", int),
             ("crop_size", int), ("max_train_images", int), ("min_score", float), ("extra_parts", int),
             ("detector", str))


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--profile", choices=sorted(PROFILES), default="mini")
    p.add_argument("--mode", choices=["objects", "objects+parts", "agnostic"], default="objects",
                   help="detector classes: the 21 shapes, shapes and part names, or one 'object' class "
                        "(the attribute head tells the shape)")
    p.add_argument("--stage", choices=STAGES, default="all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoints in --out")
    p.add_argument("--no-progress", action="store_true")
    g = p.add_argument_group("overrides of the profile's schedule")
    for name, typ in OVERRIDES:
        g.add_argument("--" + name.replace("_", "-"), dest=name, type=typ, default=None)
    g.add_argument("--no-part-crops", dest="attr_parts", action="store_false", default=None,
                   help="train the head on object crops only")
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    over = {k: getattr(args, k) for k in ("mode", "stage", "seed", "device", "attr_parts", *dict(OVERRIDES))}
    cfg = SceneParserConfig.resolve(args.data, args.profile, **over)
    run = train_scene_parser(cfg, args.out, resume=args.resume, progress=not args.no_progress)
    print(f"run directory: {run.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
