"""scripts/run_study.py's study config: ``--config`` starts a folder, the folder's ``study.json`` rules it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestration.study.settings.config import StudyConfig, StudyError


def test_the_config_comes_from_the_folder_and_a_different_one_is_refused(tmp_path, load_script, capsys):
    main = load_script("run_study").main
    results, cfg = tmp_path / "results", tmp_path / "small.json"
    cfg.write_text(json.dumps({"seeds": [0], "budget_hours": 2}))
    # a new folder plans with the given config: one seed, so no mid-seed1/2 pieces
    assert main(["--results", str(results), "--config", str(cfg), "--list"]) == 0
    listed = capsys.readouterr().out
    assert "mid-seed0-modular" in listed and "mid-seed1-modular" not in listed
    assert main(["--results", str(results), "--list"]) == 0  # nothing recorded yet: the shipped study
    listed = capsys.readouterr().out
    assert "mid-seed1-modular" in listed
    assert "\n      redundancy-scale-10x " in listed and "trained on none yet of rd-,mid,rd+" in listed
    # the scale check's runs as its record has them
    (results / "redundancy_scale").mkdir(parents=True)
    (results / "redundancy_scale" / "scale.json").write_text(json.dumps(
        {"seed": 2, "scales": {"1": {"runs": {v: {"seconds": 1.0} for v in ("rd-", "mid", "rd+")}},
                               "10": {"runs": {"rd-": {"seconds": 1.0}}}}}))
    assert main(["--results", str(results), "--list"]) == 0
    listed = capsys.readouterr().out
    assert "done  redundancy-scale-1x " in listed and "(seed 2) trained on rd- of rd-,mid,rd+" in listed
    # once the folder records one (its first piece writes it), that one is used, and another is refused
    (results / "study.json").parent.mkdir(parents=True, exist_ok=True)
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


def _one_piece_committed(tmp_path):
    """(results, data, runs) under ``tmp_path``, results holding one committed piece: half an hour
    spent, of which the scene parser 25 min, the question parser 5, each test 1."""
    results = tmp_path / "results"
    done = results / "pieces" / "mid-seed0-modular"
    done.mkdir(parents=True)
    steps = {"scene_parser": 1500.0, "question_parser": 300.0, "test_mid": 60.0, "total": 1860.0}
    (done / "piece.json").write_text(json.dumps({"seconds": {"total": 1800.0, "attempts": [{"steps": steps}]}}))
    return results, tmp_path / "data", tmp_path / "runs"


def test_a_piece_that_would_pass_the_budget_cap_is_not_started(tmp_path, load_script, capsys):
    from orchestration.study.settings.budget import over_cap
    from orchestration.study.settings.config import StudyConfig
    from orchestration.study.settings.pieces import study_pieces

    main = load_script("run_study").main
    results, data, runs = _one_piece_committed(tmp_path)
    easy = next(p for p in study_pieces() if p.name == "easy-seed0-modular")  # projected 25 + 5 + 3 x 1 min
    cfg = tmp_path / "cap.json"
    cfg.write_text(json.dumps({"budget_hours": 1.0}))
    assert main(["--results", str(results), "--config", str(cfg), "--data", str(data), "--runs", str(runs),
                 "--only", easy.name]) == 3
    err = capsys.readouterr().err
    assert "piece easy-seed0-modular not started: easy-seed0-modular is projected at 33 min: 0.5 h spent + 0.6 h " \
           "passes the study's 1-hour cap" in err
    assert not data.exists() and not runs.exists() and not (results / "study.json").exists()
    assert over_cap(results, easy, StudyConfig(budget_hours=2.0)) is None  # within a 2-hour cap it would run
    # once the cap is spent, nothing starts, projected or not
    cfg.write_text(json.dumps({"budget_hours": 0.5}))
    assert main(["--results", str(results), "--config", str(cfg), "--data", str(data), "--runs", str(runs)]) == 3
    assert "not started: the committed pieces took 0.5 h, the study's 0.5-hour cap" in capsys.readouterr().err


def test_a_piece_projected_past_the_time_left_is_not_started(tmp_path, load_script, capsys):
    from orchestration.study.settings.budget import out_of_time
    from orchestration.study.settings.pieces import study_pieces

    main = load_script("run_study").main
    results, data, runs = _one_piece_committed(tmp_path)
    easy = next(p for p in study_pieces() if p.name == "easy-seed0-modular")  # projected 33 min
    assert main(["--results", str(results), "--data", str(data), "--runs", str(runs), "--only", easy.name,
                 "--time-left", "30"]) == 4
    assert "piece easy-seed0-modular not started: easy-seed0-modular is projected at 33 min and 30 min are left " \
           "(--time-left)" in capsys.readouterr().err
    assert not data.exists() and not runs.exists()
    assert out_of_time(results, easy, 34 * 60.0) is None  # 34 minutes would do
    # a piece no committed piece of its kind projects is let through
    mdetr = next(p for p in study_pieces() if p.name == "mid-seed0-mdetr")
    assert out_of_time(results, mdetr, 60.0) is None


def test_a_borrowed_scene_parser_this_machine_lacks_counts_in_the_time_left_and_the_cap(tmp_path, load_script,
                                                                                        capsys):
    from orchestration.study.settings.budget import budget, lender_minutes, out_of_time, over_cap, pending_rows
    from orchestration.study.settings.config import StudyConfig
    from orchestration.study.settings.pieces import lenders, study_pieces

    main = load_script("run_study").main
    results, data, runs = _one_piece_committed(tmp_path)
    record = json.loads((results / "pieces" / "mid-seed0-modular" / "piece.json").read_text())
    record["seconds"]["checkpoints"] = {"scene_parser/detector.pt": {"seconds": 1200.0},
                                        "scene_parser/attributes.pt": {"seconds": 300.0}}
    (results / "pieces" / "mid-seed0-modular" / "piece.json").write_text(json.dumps(record))
    rd = next(p for p in study_pieces() if p.name == "rd+-seed0-modular")  # borrows mid's scene parser
    # the pieces training into mid's run folder lend it; the part extension's scene parser lies apart
    assert [p.name for p in lenders(rd)] == ["mid-seed0-modular", "mid-seed0-seeing", "mid-seed0-regionmac"]
    minutes = next(r["minutes"] for r in pending_rows(budget(results)) if r["piece"] == rd.name)  # as --budget has it
    # no run folder here: mid's scene parser trains again first, for the 25 minutes mid's piece recorded
    assert lender_minutes(results, rd, runs) == (25.0, str(runs / "mid"))
    assert out_of_time(results, rd, (minutes + 1) * 60) is None
    why = out_of_time(results, rd, (minutes + 1) * 60, runs=runs)
    assert why.startswith(f"rd+-seed0-modular is projected at {minutes + 25:.0f} min (25 of them to train again the "
                          f"scene parser it borrows: {runs / 'mid'} lacks it)")
    assert main(["--results", str(results), "--data", str(data), "--runs", str(runs), "--only", rd.name,
                 "--time-left", str(int(minutes) + 2)]) == 4
    assert "the scene parser it borrows" in capsys.readouterr().err and not data.exists()
    cap = StudyConfig(budget_hours=(1800 + (minutes + 10) * 60) / 3600)
    assert over_cap(results, rd, cap) is None and "lacks it" in over_cap(results, rd, cap, runs=runs)
    # once this machine holds it, nothing is added; a piece training its own scene parser never adds
    (runs / "mid" / "scene_parser").mkdir(parents=True)
    for f in ("detector.pt", "attributes.pt"):
        (runs / "mid" / "scene_parser" / f).write_bytes(b"")
    assert lender_minutes(results, rd, runs) is None and over_cap(results, rd, cap, runs=runs) is None
    easy = next(p for p in study_pieces() if p.name == "easy-seed0-modular")
    assert lender_minutes(results, easy, tmp_path / "elsewhere") is None


def test_a_borrowed_scene_parser_is_not_trained_again_on_another_cpu_than_its_lender(tmp_path, load_script,
                                                                                      capsys):
    from orchestration.study.settings.pieces import study_pieces
    from orchestration.study.running.piece import lender_elsewhere, machine

    main = load_script("run_study").main
    results, data, runs = _one_piece_committed(tmp_path)
    lender = results / "pieces" / "mid-seed0-modular" / "piece.json"
    record = json.loads(lender.read_text())
    here = machine()
    rd = next(p for p in study_pieces() if p.name == "rd+-seed0-modular")  # borrows mid's scene parser
    lender.write_text(json.dumps({**record, "machine": {**here, "cpu": "another CPU"}}))
    why = lender_elsewhere(rd, runs, results)
    assert f"reads the scene parser mid-seed0-modular lends, which {runs / 'mid'} lacks" in why
    assert f"{lender} ran on another CPU with {here['torch_threads']}, native bf16 {here['native_bf16']}" in why
    # the budget's pending tables say so of each piece, from the committed records alone
    from orchestration.study.settings.budget import budget, budget_markdown
    b = budget(results)
    rows = {p["piece"]: p for p in b["pending"]}
    assert rows[rd.name]["scene_parser_from"] == rows["mid-seed0-seeing"]["scene_parser_from"] == [
        f"another CPU ({here['torch_threads']} torch thread{'' if here['torch_threads'] == 1 else 's'}, "
        f"{'native bf16' if here['native_bf16'] else 'no native bf16'})"]
    assert rows["easy-seed0-modular"]["scene_parser_from"] == []
    assert f"| {rows[rd.name]['scene_parser_from'][0]} |" in budget_markdown(b)
    assert main(["--results", str(results), "--data", str(data), "--runs", str(runs), "--only", rd.name]) == 5
    assert "--retrain-lender" in capsys.readouterr().err and not data.exists() and not runs.exists()
    # another thread count learns other weights too; the same CPU and threads learn the same ones
    lender.write_text(json.dumps({**record, "machine": {**here, "torch_threads": here["torch_threads"] + 1}}))
    assert lender_elsewhere(rd, runs, results) is not None
    # a piece that trains its own scene parser into a run folder another group trained it in first
    # (the seeing model on mid) is held to that group's machine the same way
    seeing = next(p for p in study_pieces() if p.name == "mid-seed0-seeing")
    assert f"reads the scene parser mid-seed0-modular shares, which {runs / 'mid'} lacks" in \
        lender_elsewhere(seeing, runs, results)
    lender.write_text(json.dumps({**record, "machine": here}))
    assert lender_elsewhere(rd, runs, results) is None and lender_elsewhere(seeing, runs, results) is None
    # where this machine holds the lender's scene parser, nothing trains again, whatever ran it
    lender.write_text(json.dumps({**record, "machine": {**here, "cpu": "another CPU"}}))
    (runs / "mid" / "scene_parser").mkdir(parents=True)
    for f in ("detector.pt", "attributes.pt"):
        (runs / "mid" / "scene_parser" / f).write_bytes(b"")
    assert lender_elsewhere(rd, runs, results) is None
    easy = next(p for p in study_pieces() if p.name == "easy-seed0-modular")  # trains its own
    assert lender_elsewhere(easy, tmp_path / "elsewhere", results) is None


def test_frozen_code_is_a_worktree_of_head_reused_and_swept(tmp_path):
    import subprocess

    from orchestration.study.running.code_tree import REPO as repo, frozen_tree

    if not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    runs = tmp_path / "runs"
    (runs / "code-000000000000").mkdir(parents=True)  # a stale copy of another commit
    where = None
    try:
        where, _ = frozen_tree(runs, sweep=True)
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        copy = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        assert copy == head and (where / "scripts" / "run_study.py").is_file()
        assert not (runs / "code-000000000000").exists()
        stamp = (where / "scripts" / "run_study.py").stat().st_mtime_ns
        again, _ = frozen_tree(runs, sweep=True)
        assert again == where and (where / "scripts" / "run_study.py").stat().st_mtime_ns == stamp
    finally:
        if where is not None:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(where)], capture_output=True)


def test_report_and_check_take_a_study_of_any_groups_the_shipped_tiny_one_included(tmp_path, load_script, capsys):
    """data/study/tiny.json has a film group alone (no modular one): --report and --check build and
    check its tables (issue 80: a KeyError 'modular' before)."""
    from nsvqa.artifacts.predictions import Prediction, write_predictions

    tiny = Path(__file__).resolve().parents[2] / "data" / "study" / "tiny.json"
    cfg = StudyConfig.from_json(json.loads(tiny.read_text()))
    assert "modular" not in cfg.groups
    results = tmp_path / "results"
    results.mkdir()
    (results / "study.json").write_text(json.dumps(cfg.to_json()))  # what the launch writes first
    piece = results / "pieces" / "mid-seed0-film"
    for model, right in (("lstm", 2), ("majority", 3)):
        write_predictions(piece / "predictions" / f"{model}__train-mid__test-mid.jsonl.gz",
                          [Prediction(i, "exist", "yes", "yes" if i < right else "no") for i in range(4)])
    (piece / "piece.json").write_text(json.dumps({
        "format": 1, "piece": {"variant": "mid", "seed": 0, "group": "film", "models": ["lstm", "majority"],
                               "tests": ["mid"]}, "commit": None, "machine": None, "seconds": {"total": 60.0}}))
    main = load_script("run_study").main
    argv = ["--results", str(results), "--data", str(tmp_path / "data"), "--runs", str(tmp_path / "runs")]
    assert main([*argv, "--report"]) == 0, capsys.readouterr().err
    assert json.loads((results / "report.json").read_text())["in_domain"]
    assert main([*argv, "--check"]) == 0, capsys.readouterr().err
    assert "ok: every table" in capsys.readouterr().err


def test_a_piece_that_reads_the_detector_alone_trains_it_again_and_its_record_says_whose_it_read(tmp_path):
    from orchestration.study.settings.pieces import piece_setup, reads_detector_only, study_pieces
    from orchestration.study.report.build import check_shared_scene_parsers
    from orchestration.study.running.piece import detector_read, lender_elsewhere, machine

    results, data, runs = _one_piece_committed(tmp_path)
    lender = results / "pieces" / "mid-seed0-modular" / "piece.json"
    record = json.loads(lender.read_text())
    plan = {p.name: p for p in study_pieces()}
    own, seeing = plan["mid-seed0-regionmac"], plan["mid-seed0-seeing"]
    assert reads_detector_only(own) and not reads_detector_only(seeing)  # declared by the models' classes
    # the modular piece trained mid's scene parser on another CPU, which this machine lacks: the model
    # that reads the attribute head is refused; the one that reads the detector alone trains it again
    lender.write_text(json.dumps({**record, "machine": {**machine(), "cpu": "another CPU"},
                                  "scene_parser_weights": {"detector": "d1", "attributes": "a1"}}))
    assert lender_elsewhere(seeing, runs, results) is not None and lender_elsewhere(own, runs, results) is None
    # its record names the committed pieces whose detector it read, or says it trained its own
    assert detector_read(piece_setup(own, data, runs), results, {"detector": "d1", "attributes": "a1"}, False) == {
        "weights": "d1", "of": ["mid-seed0-modular"], "trained_here": False}
    assert detector_read(piece_setup(own, data, runs), results, {"detector": "d2", "attributes": "a2"}, True) == {
        "weights": "d2", "of": [], "trained_here": True}
    # the one-perception check leaves out a detector-only piece that trained it again, not another piece
    mine = results / "pieces" / own.name
    mine.mkdir(parents=True)
    rec = {"piece": {"models": list(own.models), "tests": list(own.tests)},
           "scene_parser_weights": {"detector": "d2", "attributes": "a2"}}
    (mine / "piece.json").write_text(json.dumps({**rec, "detector_read": {"weights": "d2", "of": [],
                                                                          "trained_here": True}}))
    check_shared_scene_parsers(results)
    (mine / "piece.json").write_text(json.dumps(rec))
    with pytest.raises(StudyError, match="with other weights"):
        check_shared_scene_parsers(results)


def test_machines_are_alike_only_with_the_same_cpu_threads_and_native_bf16():
    from orchestration.study.running.piece import alike

    here = {"cpu": "Intel(R) Xeon(R) Processor", "torch_threads": 1, "native_bf16": False}
    assert alike(here, dict(here))
    assert not alike(here, {**here, "native_bf16": True})  # one CPU name, another precision
    assert not alike(here, {**here, "torch_threads": 2}) and not alike(here, {**here, "cpu": "AMD EPYC"})
    assert alike(here, {"cpu": "Intel(R) Xeon(R) Processor", "torch_threads": 1})  # the oldest records
