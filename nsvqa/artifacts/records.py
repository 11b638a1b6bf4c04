"""What every artifact document shares: opening its file, writing it, sequence access to its
records, and the one join of records to the images they are about (:func:`index_by_image`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator, Mapping, TypeVar

from executors.errors import FormatError
from executors.io import read_json

from nsvqa.fileio import write_json_atomic


def read_document(path: str | os.PathLike, what: str, error: type[FormatError] = FormatError) -> Any:
    """The JSON of the ``what`` file ``path``.

    Raises:
        error: no such file, or invalid JSON (a truncated file); the message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise error(f"{path}: no {what} file")
    try:
        return read_json(path)
    except FormatError as e:
        if isinstance(e, error):
            raise
        raise error(str(e)) from None


def read_object(path: str | os.PathLike, what: str, fields: str, error: type[FormatError] = FormatError) -> Mapping:
    """:func:`read_document` of a file whose top level must be an object (``fields`` spells its
    keys in the message)."""
    doc = read_document(path, what, error)
    if not isinstance(doc, Mapping):
        raise error(f"{Path(path)}: expected an object {{{fields}}}, got {type(doc).__name__}")
    return doc


def write_document(path: str | os.PathLike, records: Any, cls: type, info: Mapping[str, Any] | None) -> None:
    """Write a document of class ``cls`` (a :class:`RecordSequence` made as ``cls(info, records)``)
    atomically, as compact JSON: ``records`` itself when it is one, else ``cls(info, tuple(records))``."""
    doc = records if isinstance(records, cls) else cls(info, tuple(records))
    write_json_atomic(path, doc.to_json())


R = TypeVar("R")


def index_by_image(records: Iterable[R], path: str | os.PathLike | None, what: str,
                   questions: Iterable[Any] = (), error: type[FormatError] = FormatError, *,
                   every_question: bool = False) -> dict[int, R]:
    """``image_index -> record`` of ``records`` (scenes, parsed scenes: anything with
    ``image_index`` and ``image_filename``), read from ``path``; the join every consumer uses to
    pair a question, an image or a ground-truth scene with its record. Records are joined by
    ``image_index``, never by position, and the join is checked: two records of one index, or a
    question (``image_index``, ``image_filename``, ``where``: :class:`~nsvqa.artifacts.Question`)
    whose file name differs from the record's of the same index, is an error. With
    ``every_question``, so is a question without ``image_index`` or whose index has no record (a
    run would answer it without its image: a guess).

    Raises:
        error: naming ``path``, the item and both values.
    """
    out: dict[int, R] = {}
    for k, r in enumerate(records):
        i = r.image_index
        if i in out:
            raise error(f"{path}, {what} {k}, field 'image_index': {i} again (already {what} of "
                        f"{out[i].image_filename!r}); each image has one {what}")
        out[i] = r
    for q in questions:
        r = out.get(q.image_index)
        if r is not None:
            check_same_image(q.where, q.image_index, q.image_filename, r.image_filename, path, what, error)
        elif every_question:
            raise error(f"{q.where}, field 'image_index': {q.image_index!r}: no {what} of that image in {path}; "
                        f"the question cannot be answered from its image")
    return out


def check_same_image(where: str, image_index: Any, image_filename: str | None, other_filename: str | None,
                     path: str | os.PathLike | None, what: str, error: type[FormatError] = FormatError) -> None:
    """The item at ``where`` (of ``image_index``, about ``image_filename``) and the ``what`` of the
    same index in ``path`` (about ``other_filename``) are about one image (either name None: no check).

    Raises:
        error: naming the item, the file and both file names.
    """
    if image_filename is not None and other_filename is not None and image_filename != other_filename:
        raise error(f"{where}, field 'image_filename': {image_filename!r}, but the {what} of image_index "
                    f"{image_index} in {path} is of {other_filename!r}: the files do not pair up")


class RecordSequence:
    """``len``, iteration and indexing over the tuple of records a document holds, named by the
    class attribute ``RECORDS`` (``"questions"``, ``"scenes"``, ``"programs"``)."""

    RECORDS: ClassVar[str]

    def __len__(self) -> int:
        return len(getattr(self, self.RECORDS))

    def __iter__(self) -> Iterator[Any]:
        return iter(getattr(self, self.RECORDS))

    def __getitem__(self, i: Any) -> Any:
        return getattr(self, self.RECORDS)[i]


__all__ = ["RecordSequence", "check_same_image", "index_by_image", "read_document", "read_object", "write_document"]
