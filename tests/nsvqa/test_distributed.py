"""Data-parallel training under torchrun: 2 CPU processes over gloo, on tiny data.

The pytest process launches ``python -m torch.distributed.run --standalone --nproc_per_node 2`` on
this very file (``__main__`` below is the worker), which runs the real training functions and
leaves per-rank records; the assertions compare them with single-process runs made here.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed

from nsvqa.training import distributed as nd
from nsvqa.training import sampling
from nsvqa.training.loading import QUESTION_CHECKPOINT, QUESTION_KIND, load_question_parser
from nsvqa.training.scene_config import SceneParserConfig

WORLD = 2
TIMEOUT_S = 240  # a deadlock fails the test instead of hanging it
HAVE_GLOO = torch.distributed.is_available() and torch.distributed.is_gloo_available()
needs_gloo = pytest.mark.skipif(not HAVE_GLOO, reason="torch.distributed with the gloo backend is not available "
                                                       "in this torch build")
# the question parser's equivalence run: 19 questions at batch 6 -> 6, 6, 6, 1 (rank 1 gets nothing)
QP = dict(max_train_questions=19, batch=6, steps=4, eval_every=2, val_questions=4, lr=0.05, dropout=0.0,
          grad_clip=1e9)


# ------------------------------------------------------------------------------------ worker

def _record_shards(module, seen: list) -> None:
    """Wrap ``module.shard`` to record (global batch, this rank's slice) of every call."""
    real = module.shard

    def recording(indices, rank, world_size):
        mine = real(indices, rank, world_size)
        seen.append(([int(i) for i in indices], [int(i) for i in mine]))
        return mine

    module.shard = recording


def _capture_wrapped(module, models: list) -> None:
    """Wrap ``module.wrap`` to keep every module it wraps (the unwrapped model of each stage)."""
    real = module.wrap

    def capturing(m, info, **kw):
        models.append(m)
        return real(m, info, **kw)

    module.wrap = capturing


def _params(m: torch.nn.Module) -> dict[str, torch.Tensor]:
    inner = m.module if isinstance(m, nd.Dispatch) else m
    return {k: v.detach().clone() for k, v in inner.named_parameters()}


def _worker_question_parser(args: dict, rank: int) -> dict:
    import nsvqa.training.question_parser as qt
    from nsvqa.training.scene_parser import train_scene_parser

    # a process group made here is reused (not owned, not destroyed) by every training call below
    info = nd.init_from_env("cpu")
    assert info.enabled and info.world_size == WORLD and info.rank == rank and info.owns_group
    rec: dict = {}
    # 1. plain SGD (Adam's first steps are lr * sign(gradient), blind to how gradients are averaged)
    torch.optim.Adam = torch.optim.SGD
    seen: list = []
    models: list = []
    _record_shards(qt, seen)
    _capture_wrapped(qt, models)
    run = qt.train_question_parser(qt.QuestionParserConfig.from_profile(args["data"], "tiny", **QP), args["sgd"],
                                   progress=False)
    rec["sgd"] = {"seen": list(seen), "params": _params(models[0]), "run": type(run).__name__}
    # 2. REINFORCE after two supervised steps: runs, stays in step across ranks, saves once
    models.clear()
    cfg = qt.QuestionParserConfig.from_profile(args["data"], "tiny", **(QP | dict(steps=2, reinforce=True,
                                                                             reinforce_steps=2, reinforce_batch=6)))
    qt.train_question_parser(cfg, args["rl"], progress=False)
    rec["rl"] = {"params": _params(models[0])}
    # 3. global batches that do not divide by the world size
    for name, call in (("batch", lambda: qt.train_question_parser(
                           qt.QuestionParserConfig.from_profile(args["data"], "tiny", batch=5), args["bad"])),
                       ("det_batch", lambda: train_scene_parser(
                           SceneParserConfig.from_profile(args["data"], "tiny", stage="detector", det_batch=3),
                           args["bad"]))):
        try:
            call()
            rec[f"error_{name}"] = None
        except ValueError as e:
            rec[f"error_{name}"] = str(e)
    rec["group_alive"] = torch.distributed.is_initialized()
    nd.cleanup()
    return rec


def _worker_scene_parser(args: dict, rank: int) -> dict:
    from nsvqa.training import scene_parser as st

    models: list = []
    seen: list = []
    _capture_wrapped(st, models)
    _record_shards(st, seen)
    cfg = SceneParserConfig.from_profile(args["data"], "tiny", det_iterations=2, det_batch=2, checkpoint_every=1,
                                       attr_epochs=1, det_crop_images=2)
    run = st.train_scene_parser(cfg, args["out"], progress=False)  # makes and owns the process group
    return {"detector": _params(models[0]), "attributes": _params(models[1]), "seen": seen, "run": type(run).__name__,
            "group_alive": torch.distributed.is_initialized()}


def _worker_main(argv: list[str]) -> None:
    job, args = argv[0], json.loads(argv[1])
    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    rec = {"question_parser": _worker_question_parser, "scene_parser": _worker_scene_parser}[job](args, rank)
    torch.save(rec, Path(args["records"]) / f"rank{rank}.pt")


# ------------------------------------------------------------------------------------ launcher

def _torchrun(job: str, args: dict, tmp: Path) -> list[dict]:
    """Run ``job`` on WORLD CPU processes under torchrun; the per-rank records, in rank order."""
    records = tmp / f"records_{job}"
    records.mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(WORLD),
           __file__, job, json.dumps(args | {"records": str(records)})]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher and its workers
        out, _ = proc.communicate()
        pytest.fail(f"torchrun {job} did not finish in {TIMEOUT_S} s (deadlock?):\n{out[-4000:]}")
    assert proc.returncode == 0, f"torchrun {job} failed ({proc.returncode}):\n{out[-6000:]}"
    return [torch.load(records / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]


# ------------------------------------------------------------------------------------ helpers in-process

def test_shard_splits_a_global_batch_in_rank_order():
    idx = np.arange(7)
    parts = [nd.shard(idx, r, 3) for r in range(3)]
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4], [5, 6]]
    assert nd.shard([4, 9], 1, 2) == [9] and nd.shard([4], 1, 2) == []
    assert nd.shard(torch.arange(8), 3, 4).tolist() == [6, 7]
    with pytest.raises(ValueError, match=r"rank must be in \[0, 2\), got 2"):
        nd.shard(idx, 2, 2)


