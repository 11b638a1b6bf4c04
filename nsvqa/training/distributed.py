"""Data-parallel training over several processes (``torchrun``): a thin layer on ``torch.distributed``.

A training loop asks :func:`init_from_env` for its :class:`DistInfo`. Launched by ``torchrun`` with
``WORLD_SIZE`` > 1 it joins the process group (``nccl`` for CUDA, one GPU per process:
``cuda:LOCAL_RANK``; ``gloo`` for CPU); otherwise it is a single process and nothing here talks to
anyone, so single-process training runs exactly as before.

Conventions of the loops built on it (``nsvqa.training.scene_parser``, ``nsvqa.training.question_parser``):

- A config's batch size is the *global* batch of a step: every rank draws the same step indices
  (a function of ``(seed, step)``) and takes its :func:`shard`; the batch must divide by the world
  size (:func:`check_global_batch`).
- Models are wrapped in ``DistributedDataParallel`` (:func:`wrap`), which averages gradients.
- Rank 0 alone writes the run directory (config, log, tensorboard, checkpoints); the other ranks get
  a :class:`QuietRun` with the same path and wait (:func:`run_on_main`, :func:`barrier`) before they
  read what rank 0 wrote. Checkpoints hold the unwrapped module's ``state_dict`` (no ``module.``).
- The run directory (like the data) must be on a filesystem every node sees.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, is_dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

T = TypeVar("T")

#: how long a rank waits in a collective (rank 0 may build crop caches while the others wait)
DEFAULT_TIMEOUT = timedelta(minutes=60)


@dataclass(frozen=True)
class DistInfo:
    """Where this process stands in a data-parallel job.

    ``device`` is the torch device string this process trains on (``cuda:LOCAL_RANK`` for CUDA jobs
    launched by torchrun); ``is_main`` is ``rank == 0``; ``owns_group`` says that
    :func:`init_from_env` created the process group (so the caller should :func:`cleanup` it).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"
    is_main: bool = True
    owns_group: bool = False

    @property
    def enabled(self) -> bool:
        """True when gradients are synchronised across more than one process."""
        return self.world_size > 1


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def init_from_env(device: str, timeout: timedelta = DEFAULT_TIMEOUT) -> DistInfo:
    """The :class:`DistInfo` of this process; joins the process group when launched by torchrun.

    Args:
        device: the configured device (``cpu``, ``cuda``, ``cuda:0`` ...). In a CUDA job each process
            uses ``cuda:LOCAL_RANK`` whatever index ``device`` names.
        timeout: of every collective (default 60 minutes).

    Reads ``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK`` (set by torchrun; ``MASTER_ADDR`` /
    ``MASTER_PORT`` are read by ``torch.distributed``). With ``WORLD_SIZE`` unset or 1 this is a
    no-op single-process :class:`DistInfo`. Idempotent: a process group that already exists (of the
    same size) is reused and not owned.

    Raises:
        RuntimeError: ``WORLD_SIZE`` > 1 but torch has no distributed support or the backend
            (``nccl`` for CUDA, ``gloo`` for CPU) is missing, or CUDA is requested but unavailable.
        ValueError: inconsistent ``RANK`` / ``LOCAL_RANK`` / ``WORLD_SIZE``.
    """
    world = _env_int("WORLD_SIZE", 1)
    if world <= 1:
        return DistInfo(device=device)

    rank, local = _env_int("RANK", -1), _env_int("LOCAL_RANK", -1)
    if not 0 <= rank < world or local < 0:
        raise ValueError(f"WORLD_SIZE={world} needs RANK in [0, {world}) and LOCAL_RANK >= 0 "
                         f"(got RANK={os.environ.get('RANK')!r}, LOCAL_RANK={os.environ.get('LOCAL_RANK')!r}); "
                         "launch with torchrun")
    if not dist.is_available():
        raise RuntimeError(f"WORLD_SIZE={world} but this torch build has no torch.distributed")
    cuda = torch.device(device).type == "cuda"
    if cuda:
        if not torch.cuda.is_available() or local >= torch.cuda.device_count():
            raise RuntimeError(f"rank {rank}: device {device!r} with LOCAL_RANK={local}, but "
                               f"{torch.cuda.device_count()} CUDA devices are visible")
        if not dist.is_nccl_available():
            raise RuntimeError("CUDA data-parallel training needs the nccl backend, missing from this torch build")
        torch.cuda.set_device(local)
        device = f"cuda:{local}"
    elif not dist.is_gloo_available():
        raise RuntimeError("CPU data-parallel training needs the gloo backend, missing from this torch build")
    owns = False
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo", timeout=timeout)
        owns = True
    if dist.get_world_size() != world or dist.get_rank() != rank:
        raise ValueError(f"the process group has rank {dist.get_rank()} of {dist.get_world_size()}, "
                         f"the environment says RANK={rank} of WORLD_SIZE={world}")
    return DistInfo(rank, world, local, device, rank == 0, owns)


