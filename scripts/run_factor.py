"""``python scripts/run_factor.py``: the command ``nsvqa-run-factor`` (:mod:`orchestration.cli.run_factor`) from a clone."""
from orchestration.cli.run_factor import main

if __name__ == "__main__":
    raise SystemExit(main())
