"""The one strict JSON reader of this project (:func:`loads_json`, :func:`read_json`): every JSON
file any package reads goes through it. Standard library only, so that every module of
``executors`` (the ontology loader included) can use it."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from .errors import FormatError

#: an integer literal longer than this (digits and sign) does not fit a 64-bit float (max ~1.8e308)
MAX_INT_CHARS = 309


class _Unfit:
    """Stands in, while a text is parsed, for a number literal that is refused (found afterwards)."""

    __slots__ = ("literal", "why")

    def __init__(self, literal: str, why: str):
        self.literal, self.why = literal, why


def _json_path(path: list) -> str:
    """``questions[12].answer`` of the keys and indices ``path`` ("the top level" when empty)."""
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out or "the top level"


def _find(doc: Any, hit) -> list | None:
    """The keys and indices from ``doc`` to the first value (document order) for which ``hit`` holds."""
    stack: list = [(doc, [])]
    while stack:
        v, path = stack.pop()
        if hit(v):
            return path
        if isinstance(v, dict):
            stack.extend((x, path + [k]) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, path + [i]) for i, x in reversed(list(enumerate(v))))
    return None


def loads_json(data: str | bytes, source: str, *, allow_nan: bool = False) -> Any:
    """The one strict JSON reader of this project (every file it reads goes through it).

    Refused, as a :class:`FormatError` of one line starting with ``source`` (a file, or
    ``"FILE, line N"`` for a JSON-lines record): bytes that are not UTF-8; text that is not JSON;
    an object with a key twice (which value holds would be the parser's choice: the message names
    the record, e.g. ``questions[12]``, and the key); a number that does not fit a 64-bit float
    (``1e999``, an integer of more than :data:`MAX_INT_CHARS` characters); the non-JSON literals
    ``NaN``, ``Infinity`` and ``-Infinity`` unless ``allow_nan`` (records this project wrote
    with Python's default ``json.dumps``).

    Args:
        data: the file's bytes (decoded as UTF-8) or text.
        source: where the text is from, for the messages.
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise FormatError(f"{source}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}, line "
                              f"{line}); JSON files are UTF-8") from None
    dups: dict[int, str] = {}  # id of an object with a repeated key -> the first such key
    unfit: list[_Unfit] = []  # the refused numbers, in the order read

    def refuse(literal: str, why: str) -> _Unfit:
        unfit.append(_Unfit(literal, why))
        return unfit[-1]

    def pairs(items: list) -> dict:
        d = dict(items)
        if len(d) != len(items):
            seen: set = set()
            dups[id(d)] = next(k for k, _ in items if k in seen or seen.add(k))
        return d

    def number(s: str) -> Any:
        x = float(s)
        return x if math.isfinite(x) else refuse(s, "does not fit a 64-bit float")

    def integer(s: str) -> Any:
        return int(s) if len(s) <= MAX_INT_CHARS else refuse(f"{s[:12]}... ({len(s)} characters)",
                                                             "does not fit a 64-bit float")

    def constant(s: str) -> Any:
        return float(s) if allow_nan else refuse(s, "is not a JSON number (numbers are finite)")

    try:
        doc = json.loads(data, object_pairs_hook=pairs, parse_float=number, parse_int=integer,
                         parse_constant=constant)
    except json.JSONDecodeError as e:
        raise FormatError(f"{source}: not valid JSON ({e.msg}: line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise FormatError(f"{source}: not readable JSON (nested too deep)") from None
    if unfit:  # (one under a key given twice may be gone from the tree: then the key is named)
        at = _find(doc, lambda v: type(v) is _Unfit)
        if at is not None:
            v = doc
            for k in at:
                v = v[k]
            raise FormatError(f"{source}, at {_json_path(at)}: the number {v.literal} {v.why}")
    if dups:  # the outermost object with a key twice is in the tree (an inner one may be gone)
        at = _find(doc, lambda v: type(v) is dict and id(v) in dups) or []
        obj = doc
        for k in at:
            obj = obj[k]
        raise FormatError(f"{source}, at {_json_path(at)}, key {dups.get(id(obj), '?')!r}: given twice in one "
                          f"object (which value holds would be ambiguous); keep one")
    if unfit:
        raise FormatError(f"{source}: the number {unfit[0].literal} {unfit[0].why}")
    return doc


def read_json(path: str | os.PathLike, *, allow_nan: bool = False) -> Any:
    """The JSON of the file ``path``, read by :func:`loads_json` (strict; errors name the file)."""
    p = Path(path)
    return loads_json(p.read_bytes(), str(p), allow_nan=allow_nan)


__all__ = ["MAX_INT_CHARS", "loads_json", "read_json"]
