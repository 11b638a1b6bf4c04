"""A folder's lock is a lease (docs/guarantees.md, "What is locked"; issue 80): its holder refreshes it,
and a lock of another machine not refreshed within ``LEASE_S`` is taken over, with one line naming the
old holder, so a job requeued on another node after its node was lost goes on."""
from __future__ import annotations

import logging
import os
import threading
import time

import pytest

from nsvqa.fileio import LEASE_REFRESH_S, LEASE_S, FolderInUse, FolderLock, _host
from nsvqa.training import RunDir

#: what a holder on a lost node left: another machine's host digest, its pid and name
LOST = "00000000-4242 process 4242 on lostnode since 2026-12-05 08:00:00\n"


def _aged(path, seconds):
    os.utime(path, (time.time() - seconds, time.time() - seconds))


def test_a_lost_nodes_lock_is_refused_while_fresh_and_taken_over_once_its_lease_ran_out(tmp_path, caplog):
    run = tmp_path / "run"
    run.mkdir()
    lock = run / ".nsvqa.lock"
    lock.write_text(LOST)
    with pytest.raises(FolderInUse, match=r"run folder in use by process 4242 on lostnode since 2026-12-05 "
                                          r"08:00:00 \(lock .*\.nsvqa\.lock\); .* its lease was refreshed 0 s ago "
                                          rf"and is taken over {LEASE_S:.0f} s after its last refresh"):
        RunDir(run, {"seed": 0})
    _aged(lock, LEASE_S - 30)  # within its lease: still refused
    with pytest.raises(FolderInUse):
        RunDir(run, {"seed": 0})
    _aged(lock, LEASE_S + 5)  # the node was lost: no refresh since
    with caplog.at_level(logging.WARNING, logger="nsvqa.fileio"):
        opened = RunDir(run, {"seed": 0})
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "\n" not in said[0], said
    assert "took over the lock" in said[0] and "process 4242 on lostnode" in said[0]
    assert f"past its {LEASE_S:.0f}-s lease" in said[0]
    assert lock.read_text().startswith(f"{_host()}-{os.getpid()} ")
    opened.close()
    assert not lock.exists() and [p.name for p in run.iterdir() if p.name.startswith(".")] == []


def test_the_lease_outlasts_the_holders_refreshes_and_the_launchers_retries_outlast_the_lease():
    from orchestration.study.running.launch import ScriptJob

    job = ScriptJob("x", [], ".")
    assert LEASE_S >= 5 * LEASE_REFRESH_S  # a holder misses several refreshes before it loses the lock
    assert job.busy_wait_s * job.busy_tries > LEASE_S  # a requeued job waits out a lost node's lease


def test_the_holder_refreshes_its_lease_until_it_releases_it(tmp_path):
    lock = FolderLock(tmp_path, "run folder", refresh_s=0.02).acquire()
    path = tmp_path / ".nsvqa.lock"
    _aged(path, LEASE_S + 100)
    deadline = time.monotonic() + 5
    while time.time() - path.stat().st_mtime > 10 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert time.time() - path.stat().st_mtime < 10  # touched again by the holder
    other = FolderLock(tmp_path, "run folder")
    other.acquire()  # this process: shared, not taken over
    assert not other.owned
    lock.release()
    assert not path.exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("lease ")]


def test_a_live_holder_on_this_machine_keeps_its_lock_however_old(tmp_path):
    path = tmp_path / ".nsvqa.lock"
    path.write_text(f"{_host()}-{os.getppid()} process {os.getppid()} on thishost since 2026-12-05 08:00:00\n")
    _aged(path, LEASE_S * 10)  # its pid is alive here: that decides, not the lease
    with pytest.raises(FolderInUse, match=rf"in use by process {os.getppid()} on thishost"):
        FolderLock(tmp_path, "run folder").acquire()


def test_a_holder_whose_lock_was_taken_over_stops_refreshing_and_says_so(tmp_path, caplog):
    lock = FolderLock(tmp_path, "run folder", refresh_s=0.02)
    with caplog.at_level(logging.WARNING, logger="nsvqa.fileio"):
        lock.acquire()
        (tmp_path / ".nsvqa.lock").write_text(LOST)  # what a taker on another node wrote
        deadline = time.monotonic() + 5
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.02)
        lock.release()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "is no longer this process's" in said[0], said
    assert (tmp_path / ".nsvqa.lock").read_text() == LOST  # the new holder's lock is left alone
