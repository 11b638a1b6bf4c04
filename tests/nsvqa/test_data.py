"""The one way to batch training data (nsvqa.training.data.StepLoader over the seeded samplers) and
the collate functions of the parsers' datasets: tiny, CPU, no data files."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import Dataset

from nsvqa.training.data import StepBatch, StepBatchSampler, StepLoader, to_device
from nsvqa.training.distributed import shard
from nsvqa.training.question_parser import EncodedQuestions, collate_questions
from nsvqa.training.sampling import BucketedBatches, GroupBatches, PermutationBatches, SequentialBatches
from nsvqa.training.scene_parser import LABEL_KEYS, CropSet, collate_crops
from parsers.question.vocab import UNK_ID


class Items(Dataset):
    """Item i: {"i": () int64 = i, "x": (2,) float = (i, -i)}; records which items were read."""

    def __init__(self, n: int):
        self.n, self.read = n, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.read.append(i)
        return {"i": torch.tensor(i), "x": torch.tensor([float(i), -float(i)])}


def collate_items(items):
    return torch.stack([it["i"] for it in items]), torch.stack([it["x"] for it in items])


def samplers():
    lengths = np.random.default_rng(0).integers(1, 20, size=23)
    easy = {0: np.array([0, 1]), 1: np.array([2])}
    hard = {0: np.array([0, 1, 3]), 1: np.array([2, 4, 5]), 2: np.array([6, 7])}
    return {"bucketed": BucketedBatches(lengths, 4, seed=5),
            "stream": PermutationBatches(23, 5, 2, stride=100003, drop_last=False),
            "epochs": PermutationBatches(23, 5, 1, stride=7919, drop_last=True),
            "groups": GroupBatches([(2.5, easy), (10, hard)], seed=4, groups_per_batch=2, items_per_group=2)}


@pytest.mark.parametrize("kind", ["bucketed", "stream", "epochs", "groups"])
@pytest.mark.parametrize("start", [0, 7])
def test_the_loader_yields_exactly_the_samplers_batches_from_any_start_step(kind, start):
    sampler, total = samplers()[kind], 14
    want = [[int(i) for i in sampler(s)] for s in range(start, total)]
    got = list(StepLoader(Items(23), collate_items, samplers()[kind], start=start, total=total))
    assert [b.step for b in got] == list(range(start, total))
    assert [b.indices for b in got] == want
    for b in got:
        i, x = b.data
        assert i.tolist() == b.indices and x.shape == (len(b.indices), 2) and x.dtype == torch.float32


def test_steps_asked_one_by_one_in_any_order_are_the_samplers():
    sampler = BucketedBatches(np.arange(1, 31), 4, seed=1)
    loader = StepLoader(Items(30), collate_items, BucketedBatches(np.arange(1, 31), 4, seed=1), start=2, total=20)
    for step in [2, 3, 4, 10, 11, 5, 19]:  # consecutive steps share one iterator; a jump starts a new one there
        b = loader(step)
        assert isinstance(b, StepBatch) and b.step == step and b.indices == sampler(step).tolist()
        assert b.data[0].tolist() == b.indices
    for step in (1, 20):
        with pytest.raises(ValueError, match=rf"step {step} outside the loader's steps \[2, 20\)"):
            loader(step)


def test_items_are_read_when_their_step_is_asked_without_workers():
    data = Items(10)
    loader = StepLoader(data, collate_items, SequentialBatches(10, 3))
    assert data.read == []
    loader(0)
    assert data.read == [0, 1, 2]
    loader(1)
    assert data.read == [0, 1, 2, 3, 4, 5]


def test_workers_give_the_same_batches():
    sampler = PermutationBatches(23, 5, 2, stride=100003, drop_last=False)
    one = [(b.step, b.indices, [t.tolist() for t in b.data]) for b in
           StepLoader(Items(23), collate_items, sampler, start=3, total=12)]
    two = [(b.step, b.indices, [t.tolist() for t in b.data]) for b in
           StepLoader(Items(23), collate_items, sampler, start=3, total=12, num_workers=2)]
    assert one == two and len(one) == 9


def test_opening_and_reading_a_loader_leaves_the_global_rng_alone():
    torch.manual_seed(3)
    state = torch.get_rng_state()
    loader = StepLoader(Items(23), collate_items, PermutationBatches(23, 5, 0, stride=7, drop_last=True), total=6)
    list(loader)
    loader(2), loader(0)
    assert torch.equal(torch.get_rng_state(), state)


def test_select_takes_a_ranks_shard_of_each_global_batch():
    sampler = PermutationBatches(23, 6, 0, stride=7919, drop_last=True)
    for rank in range(2):
        got = list(StepLoader(Items(23), collate_items, sampler, total=5,
                              select=lambda idx, r=rank: shard(idx, r, 2)))
        assert [b.indices for b in got] == [sampler(s)[rank * 3:(rank + 1) * 3].tolist() for s in range(5)]


def test_a_rank_left_without_a_share_gets_the_first_item_as_a_stand_in():
    sampler = SequentialBatches(7, 3)  # 3, 3, 1: rank 1 of 2 has nothing of the last batch
    got = [list(StepLoader(Items(7), collate_items, sampler, select=lambda idx, r=rank: shard(idx, r, 2)))
           for rank in range(2)]
    assert [b.indices for b in got[0]] == [[0, 1], [3, 4], [6]] and not any(b.stand_in for b in got[0])
    assert [b.indices for b in got[1]] == [[2], [5], [6]] and [b.stand_in for b in got[1]] == [False, False, True]
    assert got[1][2].data[0].tolist() == [6]


def test_a_sequential_sampler_gives_the_steps_and_a_short_last_batch():
    seq = SequentialBatches(7, 3)
    assert seq.steps == 3 and [seq(s) for s in range(3)] == [[0, 1, 2], [3, 4, 5], [6]]
    rows = SequentialBatches([4, 1, 9], 2)
    assert rows.steps == 2 and [rows(s) for s in range(2)] == [[4, 1], [9]]
    assert SequentialBatches(0, 4).steps == 0
    assert list(StepLoader(Items(0), collate_items, SequentialBatches(0, 4))) == []
    # total defaults to the sampler's steps
    assert [b.indices for b in StepLoader(Items(7), collate_items, seq)] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="batch >= 1"):
        SequentialBatches(3, 0)
    with pytest.raises(ValueError, match="total steps not given"):
        StepLoader(Items(3), collate_items, PermutationBatches(3, 1, 0, stride=1, drop_last=True))


def test_the_batch_sampler_yields_int_lists_and_has_the_number_of_steps():
    bs = StepBatchSampler(lambda s: np.array([s, s + 1]), 3, 6, select=lambda idx: idx[::-1])
    assert len(bs) == 3 and list(bs) == [[4, 3], [5, 4], [6, 5]]
    assert all(type(i) is int for b in bs for i in b) and len(StepBatchSampler(lambda s: [s], 5, 2)) == 0


def test_to_device_moves_tensors_through_containers_and_keeps_the_rest():
    x = {"a": torch.ones(2), "b": [torch.zeros(1), (torch.ones(1), 3)], "c": None, "d": "text"}
    y = to_device(x, torch.device("cpu"))
    assert torch.equal(y["a"], x["a"]) and isinstance(y["b"][1], tuple) and y["b"][1][1] == 3
    assert y["c"] is None and y["d"] == "text"
    assert to_device(x, None) is x


# ------------------------------------------------------------------------------------ collate

def test_collate_questions_pads_words_and_targets():
    data = EncodedQuestions(items=[None, None, None], words=[[5, 6, 7], [], [8]],
                            targets=[[1, 9, 2], [1, 2], [1, 3, 4, 2]], lengths=np.array([3, 1, 1]))
    assert len(data) == 3 and data[0]["words"].dtype == torch.int64
    words, lengths, targets = collate_questions([data[i] for i in (0, 1, 2)])
    assert words.tolist() == [[5, 6, 7], [UNK_ID, 0, 0], [8, 0, 0]]  # an empty question: one <UNK>; <NULL> pads
    assert lengths.tolist() == [3, 1, 1] and targets.shape == (3, 4) and targets[1].tolist() == [1, 2, 0, 0]


def test_collate_crops_scales_the_crops_and_keeps_the_label_order():
    g = torch.Generator().manual_seed(0)
    crops = [torch.rand(4, 8, 8, generator=g) for _ in range(3)]
    labels = [{"shape": 2, "color": 1, "material": 0, "size": 1, "texture": 0, "position": [0.5, -1.0], "kind": 0},
              {"partname": 4, "color": 3, "material": 1, "kind": 1},
              {"shape": 0, "color": 0, "material": 1, "size": 0, "texture": 1, "position": [1.0, 2.0], "kind": 0}]
    data = CropSet.build(crops, labels, 0, 8, [torch.tensor([0.1, 0.2, 0.3, 0.4]) * k for k in range(3)])
    x, geo, lab = collate_crops([data[i] for i in (2, 0)])
    assert x.shape == (2, 4, 8, 8) and x.dtype == torch.float32 and torch.equal(x, data.x[[2, 0]].float() / 255.0)
    assert torch.equal(geo, data.geometry[[2, 0]])
    assert list(lab) == [*LABEL_KEYS, "position", "kind"]
    assert lab["shape"].tolist() == [0, 2] and lab["partname"].tolist() == [-1, -1] and lab["kind"].tolist() == [0, 0]
    assert lab["position"].tolist() == [[1.0, 2.0], [0.5, -1.0]]
