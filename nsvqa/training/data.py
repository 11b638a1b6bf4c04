"""The batches of a run through one ``torch.utils.data.DataLoader``: :class:`StepLoader`.

Every container of training data is a ``torch.utils.data.Dataset`` whose items are tensors (or
dicts of tensors), with one collate function per kind that turns a list of items into the tensors
a network takes:

- ``baselines.common.EncodedQA`` (lstm, cnn_lstm, film): ``baselines.common.collate_qa``;
- ``baselines.mdetr.GroundedQA``: ``baselines.mdetr.collate_grounded``;
- ``baselines.nscl.NSCLSplit`` (questions): ``baselines.nscl.collate_nscl``, and
  ``baselines.nscl.NSCLImages`` (its images, for evaluation): ``baselines.nscl.collate_nscl_images``;
- :class:`nsvqa.training.question_parser.EncodedQuestions`:
  :func:`nsvqa.training.question_parser.collate_questions`;
- :class:`nsvqa.training.scene_parser.CropSet` (attribute head):
  :func:`nsvqa.training.scene_parser.collate_crops`;
- :class:`nsvqa.training.datasets.DetectionDataset` (detector):
  :func:`nsvqa.training.datasets.collate_detection`.

A :class:`StepLoader` takes a dataset, its collate function and a ``(seed, step)`` sampler of
:mod:`nsvqa.training.sampling` and yields, for the steps ``start .. total - 1``, a
:class:`StepBatch`: the step, the dataset indices of the step (the sampler's, after an optional
``select`` such as a data-parallel rank's :func:`nsvqa.training.distributed.shard`) and the collated
batch moved to the device. Underneath is a ``DataLoader`` whose ``batch_sampler``
(:class:`StepBatchSampler`) yields the sampler's index batch of each step, so the batches are
exactly those of ``sampler(start), sampler(start + 1), ...`` whatever the number of workers.

The DataLoader draws its workers' base seed from a private generator (``seed``), never from the
global torch RNG: opening a loader leaves the training's random stream (dropout, the checkpointed
RNG state) as it was. ``num_workers=0`` (the default) loads in the calling process, at the step
that asks; workers (where decoding costs: images read from disk) prefetch the next steps' batches
in other processes, and the batches stay the same.

A trainer's step function asks ``loader(step)``; an evaluation loop iterates ``for b in loader``
over :class:`nsvqa.training.sampling.SequentialBatches`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

#: ``step -> the dataset indices of the step`` (list, numpy array or int64 tensor)
IndexSampler = Callable[[int], Sequence[int]]


class _StandIn(list):
    """The index list of a step whose selection was empty: the step's first item, as a stand-in."""


class StepBatchSampler(Sampler[list[int]]):
    """The index batches of steps ``start .. total - 1`` of a ``(seed, step)`` sampler.

    Args:
        sampler: ``step -> indices`` (a sampler of :mod:`nsvqa.training.sampling`).
        start, total: the steps (``total <= start``: none).
        select: ``indices -> indices`` applied to each step's batch (e.g. a rank's shard), or None.

    Yields each step's indices as a list of ints. A step whose selection is empty (a data-parallel
    rank's slice of a last batch shorter than the world size) yields the step's first index
    instead, marked as a stand-in (:attr:`StepBatch.stand_in`).
    """

    def __init__(self, sampler: IndexSampler, start: int, total: int,
                 select: Callable[[Sequence[int]], Sequence[int]] | None = None):
        self.sampler, self.start, self.total, self.select = sampler, int(start), int(total), select

    def indices(self, step: int) -> list[int]:
        """The dataset indices of step ``step``."""
        idx = self.sampler(step)
        if self.select is not None:
            chosen = self.select(idx)
            if not len(chosen) and len(idx):
                return _StandIn([int(idx[0])])
            idx = chosen
        return [int(i) for i in idx]

    def __iter__(self) -> Iterator[list[int]]:
        for step in range(self.start, self.total):
            yield self.indices(step)

    def __len__(self) -> int:
        return max(0, self.total - self.start)


class _WithIndices(Dataset):
    """A dataset whose batches come back with their indices:
    ``__getitems__(idx) -> (idx, stand-in or not, items)``."""

    def __init__(self, dataset: Dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitem__(self, i: int) -> Any:
        return self.dataset[i]

    def __getitems__(self, idx: list[int]) -> tuple[list[int], bool, list]:
        get = getattr(self.dataset, "__getitems__", None)
        items = list(get(list(idx))) if get is not None else [self.dataset[i] for i in idx]
        return list(idx), isinstance(idx, _StandIn), items


class _Collate:
    """``(indices, stand_in, items) -> (indices, stand_in, collate(items))`` (a class, so that
    workers can unpickle it)."""

    def __init__(self, collate: Callable[[list], Any]):
        self.collate = collate

    def __call__(self, batch: tuple[list[int], bool, list]) -> tuple[list[int], bool, Any]:
        idx, stand_in, items = batch
        return idx, stand_in, self.collate(items)


def to_device(x: Any, device: torch.device | str | None) -> Any:
    """``x`` with every tensor moved to ``device`` (through dicts, lists and tuples; other values
    as they are); ``device`` None: ``x`` itself."""
    if device is None:
        return x
    if torch.is_tensor(x):
        return x.to(device)
    if isinstance(x, dict):
        return {k: to_device(v, device) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, device) for v in x)
    return x


