"""``python scripts/train_scene_parser.py``: the command ``nsvqa-train-scene-parser`` (:mod:`orchestration.cli.train_scene_parser`) from a clone."""
from orchestration.cli.train_scene_parser import main

if __name__ == "__main__":
    raise SystemExit(main())
