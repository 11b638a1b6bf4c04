"""``python scripts/parse_scenes.py``: the command ``nsvqa-parse-scenes`` (:mod:`orchestration.cli.parse_scenes`) from a clone."""
from orchestration.cli.parse_scenes import main

if __name__ == "__main__":
    raise SystemExit(main())
