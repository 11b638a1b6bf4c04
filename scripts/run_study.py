"""``python scripts/run_study.py``: the command ``nsvqa-run-study`` (:mod:`orchestration.cli.run_study`) from a clone."""
from orchestration.cli.run_study import main

if __name__ == "__main__":
    raise SystemExit(main())
