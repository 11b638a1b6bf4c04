"""scripts/generate_suite.py: every variant of a factor, with the profile's split sizes."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("moderngl")


def test_distribution_suite(load_script, tmp_path, capsys):
    from nsvqa.generation.renderer import Renderer, RendererUnavailable

    try:
        Renderer(64, 48).release()
    except RendererUnavailable as e:
        pytest.skip(str(e))
    suite = load_script("generate_suite")
    assert suite.variants_of("distribution") == ["bal", "slt", "long", "head", "tail", "oppo"]
    assert len(suite.variants_of("all")) == 18
    assert suite.main(["--factor", "distribution", "--profile", "tiny", "--out", str(tmp_path),
                       "--no-progress"]) == 0
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
