"""``python scripts/dataset_stats.py``: the command ``nsvqa-dataset-stats`` (:mod:`orchestration.cli.dataset_stats`) from a clone."""
from orchestration.cli.dataset_stats import main

if __name__ == "__main__":
    raise SystemExit(main())
