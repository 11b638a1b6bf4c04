"""torch Datasets over a tiny generated split: detection targets and attribute crops."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from executors import load_ontology
from nsvqa.generation.annotations import rle_to_mask


@pytest.fixture(scope="module")
def split(tmp_path_factory, require_renderer):
    from nsvqa.generation.dataset import generate_split, job_for

    root = tmp_path_factory.mktemp("data")
    job = job_for(root, "mid", "train", 3, 5, 64, 48)
    generate_split(job, progress=False)
    scenes = json.loads((job.folder / "scenes" / "train_scenes.json").read_text())["scenes"]
    return job.folder, scenes


def test_detection_targets_match_the_scenes(split):
    from nsvqa.training.datasets import DetectionDataset, collate_detection

    folder, scenes = split
    ds = DetectionDataset(folder, "train", mode="objects")
    onto = load_ontology("superclevr")
    assert len(ds) == 3 and ds.num_classes == 22
    for (img, t), s in zip(ds, scenes):
        assert img.shape == (3, 48, 64) and 0 <= img.min() and img.max() <= 1
        n = len(s["objects"])
        assert t["boxes"].shape == (n, 4) and t["masks"].shape == (n, 48, 64) and t["image_id"] == s["image_index"]
        for k, o in enumerate(s["objects"]):
            assert onto.scene_values("shape")[int(t["labels"][k]) - 1] == o["shape"]  # classes: the placed shapes
            assert (t["masks"][k].numpy().astype(bool) == rle_to_mask(o["mask"])).all()
            x0, y0, x1, y1 = t["boxes"][k].tolist()
            assert [x0, y0, x1 - x0, y1 - y0] == o["bbox"]
    parts = DetectionDataset(folder, "train", mode="objects+parts")
    _, t = parts[0]
    # the parts the scene lists, not every visible one
    assert len(t["labels"]) == len(scenes[0]["objects"]) + sum(len(o["parts"]) for o in scenes[0]["objects"])
    assert sum(len(o["part_masks"]) for o in scenes[0]["objects"]) > sum(len(o["parts"]) for o in scenes[0]["objects"])
    assert parts.num_classes == 22 + len(onto.part_names)
    agnostic = DetectionDataset(folder, "train", mode="agnostic")
    assert agnostic.num_classes == 2 and agnostic.categories == {1: "object"}
    for (_, t), (_, u) in zip(agnostic, ds):  # the same objects, all of class 1
        assert t["labels"].tolist() == [1] * len(u["labels"]) and torch.equal(t["boxes"], u["boxes"])
    assert {agnostic.shape_ids[s] for s in onto.scene_values("shape")} == set(range(1, 22))
    images, targets = collate_detection([ds[0], ds[1]])
    assert len(images) == len(targets) == 2
    with pytest.raises(ValueError, match="mode must be one of"):
        DetectionDataset(folder, "train", mode="parts")
    with pytest.raises(FileNotFoundError, match="no COCO annotations for split 'val'"):
        DetectionDataset(folder, "val")


def test_attribute_crops(split):
    from nsvqa.training.datasets import AttributeCropDataset

    folder, scenes = split
    onto = load_ontology("superclevr")
    ds = AttributeCropDataset(folder, "train", crop_size=32, parts=True)
    n_obj = sum(len(s["objects"]) for s in scenes)
    n_part = sum(len(o["part_masks"]) for s in scenes for o in s["objects"])
    assert len(ds) == n_obj + n_part
    kinds = [0, 0]
    for i in range(len(ds)):
        crop, lab = ds[i]
        assert crop.shape == (4, 32, 32) and crop[3].max() > 0.2  # the mask channel shows the instance
        item = ds.items[i]
        o = next(s for s in scenes if s["image_index"] == item.image_index)["objects"][item.object_index]
        kinds[lab["kind"]] += 1
        if lab["kind"] == 0:
            assert onto.values("shape")[lab["shape"]] == o["shape"] and onto.values("color")[lab["color"]] == o["color"]
            assert torch.allclose(lab["position"], torch.tensor(o["3d_coords"][:2]))
        else:
            assert onto.part_names[lab["partname"]] == item.part
            want = o["parts"].get(item.part, {}).get("color", o["color"])
            assert onto.values("color")[lab["color"]] == want
    assert kinds == [n_obj, n_part]


def test_crop_instance_at_the_border():
    from nsvqa.training.datasets import crop_instance

    img = torch.ones((3, 10, 10))
    mask = torch.zeros((1, 10, 10))
    mask[0, :3, :3] = 1
    c = crop_instance(img, mask, [0, 0, 3, 3], 8, margin=0.5)
    assert c.shape == (4, 8, 8)
    assert c[0].min() == 0 and c[0].max() == 1  # outside the image is zero padding
    assert np.isclose(float(c[3].max()), 1.0)
