"""orchestration.study.running.launch without a study run: the jobs' data agree with what a piece reads, a parsers job
trains with the piece's own spec, the paper config's GPU schedules resolve, and a job preempted by
its scheduler is requeued with the same call."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestration import models as registry
from orchestration.study.settings.config import STUDY, StudyConfig
from orchestration.study.settings.pieces import piece_setup, study_pieces, uses_scene_parser
from orchestration.study.running.launch import (LaunchOptions, ScriptJob, data_needs, run_folder, scaled_estimate,
                                                time_limit, train_piece_parsers)

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "data" / "study" / "paper.json"


def test_the_data_jobs_make_every_split_a_piece_reads():
    by_name = {p.name: p for p in study_pieces(STUDY)}
    rd = piece_setup(by_name["rd--seed0-modular"], "D", "R", STUDY)  # borrows mid's scene parser
    assert rd.splits["mid"] == rd.splits["rd-"] == ["train", "val", "test"]
    assert all(rd.splits[t] == ["test"] for t in by_name["rd--seed0-modular"].tests if t not in ("mid", "rd-"))
    for piece in study_pieces(STUDY):
        setup = piece_setup(piece, "D", "R", STUDY)
        needs = data_needs([piece], "D", STUDY)
        got = {e["variant"]: e["splits"] for e in needs.values()}
        assert got == setup.splits and set(got) == {*piece.tests, piece.variant, setup.scene_variant}, piece.name
        assert all(e["root"] == setup.data for e in needs.values())
    keys = data_needs(study_pieces(STUDY), "D", STUDY)
    assert "mid" in keys and "parts/mid" in keys  # the part extension's data are a dataset of their own


def test_the_run_folders_and_time_limits():
    by_name = {p.name: p for p in study_pieces(STUDY)}
    assert run_folder(by_name["mid-seed0-modular"], "R") == run_folder(by_name["mid-seed0-film"], "R") == Path("R/mid")
    assert run_folder(by_name["mid-seed1-modular"], "R") == Path("R/mid-seed1")
    assert run_folder(by_name["mid-seed0-parts"], "R") == Path("R/parts/mid")
    opts = LaunchOptions(margin=0.5, floor_minutes=30, unprojected_minutes=240)
    assert [time_limit(m, opts) for m in (100, 10, None)] == [150, 30, 240]


def test_a_parsers_job_trains_with_the_spec_the_piece_trains_with(tmp_path, monkeypatch):
    import orchestration.experiment as experiment
    import orchestration.study.running.piece as run

    got = {}
    monkeypatch.setattr(run, "generate_piece_data", lambda *a, **k: None)

    def stop(*a, spec, **k):
        got["piece"] = spec
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "train_variant", stop)
    monkeypatch.setattr(experiment, "train_parsers", lambda data, r, spec, *a, **k: got.setdefault("parsers", spec))
    piece = next(p for p in study_pieces(STUDY) if p.name == "mid-seed1-modular")  # trains its own scene parser
    with pytest.raises(KeyboardInterrupt):
        run.run_piece(piece, tmp_path / "data", tmp_path / "runs", tmp_path / "results", STUDY, jobs=1,
                      device="cpu", progress=False, echo=lambda s: None)
    train_piece_parsers(piece, tmp_path / "data", tmp_path / "runs", STUDY, device="cpu", progress=False)
    assert got["parsers"] == got["piece"] and got["piece"].scene_variant == "mid" and got["piece"].image_shuffle


def test_the_paper_config_has_the_papers_sizes_and_a_gpu_schedule_for_every_network():
    from nsvqa.training.question_config import QuestionParserConfig
    from nsvqa.training.scene_config import SceneParserConfig

    cfg = StudyConfig.from_json(json.loads(PAPER.read_text()), source=str(PAPER))
    assert (cfg.sizes.train, cfg.sizes.val, cfg.sizes.test) == (20000, 5000, 5000)
    assert cfg.questions == "object" and cfg.image_profile == "full" and cfg.profile == "full"
    pieces = study_pieces(cfg)
    assert len({p.name for p in pieces}) == len(pieces) > len(study_pieces(StudyConfig()))  # nothing dropped
    sc = SceneParserConfig.from_profile("D", cfg.profile, **cfg.scene_overrides)
    assert (sc.det_iterations, sc.det_batch, sc.attr_epochs, sc.mode) == (30000, 16, 100, "agnostic")
    assert QuestionParserConfig.from_profile("D", cfg.profile, **cfg.question_overrides).steps == 20000
    for name in sorted({registry.parse_spec(m).name for p in pieces for m in p.models}):
        model = registry.get(name)
        if model.trainable:
            model.config("D", cfg.profile, **dict(cfg.model_overrides.get(name, {})))  # resolves, checked
    assert any(uses_scene_parser(p) for p in pieces)


def test_the_paper_estimate_scales_each_step_by_its_work_and_says_it_is_one(tmp_path):
    measured = tmp_path / "results"
    done = measured / "pieces" / "mid-seed1-modular"
    done.mkdir(parents=True)
    steps = {"scene_parser": 1500.0, "question_parser": 300.0, "test_mid": 60.0, "total": 1860.0}
    (done / "piece.json").write_text(json.dumps({"seconds": {"total": 1800.0, "attempts": [{"steps": steps}]}}))
    small = StudyConfig(groups={"modular": ("nsvqa",)}, part_factor=None, shuffle_groups=(), seeds=(0, 1),
                        factors=(), dropped=())
    big = StudyConfig.from_json({**small.to_json(), "sizes": {"train": 20000, "val": 5000, "test": 6000},
                                 "scene_overrides": {**small.to_json()["scene_overrides"], "det_iterations": 1200}})
    est = scaled_estimate(measured, small, big, gpu_speedup=10)
    assert est["estimate"] is True and est["ratios"]["scene"] == 2 and est["ratios"]["test"] == 20
    row = {r["piece"]: r["measured_scale_minutes"] for r in est["rows"]}
    assert row["mid-seed0-modular"] == pytest.approx(30 * 2 + 1 * 20)  # parsers phase 30 min, one test of 1 min
    assert est["gpu_hours"] == pytest.approx(est["machine_hours"] / 10)


FAKE_SCRIPT = '''import json, os, sys, time
out = sys.argv[1]
runs = [json.loads(l) for l in open(out)] if os.path.exists(out) else []
with open(out, "a") as f:
    f.write(json.dumps({k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT",
                                                       "NSVQA_FROZEN_CODE")}) + "\\n")
if len(runs) == 0:
    try:
        time.sleep(120)
    except KeyboardInterrupt:
        with open(out + ".interrupted", "w") as f:
            f.write("stopped")
        sys.exit(130)
'''


def test_a_job_near_its_time_limit_is_interrupted_and_requeued_with_the_same_call(tmp_path):
    submitit = pytest.importorskip("submitit")
    code = tmp_path / "code"
    (code / "scripts").mkdir(parents=True)
    (code / "scripts" / "run_study.py").write_text(FAKE_SCRIPT)
    out = tmp_path / "calls.jsonl"
    ex = submitit.LocalExecutor(folder=tmp_path / "jobs" / "%j", max_num_timeout=3)
    # the warning signal (USR2, as SLURM sends before the time limit or a preemption) 60 s into the
    # job: later than the job's own start-up (unpickling imports the package) takes on a machine
    # loaded by a training run (25 s was not), where a signal before submitit's handler is installed
    # ends the job with no result; then 60 s to stop and requeue before the limit kills it (15 s were
    # not enough beside a training run and the rest of the suite); the fake job sleeps past the signal
    ex.update_parameters(timeout_min=2, signal_delay_s=60)
    job = ex.submit(ScriptJob("fake", [str(out)], code))
    assert job.result() == 0
    calls = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(calls) >= 2 and (tmp_path / "calls.jsonl.interrupted").read_text() == "stopped"
    assert calls[0]["NSVQA_FROZEN_CODE"] == str(code) and calls[0]["WORLD_SIZE"] is None


def test_a_job_of_several_tasks_gives_each_its_rank(tmp_path):
    submitit = pytest.importorskip("submitit")
    code = tmp_path / "code"
    (code / "scripts").mkdir(parents=True)
    (code / "scripts" / "run_study.py").write_text("import json, os, sys\n"
                                                  "open(sys.argv[1] + os.environ['RANK'], 'w').write(json.dumps("
                                                  "{k: os.environ[k] for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', "
                                                  "'MASTER_ADDR', 'MASTER_PORT')}))\n")
    ex = submitit.LocalExecutor(folder=tmp_path / "jobs" / "%j")
    ex.update_parameters(timeout_min=5, tasks_per_node=2)
    job = ex.submit(ScriptJob("ddp", [str(tmp_path / "rank")], code, tasks=2))
    job.results()
    ranks = [json.loads((tmp_path / f"rank{r}").read_text()) for r in (0, 1)]
    assert [(r["RANK"], r["LOCAL_RANK"], r["WORLD_SIZE"]) for r in ranks] == [("0", "0", "2"), ("1", "1", "2")]
    assert ranks[0]["MASTER_PORT"] == ranks[1]["MASTER_PORT"] and ranks[0]["MASTER_ADDR"]


def test_a_new_folder_at_the_papers_scale_gets_time_limits_from_the_shipped_studys_steps_scaled(tmp_path):
    from orchestration.study.settings.config import results_config
    from orchestration.study.running.launch import plan_jobs

    cfg = StudyConfig.from_json(json.loads(PAPER.read_text()), source=str(PAPER))
    shipped = REPO / "results" / "study"
    todo = [p for p in study_pieces(cfg) if p.name in ("mid-seed0-modular", "mid-seed0-film")]
    opts = LaunchOptions(launcher="slurm", device="cuda", estimate_from=shipped, gpu_speedup=100)
    jobs = {j.name: j for j in plan_jobs(todo, tmp_path / "data", tmp_path / "runs", tmp_path / "results", cfg, opts)}
    est = {r["piece"]: r["measured_scale_minutes"] / 100
           for r in scaled_estimate(shipped, results_config(shipped), cfg, gpu_speedup=100)["rows"]}
    for name in ("mid-seed0-modular", "mid-seed0-film"):
        assert jobs[name].minutes == time_limit(est[name], opts)
    assert jobs["mid-seed0-modular"].minutes > 8 * 60  # its scene parser's 30,000 iterations at batch 16
    assert jobs["mid-seed0-film"].after_any == ("mid-seed0-modular",)
    # without the shipped steps, nothing projects them
    bare = plan_jobs(todo, tmp_path / "data", tmp_path / "runs", tmp_path / "results", cfg,
                     LaunchOptions(launcher="slurm", device="cuda"))
    assert {j.minutes for j in bare if j.kind == "piece"} == {240}
    # --retrain-lender reaches each piece job, where the gate runs (on the node that trains)
    assert not any("--retrain-lender" in j.argv for j in bare)
    forced = plan_jobs(todo, tmp_path / "data", tmp_path / "runs", tmp_path / "results", cfg,
                       LaunchOptions(launcher="slurm", device="cuda", retrain_lender=True))
    assert [j.name for j in forced if "--retrain-lender" in j.argv] == ["mid-seed0-modular", "mid-seed0-film"]


def test_a_job_that_finds_a_folder_in_use_runs_again_and_one_that_fails_otherwise_does_not(tmp_path):
    from orchestration.study.running.launch import LaunchError

    code = tmp_path / "code"
    (code / "scripts").mkdir(parents=True)
    (code / "scripts" / "run_study.py").write_text(
        "import os, sys\n"
        "n = len(os.listdir(sys.argv[1]))\n"
        "open(os.path.join(sys.argv[1], str(n)), 'w').close()\n"
        "if n == 0:\n"
        "    sys.exit('nsvqa.fileio.FolderInUse: /r/mid/scene_parser: run folder in use by x-1 process 1 (lock l)')\n"
        "if sys.argv[2] == 'fail':\n"
        "    sys.exit('ValueError: something else')\n")
    for outcome, calls in (("ok", 2), ("fail", 2)):
        calls_dir = tmp_path / outcome
        calls_dir.mkdir()
        job = ScriptJob("busy", [str(calls_dir), outcome], code, busy_wait_s=0.01)
        if outcome == "ok":
            assert job() == 0
        else:
            with pytest.raises(LaunchError, match="job busy: scripts/run_study.py exited with status 1"):
                job()
        assert len(list(calls_dir.iterdir())) == calls  # the second failure is not a folder in use: no third


def test_a_launchs_code_tree_is_a_worktree_of_head_reused_and_never_swept(tmp_path):
    import subprocess

    from orchestration.study.running.code_tree import frozen_tree

    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "scripts" / "run_study.py").write_text("print('v1')\n")

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("add", "scripts")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "v1")
    runs = tmp_path / "runs"
    (runs / "launch" / "code-000000000000").mkdir(parents=True)  # an earlier launch's tree: its jobs may still run
    (repo / "scripts" / "run_study.py").write_text("print('v2, not committed')\n")
    where, dirty = frozen_tree(runs / "launch", repo)
    assert where == (runs / "launch" / f"code-{git('rev-parse', '--short=12', 'HEAD').strip()}").resolve()
    assert (where / "scripts" / "run_study.py").read_text() == "print('v1')\n" and "scripts/run_study.py" in dirty
    assert (runs / "launch" / "code-000000000000").is_dir()
    stamp = (where / "scripts" / "run_study.py").stat().st_mtime_ns
    assert frozen_tree(runs / "launch", repo)[0] == where and (where / "scripts" / "run_study.py").stat().st_mtime_ns == stamp


def test_a_code_tree_removed_by_hand_leaves_no_stale_worktree_once_the_next_launch_runs(tmp_path):
    import shutil
    import subprocess

    from orchestration.study.running.code_tree import frozen_tree

    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True, text=True).stdout

    def commit(text: str) -> None:
        (repo / "scripts" / "run_study.py").write_text(text)
        git("add", "scripts")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", text)

    git("init", "-q")
    commit("print('v1')\n")
    runs = tmp_path / "runs"
    old, _ = frozen_tree(runs / "launch", repo)  # a first launch
    commit("print('v2')\n")
    new, _ = frozen_tree(runs / "launch", repo)  # a launch of a later commit: a second tree
    shutil.rmtree(old)  # its jobs done, removed as docs/cluster.md says
    assert frozen_tree(runs / "launch", repo)[0] == new  # the next launch, reusing its tree
    listed = git("worktree", "list", "--porcelain")
    assert str(old) not in listed and "prunable" not in listed and str(new) in listed
