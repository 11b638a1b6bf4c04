"""``python scripts/export_superclevr.py``: the command ``nsvqa-export-superclevr`` (:mod:`orchestration.cli.export_superclevr`) from a clone."""
from orchestration.cli.export_superclevr import main

if __name__ == "__main__":
    raise SystemExit(main())
