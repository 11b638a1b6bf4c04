"""The one training loop of the project: every trainer runs its steps through :func:`train_steps`.

A trainer supplies what differs: a *step function* (step -> the loss to backpropagate and the
values to check and log: it builds the batch of the step, from a sampler of
:mod:`nsvqa.training.sampling`, and runs the forward pass), the optimizer and scheduler, and a
*checkpoint callback* (validation and saving). The loop does the rest, in this order at each step::

    claim_threads()                          # only inside more_threads_when (a sibling job ended)
    result = step_fn(step)                   # forward; values as floats
    values = mean over ranks (DDP)           # so that every rank stops together
    check_finite(values, step)               # NonFiniteLoss naming the step and every value
    zero_grad, backward, clip, optimizer step, scheduler step
    smoothed values (0.95 * old + 0.05 * new, reset when the phase changes), progress bar
    every log_every steps and at the end of a phase: scalars <phase>/<key> (and lr)
    every eval_every steps, at the end of a phase and at the last step: on_checkpoint(progress)

and when no step is left to do (zero steps asked) it still calls ``on_checkpoint`` once, so that
a run always leaves a loadable checkpoint. The callback saves with ``finished=progress.final``
(:func:`nsvqa.training.checkpoint.save_checkpoint`): the last checkpoint of a run keeps no
optimizer state. A run resumed past its first step with an empty optimizer state (a finished
run's checkpoint asked for more steps) is logged as a warning: its optimizer starts afresh. In a
data-parallel job (a ``DistInfo`` with ``world_size > 1``) ranks other than 0 get their own random
stream (``rank_seed``), only rank 0 runs ``on_checkpoint``, and every rank waits for it at the end.

Resuming stays the trainer's (what it restores differs), with the shared pieces here:
:func:`restore_train_state` (optimizer, scheduler, RNG of a checkpoint's ``train_state``) and the
time bookkeeping (:class:`Stopwatch`, :func:`record_seconds`).
"""
from __future__ import annotations

import logging
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import torch
from tqdm import tqdm

from nsvqa.training import RunDir, check_finite, seed_everything
from nsvqa.training.distributed import (DistInfo, barrier, check_global_batch, cleanup, init_from_env, mean_over_ranks,
                                       open_run, run_on_main, seed_rank)

log = logging.getLogger(__name__)


