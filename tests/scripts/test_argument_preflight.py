"""Arguments refused at parsing, before any work, naming the argument: an executor threshold outside
(0, 1], an absurd image size; and a scenes file whose image path escapes its folder is one line
naming the file, the scene and the field (docs/guarantees.md; issue 59)."""
from __future__ import annotations

import json
import shutil

import pytest


def _exit(load_script, name, argv, capsys):
    try:
        rc = load_script(name).main(argv)
    except SystemExit as e:
        rc = e.code
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("name", ["execute_programs", "evaluate_scene_parser", "demo_executors"])
@pytest.mark.parametrize("value", ["0", "1.5", "-0.2", "nan"])
def test_a_threshold_outside_0_1_is_refused_naming_the_argument(load_script, name, value, tmp_path, capsys):
    argv = {"execute_programs": ["--scenes", "s", "--questions", "q", "--out", str(tmp_path / "p.jsonl")],
            "evaluate_scene_parser": ["--parsed", "p", "--data", "d", "--out", str(tmp_path / "m.json")],
            "demo_executors": []}[name]
    rc, err = _exit(load_script, name, argv + ["--threshold", value], capsys)
    assert rc == 2 and f"argument --threshold: expected a probability in (0, 1], got '{value}'" in err, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("flag, value", [("--width", "100000"), ("--height", "8"), ("--width", "wide")])
def test_an_absurd_image_size_is_refused_naming_the_argument(load_script, flag, value, tmp_path, capsys):
    rc, err = _exit(load_script, "generate_dataset", ["--out", str(tmp_path), "--variant", "easy", "--split", "test",
                                                      "--num-images", "1", flag, value], capsys)
    assert rc == 2 and f"argument {flag}: expected pixels from 16 to 4096, got '{value}'" in err, err
    assert not list(tmp_path.iterdir())


def test_dataset_stats_names_a_scene_whose_image_path_escapes_its_folder(load_script, tiny_root, tmp_path, capsys):
    shutil.copytree(tiny_root / "mid", tmp_path / "mid")
    path = tmp_path / "mid" / "scenes" / "val_scenes.json"
    doc = json.loads(path.read_text())
    doc["scenes"][1]["image_filename"] = "../../../etc/passwd"
    path.write_text(json.dumps(doc))
    manifest = (tmp_path / "mid" / "manifest.json").read_bytes()
    rc, err = _exit(load_script, "dataset_stats", [str(tmp_path / "mid")], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert "val_scenes.json, scene 1, field 'image_filename': '../../../etc/passwd' must be relative" in err
    assert (tmp_path / "mid" / "manifest.json").read_bytes() == manifest  # nothing written