def test_global_batch_must_divide_by_the_world_size():
    nd.check_global_batch(4, det_batch=16, attr_batch=64)
    with pytest.raises(ValueError, match=r"attr_batch=6 is the global batch of a step and must be divisible by "
                                         r"the world size 4 .*--attr-batch"):
        nd.check_global_batch(4, det_batch=16, attr_batch=6)


def test_single_process_is_a_no_op(monkeypatch):
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(k, raising=False)
    info = nd.init_from_env("cpu")
    assert info == nd.DistInfo(0, 1, 0, "cpu", True, False) and not info.enabled
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert nd.init_from_env("cuda:3").device == "cuda:3"
    model = torch.nn.Linear(2, 2)
    assert nd.wrap(model, info) is model
    assert nd.mean_over_ranks(info, {"b": 2.0, "a": 1.0}) == {"b": 2.0, "a": 1.0}
    assert nd.all_sum(info, [1, 2.5]) == [1.0, 2.5]
    assert nd.run_on_main(info, lambda: 7) == 7
    nd.barrier(info)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(ValueError, match=r"WORLD_SIZE=2 needs RANK in \[0, 2\)"):
        nd.init_from_env("cpu")


# ------------------------------------------------------------------------------------ question parser

@pytest.fixture(scope="module")
def qp_runs(tmp_path_factory, write_qa_split):
    """The torchrun records of the question-parser jobs, with their folders."""
    if not HAVE_GLOO:
        pytest.skip("torch.distributed with the gloo backend is not available in this torch build")
    tmp = tmp_path_factory.mktemp("ddp_qp")
    data = tmp / "data" / "mid"
    write_qa_split(data, "train", 4, seed=0, start=0)
    write_qa_split(data, "val", 1, seed=1, start=100)
    paths = {"data": str(data), "sgd": str(tmp / "sgd"), "rl": str(tmp / "rl"), "bad": str(tmp / "bad")}
    return _torchrun("question_parser", paths, tmp), paths