@dataclass
class StepBatch:
    """One step's batch.

    Attributes:
        step: the step.
        indices: the dataset indices of the batch, in the order of its rows.
        data: what the collate function made of their items, on the loader's device.
        stand_in: the loader's ``select`` left nothing of the step's batch (a data-parallel rank
            without a share of a short last batch): ``indices`` hold the step's first item, so
            that the rank still runs the step (its loss to be weighted 0).
    """

    step: int
    indices: list[int]
    data: Any
    stand_in: bool = False


class StepLoader:
    """The batches of steps ``start .. total - 1`` of a ``(seed, step)`` sampler, through a DataLoader.

    Args:
        dataset: a map-style dataset (items: tensors or dicts of tensors).
        collate: ``list of items -> batch`` (the dataset kind's collate function).
        sampler: ``step -> indices`` (:mod:`nsvqa.training.sampling`).
        start: the first step (0, or the step a run resumes from).
        total: one past the last step; None: ``sampler.steps`` (e.g.
            :class:`nsvqa.training.sampling.SequentialBatches`).
        device: where the batches go (tensors in dicts, lists and tuples); None: left where the
            collate function made them.
        select: ``indices -> indices`` applied to each step's batch (e.g. ``lambda idx:
            shard(idx, rank, world_size)``), or None; where it leaves nothing, the step's first
            item stands in (:attr:`StepBatch.stand_in`).
        num_workers: DataLoader worker processes (0: load in this process, at the step asked).
        seed: seed of the DataLoader's private generator (the workers' base seed).

    ``loader(step)`` returns step ``step``'s :class:`StepBatch`: consecutive calls read one
    DataLoader iterator, a call for any other step starts a new one there (the batches depend on
    the step alone). ``iter(loader)`` yields the batches of every step in order.

    Raises:
        ValueError: ``total`` missing for a sampler without ``steps``, or a step outside
            ``[start, total)`` asked.
    """

    def __init__(self, dataset: Dataset, collate: Callable[[list], Any], sampler: IndexSampler, *, start: int = 0,
                 total: int | None = None, device: torch.device | str | None = None,
                 select: Callable[[Sequence[int]], Sequence[int]] | None = None, num_workers: int = 0,
                 seed: int = 0):
        if total is None:
            if not hasattr(sampler, "steps"):
                raise ValueError(f"total steps not given and {type(sampler).__name__} has no 'steps'")
            total = int(sampler.steps)  # type: ignore[attr-defined]
        self.dataset, self.collate, self.sampler = dataset, collate, sampler
        self.start, self.total, self.device, self.select = int(start), int(total), device, select
        self.num_workers, self.seed = int(num_workers), int(seed)
        self._iter: Iterator[StepBatch] | None = None
        self._next = -1

    def loader(self, start: int | None = None) -> DataLoader:
        """The DataLoader of steps ``start`` (default: the loader's) .. ``total - 1``; it yields
        ``(indices, stand-in or not, collated batch)`` on the CPU."""
        first = self.start if start is None else int(start)
        return DataLoader(_WithIndices(self.dataset), batch_sampler=StepBatchSampler(self.sampler, first, self.total,
                                                                                     self.select),
                          collate_fn=_Collate(self.collate), num_workers=self.num_workers,
                          generator=torch.Generator().manual_seed(self.seed))

    def _batches(self, start: int) -> Iterator[StepBatch]:
        for step, (idx, stand_in, data) in enumerate(self.loader(start), start):
            yield StepBatch(step, idx, to_device(data, self.device), stand_in)

    def __len__(self) -> int:
        return max(0, self.total - self.start)

    def __iter__(self) -> Iterator[StepBatch]:
        return self._batches(self.start)

    def __call__(self, step: int) -> StepBatch:
        """Step ``step``'s batch (``start <= step < total``)."""
        if not self.start <= step < self.total:
            raise ValueError(f"step {step} outside the loader's steps [{self.start}, {self.total})")
        if self._iter is None or step != self._next:
            self._iter = self._batches(step)
        self._next = step + 1
        return next(self._iter)


__all__ = ["StepLoader", "StepBatch", "StepBatchSampler", "to_device"]
