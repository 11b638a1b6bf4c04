"""A new variant and a new factor are data only: a JSON per variant and an entry in the catalogue's
index (nsvqa/generation/data/variants/catalogue.json). This toy factor (two camera distances) is generated, trained
on, tested and reported like the paper's factors, with no code changed."""
from __future__ import annotations

import json
import shutil

import pytest

from nsvqa.generation.variants import VARIANT_DIR

REPO_VARIANTS = VARIANT_DIR


@pytest.fixture
def toy_catalogue(tmp_path, monkeypatch):
    folder = tmp_path / "variants"
    shutil.copytree(REPO_VARIANTS, folder)
    for name, complexity in (("toy-flat", "easy"), ("toy-busy", "hard")):
        (folder / f"{name}.json").write_text(json.dumps(
            {"name": name, "description": f"a toy level ({complexity} scenes)", "scene": {"complexity": complexity},
             "questions": {"redundancy": "rd"}, "test_only": False}))
    index = json.loads((folder / "catalogue.json").read_text())
    index["factors"]["toy"] = {"title": "toy clutter", "variants": ["toy-flat", "toy-busy"], "rd": "plain"}
    (folder / "catalogue.json").write_text(json.dumps(index))
    monkeypatch.setenv("NSVQA_VARIANT_DIR", str(folder))
    return folder


def test_a_toy_factor_runs_through_generation_training_and_the_report(toy_catalogue, tmp_path, require_renderer):
    from nsvqa.evaluation.report import report_from_runs
    from orchestration.experiment import train_variant, variants_to_test
    from nsvqa.generation.suite import generate_suite
    from nsvqa.generation.variants import FACTORS, load_variant

    assert FACTORS["toy"] == ("toy-flat", "toy-busy") and load_variant("toy-busy").factor == "toy"
    assert variants_to_test("toy-flat") == ["toy-flat", "toy-busy"]
    data, runs = tmp_path / "data", tmp_path / "runs"
    generate_suite(data, "toy", "tiny", progress=False, echo=lambda s: None)
    for v in ("toy-flat", "toy-busy"):
        train_variant(data, v, runs, models=["majority"], echo=lambda s: None)
    report, _ = report_from_runs([runs], tmp_path / "report", plots=False)
    toy = report["factors"]["toy"]
    assert toy["train_variants"] == ["toy-flat", "toy-busy"]
    m = toy["models"]["majority"]
    assert all(x is not None for row in m["matrix"] for x in row)
    a = {(t, s): m["matrix"][i][j] for i, t in enumerate(toy["train_variants"])
         for j, s in enumerate(toy["test_variants"])}
    expect = sum((a[t, t] - a[t, s]) / a[t, t] for t, s in (("toy-flat", "toy-busy"), ("toy-busy", "toy-flat"))) / 2
    assert m["rd"]["value"] == pytest.approx(expect)
    assert "toy clutter" in (tmp_path / "report" / "report.md").read_text()