@needs_gloo
def test_data_parallel_steps_equal_single_process_steps_on_the_global_batch(qp_runs, tmp_path, monkeypatch):
    import nsvqa.training.question_parser as qt
    from nsvqa.training.checkpoint import load_checkpoint

    recs, paths = qp_runs
    # every rank saw the same global batch of each step and took its half of it, in rank order
    a, b = recs[0]["sgd"]["seen"], recs[1]["sgd"]["seen"]
    assert len(a) == len(b) == QP["steps"]
    assert [g for g, _ in a] == [g for g, _ in b]
    assert all(ma + mb == g for (g, ma), (_, mb) in zip(a, b))
    assert sorted(len(g) for g, _ in a) == [1, 6, 6, 6] and any(mb == [] for _, mb in b)  # one rank idle
    # the single-process reference: the same steps, the same global batches
    monkeypatch.setattr(torch.optim, "Adam", torch.optim.SGD)
    batches = []
    real_call = sampling.BucketedBatches.__call__
    monkeypatch.setattr(sampling.BucketedBatches, "__call__", lambda self, s: batches.append(real_call(self, s).tolist())
                        or real_call(self, s))
    cfg = qt.QuestionParserConfig.from_profile(paths["data"], "tiny", **QP)
    qt.train_question_parser(cfg, tmp_path / "single", progress=False)
    assert batches == [g for g, _ in a]
    qt.train_question_parser(qt.QuestionParserConfig.from_profile(paths["data"], "tiny", **(QP | {"steps": 0})),
                             tmp_path / "init", progress=False)
    init = load_checkpoint(tmp_path / "init" / QUESTION_CHECKPOINT)["state_dict"]
    single = load_checkpoint(tmp_path / "single" / QUESTION_CHECKPOINT)["state_dict"]
    ddp = load_checkpoint(Path(paths["sgd"]) / QUESTION_CHECKPOINT, kind=QUESTION_KIND)["state_dict"]
    # a DDP checkpoint is the bare model's: no "module." prefix, loads in a single process
    assert ddp.keys() == single.keys() and not any(k.startswith("module.") for k in ddp)
    load_question_parser(paths["sgd"])
    # the two ranks hold identical weights, which are the checkpoint's
    for k, v in recs[0]["sgd"]["params"].items():
        assert torch.equal(v, recs[1]["sgd"]["params"][k]) and torch.equal(v, ddp[k]), k
    # 4 SGD steps (an uneven 1 + 0 split among them) moved the weights as one process did
    moved = 0.0
    for k in single:
        step_single, step_ddp = single[k] - init[k], ddp[k] - init[k]
        moved = max(moved, float(step_single.abs().max()))
        torch.testing.assert_close(step_ddp, step_single, rtol=1e-4, atol=1e-6, msg=lambda m: f"{k}: {m}")
    assert moved > 1e-3


@needs_gloo
def test_only_rank_0_writes_the_run_directory(qp_runs):
    recs, paths = qp_runs
    out = Path(paths["sgd"])
    assert [r["sgd"]["run"] for r in recs] == ["RunDir", "QuietRun"]
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "question_parser.pt", "question_parser.pt.sha256",
                                                     "tb", "train.log"]
    assert len(json.loads((out / "config.json").read_text())["history"]) == 1
    assert len(list((out / "tb").iterdir())) == 1  # one event file: one writer
    log = (out / "train.log").read_text()
    assert log.count("supervised step 2 loss=") == 1 and log.count("supervised step 4 val (4 questions)") == 1
    assert log.count("train questions") == 1


