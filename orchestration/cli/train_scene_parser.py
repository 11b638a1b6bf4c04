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
from typing import Any

from nsvqa.cli import command_parser, needs_extra
from nsvqa.training.cli import add_run_args, train_main
from nsvqa.training.scene_config import SceneParserConfig


PROG = "nsvqa-train-scene-parser"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    g = add_run_args(p, SceneParserConfig, checkpoint="the checkpoints")
    g.add_argument("--no-part-crops", dest="attr_parts", action="store_false", default=None,
                   help="train the head on object crops only (= --no-attr-parts)")
    return p


def main(argv: list[str] | None = None) -> int:
    return train_main(get_args_parser(), argv, SceneParserConfig, train)


def train(cfg: SceneParserConfig, out: Any, **kwargs: Any) -> Any:
    """:func:`nsvqa.training.scene_parser.train_scene_parser`, imported once the arguments are parsed."""
    with needs_extra(PROG):
        from nsvqa.training.scene_parser import train_scene_parser  # heavy (the trainer, torch): after parsing
    return train_scene_parser(cfg, out, **kwargs)


if __name__ == "__main__":
    sys.exit(main())
