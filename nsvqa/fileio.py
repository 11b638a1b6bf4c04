"""Atomic file writes: a temporary file beside the target, renamed into place, so a crash never
leaves a half-written file that looks whole. The file gets the usual permissions (0666 less the
umask), not the 0600 of a bare ``tempfile.mkstemp``."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", *, fsync: bool = False) -> Iterator[IO]:
    """``with atomic_open(p, "w") as f: ...`` writes ``p`` atomically (creating its folder): the
    file appears whole when the block ends, and not at all when it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def sha256_file(path: str | os.PathLike) -> str:
    """The hex sha256 of a file's bytes."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def sha256_folder(folder: str | os.PathLike) -> str:
    """The hex sha256 of a folder's files (names relative to it, and each file's sha256, in sorted
    order; sub-folders included): two folders with the same files have the same digest, wherever
    they are."""
    folder = Path(folder)
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\n".encode())
    return h.hexdigest()


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` (bytes, or text as UTF-8) to ``path`` atomically; creates the folder."""
    with atomic_open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def write_json_atomic(path: str | os.PathLike, obj: Any, indent: int | None = None) -> None:
    """JSON of ``obj`` (compact unless ``indent``), newline-terminated, written atomically."""
    sep = None if indent is not None else (",", ":")
    write_atomic(path, json.dumps(obj, indent=indent, separators=sep) + "\n")
