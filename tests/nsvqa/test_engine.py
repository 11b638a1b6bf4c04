"""The training engine (nsvqa.training.engine) and the seeded samplers (nsvqa.training.sampling), on
a toy linear regression: tiny, CPU, no data files."""
from __future__ import annotations

import math
import os
import signal

import numpy as np
import pytest
import torch

from nsvqa.training.distributed import DistInfo
from nsvqa.training import NonFiniteLoss, RunDir, warmup_cosine
from nsvqa.training import engine
from nsvqa.training.checkpoint import load_checkpoint, save_checkpoint
from nsvqa.training.engine import Progress, StepResult, record_seconds, restore_train_state, train_steps
from nsvqa.training.sampling import BucketedBatches, GroupBatches, PermutationBatches


class FakeRun:
    """Records what the loop writes to a run directory."""

    def __init__(self):
        self.scalar_calls: list[tuple[str, dict, int]] = []
        self.lines: list[str] = []

    def scalars(self, prefix, values, step):
        self.scalar_calls.append((prefix, dict(values), step))

    def log(self, msg):
        self.lines.append(msg)


def toy(seed: int = 0, n: int = 32):
    """(model, data x (n, 3), targets y (n, 1)) of a noiseless linear problem."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 1), x, y


def step_fn_of(model, x, y, batch=8, seed=0):
    sampler = PermutationBatches(len(x), batch, seed, stride=7919, drop_last=True)

    def step_fn(step):
        idx = sampler(step)
        loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
        return loss, {"loss": loss}

    return step_fn


def full_loss(model, x, y) -> float:
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(model(x), y))


# ------------------------------------------------------------------------------------ the loop

def test_the_loop_lowers_the_loss_and_logs_scalars_with_lr():
    model, x, y = toy()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(40, 2))
    run = FakeRun()
    before = full_loss(model, x, y)
    end = train_steps(step_fn_of(model, x, y), opt, run, start=0, total=40, scheduler=sched, phase="train",
                      log_every=10, progress=False)
    assert full_loss(model, x, y) < 0.05 * before
    assert [s for _, _, s in run.scalar_calls] == [0, 10, 20, 30, 39]  # every 10 and the last step
    prefix, values, _ = run.scalar_calls[-1]
    assert prefix == "train" and set(values) == {"loss", "lr"}
    assert values["lr"] == pytest.approx(sched.get_last_lr()[0])
    assert end.step == 40 and end.final and end.trained and end.values["loss"] == values["loss"]


def test_a_non_finite_loss_raises_naming_the_step_and_every_value_before_any_update():
    model, x, y = toy()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w_before = {}

    def step_fn(step):
        loss = torch.nn.functional.mse_loss(model(x), y)
        if step == 3:
            w_before.update({k: v.clone() for k, v in model.state_dict().items()})
            return loss * float("nan"), {"loss": loss * float("nan"), "aux": 1.5}
        return loss, {"loss": loss, "aux": 1.5}

    saved = []
    with pytest.raises(NonFiniteLoss, match=r"non-finite loss at step 3: loss=nan, aux=1\.5"):
        train_steps(step_fn, opt, FakeRun(), start=0, total=10, eval_every=1, on_checkpoint=saved.append,
                    progress=False)
    assert [p.step for p in saved] == [1, 2, 3]  # steps 0..2 ran and were checkpointed
    assert all(torch.equal(w_before[k], v) for k, v in model.state_dict().items())  # step 3 did not update


def test_the_checkpoint_callback_runs_every_eval_every_steps_and_at_the_last():
    model, x, y = toy()
    calls: list[tuple[int, bool, bool]] = []
    train_steps(step_fn_of(model, x, y), torch.optim.SGD(model.parameters(), lr=0.1), FakeRun(), start=0, total=10,
                eval_every=4, on_checkpoint=lambda p: calls.append((p.step, p.final, p.trained)), progress=False)
    assert calls == [(4, False, True), (8, False, True), (10, True, True)]
    calls.clear()  # resumed at 5: the steps it does count, not the ones before
    train_steps(step_fn_of(model, x, y), torch.optim.SGD(model.parameters(), lr=0.1), FakeRun(), start=5, total=10,
                eval_every=4, on_checkpoint=lambda p: calls.append((p.step, p.final, p.trained)), progress=False)
    assert calls == [(8, False, True), (10, True, True)]


def test_stop_ends_the_run_after_the_checkpoint_it_answers_true_at():
    model, x, y = toy()
    calls: list[int] = []
    asked: list[int] = []
    state = train_steps(step_fn_of(model, x, y), torch.optim.SGD(model.parameters(), lr=0.1), FakeRun(), start=0,
                        total=20, eval_every=4, on_checkpoint=lambda p: calls.append(p.step),
                        stop=lambda p: asked.append(p.step) or p.step >= 8, progress=False)
    assert calls == [4, 8] and asked == [4, 8] and state.step == 8
    calls.clear()  # never true: every step, and not asked after the last one
    asked.clear()
    train_steps(step_fn_of(model, x, y), torch.optim.SGD(model.parameters(), lr=0.1), FakeRun(), start=0, total=10,
                eval_every=4, on_checkpoint=lambda p: calls.append(p.step), stop=lambda p: asked.append(p.step) or False,
                progress=False)
    assert calls == [4, 8, 10] and asked == [4, 8]


def test_zero_steps_still_ask_for_a_checkpoint_unless_one_exists(tmp_path):
    model, x, y = toy()
    calls: list[Progress] = []
    path = tmp_path / "model.pt"
    kw = dict(start=0, total=0, eval_every=4, on_checkpoint=calls.append, checkpoint_path=path, progress=False)
    end = train_steps(step_fn_of(model, x, y), torch.optim.SGD(model.parameters(), lr=0.1), FakeRun(), **kw)
    assert len(calls) == 1 and calls[0] is end
    assert (end.step, end.final, end.trained, end.values) == (0, True, False, {})
    path.write_bytes(b"an earlier run's checkpoint")
    train_steps(step_fn_of(model, x, y), torch.optim.SGD(model.parameters(), lr=0.1), FakeRun(), **kw)
    assert len(calls) == 1  # kept: nothing trained, nothing to replace it with
    # a finished run resumed (start >= total) with its checkpoint there: nothing to do
    train_steps(step_fn_of(model, x, y), torch.optim.SGD(model.parameters(), lr=0.1), FakeRun(),
                **(kw | {"start": 7, "total": 5}))
    assert len(calls) == 1


def _run(folder, stop_at: int | None, resume: bool, restore_rng: bool = True,
         total: int = 12, signal_at: int | None = None) -> dict[str, torch.Tensor]:
    """Train the toy (Adam, warm-up + cosine, clipping, a random jitter of the loss drawn from the
    global RNG as dropout would), checkpointing every 4 steps to ``folder/ck.pt`` (``finished`` at the
    last step, as every trainer saves); ``stop_at``: stop right after the checkpoint of that step;
    ``resume``: continue from ``folder/ck.pt``."""
    folder.mkdir(parents=True, exist_ok=True)
    model, x, y = toy()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(total, 3))
    path = folder / "ck.pt"
    start, extra = 0, {}
    if resume:
        ck = load_checkpoint(path, kind="toy")
        model.load_state_dict(ck["state_dict"])
        if not restore_rng:
            del ck["train_state"]["rng"]
        start, extra = restore_train_state(ck["train_state"], opt, sched), ck["extra"]

    def step_fn(step):
        if step == signal_at:  # as `kill PID` would, mid-step
            os.kill(os.getpid(), signal.SIGTERM)
        idx = BucketedBatches(np.arange(len(x)), 8, seed=3)(step)
        jitter = 1.0 + 0.01 * torch.rand(())
        loss = torch.nn.functional.mse_loss(model(x[idx]) * jitter, y[idx])
        return loss, {"loss": loss}

    class Stop(Exception):
        pass

    def checkpoint(p: Progress):
        record_seconds(extra, p)
        save_checkpoint(path, kind="toy", config={}, state_dict=model.state_dict(), vocabularies={}, extra=extra,
                        train_state={"step": p.step, "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                                     "rng": torch.get_rng_state()}, finished=p.final)
        if p.step == stop_at:
            raise Stop

    try:
        train_steps(step_fn, opt, FakeRun(), start=start, total=total, scheduler=sched, clip_params=model.parameters(),
                    clip_norm=1.0, eval_every=4, on_checkpoint=checkpoint, checkpoint_path=path,
                    seconds_before=float(extra.get("train_seconds", 0.0)), progress=False)
    except Stop:
        pass
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_a_run_resumed_from_step_k_ends_with_the_weights_of_an_uninterrupted_one(tmp_path):
    straight = _run(tmp_path / "a", None, False)
    for k, folder in ((4, tmp_path / "b"), (8, tmp_path / "c")):
        _run(folder, k, False)
        assert torch.load(folder / "ck.pt", weights_only=True)["train_state"]["step"] == k
        resumed = _run(folder, None, True)
        assert all(torch.equal(straight[n], resumed[n]) for n in straight), k
        ck = torch.load(folder / "ck.pt", weights_only=True)
        assert ck["train_state"]["step"] == 12
        assert ck["extra"]["step_seconds"] == pytest.approx(ck["extra"]["train_seconds"] / 12)
    # the test can fail: without the RNG of the checkpoint the resumed steps draw other jitters
    _run(tmp_path / "d", 4, False)
    other = _run(tmp_path / "d", None, True, restore_rng=False)
    assert not all(torch.equal(straight[n], other[n]) for n in straight)


def test_a_finished_run_keeps_no_optimizer_state_loads_and_reruns_as_a_no_op(tmp_path, caplog):
    straight = _run(tmp_path / "a", None, False)
    path = tmp_path / "a" / "ck.pt"
    ck = load_checkpoint(path, kind="toy")
    assert ck["train_state"]["finished"] is True and ck["train_state"]["step"] == 12
    assert "optimizer" not in ck["train_state"] and "scheduler" in ck["train_state"] and "rng" in ck["train_state"]
    assert all(torch.equal(straight[n], ck["state_dict"][n]) for n in straight)
    # a checkpoint mid-run keeps it (the run resumes from there exactly, as above)
    _run(tmp_path / "b", 8, False)
    mid = load_checkpoint(tmp_path / "b" / "ck.pt", kind="toy")["train_state"]
    assert "optimizer" in mid and "finished" not in mid
    # the same run again: nothing trained, nothing written
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    again = _run(tmp_path / "a", None, True)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert all(torch.equal(straight[n], again[n]) for n in straight)
    # asked for more steps, it goes on from the weights with a fresh optimizer, and says so
    with caplog.at_level("WARNING", logger="nsvqa.training.engine"):
        _run(tmp_path / "a", None, True, total=14)
    assert "resumed at step 12 without optimizer state" in caplog.text
    assert load_checkpoint(path, kind="toy")["train_state"]["step"] == 14


def test_gradients_are_clipped_to_the_norm():
    model, x, y = toy()
    big = lambda step: (1e4 * torch.nn.functional.mse_loss(model(x), y), {"loss": 0.0})  # noqa: E731
    for clip, expect_clipped in ((0.5, True), (None, False)):
        model, x, y = toy()
        w0 = model.weight.detach().clone()
        train_steps(big, torch.optim.SGD(model.parameters(), lr=1.0), FakeRun(), start=0, total=1,
                    clip_params=model.parameters(), clip_norm=clip, progress=False)
        norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters()))
        moved = float((model.weight.detach() - w0).norm())
        if expect_clipped:
            assert norm == pytest.approx(0.5, rel=1e-5) and moved <= 0.5 + 1e-6
        else:
            assert norm > 100 and moved > 100


def test_phases_prefix_scalars_reset_smoothing_and_end_with_a_checkpoint():
    model, x, y = toy()
    run = FakeRun()
    seen: list[tuple[int, str, float, float]] = []
    vals = iter([4.0, 2.0, 3.0, 10.0, 20.0, 30.0])

    def step_fn(step):
        loss = torch.nn.functional.mse_loss(model(x), y)
        return StepResult(loss, {"v": next(vals)}, info={"stage": step // 2})

    train_steps(step_fn, torch.optim.SGD(model.parameters(), lr=0.01), run, start=0, total=6,
                phase=lambda s: "pre" if s < 3 else "fine", log_every=100, log_values=True,
                on_checkpoint=lambda p: seen.append((p.step, p.phase, p.values["v"], p.smoothed["v"])),
                progress=False)
    # ends of phases: steps 3 and 6; the smoothing restarts with the new phase
    assert seen == [(3, "pre", 3.0, 0.95 * (0.95 * 4.0 + 0.05 * 2.0) + 0.05 * 3.0),
                    (6, "fine", 30.0, 0.95 * (0.95 * 10.0 + 0.05 * 20.0) + 0.05 * 30.0)]
    # scalars at step 0 (0 % log_every) and at the last step of each phase, info included
    assert [(p, s, v) for p, v, s in run.scalar_calls] == [("pre", 0, {"v": 4.0, "stage": 0}),
                                                           ("pre", 2, {"v": 3.0, "stage": 1}),
                                                           ("fine", 5, {"v": 30.0, "stage": 2})]
    assert run.lines == ["pre step 0 v=4.0000", "pre step 2 v=3.0000", "fine step 5 v=30.0000"]


def test_values_are_averaged_over_ranks_before_the_check_and_only_rank_0_checkpoints(monkeypatch):
    model, x, y = toy()
    rank1 = DistInfo(rank=1, world_size=2, local_rank=1, is_main=False)
    reduced: list[tuple[dict, object]] = []

    def fake_mean(info, values, keys=None):  # the other rank had a NaN at step 2
        reduced.append((dict(values), keys))
        return {k: (float("nan") if len(reduced) == 3 else v) for k, v in values.items()}

    monkeypatch.setattr(engine, "mean_over_ranks", fake_mean)
    calls = []

    def step_fn(step):
        loss = torch.nn.functional.mse_loss(model(x), y)
        return StepResult(loss, {"loss": loss}, keys=["loss", "other"])

    with pytest.raises(NonFiniteLoss, match="step 2: loss=nan"):
        train_steps(step_fn, torch.optim.SGD(model.parameters(), lr=0.01), FakeRun(), start=0, total=5, eval_every=1,
                    on_checkpoint=calls.append, dist=rank1, rank_seed=7, progress=False)
    assert len(reduced) == 3 and reduced[0][1] == ["loss", "other"] and calls == []
    # values a step already reduced itself are left alone
    reduced.clear()
    train_steps(lambda s: StepResult(torch.nn.functional.mse_loss(model(x), y), {"loss": 1.0}, reduced=True),
                torch.optim.SGD(model.parameters(), lr=0.01), FakeRun(), start=0, total=2, dist=rank1,
                progress=False)
    assert reduced == []


def test_restore_train_state_takes_what_the_state_holds():
    model, _, _ = toy()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5)
    assert restore_train_state({}, opt, sched) == 0
    rng = torch.get_rng_state()
    a = torch.rand(3)
    other = torch.optim.Adam(model.parameters(), lr=0.7)
    assert restore_train_state({"step": 9, "optimizer": other.state_dict(), "rng": rng}, opt, sched) == 9
    assert opt.param_groups[0]["lr"] == 0.7 and torch.equal(torch.rand(3), a)


def test_run_dir_is_a_run_for_the_loop(tmp_path):
    model, x, y = toy()
    run = RunDir(tmp_path / "run", {"seed": 0})
    try:
        train_steps(step_fn_of(model, x, y), torch.optim.SGD(model.parameters(), lr=0.1), run, start=0, total=3,
                    log_values=True, progress=False)
    finally:
        run.close()
    assert "train step 0 loss=" in (tmp_path / "run" / "train.log").read_text()
    assert any((tmp_path / "run" / "tb").iterdir())


# ------------------------------------------------------------------------------------ samplers

def test_bucketed_batches_depend_on_seed_and_step_only():
    lengths = np.random.default_rng(0).integers(1, 20, size=23)
    forward = BucketedBatches(lengths, 4, seed=5)
    seq = [forward(s).tolist() for s in range(18)]  # three epochs of 6 steps
    backward = BucketedBatches(lengths, 4, seed=5)
    assert [backward(s).tolist() for s in reversed(range(18))] == seq[::-1]
    assert BucketedBatches(lengths, 4, seed=5)(13).tolist() == seq[13]  # a resume at step 13
    for e in range(3):  # each epoch covers every item once
        assert sorted(sum(seq[6 * e:6 * (e + 1)], [])) == list(range(23))
    assert seq[:6] != seq[6:12] and seq != [BucketedBatches(lengths, 4, seed=6)(s).tolist() for s in range(18)]
    with pytest.raises(ValueError, match="no questions"):
        BucketedBatches(np.zeros(0, dtype=np.int64), 4, seed=0)


def test_permutation_batches_are_the_per_epoch_permutations_of_seed_times_stride_plus_epoch():
    def perm(seed, stride, epoch, n):
        return torch.randperm(n, generator=torch.Generator().manual_seed(seed * stride + epoch)).tolist()

    # a stream across epochs: batch 3 of 5 items, step 1 straddles epochs 0 and 1
    stream = PermutationBatches(5, 3, 2, stride=100003, drop_last=False)
    flat = perm(2, 100003, 0, 5) + perm(2, 100003, 1, 5) + perm(2, 100003, 2, 5)
    assert [stream(s).tolist() for s in range(5)] == [flat[3 * s:3 * s + 3] for s in range(5)]
    assert PermutationBatches(5, 3, 2, stride=100003, drop_last=False)(3).tolist() == flat[9:12]  # from any start
    # epoch by epoch, the short last batch dropped: 7 items at batch 3 -> 2 steps an epoch
    epochs = PermutationBatches(7, 3, 1, stride=7919, drop_last=True)
    assert epochs.steps_per_epoch == 2
    assert [epochs(s).tolist() for s in range(4)] == [perm(1, 7919, 0, 7)[:3], perm(1, 7919, 0, 7)[3:6],
                                                      perm(1, 7919, 1, 7)[:3], perm(1, 7919, 1, 7)[3:6]]
    assert PermutationBatches(2, 16, 0, stride=7919, drop_last=True)(0).tolist() == perm(0, 7919, 0, 2)  # n < batch


def test_thinned_permutation_batches_keep_every_other_item_and_a_fresh_share_of_the_thinned_each_epoch():
    thinned = torch.arange(4, 20)  # 16 of 20 items thinned to a quarter: 4 + 4 items an epoch
    sampler = PermutationBatches(20, 3, 5, stride=7919, drop_last=True, thinned=thinned, share=0.25)
    assert sampler.steps_per_epoch == 2
    epochs = [sampler.permutation(e).tolist() for e in range(3)]
    for items in epochs:
        assert len(items) == 8 and {0, 1, 2, 3} <= set(items) and len(set(items) - {0, 1, 2, 3}) == 4
    assert len({tuple(sorted(x)) for x in epochs}) == 3  # each epoch draws its parts afresh
    # the order is the epoch's permutation with the dropped items left out; a resumed run sees the same
    full = torch.randperm(20, generator=torch.Generator().manual_seed(5 * 7919 + 1)).tolist()
    assert epochs[1] == [i for i in full if i in set(epochs[1])]
    again = PermutationBatches(20, 3, 5, stride=7919, drop_last=True, thinned=thinned, share=0.25)
    assert again(3).tolist() == sampler(3).tolist() == epochs[1][3:6]
    # share 1 draws nothing more: the plain batches
    plain = PermutationBatches(20, 3, 5, stride=7919, drop_last=True)
    whole = PermutationBatches(20, 3, 5, stride=7919, drop_last=True, thinned=thinned, share=1.0)
    assert [whole(s).tolist() for s in range(12)] == [plain(s).tolist() for s in range(12)]
    with pytest.raises(ValueError, match="share"):
        PermutationBatches(20, 3, 5, stride=7919, drop_last=True, thinned=thinned, share=0.0)
    with pytest.raises(ValueError, match="drop_last"):
        PermutationBatches(20, 3, 5, stride=7919, drop_last=False, thinned=thinned, share=0.5)


def test_group_batches_follow_the_stages_and_depend_on_seed_and_step_only():
    easy = {0: np.array([0, 1]), 1: np.array([2])}
    hard = {0: np.array([0, 1, 3]), 1: np.array([2, 4, 5]), 2: np.array([6, 7])}
    sampler = GroupBatches([(2.5, easy), (10, hard)], seed=4, groups_per_batch=2, items_per_group=2)
    assert [sampler.stage(s) for s in (0, 2, 3, 9, 50)] == [0, 0, 1, 1, 1]
    seq = [sampler(s) for s in range(8)]
    assert all(set(b) <= {0, 1, 2} for b in seq[:3]) and any(set(b) - {0, 1, 2} for b in seq[3:])
    assert all(len(b) == len(set(b)) <= 4 for b in seq)
    again = GroupBatches([(2.5, easy), (10, hard)], seed=4, groups_per_batch=2, items_per_group=2)
    assert [again(s) for s in reversed(range(8))] == seq[::-1]
    assert seq != [GroupBatches([(2.5, easy), (10, hard)], 5, 2, 2)(s) for s in range(8)]
    with pytest.raises(ValueError, match="no stage"):
        GroupBatches([], 0, 1, 1)


# ------------------------------------------------------------------------------------ threads

def test_more_threads_when_raises_the_thread_count_at_the_first_step_after_ready_and_not_before():
    model, x, y = toy()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    inner = step_fn_of(model, x, y)
    seen: list[int] = []

    def step_fn(step):
        seen.append(torch.get_num_threads())
        return inner(step)

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # the sibling job "ends" once two steps have run
        with engine.more_threads_when(lambda: len(seen) >= 2, 2):
            train_steps(step_fn, opt, FakeRun(), start=0, total=4, progress=False)
            assert not engine._THREAD_RULES  # applied once, then dropped
        assert seen == [1, 1, 2, 2]
        # a rule never ready changes nothing, and leaving the block drops it
        torch.set_num_threads(1)
        seen.clear()
        with engine.more_threads_when(lambda: False, 2):
            train_steps(step_fn, opt, FakeRun(), start=4, total=6, progress=False)
        assert seen == [1, 1] and not engine._THREAD_RULES
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("training", [True, False])
def test_evaluating_restores_the_mode_and_turns_autograd_off(training):
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5)).train(training)
    with engine.evaluating(net):
        assert not net.training and not net[1].training
        assert not net(torch.ones(1, 2)).requires_grad
    assert net.training is training and net[1].training is training
    assert torch.is_grad_enabled()
    with pytest.raises(RuntimeError, match="boom"):
        with engine.evaluating(net):
            raise RuntimeError("boom")
    assert net.training is training and torch.is_grad_enabled()


def test_sigterm_mid_run_checkpoints_at_the_step_and_a_rerun_ends_as_an_uninterrupted_one(tmp_path):
    from nsvqa.training.engine import TrainingInterrupted

    whole = _run(tmp_path / "whole", None, resume=False)
    with pytest.raises(TrainingInterrupted) as e:
        _run(tmp_path / "cut", None, resume=False, signal_at=5)  # between the checkpoints of steps 4 and 8
    assert (e.value.signum, e.value.step, e.value.total) == (signal.SIGTERM, 6, 12)
    assert str(e.value) == "interrupted (SIGTERM) at step 6 of 12 of train, checkpoint saved"
    assert load_checkpoint(tmp_path / "cut" / "ck.pt", kind="toy")["train_state"]["step"] == 6
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler was the loop's only
    resumed = _run(tmp_path / "cut", None, resume=True)
    for k in whole:
        assert torch.equal(whole[k], resumed[k]), k


def test_a_script_interrupted_prints_one_line_and_exits_128_plus_the_signal(tmp_path, capsys):
    from nsvqa.training.cli import interruptible

    def training():
        _run(tmp_path / "run", None, resume=False, signal_at=2)
        return 0

    assert interruptible("train_x.py", training) == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert err == ("train_x.py: interrupted (SIGTERM) at step 3 of 12 of train, checkpoint saved: rerun the same "
                   "command to resume\n")

    def elsewhere():  # outside the training loop: no checkpoint to speak of, the same line otherwise
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    assert interruptible("train_x.py", elsewhere) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "train_x.py: interrupted (SIGTERM): rerun the same command to resume\n"
