"""What every artifact document shares: sequence access to its records."""
from __future__ import annotations

from typing import Any, ClassVar, Iterator


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


__all__ = ["RecordSequence"]
