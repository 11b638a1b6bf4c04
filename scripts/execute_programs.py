"""``python scripts/execute_programs.py``: the command ``nsvqa-execute-programs`` (:mod:`nsvqa.cli.execute_programs`) from a clone."""
from nsvqa.cli.execute_programs import main

if __name__ == "__main__":
    raise SystemExit(main())
