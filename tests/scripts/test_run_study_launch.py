"""run_study.py --launcher (orchestration.study.running.launch): pieces as submitit jobs, side by side on this machine
or submitted to SLURM (a fake sbatch on PATH), and what a job killed mid-piece leaves to the next."""
from __future__ import annotations

import gzip
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestration.study.settings.config import StudyConfig
from orchestration.study.settings.pieces import piece_dir, study_pieces

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "run_study.py"

#: The shipped tiny study (data/study/tiny.json, docs/cluster.md tries the launcher on it): the paper
#: config (data/study/paper.json) at tiny scale, one variant, two pieces in two run folders
#: (``mid-seed0-film`` and its shuffle-seed repeat ``mid-seed1-film``), a question-only LSTM that
#: checkpoints every 50 of its 300 steps.
TINY = REPO / "data" / "study" / "tiny.json"
PIECES = ["mid-seed0-film", "mid-seed1-film"]


def _tiny_config() -> StudyConfig:
    return StudyConfig.from_json(json.loads(TINY.read_text()), source=str(TINY))


def test_the_shipped_tiny_study_is_the_paper_config_at_tiny_scale_in_two_pieces():
    paper = StudyConfig.from_json(json.loads((REPO / "data" / "study" / "paper.json").read_text()))
    tiny = _tiny_config()
    assert [p.name for p in study_pieces(tiny)] == PIECES
    assert (tiny.scene_overrides, tiny.budget_hours) == (paper.scene_overrides, paper.budget_hours)
    assert (tiny.profile, tiny.image_profile, list(tiny.groups)) == ("tiny", "tiny", ["film"])


def _args(root: Path, *more: str) -> list[str]:
    return ["--data", str(root / "data"), "--runs", str(root / "runs"), "--results", str(root / "results"),
            "--threads", "1", "--jobs", "1", "--workers", "1", "--no-progress", *more]


def _study(root: Path, cfg: StudyConfig) -> None:
    """``root/results`` records ``cfg`` (what ``--config`` would write with the first piece)."""
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "study.json").write_text(json.dumps(cfg.to_json()))


def _run(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=REPO)


def _predictions(results: Path, piece: str) -> dict[str, bytes]:
    d = results / "pieces" / piece
    return {p.relative_to(d).as_posix(): gzip.decompress(p.read_bytes()) for p in sorted(d.rglob("*.jsonl.gz"))}


@pytest.fixture(scope="module")
def sequential(tmp_path_factory, require_renderer):
    """The two tiny pieces run one after the other by the default launcher (a process of the script)."""
    root = tmp_path_factory.mktemp("sequential")
    _study(root, _tiny_config())
    out = _run(*_args(root, "--only", ",".join(PIECES), "--pieces", "2"))
    assert out.returncode == 0, out.stderr[-4000:]
    return root


