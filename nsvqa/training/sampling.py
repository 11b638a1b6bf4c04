"""The batches of a training step as a function of ``(seed, step)`` only.

A sampler is called with a step and returns that step's dataset indices; it keeps no state that
depends on the steps asked before (at most a cache of the current epoch), so a run resumed at step
``k`` sees the batches an uninterrupted run saw. Three schemes:

- :class:`BucketedBatches`: per-epoch permutations (numpy, from ``(seed, epoch)``) cut into chunks
  sorted by length (less padding), the batches then shuffled (the question parser, the
  classifier baselines, mDETR);
- :class:`PermutationBatches`: consecutive slices of per-epoch torch permutations (generator seeded
  with ``seed * stride + epoch``), either as one stream across epochs or epoch by epoch with the
  incomplete last batch dropped (the detector, the attribute head);
- :class:`GroupBatches`: a few groups (images) and a few items (questions) of each, drawn afresh
  at each step from ``(seed, step)``, among the items of the step's stage (NSCL's curriculum);
- :class:`SequentialBatches`: the items in order, ``batch`` at a time (evaluation).

:class:`nsvqa.training.data.StepLoader` turns a sampler into the batches of a run's steps.

A data-parallel job calls the same sampler on every rank and each rank takes its
:func:`nsvqa.training.distributed.shard` of the global batch.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import torch

#: batches per length-sorted chunk of an epoch's permutation (:class:`BucketedBatches`)
BUCKET = 50


class BucketedBatches:
    """Index batches (numpy int64 arrays) of step ``s`` from ``(seed, s)``.

    Each epoch is a permutation drawn from ``numpy.random.default_rng([seed, epoch])``, cut into
    chunks of ``BUCKET`` batches that are sorted by length (stable), and the batches are then
    shuffled by the same generator. Every epoch has ``ceil(n / batch)`` steps; the last batch of a
    chunk may be short.

    Args:
        lengths: (N,) length of each item (e.g. question words).
        batch: items per batch (>= 1).
        seed: the run's seed.

    Raises:
        ValueError: no items.
    """

    def __init__(self, lengths: np.ndarray, batch: int, seed: int):
        self.lengths, self.batch, self.seed = lengths, batch, seed
        self.n = len(lengths)
        if self.n == 0:
            raise ValueError("no questions to train on")
        self.steps_per_epoch = math.ceil(self.n / batch)
        self._epoch, self._batches = -1, []

    def epoch_batches(self, epoch: int) -> list[np.ndarray]:
        """The batches of epoch ``epoch``, in the order the steps take them."""
        rng = np.random.default_rng([self.seed, epoch])
        perm = rng.permutation(self.n)
        chunk = self.batch * BUCKET
        batches = []
        for s in range(0, self.n, chunk):
            part = perm[s:s + chunk]
            part = part[np.argsort(self.lengths[part], kind="stable")]
            batches += [part[k:k + self.batch] for k in range(0, len(part), self.batch)]
        order = rng.permutation(len(batches))
        return [batches[i] for i in order]

    def __call__(self, step: int) -> np.ndarray:
        """The indices of step ``step`` (>= 0)."""
        epoch, k = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            self._epoch, self._batches = epoch, self.epoch_batches(epoch)
        return self._batches[k]


class PermutationBatches:
    """Index batches (int64 tensors) of step ``s`` cut from per-epoch permutations.

    The permutation of epoch ``e`` is ``torch.randperm(n)`` under a generator seeded with
    ``seed * stride + e`` (``stride`` keeps the streams of different seeds apart; each user keeps
    its own, so that its batches stay the ones it always drew).

    Args:
        n: number of items (>= 1).
        batch: items per batch (>= 1).
        seed: the run's seed.
        stride: multiplier of ``seed`` in the generator's seed.
        drop_last: False: the epochs form one stream and step ``s`` takes items
            ``[s * batch, (s + 1) * batch)`` of it (a batch may straddle two epochs);
            True: epoch by epoch, ``steps_per_epoch = max(1, n // batch)`` batches of each epoch's
            permutation, the incomplete last one dropped (when ``n < batch`` the one step takes all
            ``n`` items).
        thinned, share: with ``drop_last``, each epoch keeps ``round(share * len(thinned))`` of the
            items ``thinned`` (indices), drawn afresh each epoch by the same generator after its
            permutation, and every other item; the epoch's order is the permutation's with the
            dropped items left out, so every epoch has as many items and ``steps_per_epoch`` counts
            them. ``share`` 1 (or no ``thinned``) draws nothing more: the batches above.

    Raises:
        ValueError: ``n`` or ``batch`` < 1; ``share`` outside (0, 1]; ``thinned`` without ``drop_last``.
    """

    def __init__(self, n: int, batch: int, seed: int, *, stride: int, drop_last: bool,
                 thinned: torch.Tensor | None = None, share: float = 1.0):
        if n < 1 or batch < 1:
            raise ValueError(f"need n >= 1 and batch >= 1, got n={n}, batch={batch}")
        if not 0.0 < share <= 1.0:
            raise ValueError(f"share must be in (0, 1], got {share}")
        self.n, self.batch, self.seed, self.stride, self.drop_last = n, batch, seed, stride, drop_last
        self.thinned = (None if thinned is None or share >= 1.0 or len(thinned) == 0
                        else torch.as_tensor(thinned, dtype=torch.int64))
        if self.thinned is not None and not drop_last:
            raise ValueError("thinned epochs need drop_last=True (epoch by epoch)")
        self.kept = 0 if self.thinned is None else round(share * len(self.thinned))
        per_epoch = n if self.thinned is None else n - len(self.thinned) + self.kept
        self.steps_per_epoch = max(1, per_epoch // batch) if drop_last else math.ceil(n / batch)
        self._cache: dict[int, torch.Tensor] = {}

    def permutation(self, epoch: int) -> torch.Tensor:
        """int64: the items of epoch ``epoch`` in order (all ``n``, permuted, unless thinned)."""
        if epoch not in self._cache:
            if len(self._cache) >= 4:
                self._cache.clear()
            g = torch.Generator().manual_seed(self.seed * self.stride + epoch)
            perm = torch.randperm(self.n, generator=g)
            if self.thinned is not None:
                keep = torch.ones(self.n, dtype=torch.bool)
                keep[self.thinned] = False
                keep[self.thinned[torch.randperm(len(self.thinned), generator=g)[:self.kept]]] = True
                perm = perm[keep[perm]]
            self._cache[epoch] = perm
        return self._cache[epoch]

    def __call__(self, step: int) -> torch.Tensor:
        """(B,) int64: the indices of step ``step`` (>= 0)."""
        if self.drop_last:
            epoch, k = divmod(step, self.steps_per_epoch)
            return self.permutation(epoch)[k * self.batch:(k + 1) * self.batch]
        parts, k, end = [], step * self.batch, (step + 1) * self.batch
        while k < end:
            epoch, pos = divmod(k, self.n)
            take = min(end - k, self.n - pos)
            parts.append(self.permutation(epoch)[pos:pos + take])
            k += take
        return torch.cat(parts)


class GroupBatches:
    """Items of step ``s``: a few groups, and a few items of each, drawn from ``(seed, s)`` only.

    ``numpy.random.default_rng([seed, s])`` picks ``min(groups_per_batch, G)`` of the G groups of
    the step's stage without replacement, then, group by group in sorted order, up to
    ``items_per_group`` of its items without replacement (each group's draw sorted).

    Args:
        stages: ``[(end step, {group id: (M,) item indices}), ...]`` with increasing end steps:
            step ``s`` draws from the first stage whose end is above ``s`` (the last stage after
            the last end). Groups without items must be left out.
        seed: the run's seed.
        groups_per_batch, items_per_group: sizes (>= 1).

    Raises:
        ValueError: no stage.
    """

    def __init__(self, stages: Sequence[tuple[float, Mapping[int, np.ndarray]]], seed: int, groups_per_batch: int,
                 items_per_group: int):
        if not stages:
            raise ValueError("no stage to draw from")
        self.stages = list(stages)
        self.seed, self.groups_per_batch, self.items_per_group = seed, groups_per_batch, items_per_group

    def stage(self, step: int) -> int:
        """The index of the stage of step ``step``."""
        for k, (end, _) in enumerate(self.stages):
            if step < end:
                return k
        return len(self.stages) - 1

    def __call__(self, step: int) -> list[int]:
        """The item indices of step ``step`` (grouped, in sorted group order)."""
        groups = self.stages[self.stage(step)][1]
        rng = np.random.default_rng([self.seed, step])
        ids = sorted(groups)
        pick = rng.choice(len(ids), size=min(self.groups_per_batch, len(ids)), replace=False)
        out: list[int] = []
        for p in sorted(pick):
            items = groups[ids[p]]
            out += sorted(rng.choice(items, size=min(self.items_per_group, len(items)), replace=False).tolist())
        return out


class SequentialBatches:
    """The items in order, ``batch`` at a time: step ``s`` takes items ``[s * batch, (s + 1) * batch)``
    (the last step may be short); ``steps`` = ``ceil(N / batch)``.

    Args:
        items: the item indices (a sequence), or a number N: ``0 .. N - 1``.
        batch: items per step (>= 1).

    Raises:
        ValueError: ``batch`` < 1.
    """

    def __init__(self, items: int | Sequence[int], batch: int):
        if batch < 1:
            raise ValueError(f"need batch >= 1, got {batch}")
        self.items = range(items) if isinstance(items, int) else list(items)
        self.batch = batch
        self.steps = math.ceil(len(self.items) / batch)

    def __call__(self, step: int) -> list[int]:
        """The items of step ``step`` (``0 <= step < steps``)."""
        return list(self.items[step * self.batch:(step + 1) * self.batch])


__all__ = ["BUCKET", "BucketedBatches", "PermutationBatches", "GroupBatches", "SequentialBatches"]
