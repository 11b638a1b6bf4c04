"""scripts/demo_executors.py and the example data it runs on (scripts/make_examples.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from executors import DeterministicExecutor, InvalidProgram, Program, SceneLikelihoods
from executors.io import load_questions, load_scenes, parse_program

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "data" / "examples"
MALFORMED = 10


@pytest.fixture(scope="module")
def demo(load_script):
    return load_script("demo_executors")


@pytest.fixture(scope="module")
def examples():
    scenes, onto = load_scenes(EXAMPLES / "scenes.json")
    return scenes, onto, load_questions(EXAMPLES / "questions.json")


# ---------------------------------------------------------------------------- example data
def test_examples_are_up_to_date(tmp_path, load_script):
    make = load_script("make_examples")
    assert make.main(["--check"]) == 0
    assert make.main(["--out-dir", str(tmp_path)]) == 0
    for name in ("scenes.json", "questions.json"):
        assert (tmp_path / name).read_text() == (EXAMPLES / name).read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["questions.json", "scenes.json"]


def test_examples_content(examples):
    scenes, onto, questions = examples
    assert onto.name == "superclevr" and len(scenes) == 3
    assert all(3 <= len(s) <= 5 for s in scenes)
    raw = json.loads((EXAMPLES / "scenes.json").read_text())["scenes"]
    for k, (s, r) in enumerate(zip(scenes, raw)):
        assert r["image_index"] == k and r["image_filename"] == f"example_{k:06d}.png" and r["split"] == "example"
        for v in r["directions"].values():
            assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-5)
        for o in r["objects"]:
            assert len(o["pixel_coords"]) == 3 and len(o["3d_coords"]) == 3
            assert 1 <= len(o["parts"]) <= 3
            for name, pa in o["parts"].items():
                assert name in onto.parts_of(o["shape"])
                assert any(pa[a] != o[a] for a in ("color", "material", "size"))
        # relationships are those of the 0.2 margin rule on the 3D coordinates
        s.relationships = None
        assert s.relation_lists() == r["relationships"]
    functions = {n["type"] for q in questions for n in q["program"]}
    assert {"count", "exist", "query_shape", "query_color", "relate", "same_color", "greater_than",
            "equal_integer", "union", "intersect", "object2part", "partfilter_partname", "unique",
            "partquery_color", "partquery_partname", "part2object"} <= functions


def test_example_answers_are_the_executors(examples):
    scenes, onto, questions = examples
    ex = DeterministicExecutor(onto)
    for i, q in enumerate(questions):
        if i == MALFORMED:
            assert q["note"] == "malformed on purpose: shows the InvalidProgram error"
            with pytest.raises(InvalidProgram, match="node 1 \\(filter_color\\): empty value_inputs"):
                parse_program(q, onto, f"question {i}")
            fixed = json.loads(json.dumps(q["program"]))
            fixed[1]["value_inputs"] = ["green"]
            assert ex.run(Program.from_json(fixed, onto), scenes[q["image_index"]]).answer == q["answer"]
            continue
        assert "note" not in q
        assert ex.run(parse_program(q, onto, f"question {i}"), scenes[q["image_index"]]).answer == q["answer"]


# ---------------------------------------------------------------------------- soften_likelihoods
def test_soften_likelihoods(demo, examples):
    scenes, onto, _ = examples
    lik = SceneLikelihoods.from_scene(scenes[0])
    before = {a: v.copy() for a, v in lik.attributes.items()}
    a = demo.soften_likelihoods(lik, noise=0.2, exist=0.9, rng=3)
    b = demo.soften_likelihoods(lik, noise=0.2, exist=0.9, rng=3)
    c = demo.soften_likelihoods(lik, noise=0.2, exist=0.9, rng=4)
    for attr, v in a.attributes.items():
        np.testing.assert_array_equal(v, b.attributes[attr])  # deterministic for a seed
        np.testing.assert_allclose(v.sum(-1), 1.0)
        assert np.all(v[before[attr] == 1] >= 0.8) and np.all(v[before[attr] == 0] <= 0.2)
        np.testing.assert_array_equal(lik.attributes[attr], before[attr])  # input untouched
    assert not np.array_equal(a.attributes["color"], c.attributes["color"])
    np.testing.assert_allclose(a.exist, 0.9)
    np.testing.assert_allclose(a.part_exist, 0.9 * lik.part_exist)
    for r, m in a.relations.items():
        assert np.all(np.diag(m) == 0) and np.all((m >= 0) & (m <= 1))
        assert np.all(m[lik.relations[r] == 1] >= 0.8)
    same = demo.soften_likelihoods(lik, noise=0.0, exist=1.0)
    for attr, v in same.attributes.items():
        np.testing.assert_allclose(v, lik.attributes[attr])
    with pytest.raises(ValueError):
        demo.soften_likelihoods(lik, noise=1.5)


# ---------------------------------------------------------------------------- the demo

def _table_rows(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0].isdigit()}


def test_demo_table(demo, capsys, examples):
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    _, _, questions = examples
    rows = _table_rows(out)
    assert sorted(rows, key=int) == [str(i) for i in range(len(questions))]
    assert "official" in out and "deterministic" in out
    assert "deterministic 13/14" in out
    assert (f"[{MALFORMED}] InvalidProgram: data/examples/questions.json, question {MALFORMED}: "
            "node 1 (filter_color): empty value_inputs") in out
    assert "InvalidProgram" in rows[str(MALFORMED)]
    assert "school bus" in rows["1"]
    for col in ("threshold 1-hot", "exact 1-hot", "threshold soft", "exact soft"):
        assert col in out
    # one-hot likelihoods: the probabilistic executor answers like the deterministic one
    assert "threshold 1-hot 13/14" in out and "exact 1-hot 13/14" in out
    assert "school bus (1.00)" in rows["1"]


def test_demo_is_deterministic(demo, capsys):
    assert demo.main(["--seed", "5"]) == 0
    first = capsys.readouterr().out
    assert demo.main(["--seed", "5"]) == 0
    assert capsys.readouterr().out == first


def test_demo_missing_file(demo, capsys, tmp_path):
    missing = tmp_path / "nope.json"
    assert demo.main(["--scenes", str(missing)]) == 2
    assert f"scenes file not found: {missing}" in capsys.readouterr().err
