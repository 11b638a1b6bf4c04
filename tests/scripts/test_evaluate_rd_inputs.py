"""scripts/evaluate_rd.py distrusts its inputs (docs/guarantees.md): an empty, edited or cut-short
predictions file, or one whose questions differ from another model's on the same test split, is one
line naming the file and the line, exit status 2, before any score."""
from __future__ import annotations

import gzip
import json

import pytest

from nsvqa.artifacts import read_questions
from nsvqa.artifacts.predictions import Prediction, predictions_path, write_predictions
from nsvqa.training import RunDir


@pytest.fixture
def data(tmp_path, write_qa_split):
    for seed, v in enumerate(("easy", "mid", "hard")):
        write_qa_split(tmp_path / "data" / v, "test", 2, seed=7)  # one seed: the same questions at each level
    return tmp_path / "data"


def _predict(data, test):
    return [Prediction(question_index=q.question_index, question_type="count", answer=q.answer,
                       prediction=q.answer if q.index % 3 else "no", question_hash=q.question_hash)
            for q in read_questions(data / test / "questions" / "test_questions.json")]


def _runs(tmp_path, data, models=("nsvqa", "pnsvqa"), config=True):
    runs = tmp_path / "runs"
    for m in models:
        for test in ("easy", "mid", "hard"):
            write_predictions(predictions_path(runs / "mid", m, "mid", test), _predict(data, test))
    if config:
        RunDir(runs / "mid", {"data": str(data), "variant": "mid", "split": "test"}).close()  # as train_variant
    return runs


def _edit(path, line, change):
    lines = path.read_text().splitlines()
    rec = json.loads(lines[line - 1])
    change(rec)
    lines[line - 1] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")


def _main(load_script, runs, out, capsys, *extra):
    rc = load_script("evaluate_rd").main(["--runs", str(runs), "--out", str(out), "--no-plots", "--n-boot", "0",
                                          *extra])
    return rc, capsys.readouterr().err


def test_consistent_files_are_scored(load_script, data, tmp_path, capsys):
    rc, err = _main(load_script, _runs(tmp_path, data), tmp_path / "report", capsys)
    assert rc == 0, err


def test_an_empty_file_is_refused(load_script, data, tmp_path, capsys):
    runs = _runs(tmp_path, data)
    path = predictions_path(runs / "mid", "pnsvqa", "mid", "hard")
    path.write_text("")
    rc, err = _main(load_script, runs, tmp_path / "report", capsys)
    assert rc == 2 and err.count("\n") == 1 and f"{path}: no predictions (an empty file)" in err, err
    assert not (tmp_path / "report").exists()


def test_an_edited_answer_is_refused_against_the_test_split(load_script, data, tmp_path, capsys):
    runs = _runs(tmp_path, data, models=("nsvqa",))
    path = predictions_path(runs / "mid", "nsvqa", "mid", "easy")
    _edit(path, 3, lambda r: r.update(answer="purple"))
    rc, err = _main(load_script, runs, tmp_path / "report", capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{path}, line 3, field 'answer': 'purple' for question_index 2, but " in err
    assert "easy/questions/test_questions.json has" in err


def test_a_cut_short_file_is_refused(load_script, data, tmp_path, capsys):
    runs = _runs(tmp_path, data)
    path = predictions_path(runs / "mid", "pnsvqa", "mid", "mid")
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-3]))
    rc, err = _main(load_script, runs, tmp_path / "report", capsys)
    assert rc == 2 and "3 questions of" in err and "the file was cut short" in err and str(path) in err, err


def test_without_the_data_the_files_are_checked_against_each_other(load_script, data, tmp_path, capsys):
    runs = _runs(tmp_path, data, config=False)
    a = predictions_path(runs / "mid", "nsvqa", "mid", "hard")
    b = predictions_path(runs / "mid", "pnsvqa", "mid", "hard")
    _edit(b, 2, lambda r: r.update(question_hash="another"))
    rc, err = _main(load_script, runs, tmp_path / "report", capsys)
    assert rc == 2 and f"{b}, line 2, field 'question_hash': 'another' for question_index 1, but {a} has" in err, err
    _edit(b, 2, lambda r: r.update(question_hash=json.loads(a.read_text().splitlines()[1])["question_hash"]))
    b.write_text("".join(b.read_text().splitlines(keepends=True)[:-1]))  # one question fewer: paired on fewer
    rc, err = _main(load_script, runs, tmp_path / "report", capsys)
    assert rc == 2 and f"{b}: 1 questions of {a} have no prediction" in err, err


