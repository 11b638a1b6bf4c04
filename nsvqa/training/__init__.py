"""What every training script shares: run directory, seeds, resolved config, logs, loss checks.

A run directory holds ``config.json`` (the resolved config and the command line), ``train.log``,
``tb/`` (tensorboard scalars) and the checkpoints. Nothing here knows about a particular model.

Submodules (imported on their own, they need torch, this module does not):

- :mod:`nsvqa.training.engine`: the one step loop every trainer runs (loss check, backward, clip,
  optimizer and scheduler steps, smoothed values, scalars, periodic validation + checkpoint, DDP
  hooks), and the resume / timing helpers;
- :mod:`nsvqa.training.sampling`: the batches of step ``s`` as a function of ``(seed, s)``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import random
import sys
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from executors.io import read_json
from nsvqa.fileio import FolderLock, sha256_file, sweep_temporaries, write_json_atomic


class NonFiniteLoss(FloatingPointError):
    """A loss became NaN or infinite; the message carries the step and the whole loss dict."""


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (CPU and CUDA)."""
    import torch  # heavy (seconds): RunDir and the helpers here are used without torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def warmup_cosine(total: int, warmup: int):
    """LambdaLR factor of step s: linear warm-up over ``warmup`` steps, then a cosine from 1 down to
    0.05 at ``total``."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, total - warmup))))
    return factor


def check_finite(losses: Mapping[str, Any], step: int) -> None:
    """Raise :class:`NonFiniteLoss` naming the step and every loss if one is not finite."""
    values = {k: float(v) for k, v in losses.items()}
    if not all(math.isfinite(v) for v in values.values()):
        raise NonFiniteLoss(f"non-finite loss at step {step}: " + ", ".join(f"{k}={v:.6g}" for k, v in values.items()))


class RunMismatch(ValueError):
    """A resume whose config differs from the run's in a field that must match (the message names
    ``config.json``, the field and both values)."""


def data_digest(path: str | os.PathLike) -> dict[str, str]:
    """What the dataset at ``path`` (a variant folder or a root of them) holds, in a form that moves
    with it: per split a manifest records (``manifest.json``, ``*/manifest.json``), the sha256 of
    its files' recorded sha256 (key ``"<variant>/<split>"``, or ``"<split>"`` in a variant
    folder); without a manifest, per questions or scenes file its sha256 (key: its path under
    ``path``). Empty where ``path`` holds none of them."""
    path = Path(path)
    out: dict[str, str] = {}
    for manifest in sorted([*path.glob("manifest.json"), *path.glob("*/manifest.json")]):
        try:
            splits = read_json(manifest).get("splits") or {}  # strict (FormatError: a ValueError)
        except (OSError, ValueError, AttributeError):
            continue
        prefix = "" if manifest.parent == path else f"{manifest.parent.name}/"
        for split, entry in sorted(splits.items()):
            files = json.dumps((entry or {}).get("sha256") or {}, sort_keys=True)
            out[prefix + split] = hashlib.sha256(files.encode()).hexdigest()
    if not out:
        for pattern in ("questions/*.json", "scenes/*.json", "*/questions/*.json", "*/scenes/*.json"):
            for f in sorted(path.glob(pattern)):
                out[f.relative_to(path).as_posix()] = sha256_file(f)
    return out


class RunDir:
    """A training run's folder: config, log file, tensorboard writer.

    One process at a time writes it: opening takes its lock (:class:`nsvqa.fileio.FolderLock`,
    given back by :meth:`close`) and sweeps the stale temporaries a killed writer left anywhere
    under it (:func:`nsvqa.fileio.sweep_temporaries`).

    Args:
        path: the folder (created).
        config: the resolved config (dataclass or mapping), written to ``config.json`` with the
            command line, and the digests of its ``data`` folder's splits (:func:`data_digest`).
            With ``resume=True`` an existing config must agree on every key in ``must_match``; a
            ``data`` path that differs is accepted when every split recorded is there with its
            digest (the same data, moved; splits added since are fine).

    Raises:
        RunMismatch: a field of ``must_match`` differs (a moved ``data`` of another digest names
            both paths).
        nsvqa.fileio.FolderInUse: another live process has the run open.
        executors.errors.FormatError: its ``config.json`` is not readable JSON (strict: a key twice,
            a number past a float, bytes not UTF-8), named.
    """

    def __init__(self, path: str | Path, config: Any, *, resume: bool = False, must_match: tuple[str, ...] = ()):
        self.path = Path(path)
        self._lock = FolderLock(self.path, "run folder").acquire()
        try:
            self._open(config, resume, must_match)
        except BaseException:
            self._lock.release()
            raise

    def _open(self, config: Any, resume: bool, must_match: tuple[str, ...]) -> None:
        sweep_temporaries(self.path, recursive=True)
        cfg = asdict(config) if is_dataclass(config) else dict(config)
        cfg_path = self.path / "config.json"
        digest = data_digest(cfg["data"]) if isinstance(cfg.get("data"), str) else {}
        record = read_json(cfg_path, allow_nan=True) if cfg_path.exists() else {}  # FormatError naming it
        if resume and cfg_path.exists():
            old = record.get("config", {})
            written = json.loads(json.dumps(cfg))  # as config.json holds it: tuples are lists there
            for k in must_match:
                if k in old and old[k] != written.get(k):
                    made = record.get("data_digest") if isinstance(record.get("data_digest"), dict) else {}
                    if k == "data" and made and all(digest.get(split) == d for split, d in made.items()):
                        continue  # the data it was made with, moved (more splits beside them are fine)
                    moved = (f"; the data at {cfg.get(k)} is not the data the run was made with at {old[k]} (their "
                             f"digests differ): move that data back, or start another run") if k == "data" else ""
                    raise RunMismatch(f"{cfg_path}: cannot resume, field {k!r} was {old[k]!r}, now {cfg.get(k)!r}"
                                      f"{moved}")
        history = record.get("history", [])
        history.append(sys.argv)
        write_json_atomic(cfg_path, {"config": cfg, "command": sys.argv, "history": history,
                                     **({"data_digest": digest} if digest else {})})
        self.config = cfg
        self.logger = logging.getLogger(f"nsvqa.run.{self.path.resolve()}")
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False
        if not self.logger.handlers:
            fh = logging.FileHandler(self.path / "train.log")
            fh.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
            self.logger.addHandler(fh)
        self._writer = None

    @property
    def writer(self):
        """A tensorboard ``SummaryWriter`` on ``tb/`` (created on first use)."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter  # heavy: loads tensorboard, only to log scalars

            self._writer = SummaryWriter(str(self.path / "tb"))
        return self._writer

    def scalars(self, prefix: str, values: Mapping[str, float], step: int) -> None:
        """Write ``values`` as tensorboard scalars ``<prefix>/<key>`` at ``step``."""
        for k, v in values.items():
            self.writer.add_scalar(f"{prefix}/{k}", float(v), step)

    def log(self, msg: str) -> None:
        """Append ``msg`` (timestamped) to ``train.log``."""
        self.logger.info(msg)

    def close(self) -> None:
        """Close the log and scalar files and give the folder's lock back."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for h in list(self.logger.handlers):
            h.close()
            self.logger.removeHandler(h)
        self._lock.release()


__all__ = ["NonFiniteLoss", "seed_everything", "warmup_cosine", "check_finite", "RunDir", "RunMismatch", "data_digest"]
