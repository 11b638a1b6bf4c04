"""Atomic file writes: a temporary file beside the target, renamed into place, so a crash never
leaves a half-written file that looks whole. The file gets the usual permissions (0666 less the
umask), not the 0600 of a bare ``tempfile.mkstemp``.

A temporary is named ``.<target name>.<host>-<writer pid>.<random>.tmp`` (``<host>``: 8 hex digits
of the machine's name). A writer killed outright (SIGKILL, power loss) leaves its temporary behind;
:func:`sweep_temporaries` removes those whose writer, on this machine, is no longer alive (and any
older than an hour, whoever wrote it), and every job that writes into a folder calls it when it starts
(checkpoints, dataset generation, feature caches), so a rerun cleans up after the killed run.

:func:`check_writable` is the output preflight every script runs before its work: one line naming
the first output path that cannot be written; :func:`keep_unless_filled` keeps an existing output
from an empty result. :class:`FolderLock` lets one process at a time write a folder (a run, a
split). :func:`read_json_record` reads back a record that later calls add to, refusing (never
replacing) one it cannot read."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


TMP_SUFFIX = ".tmp"
#: a temporary of :func:`atomic_open`: ``.<name>.<host>-<pid>.<random>.tmp``; before the writer was
#: part of the name (``.<name>.<random>.tmp``) only the age tells a stale one
_TMP_WITH_PID = re.compile(r"^\..+\.([0-9a-f]{8})-(\d+)\.[A-Za-z0-9_]+\.tmp$")
_TMP_WITHOUT_PID = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
#: a temporary this old is stale whatever its name says (no atomic write takes an hour)
STALE_AFTER_S = 3600.0


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _writer() -> str:
    """``<host>-<pid>``: who writes a temporary (part of its name)."""
    return f"{_host()}-{os.getpid()}"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def is_stale_temporary(path: str | os.PathLike, now: float | None = None) -> bool:
    """``path`` is a temporary of :func:`atomic_open` whose writer is gone: written on this machine
    by a pid (both in the name) that is no longer a live process, or older than :data:`STALE_AFTER_S`
    (a temporary of another machine sharing the folder is only judged by its age)."""
    path = Path(path)
    m = _TMP_WITH_PID.match(path.name)
    if m is None and _TMP_WITHOUT_PID.match(path.name) is None:
        return False
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except FileNotFoundError:
        return False
    return age > STALE_AFTER_S or (m is not None and m.group(1) == _host() and not _alive(int(m.group(2))))


def sweep_temporaries(folder: str | os.PathLike, recursive: bool = False) -> list[Path]:
    """Remove the stale temporaries (:func:`is_stale_temporary`) in ``folder`` (and its sub-folders
    when ``recursive``): files of :func:`atomic_open` and folders of :func:`temporary_folder`; a
    missing folder is fine. Live writers' temporaries are kept.

    Returns:
        the paths removed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    removed = []
    for path in list(folder.rglob(f".*{TMP_SUFFIX}") if recursive else folder.glob(f".*{TMP_SUFFIX}")):
        if path.is_symlink() or not is_stale_temporary(path):
            continue
        try:
            if path.is_dir():
                shutil.rmtree(path)  # its links are removed, not followed
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


def temporary_folder(parent: str | os.PathLike, name: str) -> Path:
    """A new folder ``PARENT/.<name>.<host>-<pid>.<random>.tmp`` for a job's scratch files: the
    caller removes it; when the job is killed before, :func:`sweep_temporaries` of ``parent``
    removes it once its writer is gone."""
    Path(parent).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{name}.{_writer()}.", suffix=TMP_SUFFIX, dir=parent))


class OutputNotWritable(OSError):
    """An output path that cannot be written (the message names it and why)."""


class OutputFile(type(Path())):
    """A path that names a file to write (an argparse ``type``): :func:`check_writable` refuses an
    existing folder there."""


class OutputFolder(type(Path())):
    """A path that names a folder to write into (an argparse ``type``): :func:`check_writable`
    refuses an existing file there."""


class EmptyOutput(ValueError):
    """A call that produced nothing, whose output exists: it is kept (the message names it)."""


def keep_unless_filled(path: str | os.PathLike, n: int, what: str) -> None:
    """An existing output is never replaced by an empty one: call before writing ``n`` ``what``
    (``"parsed images"``) to ``path``.

    Raises:
        EmptyOutput: ``n`` is 0 and ``path`` exists (named, left as it was).
    """
    if n == 0 and Path(path).exists():
        raise EmptyOutput(f"{path}: this call produced no {what}; the existing file is kept (nothing written). "
                          f"Check the input and --limit, or remove the file first")


