"""Trained checkpoints shipped with the repository: evaluate first, train when you need to.

A shipped set is one folder ``<name>/`` (the repository's ``pretrained/<name>/``)::

    manifest.json                        the model card (``card``: intended use, training data and
                                         profile, measured accuracy, limits), what it was trained on
                                         (data configs, study piece, commit), its val metrics, and
                                         the sha256 of every other file
    scene_parser/detector.{safetensors,json}, attributes.{safetensors,json}   the scene parser
    question_parser/question_parser.{safetensors,json}                        the question parser
    nsvqa/tuned.json                     NS-VQA's cuts, chosen on the training variant's val split
    <model>/baseline.{safetensors,json} [, tuned.json]   optional: a baseline trained on the same
                                         variant and seed (its run folder's checkpoint and cuts),
                                         listed under the manifest's ``models``

Each checkpoint is the training run's ``<name>.pt`` without the optimizer and scheduler state a
shipped copy does not need, floating-point tensors in float16 (loaded back into float32 networks;
the accuracy of both storages is measured by :func:`pack_pretrained`'s caller and recorded in the
manifest), in its shipped form (:func:`nsvqa.training.checkpoint.save_shipped`): the tensors in
``<name>.safetensors``, its config and vocabularies in ``<name>.json``. Loading ``<name>.pt`` reads
that form (:func:`nsvqa.training.checkpoint.load_checkpoint`, the one reader). A set of the older
form (``.pt`` files) still loads; :func:`convert_set` rewrites it.

A set is named ``pretrained:<name>`` wherever a checkpoint or run directory is asked for
(:func:`resolve_checkpoint`), or given as a folder. A name resolves (:func:`locate`) to the first
folder holding ``<name>/manifest.json`` of: ``$NSVQA_PRETRAINED_DIR``; the checkout's
``pretrained/`` (when running from a clone); the user cache (:func:`cache_dir`:
``$XDG_CACHE_HOME/nsvqa/pretrained``, else ``~/.cache/nsvqa/pretrained``), which
``nsvqa-fetch-pretrained`` fills (:mod:`nsvqa.fetch`). Every file is checked against the manifest's
sha256 before it is read, and a file that differs is refused with an error naming it. A run given
such a set (``TrainSpec.pretrained``) trains none of the models the set holds: it loads them.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from executors.io import read_json
from nsvqa.fileio import sha256_file, write_atomic, write_json_atomic
from nsvqa.training.checkpoint import CheckpointError, load_checkpoint, save_shipped

#: The checkout's shipped sets (the repository's ``pretrained/``; absent from an installed package).
PRETRAINED_DIR = Path(__file__).resolve().parents[1] / "pretrained"
#: The variable naming a folder of sets that comes first (:func:`search_dirs`).
ENV = "NSVQA_PRETRAINED_DIR"
PREFIX = "pretrained:"
MANIFEST = "manifest.json"
#: The parts of a shipped set: the checkpoint as a run names it -> its kind (None: not a checkpoint).
#: In a set a checkpoint ``X.pt`` lies in its shipped form, ``X.safetensors`` and ``X.json``.
FILES = {"scene_parser/detector.pt": "detector", "scene_parser/attributes.pt": "attributes",
         "question_parser/question_parser.pt": "question_parser", "nsvqa/tuned.json": None}
#: The fields of a manifest's ``card`` (the model card; docs/models.md says what each holds).
CARD_FIELDS = ("intended_use", "training_data", "profile", "accuracy", "limits")
#: A shipped model's checkpoint and optional cuts, in ``<model>/`` of the set and ``baselines/<model>/``
#: of a run folder (the baselines' ``baseline.pt`` and the models' ``tuned.json``).
MODEL_CHECKPOINT, MODEL_CUTS = "baseline.pt", "tuned.json"


class PretrainedError(ValueError):
    """A shipped set that is missing, unknown or altered (the message names the file)."""


def pretrained_dir() -> Path:
    """The folder sets are written to by default (:func:`pack_pretrained`): ``$NSVQA_PRETRAINED_DIR``,
    else the checkout's ``pretrained/``."""
    return Path(os.environ.get(ENV) or PRETRAINED_DIR)


