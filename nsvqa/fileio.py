"""Atomic file writes: a temporary file beside the target, renamed into place, so a crash never
leaves a half-written file that looks whole. The file gets the usual permissions (0666 less the
umask), not the 0600 of a bare ``tempfile.mkstemp``.

A temporary is named ``.<target name>.nsvqa-<host>-<writer pid>.<random>.tmp`` (``<host>``: 8 hex
digits of the machine's name): the ``nsvqa-<host>-<pid>`` marker is what makes it this project's.
A writer killed outright (SIGKILL, power loss) leaves its temporary behind; :func:`sweep_temporaries`
removes those whose writer, on this machine, is no longer alive (and any older than an hour, whoever
wrote it), and every job that writes into a folder calls it when it starts (checkpoints, dataset
generation, feature caches), so a rerun cleans up after the killed run. A file or folder without the
marker is never removed, whatever else its name says (a user's ``tempfile.mkstemp(suffix=".tmp")``).

:func:`check_writable` is the output preflight every script runs before its work: one line naming
the first output path that cannot be written; :func:`keep_unless_filled` keeps an existing output
from an empty result. :class:`FolderLock` lets one process at a time write a folder (a run, a
split), as a lease its holder refreshes (:data:`LEASE_S`). :func:`read_json_record` reads back a
record that later calls add to, refusing (never replacing) one it cannot read."""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import socket
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator

from executors.errors import FormatError
from executors.io import loads_json, read_json


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


log = logging.getLogger(__name__)

TMP_SUFFIX = ".tmp"
#: the marker of this project's temporaries: ``.<name>.nsvqa-<host>-<pid>.<random>.tmp``. Only a name
#: with it is ever swept; the older names (``.<name>.<host>-<pid>.<random>.tmp``,
#: ``.<name>.<random>.tmp``) are what anyone's ``tempfile.mkstemp`` makes, so they are left alone
TMP_MARK = "nsvqa"
_OURS = re.compile(rf"^\..+\.{TMP_MARK}-([0-9a-f]{{8}})-(\d+)\.[A-Za-z0-9_]+\.tmp$")
#: a temporary this old is stale whatever its name says (no atomic write takes an hour)
STALE_AFTER_S = 3600.0


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _writer() -> str:
    """``<host>-<pid>``: who writes a temporary (part of its name)."""
    return f"{_host()}-{os.getpid()}"


def _temporary_prefix(name: str) -> str:
    """``.<name>.nsvqa-<host>-<pid>.``: the start of a temporary's name (``tempfile`` adds the random
    part and :data:`TMP_SUFFIX`)."""
    return f".{name}.{TMP_MARK}-{_writer()}."


def temporary_name(name: str) -> str:
    """A name for a temporary of this process beside ``name``, as :func:`atomic_open` makes them
    (``.<name>.nsvqa-<host>-<pid>.<random>.tmp``): :func:`sweep_temporaries` removes it once this
    process is gone."""
    return f"{_temporary_prefix(name)}{secrets.token_hex(4)}{TMP_SUFFIX}"


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
    """``path`` is a temporary of this project (its name carries the marker
    ``.nsvqa-<host>-<pid>.``, :data:`TMP_MARK`) whose writer is gone: written on this machine by a
    pid that is no longer a live process, or older than :data:`STALE_AFTER_S` (a temporary of another
    machine sharing the folder is only judged by its age). A name without the marker is never one."""
    path = Path(path)
    m = _OURS.match(path.name)
    if m is None:
        return False
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except FileNotFoundError:
        return False
    return age > STALE_AFTER_S or (m.group(1) == _host() and not _alive(int(m.group(2))))


