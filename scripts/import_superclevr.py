"""``python scripts/import_superclevr.py``: the command ``nsvqa-import-superclevr`` (:mod:`orchestration.cli.import_superclevr`) from a clone."""
from orchestration.cli.import_superclevr import main

if __name__ == "__main__":
    raise SystemExit(main())