@needs_gloo
def test_reinforce_runs_data_parallel(qp_runs):
    from nsvqa.training.checkpoint import load_checkpoint
    from nsvqa.training.loading import QUESTION_CHECKPOINT as CHECKPOINT, QUESTION_KIND as KIND

    recs, paths = qp_runs
    ck = load_checkpoint(Path(paths["rl"]) / CHECKPOINT, kind=KIND)
    assert ck["train_state"]["stage"] == "reinforce" and ck["train_state"]["step"] == 2
    for k, v in recs[0]["rl"]["params"].items():
        assert torch.equal(v, recs[1]["rl"]["params"][k]) and torch.equal(v, ck["state_dict"][k]), k
    assert (Path(paths["rl"]) / "train.log").read_text().count("reinforce step 2 reward=") == 1


@needs_gloo
def test_a_global_batch_that_does_not_divide_is_refused_before_anything_is_written(qp_runs):
    recs, paths = qp_runs
    for r in recs:
        assert r["error_batch"].startswith("batch=5 is the global batch of a step and must be divisible by the "
                                           "world size 2")
        assert r["error_det_batch"].startswith("det_batch=3 is the global batch")
        assert r["group_alive"]  # a group the caller made is left to the caller
    assert not Path(paths["bad"]).exists()


# ------------------------------------------------------------------------------------ scene parser

@needs_gloo
def test_scene_parser_trains_data_parallel(tmp_path_factory, require_renderer):
    from nsvqa.training.checkpoint import load_checkpoint
    from nsvqa.generation.dataset import generate_split, job_for
    from nsvqa.training.loading import detector_from_checkpoint, head_from_checkpoint
    from nsvqa.training.scene_parser import _batch_indices

    tmp = tmp_path_factory.mktemp("ddp_scene")
    for split, n, seed in (("train", 4, 3), ("val", 2, 4)):
        job = job_for(tmp / "data", "mid", split, n, seed, 64, 48)
        generate_split(job, progress=False)
    out = tmp / "run"
    recs = _torchrun("scene_parser", {"data": str(job.folder), "out": str(out)}, tmp)
    # detector: each rank trained on its image of the step's two, the images a function of (seed, step)
    for step in range(2):
        glob = _batch_indices(4, 2, step, 0)
        assert [r["seen"][step] for r in recs] == [(glob, glob[:1]), (glob, glob[1:])]
    # attribute head: halves of the step's 16 crops
    assert all(len(g) == 16 and len(m) == 8 for r in recs for g, m in r["seen"][2:])
    assert [r["run"] for r in recs] == ["RunDir", "QuietRun"]
    assert not any(r["group_alive"] for r in recs)  # the group train_scene_parser made is gone
    names = sorted(p.name for p in out.iterdir())
    assert [n for n in names if not n.endswith(".sha256")] == [
        "attributes.pt", "config.json", "crops_train_det.pt", "crops_train_gt.pt", "crops_val_gt.pt", "detector.pt",
        "tb", "train.log"]
    assert {"attributes.pt.sha256", "detector.pt.sha256"} <= set(names)  # checkpoints carry their sidecar
    assert len(list((out / "tb").iterdir())) == 1
    log = (out / "train.log").read_text()
    assert log.count("detector step 0 ") == 1 and log.count("attributes epoch 1 val ") == 1
    for name, rebuild in (("detector", detector_from_checkpoint), ("attributes", head_from_checkpoint)):
        ck = load_checkpoint(out / f"{name}.pt", kind=name)
        assert not any(k.startswith("module.") for k in ck["state_dict"])
        for k, v in recs[0][name].items():  # DDP kept the ranks' parameters equal
            assert torch.equal(v, recs[1][name][k]), (name, k)
            assert torch.equal(v, ck["state_dict"][k]), (name, k)
        rebuild(ck)  # loads in a single process
    assert load_checkpoint(out / "detector.pt")["train_state"]["step"] == 2


if __name__ == "__main__":  # a torchrun worker (see _torchrun)
    _worker_main(sys.argv[1:])
