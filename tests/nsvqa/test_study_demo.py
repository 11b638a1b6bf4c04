"""The demo's comparison: a run's predictions beside the study's committed predictions on the same
questions (matched by question_hash), the cells outside the study's interval named, the image margin
against the question-only model, and the models the study has no predictions of."""
from __future__ import annotations

import json


from nsvqa.artifacts.predictions import Prediction, write_predictions
from orchestration.study.report.demo import demo_comparison, demo_table

TESTS = ("easy", "mid", "hard")


def _preds(n: int, right: int, *, offset: int = 0) -> list[Prediction]:
    """n questions (hashes h<offset+i>), the first ``right`` answered correctly."""
    return [Prediction(question_index=offset + i, question_type="exist", answer="yes",
                       prediction="yes" if i < right else "no", image_index=(offset + i) // 10,
                       question_hash=f"h{offset + i}") for i in range(n)]


def _study(tmp_path, cells):
    folder = tmp_path / "results" / "pieces" / "mid-seed0-film"
    folder.mkdir(parents=True)
    (folder / "piece.json").write_text(json.dumps({"piece": {"variant": "mid", "seed": 0, "group": "film"}}))
    for (model, test), preds in cells.items():
        write_predictions(folder / "predictions" / f"{model}__train-mid__test-{test}.jsonl.gz", preds)
    return tmp_path / "results"


def _run(tmp_path, cells, models):
    run = tmp_path / "run"
    out = []
    for (model, test), preds in cells.items():
        path = run / "predictions" / f"{model}__train-mid__test-{test}.jsonl"
        write_predictions(path, preds)
        out.append({"model": model, "train": "mid", "test": test, "files": [str(path)]})
    return {"cells": out, "factors": {"visual": {"train_variants": ["mid"], "test_variants": list(TESTS),
                                                 "models": {m: {"rd": {"value": 0.1, "ci95": [0.05, 0.15]}}
                                                            for m in models}}}}


def test_the_demo_is_compared_with_the_study_on_the_same_questions(tmp_path):
    # the study asked 300 questions per cell; the demo the first 100 of them
    study = {("film", t): _preds(100, 60) + _preds(200, 0, offset=100) for t in TESTS}
    study |= {("lstm", t): _preds(100, 40) + _preds(200, 200, offset=100) for t in TESTS}
    results = _study(tmp_path, study)
    run = {("film", "easy"): _preds(100, 60), ("film", "mid"): _preds(100, 60), ("film", "hard"): _preds(100, 20),
           ("lstm", "easy"): _preds(100, 40), ("lstm", "mid"): _preds(100, 40), ("lstm", "hard"): _preds(100, 40),
           ("nscl", "easy"): _preds(100, 70), ("nscl", "mid"): _preds(100, 70), ("nscl", "hard"): _preds(100, 70)}
    c = demo_comparison(_run(tmp_path, run, ["film", "lstm", "nscl"]), results)
    rows = {r["model"]: r for r in c["rows"]}
    film = rows["film"]["cells"]
    # the study's accuracy on the demo's 100 questions, not on its 300
    assert film["mid"]["study"] == 0.6 and film["mid"]["inside"] is True
    assert film["hard"]["ours"] == 0.2 and film["hard"]["inside"] is False
    assert c["outside"] == [("film", "hard")]
    assert rows["lstm"]["sees"] is False and c["reference"] == "lstm"
    assert abs(rows["film"]["margin"]["ours"] - 0.2) < 1e-9 and abs(rows["film"]["margin"]["study"] - 0.2) < 1e-9
    assert rows["film"]["rd"]["study"] is not None and rows["nscl"]["rd"]["study"] is None
    assert c["missing"] == ["nscl"] and rows["nscl"]["cells"]["mid"]["inside"] is None
    table = demo_table(c)
    assert "20.0*(60.0)" in table
    assert "5 of 6 cells inside the study's 95% interval" in table and "film on hard" in table
    assert "not in the study's committed predictions: nscl" in table
    assert "question only" in table  # a model that reads no image says so
