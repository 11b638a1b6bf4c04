"""``python scripts/generate_dataset.py``: the command ``nsvqa-generate-dataset`` (:mod:`orchestration.cli.generate_dataset`) from a clone."""
from orchestration.cli.generate_dataset import main

if __name__ == "__main__":
    raise SystemExit(main())