def test_data_names_the_test_split_to_check_against(load_script, data, tmp_path, capsys):
    runs = _runs(tmp_path, data, config=False)
    gz = predictions_path(runs / "mid", "nsvqa", "mid", "mid")
    path = gz.with_name(gz.name + ".gz")
    path.write_bytes(gzip.compress(gz.read_bytes()))
    gz.unlink()
    rc, err = _main(load_script, runs, tmp_path / "report", capsys, "--data", str(data))
    assert rc == 0, err
    qfile = data / "mid" / "questions" / "test_questions.json"
    doc = json.loads(qfile.read_text())
    doc["questions"].append(dict(doc["questions"][0], question_index=99))
    qfile.write_text(json.dumps(doc))
    rc, err = _main(load_script, runs, tmp_path / "report", capsys, "--data", str(data))
    assert rc == 2 and "(question_index 99 the first): the file was cut short" in err, err


def test_predictions_for_a_test_variant_the_data_lacks_are_refused(load_script, data, tmp_path, capsys):
    """The run's data root is there but holds no ``hard``: its predictions are not scored unchecked."""
    runs = _runs(tmp_path, data)
    (data / "hard" / "questions" / "test_questions.json").unlink()
    rc, err = _main(load_script, runs, tmp_path / "report", capsys)
    hard = predictions_path(runs / "mid", "nsvqa", "mid", "hard")
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{hard}: its test variant 'hard' is not in the data root {data}" in err, err
    assert not (tmp_path / "report").exists()
    rc, err = _main(load_script, runs, tmp_path / "report", capsys, "--data", str(data))  # named: the same
    assert rc == 2 and "hard/questions/test_questions.json (--data" in err, err


def test_a_duplicated_key_in_a_prediction_line_is_refused(load_script, data, tmp_path, capsys):
    """Which ``prediction`` counts would be the JSON parser's choice (23.3% -> 26.7% on a probe)."""
    runs = _runs(tmp_path, data)
    path = predictions_path(runs / "mid", "nsvqa", "mid", "mid")
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:-1] + ', "prediction": "yes"}'
    path.write_text("\n".join(lines) + "\n")
    rc, err = _main(load_script, runs, tmp_path / "report", capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{path}, line 2, at the top level, key 'prediction': given twice" in err, err
    for bad, what in [(b'"answer": 1e999', "the number 1e999 does not fit a 64-bit float"),
                      (b'"answer": NaN', "the number NaN is not a JSON number"),
                      (b'"answer": "\xff"', "not UTF-8 text (byte 0xff")]:
        path.write_bytes(b"\n".join([*(x.encode() for x in lines[:1]), b'{' + bad + b'}', b""]))
        rc, err = _main(load_script, runs, tmp_path / "report", capsys)
        assert rc == 2 and err.count("\n") == 1 and f"{path}, line 2" in err and what in err, err


def test_a_runs_image_shuffle_predictions_are_no_second_seed(load_script, data, tmp_path, capsys):
    runs = _runs(tmp_path, data)
    shuffled = [Prediction(p.question_index, p.question_type, p.answer, "no", question_hash=p.question_hash)
                for p in _predict(data, "mid")]
    write_predictions(predictions_path(runs / "mid" / "shuffled", "nsvqa", "mid", "mid"), shuffled)
    rc, err = _main(load_script, runs, tmp_path / "report", capsys)
    assert rc == 0, err
    cells = json.loads((tmp_path / "report" / "report.json").read_text())["cells"]
    assert all(len(c["files"]) == 1 and "shuffled" not in c["files"][0] for c in cells)
