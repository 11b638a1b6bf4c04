"""Trained parsers from their checkpoints, and the scene parser run over a split: what parsing, the
pipeline and the experiment load.

Each checkpoint rebuilds its network from the config it holds, read by
:meth:`nsvqa.config.Config.from_dict` (a field an older checkpoint lacks, such as the scene
parser's network sizes before they were config fields, takes the value of the checkpoint's
profile: the one place of that fallback). Nothing here trains.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, TypeVar

import numpy as np
from torch import nn
from tqdm import tqdm

from executors import load_ontology
from nsvqa.artifacts.images import check_images, read_image
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.training.checkpoint import CheckpointError, checkpoint_files, load_checkpoint
from nsvqa.config import Config
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.training.scene_config import SceneParserConfig
from parsers.question.question_parser import QuestionParser
import parsers.scene.detector
from parsers.scene.attribute_head import AttributeHead
from parsers.scene.scene_parser import SceneParser

QUESTION_CHECKPOINT = "question_parser.pt"
QUESTION_KIND = "question_parser"
DETECTOR_CHECKPOINT = "detector.pt"
DETECTOR_KIND = "detector"
HEAD_CHECKPOINT = "attributes.pt"
HEAD_KIND = "attributes"

C = TypeVar("C", bound=Config)


def checkpoint_config(cls: type[C], ckpt: Mapping[str, Any], where: str = "checkpoint") -> C:
    """The config of a loaded checkpoint as ``cls`` (:meth:`Config.from_dict`).

    Raises:
        nsvqa.training.checkpoint.CheckpointError: an unusable config (``where`` and the field named).
    """
    try:
        return cls.from_dict(ckpt["config"], f"{where}, config")
    except ValueError as e:
        raise CheckpointError(str(e)) from None


# ---------------------------------------------------------------------------- question parser
def load_question_parser(path: str | Path, device: str = "cpu") -> QuestionParser:
    """A :class:`QuestionParser` (eval mode) from ``question_parser.pt`` or a run directory holding
    one.

    Raises:
        nsvqa.training.checkpoint.CheckpointError: no such checkpoint, or an unusable one (file and field named).
    """
    path = Path(path)
    if path.is_dir():
        path = path / QUESTION_CHECKPOINT
    ck = load_checkpoint(path, kind=QUESTION_KIND)
    cfg = checkpoint_config(QuestionParserConfig, ck, str(path))
    return QuestionParser.from_payload({**ck, "config": cfg.to_dict()}, where=str(path), device=device)


# ---------------------------------------------------------------------------- scene parser
def detector_from_checkpoint(ckpt: Mapping[str, Any], where: str = "detector checkpoint") -> nn.Module:
    """The Mask R-CNN (eval mode) of a loaded ``detector.pt`` payload, built from its config."""
    v = ckpt["vocabularies"]
    h, w = v["image_size"]
    # every weight comes from the checkpoint: the pretrained backbone's file is not read
    model = parsers.scene.detector.from_config(checkpoint_config(SceneParserConfig, ckpt, where), v["num_classes"],
                                               h, w, pretrained=False)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval()


def head_from_checkpoint(ckpt: Mapping[str, Any], where: str = "attributes checkpoint") -> AttributeHead:
    """The attribute head (eval mode) of a loaded ``attributes.pt`` payload, built from its config."""
    vocab = ckpt["vocabularies"]["attributes"]
    # every weight comes from the checkpoint: the pretrained trunk's file is not read
    head = AttributeHead.from_config(checkpoint_config(SceneParserConfig, ckpt, where),
                                     {a: len(v) for a, v in vocab.items()}, pretrained=False)
    head.load_state_dict(ckpt["state_dict"])
    return head.eval()


def load_scene_parser(run_dir: str | Path, min_score: float | None = None) -> SceneParser:
    """A :class:`SceneParser` from a run directory's ``attributes.pt`` and ``detector.pt`` (or the
    detector its config names, when the run has none).

    Args:
        run_dir: the scene-parser run directory.
        min_score: detections kept (None: the run config's ``min_score``).

    Raises:
        nsvqa.training.checkpoint.CheckpointError: a missing or unusable checkpoint (file and field named).
    """
    run_dir = Path(run_dir)
    head_path = run_dir / HEAD_CHECKPOINT
    head_ck = load_checkpoint(head_path, kind=HEAD_KIND)
    cfg = checkpoint_config(SceneParserConfig, head_ck, str(head_path))
    det_path = run_dir / DETECTOR_CHECKPOINT
    if not checkpoint_files(det_path) and cfg.detector:
        det_path = Path(cfg.detector)  # the head was trained for another run's detector
    det_ck = load_checkpoint(det_path, kind=DETECTOR_KIND)
    return scene_parser_from(detector_from_checkpoint(det_ck, str(det_path)), det_ck["vocabularies"],
                             head_from_checkpoint(head_ck, str(head_path)), head_ck["vocabularies"], cfg,
                             min_score=min_score, detector_path=str(det_path))


def scene_parser_from(detector: nn.Module, detector_vocabulary: Mapping[str, Any], head: AttributeHead,
                      head_vocabularies: Mapping[str, Any], cfg: SceneParserConfig, *, min_score: float | None = None,
                      detector_path: str | None = None) -> SceneParser:
    """A :class:`SceneParser` of networks in memory (what :func:`load_scene_parser` reads from a run,
    and what training evaluates with): the detector's class vocabulary decides how parts and
    class-agnostic outputs are named.

    Args:
        detector_vocabulary: a detector checkpoint's ``vocabularies``.
        head_vocabularies: an attribute checkpoint's ``vocabularies`` (``attributes``, ``directions``).
        cfg: the run config (crop size, the default ``min_score``).

    Raises:
        CheckpointError: a class-agnostic vocabulary without a class id for some shape or part name.
    """
    dv = detector_vocabulary
    where = detector_path or "detector"
    onto = load_ontology("superclevr")
    agnostic = str(dv.get("mode", "")).startswith("agnostic")
    # a class-agnostic part class has no name of its own: the head's part name is its name
    parts = {int(k): None if agnostic else dv["classes"][str(k)] for k in dv.get("part_class_ids", [])}
    classes, shape_ids, part_ids = dict(dv["classes"]), None, None
    if parts and agnostic:  # part outputs are labelled with the head's most likely part name
        ids = dv.get("part_ids", {})
        missing = [p for p in onto.part_names if p not in ids]
        if missing:
            raise CheckpointError(f"{where}, vocabularies 'part_ids': no class id for parts {missing}")
        part_ids = np.array([ids[p] for p in onto.part_names], dtype=np.int64)
    if agnostic:  # outputs are labelled with the head's most likely shape
        ids = dv["shape_ids"]
        missing = [s for s in onto.scene_values("shape") if s not in ids]
        if missing:
            raise CheckpointError(f"{where}, vocabularies 'shape_ids': no class id for shapes {missing}")
        # an unplaced shape (addi) has no class: the head never predicts it
        shape_ids = np.array([ids.get(s, -1) for s in onto.values("shape")], dtype=np.int64)
        classes = {str(i): name for name, i in ids.items()}
        if part_ids is not None:
            classes |= {str(i): name for name, i in dv["part_ids"].items()}
    return SceneParser(detector, head, onto, head_vocabularies["directions"], cfg.crop_size,
                       cfg.min_score if min_score is None else min_score, parts, detector_classes=classes,
                       shape_label_ids=shape_ids, part_label_ids=part_ids, detector_path=detector_path,
                       head_values=head_vocabularies["attributes"], part_crop=cfg.part_crop,
                       temperatures=head_vocabularies.get("temperatures"))


def parse_split(parser, data: str | Path, split: str, *, batch: int = 4, limit: int | None = None,
                progress: bool = True):
    """Parse the images of ``DATA/images/<split>``: yields ``(image_index, file name, ParsedScene)``.

    Images are listed by ``scenes/<split>_scenes.json`` when it exists, else by sorted file name
    (indices 0, 1, ...). Every image listed (the first ``limit``) is checked before the first is
    parsed (:func:`nsvqa.artifacts.images.check_images`: present, whole, of the split's size).

    Raises:
        FileNotFoundError: no scenes file and no images.
        nsvqa.artifacts.images.ImageFormatError: a missing, truncated or wrong-size image (named).
    """
    data = Path(data)
    spath = scenes_path(data, split)
    if spath.exists():
        items = [(s.image_index, s.image_filename) for s in read_scenes(spath)]
    else:
        files = sorted((data / "images" / split).glob("*.png"))
        if not files:
            raise FileNotFoundError(f"{data / 'images' / split}: no scenes file and no PNG images")
        items = [(k, f.name) for k, f in enumerate(files)]
    items = items[:limit] if limit is not None else items
    size = check_images(data, split, [name for _, name in items], where=str(spath))
    for s in tqdm(range(0, len(items), batch), desc=f"parse {data.name}/{split}", disable=not progress):
        chunk = items[s:s + batch]
        images = [read_image(data / "images" / split / name, size) for _, name in chunk]
        for (idx, name), parsed in zip(chunk, parser.parse(images)):
            yield idx, name, parsed



__all__ = ["parse_split", "load_question_parser", "load_scene_parser", "scene_parser_from", "detector_from_checkpoint", "head_from_checkpoint",
           "checkpoint_config", "QUESTION_CHECKPOINT", "QUESTION_KIND", "DETECTOR_CHECKPOINT", "DETECTOR_KIND",
           "HEAD_CHECKPOINT", "HEAD_KIND"]
