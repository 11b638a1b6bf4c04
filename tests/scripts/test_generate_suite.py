"""scripts/generate_suite.py: every variant of a factor, with the profile's split sizes."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("moderngl")


def test_full_tiny_suite(load_script, tmp_path, capsys, require_renderer):
    """Every variant of every factor at the tiny profile; every question checked by the executor."""
    suite = load_script("generate_suite")
    assert suite.variants_of("distribution") == ["bal", "slt", "long", "head", "tail", "oppo"]
    assert len(suite.variants_of("all")) == 18
    assert suite.main(["--factor", "all", "--profile", "tiny", "--out", str(tmp_path), "--no-progress"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(suite.variants_of("all"))
    sizes = suite.SUITE_PROFILES["tiny"]
    for name in ("bal", "slt", "long"):
        m = json.loads((tmp_path / name / "manifest.json").read_text())
        assert {k: v["counts"]["images"] for k, v in m["splits"].items()} == {
            "train": sizes.train, "val": sizes.val, "test": sizes.test}
        assert m["variant_spec"]["name"] == name and m["variant_spec"]["scene"]["complexity"] == "hard"
    for name in ("head", "tail", "oppo"):
        m = json.loads((tmp_path / name / "manifest.json").read_text())
        assert list(m["splits"]) == ["test"]
    # rerun: everything is already there
    assert suite.main(["--factor", "distribution", "--profile", "tiny", "--out", str(tmp_path),
                       "--no-progress"]) == 0
    assert "rendered 0" in capsys.readouterr().err.splitlines()[-2]
    # statistics: concepts of head lie inside its target; written into the manifest
    stats = load_script("dataset_stats")
    assert stats.main([str(tmp_path / "head")]) == 0
    m = json.loads((tmp_path / "head" / "manifest.json").read_text())
    concepts = m["stats"]["test"]["concepts"]
    assert {a: concepts[a]["outside_target"] for a in ("shape", "color", "material")} == {
        "shape": 0, "color": 0, "material": 0}
    assert sum(concepts["shape"]["counts"].values()) == sum(
        int(k) * v for k, v in concepts["objects_per_scene"].items())
    assert stats.main([str(tmp_path / "nowhere")]) == 2
    # every question of the suite: its program validates and the executor gives its answer
    from executors import DeterministicExecutor, Program, SymbolicScene, load_ontology
    from executors.io import normalize_answer

    onto = load_ontology("superclevr")
    ex = DeterministicExecutor(onto)
    n = 0
    for folder in tmp_path.iterdir():
        for qf in (folder / "questions").glob("*_questions.json"):
            split = qf.name.split("_")[0]
            scenes = json.loads((folder / "scenes" / f"{split}_scenes.json").read_text())["scenes"]
            sym = {s["image_index"]: SymbolicScene.from_json(s, onto) for s in scenes}
            for q in json.loads(qf.read_text())["questions"]:
                got = ex.run(Program.from_json(q["program"], onto), sym[q["image_index"]]).answer
                assert normalize_answer(got) == normalize_answer(q["answer"])
                n += 1
    assert n > 100
    assert stats.main([str(tmp_path / "long")]) == 0
    q = json.loads((tmp_path / "long" / "manifest.json").read_text())["stats"]["train"]["questions"]
    assert q["n"] > 0 and q["program_length_mean"] > 2 and 0 < max(q["largest_answer_share"].values()) <= 1


def test_redundancy_levels_measured(load_script, tmp_path, require_renderer):
    suite, stats = load_script("generate_suite"), load_script("dataset_stats")
    assert suite.main(["--factor", "redundancy", "--profile", "tiny", "--out", str(tmp_path), "--no-progress"]) == 0
    red = {}
    for v in ("rd-", "mid", "rd+"):
        assert stats.main([str(tmp_path / v)]) == 0
        red[v] = json.loads((tmp_path / v / "manifest.json").read_text())["stats"]["train"]["questions"][
            "redundant_filters_per_question"]
    assert red["rd-"] == 0 and red["rd+"] > red["mid"] > 0
    # the three levels ask about the same images and intents (aligned by question_hash)
    hashes = {v: {q["question_hash"] for q in json.loads(
        (tmp_path / v / "questions" / "train_questions.json").read_text())["questions"]} for v in red}
    assert hashes["rd-"] == hashes["mid"] == hashes["rd+"]