def _initialized() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def barrier(info: DistInfo | None = None) -> None:
    """Wait for every rank (no-op in a single process)."""
    if (info is None or info.enabled) and _initialized() and torch.distributed.get_world_size() > 1:
        cuda = info is not None and torch.device(info.device).type == "cuda"
        torch.distributed.barrier(device_ids=[info.local_rank] if cuda else None)


def cleanup() -> None:
    """Leave the process group, if any."""
    if _initialized():
        torch.distributed.destroy_process_group()


def shard(indices: Sequence[T], rank: int, world_size: int) -> Sequence[T]:
    """Rank ``rank``'s contiguous slice of a global batch (list, array or tensor, sliced as is).

    The slices of ranks ``0..world_size-1`` concatenate to ``indices``; when the length does not
    divide, the first ``len % world_size`` ranks take one more (a rank's slice may then be empty).
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    per, extra = divmod(len(indices), world_size)
    start = rank * per + min(rank, extra)
    return indices[start:start + per + (rank < extra)]


def check_global_batch(world_size: int, **batches: int) -> None:
    """Raise ValueError naming the first config field whose global batch does not divide by
    ``world_size`` (``check_global_batch(2, det_batch=3)``)."""
    for name, value in batches.items():
        if value % world_size:
            raise ValueError(f"{name}={value} is the global batch of a step and must be divisible by the "
                             f"world size {world_size} (number of torchrun processes): set --{name.replace('_', '-')} "
                             f"to a multiple of {world_size} or change --nproc_per_node/--nnodes")


def wrap(module: nn.Module, info: DistInfo, *, sync_bn: bool = False) -> nn.Module:
    """``DistributedDataParallel(module)`` in a data-parallel job, ``module`` itself otherwise.

    ``sync_bn`` turns BatchNorm layers into SyncBatchNorm first (CUDA only: statistics over the
    global batch, as a single process would compute them); the layers keep their state_dict keys.
    ``module`` keeps its parameters: save ``module.state_dict()``, never the wrapper's. Rank 0's
    parameters and buffers are broadcast to every rank here, so load checkpoints before wrapping.
    """
    if not info.enabled:
        return module

    if sync_bn and torch.device(info.device).type == "cuda":
        converted = nn.SyncBatchNorm.convert_sync_batchnorm(module)
        assert converted is module, "the top module itself must not be a BatchNorm layer"
    cuda = torch.device(info.device).type == "cuda"
    return DistributedDataParallel(module, device_ids=[info.local_rank] if cuda else None)


class Dispatch(nn.Module):
    """Routes ``forward`` to a named method of ``module``: ``Dispatch(m)("loss", x)`` is
    ``m.loss(x)``. DistributedDataParallel synchronises the gradients of what runs through its
    ``forward``, so a model trained through another method (``loss``, ``sample``) is wrapped as
    ``wrap(Dispatch(model), info)``. Its state_dict keys carry a ``module.`` prefix: save the model's."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def forward(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.module, method)(*args, **kwargs)


