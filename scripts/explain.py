"""``python scripts/explain.py``: the command ``nsvqa-explain`` (:mod:`orchestration.cli.explain`) from a clone."""
from orchestration.cli.explain import main

if __name__ == "__main__":
    raise SystemExit(main())
