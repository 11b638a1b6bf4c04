"""Cached feature maps of a frozen image backbone (``<cache>/<split>_<backbone>_<H>x<W>_<key>.pt``).

The image baselines (FiLM, CNN+LSTM, NSCL; mDETR when its backbone is frozen) read an image through
the same frozen, ImageNet-pretrained network (:mod:`parsers.backbones`). Its maps are computed once
per image and kept here, so that every epoch and every model reads them instead of running the
backbone again. A file holds one split's images and is valid for exactly one :class:`FeatureKey`:

- the images: their folder and the sha256 of each file's bytes (a regenerated split with the same
  file names is another key);
- the backbone: its name and the sha256 of its weights file (``"random"`` for an untrained one);
- the input size the images were resized to, and the strides of the maps kept.

The key's digest is part of the file name, so a change of any of these reads (or builds) another
file; a file whose stored key differs from the one asked for is stale and :func:`load_features`
rebuilds it. A file that cannot be read whole (truncated, foreign, wrong shapes) raises
:class:`FeatureCacheError` naming it: it is never silently replaced, since a half-written cache
means something went wrong that the user should see (writes are atomic, so this one did not come
from here).

Stored: ``{"version", "key": FeatureKey as a dict, "maps": {str(stride): (N, C, h, w) float16}}``,
row ``i`` of every map is image ``key.files[i]``.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import torch

from executors.errors import FormatError
from nsvqa.fileio import atomic_open, sha256_file, sweep_temporaries

FORMAT_VERSION = 1


class FeatureCacheError(FormatError):
    """A feature cache file that cannot be used: unreadable, truncated, or inconsistent (the file
    and the field named)."""


@dataclass(frozen=True)
class FeatureKey:
    """What a cache file's maps depend on (see the module doc)."""

    source: str                      # the images folder, resolved
    files: tuple[str, ...]           # file names, in row order
    image_sha256: tuple[str, ...]    # each file's bytes
    backbone: str                    # e.g. "lite0"
    weights_sha256: str              # the weights file's sha256, or "random"
    size: tuple[int, int]            # (height, width) the images were resized to
    strides: tuple[int, ...]         # the maps kept

    def digest(self) -> str:
        """16 hex digits of the sha256 of the key's JSON."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: Mapping, where: str) -> "FeatureKey":
        try:
            return cls(str(d["source"]), tuple(d["files"]), tuple(d["image_sha256"]), str(d["backbone"]),
                       str(d["weights_sha256"]), (int(d["size"][0]), int(d["size"][1])),
                       tuple(int(s) for s in d["strides"]))
        except (KeyError, TypeError, IndexError, ValueError) as e:
            raise FeatureCacheError(f"{where}, field 'key': not a feature key ({type(e).__name__}: {e})") from None


def image_key(folder: str | os.PathLike, files: Sequence[str], *, backbone: str, weights_sha256: str,
              size: tuple[int, int], strides: Sequence[int]) -> FeatureKey:
    """The key of ``files`` in the images folder ``folder`` (each file hashed; a missing file
    raises FileNotFoundError naming it)."""
    folder = Path(folder).resolve()
    hashes = []
    for name in files:
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: image file missing")
        hashes.append(sha256_file(path))
    return FeatureKey(str(folder), tuple(files), tuple(hashes), backbone, weights_sha256,
                      (int(size[0]), int(size[1])), tuple(int(s) for s in strides))


def features_path(cache_dir: str | os.PathLike, split: str, key: FeatureKey) -> Path:
    """``<cache_dir>/<split>_<backbone>_<H>x<W>_<digest>.pt``."""
    h, w = key.size
    return Path(cache_dir) / f"{split}_{key.backbone}_{h}x{w}_{key.digest()}.pt"


def write_features(path: str | os.PathLike, key: FeatureKey, maps: Mapping[int, "torch.Tensor"]) -> Path:
    """Write ``maps`` (stride -> (N, C, h, w), stored as float16) for ``key`` atomically, first
    removing the stale temporaries a killed writer left in the cache folder.

    Raises:
        ValueError: a map whose rows are not one per file of the key, or strides other than the key's.
    """
    path = Path(path)
    sweep_temporaries(path.parent)
    if sorted(maps) != sorted(key.strides):
        raise ValueError(f"{path}: maps of strides {sorted(maps)}, the key has {sorted(key.strides)}")
    for s, m in maps.items():
        if m.dim() != 4 or m.shape[0] != len(key.files):
            raise ValueError(f"{path}: the stride-{s} map has shape {tuple(m.shape)}, expected "
                             f"({len(key.files)}, C, h, w)")
    payload = {"version": FORMAT_VERSION, "key": asdict(key),
               "maps": {str(s): m.detach().to("cpu", torch.float16).contiguous() for s, m in maps.items()}}
    with atomic_open(path, "wb") as f:
        torch.save(payload, f)
    return path


def read_features(path: str | os.PathLike) -> tuple[FeatureKey, dict[int, "torch.Tensor"]]:
    """The key and the maps (stride -> (N, C, h, w) float16) of a cache file.

    Raises:
        FeatureCacheError: no such file, a file that is not a whole cache (truncated, foreign), an
            unknown version, or maps whose rows or strides do not match its key.
    """
    path = Path(path)
    if not path.is_file():
        raise FeatureCacheError(f"{path}: no feature cache file")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a truncated zip, a pickle of something else
        raise FeatureCacheError(f"{path}: not a readable feature cache (truncated or foreign: "
                                f"{type(e).__name__}: {e}); delete it to rebuild") from None
    if not isinstance(payload, dict) or "key" not in payload or "maps" not in payload:
        raise FeatureCacheError(f"{path}: not a feature cache (expected the fields 'version', 'key', 'maps')")
    if payload.get("version") != FORMAT_VERSION:
        raise FeatureCacheError(f"{path}, field 'version': {payload.get('version')!r}, this reader knows "
                                f"{FORMAT_VERSION}; delete it to rebuild")
    key = FeatureKey.from_dict(payload["key"], str(path))
    maps = payload["maps"]
    if not isinstance(maps, dict) or sorted(maps) != sorted(str(s) for s in key.strides):
        raise FeatureCacheError(f"{path}, field 'maps': strides {sorted(maps) if isinstance(maps, dict) else maps!r}, "
                                f"the key has {list(key.strides)}")
    out = {}
    for s, m in maps.items():
        if not isinstance(m, torch.Tensor) or m.dim() != 4 or m.shape[0] != len(key.files):
            shape = tuple(m.shape) if isinstance(m, torch.Tensor) else type(m).__name__
            raise FeatureCacheError(f"{path}, field 'maps.{s}': shape {shape}, expected one row per image "
                                    f"({len(key.files)})")
        out[int(s)] = m
    return key, out


def load_features(path: str | os.PathLike, key: FeatureKey,
                  build: Callable[[], Mapping[int, "torch.Tensor"]]) -> dict[int, "torch.Tensor"]:
    """The maps of ``key``: read from ``path`` when it holds this key, else built by ``build()``
    and written there (a missing file, or a stale one: another key).

    Raises:
        FeatureCacheError: ``path`` exists but is not a whole cache (see :func:`read_features`).
    """
    path = Path(path)
    if path.is_file():
        stored, maps = read_features(path)
        if stored == key:
            return maps
    maps = {s: m.detach().to("cpu", torch.float16) for s, m in build().items()}  # as stored
    write_features(path, key, maps)
    return maps


__all__ = ["FORMAT_VERSION", "FeatureCacheError", "FeatureKey", "image_key", "features_path", "write_features",
           "read_features", "load_features"]
