"""scripts/execute_programs.py, called in-process through main(argv)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from executors import SceneLikelihoods, load_ontology
from executors.io import load_scenes

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "data" / "examples"
SCENES, QUESTIONS = EXAMPLES / "scenes.json", EXAMPLES / "questions.json"
MALFORMED = 10  # the example question with an empty filter_color value
N_EXAMPLES = 14
SUMMARY_KEYS = {"n", "correct", "accuracy", "invalid_programs", "execution_errors", "questions_per_second",
                "prepare_seconds", "executor", "mode"}


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("execute_programs")




def run(script, capsys, *argv) -> tuple[int, dict | None, str]:
    rc = script.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    if rc == 0:
        assert len(lines) == 1, out  # exactly one JSON line on stdout
        return rc, json.loads(lines[0]), err
    assert out == ""
    return rc, None, err


def _copy_examples(tmp_path: Path) -> tuple[Path, Path, dict, dict]:
    scenes = json.loads(SCENES.read_text())
    questions = json.loads(QUESTIONS.read_text())
    s, q = tmp_path / "scenes.json", tmp_path / "questions.json"
    s.write_text(json.dumps(scenes))
    q.write_text(json.dumps(questions))
    return s, q, scenes, questions


# ---------------------------------------------------------------------------- the example set
def test_examples_deterministic(script, capsys, tmp_path):
    out = tmp_path / "run" / "predictions.jsonl"
    rc, summary, err = run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS, "--out", out)
    assert rc == 0
    assert set(summary) == SUMMARY_KEYS
    assert summary["n"] == N_EXAMPLES
    assert summary["correct"] == N_EXAMPLES - 1
    assert summary["accuracy"] == pytest.approx((N_EXAMPLES - 1) / N_EXAMPLES)
    assert summary["invalid_programs"] == 1
    assert summary["execution_errors"] == 0
    assert summary["executor"] == "deterministic" and summary["mode"] is None
    assert summary["questions_per_second"] > 0 and summary["prepare_seconds"] >= 0
    assert f"{QUESTIONS}, question {MALFORMED}: node 1 (filter_color): empty value_inputs" in err

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    gold = json.loads(QUESTIONS.read_text())["questions"]
    assert [r["question_index"] for r in rows] == list(range(N_EXAMPLES))
    assert [r["image_index"] for r in rows] == [q["image_index"] for q in gold]
    assert [r["gold"] for r in rows] == [q["answer"] for q in gold]
    for i, r in enumerate(rows):
        assert set(r) == {"question_index", "image_index", "answer", "gold", "correct", "error"}
        if i == MALFORMED:
            assert r["answer"] is None and r["correct"] is False
            assert r["error"].startswith(f"InvalidProgram: {QUESTIONS}, question {MALFORMED}: node 1 (filter_color)")
        else:
            assert r["correct"] is True and r["error"] is None and r["answer"] == r["gold"]
    assert [p.name for p in out.parent.iterdir()] == ["predictions.jsonl"]  # no temp file left


def test_limit(script, capsys):
    rc, summary, _ = run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS, "--limit", 3)
    assert rc == 0 and summary["n"] == 3 and summary["correct"] == 3 and summary["invalid_programs"] == 0


def test_ontology_by_name_and_unknown(script, capsys):
    rc, summary, _ = run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS, "--ontology", "superclevr")
    assert rc == 0 and summary["correct"] == N_EXAMPLES - 1
    rc, _, err = run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS, "--ontology", "nosuch")
    assert rc == 2 and "nosuch" in err and "clevr" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("mode", ["threshold", "exact"])
def test_examples_probabilistic(script, capsys, mode):
    rc, summary, _ = run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS,
                         "--executor", "probabilistic", "--mode", mode)
    assert rc == 0
    assert (summary["n"], summary["correct"], summary["invalid_programs"], summary["execution_errors"]) == \
        (N_EXAMPLES, N_EXAMPLES - 1, 1, 0)
    assert summary["executor"] == "probabilistic" and summary["mode"] == mode


def test_likelihoods_file(script, capsys, tmp_path):
    onto = load_ontology("superclevr")
    scenes, _ = load_scenes(SCENES, onto)
    liks = [SceneLikelihoods.from_scene(s).to_json() for s in scenes]
    path = tmp_path / "likelihoods.json"
    path.write_text(json.dumps({"scenes": liks[::-1]}))  # matched by image_index, not position
    rc, summary, _ = run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS,
                         "--executor", "probabilistic", "--likelihoods", path)
    assert rc == 0 and summary["correct"] == N_EXAMPLES - 1

    path.write_text(json.dumps({"scenes": liks[:2]}))  # scene 2 has no likelihoods
    rc, _, err = run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS,
                     "--executor", "probabilistic", "--likelihoods", path)
    assert rc == 2 and str(path) in err and "image_index 2" in err


def test_likelihoods_need_probabilistic(script, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        script.main(["--scenes", str(SCENES), "--questions", str(QUESTIONS), "--likelihoods", str(SCENES)])
    assert e.value.code == 2


@pytest.mark.parametrize("field,value", [("margin", "abc"), ("margin", "0.2"), ("margin", -1.0), ("margin", True),
                                         ("directions.left", [0.0, 0.0, 0.0]), ("directions.front", [2.0, 0.0, 0.0])])
def test_bad_relation_fields_of_likelihoods_are_one_line(script, capsys, tmp_path, field, value):
    """A likelihoods file with a string, negative or boolean margin, or a direction that is no
    unit vector, is refused in one line naming the file, the scene and the field (a NaN margin
    used to answer every relation question with probability 1, exit 0)."""
    onto = load_ontology("superclevr")
    scenes, _ = load_scenes(SCENES, onto)
    liks = [SceneLikelihoods.from_scene(s).to_json() for s in scenes]
    if field == "margin":
        liks[1]["margin"] = value
    else:
        liks[1]["directions"][field.split(".")[1]] = value
    path = tmp_path / "likelihoods.json"
    path.write_text(json.dumps({"scenes": liks}))
    rc, _, err = run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS,
                     "--executor", "probabilistic", "--likelihoods", path)
    errors = [line for line in err.splitlines() if "error:" in line]
    assert rc == 2 and len(errors) == 1 and "Traceback" not in err, err
    assert str(path) in errors[0] and "scene 1" in errors[0] and f"field '{field}'" in errors[0], err


# ---------------------------------------------------------------------------- broken input
def test_broken_programs_name_file_and_question(script, capsys, tmp_path):
    s, q, _, questions = _copy_examples(tmp_path)
    qs = questions["questions"]
    qs[4]["program"][-1]["type"] = "count"          # count of a Part: TypeMismatch at the last node
    qs[7]["program"][1]["type"] = "filter_colour"    # unknown function
    qs[0]["program"][-1] = {"type": "unique", "inputs": [1], "value_inputs": []}
    qs[0]["program"].append({"type": "query_color", "inputs": [2], "value_inputs": []})  # 2 cars: not unique
    q.write_text(json.dumps(questions))
    out = tmp_path / "p.jsonl"
    rc, summary, err = run(script, capsys, "--scenes", s, "--questions", q, "--out", out)
    assert rc == 0
    assert summary["invalid_programs"] == 3 and summary["execution_errors"] == 1
    assert summary["correct"] == N_EXAMPLES - 4 and summary["n"] == N_EXAMPLES
    assert f"{q}, question 4: node 6 (count): input 0 (node 5) is Part" in err
    assert f"{q}, question 7: node 1: unknown function 'filter_colour'" in err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[4]["error"].startswith("TypeMismatch: ")
    assert rows[0]["error"] == "UniquenessError: node 2 (unique): expects exactly one element, the set has 2"
    assert rows[0]["answer"] is None and not rows[0]["correct"]


def test_invalid_messages_are_capped(script, capsys, tmp_path):
    s, q, _, questions = _copy_examples(tmp_path)
    for rec in questions["questions"][:8]:
        rec["program"][0]["type"] = "bogus"
    q.write_text(json.dumps(questions))
    rc, summary, err = run(script, capsys, "--scenes", s, "--questions", q)
    assert rc == 0 and summary["invalid_programs"] == 9
    assert err.count("invalid program:") == 5
    assert "... and 4 more invalid programs (9 in all)" in err


def test_broken_question_record(script, capsys, tmp_path):
    s, q, _, questions = _copy_examples(tmp_path)
    del questions["questions"][2]["program"]
    q.write_text(json.dumps(questions))
    rc, _, err = run(script, capsys, "--scenes", s, "--questions", q)
    assert rc == 2
    assert err.strip() == f"nsvqa-execute-programs: error: {q}, question 2: missing field 'program'"


def test_question_without_scene(script, capsys, tmp_path):
    s, q, _, questions = _copy_examples(tmp_path)
    questions["questions"][5]["image_index"] = 99
    questions["questions"][5]["image_filename"] = "example_000099.png"
    q.write_text(json.dumps(questions))
    rc, _, err = run(script, capsys, "--scenes", s, "--questions", q)
    assert rc == 2 and f"{q}, question 5, field 'image_index': no scene 99" in err


def test_broken_scene_record(script, capsys, tmp_path):
    s, q, scenes, _ = _copy_examples(tmp_path)
    scenes["scenes"][1]["objects"][2]["color"] = "pink"
    s.write_text(json.dumps(scenes))
    rc, _, err = run(script, capsys, "--scenes", s, "--questions", q)
    assert rc == 2
    assert f"{s}, scene 1, object 2, field 'color': 'pink' is not a valid color" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("which", ["scenes", "questions"])
def test_missing_file(script, capsys, tmp_path, which):
    missing = tmp_path / "nowhere" / f"{which}.json"
    args = {"scenes": SCENES, "questions": QUESTIONS, which: missing}
    rc, _, err = run(script, capsys, "--scenes", args["scenes"], "--questions", args["questions"])
    assert rc == 2
    assert err.strip() == f"nsvqa-execute-programs: error: {which} file not found: {missing}"


def test_not_json(script, capsys, tmp_path):
    bad = tmp_path / "scenes.json"
    bad.write_text("{not json")
    rc, _, err = run(script, capsys, "--scenes", bad, "--questions", QUESTIONS)
    assert rc == 2 and f"{bad}: not valid JSON" in err


# ---------------------------------------------------------------------------- reference data
@pytest.mark.parametrize("scenes, questions, expected, said", [
    # CLEVR's official programs: every question answered right
    ("clevr/CLEVR_val_scenes_500.json", "clevr/CLEVR_val_questions_500_official.json",
     {"n": 5000, "accuracy": 1.0, "invalid_programs": 0}, ""),
    # Super-CLEVR's raw part names: 437 programs invalid, every other question answered right
    ("superclevr/superCLEVR_scenes.json", "superclevr/superCLEVR_questions_official_parts_raw.json",
     {"invalid_programs": 437}, "... and 432 more invalid programs (437 in all)"),
], ids=["clevr_all_correct", "superclevr_raw_parts_invalid"])
def test_reference_release(script, capsys, reference_dir, scenes, questions, expected, said):
    rc, summary, err = run(script, capsys, "--scenes", reference_dir / scenes, "--questions", reference_dir / questions)
    assert rc == 0
    assert {k: summary[k] for k in expected} == expected
    assert summary["execution_errors"] == 0 and summary["correct"] == summary["n"] - summary["invalid_programs"]
    assert said in err


def test_an_empty_questions_list_keeps_the_existing_output(script, capsys, tmp_path):
    out = tmp_path / "predictions.jsonl"
    assert run(script, capsys, "--scenes", SCENES, "--questions", QUESTIONS, "--out", out)[0] == 0
    before = out.read_bytes()
    empty = tmp_path / "empty.json"
    empty.write_text('{"questions": []}')
    rc, _, err = run(script, capsys, "--scenes", SCENES, "--questions", empty, "--out", out)
    assert rc == 2 and err.count("\n") == 1
    assert "empty.json, field 'questions': no question to execute" in err
    assert out.read_bytes() == before


def test_a_question_about_another_image_than_its_scene_is_an_error(script, capsys, tmp_path):
    scenes = json.loads(SCENES.read_text())
    first = scenes["scenes"][0]
    first["image_filename"] = "not_" + first["image_filename"]
    path = tmp_path / "scenes.json"
    path.write_text(json.dumps(scenes))
    rc, _, err = run(script, capsys, "--scenes", path, "--questions", QUESTIONS)
    assert rc == 2 and "questions.json, question 0, field 'image_filename'" in err
    assert f"'not_{first['image_filename'][4:]}'" in err and "scenes.json" in err


def test_an_unwritable_out_is_one_line_before_any_work(script, capsys, tmp_path):
    (tmp_path / "afile").write_text("")
    with pytest.raises(SystemExit) as e:
        script.main(["--scenes", str(SCENES), "--questions", str(QUESTIONS), "--out", str(tmp_path / "afile" / "p.jsonl")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "afile/p.jsonl: cannot write there" in err
