"""torch Datasets over the generator's on-disk format (docs/formats.md).

* :class:`DetectionDataset` — images with torchvision detection targets (boxes, labels, masks)
  from ``annotations/<split>_coco.json``: the 21 shapes or one ``object`` class, and in the parts
  modes also the parts the scenes list (one class per part name, or one ``part`` class).
* :class:`AttributeCropDataset` — one item per object (and per visible part): a 4-channel crop
  (RGB + the instance mask) resized to a square, with the attribute labels as ontology indices and,
  for objects, the ground-plane position that the attribute head regresses.
"""
from __future__ import annotations

import contextlib
import io

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pycocotools.coco import COCO
from torch.utils.data import Dataset

from executors import load_ontology
from nsvqa.artifacts.images import read_image
from nsvqa.artifacts.scenes import read_scenes
from nsvqa.generation.annotations import rle_to_mask
from nsvqa.training.scene_config import MODES, PART_MODES
from parsers.scene.crops import check_part_crop, crop_instance

OBJECT_ATTRIBUTES = ("shape", "color", "material", "size", "texture")
PART_ATTRIBUTES = ("partname", "color", "material")


class DetectionDataset(Dataset):
    """Images and torchvision detection targets of one split of a generated variant.

    Args:
        root: the variant folder (``ROOT/VARIANT``).
        split: ``train`` | ``val`` | ``test``.
        mode: the detector's classes (:data:`MODES`):

            - ``objects``: the 21 shapes (COCO category ids);
            - ``objects+parts``: the shapes and one class per part name (COCO ids);
            - ``agnostic``: one class, ``object`` = 1 (the attribute head tells the shape);
            - ``agnostic+parts``: ``object`` = 1 and ``part`` = 2 (the head tells shape and part name).

    Parts: the parts modes train on the parts the scene **lists**, not on every visible part. A
    scene lists a part when its colour or material differs from its object's (the official engine's
    convention; an unlisted part looks like its object), so a listed part is a region that looks
    different from the rest of the object, while an unlisted one (a door the colour of its car) has
    nothing to see but seams. The COCO file holds every visible part (~78 per image, median area
    13 px at 320x240); the listed ones are those a question can tell apart.

    Each item is ``(image (3, H, W) float, target)`` with target ``boxes`` (N, 4) float32 xyxy,
    ``labels`` (N,) int64, ``masks`` (N, H, W) uint8, ``image_id`` int.

    Attributes:
        categories: class id -> name (background 0 excluded).
        part_class_ids: the class ids that are parts (empty without parts).
        shape_ids, part_ids: shape / part name -> COCO category id (every mode; class-agnostic
            outputs are labelled through them).
    """

    def __init__(self, root: str | Path, split: str, mode: str = "objects"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.root, self.split, self.mode = Path(root), split, mode
        path = self.root / "annotations" / f"{split}_coco.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no COCO annotations for split {split!r} (generate the split first)")
        with contextlib.redirect_stdout(io.StringIO()):
            self.coco = COCO(str(path))
        self.image_ids = sorted(self.coco.getImgIds())
        cats = self.coco.loadCats(self.coco.getCatIds())
        self.shape_ids = {c["name"]: c["id"] for c in cats if c["supercategory"] == "object"}
        self.part_ids = {c["name"]: c["id"] for c in cats if c["supercategory"] == "part"}
        self.parts = mode in PART_MODES
        if mode == "agnostic":
            self.categories = {1: "object"}
        elif mode == "agnostic+parts":
            self.categories = {1: "object", 2: "part"}
        else:
            self.categories = {i: n for n, i in self.shape_ids.items()}
            if self.parts:
                self.categories |= {i: n for n, i in self.part_ids.items()}
        self.categories = dict(sorted(self.categories.items()))
        self.part_class_ids = ([2] if mode == "agnostic+parts" else
                               sorted(self.part_ids.values()) if self.parts else [])
        self._part_cats = set(self.part_ids.values())
        self._listed: dict[int, set[tuple[int, str]]] = {}
        if self.parts:
            scenes = self.root / "scenes" / f"{split}_scenes.json"
            if not scenes.exists():
                raise FileNotFoundError(f"{scenes}: mode {mode!r} needs the scenes (which parts they list)")
            self._listed = {s.image_index: {(k, p) for k, o in enumerate(s.record["objects"])
                                             for p in o.get("parts", {})} for s in read_scenes(scenes)}

    @property
    def num_classes(self) -> int:
        """Classes including the background (torchvision's convention)."""
        return max(self.categories) + 1

    def __len__(self) -> int:
        return len(self.image_ids)

    def annotations(self, image_id: int) -> list[dict]:
        """The COCO annotations of one image that this mode trains on (non-empty masks; parts only
        the listed ones, and only in the parts modes)."""
        listed = self._listed.get(image_id, set())
        out = []
        for a in self.coco.loadAnns(self.coco.getAnnIds(imgIds=[image_id])):
            if a["area"] <= 0:
                continue
            if a["category_id"] in self._part_cats:
                if not self.parts or (a["object_index"], a.get("part_name")) not in listed:
                    continue
            out.append(a)
        return out

    def label(self, ann: dict) -> int:
        """The class of an annotation in this mode."""
        if self.mode.startswith("agnostic"):
            return 2 if ann["category_id"] in self._part_cats else 1
        return int(ann["category_id"])

    def __getitem__(self, i: int) -> tuple[torch.Tensor, dict[str, Any]]:
        iid = self.image_ids[i]
        info = self.coco.loadImgs(iid)[0]
        img = read_image(self.root / "images" / self.split / info["file_name"])
        anns = self.annotations(iid)
        h, w = info["height"], info["width"]
        boxes = torch.tensor([[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2], a["bbox"][1] + a["bbox"][3]]
                              for a in anns], dtype=torch.float32).reshape(-1, 4)
        masks = (torch.from_numpy(np.stack([self.coco.annToMask(a) for a in anns]))
                 if anns else torch.zeros((0, h, w), dtype=torch.uint8))
        target = {"boxes": boxes, "labels": torch.tensor([self.label(a) for a in anns], dtype=torch.int64),
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
        part_crop: the box a part's crop is cut from: ``"part"`` (its own) or ``"object"`` (its
            object's: the head sees the whole object, the part's mask as the 4th channel).

    Each item is ``(crop (4, S, S) float, labels)``; object labels hold an index per attribute of
    ``OBJECT_ATTRIBUTES`` and ``position`` (2,) = ground-plane (x, y); part labels hold
    ``PART_ATTRIBUTES`` (part name index in ``ontology.part_names``); ``kind`` is 0 for objects
    and 1 for parts.
    """

    def __init__(self, root: str | Path, split: str, crop_size: int, parts: bool = False,
                 margin: float = 0.15, part_crop: str = "part"):
        check_part_crop(part_crop)
        self.root, self.split, self.crop_size, self.margin = Path(root), split, int(crop_size), float(margin)
        self.part_crop = part_crop
        path = self.root / "scenes" / f"{split}_scenes.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no scenes for split {split!r} (generate the split first)")
        self.scenes = {i: s.record for i, s in read_scenes(path).by_image_index().items()}
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

    def mask_and_box(self, item: CropItem) -> tuple[dict, list[float]]:
        """The instance of an item (its annotation: ``mask``, ``bbox``) and the box its crop is cut
        from: the instance's own, or for a part with ``part_crop="object"`` its object's."""
        o = self.scenes[item.image_index]["objects"][item.object_index]
        if item.part is None:
            return o, o["bbox"]
        ann = o["part_masks"][item.part]
        return ann, (o["bbox"] if self.part_crop == "object" else ann["bbox"])

    def __getitem__(self, i: int) -> tuple[torch.Tensor, dict[str, Any]]:
        item = self.items[i]
        scene = self.scenes[item.image_index]
        ann, box = self.mask_and_box(item)
        img = read_image(self.root / "images" / self.split / scene["image_filename"])
        mask = torch.from_numpy(rle_to_mask(ann["mask"])).float()[None]
        return crop_instance(img, mask, box, self.crop_size, self.margin), self.labels(item)
