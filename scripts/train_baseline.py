"""``python scripts/train_baseline.py``: the command ``nsvqa-train-baseline`` (:mod:`orchestration.cli.train_baseline`) from a clone."""
from orchestration.cli.train_baseline import main

if __name__ == "__main__":
    raise SystemExit(main())
