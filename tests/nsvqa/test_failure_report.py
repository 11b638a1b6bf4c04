"""Reports say per model how many programs were invalid and how many answers guessed, and warn in
one line when most programs are invalid (nsvqa.evaluation.report.invalid_program_warning)."""
from __future__ import annotations

from nsvqa.artifacts.predictions import Prediction, predictions_path, write_predictions
from nsvqa.evaluation.report import report_from_runs
from orchestration.experiment import summary_table


def _acc(n, invalid, guessed, accuracy):
    return {"n": n, "accuracy": accuracy, "accuracy_no_guess": 0.0, "n_correct": 0, "n_guessed": guessed,
            "n_execution_error": 0, "n_invalid_program": invalid}


def test_the_run_summary_counts_failures_and_warns_once():
    summary = {"variant": "mid", "seed": 0, "profile": "tiny", "split": "test", "tests": ["mid", "hard"],
               "accuracy": {"pnsvqa": {"mid": _acc(20, 18, 18, 0.1), "hard": _acc(20, 20, 20, 0.05)},
                            "nsvqa+gtprog": {"mid": _acc(20, 0, 1, 0.9), "hard": _acc(20, 0, 0, 0.8)}}}
    text = summary_table(summary)
    assert "pnsvqa        38, 38 (of 40)" in text and "nsvqa+gtprog  0, 1 (of 40)" in text
    warnings = [line for line in text.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: most programs are invalid for pnsvqa (38 of 40): those answers are random "
                        "guesses (check the question parser's training)"]
    summary["accuracy"].pop("pnsvqa")
    assert "warning" not in summary_table(summary)


def test_the_rd_report_warns_when_most_programs_are_invalid(tmp_path):
    runs = tmp_path / "runs"
    for model, invalid in (("pnsvqa", True), ("nsvqa+gtprog", False)):
        preds = [Prediction(i, "count", "2", "3" if invalid else "2", invalid_program=invalid, guessed=invalid)
                 for i in range(4)]
        write_predictions(predictions_path(runs / "mid", model, "mid", "mid"), preds)
    _, written = report_from_runs([runs], tmp_path / "report", plots=False, n_boot=0)
    md = (tmp_path / "report" / "report.md").read_text().splitlines()
    assert md[2] == ("**warning: most programs are invalid for pnsvqa (4 of 4): those answers are random guesses "
                     "(check the question parser's training)**")
    assert sum("most programs are invalid" in line for line in md) == 1


def test_the_warning_counts_answers_guessed_after_failed_executions_too():
    summary = {"variant": "mid", "seed": 0, "profile": "tiny", "split": "test", "tests": ["mid"],
               "accuracy": {"pnsvqa": {"mid": {**_acc(20, 2, 15, 0.1), "n_execution_error": 13}}}}
    warnings = [line for line in summary_table(summary).splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: most answers are guessed for pnsvqa (15 of 20: 2 invalid programs, 13 failed "
                        "executions): programs that failed to execute on the parsed scenes (check the scene "
                        "parser's training)"]


def test_a_tiny_run_says_it_is_a_smoke_profile_and_names_the_smallest_that_learns():
    summary = {"variant": "mid", "seed": 0, "profile": "tiny", "split": "test", "tests": ["mid"],
               "accuracy": {"pnsvqa": {"mid": _acc(20, 0, 0, 0.0)}}}
    last = summary_table(summary).splitlines()[-1]
    assert last.startswith("note: --profile tiny is a smoke profile") and "does not learn" in last
    assert "smallest profile that learns is demo: make demo-train, about 12 minutes on 2 cores" in last
    assert "smoke profile" not in summary_table({**summary, "profile": "demo"})