def all_sum(info: DistInfo, values: Sequence[float]) -> list[float]:
    """Element-wise sum of ``values`` over the ranks (float64); ``values`` itself in one process."""
    if not info.enabled:
        return [float(v) for v in values]
    t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=info.device)
    torch.distributed.all_reduce(t)
    return t.tolist()


def mean_over_ranks(info: DistInfo, values: Mapping[str, float], keys: Sequence[str] | None = None) -> dict[str, float]:
    """Per-key mean of scalar values over the ranks that have the key (e.g. losses of a step).

    ``keys`` (the same on every rank; default ``sorted(values)``) fixes the order of the reduction;
    a key no rank has is dropped. A NaN on any rank makes the key NaN everywhere, so that every rank
    stops together on a non-finite loss. In one process: ``dict(values)`` unchanged.
    """
    if not info.enabled:
        return dict(values)
    keys = sorted(values) if keys is None else list(keys)
    flat = []
    for k in keys:
        flat += [float(values[k]), 1.0] if k in values else [0.0, 0.0]
    sums = all_sum(info, flat)
    return {k: sums[2 * i] / sums[2 * i + 1] for i, k in enumerate(keys) if sums[2 * i + 1] > 0}


def run_on_main(info: DistInfo, fn: Callable[[], T], *, share: bool = False) -> T | None:
    """``fn()`` on rank 0 while the others wait; returns its result on rank 0, and elsewhere None,
    or with ``share`` the same result (pickled: keep it small, e.g. a decision every rank must take
    alike).

    An exception on rank 0 is re-raised there and raised on every other rank as a RuntimeError
    carrying its message, so no rank is left waiting in a collective.
    """
    if not info.enabled:
        return fn()

    result, error = None, None
    if info.is_main:
        try:
            result = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below, after telling the other ranks
            error = e
    status = [None if error is None else f"{type(error).__name__}: {error}", result if share else None]
    dev = torch.device(info.device)
    dist.broadcast_object_list(status, src=0, device=dev if dev.type == "cuda" else None)
    if error is not None:
        raise error
    if status[0] is not None:
        raise RuntimeError(f"rank {info.rank}: rank 0 failed: {status[0]}")
    return status[1] if share else result


def seed_rank(info: DistInfo, seed: int, step: int) -> None:
    """Give ranks other than 0 their own torch random stream (dropout, proposal sampling) from
    ``(seed, rank, step)``, ``step`` being where the loop (re)starts; rank 0 keeps its stream, so a
    single process is untouched."""
    if info.rank:
        torch.manual_seed((seed * 1_000_003 + info.rank) * 1_000_033 + step)


class QuietRun:
    """What ranks other than 0 get instead of a :class:`nsvqa.training.RunDir`: the same ``path``
    and ``config``, and ``log`` / ``scalars`` / ``close`` that write nothing."""

    def __init__(self, path: str | Path, config: Mapping[str, Any]):
        self.path = Path(path)
        self.config = dict(config)

    def scalars(self, prefix: str, values: Mapping[str, float], step: int) -> None:
        pass

    def log(self, msg: str) -> None:
        pass

    def close(self) -> None:
        pass


def open_run(info: DistInfo, make_run: Callable[[], Any], path: str | Path, config: Any):
    """The run directory on rank 0 (``make_run()``, e.g. a RunDir that writes config.json), a
    :class:`QuietRun` on the other ranks, which return once rank 0 has made it (or raise if that
    failed)."""
    run = run_on_main(info, make_run)
    if info.is_main:
        return run
    return QuietRun(path, asdict(config) if is_dataclass(config) else dict(config))


__all__ = ["DistInfo", "init_from_env", "barrier", "cleanup", "shard", "check_global_batch", "wrap", "Dispatch",
           "all_sum", "mean_over_ranks", "run_on_main", "seed_rank", "QuietRun", "open_run", "DEFAULT_TIMEOUT"]
