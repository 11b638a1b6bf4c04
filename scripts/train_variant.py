"""``python scripts/train_variant.py``: the command ``nsvqa-train-variant`` (:mod:`orchestration.cli.train_variant`) from a clone."""
from orchestration.cli.train_variant import main

if __name__ == "__main__":
    raise SystemExit(main())
