"""scripts/train_question_parser.py and scripts/parse_questions.py end to end (tiny)."""
from __future__ import annotations

import json

import pytest

from nsvqa.artifacts import read_programs


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
    # the programs file the experiment writes: one record per question, in order
    doc = read_programs(out, questions=len(gold))
    assert len(doc) == summary["n"] and doc.questions_file == str(qfile) and doc.provenance["beam"] == 2
    raw = json.loads(out.read_text())
    assert set(raw) == {"provenance", "questions_file", "programs"}
    n_valid = 0
    for r in raw["programs"]:
        assert set(r) == {"program", "valid", "error"}
        assert (r["program"] is None) == (not r["valid"]) == (r["error"] is not None)
        n_valid += r["valid"]
    assert summary["valid"] == n_valid / len(gold)
    assert json.loads(metrics.read_text())["exact"] == summary["exact"]
    assert 0 <= summary["exact"] <= summary["exact_up_to_part_synonyms"] <= 1
    # the executors run the parsed programs on the questions' scenes; null programs are invalid
    capsys.readouterr()
    assert load_script("execute_programs").main(["--scenes", str(sfile), "--questions", str(qfile),
                                                 "--programs", str(out)]) == 0
    ex = json.loads(capsys.readouterr().out)
    assert ex["invalid_programs"] == len(gold) - n_valid
    assert ex["accuracy"] == pytest.approx(summary["answer_accuracy"])
    # one program per question: another count is an error naming both
    assert load_script("execute_programs").main(["--scenes", str(sfile), "--questions", str(qfile),
                                                 "--programs", str(out), "--limit", "3"]) == 2
    assert f"{out}: {len(gold)} programs for the 3 questions" in capsys.readouterr().err


def test_parse_questions_without_programs_or_answers(load_script, trained, tmp_path, capsys):
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps([{"question": "How many red things are there?", "image_index": 0},
                                 {"question": "Wibble wobble?", "image_index": 0}]))
    capsys.readouterr()
    assert load_script("parse_questions").main(["--checkpoint", str(trained / "question_parser.pt"),
                                                "--questions", str(qfile), "--out", str(tmp_path / "o.json")]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["n"] == 2 and s["exact"] is None and s["answer_accuracy"] is None
    assert len(read_programs(tmp_path / "o.json", questions=2)) == 2


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


def test_parse_questions_refuses_unbounded_or_ambiguous_input_in_one_line(load_script, trained, tmp_path, capsys):
    """Issue 80: a question past the length cap (a 100 kB question took 25 s per LSTM step), a
    ground-truth program whose nodes are shared (to_prefix exponential: out of memory), and a key
    given twice are each one line, exit 2, before any parse."""
    import time

    from parsers.question.vocab import MAX_QUESTION_TOKENS

    main = load_script("parse_questions").main
    qfile, out = tmp_path / "q.json", tmp_path / "o.json"
    chain = [{"type": "scene", "inputs": [], "value_inputs": []}] + [
        {"type": "union", "inputs": [i, i], "value_inputs": []} for i in range(60)] + [
        {"type": "count", "inputs": [60], "value_inputs": []}]
    cases = [
        (json.dumps([{"question": "ok?"}, {"question": "is there a red cube? " * 10_000}]),
         f"{qfile}, question 1, field 'question': 60000 words and marks (210000 characters), over the cap of "
         f"{MAX_QUESTION_TOKENS}"),
        (json.dumps([{"question": "How many?", "program": chain}]),
         f"{qfile}, question 0, field 'program': node 1 (union): input 0 is already an input of node 1: "
         f"a program is a tree"),
        ('[{"question": "How many?", "answer": "2", "answer": "3"}]',
         f"{qfile}, at [0], key 'answer': given twice in one object"),
        ('[{"question": "How many?", "answer": 1e999}]', f"{qfile}, at [0].answer: the number 1e999 does not fit"),
    ]
    for text, message in cases:
        qfile.write_text(text)
        capsys.readouterr()
        t0 = time.perf_counter()
        assert main(["--checkpoint", str(trained), "--questions", str(qfile), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
        assert time.perf_counter() - t0 < 20 and not out.exists()


def test_the_question_parser_api_refuses_a_question_past_the_cap(trained):
    from executors.errors import FormatError
    from nsvqa.training.loading import load_question_parser

    parser = load_question_parser(trained / "question_parser.pt", "cpu")
    with pytest.raises(FormatError, match=r"^question 1, field 'question': 201 words and marks"):
        parser.parse(["How many?", "a " * 201])
    assert len(parser.parse(["How many " + "big " * 150 + "things?"])) == 1  # under the cap: parsed
