"""scripts/train_question_parser.py and scripts/parse_questions.py end to end (tiny)."""
from __future__ import annotations

import json

import pytest

from executors.io import load_questions


@pytest.fixture(scope="module")
def trained(load_script, qp_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("scripts") / "run"
    rc = load_script("train_question_parser").main(
        ["--data", str(qp_data), "--profile", "tiny", "--out", str(out), "--steps", "40", "--batch", "16",
         "--lr", "1e-2", "--threads", "1", "--no-progress"])
    assert rc == 0
    return out


def test_parse_questions_writes_executable_programs_and_metrics(load_script, trained, qp_data, tmp_path, capsys):
    qfile, sfile = qp_data / "questions" / "val_questions.json", qp_data / "scenes" / "val_scenes.json"
    out, metrics = tmp_path / "programs.json", tmp_path / "metrics.json"
    capsys.readouterr()
    rc = load_script("parse_questions").main(["--checkpoint", str(trained), "--questions", str(qfile), "--scenes",
                                              str(sfile), "--out", str(out), "--metrics", str(metrics), "--beam", "2"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    gold = json.loads(qfile.read_text())["questions"]
    recs = json.loads(out.read_text())["questions"]
    assert len(recs) == len(gold) == summary["n"]
    n_valid = 0
    for g, r in zip(gold, recs):
        assert r["question"] == g["question"] and r["gold_program"] == g["program"]
        assert set(r["parse"]) == {"tokens", "valid", "error"}
        assert (r["program"] is None) == (not r["parse"]["valid"]) == (r["parse"]["error"] is not None)
        n_valid += r["parse"]["valid"]
    assert summary["valid"] == n_valid / len(recs)
    assert json.loads(metrics.read_text())["exact"] == summary["exact"]
    assert 0 <= summary["exact"] <= summary["exact_up_to_part_synonyms"] <= 1
    # the output is a questions file the executors read; null programs are rejected as invalid
    assert len(load_questions(out)) == len(recs)
    capsys.readouterr()
    assert load_script("execute_programs").main(["--scenes", str(sfile), "--questions", str(out)]) == 0
    ex = json.loads(capsys.readouterr().out)
    assert ex["invalid_programs"] == len(recs) - n_valid
    assert ex["accuracy"] == pytest.approx(summary["answer_accuracy"])


def test_parse_questions_without_programs_or_answers(load_script, trained, tmp_path, capsys):
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps([{"question": "How many red things are there?", "image_index": 0},
                                 {"question": "Wibble wobble?", "image_index": 0}]))
    capsys.readouterr()
    assert load_script("parse_questions").main(["--checkpoint", str(trained / "question_parser.pt"),
                                                "--questions", str(qfile), "--out", str(tmp_path / "o.json")]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["n"] == 2 and s["exact"] is None and s["answer_accuracy"] is None
    assert "gold_program" not in json.loads((tmp_path / "o.json").read_text())["questions"][0]


def test_parse_questions_bad_input(load_script, trained, tmp_path, capsys):
    main = load_script("parse_questions").main
    assert main(["--checkpoint", str(tmp_path / "nowhere"), "--questions", "q.json", "--out", "o.json"]) == 2
    assert f"{tmp_path / 'nowhere'}: no checkpoint file" in capsys.readouterr().err
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps({"questions": [{"question": "ok?"}, {"text": "no question field"}]}))
    assert main(["--checkpoint", str(trained), "--questions", str(qfile), "--out", str(tmp_path / "o.json")]) == 2
    assert f"{qfile}, question 1, field 'question': expected a string, got NoneType" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()
    with pytest.raises(SystemExit):
        main(["--checkpoint", str(trained), "--questions", str(qfile), "--out", "o.json", "--beam", "0"])
