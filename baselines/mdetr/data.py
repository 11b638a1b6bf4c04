"""mDETR's data: grounding targets from the scenes' boxes, the grounded QA dataset and its batches."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from PIL import Image
from torch.nn import functional as F
from torch.utils.data import Dataset

from executors.errors import FormatError
from executors.ontology import Ontology

from baselines.common import QARecord, image_inputs, load_images, normalise_images
from baselines.mdetr.network import positive_map, tokenize_questions
from nsvqa.artifacts.questions import questions_path
from nsvqa.artifacts.scenes import read_scenes, scenes_path


# ---------------------------------------------------------------------------- grounding targets
_KEY = re.compile(r"^(\d+)(?:_(\d+))?$")


def _image_size(scene: dict, image: Path | None) -> tuple[float, float]:
    """(width, height) of the rendering: an object's RLE mask ``size`` [H, W], else the image."""
    for o in scene.get("objects") or ():
        size = (o.get("mask") or {}).get("size") if isinstance(o, dict) else None
        if isinstance(size, (list, tuple)) and len(size) == 2 and min(size) > 0:
            return float(size[1]), float(size[0])
    if image is not None and image.is_file():
        with Image.open(image) as im:
            return float(im.size[0]), float(im.size[1])
    raise FileNotFoundError(f"{image}: image missing (needed for the rendering size of its boxes)")


def _box(b: Any, size: tuple[float, float], where: str) -> torch.Tensor | None:
    """A pixel ``[x, y, w, h]`` as normalised (cx, cy, w, h); None for a box of zero area."""
    if not (isinstance(b, (list, tuple)) and len(b) == 4 and all(isinstance(v, (int, float)) for v in b)):
        raise FormatError(f"{where}, field 'bbox': expected [x, y, w, h], got {b!r}")
    x, y, w, h = (float(v) for v in b)
    if w <= 0 or h <= 0:
        return None
    W, H = size
    return torch.tensor([(x + w / 2) / W, (y + h / 2) / H, w / W, h / H]).clamp_(0.0, 1.0)


