"""``python scripts/evaluate_rd.py``: the command ``nsvqa-evaluate-rd`` (:mod:`orchestration.cli.evaluate_rd`) from a clone."""
from orchestration.cli.evaluate_rd import main

if __name__ == "__main__":
    raise SystemExit(main())