def sweep_temporaries(folder: str | os.PathLike, recursive: bool = False) -> list[Path]:
    """Remove the stale temporaries (:func:`is_stale_temporary`) in ``folder`` (and its sub-folders
    when ``recursive``): files of :func:`atomic_open` and folders of :func:`temporary_folder`, the
    names with this project's marker only (a user's file or folder stays, whatever its name); a
    missing folder is fine. Live writers' temporaries are kept.

    Returns:
        the paths removed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    removed = []
    pattern = f".*.{TMP_MARK}-*{TMP_SUFFIX}"
    for path in list(folder.rglob(pattern) if recursive else folder.glob(pattern)):
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
    """A new folder ``PARENT/.<name>.nsvqa-<host>-<pid>.<random>.tmp`` for a job's scratch files: the
    caller removes it; when the job is killed before, :func:`sweep_temporaries` of ``parent``
    removes it once its writer is gone."""
    Path(parent).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=_temporary_prefix(name), suffix=TMP_SUFFIX, dir=parent))


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
            fd, tmp = tempfile.mkstemp(dir=probe, prefix=_temporary_prefix("write-check"), suffix=TMP_SUFFIX)
        except OSError as e:
            raise OutputNotWritable(f"{path}: cannot write there: {probe}: {e.strerror or e}") from None
        os.close(fd)
        os.unlink(tmp)


def is_variant_folder(path: str | os.PathLike) -> bool:
    """``path`` holds one variant's dataset: the ``questions/`` and ``scenes/`` folders a run reads
    (``check_variant_data``), or a generator's ``manifest.json`` recording splits."""
    p = Path(path)
    if (p / "questions").is_dir() and (p / "scenes").is_dir():
        return True
    try:
        manifest = read_json(p / "manifest.json")
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and isinstance(manifest.get("splits"), dict)


def holds_variants(path: str | os.PathLike) -> bool:
    """``path`` is a data root: a folder holding at least one variant folder (:func:`is_variant_folder`)."""
    p = Path(path)
    return p.is_dir() and any(c.is_dir() and is_variant_folder(c) for c in p.iterdir())


def check_outside_data(out: str | os.PathLike, data: str | os.PathLike | None = None, *, option: str = "--out",
                       variant_folder: bool = False) -> None:
    """A run's output folder (a runs root or a run folder) is never in a dataset: refused when it
    resolves inside a variant folder, onto a data root (its ``<variant>`` run folders would be the
    variant folders), or inside the data root ``data`` names (``variant_folder``: ``data`` is
    ``ROOT/VARIANT`` and the root is its parent), where that root holds variant folders or is not
    made yet. Called before any work (the training scripts' preflight, ``train_variant``).

    Raises:
        OutputNotWritable: naming ``option``, the path and the dataset.
    """
    target = Path(out).resolve()
    for folder in (target, *target.parents):
        if folder.is_dir() and is_variant_folder(folder):
            raise OutputNotWritable(f"{option} {out}: inside the dataset of a variant ({folder}): a run is never "
                                    f"written into its data; choose a folder outside it")
    if holds_variants(target):
        raise OutputNotWritable(f"{option} {out}: a data root (it holds variant folders): its run folders would be "
                                f"the variants' data folders; choose a folder outside it")
    if data is not None:
        root = Path(data).resolve().parent if variant_folder else Path(data).resolve()
        if (target == root or root in target.parents) and (holds_variants(root) or not root.exists()):
            raise OutputNotWritable(f"{option} {out}: inside the data root {data if not variant_folder else root} "
                                    f"(--data {data}); a run is never written into its data: choose a folder "
                                    f"outside it")


class FolderInUse(OSError):
    """Another live process writes the folder (the message names it: pid, host, since when)."""


#: the lock file of a folder one process writes at a time (a run folder, a split being generated)
LOCK_NAME = ".nsvqa.lock"
#: a lock not refreshed for this long (seconds) is taken over from any machine: its holder refreshes
#: it every :data:`LEASE_REFRESH_S`, so six refreshes missed in a row (the machines' clocks must agree
#: far closer than this); a job requeued after its node is lost waits out at most this
LEASE_S = 180.0
#: seconds between a lock holder's refreshes of its lease
LEASE_REFRESH_S = 30.0