def grounding_targets(folder: str | Path, split: str, records: Sequence[QARecord], offsets: Sequence,
                      ontology: Ontology) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The targets of each question: boxes (n, 4) normalised (cx, cy, w, h) and positive token maps
    (n, tokens) bool, from its ``obj_map`` and ``scenes/<split>_scenes.json``.

    Raises:
        FormatError: a question without ``obj_map`` or with a malformed one (a key that is no object,
            or no part, of its scene; bad spans), a question whose image has no scene, a malformed
            scene box; the message names the file, the question (or scene, object) and the field.
    """
    folder = Path(folder)
    qpath = questions_path(folder, split)
    spath = scenes_path(folder, split)
    if not spath.is_file():
        raise FormatError(f"{spath}: no scenes file (mdetr trains on the scenes' boxes)")
    scenes = read_scenes(spath)
    by_file = {s.image_filename: k for k, s in enumerate(scenes) if s.image_filename is not None}
    sizes: dict[int, tuple[float, float]] = {}
    boxes, positives = [], []
    for r, offs in zip(records, offsets):
        where = f"{qpath}, question {r.index}"
        k = by_file.get(r.image_filename)
        if k is None:
            raise FormatError(f"{where}, field 'image_filename': {r.image_filename!r} has no scene in {spath}")
        scene = scenes[k].record
        objects = scenes[k].objects
        if k not in sizes:
            sizes[k] = _image_size(scene, folder / "images" / split / r.image_filename)
        omap = r.obj_map
        if omap is None:
            raise FormatError(f"{where}: missing field 'obj_map'")
        if not isinstance(omap, dict):
            raise FormatError(f"{where}, field 'obj_map': expected an object, got {type(omap).__name__}")
        bs, spans = [], []
        for key, ss in omap.items():
            m = _KEY.match(str(key))
            if not m or int(m.group(1)) >= len(objects):
                raise FormatError(f"{where}, field 'obj_map': key {key!r} is not an object of the scene "
                                  f"({len(objects)} objects in {spath}, scene {k})")
            if not (isinstance(ss, list) and all(isinstance(s, (list, tuple)) and len(s) == 2
                                                  and all(isinstance(v, int) for v in s) and 0 <= s[0] <= s[1]
                                                  for s in ss)):
                raise FormatError(f"{where}, field 'obj_map': key {key!r}: expected [[start, end], ...], got {ss!r}")
            i, obj = int(m.group(1)), objects[int(m.group(1))]
            owhere = f"{spath}, scene {k}, object {i}"
            if m.group(2) is None:
                box = _box(obj.get("bbox"), sizes[k], owhere)
            else:
                names = ontology.parts_of(obj.get("shape", "")) if ontology.has_parts else ()
                p = int(m.group(2))
                if p >= len(names):
                    raise FormatError(f"{where}, field 'obj_map': key {key!r} is not a part of object {i} "
                                      f"({obj.get('shape')!r} has {len(names)} parts)")
                pm = (obj.get("part_masks") or {}).get(names[p])
                box = _box(pm["bbox"], sizes[k], f"{owhere}, part {names[p]!r}") if pm and "bbox" in pm else None
            if box is not None:
                bs.append(box)
                spans.append(ss)
        boxes.append(torch.stack(bs) if bs else torch.zeros((0, 4)))
        positives.append(positive_map(offs, spans))
    return boxes, positives


# ---------------------------------------------------------------------------- data
def answer_groups(answers: Sequence[str]) -> list[list[int]]:
    """The answer ids of each type of :data:`ANSWER_TYPES` (yes/no, the numbers 0..10, the rest)."""
    groups: list[list[int]] = [[], [], []]
    numbers = {str(n) for n in range(11)}
    for i, a in enumerate(answers):
        groups[0 if a in ("yes", "no") else 1 if a in numbers else 2].append(i)
    return groups


@dataclass
class GroundedQA(Dataset):
    """A split ready for the network, a Dataset of questions (collated by :func:`collate_grounded`):
    token ids per question (``lengths`` (N,)), answer ids (N,) (-1 unknown), image rows (N,) into
    ``images`` (M, 3, H, W) uint8, and for training the grounding targets (boxes, positive maps;
    None otherwise).

    Item ``i``: ``{"ids": (T_i,) int64, "image": (3, H, W) uint8, "answer": () int64}`` and, with
    targets, ``"boxes": (n, 4)``, ``"positives": (n, T_i) bool``.
    """

    ids: list[list[int]]
    lengths: np.ndarray
    answers: torch.Tensor
    image_rows: torch.Tensor
    images: torch.Tensor
    boxes: list[torch.Tensor] | None = None
    positives: list[torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        item = {"ids": torch.tensor(self.ids[i], dtype=torch.long), "image": self.images[self.image_rows[i]],
                "answer": self.answers[i]}
        if self.boxes is not None:
            item |= {"boxes": self.boxes[i], "positives": self.positives[i]}
        return item


def collate_grounded(items: Sequence[dict[str, torch.Tensor]]) -> dict[str, Any]:
    """Items of :class:`GroundedQA` -> ``ids`` (B, T) int64 (0-padded), ``text_mask`` (B, T) bool
    (True = a token), ``images`` (B, 3, H, W) float normalised, ``answers`` (B,), and ``targets``:
    [(boxes (n, 4), positives (n, T) bool)] per question, or None without grounding targets."""
    T = max(len(it["ids"]) for it in items)
    ids = torch.zeros((len(items), T), dtype=torch.long)
    mask = torch.zeros((len(items), T), dtype=torch.bool)
    for b, it in enumerate(items):
        ids[b, :len(it["ids"])] = it["ids"]
        mask[b, :len(it["ids"])] = True
    images = torch.stack([it["image"] for it in items])
    out = {"ids": ids, "text_mask": mask,
           "images": normalise_images(images) if images.dtype == torch.uint8 else images.float(),
           "answers": torch.stack([it["answer"] for it in items]), "targets": None}
    if "boxes" in items[0]:
        out["targets"] = [(it["boxes"], F.pad(it["positives"], (0, T - it["positives"].shape[1]))) for it in items]
    return out


def encode_split(folder: str | Path, split: str, records: Sequence[QARecord], answers: Sequence[str],
                 cfg: "MDETRConfig", onto: Ontology, *, targets: bool, cache: Path | None = None,
                 progress: bool = False) -> GroundedQA:
    """Tokenise ``records``, read their images and (``targets``) their grounding targets."""
    ids, offsets = tokenize_questions([r.question for r in records], cfg.max_tokens)
    index = {a: i for i, a in enumerate(answers)}
    ans = torch.tensor([index.get(r.answer, -1) if r.answer is not None else -1 for r in records], dtype=torch.long)
    if records and cfg.backbone == "lite0":  # the frozen backbone's cached maps of the split
        images, rows = image_inputs(folder, split, [r.image_filename for r in records], cfg, progress=progress)
    elif records:
        images, rows = load_images(folder, split, [r.image_filename for r in records], cfg.image_width,
                                   cfg.image_height, cache=cache, progress=progress)
    else:
        images, rows = torch.zeros((0, 3, cfg.image_height, cfg.image_width), dtype=torch.uint8), {}
    image_rows = torch.tensor([rows[r.image_filename] for r in records], dtype=torch.long)
    data = GroundedQA(ids, np.array([len(x) for x in ids], dtype=np.int64), ans, image_rows, images)
    if targets:
        data.boxes, data.positives = grounding_targets(folder, split, records, offsets, onto)
    return data
