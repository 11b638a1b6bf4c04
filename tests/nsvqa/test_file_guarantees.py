"""The file guarantees (docs/guarantees.md): stale temporaries swept, checkpoints checked against
their sha256 sidecar, outputs checked for writability before the work."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from nsvqa.fileio import OutputNotWritable, _host, atomic_open, check_writable, sweep_temporaries
from nsvqa.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint, sidecar_path


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_killed_writers_temporary_is_swept_by_the_next_save(tmp_path):
    # what SIGKILL mid-write leaves: a temporary named after a writer that no longer runs
    stale = tmp_path / f".m.pt.nsvqa-{_host()}-{_dead_pid()}.abcd1234.tmp"
    stale.write_bytes(b"x" * 100)
    live = tmp_path / f".other.pt.nsvqa-{_host()}-{os.getpid()}.zzzz9999.tmp"  # this process: a live writer
    live.write_bytes(b"y")
    other_host = tmp_path / f".m.pt.nsvqa-00000000-{_dead_pid()}.abcd1234.tmp"  # judged by its age only
    other_host.write_bytes(b"z")
    save_checkpoint(tmp_path / "m.pt", kind="toy", config={}, state_dict={}, vocabularies={})
    assert not stale.exists() and live.exists() and other_host.exists()
    os.utime(other_host, (0, 0))  # older than an hour: stale whoever wrote it
    save_checkpoint(tmp_path / "m.pt", kind="toy", config={}, state_dict={}, vocabularies={})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.pt", "m.pt.sha256", live.name])


def test_a_sigkilled_atomic_write_is_swept(tmp_path):
    target = tmp_path / "big.bin"
    code = ("import os, signal\nfrom nsvqa.fileio import atomic_open\n"
            f"with atomic_open({str(target)!r}) as f:\n    f.write(b'x' * 1000); f.flush()\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n")
    subprocess.run([sys.executable, "-c", code], cwd=os.getcwd(), check=False)
    left = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and not target.exists()
    assert sweep_temporaries(tmp_path) == left
    assert list(tmp_path.iterdir()) == []


def test_a_flipped_bit_in_a_checkpoint_is_an_error(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", kind="toy", config={}, state_dict={"w": torch.ones(4)},
                           vocabularies={})
    assert sidecar_path(path).read_text().split()[1] == "m.pt"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"m\.pt: sha256 [0-9a-f]{64} differs from .* m\.pt\.sha256"):
        load_checkpoint(path)


def test_a_checkpoint_without_a_sidecar_loads_saying_so_in_one_line(tmp_path, caplog):
    path = save_checkpoint(tmp_path / "m.pt", kind="toy", config={"a": 1}, state_dict={}, vocabularies={})
    with caplog.at_level(logging.WARNING):
        load_checkpoint(path, kind="toy")  # checked against its sidecar: nothing said
    assert caplog.records == []
    sidecar_path(path).unlink()
    with caplog.at_level(logging.WARNING):
        assert load_checkpoint(path, kind="toy")["config"] == {"a": 1}
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "\n" not in said[0], said
    assert said[0].startswith(f"{path}: loaded unchecked: no m.pt.sha256 beside it")
    # unsaid outside the test's log capture too: the line reaches stderr with no logging set up
    code = f"from nsvqa.training.checkpoint import load_checkpoint\nload_checkpoint({str(path)!r})\n"
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert err.count("\n") == 1 and f"{path}: loaded unchecked" in err, err


def test_a_shipped_sets_checkpoint_is_checked_against_its_manifest_not_said_unchecked(tmp_path, caplog):
    import json

    from nsvqa.fileio import sha256_file

    path = save_checkpoint(tmp_path / "set" / "lstm" / "baseline.pt", kind="toy", config={}, state_dict={},
                           vocabularies={})
    sidecar_path(path).unlink()  # a shipped set has its manifest's digests, no sidecars
    manifest = tmp_path / "set" / "manifest.json"
    manifest.write_text(json.dumps({"sha256": {"lstm/baseline.pt": sha256_file(path)}}))
    with caplog.at_level(logging.WARNING):
        load_checkpoint(path, kind="toy")
    assert caplog.records == []
    manifest.write_text(json.dumps({"sha256": {"lstm/baseline.pt": "0" * 64}}))
    with pytest.raises(CheckpointError, match=rf"baseline\.pt: sha256 [0-9a-f]{{64}} differs from the 0{{64}} "
                                              rf"recorded in .*manifest\.json"):
        load_checkpoint(path)


def test_the_shipped_pretrained_set_loads_without_a_word(caplog):
    from nsvqa.pretrained import available, resolve_checkpoint

    if not available():
        pytest.skip("no pretrained set shipped in this checkout")
    with caplog.at_level(logging.WARNING):
        load_checkpoint(resolve_checkpoint(f"pretrained:{available()[0]}", "question_parser") / "question_parser.pt")
    assert caplog.records == []


def test_the_output_preflight_names_the_path(tmp_path):
    check_writable(tmp_path / "new" / "deeper" / "out.json", tmp_path, None)
    (tmp_path / "afile").write_text("")
    with pytest.raises(OutputNotWritable, match=r"afile/out\.json: cannot write there: .*afile is a file"):
        check_writable(tmp_path / "afile" / "out.json")
    if os.geteuid() != 0:  # root writes into read-only folders anyway
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        with pytest.raises(OutputNotWritable, match=r"ro/x\.json: cannot write there"):
            check_writable(ro / "x.json")


def test_a_failed_write_leaves_the_previous_file(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("old")
    with pytest.raises(OSError, match="No space left"):
        with atomic_open(path, "w") as f:
            f.write("new, half")
            raise OSError(28, "No space left on device")
    assert path.read_text() == "old" and list(tmp_path.iterdir()) == [path]


def test_a_full_disk_is_one_line_naming_the_file_and_the_bytes(tmp_path):
    from nsvqa.fileio import DiskFull

    path = tmp_path / "a.json"
    path.write_text("old" * 10)
    with pytest.raises(DiskFull) as e:
        with atomic_open(path, "w") as f:
            f.write("new, half")
            f.flush()
            raise OSError(28, "No space left on device")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path}: No space left on device: writing it needs at least 30 bytes "
                                              f"(9 written when the disk filled, 30 in the file it replaces)")
    assert "bytes are free in" in msg and e.value.errno == 28
    assert path.read_text() == "old" * 10 and list(tmp_path.iterdir()) == [path]


def test_a_full_disk_under_torch_save_is_named_and_the_run_resumes(tmp_path, monkeypatch, capsys):
    """torch's zip writer turns ENOSPC into ``RuntimeError: ... unexpected pos``: with (almost) no
    bytes free it is a full disk, said in one line by the training scripts' wrapper; the last
    checkpoint is kept, so the run resumes from it."""
    import nsvqa.fileio as fileio
    from nsvqa.fileio import DiskFull
    from nsvqa.training.cli import interruptible

    path = save_checkpoint(tmp_path / "m.pt", kind="toy", config={}, state_dict={"w": torch.ones(4)},
                           vocabularies={}, train_state={"step": 1})

    class Full:
        f_bavail, f_frsize = 0, 4096

    def failing_save(*a, **k):
        f = a[1]
        f.write(b"x" * 100)
        f.flush()
        raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0")

    monkeypatch.setattr(torch, "save", failing_save)
    monkeypatch.setattr(fileio.os, "statvfs", lambda p: Full())

    def work():
        save_checkpoint(path, kind="toy", config={}, state_dict={"w": torch.zeros(4)}, vocabularies={},
                        train_state={"step": 2})
        return 0

    assert interruptible("train.py", work) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"train.py: error: {path}: No space left on device: writing it needs at least ")
    assert err.endswith("0 bytes are free in " + str(tmp_path) + "; the previous file is kept: free space, then "
                        "rerun the same command to resume")
    monkeypatch.undo()
    ck = load_checkpoint(path)
    assert ck["train_state"]["step"] == 1 and torch.equal(ck["state_dict"]["w"], torch.ones(4))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # another error with room on the disk stays what it is
    with pytest.raises(RuntimeError, match="unexpected pos") as e:
        with atomic_open(tmp_path / "b.bin") as f:
            raise RuntimeError("unexpected pos")
    assert not isinstance(e.value, DiskFull)


def test_a_record_calls_add_to_is_read_whole_or_refused_naming_it(tmp_path):
    from nsvqa.fileio import read_json_record

    class Refused(Exception):
        pass

    path = tmp_path / "summary.json"
    assert read_json_record(path, Refused, "what") is None  # none yet
    path.write_text('{"a": 1}')
    assert read_json_record(path, Refused, "what") == {"a": 1}
    for text, match in [('{"a": ', r"summary.json: not readable JSON .*it holds the seconds"),
                        ("[1, 2]", r"summary.json: expected a JSON object; it holds the seconds"),
                        ('{"a": 1, "a": 2}', r"summary.json: not readable JSON \(at the top level, key 'a': given "
                                             r"twice .*it holds the seconds"),
                        ('{"a": 1e999}', r"summary.json: not readable JSON \(at a: the number 1e999 does not fit"),
                        (b'{"a": "\xff"}', r"summary.json: not readable JSON \(not UTF-8 text \(byte 0xff")]:
        data = text if isinstance(text, bytes) else text.encode()
        path.write_bytes(data)
        with pytest.raises(Refused, match=match):
            read_json_record(path, Refused, "the seconds")
        assert path.read_bytes() == data
