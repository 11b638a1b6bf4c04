"""The scene parser's output: ``likelihoods.json`` (``RUN/parsed/<test variant>/likelihoods.json``,
``scripts/parse_scenes.py --out``)::

    {"version": 1, "checkpoint": RUN_DIR, "detector": DETECTOR.pt, "data": ROOT/VARIANT,
     "split": "test", "min_score": 0.5, "detector_classes": {id: name}, ...extra (e.g. "provenance"),
     "scenes": [{"image_index", "image_filename",
                 "likelihoods": SceneLikelihoods.to_json(),                         # N objects
                 "detections": [{"box": xyxy, "score", "label", "mask": RLE}],      # objects, row i
                 "parts": [{"object": i | -1, "box", "score", "label", "mask": RLE}]}]}

Detection ``i`` is row ``i`` of the scene's likelihoods; ``score`` is its existence probability
(P-NSVQA), NSCL keeps the boxes scoring at least its ``min_score``. :func:`read_likelihoods`
returns a :class:`LikelihoodsDocument` (header, one :class:`ParsedSceneRecord` per image);
:func:`write_likelihoods` writes one atomically. Errors are :class:`LikelihoodsFormatError` naming
the file, the scene (its position), the detection and the field.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from executors.errors import FormatError
from executors.ontology import Ontology, load_ontology
from executors.scene import SceneLikelihoods

from nsvqa.artifacts.records import RecordSequence, read_object
from nsvqa.fileio import write_json_atomic
from nsvqa.generation.annotations import mask_to_rle

FORMAT_VERSION = 1
#: the score above which parsed scenes keep a detection, for the study and every end-to-end
#: evaluation: P-NSVQA weighs uncertain detections by their existence, NS-VQA's argmax scene drops
#: those below 0.5 (a scene-parser config's ``min_score`` chooses the head's detector crops)
PARSE_MIN_SCORE = 0.05
#: The header fields, in the order they are written (then the extra fields, then ``scenes``).
HEADER_FIELDS = ("version", "checkpoint", "detector", "data", "split", "min_score", "detector_classes")


class LikelihoodsFormatError(FormatError):
    """A malformed likelihoods file; the message names the file, scene, detection and field."""


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class Detection:
    """One detection of a parsed image.

    Attributes:
        box: (x1, y1, x2, y2) in pixels of the image.
        score: the detector's score (the object's existence probability).
        label: the detector's class id (``detector_classes``).
        mask: the mask as COCO RLE (``{"size": [H, W], "counts": str}``), or None.
        object: for a part, the row of the object it belongs to (-1: none); None for an object.
    """

    box: tuple[float, float, float, float]
    score: float
    label: int
    mask: Mapping[str, Any] | None = None
    object: int | None = None

    def to_json(self) -> dict:
        out = {} if self.object is None else {"object": self.object}
        return out | {"box": list(self.box), "score": self.score, "label": self.label,
                      "mask": None if self.mask is None else dict(self.mask)}

    @classmethod
    def from_json(cls, d: Any, where: str, *, part: bool) -> "Detection":
        if not isinstance(d, Mapping):
            raise LikelihoodsFormatError(f"{where}: expected an object, got {type(d).__name__}")
        b = d.get("box")
        if not (isinstance(b, list) and len(b) == 4 and all(_number(v) for v in b)):
            raise LikelihoodsFormatError(f"{where}, field 'box': expected [x1, y1, x2, y2], got {b!r}")
        score = d.get("score")
        if not _number(score):
            raise LikelihoodsFormatError(f"{where}, field 'score': expected a number, got {score!r}")
        label = d.get("label")
        if not isinstance(label, int) or isinstance(label, bool):
            raise LikelihoodsFormatError(f"{where}, field 'label': expected an integer class id, got {label!r}")
        mask = d.get("mask")
        if mask is not None and not isinstance(mask, Mapping):
            raise LikelihoodsFormatError(f"{where}, field 'mask': expected an RLE object, got {type(mask).__name__}")
        obj = None
        if part:
            obj = d.get("object")
            if not isinstance(obj, int) or isinstance(obj, bool) or obj < -1:
                raise LikelihoodsFormatError(f"{where}, field 'object': expected an object row or -1, got {obj!r}")
        return cls(tuple(b), score, label, mask, obj)


@dataclass(frozen=True, eq=False)
class ParsedSceneRecord:
    """One parsed image: its likelihoods (N objects) and its detections (row i = object i).

    Attributes:
        image_index: the image's index (the questions' ``image_index``).
        image_filename: the image's file name, or None.
        likelihoods: the hand-off to the executors.
        detections: N object detections.
        parts: the part detections (``object`` names the owner row).

    Two records are equal when their JSON is (the likelihoods hold arrays).
    """

    image_index: int
    image_filename: str | None
    likelihoods: SceneLikelihoods
    detections: tuple[Detection, ...]
    parts: tuple[Detection, ...] = ()

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, ParsedSceneRecord):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def boxes(self, min_score: float = 0.0) -> np.ndarray:
        """(n, 4) float32 xyxy boxes of the object detections scoring >= ``min_score``."""
        rows = [d.box for d in self.detections if d.score >= min_score]
        return np.asarray(rows, dtype=np.float32).reshape(-1, 4)

    def to_json(self) -> dict:
        return {"image_index": self.image_index, "image_filename": self.image_filename,
                "likelihoods": self.likelihoods.to_json(), "detections": [d.to_json() for d in self.detections],
                "parts": [p.to_json() for p in self.parts]}

    @classmethod
    def from_parsed(cls, parsed: Any, image_index: int, image_filename: str | None) -> "ParsedSceneRecord":
        """The record of a :class:`parsers.scene.scene_parser.ParsedScene` (masks become RLE; the
        likelihoods get ``image_index``)."""
        parsed.likelihoods.image_index = image_index
        dets = tuple(Detection(tuple(float(v) for v in b), float(s), int(c), mask_to_rle(m)[0])
                     for b, s, c, m in zip(parsed.boxes, parsed.scores, parsed.labels, parsed.masks))
        parts: tuple[Detection, ...] = ()
        if parsed.part_masks is not None:
            parts = tuple(Detection(tuple(float(v) for v in b), float(s), int(c), mask_to_rle(m)[0], int(o))
                          for o, b, s, c, m in zip(parsed.part_owner, parsed.part_boxes, parsed.part_scores,
                                                   parsed.part_labels, parsed.part_masks))
        return cls(int(image_index), image_filename, parsed.likelihoods, dets, parts)

    @classmethod
    def from_json(cls, s: Any, ontology: Ontology, where: str) -> "ParsedSceneRecord":
        if not isinstance(s, Mapping):
            raise LikelihoodsFormatError(f"{where}: expected an object, got {type(s).__name__}")
        for name in ("image_index", "likelihoods", "detections", "parts"):
            if name not in s:
                raise LikelihoodsFormatError(f"{where}: missing field {name!r}")
        idx = s["image_index"]
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise LikelihoodsFormatError(f"{where}, field 'image_index': expected an integer, got {idx!r}")
        name = s.get("image_filename")
        if name is not None and not isinstance(name, str):
            raise LikelihoodsFormatError(f"{where}, field 'image_filename': expected a string, got {type(name).__name__}")
        for key in ("detections", "parts"):
            if not isinstance(s[key], list):
                raise LikelihoodsFormatError(f"{where}, field {key!r}: expected a list, got {type(s[key]).__name__}")
        if not isinstance(s["likelihoods"], Mapping):
            raise LikelihoodsFormatError(f"{where}, field 'likelihoods': expected an object, "
                                         f"got {type(s['likelihoods']).__name__}")
        try:
            lik = SceneLikelihoods.from_json(s["likelihoods"], ontology, where=where)
        except FormatError as e:
            raise LikelihoodsFormatError(str(e)) from None
        dets = tuple(Detection.from_json(d, f"{where}, detection {j}", part=False)
                     for j, d in enumerate(s["detections"]))
        parts = tuple(Detection.from_json(d, f"{where}, part {j}", part=True) for j, d in enumerate(s["parts"]))
        if len(dets) != len(lik):
            raise LikelihoodsFormatError(f"{where}, field 'detections': {len(dets)} detections for the {len(lik)} "
                                         f"objects of 'likelihoods'")
        for j, p in enumerate(parts):
            if p.object >= len(dets):
                raise LikelihoodsFormatError(f"{where}, part {j}, field 'object': {p.object} but the scene has "
                                             f"{len(dets)} objects")
        return cls(idx, name, lik, dets, parts)


@dataclass(frozen=True)
class LikelihoodsHeader:
    """The document's fields besides its scenes.

    Attributes:
        version: :data:`FORMAT_VERSION`.
        checkpoint: the scene parser's run directory; detector: its detector checkpoint.
        data: the variant folder parsed; split: its split.
        min_score: the detection score cut the parser applied.
        detector_classes: class id (string) -> name.
        extra: further fields, written after these in order (the experiment's ``provenance``).
    """

    version: int = FORMAT_VERSION
    checkpoint: str | None = None
    detector: str | None = None
    data: str | None = None
    split: str | None = None
    min_score: float | None = None
    detector_classes: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.detector_classes is not None:  # JSON object keys are strings
            object.__setattr__(self, "detector_classes", {str(k): v for k, v in self.detector_classes.items()})
        clash = set(self.extra) & {*HEADER_FIELDS, "scenes"}
        if clash:
            raise ValueError(f"extra header fields {sorted(clash)} clash with the document's own fields")

    @classmethod
    def from_parser(cls, parser: Any, checkpoint: str | os.PathLike, data: str | os.PathLike, split: str,
                    **extra: Any) -> "LikelihoodsHeader":
        """The header of ``parser``'s (a :class:`parsers.scene.scene_parser.SceneParser` loaded by
        :func:`nsvqa.training.scene_parser.load_scene_parser`) parse of ``data``'s ``split``."""
        return cls(FORMAT_VERSION, str(checkpoint), parser.detector_path, str(data), split, parser.min_score,
                   parser.detector_classes, dict(extra))

    def to_json(self) -> dict:
        out = {"version": self.version, "checkpoint": self.checkpoint, "detector": self.detector, "data": self.data,
               "split": self.split, "min_score": self.min_score,
               "detector_classes": None if self.detector_classes is None else dict(self.detector_classes)}
        return out | dict(self.extra)


