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
an error, not a silently different model. A checkpoint without the sidecar (written before it
existed, or copied alone) loads unchecked. Saving first sweeps the stale temporaries a killed
writer left in the folder (:func:`nsvqa.fileio.sweep_temporaries`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from nsvqa.fileio import atomic_open, sha256_file, sweep_temporaries, write_atomic

FORMAT_VERSION = 1
#: the parts of a ``train_state`` that only a resume mid-run needs: not kept once a run has finished
RESUME_ONLY = ("optimizer",)


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used; the message names the file and the field."""


def sidecar_path(path: str | Path) -> Path:
    """``<checkpoint>.sha256``: the digest of the checkpoint's bytes recorded at save time."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


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
    """Load a checkpoint written by :func:`save_checkpoint` (``weights_only=True``).

    Raises:
        CheckpointError: missing file, bytes that differ from the sha256 sidecar, unreadable
            payload, other format version or kind, missing field — the message names the file
            and the field.
    """
    import torch  # heavy (seconds): CheckpointError and the kind checks are imported without torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint file")
    sidecar = sidecar_path(path)
    if sidecar.is_file():
        expected = sidecar.read_text().split()[:1]
        actual = sha256_file(path)
        if expected != [actual]:
            raise CheckpointError(f"{path}: sha256 {actual} differs from the {expected[0] if expected else 'empty'} "
                                  f"recorded in {sidecar.name} at save time: the file changed after it was saved")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # truncated or foreign file
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(e).__name__}: {e})") from None
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

