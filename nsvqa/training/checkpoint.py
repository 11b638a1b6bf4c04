"""Checkpoints: {format version, config, state_dict, vocabularies} written atomically.

A checkpoint rebuilds its model alone (the config names the profile and every size), and loads with
``torch.load(weights_only=True)`` — only tensors and plain containers, no pickled code. Training
state (optimizer, scheduler, step, RNG) rides along under ``train_state`` so ``--resume`` continues
a run exactly where its last checkpoint left it. The checkpoint of a *finished* run (every step
done: ``save_checkpoint(..., finished=True)``) keeps the step, the scheduler and the RNG but not the
optimizer state (:data:`RESUME_ONLY`): a finished run is never resumed, only found finished by its
step, loaded and used.

Beside each checkpoint ``<name>`` lies ``<name>.sha256`` (``sha256sum`` format), written after the
checkpoint itself; :func:`load_checkpoint` checks the file's bytes against it, so a changed bit is
an error, not a silently different model. A checkpoint of a shipped set (:mod:`nsvqa.pretrained`)
is checked against the sha256 its set's ``manifest.json`` records instead. Any other checkpoint
without the sidecar (written before it existed, or copied alone) loads unchecked, with one warning
line naming the file (:data:`log`). Saving first sweeps the stale temporaries a killed
writer left in the folder (:func:`nsvqa.fileio.sweep_temporaries`).

A shipped set stores each checkpoint ``<name>.pt`` in its *shipped form* (:func:`save_shipped`):
the tensors of its ``state_dict`` in ``<name>.safetensors`` (no pickle at all) and the rest
({format version, kind, config, vocabularies, extra, train_state} and the order of the
``state_dict``'s names) in ``<name>.json``. :func:`load_checkpoint` is the one reader of both
forms: asked for ``<name>.pt`` where only the shipped form lies (or for ``<name>.safetensors``), it
reads the pair and returns the same payload ``torch.load`` gave; a run's checkpoints stay ``.pt``
files loaded with ``weights_only=True``.
"""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Mapping

from executors.errors import FormatError
from executors.io import loads_json, read_json
from nsvqa.fileio import atomic_open, sha256_file, sweep_temporaries, write_atomic, write_json_atomic

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
#: the suffixes of a checkpoint's shipped form (:func:`save_shipped`): tensors, and the rest as JSON
SHIPPED_TENSORS, SHIPPED_META = ".safetensors", ".json"
#: what the ``format`` field of a shipped form's JSON says
SHIPPED_FORMAT = "nsvqa-checkpoint"
#: the parts of a ``train_state`` that only a resume mid-run needs: not kept once a run has finished
RESUME_ONLY = ("optimizer",)


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used; the message names the file and the field."""


def sidecar_path(path: str | Path) -> Path:
    """``<checkpoint>.sha256``: the digest of the checkpoint's bytes recorded at save time."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def manifest_digest(path: str | Path) -> tuple[str, Path] | None:
    """The sha256 that the ``manifest.json`` of a shipped set (a folder one or two levels above
    ``path``, :mod:`nsvqa.pretrained`) records for ``path``, with that manifest; None when no such
    manifest lists it."""
    path = Path(path)
    for folder in list(path.parents)[:2]:
        manifest = folder / "manifest.json"
        if not manifest.is_file():
            continue
        try:
            files = read_json(manifest).get("sha256")
        except (OSError, ValueError, AttributeError):  # not a shipped set's manifest
            continue
        digest = files.get(path.relative_to(folder).as_posix()) if isinstance(files, dict) else None
        if isinstance(digest, str):
            return digest, manifest
    return None


def save_checkpoint(path: str | Path, *, kind: str, config: Mapping[str, Any], state_dict: Mapping[str, Any],
                    vocabularies: Mapping[str, Any], train_state: Mapping[str, Any] | None = None,
                    extra: Mapping[str, Any] | None = None, finished: bool = False) -> Path:
    """Write a checkpoint atomically (temp file in the same folder, fsync, rename), then its sha256
    sidecar (:func:`sidecar_path`); the old sidecar goes first, so an interruption in between leaves
    a checkpoint that loads unchecked, never one that fails its check.

    Args:
        path: destination ``.pt`` file.
        kind: what the checkpoint holds (e.g. ``scene_parser``), checked on load.
        config: the resolved run config (plain JSON types).
        state_dict: model parameters (nested dicts of tensors are fine).
        vocabularies: the label spaces the outputs index (e.g. attribute -> values).
        train_state: optimizer / scheduler state, step, RNG — for resuming.
        extra: anything else plain (metrics of the checkpoint, ...).
        finished: the run has done all its steps: the :data:`RESUME_ONLY` parts of
            ``train_state`` are left out and ``train_state["finished"]`` is True.
    """
    import torch  # heavy (seconds): CheckpointError and the kind checks are imported without torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_temporaries(path.parent)
    sidecar_path(path).unlink(missing_ok=True)
    train_state = dict(train_state or {})
    if finished:
        train_state = {k: v for k, v in train_state.items() if k not in RESUME_ONLY} | {"finished": True}
    payload = {"version": FORMAT_VERSION, "kind": kind, "config": dict(config), "state_dict": state_dict,
               "vocabularies": dict(vocabularies), "train_state": train_state, "extra": dict(extra or {})}
    with atomic_open(path, "wb", fsync=True) as f:
        torch.save(payload, f)
    write_atomic(sidecar_path(path), f"{sha256_file(path)}  {path.name}\n")
    return path


