"""NSCL's data: questions with their programs and boxes (ground truth or detected), images, curriculum batches."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from executors.errors import ExecutionError, FormatError
from executors.ontology import Ontology
from executors.program import Program

from baselines.common import image_inputs, load_images, normalise_images
from baselines.nscl.config import NSCLConfig, parse_curriculum
from nsvqa.artifacts.likelihoods import read_likelihoods
from nsvqa.artifacts.programs import read_programs
from nsvqa.artifacts.questions import QuestionsFile, questions_path, read_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.training.sampling import GroupBatches


# ---------------------------------------------------------------------------- data
@dataclass
class NSCLQuestion:
    """One question ready for the executor: its program and output types, its answer (normalised;
    None when unknown), its image row, and whether its program is usable."""

    index: int
    program: Program | None
    types: tuple[str, ...]
    answer: str | None
    image_row: int


@dataclass
class NSCLSplit(Dataset):
    """Questions, images (uint8, resized) and per image the boxes (xyxy, resized pixels): a Dataset
    of questions (collated by :func:`collate_nscl`; :class:`NSCLImages` is the Dataset of its images).

    Item ``i``: ``{"index": () int64 (= i), "row": () int64 image row, "image": (3, H, W) uint8,
    "boxes": (n, 4) float32}``.
    """

    questions: list[NSCLQuestion]
    images: torch.Tensor
    boxes: list[torch.Tensor]
    files: list[str]

    def __len__(self) -> int:
        return len(self.questions)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        row = self.questions[i].image_row
        return {"index": torch.tensor(i, dtype=torch.long), "row": torch.tensor(row, dtype=torch.long),
                "image": self.images[row], "boxes": self.boxes[row]}


class NSCLImages(Dataset):
    """The images of an :class:`NSCLSplit` (by row), collated by :func:`collate_nscl_images`.

    Item ``r``: ``{"row": () int64 (= r), "image": (3, H, W) uint8, "boxes": (n, 4) float32}``.
    """

    def __init__(self, split: NSCLSplit):
        self.split = split

    def __len__(self) -> int:
        return len(self.split.files)

    def __getitem__(self, r: int) -> dict[str, torch.Tensor]:
        return {"row": torch.tensor(r, dtype=torch.long), "image": self.split.images[r], "boxes": self.split.boxes[r]}


def collate_nscl_images(items: Sequence[dict[str, torch.Tensor]]) -> dict[str, Any]:
    """Items of :class:`NSCLImages` -> ``rows`` (R,) int64, ``images`` (R, 3, H, W) float normalised
    (or the cached maps (R, C, h, w) as float), ``boxes`` [R x (n, 4)]."""
    images = torch.stack([it["image"] for it in items])
    return {"rows": torch.stack([it["row"] for it in items]),
            "images": normalise_images(images) if images.dtype == torch.uint8 else images.float(),
            "boxes": [it["boxes"] for it in items]}


def collate_nscl(items: Sequence[dict[str, torch.Tensor]]) -> dict[str, Any]:
    """Items of :class:`NSCLSplit` (questions) -> their distinct images, in order of first
    appearance (:func:`collate_nscl_images`: ``rows`` (R,), ``images``, ``boxes``), ``index`` (B,)
    int64 the questions and ``image_of`` (B,) int64 the position of each question's image among
    the R."""
    first: dict[int, dict[str, torch.Tensor]] = {}
    for it in items:
        first.setdefault(int(it["row"]), it)
    pos = {row: k for k, row in enumerate(first)}
    return collate_nscl_images(list(first.values())) | {
        "index": torch.stack([it["index"] for it in items]),
        "image_of": torch.tensor([pos[int(it["row"])] for it in items], dtype=torch.long)}


def _image_size(path: Path) -> tuple[int, int]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: image file missing")
    with Image.open(path) as im:
        return im.size


def scene_boxes(folder: Path, split: str) -> dict[str, np.ndarray]:
    """image file -> (n, 4) xyxy boxes (pixels of the rendered image) of the ground-truth scenes.

    Raises:
        FormatError: a missing scenes file, or an object without a 4-number ``bbox`` (file, scene,
            object and field named).
    """
    return {s.image_filename or f"#{s.index}": s.boxes() for s in read_scenes(scenes_path(folder, split))}


def detection_boxes(path: str | Path, min_score: float, ontology: Ontology | None = None) -> dict[str, np.ndarray]:
    """image file -> (n, 4) xyxy boxes of a scene parser's ``likelihoods.json`` scoring >= min_score
    (:func:`nsvqa.artifacts.read_likelihoods`).

    Raises:
        FormatError: no such file, or a malformed one (file, scene, detection and field named).
    """
    return read_likelihoods(path, ontology).boxes(min_score)


def parsed_programs(path: str | Path, n: int | Sequence[Any]) -> list[Program | None]:
    """The programs of a question parser's ``programs.json`` (None where it gave none), for ``n``
    questions (a number or the questions read).

    Raises:
        FormatError: no such file, a malformed one, or a number of programs other than ``n``.
    """
    return read_programs(path, questions=n).program_list()


def load_split(folder: Path, split: str, onto: Ontology, cfg: NSCLConfig, *, require_answer: bool,
               limit: int | None = None, boxes: Mapping[str, np.ndarray] | None = None,
               programs: Sequence[Program | None] | None = None, cache: Path | None = None,
               progress: bool = False, questions: QuestionsFile | None = None) -> NSCLSplit:
    """A split for NSCL: questions with typed programs (``programs`` replaces the file's; an
    invalid one becomes None), resized images, and boxes (``boxes`` replaces the scenes' ones).

    ``questions``: the split's questions file already read (:func:`nsvqa.artifacts.read_questions`
    with ``require_image``; with the checks below), else it is read here.

    Raises:
        FormatError: a question without a usable program or answer where required (file, question
            and field named), a missing scenes file, or an image without boxes in ``boxes``.
    """
    if questions is None:
        questions = read_questions(questions_path(folder, split), onto, require_image=True,
                                   require_answer=require_answer, require_program=programs is None and require_answer,
                                   require_valid=programs is None, limit=limit)
    items = list(questions)[:limit]  # NSCL reads programs, not the text
    if programs is not None and len(programs) < len(items):
        raise FormatError(f"{questions.path}: {len(programs)} programs for {len(items)} questions")
    files = [q.image_filename for q in items]
    if boxes is None:
        boxes = scene_boxes(folder, split)
    distinct = list(dict.fromkeys(files))
    if cfg.backbone == "lite0":  # the split's cached maps, those of these images in this order
        maps, at = image_inputs(folder, split, distinct, cfg, progress=progress)
        images, rows = maps[[at[f] for f in distinct]], {f: i for i, f in enumerate(distinct)}
    else:
        images, rows = load_images(folder, split, distinct, cfg.image_width, cfg.image_height, cache=cache,
                                   progress=progress)
    box_rows = []
    for name in distinct:
        if name not in boxes:
            raise FormatError(f"{folder}: no boxes for image {name!r} of split {split!r}")
        w, h = _image_size(folder / "images" / split / name)
        scale = np.array([cfg.image_width / w, cfg.image_height / h] * 2, dtype=np.float32)
        box_rows.append(torch.from_numpy(boxes[name] * scale))
    out = []
    for k, q in enumerate(items):
        if programs is None:  # the file's, validated once by the reader
            program, types = q.program, q.program_types
            if program is not None and types is None:  # read without the ontology
                try:
                    types = tuple(program.validate(onto))
                except ExecutionError as e:
                    raise FormatError(f"{q.where}, field 'program': {e}") from None
            types = types or ()
        else:
            program, types = programs[k], ()
            if program is not None:
                try:
                    types = tuple(program.validate(onto))
                except ExecutionError:
                    program = None  # a parser's invalid program: answered by a guess
        out.append(NSCLQuestion(k, program, types, q.answer, rows[files[k]]))
    return NSCLSplit(out, images, box_rows, distinct)


class CurriculumSampler(GroupBatches):
    """The questions of step ``s``: ``images_per_batch`` images among those with a question
    eligible at ``s``'s curriculum stage, and up to ``questions_per_image`` of each image's eligible
    questions, drawn from ``(seed, s)`` only (:class:`nsvqa.training.sampling.GroupBatches` over
    the images of each stage)."""

    def __init__(self, split: NSCLSplit, cfg: NSCLConfig):
        self.cfg = cfg
        q_nodes = np.array([len(q.program) if q.program is not None else 10 ** 6 for q in split.questions])
        q_img = np.array([q.image_row for q in split.questions])
        n_obj = np.array([len(b) for b in split.boxes])
        usable = np.array([q.program is not None and q.answer is not None for q in split.questions])
        stages = []  # (end step, question indices per image row)
        for frac, max_nodes, max_obj in parse_curriculum(cfg.curriculum) + [(1.0, 10 ** 6, 10 ** 6)]:
            ok = usable & (q_nodes <= max_nodes) & (n_obj[q_img] <= max_obj)
            if not ok.any():  # an empty stage trains on the next one's questions
                continue
            per_image: dict[int, np.ndarray] = {}
            for i in np.flatnonzero(ok):
                per_image.setdefault(int(q_img[i]), []).append(int(i))  # type: ignore[arg-type]
            stages.append((frac * cfg.steps, {k: np.asarray(v) for k, v in per_image.items()}))
        if not stages:
            raise ValueError("no training question has a program and an answer")
        super().__init__(stages, cfg.seed, cfg.images_per_batch, cfg.questions_per_image)
