"""``python scripts/train_question_parser.py``: the command ``nsvqa-train-question-parser`` (:mod:`orchestration.cli.train_question_parser`) from a clone."""
from orchestration.cli.train_question_parser import main

if __name__ == "__main__":
    raise SystemExit(main())
