"""Trained checkpoints shipped with the repository: evaluate first, train when you need to.

A shipped set is one folder ``pretrained/<name>/`` at the repository root::

    manifest.json                        name, what it was trained on (profile, data config, study
                                         piece, commit), its val metrics, sha256 of every file
    scene_parser/detector.pt, attributes.pt   the scene parser (a run's scene_parser/ folder)
    question_parser/question_parser.pt        the question parser
    nsvqa/tuned.json                     NS-VQA's cuts, chosen on the training variant's val split
    <model>/baseline.pt [, tuned.json]   optional: a baseline trained on the same variant and seed
                                         (its run folder's checkpoint and cuts), listed under the
                                         manifest's ``models``

The checkpoints are the training run's, without the optimizer and scheduler state a shipped copy
does not need, floating-point tensors stored in float16 (loaded back into float32 networks; the
accuracy of both storages is measured by :func:`pack_pretrained`'s caller and recorded in the
manifest). Load them by name, ``pretrained:<name>``, wherever a checkpoint or run directory is
asked for (:func:`resolve_checkpoint`); every file is checked against the manifest's sha256 before
it is read, and a file that differs is refused with an error naming it. A run given such a set
(``TrainSpec.pretrained``) trains none of the models the set holds: it loads them.
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any, Mapping

from nsvqa.fileio import sha256_file, write_atomic, write_json_atomic
from nsvqa.training.checkpoint import load_checkpoint

#: Where shipped sets live (the repository's ``pretrained/``); ``NSVQA_PRETRAINED_DIR`` overrides.
PRETRAINED_DIR = Path(__file__).resolve().parents[1] / "pretrained"
PREFIX = "pretrained:"
MANIFEST = "manifest.json"
#: The parts of a shipped set: relative path -> checkpoint kind (None: not a checkpoint).
FILES = {"scene_parser/detector.pt": "detector", "scene_parser/attributes.pt": "attributes",
         "question_parser/question_parser.pt": "question_parser", "nsvqa/tuned.json": None}
#: A shipped model's checkpoint and optional cuts, in ``<model>/`` of the set and ``baselines/<model>/``
#: of a run folder (the baselines' ``baseline.pt`` and the models' ``tuned.json``).
MODEL_CHECKPOINT, MODEL_CUTS = "baseline.pt", "tuned.json"


class PretrainedError(ValueError):
    """A shipped set that is missing, unknown or altered (the message names the file)."""


def pretrained_dir() -> Path:
    return Path(os.environ.get("NSVQA_PRETRAINED_DIR", PRETRAINED_DIR))


def available() -> list[str]:
    """The names of the shipped sets."""
    root = pretrained_dir()
    return sorted(p.parent.name for p in root.glob(f"*/{MANIFEST}")) if root.is_dir() else []


def verified(name: str) -> Path:
    """The folder of shipped set ``name`` after checking every file against its manifest.

    Raises:
        PretrainedError: an unknown name (the shipped ones listed), an unreadable manifest, or a
            missing file or one whose sha256 differs from the manifest's (the file named).
    """
    folder = pretrained_dir() / name
    man_path = folder / MANIFEST
    if not man_path.is_file():
        raise PretrainedError(f"no pretrained set {name!r} ({man_path} is missing); shipped: "
                              f"{', '.join(available()) or 'none'}")
    try:
        manifest = json.loads(man_path.read_text())
        files = manifest["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PretrainedError(f"{man_path}: unreadable manifest ({e})") from None
    for rel, digest in files.items():
        path = folder / rel
        if not path.is_file():
            raise PretrainedError(f"{path}: missing from pretrained set {name!r}")
        if sha256_file(path) != digest:
            raise PretrainedError(f"{path}: sha256 differs from {man_path} (a corrupted or altered copy); "
                                  f"restore it with `git checkout -- {path}`")
    return folder


def shipped_models(folder: str | os.PathLike) -> tuple[str, ...]:
    """The models a parsers folder holds a trained copy of: a shipped set's ``<model>/baseline.pt``
    (the manifest's ``models``), a run folder's ``baselines/<model>/baseline.pt``."""
    folder = Path(folder)
    man = folder / MANIFEST
    if man.is_file():
        return tuple(json.loads(man.read_text()).get("models", {}))
    return tuple(sorted(p.parent.name for p in folder.glob(f"baselines/*/{MODEL_CHECKPOINT}")))


def read_manifest(name: str) -> dict[str, Any]:
    """The manifest of a shipped set (verified first)."""
    return json.loads((verified(name) / MANIFEST).read_text())


def resolve_checkpoint(spec: str | os.PathLike, part: str) -> Path:
    """A checkpoint or run directory as given, or, for ``pretrained:<name>``, the verified shipped
    set's folder of ``part`` (``scene_parser``, ``question_parser`` or ``nsvqa``).

    Raises:
        PretrainedError: see :func:`verified`; an unknown ``part``.
    """
    text = str(spec)
    if not text.startswith(PREFIX):
        return Path(spec)
    parts = sorted({rel.split("/")[0] for rel in FILES})
    if part not in parts:
        raise PretrainedError(f"part {part!r}: expected one of {parts}")
    return verified(text[len(PREFIX):]) / part


def parsers_dir(spec: str | os.PathLike) -> Path:
    """The folder holding ``scene_parser/`` and ``question_parser/``: the verified shipped set for
    ``pretrained:<name>``, else ``spec`` itself (a run folder of ``train_variant.py``).

    Raises:
        PretrainedError: see :func:`verified`; a folder without ``scene_parser/`` or ``question_parser/``.
    """
    text = str(spec)
    if text.startswith(PREFIX):
        return verified(text[len(PREFIX):])
    folder = Path(spec)
    for part in ("scene_parser", "question_parser"):
        if not (folder / part).is_dir():
            raise PretrainedError(f"{folder / part}: missing; trained parsers are pretrained:NAME "
                                  f"(shipped: {', '.join(available()) or 'none'}) or a folder holding "
                                  f"scene_parser/ and question_parser/")
    return folder


def _shipped_payload(ckpt: Mapping[str, Any]) -> dict[str, Any]:
    """A loaded checkpoint without its training state, floating tensors in float16."""
    import torch  # heavy: torch, only to pack a set

    def half(x):
        if isinstance(x, torch.Tensor):
            return x.half() if x.is_floating_point() else x
        if isinstance(x, Mapping):
            return {k: half(v) for k, v in x.items()}
        return x

    return {**ckpt, "state_dict": half(ckpt["state_dict"]), "train_state": {},
            "extra": {**dict(ckpt.get("extra") or {}), "shipped": "float16 weights, no training state"}}


def pack_pretrained(run: str | os.PathLike, name: str, info: Mapping[str, Any], *,
                    out: str | os.PathLike | None = None,
                    models: Mapping[str, str | os.PathLike] | None = None) -> Path:
    """Write shipped set ``name`` from a variant run folder (``RUN/scene_parser``,
    ``RUN/question_parser``, ``RUN/baselines/nsvqa/tuned.json``) with ``info`` (profile, data,
    metrics...) in its manifest; returns its folder. ``models`` maps a model name to its run folder
    (``baselines/<model>/`` of a variant run: ``baseline.pt`` and, when there, ``tuned.json``),
    shipped as ``<model>/`` and listed under the manifest's ``models`` (with ``info["models"]``'s
    entry for it, if any). Files are written atomically, the manifest last.

    Raises:
        PretrainedError: a model folder without ``baseline.pt`` (named), before anything is written.
    """
    run = Path(run)
    folder = Path(out or pretrained_dir()) / name
    sources = {"scene_parser/detector.pt": (run / "scene_parser" / "detector.pt", "detector"),
               "scene_parser/attributes.pt": (run / "scene_parser" / "attributes.pt", "attributes"),
               "question_parser/question_parser.pt": (run / "question_parser" / "question_parser.pt",
                                                      "question_parser"),
               "nsvqa/tuned.json": (run / "baselines" / "nsvqa" / "tuned.json", None)}
    described = dict(info.get("models") or {})
    sources |= _model_sources(models or {})
    digests = _write_sources(folder, sources)
    shipped = {m: described.get(m, {}) for m in (models or {})}
    write_json_atomic(folder / MANIFEST, {"name": name, **dict(info), "models": shipped, "sha256": digests},
                      indent=1)
    return folder


def add_models(name: str, models: Mapping[str, str | os.PathLike], described: Mapping[str, Any] | None = None, *,
               out: str | os.PathLike | None = None) -> Path:
    """Add (or replace) models in shipped set ``name``, as :func:`pack_pretrained` ships them, its
    parsers and other models kept; the manifest's ``models`` and ``sha256`` are updated last.

    Raises:
        PretrainedError: the set has no readable manifest; a model folder without ``baseline.pt``
            (named), before anything is written.
    """
    folder = Path(out or pretrained_dir()) / name
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as e:
        raise PretrainedError(f"{folder / MANIFEST}: no readable manifest to add models to ({e})") from None
    sources = _model_sources(models)
    digests = _write_sources(folder, sources)
    manifest["models"] = {**manifest.get("models", {}), **{m: dict(described or {}).get(m, {}) for m in models}}
    manifest["sha256"] = {**manifest["sha256"], **digests}
    write_json_atomic(folder / MANIFEST, manifest, indent=1)
    return folder


def _model_sources(models: Mapping[str, str | os.PathLike]) -> dict[str, tuple[Path, str | None]]:
    """The files of shipped models: ``<model>/baseline.pt`` and, when there, ``<model>/tuned.json``."""
    sources: dict[str, tuple[Path, str | None]] = {}
    for model, model_run in models.items():
        model_run = Path(model_run)
        if not (model_run / MODEL_CHECKPOINT).is_file():
            raise PretrainedError(f"{model_run / MODEL_CHECKPOINT}: no checkpoint of model {model!r} to ship")
        sources[f"{model}/{MODEL_CHECKPOINT}"] = (model_run / MODEL_CHECKPOINT, f"baseline_{model}")
        if (model_run / MODEL_CUTS).is_file():
            sources[f"{model}/{MODEL_CUTS}"] = (model_run / MODEL_CUTS, None)
    return sources


def _write_sources(folder: Path, sources: Mapping[str, tuple[Path, str | None]]) -> dict[str, str]:
    """Each source written to ``folder/<rel>`` (a checkpoint as :func:`_shipped_payload`), atomically;
    rel -> sha256."""
    import torch  # heavy: torch, only to pack a set

    digests = {}
    for rel, (src, kind) in sources.items():
        if kind is None:
            data = src.read_bytes()
        else:
            buf = io.BytesIO()
            torch.save(_shipped_payload(load_checkpoint(src, kind=kind)), buf)
            data = buf.getvalue()
        write_atomic(folder / rel, data)
        digests[rel] = sha256_file(folder / rel)
    return digests


__all__ = ["PRETRAINED_DIR", "PREFIX", "FILES", "MODEL_CHECKPOINT", "MODEL_CUTS", "PretrainedError", "shipped_models", "add_models", "pretrained_dir", "available", "verified",
           "read_manifest", "resolve_checkpoint", "parsers_dir", "pack_pretrained"]
