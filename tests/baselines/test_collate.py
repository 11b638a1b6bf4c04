"""The learned baselines' datasets and collate functions (one per kind), on tiny synthetic splits."""
from __future__ import annotations

import numpy as np
import torch

from baselines.common import EncodedQA, collate_qa, normalise_images
from baselines.mdetr import GroundedQA, collate_grounded
from baselines.nscl import NSCLImages, NSCLQuestion, NSCLSplit, collate_nscl, collate_nscl_images
from nsvqa.training.data import StepLoader
from nsvqa.training.sampling import SequentialBatches


def images(m: int) -> torch.Tensor:
    return torch.arange(m * 3 * 4 * 5, dtype=torch.int64).remainder(256).to(torch.uint8).reshape(m, 3, 4, 5)


def test_collate_qa_pads_words_and_normalises_the_images_of_the_questions():
    data = EncodedQA([[4, 5, 6], [], [7]], np.array([3, 1, 1]), torch.tensor([2, -1, 0]), torch.tensor([1, 0, 1]),
                     images(2))
    assert len(data) == 3 and data[1]["words"].shape == (0,) and data[2]["image"].dtype == torch.uint8
    words, lengths, imgs, answers = collate_qa([data[i] for i in (2, 0, 1)])
    assert words.tolist() == [[7, 0, 0], [4, 5, 6], [0, 0, 0]] and lengths.tolist() == [1, 3, 1]
    assert imgs.shape == (3, 3, 4, 5) and torch.equal(imgs, normalise_images(data.images[[1, 1, 0]]))
    assert answers.tolist() == [0, 2, -1]
    question_only = EncodedQA([[4], [5, 6]], np.array([1, 2]), torch.tensor([0, 1]))
    assert "image" not in question_only[0] and collate_qa([question_only[0], question_only[1]])[2] is None


def test_collate_grounded_pads_ids_masks_and_positive_maps():
    pos = [torch.tensor([[True, False, True]]), torch.zeros((0, 2), dtype=torch.bool)]
    data = GroundedQA([[1, 2, 3], [4, 5]], np.array([3, 2]), torch.tensor([1, 0]), torch.tensor([0, 1]), images(2),
                      boxes=[torch.ones(1, 4), torch.zeros(0, 4)], positives=pos)
    x = collate_grounded([data[1], data[0]])
    assert x["ids"].tolist() == [[4, 5, 0], [1, 2, 3]]
    assert x["text_mask"].tolist() == [[True, True, False], [True, True, True]]
    assert torch.equal(x["images"], normalise_images(data.images[[1, 0]])) and x["answers"].tolist() == [0, 1]
    (b1, p1), (b0, p0) = x["targets"]
    assert b1.shape == (0, 4) and p1.shape == (0, 3) and torch.equal(b0, torch.ones(1, 4))
    assert p0.tolist() == [[True, False, True]]
    no_targets = GroundedQA([[1]], np.array([1]), torch.tensor([0]), torch.tensor([0]), images(1))
    assert collate_grounded([no_targets[0]])["targets"] is None


def nscl_split() -> NSCLSplit:
    qs = [NSCLQuestion(k, None, (), "yes", row) for k, row in enumerate([2, 0, 2, 1, 0])]
    boxes = [torch.full((n, 4), float(n)) for n in (1, 2, 3)]
    return NSCLSplit(qs, images(3), boxes, ["a.png", "b.png", "c.png"])


def test_collate_nscl_puts_each_image_through_once_in_order_of_first_appearance():
    data = nscl_split()
    assert len(data) == 5 and data[3]["row"].item() == 1
    x = collate_nscl([data[i] for i in (0, 1, 2, 4)])  # rows 2, 0, 2, 0
    assert x["rows"].tolist() == [2, 0] and x["index"].tolist() == [0, 1, 2, 4]
    assert x["image_of"].tolist() == [0, 1, 0, 1]
    assert torch.equal(x["images"], normalise_images(data.images[[2, 0]]))
    assert [b.shape[0] for b in x["boxes"]] == [3, 1]


def test_nscl_images_are_the_splits_images_by_row():
    data = nscl_split()
    got = list(StepLoader(NSCLImages(data), collate_nscl_images, SequentialBatches([2, 0, 1], 2)))
    assert [b.indices for b in got] == [[2, 0], [1]]
    assert got[0].data["rows"].tolist() == [2, 0] and torch.equal(got[1].data["images"],
                                                                   normalise_images(data.images[[1]]))
    assert [len(b) for b in got[0].data["boxes"]] == [3, 1]
