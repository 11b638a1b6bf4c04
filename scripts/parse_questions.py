"""``python scripts/parse_questions.py``: the command ``nsvqa-parse-questions`` (:mod:`orchestration.cli.parse_questions`) from a clone."""
from orchestration.cli.parse_questions import main

if __name__ == "__main__":
    raise SystemExit(main())
