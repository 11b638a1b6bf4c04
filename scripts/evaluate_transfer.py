"""``python scripts/evaluate_transfer.py``: the command ``nsvqa-evaluate-transfer`` (:mod:`orchestration.cli.evaluate_transfer`) from a clone."""
from orchestration.cli.evaluate_transfer import main

if __name__ == "__main__":
    raise SystemExit(main())