def check_writable(*paths: str | os.PathLike | None) -> None:
    """The output preflight: each path (a file to be written, or a folder to write into when it is
    one already or has no suffix; an :class:`OutputFile` is a file and an :class:`OutputFolder` a
    folder, whatever is there now) can be created or replaced by this process. It tries: a
    temporary is created (and removed) in the nearest existing folder, so a read-only mount or a
    folder without write permission is found, not guessed. ``None`` entries are skipped.

    Raises:
        OutputNotWritable: the first path that cannot be written, named, with the reason in one line.
    """
    for p in paths:
        if p is None:
            continue
        path = Path(p)
        if isinstance(p, OutputFile) and path.is_dir():
            raise OutputNotWritable(f"{path}: is a folder; a file is written there (name the file)")
        if isinstance(p, OutputFolder) and path.exists() and not path.is_dir():
            raise OutputNotWritable(f"{path}: is a file; a folder is written there")
        folder = (path.parent if isinstance(p, OutputFile) else path if isinstance(p, OutputFolder)
                  or path.is_dir() or (not path.exists() and not path.suffix) else path.parent)
        probe = folder
        while not probe.exists() and probe.parent != probe:  # the nearest existing ancestor
            probe = probe.parent
        if not probe.is_dir():
            raise OutputNotWritable(f"{path}: cannot write there: {probe} is a file, not a folder")
        try:
            fd, tmp = tempfile.mkstemp(dir=probe, prefix=f".write-check.{_writer()}.", suffix=TMP_SUFFIX)
        except OSError as e:
            raise OutputNotWritable(f"{path}: cannot write there: {probe}: {e.strerror or e}") from None
        os.close(fd)
        os.unlink(tmp)


class FolderInUse(OSError):
    """Another live process writes the folder (the message names it: pid, host, since when)."""


#: the lock file of a folder one process writes at a time (a run folder, a split being generated)
LOCK_NAME = ".nsvqa.lock"


class FolderLock:
    """One writer at a time for a folder: a lock file ``<folder>/<name>`` created exclusively and
    holding ``<host>-<pid>`` (as temporaries do), the host name and the time. A lock whose writer,
    on this machine, no longer runs (SIGKILL) is taken over; one this process holds already is
    shared (the outer holder removes it); another live process's is refused. Use ``with``, or
    :meth:`acquire` and :meth:`release`.

    Args:
        folder: the folder (created).
        what: what the folder is, for the message (``"run folder"``, ``"split mid/train"``).
        name: the lock file's name (one folder may hold several, e.g. one per split).
    """

    def __init__(self, folder: str | os.PathLike, what: str = "folder", name: str = LOCK_NAME):
        self.folder, self.what, self.path = Path(folder), what, Path(folder) / name
        self.owned = False

    def acquire(self) -> "FolderLock":
        """Take the lock.

        Raises:
            FolderInUse: a live process (another pid on this machine, or any on another machine)
                holds it; the message names the folder, the holder and the lock file.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666 & ~_umask())
            except FileExistsError:
                try:
                    holder = self.path.read_text()
                except FileNotFoundError:
                    continue  # released meanwhile: try again
                m = re.match(r"^([0-9a-f]{8})-(\d+) ", holder)
                if m is not None and m.group(1) == _host() and int(m.group(2)) == os.getpid():
                    return self  # this process holds it already
                if m is not None and m.group(1) == _host() and not _alive(int(m.group(2))):
                    self.path.unlink(missing_ok=True)  # its writer was killed: stale
                    continue
                who = holder.split(" ", 1)[1].strip() if m is not None else "a process being started"
                raise FolderInUse(f"{self.folder}: {self.what} in use by {who} (lock {self.path}); wait for it to "
                                  f"end, or stop it (remove the lock only if that process is gone)") from None
            with os.fdopen(fd, "w") as f:
                f.write(f"{_writer()} process {os.getpid()} on {socket.gethostname()} since "
                        f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n")
            self.owned = True
            return self
        raise FolderInUse(f"{self.folder}: could not take the lock {self.path}")

    def release(self) -> None:
        """Give the lock back (removes the file when this object took it)."""
        if self.owned:
            self.owned = False
            try:
                if self.path.read_text().startswith(f"{_writer()} "):
                    self.path.unlink()
            except FileNotFoundError:
                pass

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", *, fsync: bool = False) -> Iterator[IO]:
    """``with atomic_open(p, "w") as f: ...`` writes ``p`` atomically (creating its folder): the
    file appears whole when the block ends, and not at all when it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_writer()}.", suffix=TMP_SUFFIX)
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


def read_json_record(path: str | os.PathLike, error: type[Exception], holds: str) -> dict[str, Any] | None:
    """The JSON object in ``path``, None where there is no file. A record that calls add to (run
    summaries, ledgers of attempts) is read through this before any work, so that one damaged
    from outside stops the call instead of being replaced.

    Raises:
        error: the file is there but is not a JSON object; the message names the file and says it
            holds ``holds``.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise error(f"{path}: not readable JSON ({type(e).__name__}: {e}); it holds {holds}: mend it, or move it "
                    f"aside") from e
    if not isinstance(record, dict):
        raise error(f"{path}: expected a JSON object; it holds {holds}")
    return record