def test_without_the_extra_the_default_works_and_a_launcher_fails_in_one_line(tmp_path, load_script, capsys,
                                                                                monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)  # `import submitit` raises ImportError
    main = load_script("run_study").main
    assert main(["--results", str(tmp_path / "results"), "--list"]) == 0
    capsys.readouterr()
    for launcher in ("local", "slurm"):
        assert main(["--results", str(tmp_path / "results"), "--launcher", launcher, "--only", "mid-seed0-film"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and '"cluster" extra: pip install ".[cluster]"' in err and launcher in err
    assert not (tmp_path / "runs").exists()  # refused before any work (no frozen copy, no folders)


def _fake_slurm(bin_dir: Path, log: Path) -> None:
    """sbatch (copies each script to ``log``, answers a new job id), srun, squeue (lists the ids in
    ``log.queued``) and sacct on PATH."""
    bin_dir.mkdir()
    log.mkdir()
    scripts = {
        "sbatch": f'#!/bin/sh\nn=$(ls "{log}" | wc -l)\nid=$((1000 + n))\ncp "$1" "{log}/$id.sh"\n'
                  f'echo "Submitted batch job $id"\n',
        "srun": "#!/bin/sh\nexit 0\n", "squeue": f'#!/bin/sh\ncat "{log}.queued" 2>/dev/null\nexit 0\n',
        "sacct": "#!/bin/sh\necho 'JobID|State|NodeList'\n"}
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)


def _sbatch_flags(script: str) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([\w-]+)=(.*)$", script, flags=re.M))


def test_slurm_gets_a_script_per_job_with_its_partition_time_gpus_and_dependencies(tmp_path, load_script, capsys,
                                                                                  monkeypatch):
    pytest.importorskip("submitit")
    log = tmp_path / "sbatch"
    _fake_slurm(tmp_path / "bin", log)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    # the redundancy factor: rd- and rd+ borrow mid's scene parser; mid-seed1-modular is committed (the budget's steps)
    cfg = StudyConfig.from_json({"factors": ["redundancy"], "groups": {"modular": ["nsvqa"], "film": ["lstm"]},
                                 "seeds": [0, 1], "part_factor": None, "shuffle_groups": [], "late_groups": [],
                                 "dropped": []})
    results = tmp_path / "results"
    _study(tmp_path, cfg)
    done = piece_dir(results, next(p for p in study_pieces(cfg) if p.name == "mid-seed1-modular"))
    done.mkdir(parents=True)
    steps = {"scene_parser": 1500.0, "question_parser": 300.0, "test_mid": 60.0, "total": 1860.0}
    (done / "piece.json").write_text(json.dumps({"seconds": {"total": 1800.0, "attempts": [{"steps": steps}]}}))
    main = load_script("run_study").main
    pieces = "mid-seed0-modular,mid-seed0-film,rd--seed0-modular,rd--seed0-film,rd+-seed0-modular"
    code = tmp_path / "code"  # the tree the jobs run (a frozen worktree of HEAD by default)
    assert main(["--data", str(tmp_path / "data"), "--runs", str(tmp_path / "runs"), "--results", str(results),
                 "--launcher", "slurm", "--partition", "gpu", "--device", "cuda", "--only", pieces,
                 "--code", str(code), "--slurm", "qos=high"]) == 0
    capsys.readouterr()
    sent = {}
    for path in sorted(log.iterdir()):
        text = path.read_text()
        flags = _sbatch_flags(text)
        sent[flags["job-name"]] = (path.stem, flags, text)
    assert list(sent) == ["data-mid", "data-rd-", "data-rd+", *pieces.split(",")]  # submitted in dependency order
    ids = {name: jid for name, (jid, _, _) in sent.items()}
    data = ",".join(f"afterok:{ids[d]}" for d in ("data-mid", "data-rd-", "data-rd+"))
    want = {"mid-seed0-modular": data,
            "mid-seed0-film": f"{data},afterany:{ids['mid-seed0-modular']}",  # one run folder: one after the other
            "rd--seed0-modular": f"{data},afterok:{ids['mid-seed0-modular']}",  # the scene parser's owner first
            "rd--seed0-film": f"{data},afterany:{ids['rd--seed0-modular']}",
            "rd+-seed0-modular": f"{data},afterok:{ids['mid-seed0-modular']}"}
    for name, dep in want.items():
        assert sent[name][1]["dependency"] == dep, name
    for name, (_, flags, text) in sent.items():
        assert flags["partition"] == "gpu" and flags["qos"] == "high" and flags["signal"] == "USR2@120"
        assert f"export NSVQA_FROZEN_CODE={code}" in text and f'export PYTHONPATH={code}"${{PYTHONPATH' in text
        assert ("gpus-per-node" in flags) == (not name.startswith("data-"))  # a piece trains on one GPU
    # time limits: the projection (committed modular steps: parsers 30 min, 1 min a test) x 1.5, at least 30 min
    assert sent["mid-seed0-modular"][1]["time"] == str(int(-(-(30 + 3 * 1) * 1.5 // 1)))  # 3 tests: 50 min
    assert sent["rd--seed0-modular"][1]["time"] == "30"  # a borrower's steps are unmeasured: the floor
    assert sent["data-mid"][1]["time"] == "240"  # nothing projects data generation
    # no committed film piece here: the shipped study's film steps (results/study), on a GPU: the floor
    assert sent["mid-seed0-film"][1]["time"] == "30"
    assert sent["mid-seed0-film"][1]["kill-on-invalid-dep"] == "yes"  # not pending forever after a failure
    assert json.loads((tmp_path / "runs" / "launch" / "jobs" / "submitted.json").read_text()) == ids
    # several GPUs: each modular piece's parsers train data-parallel in a job of their own, before the piece
    for p in log.iterdir():
        p.unlink()
    assert main(["--data", str(tmp_path / "data"), "--runs", str(tmp_path / "runs"), "--results", str(results),
                 "--launcher", "slurm", "--device", "cuda", "--nodes", "2", "--gpus-per-node", "4",
                 "--only", "mid-seed0-modular,mid-seed0-film", "--code", str(code)]) == 0
    sent = {_sbatch_flags(p.read_text())["job-name"]: (p.stem, _sbatch_flags(p.read_text()))
            for p in sorted(log.iterdir())}
    assert [n for n in sent if not n.startswith("data-")] == ["parsers-mid-seed0-modular", "mid-seed0-modular",
                                                                "mid-seed0-film"]
    par = sent["parsers-mid-seed0-modular"][1]
    assert (par["nodes"], par["ntasks-per-node"], par["gpus-per-node"]) == ("2", "4", "4")
    assert sent["mid-seed0-modular"][1]["dependency"] == f"afterok:{sent['parsers-mid-seed0-modular'][0]}"
    assert sent["mid-seed0-modular"][1]["gpus-per-node"] == "1"
    # a launch while squeue still lists an earlier one's job would run its pieces twice: refused
    Path(f"{log}.queued").write_text(f"{sent['mid-seed0-film'][0]}\n")
    assert main(["--data", str(tmp_path / "data"), "--runs", str(tmp_path / "runs"), "--results", str(results),
                 "--launcher", "slurm", "--only", "mid-seed0-film", "--code", str(code)]) == 2
    assert f"jobs of an earlier launch are still queued or running ({sent['mid-seed0-film'][0]};" \
        in capsys.readouterr().err


def test_two_pieces_side_by_side_predict_what_they_predict_one_after_the_other(sequential, tmp_path):
    pytest.importorskip("submitit")
    from orchestration.study.running.launch import LaunchOptions, launch

    cfg = _tiny_config()
    pieces = [p for p in study_pieces(cfg) if p.name in PIECES]
    said: list[str] = []
    opts = LaunchOptions(launcher="local", parallel=2, threads=1, jobs=1, workers=1,
                         folder=tmp_path / "runs" / "launch" / "jobs")
    state = launch(pieces, tmp_path / "data", tmp_path / "runs", tmp_path / "results", cfg, opts, REPO,
                   echo=said.append)
    assert state == {"data-mid": "done", **{p: "done" for p in PIECES}}, said
    started = [s.split()[1] for s in said if s.startswith("started ")]
    assert started == ["data-mid", *PIECES]  # the data first, once; then both pieces at once
    for name in PIECES:
        assert _predictions(tmp_path / "results", name) == _predictions(sequential / "results", name)
        assert len(_predictions(tmp_path / "results", name)) == 4  # lstm and majority, predictions and shuffled
    assert (tmp_path / "data" / "mid" / "manifest.json").read_bytes() == \
        (sequential / "data" / "mid" / "manifest.json").read_bytes()


def test_a_job_killed_mid_piece_and_launched_again_resumes_to_the_same_predictions(sequential, tmp_path):
    pytest.importorskip("submitit")
    cfg = _tiny_config()
    _study(tmp_path, cfg)
    args = _args(tmp_path, "--only", PIECES[0], "--launcher", "local", "--code", str(REPO))
    args[1] = str(sequential / "data")  # the data are there: no data job
    ckpt = tmp_path / "runs" / "mid" / "baselines" / "lstm" / "baseline.pt"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), *args], cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + 240
        while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher, its job and the piece: a node gone
        proc.wait()
    assert ckpt.exists(), proc.stderr.read().decode()[-3000:]
    assert not (tmp_path / "results" / "pieces" / PIECES[0] / "piece.json").exists(), "it ended before the kill"
    from orchestration.study.running.launch import LaunchOptions, launch

    piece = next(p for p in study_pieces(cfg) if p.name == PIECES[0])
    opts = LaunchOptions(launcher="local", threads=1, jobs=1, workers=1, folder=tmp_path / "runs" / "launch" / "jobs")
    said: list[str] = []
    assert launch([piece], sequential / "data", tmp_path / "runs", tmp_path / "results", cfg, opts, REPO,
                  echo=said.append) == {PIECES[0]: "done"}, said  # launched again
    assert _predictions(tmp_path / "results", PIECES[0]) == _predictions(sequential / "results", PIECES[0])
    rec = json.loads((tmp_path / "results" / "pieces" / PIECES[0] / "piece.json").read_text())
    first, second = rec["seconds"]["attempts"]
    assert first["stopped"] and "train_variant" in second  # the killed attempt counted, the second finished


def test_a_launch_past_the_budget_cap_is_refused_before_any_job(tmp_path, load_script, capsys):
    pytest.importorskip("submitit")
    cfg = StudyConfig.from_json({"budget_hours": 0.4})
    _study(tmp_path, cfg)
    done = tmp_path / "results" / "pieces" / "mid-seed0-modular"
    done.mkdir(parents=True)
    (done / "piece.json").write_text(json.dumps({"seconds": {"total": 1800.0, "attempts": []}}))
    main = load_script("run_study").main
    assert main(["--data", str(tmp_path / "data"), "--runs", str(tmp_path / "runs"), "--results",
                 str(tmp_path / "results"), "--launcher", "local", "--only", "mid-seed0-film", "--code", str(REPO)]) == 3
    assert "not launched: the committed pieces took 0.5 h, the study's 0.4-hour cap" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
