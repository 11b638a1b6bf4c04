"""torch Datasets over the generator's on-disk format (DESIGN.md).

* :class:`DetectionDataset` — images with torchvision detection targets (boxes, labels, masks)
  from ``annotations/<split>_coco.json``: the 21 shapes, and in ``objects+parts`` mode also the
  part names (category ids as in the COCO file).
* :class:`AttributeCropDataset` — one item per object (and per visible part): a 4-channel crop
  (RGB + the instance mask) resized to a square, with the attribute labels as ontology indices and,
  for objects, the ground-plane position that the attribute head regresses.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from executors import load_ontology
from nsvqa.artifacts.scenes import read_scenes
from nsvqa.generation.annotations import rle_to_mask
from parsers.scene.crops import crop_instance

MODES = ("objects", "objects+parts", "agnostic")
OBJECT_ATTRIBUTES = ("shape", "color", "material", "size", "texture")
PART_ATTRIBUTES = ("partname", "color", "material")


def read_image(path: str | Path) -> torch.Tensor:
    """The image file ``path`` as a (3, H, W) float32 tensor in [0, 1] (RGB; alpha dropped)."""
    with Image.open(path) as im:
        arr = np.asarray(im.convert("RGB"), dtype=np.uint8)
    return torch.from_numpy(arr.copy()).permute(2, 0, 1).float().div_(255.0)




class DetectionDataset(Dataset):
    """Images and torchvision detection targets of one split of a generated variant.

    Args:
        root: the variant folder (``ROOT/VARIANT``).
        split: ``train`` | ``val`` | ``test``.
        mode: ``objects`` (21 shape classes), ``objects+parts`` (shapes and part names) or
            ``agnostic`` (one class, ``object`` = 1: the detector finds objects and the attribute
            head tells their shape).

    Each item is ``(image (3, H, W) float, target)`` with target ``boxes`` (N, 4) float32 xyxy,
    ``labels`` (N,) int64 COCO category ids, ``masks`` (N, H, W) uint8, ``image_id`` int.
    """

    def __init__(self, root: str | Path, split: str, mode: str = "objects"):
        from pycocotools.coco import COCO

        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.root, self.split, self.mode = Path(root), split, mode
        path = self.root / "annotations" / f"{split}_coco.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no COCO annotations for split {split!r} (generate the split first)")
        self.coco = COCO(str(path))
        self.image_ids = sorted(self.coco.getImgIds())
        cats = self.coco.loadCats(self.coco.getCatIds())
        kept = {c["id"]: c["name"] for c in cats if mode == "objects+parts" or c["supercategory"] == "object"}
        self._kept = set(kept)
        self.categories = {1: "object"} if mode == "agnostic" else kept
        #: shape name -> COCO category id (every mode; agnostic outputs are labelled through it)
        self.shape_ids = {c["name"]: c["id"] for c in cats if c["supercategory"] == "object"}

    @property
    def num_classes(self) -> int:
        """Classes including the background (torchvision's convention)."""
        return max(self.categories) + 1

    def __len__(self) -> int:
        return len(self.image_ids)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, dict[str, Any]]:
        iid = self.image_ids[i]
        info = self.coco.loadImgs(iid)[0]
        img = read_image(self.root / "images" / self.split / info["file_name"])
        anns = [a for a in self.coco.loadAnns(self.coco.getAnnIds(imgIds=[iid]))
                if a["category_id"] in self._kept and a["area"] > 0]
        h, w = info["height"], info["width"]
        boxes = torch.tensor([[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2], a["bbox"][1] + a["bbox"][3]]
                              for a in anns], dtype=torch.float32).reshape(-1, 4)
        masks = (torch.from_numpy(np.stack([self.coco.annToMask(a) for a in anns]))
                 if anns else torch.zeros((0, h, w), dtype=torch.uint8))
        labels = [1 if self.mode == "agnostic" else a["category_id"] for a in anns]
        target = {"boxes": boxes, "labels": torch.tensor(labels, dtype=torch.int64),
                  "masks": masks, "image_id": int(iid)}
        return img, target


def collate_detection(batch: list) -> tuple[list, list]:
    """Lists of images and targets (torchvision detection models take lists)."""
    images, targets = zip(*batch)
    return list(images), list(targets)


@dataclass(frozen=True)
class CropItem:
    """Where one attribute-head example comes from: image, object and optional part."""

    image_index: int
    object_index: int
    part: str | None


class AttributeCropDataset(Dataset):
    """4-channel crops (RGB + instance mask) with attribute labels, from ground-truth masks.

    Args:
        root, split: the variant folder and split.
        crop_size: side of the square crops.
        parts: also yield one item per visible part (labels: part name, color, material).
        margin: context kept around the instance box, as a fraction of its size.

    Each item is ``(crop (4, S, S) float, labels)``; object labels hold an index per attribute of
    ``OBJECT_ATTRIBUTES`` and ``position`` (2,) = ground-plane (x, y); part labels hold
    ``PART_ATTRIBUTES`` (part name index in ``ontology.part_names``); ``kind`` is 0 for objects
    and 1 for parts.
    """

    def __init__(self, root: str | Path, split: str, crop_size: int = 64, parts: bool = False,
                 margin: float = 0.15):
        self.root, self.split, self.crop_size, self.margin = Path(root), split, int(crop_size), float(margin)
        path = self.root / "scenes" / f"{split}_scenes.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no scenes for split {split!r} (generate the split first)")
        self.scenes = {s.image_index: s.record for s in read_scenes(path)}
        self.onto = load_ontology("superclevr")
        self.items: list[CropItem] = []
        for idx in sorted(self.scenes):
            for k, o in enumerate(self.scenes[idx]["objects"]):
                self.items.append(CropItem(idx, k, None))
                if parts:
                    self.items += [CropItem(idx, k, name) for name in sorted(o.get("part_masks", {}))]

    def __len__(self) -> int:
        return len(self.items)

    def labels(self, item: CropItem) -> dict[str, Any]:
        """Attribute indices of an item (the attribute head's order: ``Ontology.scene_values``)."""
        o = self.scenes[item.image_index]["objects"][item.object_index]
        v = self.onto.scene_values  # the attribute head's output order (no column for addi)
        if item.part is None:
            out = {a: v(a).index(o.get(a, "none") if a == "texture" else o[a]) for a in OBJECT_ATTRIBUTES}
            out["position"] = torch.tensor(o["3d_coords"][:2], dtype=torch.float32)
            out["kind"] = 0
            return out
        pa = o.get("parts", {}).get(item.part, {})  # unlisted parts look like their object
        return {"partname": self.onto.part_names.index(item.part), "color": v("color").index(pa.get("color", o["color"])),
                "material": v("material").index(pa.get("material", o["material"])), "kind": 1}

    def __getitem__(self, i: int) -> tuple[torch.Tensor, dict[str, Any]]:
        item = self.items[i]
        scene = self.scenes[item.image_index]
        o = scene["objects"][item.object_index]
        ann = o if item.part is None else o["part_masks"][item.part]
        img = read_image(self.root / "images" / self.split / scene["image_filename"])
        mask = torch.from_numpy(rle_to_mask(ann["mask"])).float()[None]
        return crop_instance(img, mask, ann["bbox"], self.crop_size, self.margin), self.labels(item)