@dataclass(frozen=True)
class LikelihoodsDocument(RecordSequence):
    """A likelihoods file: its header and one record per parsed image, in file order.

    Attributes:
        header: :class:`LikelihoodsHeader`.
        scenes: one :class:`ParsedSceneRecord` per image.
        path: where it was read from (not compared).
    """

    header: LikelihoodsHeader
    scenes: tuple[ParsedSceneRecord, ...]
    path: Path | None = field(default=None, compare=False)
    RECORDS: ClassVar[str] = "scenes"



    @property
    def likelihoods(self) -> list[SceneLikelihoods]:
        """One :class:`SceneLikelihoods` per scene, in file order."""
        return [s.likelihoods for s in self.scenes]

    def boxes(self, min_score: float = 0.0) -> dict[str, np.ndarray]:
        """image file -> (n, 4) float32 xyxy boxes of its object detections scoring >= ``min_score``.

        Raises:
            LikelihoodsFormatError: a scene without an ``image_filename``.
        """
        out = {}
        for k, s in enumerate(self.scenes):
            if s.image_filename is None:
                raise LikelihoodsFormatError(f"{self.path}, scene {k}, field 'image_filename': expected a string")
            out[s.image_filename] = s.boxes(min_score)
        return out

    def to_json(self) -> dict:
        return self.header.to_json() | {"scenes": [s.to_json() for s in self.scenes]}


