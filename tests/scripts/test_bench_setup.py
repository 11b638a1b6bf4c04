"""benchmarks/bench_setup.py on a throw-away repository whose Makefile stands in for the real one."""
import json
import subprocess

import pytest

from benchmarks import bench_setup

MAKEFILE = """\
venv:
\t@echo venv done
demo:
\t@mkdir -p outputs/demo/report/visual
\t@echo '{"cells": [{"model": "pnsvqa", "train": "mid", "test": "mid", "value": 0.85}]}' \\
\t    > outputs/demo/report/visual/report.json
test:
\t@echo "=== 3 passed, 1 skipped in 0.12s ==="
\t@test -z "$$NSVQA_REFERENCE"
"""


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    (r / "Makefile").write_text(MAKEFILE)
    git = ["git", "-C", str(r), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "Makefile"], check=True)
    subprocess.run(git + ["commit", "-qm", "m"], check=True)
    return r


def test_both_steps_timed_with_accuracy_and_test_counts(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("NSVQA_REFERENCE", "/somewhere")  # a newcomer has no local data: removed
    out = tmp_path / "bench" / "setup.json"
    assert bench_setup.main(["--repo", str(repo), "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    demo, test = rec["rows"]
    assert demo["ok"] and demo["accuracy"] == {"pnsvqa": {"mid": 0.85}}
    assert demo["setup"]["command"] == "make venv" and demo["run"]["command"] == "make demo"
    assert demo["seconds"] == pytest.approx(demo["setup"]["seconds"] + demo["run"]["seconds"], abs=0.11)
    assert test["ok"] and test["tests"] == {"passed": 3, "skipped": 1}
    assert (out.parent / "setup-demo.log").read_text().count("venv done") == 1


def test_a_failing_step_exits_1_with_its_row(repo, tmp_path):
    (repo / "Makefile").write_text(MAKEFILE.replace("\t@echo venv done", "\t@exit 3"))
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "x"],
                   check=True)
    out = tmp_path / "setup.json"
    assert bench_setup.main(["--repo", str(repo), "--steps", "demo", "--out", str(out)]) == 1
    (row,) = json.loads(out.read_text())["rows"]
    assert not row["ok"] and row["setup"]["returncode"] == 2 and row["run"] is None


def test_unknown_revision_is_a_usage_error(repo, tmp_path):
    assert bench_setup.main(["--repo", str(repo), "--rev", "nope", "--out", str(tmp_path / "o.json")]) == 2
