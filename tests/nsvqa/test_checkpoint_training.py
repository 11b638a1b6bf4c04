"""Checkpoints (atomic, validated on load), run directories and the loss check."""
from __future__ import annotations

import json

import pytest
import torch

from nsvqa.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint, weights_digest
from nsvqa.training import NonFiniteLoss, RunDir, check_finite


def test_checkpoint_round_trip_leaves_no_temp_file(tmp_path):
    net = torch.nn.Linear(3, 2)
    path = save_checkpoint(tmp_path / "m.pt", kind="toy", config={"width": 3}, state_dict=net.state_dict(),
                           vocabularies={"values": ["a", "b"]}, train_state={"step": 7})
    ck = load_checkpoint(path, kind="toy")
    assert ck["config"] == {"width": 3} and ck["vocabularies"] == {"values": ["a", "b"]}
    assert ck["train_state"]["step"] == 7
    again = torch.nn.Linear(3, 2)
    again.load_state_dict(ck["state_dict"])
    assert torch.equal(again.weight, net.weight)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt", "m.pt.sha256"]


def test_checkpoint_errors_name_the_file_and_field(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", kind="toy", config={}, state_dict={}, vocabularies={})
    with pytest.raises(CheckpointError, match=r"m\.pt, field 'kind': 'toy', expected 'detector'"):
        load_checkpoint(path, kind="detector")
    data = path.read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"cut\.pt: not a readable checkpoint"):
        load_checkpoint(tmp_path / "cut.pt")
    with pytest.raises(CheckpointError, match=r"none\.pt: no checkpoint file"):
        load_checkpoint(tmp_path / "none.pt")
    torch.save({"version": 99, "kind": "toy", "config": {}, "state_dict": {}, "vocabularies": {}}, tmp_path / "v.pt")
    with pytest.raises(CheckpointError, match=r"field 'version': 99"):
        load_checkpoint(tmp_path / "v.pt")


def test_a_failed_write_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    path = save_checkpoint(tmp_path / "m.pt", kind="toy", config={"n": 1}, state_dict={}, vocabularies={})

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(torch, "save", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        save_checkpoint(path, kind="toy", config={"n": 2}, state_dict={}, vocabularies={})
    monkeypatch.undo()
    assert load_checkpoint(path)["config"] == {"n": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.pt"]


def test_run_dir_writes_config_and_refuses_an_incompatible_resume(tmp_path):
    run = RunDir(tmp_path / "run", {"data": "a", "lr": 0.1})
    run.log("hello")
    run.scalars("loss", {"total": 1.5}, 0)
    run.close()
    doc = json.loads((tmp_path / "run" / "config.json").read_text())
    assert doc["config"] == {"data": "a", "lr": 0.1} and isinstance(doc["command"], list)
    assert "hello" in (tmp_path / "run" / "train.log").read_text()
    assert any((tmp_path / "run" / "tb").iterdir())
    RunDir(tmp_path / "run", {"data": "a", "lr": 0.2}, resume=True, must_match=("data",)).close()
    assert len(json.loads((tmp_path / "run" / "config.json").read_text())["history"]) == 2
    with pytest.raises(ValueError, match=r"config\.json: cannot resume, field 'data' was 'a', now 'b'"):
        RunDir(tmp_path / "run", {"data": "b"}, resume=True, must_match=("data",))


def test_check_finite_reports_every_loss():
    check_finite({"a": 1.0, "b": torch.tensor(2.0)}, 3)
    with pytest.raises(NonFiniteLoss, match=r"step 12: a=1, b=nan"):
        check_finite({"a": 1.0, "b": float("nan")}, 12)


def test_atomic_writes_get_the_usual_permissions(tmp_path):
    import os
    import stat

    from nsvqa.fileio import atomic_open, write_atomic

    mask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.json", "{}")
        assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644  # not mkstemp's 0600
        with pytest.raises(RuntimeError):
            with atomic_open(tmp_path / "b.bin") as f:
                f.write(b"half")
                raise RuntimeError("crash mid-write")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no partial file, no temp file
    finally:
        os.umask(mask)


def test_a_folders_digest_follows_its_files_not_its_place(tmp_path):
    from nsvqa.fileio import sha256_folder

    for name in ("a", "b"):
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "x.png").write_bytes(b"\x89PNG one")
        (tmp_path / name / "sub" / "y.png").write_bytes(b"two")
    assert sha256_folder(tmp_path / "a") == sha256_folder(tmp_path / "b")
    before = sha256_folder(tmp_path / "b")
    (tmp_path / "b" / "sub" / "y.png").write_bytes(b"twO")  # one byte
    assert sha256_folder(tmp_path / "b") != before
    (tmp_path / "b" / "sub" / "y.png").write_bytes(b"two")
    (tmp_path / "b" / "x.png").rename(tmp_path / "b" / "z.png")  # same bytes, another name
    assert sha256_folder(tmp_path / "b") != before


def test_the_weights_digest_follows_the_weights_not_the_clock(tmp_path):
    from nsvqa.fileio import sha256_file

    weights = {"w": torch.arange(6.0).reshape(2, 3), "s": torch.tensor(3.0), "inner": {"b": torch.zeros(0)}}
    a = save_checkpoint(tmp_path / "a.pt", kind="m", config={}, state_dict=weights, vocabularies={},
                        extra={"seconds": 1.0})
    b = save_checkpoint(tmp_path / "b.pt", kind="m", config={"x": 1}, state_dict=dict(weights), vocabularies={},
                        extra={"seconds": 2.0}, train_state={"step": 5}, finished=True)
    assert sha256_file(a) != sha256_file(b) and weights_digest(a) == weights_digest(b, kind="m")
    nudged = {**weights, "w": torch.nextafter(weights["w"], torch.tensor(10.0))}  # one ulp
    c = save_checkpoint(tmp_path / "c.pt", kind="m", config={}, state_dict=nudged, vocabularies={})
    assert weights_digest(c) != weights_digest(a)
    d = save_checkpoint(tmp_path / "d.pt", kind="m", config={}, state_dict={**weights, "w": weights["w"].double()},
                        vocabularies={})
    assert weights_digest(d) != weights_digest(a)  # the dtype counts
    with pytest.raises(CheckpointError, match=r"a.pt, field 'kind': 'm', expected 'other'"):
        weights_digest(a, kind="other")
