"""A run folder and a split have one writer at a time, a rerun sweeps the temporaries a killed run
left anywhere under its folder, and a run resumes from a moved data root when the data are the same
(docs/guarantees.md; issue 59)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from nsvqa.fileio import FolderInUse, _host
from nsvqa.training import RunDir, RunMismatch


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _held_by(folder, pid, name=".nsvqa.lock"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"{_host()}-{pid} process {pid} on thathost since 2026-12-05 08:00:00\n")


def test_a_run_folder_another_live_process_holds_is_refused_naming_it(tmp_path):
    _held_by(tmp_path / "run", os.getppid())
    with pytest.raises(FolderInUse, match=rf"run: run folder in use by process {os.getppid()} on thathost since "
                                          rf"2026-12-05 08:00:00 \(lock .*\.nsvqa\.lock\)"):
        RunDir(tmp_path / "run", {"seed": 0})
    assert not (tmp_path / "run" / "config.json").exists()


def test_the_lock_of_a_killed_run_is_taken_over_and_given_back_at_close(tmp_path):
    _held_by(tmp_path / "run", _dead_pid())
    run = RunDir(tmp_path / "run", {"seed": 0})
    assert f"-{os.getpid()} process" in (tmp_path / "run" / ".nsvqa.lock").read_text()
    inner = RunDir(tmp_path / "run", {"seed": 0}, resume=True)  # this process holds it already: shared
    inner.close()
    assert (tmp_path / "run" / ".nsvqa.lock").exists()
    run.close()
    assert not (tmp_path / "run" / ".nsvqa.lock").exists()


def test_a_rerun_sweeps_the_temporaries_of_a_killed_run_everywhere_under_its_folder(tmp_path):
    dead = _dead_pid()
    run = tmp_path / "run"
    where = [run, run / "predictions", run / "parsed" / "hard", run / "question_parser", run / "baselines" / "film"]
    stale = [w / f".x.json.nsvqa-{_host()}-{dead}.abcdefgh.tmp" for w in where]
    live = run / "parsed" / "hard" / f".y.json.nsvqa-{_host()}-{os.getppid()}.abcdefgh.tmp"
    for p in [*stale, live]:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("half")
    RunDir(run, {"seed": 0}).close()
    assert not any(p.exists() for p in stale) and live.exists()


def _data(root):
    (root / "mid").mkdir(parents=True)
    (root / "mid" / "manifest.json").write_text(json.dumps({"splits": {"train": {"sha256": {"a": "1"}}}}))
    return root


def test_a_run_resumes_from_moved_data_of_the_same_digest_and_names_both_paths_otherwise(tmp_path):
    old = _data(tmp_path / "old")
    RunDir(tmp_path / "run", {"data": str(old), "seed": 0}).close()
    new = tmp_path / "new"
    shutil.move(old, new)
    run = RunDir(tmp_path / "run", {"data": str(new), "seed": 0}, resume=True, must_match=("data", "seed"))
    run.close()
    assert json.loads((tmp_path / "run" / "config.json").read_text())["config"]["data"] == str(new)
    other = _data(tmp_path / "other")
    (other / "mid" / "manifest.json").write_text("{}")
    with pytest.raises(RunMismatch, match=rf"cannot resume, field 'data' was '{new}', now '{other}'; the data at "
                                          rf"{other} is not the data the run was made with at {new}"):
        RunDir(tmp_path / "run", {"data": str(other), "seed": 0}, resume=True, must_match=("data", "seed"))


def test_two_writers_of_one_split_the_second_is_refused_naming_the_holder(load_script, tmp_path, capsys):
    _held_by(tmp_path / "easy", os.getppid(), name=".nsvqa-test.lock")
    rc = load_script("generate_dataset").main(["--out", str(tmp_path), "--variant", "easy", "--split", "test",
                                               "--num-images", "1", "--profile", "tiny", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert f"easy: split easy/test in use by process {os.getppid()} on thathost" in err
    assert not (tmp_path / "easy" / "images").exists()


def test_a_killed_runs_scratch_folder_is_swept_without_following_its_links(tmp_path):
    data = tmp_path / "data" / "mid"
    data.mkdir(parents=True)
    (data / "keep.json").write_text("{}")
    scratch = tmp_path / "run" / f".shuffle.nsvqa-{_host()}-{_dead_pid()}.abcdefgh.tmp"
    (scratch / "mid").mkdir(parents=True)
    (scratch / "mid" / "images").symlink_to(data)
    RunDir(tmp_path / "run", {"seed": 0}).close()
    assert not scratch.exists() and (data / "keep.json").exists()