def cache_dir() -> Path:
    """The user cache of sets that ``nsvqa-fetch-pretrained`` fills: ``$XDG_CACHE_HOME/nsvqa/pretrained``,
    else ``~/.cache/nsvqa/pretrained``."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "nsvqa" / "pretrained"


def search_dirs() -> list[Path]:
    """The folders a set's name is looked for in, in order: ``$NSVQA_PRETRAINED_DIR`` (when set),
    the checkout's ``pretrained/`` (when running from a clone), the user cache (:func:`cache_dir`)."""
    env = [Path(os.environ[ENV])] if os.environ.get(ENV) else []
    checkout = [PRETRAINED_DIR] if (PRETRAINED_DIR.parent / "pyproject.toml").is_file() else []  # not a wheel's
    return env + checkout + [cache_dir()]


def available() -> list[str]:
    """The names of the sets found in :func:`search_dirs` (each once)."""
    names = {p.parent.name for root in search_dirs() if root.is_dir() for p in root.glob(f"*/{MANIFEST}")
             if not p.parent.name.startswith(".")}  # not a fetch's temporary
    return sorted(names)


def is_set_path(name_or_path: str | os.PathLike) -> bool:
    """Whether ``name_or_path`` names a folder rather than a set: a path object, or text with a
    path separator or a leading ``.`` or ``~``."""
    if not isinstance(name_or_path, str):
        return True
    return "/" in name_or_path or os.sep in name_or_path or name_or_path.startswith((".", "~"))


def locate(name_or_path: str | os.PathLike) -> Path:
    """The folder of a set: ``name_or_path`` itself when it is a path (:func:`is_set_path`), else
    ``<dir>/<name>`` of the first of :func:`search_dirs` holding ``<name>/manifest.json``. Nothing
    is checked but the manifest's presence (:func:`verified` checks every file).

    Raises:
        PretrainedError: no such set; the message lists the folders searched, the sets found and
            how to fetch one.
    """
    if is_set_path(name_or_path):
        folder = Path(name_or_path).expanduser()
        if not (folder / MANIFEST).is_file():
            raise PretrainedError(f"{folder / MANIFEST} is missing: {folder} is not a pretrained set")
        return folder
    for root in search_dirs():
        if (root / name_or_path / MANIFEST).is_file():
            return root / name_or_path
    searched = ", ".join(str(d) for d in search_dirs())
    raise PretrainedError(f"no pretrained set {name_or_path!r} (looked for {name_or_path}/{MANIFEST} in {searched}); "
                          f"shipped: {', '.join(available()) or 'none'}; fetch one into the cache with "
                          f"`nsvqa-fetch-pretrained {name_or_path} --url URL`, or set {ENV}")


def safe_relative(rel: str, where: str) -> str:
    """``rel``, a manifest's file name, when it stays inside its set (relative, no ``..``).

    Raises:
        PretrainedError: an absolute name or one that climbs out (``where`` named).
    """
    parts = rel.replace("\\", "/").split("/")
    if not rel or rel.startswith("/") or ".." in parts or "" in parts or ":" in parts[0]:
        raise PretrainedError(f"{where}, field 'sha256': file name {rel!r} is not a path inside the set")
    return rel


def verified(name: str | os.PathLike) -> Path:
    """The folder of set ``name`` (a name or a folder, :func:`locate`) after checking every file
    against its manifest.

    Raises:
        PretrainedError: an unknown name (the shipped ones listed), an unreadable manifest, or a
            missing file or one whose sha256 differs from the manifest's (the file named).
    """
    folder = locate(name)
    man_path = folder / MANIFEST
    try:
        manifest = read_json(man_path)
        files = manifest["sha256"]
        files.items()
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise PretrainedError(f"{man_path}: unreadable manifest ({type(e).__name__}: {e})") from None
    for rel, digest in files.items():
        path = folder / safe_relative(rel, str(man_path))
        if not path.is_file():
            raise PretrainedError(f"{path}: missing from pretrained set {name!r}")
        if sha256_file(path) != digest:
            again = (f"fetch it again: `nsvqa-fetch-pretrained {folder.name} --url URL --force`"
                     if folder.parent == cache_dir() else f"restore it (`git checkout -- {path}` in a clone)")
            raise PretrainedError(f"{path}: sha256 differs from {man_path} (a corrupted or altered copy); {again}")
    return folder


