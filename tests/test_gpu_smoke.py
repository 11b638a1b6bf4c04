"""benchmarks/gpu_smoke.py: one line and exit 2 without CUDA; the harness on the CPU with --dry-run."""
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks import gpu_smoke

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "gpu_smoke.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no CUDA, even on a GPU machine
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def test_without_cuda_one_line_and_exit_2(tmp_path):
    out = tmp_path / "bench"
    r = _run("--out", str(out))
    assert r.returncode == 2, r.stderr
    assert r.stdout.strip().splitlines() == [gpu_smoke.NEEDS_CUDA]
    assert "needs a CUDA device" in r.stdout
    assert r.stderr == ""
    assert not out.exists()  # nothing else done


def test_dry_run_on_cpu_exercises_the_harness(tmp_path):
    out = tmp_path / "bench"
    r = _run("--device", "cpu", "--dry-run", "--only", "attribute_head", "question_parser", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads((out / "gpu_smoke.json").read_text())
    assert rec["dry_run"] and rec["profiles"] == ["tiny"] and rec["steps"] == 1 and rec["warmup"] == 0
    assert [(row["profile"], row["component"]) for row in rec["rows"]] == [("tiny", "attribute_head"),
                                                                            ("tiny", "question_parser")]
    for row in rec["rows"]:
        assert row["s_per_step"] > 0 and row["peak_mib"] is None and "error" not in row
    md = (out / "gpu_smoke.md").read_text()
    assert "| tiny | question_parser | 16 |" in md and "dry run" in md


def test_a_failing_component_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch):
    def broken(prof, dev):
        raise RuntimeError("out of memory, say")

    monkeypatch.setitem(gpu_smoke.PARSER_STEPS, "attribute_head", broken)
    out = tmp_path / "bench"
    rc = gpu_smoke.main(["--device", "cpu", "--dry-run", "--only", "attribute_head", "question_parser",
                         "--out", str(out)])
    assert rc == 1
    head, qp = json.loads((out / "gpu_smoke.json").read_text())["rows"]
    assert head["error"] == "RuntimeError: out of memory, say" and head["s_per_step"] is None
    assert qp["s_per_step"] > 0 and "error" not in qp
    assert "RuntimeError: out of memory, say" in (out / "gpu_smoke.md").read_text()


def test_every_learned_baseline_is_a_component():
    learned = gpu_smoke.learned_baselines()
    assert {"lstm", "cnn_lstm", "film", "mdetr", "nscl"} <= set(learned)
    assert not {"random", "majority", "nsvqa", "pnsvqa"} & set(learned)


def test_unknown_component_is_exit_2(tmp_path):
    assert gpu_smoke.main(["--device", "cpu", "--dry-run", "--only", "nope", "--out", str(tmp_path)]) == 2
