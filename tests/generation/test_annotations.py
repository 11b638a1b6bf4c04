"""RLE helpers: the one-pass label encoder equals per-mask pycocotools encoding."""
from __future__ import annotations

import numpy as np
import pytest

from nsvqa.generation.annotations import label_rles, mask_to_rle, rle_to_mask


@pytest.mark.parametrize("seed", range(5))
def test_label_rles_equal_per_mask_encoding(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(-1, 4, size=(13, 17))
    labels[:5, :6] = 2  # a block, so runs longer than one pixel occur
    got = label_rles(labels, [-1, 0, 1, 2, 3, 9])
    for lab, (rle, bbox) in got.items():
        want_rle, want_box = mask_to_rle(labels == lab)
        assert rle == want_rle and bbox == want_box, lab
        assert (rle_to_mask(rle) == (labels == lab)).all()
    assert not rle_to_mask(got[9][0]).any() and got[9][1] == [0.0, 0.0, 0.0, 0.0]
    assert label_rles(labels, []) == {}


def test_label_covering_the_whole_image():
    labels = np.zeros((4, 3), dtype=int)
    rle, bbox = label_rles(labels, [0])[0]
    assert rle_to_mask(rle).all() and bbox == [0.0, 0.0, 3.0, 4.0]
