"""The file guarantees (docs/guarantees.md): stale temporaries swept, checkpoints checked against
their sha256 sidecar, outputs checked for writability before the work."""
from __future__ import annotations

import os
import subprocess
import sys

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
    stale = tmp_path / f".m.pt.{_host()}-{_dead_pid()}.abcd1234.tmp"
    stale.write_bytes(b"x" * 100)
    live = tmp_path / f".other.pt.{_host()}-{os.getpid()}.zzzz9999.tmp"  # this process: a live writer
    live.write_bytes(b"y")
    other_host = tmp_path / f".m.pt.00000000-{_dead_pid()}.abcd1234.tmp"  # judged by its age only
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


def test_a_checkpoint_without_a_sidecar_still_loads(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", kind="toy", config={"a": 1}, state_dict={}, vocabularies={})
    sidecar_path(path).unlink()
    assert load_checkpoint(path, kind="toy")["config"] == {"a": 1}


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


def test_a_record_calls_add_to_is_read_whole_or_refused_naming_it(tmp_path):
    from nsvqa.fileio import read_json_record

    class Refused(Exception):
        pass

    path = tmp_path / "summary.json"
    assert read_json_record(path, Refused, "what") is None  # none yet
    path.write_text('{"a": 1}')
    assert read_json_record(path, Refused, "what") == {"a": 1}
    for text, match in [('{"a": ', r"summary.json: not readable JSON .*it holds the seconds"),
                        ("[1, 2]", r"summary.json: expected a JSON object; it holds the seconds")]:
        path.write_text(text)
        with pytest.raises(Refused, match=match):
            read_json_record(path, Refused, "the seconds")
        assert path.read_text() == text