def native_bf16(device: torch.device | str) -> bool:
    """Whether ``device`` computes bfloat16 natively, so that autocast to it is faster than float32:
    a CUDA device that supports bf16, a CPU with AVX512-BF16 or AMX. Elsewhere bf16 is emulated
    (measured on an AMD EPYC without it: the mini detector took 14 s per iteration under bf16
    autocast against 1.5 s in float32)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if dev.type == "cpu":
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    return False


# (ready, threads) rules of :func:`more_threads_when`, checked by :func:`claim_threads`
_THREAD_RULES: list[tuple[Callable[[], bool], int]] = []


@contextmanager
def more_threads_when(ready: Callable[[], bool], threads: int) -> Iterator[None]:
    """Inside the block, the training loop raises torch's intra-op threads to ``threads`` at the
    first step where ``ready()`` is true (:func:`claim_threads`, called by :func:`train_steps` on
    its own thread before each step: torch's thread count belongs to the thread that sets it).

    For a process that shares the CPU with a sibling job for a while: ``experiment.train_parsers``
    trains the question parser in a second process on one thread, and the scene parser takes every
    thread back as soon as that process ends, mid-stage. A different thread count may change the
    last bits of a float reduction, not what a step computes.
    """
    rule = (ready, int(threads))
    _THREAD_RULES.append(rule)
    try:
        yield
    finally:
        if rule in _THREAD_RULES:
            _THREAD_RULES.remove(rule)


def claim_threads() -> int:
    """Apply every :func:`more_threads_when` rule whose ``ready()`` is now true (and drop it);
    returns torch's thread count after."""
    for rule in list(_THREAD_RULES):
        ready, threads = rule
        if ready():
            _THREAD_RULES.remove(rule)
            if threads > torch.get_num_threads():
                log.info("training on %d threads from now (was %d)", threads, torch.get_num_threads())
                torch.set_num_threads(threads)
    return torch.get_num_threads()


class Interrupted(KeyboardInterrupt):
    """The process was asked to stop: Ctrl-C (SIGINT) or SIGTERM (``signum``); a script prints one
    line and exits with 128 + ``signum`` (:func:`nsvqa.training.cli.interruptible`)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signum)
        self.signum = int(signum)

    def __str__(self) -> str:
        return f"interrupted ({signal.Signals(self.signum).name})"


class TrainingInterrupted(Interrupted):
    """Training stopped by a signal after a checkpoint at the step it reached (:func:`train_steps`).

    Attributes:
        step, total: the steps done (what the checkpoint resumes from) and the run's steps.
        desc: what was training (the loop's description or phase).
    """

    def __init__(self, signum: int, step: int, total: int, desc: str):
        super().__init__(signum)
        self.step, self.total, self.desc = step, total, desc

    def __str__(self) -> str:
        return f"{super().__str__()} at step {self.step} of {self.total} of {self.desc}, checkpoint saved"


@contextmanager
def signals_caught(active: bool = True) -> Iterator[list[int]]:
    """Inside the block, SIGINT and SIGTERM are recorded in the yielded list instead of stopping
    the process, so that the loop can checkpoint before it stops; a second signal stops at once
    (KeyboardInterrupt). Only on the main thread, and when ``active``; the previous handlers come
    back after the block."""
    caught: list[int] = []
    if not active or threading.current_thread() is not threading.main_thread():
        yield caught
        return

    def handler(signum, _frame):
        if caught:
            raise KeyboardInterrupt
        caught.append(signum)  # nothing printed here: the script prints one line when the loop has stopped

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield caught
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@dataclass
class StepResult:
    """What a step function returns (a ``(loss, values)`` tuple is accepted too).

    Attributes:
        loss: the scalar tensor to backpropagate (this rank's part in a data-parallel job).
        values: name -> float (or 0-d tensor) of the step: checked for finiteness, smoothed,
            written as scalars and shown to the checkpoint callback (e.g. ``{"loss": ...}``).
        info: name -> number shown and written as scalars but neither checked nor smoothed
            (a curriculum stage, a reward baseline).
        reduced: the values already are the whole global batch's (the step reduced them itself):
            no mean over ranks.
        keys: the keys every rank reduces, in this order (default: ``sorted(values)``): a key some
            rank lacks gets the mean over the ranks that have it.
    """

    loss: torch.Tensor
    values: Mapping[str, Any]
    info: Mapping[str, Any] = field(default_factory=dict)
    reduced: bool = False
    keys: Sequence[str] | None = None


class Stopwatch:
    """Training time that survives a resume.

    Args:
        previous: seconds the run had trained before (from its checkpoint), counted in.
    """

    def __init__(self, previous: float = 0.0):
        self.start = time.time() - float(previous)

    def seconds(self) -> float:
        """Seconds since the start, plus ``previous``."""
        return time.time() - self.start


@dataclass
class Progress:
    """Where the loop stands, as the checkpoint callback and the postfix function see it.

    Attributes:
        step: steps done (the step a checkpoint written now resumes from).
        total: steps of the whole run.
        phase: the phase of the last step (the scalar prefix).
        values: the last step's values (after the mean over ranks); empty when no step ran.
        smoothed: exponential moving averages of the values over the phase (``0.95 * old +
            0.05 * new``, the first step's value to start).
        info: the last step's :attr:`StepResult.info`.
        final: ``step == total`` (or no step was left to do): the last call of the run.
        trained: False when no step ran (zero steps asked, or a finished run): the callback is
            asked for a loadable checkpoint of the model as it is.
        clock: the run's :class:`Stopwatch`.
    """

    step: int
    total: int
    phase: str
    values: dict[str, float]
    smoothed: dict[str, float]
    info: dict[str, Any]
    final: bool
    trained: bool
    clock: Stopwatch

    @property
    def seconds(self) -> float:
        """Training seconds so far (read now: validation time included)."""
        return self.clock.seconds()


def restore_train_state(train_state: Mapping[str, Any], optimizer: torch.optim.Optimizer,
                        scheduler: Any = None) -> int:
    """Restore a checkpoint's ``train_state`` in place; returns its ``step`` (0 without one).

    Args:
        train_state: ``{"step", "optimizer", "scheduler", "rng", ...}``; each part is optional
            (a zero-step checkpoint holds only the step).
        optimizer: gets ``train_state["optimizer"]`` when present.
        scheduler: an LR scheduler, or None; gets ``train_state["scheduler"]`` when present.

    The torch CPU RNG gets ``train_state["rng"]`` when present. The weights are the caller's to
    load (some models keep part of them outside the checkpoint).
    """
    if train_state.get("optimizer") is not None:
        optimizer.load_state_dict(train_state["optimizer"])
    if scheduler is not None and train_state.get("scheduler") is not None:
        scheduler.load_state_dict(train_state["scheduler"])
    if "rng" in train_state:
        torch.set_rng_state(train_state["rng"])
    return int(train_state.get("step", 0))


def record_seconds(extra: dict[str, Any], progress: Progress, key: str = "train_seconds",
                   per_step: bool = True) -> None:
    """Write the training time into a checkpoint's ``extra``: ``extra[key]`` = seconds so far and,
    with ``per_step``, ``extra["step_seconds"]`` = seconds / steps done (at least 1)."""
    extra[key] = progress.seconds
    if per_step:
        extra["step_seconds"] = extra[key] / max(1, progress.step)


@contextmanager
def evaluating(model: torch.nn.Module) -> Iterator[None]:
    """Inside the block ``model`` is in eval mode and autograd is off; after it the model is back in
    the mode it had (train or eval), also when the block raises."""
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was)


def _floats(values: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v.detach()) if torch.is_tensor(v) else float(v) for k, v in values.items()}


def _default_postfix(p: Progress) -> dict[str, str]:
    return {"loss": f"{p.smoothed['loss']:.4f}"} if "loss" in p.smoothed else {}


def train_steps(step_fn: Callable[[int], StepResult | tuple], optimizer: torch.optim.Optimizer, run: Any, *,
                start: int, total: int, scheduler: Any = None,
                clip_params: Iterable[torch.nn.Parameter] | None = None, clip_norm: float | None = None,
                phase: str | Callable[[int], str] = "train", log_every: int = 20, log_values: bool = False,
                eval_every: int | None = None, on_checkpoint: Callable[[Progress], None] | None = None,
                checkpoint_path: str | Path | None = None, dist: DistInfo | None = None,
                rank_seed: int | None = None, seconds_before: float = 0.0, progress: bool = True,
                desc: str | None = None, postfix: Callable[[Progress], Mapping[str, Any]] | None = None,
                stop: Callable[[Progress], bool] | None = None) -> Progress:
    """Run steps ``start .. total - 1`` of a training run (see the module docstring).

    Args:
        step_fn: ``step (int) -> StepResult | (loss, values)``: the forward pass of the step.
        optimizer: zeroed (``set_to_none``) before and stepped after each backward pass.
        run: the run directory (:class:`nsvqa.training.RunDir`, or a
            :class:`nsvqa.training.distributed.QuietRun` on ranks other than 0): ``scalars`` and ``log``.
        start: the first step (0, or the step of the checkpoint resumed from).
        total: the number of steps of the whole run.
        scheduler: stepped after the optimizer; its ``get_last_lr()[0]`` is logged as ``lr``.
        clip_params, clip_norm: gradients clipped to total norm ``clip_norm``
            (``torch.nn.utils.clip_grad_norm_``); None: no clipping.
        phase: the scalar prefix, or ``step -> prefix`` for a run of several phases: a phase
            change resets the smoothed values, and the last step of a phase writes scalars and
            calls ``on_checkpoint``.
        log_every: scalars every ``log_every`` steps (``step % log_every == 0``) and at the end of
            each phase; ``log_values`` also logs them as a line ``"<phase> step <s> k=v ..."``.
        eval_every: ``on_checkpoint`` after every ``eval_every``-th step (None: at the ends of
            phases only).
        on_checkpoint: ``Progress -> None``: validation and saving (rank 0 only). Also called
            once when no step is left to do, unless ``checkpoint_path`` exists already.
        checkpoint_path: the checkpoint ``on_checkpoint`` writes (for the zero-step rule above);
            None: the zero-step call always happens.
        dist: the data-parallel job (None: a single process).
        rank_seed: with ``dist``, ranks other than 0 reseed torch from ``(rank_seed, rank, start)``
            (:func:`nsvqa.training.distributed.seed_rank`).
        seconds_before: training seconds of the run before ``start`` (see :class:`Stopwatch`).
        progress: show a tqdm bar (rank 0 only) with description ``desc`` (default: the phase)
            and ``postfix(progress)`` (default: the smoothed ``loss``).
        stop: ``Progress -> bool``, asked on rank 0 after each ``on_checkpoint`` call (every rank
            gets its answer): True ends the run there, early (the callback has written what the
            run keeps). None: the run does every step.

    Returns:
        The :class:`Progress` after the last step.

    Ctrl-C (SIGINT) or SIGTERM during a step (a single process; :func:`signals_caught`) ends
    that step, calls ``on_checkpoint`` (unless the step was just checkpointed) and raises
    :class:`TrainingInterrupted`: a rerun resumes from that step.

    Raises:
        nsvqa.training.NonFiniteLoss: a value of a step (after the mean over ranks) is NaN or
            infinite; the message names the step and every value.
        TrainingInterrupted: a signal, after the checkpoint.
    """
    phase_of = phase if callable(phase) else (lambda _s, _p=phase: _p)
    params = list(clip_params) if clip_params is not None and clip_norm is not None else None
    main = dist is None or dist.is_main
    postfix = postfix or _default_postfix
    if dist is not None and rank_seed is not None:
        seed_rank(dist, rank_seed, start)
    clock = Stopwatch(seconds_before)
    state = Progress(step=start, total=total, phase=phase_of(start), values={}, smoothed={}, info={},
                     final=start >= total, trained=False, clock=clock)
    if 0 < start < total and not optimizer.state:
        log.warning("%s: resumed at step %d without optimizer state (a finished run's checkpoint, "
                    "asked for more steps): the optimizer starts afresh", desc or state.phase, start)
    bar = tqdm(range(start, total), desc=desc or state.phase, disable=not progress or not main, initial=start,
               total=total)
    checkpointed = False  # the last step done was checkpointed
    with signals_caught(active=dist is None or dist.world_size <= 1) as caught:
        try:
            for step in bar:
                if _THREAD_RULES:
                    claim_threads()
                result = step_fn(step)
                if not isinstance(result, StepResult):
                    result = StepResult(*result)
                values = _floats(result.values)
                if dist is not None and not result.reduced:
                    values = mean_over_ranks(dist, values, result.keys)  # every rank stops together
                check_finite(values, step)
                optimizer.zero_grad(set_to_none=True)
                result.loss.backward()
                if params is not None:
                    torch.nn.utils.clip_grad_norm_(params, clip_norm)
                optimizer.step()
                if scheduler is not None:
                    scheduler.step()
                name = phase_of(step)
                smooth = state.smoothed if state.trained and name == state.phase else {}  # a new phase starts afresh
                smooth = {k: v if k not in smooth else 0.95 * smooth[k] + 0.05 * v for k, v in values.items()}
                done = step + 1
                last_of_phase = done == total or phase_of(done) != name
                state = Progress(step=done, total=total, phase=name, values=values, smoothed=smooth,
                                 info=dict(result.info), final=done == total, trained=True, clock=clock)
                bar.set_postfix(postfix(state))
                if step % log_every == 0 or last_of_phase:
                    lr = {"lr": scheduler.get_last_lr()[0]} if scheduler is not None else {}
                    run.scalars(name, values | lr | state.info, step)
                    if log_values:
                        run.log(f"{name} step {step} " + " ".join(f"{k}={v:.4f}" for k, v in values.items()))
                checkpointed = False
                if main and on_checkpoint is not None and ((eval_every and done % eval_every == 0) or last_of_phase):
                    on_checkpoint(state)
                    checkpointed = True
                if stop is not None and not state.final and (
                        (eval_every and done % eval_every == 0) or last_of_phase):
                    halt = (run_on_main(dist, lambda s=state: bool(stop(s)), share=True) if dist is not None
                            else bool(stop(state)))
                    if halt:
                        break
                if caught:  # Ctrl-C or SIGTERM during this step: keep what was done, then stop
                    if main and on_checkpoint is not None and not checkpointed:
                        on_checkpoint(state)
                    raise TrainingInterrupted(caught[0], state.step, total, desc or state.phase)
        finally:
            bar.close()
    if start >= total and main and on_checkpoint is not None and (
            checkpoint_path is None or not Path(checkpoint_path).exists()):
        on_checkpoint(state)  # zero steps asked: the untrained model, still loadable
    if dist is not None:
        barrier(dist)  # what rank 0 wrote is there before any rank reads it
    return state


@contextmanager
def training_run(cfg: Any, out: str | Path, *, resume: bool, preflight: Callable[[], None] | None = None,
                 **global_batches: int) -> Iterator[tuple[Any, DistInfo]]:
    """The run a trainer fills, with its process group: seeds everything with ``cfg.seed``, joins
    the torchrun group when launched by one (``WORLD_SIZE`` > 1), checks that each of
    ``global_batches`` (name -> size) splits over the ranks, and opens the run directory ``out``
    (rank 0 writes ``config.json``; a resume must agree on ``cfg.MUST_MATCH``; the other ranks get
    a :class:`~nsvqa.training.distributed.QuietRun`). Yields ``(run, dist)``; closes the run and
    leaves the group it joined on exit, whatever happens.

    ``preflight()`` (the trainer's input checks) runs after the batch check, before the run
    directory is opened.

    Raises:
        ValueError: a global batch that does not split over the ranks, or a resume with a config
        that differs in a ``MUST_MATCH`` field; what ``preflight`` raises.
    """
    seed_everything(cfg.seed)
    dist = init_from_env(cfg.device)
    try:
        check_global_batch(dist.world_size, **global_batches)
        if preflight is not None:
            preflight()  # the trainer's input checks, before the run directory is written
        run = open_run(dist, lambda: RunDir(out, cfg, resume=resume, must_match=cfg.MUST_MATCH), out, cfg)
        try:
            yield run, dist
        finally:
            run.close()
    finally:
        if dist.owns_group:
            cleanup()


__all__ = ["Interrupted", "TrainingInterrupted", "signals_caught", "StepResult", "Progress", "Stopwatch", "native_bf16", "train_steps", "training_run", "restore_train_state",
           "record_seconds", "more_threads_when", "claim_threads", "evaluating"]
