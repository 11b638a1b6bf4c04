"""A learned baseline's run directory and checkpoint: the checkpoint's file name (:data:`CHECKPOINT`,
``RUN/baseline.pt``), its ``kind`` (``baseline_<name>``) and path, a config read back from a
checkpoint (:func:`config_from_dict`), :func:`open_run`, which checks the config, seeds
everything and opens the run directory (:class:`nsvqa.training.RunDir`: ``config.json``,
``train.log``, ``tb/``) of a new or resumed run, :func:`run_training`, which runs a trainer's work
in it, and :func:`resume_state`, what a resumed run restores. Shared by every baseline with a
checkpoint, those with a training loop of their own (mDETR, NSCL) and the prior ones included.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import torch

from nsvqa.training import RunDir, seed_everything
from nsvqa.training.checkpoint import load_checkpoint
from nsvqa.training.engine import restore_train_state

CHECKPOINT = "baseline.pt"


def checkpoint_kind(name: str) -> str:
    """The checkpoint ``kind`` of baseline ``name``."""
    return f"baseline_{name}"


def checkpoint_path(run: str | Path) -> Path:
    """``RUN/baseline.pt`` of a run directory; a path ending in ``.pt`` is the checkpoint itself."""
    run = Path(run)
    return run if run.suffix == ".pt" else run / CHECKPOINT


def config_from_dict(cls: type, d: dict, where: str) -> Any:
    """The config of class ``cls`` (a :class:`nsvqa.config.Config`) read from a checkpoint:
    ``cls.from_dict`` (ValueError naming ``where`` and the field)."""
    return cls.from_dict(d, f"{where}, config")


def open_run(name: str, cfg: Any, out: str | Path, *, resume: bool, total_steps: int) -> tuple[RunDir, dict | None, bool]:
    """Start or resume the training run of baseline ``name`` in ``out``: check ``cfg.model``, seed
    everything, open the run directory (``config.json``, ``train.log``, ``tb/``).

    Returns:
        (the run directory — the caller closes it, the checkpoint to continue from or None, whether
        that checkpoint already reached ``total_steps``: nothing is left to do).

    Raises:
        ValueError: ``cfg.model`` is not ``name``, or a resume with a config that differs in a field
            of ``cfg.MUST_MATCH``; nsvqa.training.checkpoint.CheckpointError: an unreadable checkpoint.
    """
    if cfg.model != name:
        raise ValueError(f"config field 'model' is {cfg.model!r}, expected {name!r}")
    seed_everything(cfg.seed)
    run = RunDir(out, cfg, resume=resume, must_match=cfg.MUST_MATCH)
    path = run.path / CHECKPOINT
    try:
        ck = load_checkpoint(path, kind=checkpoint_kind(name)) if resume and path.exists() else None
    except BaseException:
        run.close()
        raise
    done = ck is not None and int(ck["train_state"].get("step", 0)) >= total_steps
    if done:
        run.log(f"finished at step {ck['train_state'].get('step')} ({path}); nothing to do")
    return run, ck, done


def run_training(name: str, cfg: Any, out: str | Path, *, resume: bool, total_steps: int,
                 train: Callable[[RunDir, dict | None], None]) -> Path:
    """The training run of baseline ``name`` in ``out``: :func:`open_run`, then ``train(run,
    checkpoint)`` (the checkpoint to continue from, or None) unless that checkpoint already reached
    ``total_steps``; the run directory is closed after, also when ``train`` raises. Returns the run
    directory. Raises like :func:`open_run` and ``train``."""
    run, ck, done = open_run(name, cfg, out, resume=resume, total_steps=total_steps)
    try:
        if not done:
            train(run, ck)
    finally:
        run.close()
    return run.path


def resume_state(run: RunDir, ck: dict | None, optimizer: torch.optim.Optimizer, scheduler: Any,
                 load_weights: Callable[[dict], Any]) -> tuple[int, dict]:
    """(the step to start from, the run's ``extra`` record): ``(0, {})`` without a checkpoint ``ck``;
    with one, its weights loaded (``load_weights(state_dict)``), the optimizer, scheduler and RNG
    restored (:func:`nsvqa.training.engine.restore_train_state`) and the resume logged to ``run``."""
    if ck is None:
        return 0, {}
    load_weights(ck["state_dict"])
    start = restore_train_state(ck["train_state"], optimizer, scheduler)
    run.log(f"resumed at step {start} from {run.path / CHECKPOINT}")
    return start, dict(ck["extra"])


__all__ = ["CHECKPOINT", "checkpoint_kind", "checkpoint_path", "config_from_dict", "open_run", "run_training",
           "resume_state"]