def read_likelihoods(path: str | os.PathLike, ontology: Ontology | None = None) -> LikelihoodsDocument:
    """Read a likelihoods file (``ontology``: the column order of the distributions; default
    ``superclevr``).

    The header needs ``version`` = :data:`FORMAT_VERSION` (its other fields may be absent, then
    None); every scene needs ``image_index``, ``likelihoods``, ``detections`` (one per likelihoods
    row: box, score, label, mask) and ``parts`` (object, box, score, label, mask).

    Raises:
        LikelihoodsFormatError: no such file, invalid JSON (a truncated file), another version, a
            bad scene or detection (file, scene, detection and field named).
    """
    path = Path(path)
    doc = read_object(path, "likelihoods", "'version', ..., 'scenes'", LikelihoodsFormatError)
    if doc.get("version") != FORMAT_VERSION or isinstance(doc.get("version"), bool):
        raise LikelihoodsFormatError(f"{path}, field 'version': expected {FORMAT_VERSION}, got {doc.get('version')!r}")
    if not isinstance(doc.get("scenes"), list):
        raise LikelihoodsFormatError(f"{path}, field 'scenes': expected a list, got {type(doc.get('scenes')).__name__}")
    for name, kind in (("checkpoint", str), ("detector", str), ("data", str), ("split", str),
                       ("detector_classes", Mapping)):
        if doc.get(name) is not None and not isinstance(doc[name], kind):
            raise LikelihoodsFormatError(f"{path}, field {name!r}: expected "
                                         f"{'a string' if kind is str else 'an object'}, got {type(doc[name]).__name__}")
    if doc.get("min_score") is not None and not _number(doc["min_score"]):
        raise LikelihoodsFormatError(f"{path}, field 'min_score': expected a number, got {doc['min_score']!r}")
    extra = {k: v for k, v in doc.items() if k not in HEADER_FIELDS and k != "scenes"}
    header = LikelihoodsHeader(FORMAT_VERSION, *(doc.get(k) for k in HEADER_FIELDS[1:]), extra)
    onto = ontology or load_ontology("superclevr")
    scenes = tuple(ParsedSceneRecord.from_json(s, onto, f"{path}, scene {k}") for k, s in enumerate(doc["scenes"]))
    return LikelihoodsDocument(header, scenes, path)


def write_likelihoods(path: str | os.PathLike, doc: LikelihoodsDocument | LikelihoodsHeader,
                      scenes: Sequence[ParsedSceneRecord] | None = None) -> None:
    """Write a likelihoods file atomically (compact JSON): a :class:`LikelihoodsDocument`, or a
    header and its scenes."""
    if isinstance(doc, LikelihoodsHeader):
        doc = LikelihoodsDocument(doc, tuple(scenes or ()))
    elif scenes is not None:
        raise TypeError("write_likelihoods: scenes are given twice (in the document and as an argument)")
    write_json_atomic(path, doc.to_json())


__all__ = ["FORMAT_VERSION", "PARSE_MIN_SCORE", "Detection", "ParsedSceneRecord", "LikelihoodsHeader", "LikelihoodsDocument",
           "LikelihoodsFormatError", "read_likelihoods", "write_likelihoods"]
