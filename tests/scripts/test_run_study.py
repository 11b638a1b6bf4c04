"""scripts/run_study.py's study config: ``--config`` starts a folder, the folder's ``study.json`` rules it."""
from __future__ import annotations

import json

from nsvqa.study import StudyConfig


def test_the_config_comes_from_the_folder_and_a_different_one_is_refused(tmp_path, load_script, capsys):
    main = load_script("run_study").main
    results, cfg = tmp_path / "results", tmp_path / "small.json"
    cfg.write_text(json.dumps({"seeds": [0], "budget_hours": 2}))
    # a new folder plans with the given config: one seed, so no mid-seed1/2 pieces
    assert main(["--results", str(results), "--config", str(cfg), "--list"]) == 0
    listed = capsys.readouterr().out
    assert "mid-seed0-modular" in listed and "mid-seed1-modular" not in listed
    assert main(["--results", str(results), "--list"]) == 0  # nothing recorded yet: the shipped study
    assert "mid-seed1-modular" in capsys.readouterr().out
    # once the folder records one (its first piece writes it), that one is used, and another is refused
    (results / "study.json").parent.mkdir(parents=True)
    (results / "study.json").write_text(json.dumps(StudyConfig.from_json({"seeds": [0]}).to_json()))
    assert main(["--results", str(results), "--list"]) == 0
    assert "mid-seed1-modular" not in capsys.readouterr().out
    assert main(["--results", str(results), "--config", str(cfg), "--list"]) == 2
    assert "study.json: this folder's pieces ran under another study config (fields budget_hours differ" \
        in capsys.readouterr().err
    # a bad file is named with its field
    cfg.write_text(json.dumps({"seed": [0]}))
    assert main(["--results", str(tmp_path / "other"), "--config", str(cfg), "--list"]) == 2
    assert f"{cfg}: unknown field(s) ['seed']" in capsys.readouterr().err
