"""What every artifact document shares: opening its file, and sequence access to its records."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Iterator, Mapping

from executors.errors import FormatError
from executors.io import read_json


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


__all__ = ["RecordSequence", "read_document", "read_object"]
