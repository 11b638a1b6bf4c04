"""Temporaries that are this project's alone (docs/guarantees.md, "Stale temporaries"; issue 80): the
sweep removes only names that carry the project's marker (``.<name>.nsvqa-<host>-<pid>.<random>.tmp``);
a user's file or folder is never removed, whatever its name, by any writer that sweeps."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from nsvqa.fileio import _host, atomic_open, is_stale_temporary, sweep_temporaries, temporary_folder, temporary_name
from nsvqa.training.checkpoint import save_checkpoint

TWO_HOURS_AGO = time.time() - 7200


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _users_files(folder: Path, dead: int) -> list[Path]:
    """What a user (or another program) may keep in a folder this project writes: tempfile's own
    names (``.x.<8 random>.tmp``: a file, and a folder with a file in it) and one named like this
    project's temporaries before they carried its marker (``.<name>.<host>-<pid>.<random>.tmp``),
    all two hours old."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".x.", suffix=".tmp", dir=folder)
    os.close(fd)
    scratch = Path(tempfile.mkdtemp(prefix=".y.", suffix=".tmp", dir=folder))
    (scratch / "notes.txt").write_text("mine")
    look_alike = folder / f".z.json.{_host()}-{dead}.abcdefgh.tmp"
    look_alike.write_text("mine")
    paths = [Path(name), scratch, look_alike]
    for p in paths:
        os.utime(p, (TWO_HOURS_AGO, TWO_HOURS_AGO))
    return paths


def _our_stale(folder: Path, dead: int) -> list[Path]:
    """This project's temporaries that killed writers left: a file of a dead pid of this machine,
    a file of another machine older than an hour, a scratch folder of a dead pid."""
    folder.mkdir(parents=True, exist_ok=True)
    ours = [folder / f".w.json.nsvqa-{_host()}-{dead}.abcdefgh.tmp", folder / ".v.pt.nsvqa-00000000-1.abcdefgh.tmp"]
    for p in ours:
        p.write_text("half")
    os.utime(ours[1], (TWO_HOURS_AGO, TWO_HOURS_AGO))
    scratch = folder / f".shuffle.nsvqa-{_host()}-{dead}.abcdefgh.tmp"
    (scratch / "mid").mkdir(parents=True)
    return [*ours, scratch]


def test_only_names_with_the_marker_are_ours(tmp_path):
    dead = _dead_pid()
    users = _users_files(tmp_path, dead)
    assert not any(is_stale_temporary(p) for p in users)
    with atomic_open(tmp_path / "a.json", "w") as f:  # its temporary carries the marker, this process's pid
        (name,) = [p.name for p in tmp_path.iterdir() if p.name.startswith(".a.json.")]
        assert name.startswith(f".a.json.nsvqa-{_host()}-{os.getpid()}.") and name.endswith(".tmp")
        f.write("{}")
    assert temporary_folder(tmp_path, "shuffle").name.startswith(f".shuffle.nsvqa-{_host()}-{os.getpid()}.")
    assert temporary_name("x.pt").startswith(f".x.pt.nsvqa-{_host()}-{os.getpid()}.")
    ours = _our_stale(tmp_path, dead)
    assert sorted(sweep_temporaries(tmp_path)) == sorted(ours)
    assert all(p.exists() for p in users)


def test_a_users_tmp_named_files_survive_every_writer_and_only_ours_are_swept(tmp_path):
    from nsvqa.artifacts.features import FeatureKey, write_features
    from nsvqa.training import RunDir

    dead = _dead_pid()
    run, ckpts, cache = tmp_path / "run", tmp_path / "ckpts", tmp_path / "cache"
    users = [p for where in (run, run / "predictions", run / "baselines" / "film", ckpts, cache)
             for p in _users_files(where, dead)]
    ours = [p for where in (run, run / "predictions", ckpts, cache) for p in _our_stale(where, dead)]
    RunDir(run, {"seed": 0}).close()  # opening a run folder sweeps its whole tree
    save_checkpoint(ckpts / "m.pt", kind="toy", config={}, state_dict={}, vocabularies={})  # its folder
    key = FeatureKey(str(tmp_path), ("a.png",), ("0" * 64,), "lite0", "random", (8, 8), (8,))
    write_features(cache / "f.pt", key, {8: torch.zeros(1, 2, 1, 1)})  # a feature cache: its folder
    assert [p for p in users if not p.exists()] == []
    assert all((p / "notes.txt").read_text() == "mine" for p in users if p.is_dir())
    assert [p for p in ours if p.exists()] == []


def test_a_users_tmp_named_files_survive_generation(tmp_path, load_script, require_renderer):
    dead = _dead_pid()
    variant = tmp_path / "easy"
    users = _users_files(variant, dead) + _users_files(variant / "images" / "test", dead)
    ours = _our_stale(variant / "images" / "test", dead)
    gen = load_script("generate_dataset")
    argv = ["--out", str(tmp_path), "--variant", "easy", "--split", "test", "--num-images", "1",
            "--profile", "tiny", "--no-progress"]
    assert gen.main(argv) == 0
    assert [p for p in ours if p.exists()] == []
    ours = _our_stale(variant, dead)
    assert gen.main(argv) == 0  # found whole: swept all the same
    assert [p for p in users if not p.exists()] == []
    assert [p for p in ours if p.exists()] == []
    assert (variant / "manifest.json").is_file()