def shipped_models(folder: str | os.PathLike) -> tuple[str, ...]:
    """The models a parsers folder holds a trained copy of: a shipped set's ``<model>/`` (the
    manifest's ``models``), a run folder's ``baselines/<model>/baseline.pt``."""
    folder = Path(folder)
    man = folder / MANIFEST
    if man.is_file():
        return tuple(read_json(man).get("models", {}))
    return tuple(sorted(p.parent.name for p in folder.glob(f"baselines/*/{MODEL_CHECKPOINT}")))


def read_manifest(name: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a set, by name or folder (verified first)."""
    return read_json((verified(name) / MANIFEST))


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
        manifest = read_json((folder / MANIFEST))
    except (OSError, ValueError) as e:
        raise PretrainedError(f"{folder / MANIFEST}: no readable manifest to add models to ({e})") from None
    sources = _model_sources(models)
    digests = _write_sources(folder, sources)
    manifest["models"] = {**manifest.get("models", {}), **{m: dict(described or {}).get(m, {}) for m in models}}
    # a replaced model's files of before (another form, a tuned.json it no longer has) leave the list
    manifest["sha256"] = {**{k: v for k, v in manifest["sha256"].items() if k.split("/")[0] not in models}, **digests}
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
    """Each source written to ``folder/<rel>`` atomically: a file as it is, a checkpoint ``X.pt``
    as :func:`_shipped_payload` in its shipped form (``X.safetensors``, ``X.json``; an ``X.pt`` of
    the older form there is removed). Returns each written file's name in the set -> sha256."""
    digests = {}
    for rel, (src, kind) in sources.items():
        if kind is None:
            write_atomic(folder / rel, src.read_bytes())
            written = [folder / rel]
        else:
            written = list(save_shipped(folder / rel, _shipped_payload(load_checkpoint(src, kind=kind))))
            (folder / rel).unlink(missing_ok=True)
        for path in written:
            digests[path.relative_to(folder).as_posix()] = sha256_file(path)
    return digests


def convert_set(name: str | os.PathLike) -> Path:
    """Rewrite a set of the older form (each checkpoint a ``.pt`` file, read with
    ``torch.load(weights_only=True)``) in the shipped form: per checkpoint ``X.safetensors`` and
    ``X.json``, each read back identical to the ``.pt`` payload before anything else happens
    (:func:`nsvqa.training.checkpoint.save_shipped`: every tensor bit for bit, the rest as JSON),
    then the manifest's ``sha256`` updated and the ``.pt`` files removed. Returns the set's folder;
    a set without ``.pt`` files is left as it is.

    Raises:
        PretrainedError: a file that fails its check (:func:`verified`) or a checkpoint that does not
            read back identical (the ``.pt`` files and the manifest are then left as they were).
    """
    folder = verified(name)
    manifest = read_json((folder / MANIFEST))
    old = [rel for rel in manifest["sha256"] if rel.endswith(".pt")]
    digests = dict(manifest["sha256"])
    for rel in old:
        try:
            written = save_shipped(folder / rel, load_checkpoint(folder / rel))
        except CheckpointError as e:
            raise PretrainedError(str(e)) from None
        del digests[rel]
        digests |= {p.relative_to(folder).as_posix(): sha256_file(p) for p in written}
    if old:
        manifest["sha256"] = digests
        write_json_atomic(folder / MANIFEST, manifest, indent=1)
        for rel in old:
            (folder / rel).unlink()
    return folder


def model_card(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The ``card`` of a set's manifest: what it is for, what it was trained on and at which
    profile, its measured accuracy and its limits (:data:`CARD_FIELDS`, docs/models.md).

    Raises:
        PretrainedError: no card, or one that lacks a field (named).
    """
    card = manifest.get("card")
    missing = [f for f in CARD_FIELDS if not isinstance(card, Mapping) or f not in card]
    if missing:
        raise PretrainedError(f"set {manifest.get('name')!r}: its manifest's card lacks {missing} "
                              f"(fields: {', '.join(CARD_FIELDS)})")
    return dict(card)


__all__ = ["PRETRAINED_DIR", "ENV", "PREFIX", "FILES", "CARD_FIELDS", "MODEL_CHECKPOINT", "MODEL_CUTS", "PretrainedError",
           "shipped_models", "add_models", "pretrained_dir", "cache_dir", "search_dirs", "available", "is_set_path",
           "locate", "safe_relative", "verified", "read_manifest", "resolve_checkpoint", "parsers_dir",
           "pack_pretrained", "convert_set", "model_card"]