class FolderLock:
    """One writer at a time for a folder: a lock file ``<folder>/<name>`` created exclusively and
    holding ``<host>-<pid>`` (as temporaries do), the host name and the time. The lock is a lease:
    while held, a thread of the holder refreshes the file's modification time every ``refresh_s``
    (:data:`LEASE_REFRESH_S`). A lock whose writer, on this machine, no longer runs (SIGKILL) is
    taken over at once; one of another machine (or an unreadable one) that has not been refreshed
    for ``lease_s`` (:data:`LEASE_S`) is taken over from any machine, with one warning line naming
    the old holder (a node lost, its job requeued elsewhere); one this process holds already is
    shared (the outer holder removes it); any other is refused. Use ``with``, or :meth:`acquire`
    and :meth:`release`.

    Args:
        folder: the folder (created).
        what: what the folder is, for the message (``"run folder"``, ``"split mid/train"``).
        name: the lock file's name (one folder may hold several, e.g. one per split).
        lease_s: seconds without a refresh after which another machine's lock is taken over
            (default :data:`LEASE_S`).
        refresh_s: seconds between the holder's refreshes (default :data:`LEASE_REFRESH_S`).
    """

    def __init__(self, folder: str | os.PathLike, what: str = "folder", name: str = LOCK_NAME, *,
                 lease_s: float | None = None, refresh_s: float | None = None):
        self.folder, self.what, self.path = Path(folder), what, Path(folder) / name
        self.lease_s = LEASE_S if lease_s is None else float(lease_s)
        self.refresh_s = LEASE_REFRESH_S if refresh_s is None else float(refresh_s)
        self.owned = False
        self._stop: threading.Event | None = None
        self._refresher: threading.Thread | None = None

    def acquire(self) -> "FolderLock":
        """Take the lock (and start refreshing it).

        Raises:
            FolderInUse: a live process holds it (another pid on this machine; on another machine,
                one whose lease was refreshed within ``lease_s``); the message names the folder,
                the holder and the lock file.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666 & ~_umask())
            except FileExistsError:
                try:
                    holder = self.path.read_text()
                    age = time.time() - self.path.stat().st_mtime
                except FileNotFoundError:
                    continue  # released meanwhile: try again
                m = re.match(r"^([0-9a-f]{8})-(\d+) ", holder)
                here = m is not None and m.group(1) == _host()
                if here and int(m.group(2)) == os.getpid():
                    return self  # this process holds it already
                who = holder.split(" ", 1)[1].strip() if m is not None else "a process being started"
                if here and not _alive(int(m.group(2))):
                    if self._take_over(holder):  # its writer was killed: stale
                        log.info(f"{self.folder}: took over the lock {self.path} of {who}: that process is gone")
                    continue
                if not here and age > self.lease_s:
                    if self._take_over(holder):
                        log.warning(f"{self.folder}: {self.what}: took over the lock {self.path} of {who}: not "
                                    f"refreshed for {age:.0f} s, past its {self.lease_s:.0f}-s lease (that process "
                                    f"or its machine is gone)")
                    continue
                lease = ("" if here else f"; its lease was refreshed {max(age, 0):.0f} s ago and is taken over "
                         f"{self.lease_s:.0f} s after its last refresh")
                raise FolderInUse(f"{self.folder}: {self.what} in use by {who} (lock {self.path}); wait for it to "
                                  f"end, or stop it (remove the lock only if that process is gone){lease}") from None
            with os.fdopen(fd, "w") as f:
                f.write(f"{_writer()} process {os.getpid()} on {socket.gethostname()} since "
                        f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n")
            self.owned = True
            self._stop = threading.Event()
            self._refresher = threading.Thread(target=self._refresh, args=(self._stop,), daemon=True,
                                               name=f"lease {self.path}")
            self._refresher.start()
            return self
        raise FolderInUse(f"{self.folder}: could not take the lock {self.path}")

    def _take_over(self, holder: str) -> bool:
        """Remove the stale lock that read ``holder``, unless another taker replaced it meanwhile:
        it is renamed aside first (one rename wins), and put back when it is not the one judged."""
        aside = self.path.with_name(temporary_name(self.path.name))  # swept if this process dies here
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return False
        try:
            if aside.read_text() == holder:
                return True
            try:
                os.link(aside, self.path)  # a newer holder's lock: give it back
            except OSError:
                pass
            return False
        finally:
            aside.unlink(missing_ok=True)

    def _refresh(self, stop: threading.Event) -> None:
        """The holder's lease: touch the lock every ``refresh_s`` until released; stop, with a
        warning, once the file is no longer this process's."""
        mine = f"{_writer()} "
        while not stop.wait(self.refresh_s):
            try:
                held = self.path.read_text().startswith(mine)
                if held:
                    os.utime(self.path)
            except OSError:
                held = False
            if not held:
                if not stop.is_set():
                    log.warning(f"{self.folder}: the lock {self.path} is no longer this process's (removed, or "
                                f"taken over after its lease ran out): another process may write this "
                                f"{self.what} too")
                return

    def release(self) -> None:
        """Give the lock back (stops its refreshes; removes the file when this object took it)."""
        if self.owned:
            self.owned = False
            if self._stop is not None:
                self._stop.set()
                self._refresher.join(timeout=10)
                self._stop = self._refresher = None
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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temporary_prefix(path.name), suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as e:
        full = disk_full(e, Path(tmp), path)  # before the temporary goes: its size, the disk's free bytes
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if full is not None:
            raise full from e
        raise


