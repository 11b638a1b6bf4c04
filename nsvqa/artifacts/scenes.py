"""The scenes file: ``<variant>/scenes/<split>_scenes.json``.

Format (the Super-CLEVR scene schema, docs/formats.md, "Scene records")::

    {"info": {...}, "scenes": [{"image_index", "image_filename", "split", "directions", "objects":
                                [{"shape", ..., "3d_coords", "pixel_coords", "parts", "bbox", "mask",
                                  "part_masks"}], "relationships", "camera", ...}, ...]}

or a bare list of scenes, or one scene. :func:`read_scenes` checks what every consumer relies on
(the scene's identity and its list of objects) and keeps each scene's record; the richer views
(:meth:`SceneRecord.symbolic`, :meth:`SceneRecord.boxes`) check their own fields and name the
file, the scene, the object and the field. ``executors.io.load_scenes`` stays the numpy-only
reader of :class:`~executors.scene.SymbolicScene` lists.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from executors.errors import FormatError
from executors.io import scene_records
from executors.ontology import Ontology
from executors.scene import SymbolicScene, check_image_filename

from nsvqa.artifacts.records import RecordSequence, index_by_image, read_document, write_document


def scenes_path(folder: str | os.PathLike, split: str) -> Path:
    """``FOLDER/scenes/<split>_scenes.json`` of a variant folder."""
    return Path(folder) / "scenes" / f"{split}_scenes.json"


@dataclass(frozen=True)
class SceneRecord:
    """One scene of a scenes file.

    Attributes:
        index: position of the scene in its file.
        image_index: the record's ``image_index``, else ``index``.
        image_filename: the rendered image's file name, or None.
        objects: the object records (dicts of the scene schema), in order.
        record: the scene as it is in the file (what :func:`write_scenes` writes back).
        where: ``"<file>, scene <index>"`` for error messages (not compared).
    """

    index: int
    image_index: int
    image_filename: str | None
    objects: tuple[Mapping[str, Any], ...]
    record: Mapping[str, Any]
    where: str = field(default="", compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.objects)

    def to_json(self) -> dict:
        return dict(self.record)

    def boxes(self) -> np.ndarray:
        """(N, 4) float32 xyxy pixel boxes of the objects, from their ``bbox`` ``[x, y, w, h]``.

        Raises:
            FormatError: an object without a 4-number ``bbox`` (file, scene, object, field).
        """
        rows = []
        for j, o in enumerate(self.objects):
            b = o.get("bbox")
            if not (isinstance(b, list) and len(b) == 4 and all(isinstance(v, (int, float)) for v in b)):
                raise FormatError(f"{self.where}, object {j}, field 'bbox': expected [x, y, w, h], got {b!r}")
            rows.append([b[0], b[1], b[0] + b[2], b[1] + b[3]])
        return np.asarray(rows, dtype=np.float32).reshape(-1, 4)

    def symbolic(self, ontology: Ontology) -> SymbolicScene:
        """The scene as a :class:`SymbolicScene` (FormatError naming file, scene, object, field)."""
        return SymbolicScene.from_json(self.record, ontology, where=self.where)

    @classmethod
    def from_json(cls, record: Any, *, index: int, where: str) -> "SceneRecord":
        """Read one scene record (see :func:`read_scenes`)."""
        if not isinstance(record, Mapping):
            raise FormatError(f"{where}: expected an object, got {type(record).__name__}")
        image_index = record.get("image_index", index)
        if not isinstance(image_index, int) or isinstance(image_index, bool):
            raise FormatError(f"{where}, field 'image_index': expected an integer, got {image_index!r}")
        image = record.get("image_filename")
        if image is not None:
            check_image_filename(image, where)
        objects = record.get("objects", [])
        if not isinstance(objects, list):
            raise FormatError(f"{where}, field 'objects': expected a list, got {type(objects).__name__}")
        for j, o in enumerate(objects):
            if not isinstance(o, Mapping):
                raise FormatError(f"{where}, object {j}: expected an object, got {type(o).__name__}")
        return cls(index, image_index, image, tuple(objects), record, where)


@dataclass(frozen=True)
class ScenesFile(RecordSequence):
    """The scenes of one file, in file order (a sequence of :class:`SceneRecord`).

    Attributes:
        info: the file's ``info`` object; None for a bare list or a single scene.
        scenes: one :class:`SceneRecord` per scene.
        path: where it was read from (not compared).
    """

    info: Mapping[str, Any] | None
    scenes: tuple[SceneRecord, ...]
    path: Path | None = field(default=None, compare=False)
    RECORDS: ClassVar[str] = "scenes"




    def by_image_index(self, questions: Iterable[Any] = (), *, every_question: bool = False) -> dict[int, SceneRecord]:
        """image_index -> scene, checked (:func:`~nsvqa.artifacts.records.index_by_image`): two
        scenes of one index, or one of ``questions`` about another image file than its scene (with
        ``every_question``: or about an image without a scene), is a FormatError naming the file,
        the item and both values."""
        return index_by_image(self.scenes, self.path, "scene", questions, every_question=every_question)

    def by_filename(self) -> dict[str, SceneRecord]:
        """image_filename -> scene, for the scenes that name their image."""
        return {s.image_filename: s for s in self.scenes if s.image_filename is not None}

    def to_json(self) -> Any:
        records = [s.to_json() for s in self.scenes]
        return records if self.info is None else {"info": dict(self.info), "scenes": records}


def read_scenes(path: str | os.PathLike) -> ScenesFile:
    """Read a scenes file (``{"info", "scenes": [...]}``, a bare list, or one scene).

    Each scene must be an object; ``image_index`` (when present) an integer, ``image_filename``
    (when present) a relative file name, ``objects`` (when present) a list of objects.

    Raises:
        FormatError: no such file, invalid JSON (a truncated file), a bad top level or a bad scene;
            the message names the file, the scene (position), the object and the field.
    """
    path = Path(path)
    data = read_document(path, "scenes")
    records = scene_records(data, str(path))
    info = None
    if isinstance(data, dict) and "scenes" in data:
        info = data.get("info", {})
        if not isinstance(info, Mapping):
            raise FormatError(f"{path}, field 'info': expected an object, got {type(info).__name__}")
    scenes = tuple(SceneRecord.from_json(r, index=k, where=f"{path}, scene {k}") for k, r in enumerate(records))
    return ScenesFile(info, scenes, path)


def write_scenes(path: str | os.PathLike, scenes: ScenesFile | Sequence[SceneRecord],
                 info: Mapping[str, Any] | None = None) -> None:
    """Write a scenes file atomically (compact JSON, as the generator writes it): a
    :class:`ScenesFile`, or ``scenes`` with ``info`` (a bare list when ``info`` is None)."""
    write_document(path, scenes, ScenesFile, info)


__all__ = ["SceneRecord", "ScenesFile", "read_scenes", "write_scenes", "scenes_path"]