def load_checkpoint(path: str | Path, kind: str | None = None, map_location: str = "cpu") -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` (``weights_only=True``), its bytes
    checked against its sha256 sidecar, or a shipped set's manifest (:func:`manifest_digest`); a
    checkpoint with neither loads unchecked, after one warning line naming it. A ``path`` whose
    shipped form lies there instead (:func:`shipped_pair`: ``<name>.safetensors`` and
    ``<name>.json``, :func:`save_shipped`) is read from it, each of its two files checked against
    the set's manifest.

    Raises:
        CheckpointError: missing file, bytes that differ from the sha256 sidecar (or the shipped
            set's manifest), unreadable
            payload, other format version or kind, missing field — the message names the file
            and the field.
    """
    import torch  # heavy (seconds): CheckpointError and the kind checks are imported without torch

    path = Path(path)
    if (pair := shipped_pair(path)) is not None:
        return _checked_payload(_read_shipped(*pair, map_location=map_location), pair[1], kind)
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint file")
    sidecar = sidecar_path(path)
    if sidecar.is_file():
        expected = sidecar.read_text().split()[:1]
        actual = sha256_file(path)
        if expected != [actual]:
            raise CheckpointError(f"{path}: sha256 {actual} differs from the {expected[0] if expected else 'empty'} "
                                  f"recorded in {sidecar.name} at save time: the file changed after it was saved")
    elif (shipped := manifest_digest(path)) is not None:
        actual = sha256_file(path)
        if actual != shipped[0]:
            raise CheckpointError(f"{path}: sha256 {actual} differs from the {shipped[0]} recorded in {shipped[1]}: "
                                  f"a corrupted or altered copy")
    else:
        log.warning(f"{path}: loaded unchecked: no {sidecar.name} beside it (written before sidecars, or copied "
                    f"alone), so its bytes are not checked against a sha256 recorded at save time")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # truncated or foreign file
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(e).__name__}: {e})") from None
    return _checked_payload(payload, path, kind)


def _checked_payload(payload: Any, path: Path, kind: str | None) -> dict[str, Any]:
    """``payload`` after the checks every checkpoint passes, whichever form it was read from.

    Raises:
        CheckpointError: not a dict, a missing field, another format version or kind (``path`` named).
    """
    if not isinstance(payload, dict):
        raise CheckpointError(f"{path}: expected a dict payload, got {type(payload).__name__}")
    for field in ("version", "kind", "config", "state_dict", "vocabularies"):
        if field not in payload:
            raise CheckpointError(f"{path}: missing field {field!r}")
    if payload["version"] != FORMAT_VERSION:
        raise CheckpointError(f"{path}, field 'version': {payload['version']!r}; this code reads {FORMAT_VERSION}")
    if kind is not None and payload["kind"] != kind:
        raise CheckpointError(f"{path}, field 'kind': {payload['kind']!r}, expected {kind!r}")
    payload.setdefault("train_state", {})
    payload.setdefault("extra", {})
    return payload


def shipped_paths(path: str | Path) -> tuple[Path, Path]:
    """``(<name>.safetensors, <name>.json)``: the shipped form (:func:`save_shipped`) of checkpoint
    ``path`` (``<name>.pt``, or either file of the shipped form itself)."""
    path = Path(path)
    stem = path.stem if path.suffix in (".pt", SHIPPED_TENSORS, SHIPPED_META) else path.name
    return path.with_name(stem + SHIPPED_TENSORS), path.with_name(stem + SHIPPED_META)


def shipped_pair(path: str | Path) -> tuple[Path, Path] | None:
    """The shipped form of checkpoint ``path`` where :func:`load_checkpoint` reads it instead of a
    ``.pt`` file: ``path`` is ``<name>.safetensors``, or a ``<name>.pt`` that is not there while a
    file of its shipped form is; None otherwise (a run's ``.pt``, or nothing at all)."""
    path = Path(path)
    if path.suffix == SHIPPED_TENSORS or (path.suffix == ".pt" and not path.exists()):
        pair = shipped_paths(path)
        return pair if any(p.exists() for p in pair) else None
    return None


def checkpoint_files(path: str | Path) -> list[Path]:
    """The files that hold checkpoint ``path``: its shipped pair (:func:`shipped_pair`), or the
    ``.pt`` file itself; [] when there is none."""
    pair = shipped_pair(path)
    return list(pair) if pair is not None else [Path(path)] if Path(path).is_file() else []


def checkpoint_sha256(path: str | Path) -> str:
    """The sha256 of checkpoint ``path``'s bytes: the file's own for a ``.pt`` (what
    :func:`nsvqa.fileio.sha256_file` gives), else that of its shipped pair's two digests, so a
    provenance key that records it changes with either file.

    Raises:
        CheckpointError: no such checkpoint in either form.
    """
    files = checkpoint_files(path)
    if not files:
        raise CheckpointError(f"{path}: no checkpoint file")
    if len(files) == 1:
        return sha256_file(files[0])
    return hashlib.sha256("".join(f"{sha256_file(f)}  {f.name}\n" for f in files).encode()).hexdigest()


def save_shipped(path: str | Path, payload: Mapping[str, Any]) -> tuple[Path, Path]:
    """Write a loaded checkpoint ``payload`` (:func:`load_checkpoint`'s dict) in its shipped form
    beside ``path``: its ``state_dict`` (a flat mapping of names to tensors) in
    ``<name>.safetensors`` and every other field in ``<name>.json`` (``"format":
    "nsvqa-checkpoint"``; its ``state_dict`` is the list of the tensors' names, in order), each file
    atomically, the tensors first. JSON keeps what a checkpoint holds beside its tensors (plain
    values; a tuple reads back as a list, which :meth:`nsvqa.config.Config.from_dict` takes).

    Returns:
        (the ``.safetensors`` file, the ``.json`` file).

    Raises:
        CheckpointError: a ``state_dict`` that is not names to tensors, or a field that JSON cannot
            hold (a tensor outside ``state_dict``, a key that is not a string), before anything is
            written.
    """
    import torch  # heavy (seconds): only to write a shipped set
    from safetensors.torch import save as save_tensors  # heavy (torch): the shipped form's tensors

    tensors, meta = shipped_paths(path)
    state = payload["state_dict"]
    bad = [k for k, v in state.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
    if bad:
        raise CheckpointError(f"{path}, field 'state_dict': the shipped form holds names to tensors; "
                              f"{bad[:3]} are not")
    info = {"format": SHIPPED_FORMAT, **{k: list(state) if k == "state_dict" else v for k, v in payload.items()}}

    def plain(x: Any, where: str) -> None:
        if isinstance(x, Mapping):
            for k, v in x.items():
                if not isinstance(k, str):
                    raise CheckpointError(f"{path}, field {where!r}: key {k!r} is not a string (JSON keys are)")
                plain(v, f"{where}.{k}")
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                plain(v, f"{where}[{i}]")
        elif not isinstance(x, (str, int, float, bool, type(None))):
            raise CheckpointError(f"{path}, field {where!r}: a {type(x).__name__}, which JSON cannot hold")

    for k, v in info.items():
        plain(v, k)
    write_atomic(tensors, save_tensors({k: v.detach().cpu().contiguous() for k, v in state.items()},
                                       metadata={"format": "pt"}))
    write_json_atomic(meta, info, indent=1)
    back = _read_shipped(tensors, meta, checked=False)  # the round trip, checked on every write
    if (diff := _difference({**payload, "state_dict": state}, back)) is not None:
        raise CheckpointError(f"{meta}: the shipped form does not read back as the checkpoint it was written from "
                              f"({diff})")
    return tensors, meta


def _difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where payload ``b`` (read back from the shipped form) differs from ``a``: tensors bit for bit
    (dtype, shape, bytes), the rest as JSON gives it back (a tuple as a list); None when alike."""
    import torch  # heavy (seconds): only to write a shipped set

    if isinstance(a, torch.Tensor):
        def raw(t: torch.Tensor) -> torch.Tensor:  # the bytes, so that -0.0 and NaN count as themselves
            return t.detach().cpu().contiguous().reshape(-1).view(torch.uint8)

        same = (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and (a.numel() == 0 or torch.equal(raw(a), raw(b))))
        return None if same else f"tensor {where}"
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or list(a) != list(b):
            return f"the keys of {where or 'the payload'}"
        return next((d for k in a if (d := _difference(a[k], b[k], f"{where}.{k}".lstrip("."))) is not None), None)
    if isinstance(a, (list, tuple)):
        if not isinstance(b, list) or len(a) != len(b):
            return f"list {where}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := _difference(x, y, f"{where}[{i}]")) is not None),
                    None)
    same = type(a) is type(b) and (a == b or (a != a and b != b))  # NaN reads back as NaN
    return None if same else f"value {where}: {a!r} read back as {b!r}"


def _shipped_bytes(path: Path, checked: bool = True) -> bytes:
    """The bytes of one file of a shipped form, checked against the sha256 that its set's manifest
    records (:func:`manifest_digest`; not ``checked``: a file just written); a file no manifest
    lists is read unchecked, after one warning line.

    Raises:
        CheckpointError: a missing file, or bytes whose sha256 differs from the manifest's.
    """
    if not path.is_file():
        raise CheckpointError(f"{path}: missing; a checkpoint's shipped form is {shipped_paths(path)[0].name} and "
                              f"{shipped_paths(path)[1].name}, side by side")
    data = path.read_bytes()
    if not checked:
        return data
    shipped = manifest_digest(path)
    if shipped is None:
        log.warning(f"{path}: loaded unchecked: no manifest.json of a shipped set lists it, so its bytes are not "
                    f"checked against a recorded sha256")
    elif (actual := hashlib.sha256(data).hexdigest()) != shipped[0]:
        raise CheckpointError(f"{path}: sha256 {actual} differs from the {shipped[0]} recorded in {shipped[1]}: "
                              f"a corrupted or altered copy")
    return data


def _read_shipped(tensors: Path, meta: Path, *, map_location: str = "cpu", checked: bool = True) -> dict[str, Any]:
    """The payload of a checkpoint's shipped form (:func:`save_shipped`), fields in their order,
    tensors on ``map_location``; each file checked against its set's manifest unless not ``checked``.

    Raises:
        CheckpointError: a missing or altered file, JSON that is not a shipped form's, safetensors
            that cannot be read, or tensors other than those the JSON names (the file named).
    """
    from safetensors.torch import load as load_tensors  # heavy (torch): the shipped form's tensors

    raw_meta, raw_tensors = _shipped_bytes(meta, checked), _shipped_bytes(tensors, checked)
    try:
        info = loads_json(raw_meta, str(meta), allow_nan=True)
    except FormatError as e:
        raise CheckpointError(str(e)) from None
    if not isinstance(info, dict) or info.get("format") != SHIPPED_FORMAT:
        got = info.get("format") if isinstance(info, dict) else type(info).__name__
        raise CheckpointError(f"{meta}, field 'format': {got!r}, expected {SHIPPED_FORMAT!r}")
    names = info.get("state_dict")
    try:
        flat = load_tensors(raw_tensors)
    except Exception as e:  # truncated or foreign file
        raise CheckpointError(f"{tensors}: not a readable safetensors file ({type(e).__name__}: {e})") from None
    if not isinstance(names, list) or sorted(map(str, names)) != sorted(flat):
        raise CheckpointError(f"{meta}, field 'state_dict': the tensor names it lists differ from those of "
                              f"{tensors.name}")
    state = {n: flat[n] if map_location == "cpu" else flat[n].to(map_location) for n in names}
    return {k: state if k == "state_dict" else v for k, v in info.items() if k != "format"}


def weights_digest(path: str | Path, kind: str | None = None) -> str:
    """The sha256 of a checkpoint's weights alone: every tensor of its ``state_dict`` (name, dtype,
    shape and bytes, in name order), not its training clock or state, so two runs that learned the
    same weights give the same digest whatever else their files hold.

    Raises:
        CheckpointError: as :func:`load_checkpoint`.
    """
    import hashlib

    import torch  # heavy (seconds): loads the checkpoint

    h = hashlib.sha256()

    def walk(prefix: str, tree: Any) -> None:
        if isinstance(tree, Mapping):
            for k in sorted(tree, key=str):
                walk(f"{prefix}{k}.", tree[k])
        elif isinstance(tree, torch.Tensor):
            t = tree.detach().contiguous().cpu()
            h.update(f"{prefix}{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        else:
            h.update(f"{prefix}{tree!r}".encode())

    walk("", load_checkpoint(path, kind=kind)["state_dict"])
    return h.hexdigest()

