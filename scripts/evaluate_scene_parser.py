"""``python scripts/evaluate_scene_parser.py``: the command ``nsvqa-evaluate-scene-parser`` (:mod:`orchestration.cli.evaluate_scene_parser`) from a clone."""
from orchestration.cli.evaluate_scene_parser import main

if __name__ == "__main__":
    raise SystemExit(main())
