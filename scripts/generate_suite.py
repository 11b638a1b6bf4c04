"""``python scripts/generate_suite.py``: the command ``nsvqa-generate-suite`` (:mod:`orchestration.cli.generate_suite`) from a clone."""
from orchestration.cli.generate_suite import main

if __name__ == "__main__":
    raise SystemExit(main())