class DiskFull(OSError):
    """A write that found no room on its disk (the message, one line, names the file, the bytes it
    needs and the bytes free); the file it would replace is kept, so the job resumes when rerun."""


#: free bytes below which a failed write is taken for a full disk whatever the error says (torch's
#: writer reports ENOSPC as ``RuntimeError: ... unexpected pos``)
FULL_BELOW = 1 << 20


def disk_full(error: BaseException, tmp: Path, path: Path) -> DiskFull | None:
    """The :class:`DiskFull` that ``error``, raised while :func:`atomic_open` wrote ``path`` through
    the temporary ``tmp``, stands for: an ``OSError`` ENOSPC or EDQUOT, or an ``OSError`` or
    ``RuntimeError`` while fewer than :data:`FULL_BELOW` bytes are free; None for any other error."""
    if isinstance(error, DiskFull) or not isinstance(error, (OSError, RuntimeError)):
        return None
    try:
        written = tmp.stat().st_size
        st = os.statvfs(tmp.parent)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if not (isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)) and free >= FULL_BELOW:
        return None
    old = path.stat().st_size if path.is_file() else 0
    need = max(written + 1, old)
    replaces = f", {old} in the file it replaces" if old else ""
    out = DiskFull(f"{path}: No space left on device: writing it needs at least {need} bytes ({written} written "
                   f"when the disk filled{replaces}), {free} bytes are free in {tmp.parent}; the previous file is "
                   f"kept")
    out.errno = errno.ENOSPC
    return out


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
    try:  # strict (a key twice, a number past a float, bytes not UTF-8: refused); NaN as json.dumps writes it
        record = loads_json(path.read_bytes(), str(path), allow_nan=True)
    except FormatError as e:
        raise error(f"{path}: not readable JSON ({str(e).removeprefix(str(path)).lstrip(':, ')}); it holds {holds}: "
                    f"mend it, or move it aside") from e
    except OSError as e:
        raise error(f"{path}: not readable JSON ({type(e).__name__}: {e}); it holds {holds}: mend it, or move it "
                    f"aside") from e
    if not isinstance(record, dict):
        raise error(f"{path}: expected a JSON object; it holds {holds}")
    return record
