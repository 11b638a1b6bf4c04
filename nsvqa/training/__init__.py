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

import json
import logging
import math
import random
import sys
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsvqa.fileio import write_json_atomic


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


class RunDir:
    """A training run's folder: config, log file, tensorboard writer.

    Args:
        path: the folder (created).
        config: the resolved config (dataclass or mapping), written to ``config.json`` with the
            command line. With ``resume=True`` an existing config must agree on every key in
            ``must_match`` (else ValueError naming the key).
    """

    def __init__(self, path: str | Path, config: Any, *, resume: bool = False, must_match: tuple[str, ...] = ()):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        cfg = asdict(config) if is_dataclass(config) else dict(config)
        cfg_path = self.path / "config.json"
        if resume and cfg_path.exists():
            old = json.loads(cfg_path.read_text()).get("config", {})
            for k in must_match:
                if k in old and old[k] != cfg.get(k):
                    raise ValueError(f"{cfg_path}: cannot resume, field {k!r} was {old[k]!r}, now {cfg.get(k)!r}")
        history = []
        if cfg_path.exists():
            history = json.loads(cfg_path.read_text()).get("history", [])
        history.append(sys.argv)
        write_json_atomic(cfg_path, {"config": cfg, "command": sys.argv, "history": history})
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
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for h in list(self.logger.handlers):
            h.close()
            self.logger.removeHandler(h)


__all__ = ["NonFiniteLoss", "seed_everything", "warmup_cosine", "check_finite", "RunDir"]
