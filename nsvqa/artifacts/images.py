"""Rendered images (``images/<split>/<name>.png``, written by :mod:`nsvqa.generation.dataset`) as
the image models read them, and the check of a split's images before any work reads them
(:func:`check_images`: present, decodable, all of the split's size, and the bytes the manifest
recorded where it records them)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import numpy as np
import torch
from PIL import Image

from executors.errors import FormatError
from executors.io import read_json

from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.fileio import sha256_file


class ImageFormatError(FormatError):
    """An image a run reads that is missing, truncated, not an image, of another size than its
    split's, or not the bytes the manifest recorded; the message names the file."""


def read_image(path: str | Path, size: tuple[int, int] | None = None) -> "torch.Tensor":
    """The image file ``path`` as a (3, H, W) float32 tensor in [0, 1] (RGB; alpha dropped).

    Args:
        size: (width, height) the image must have (None: any).

    Raises:
        FileNotFoundError: no such file (the path named).
        ImageFormatError: not a whole image (a truncated PNG), or not of ``size`` (both sizes named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such image")
    arr = _decode(path, size)
    return torch.from_numpy(arr.copy()).permute(2, 0, 1).float().div_(255.0)


def _decode(path: Path, size: tuple[int, int] | None) -> np.ndarray:
    """(H, W, 3) uint8 pixels of ``path``, decoded whole (see :func:`read_image`)."""
    try:
        with Image.open(path) as im:
            got = im.size
            arr = None if size is not None and got != tuple(size) else np.asarray(im.convert("RGB"), dtype=np.uint8)
    except (OSError, SyntaxError, ValueError) as e:  # PIL: not an image, truncated data, a bad chunk
        raise ImageFormatError(f"{path}: not a whole image ({type(e).__name__}: {e}); regenerate or copy it "
                               f"again") from None
    if arr is None:
        raise ImageFormatError(f"{path}: {got[0]}x{got[1]} pixels, but the split's images are {size[0]}x{size[1]}")
    return arr


def manifest_images(folder: str | os.PathLike, split: str) -> tuple[dict[str, str], tuple[int, int] | None]:
    """What the variant folder's ``manifest.json`` (:mod:`nsvqa.generation.dataset`) records of
    ``split``'s images: (``"images/<split>/<name>"`` -> sha256, (width, height)); ``({}, None)``
    where there is no manifest or it does not record the split (an imported release)."""
    path = Path(folder) / "manifest.json"
    try:
        entry = read_json(path).get("splits", {}).get(split) or {}  # strict: a key twice is no record
    except (OSError, ValueError, AttributeError):
        return {}, None
    config = entry.get("config") or {}
    size = (config["width"], config["height"]) if "width" in config and "height" in config else None
    shas = {k: v for k, v in (entry.get("sha256") or {}).items() if k.startswith(f"images/{split}/")}
    return shas, size


def check_images(folder: str | os.PathLike, split: str, names: Iterable[str | None],
                 where: str | None = None) -> tuple[int, int] | None:
    """Check every image ``names`` (file names under ``FOLDER/images/<split>/``) before any work
    reads them: each exists; where the manifest records its sha256 (:func:`manifest_images`) the
    bytes match it; else it decodes whole and has the split's size (the manifest's, else the
    first image's). Returns the split's (width, height) (None without images).

    Args:
        where: names the list for an image without a file name (``"<scenes file>"``).

    Raises:
        ImageFormatError: the first image that fails, named, with why (both sizes for a wrong size).
    """
    folder = Path(folder)
    shas, size = manifest_images(folder, split)
    for k, name in enumerate(names):
        if name is None:
            raise ImageFormatError(f"{where or folder}, scene {k}, field 'image_filename': missing; the run reads "
                                   f"its image")
        path = folder / "images" / split / name
        if not path.is_file():
            raise ImageFormatError(f"{path}: missing (image of {where or split}, scene {k}); regenerate the split or "
                                   f"copy it whole")
        rel = f"images/{split}/{name}"
        if rel in shas:
            if sha256_file(path) != shas[rel]:
                _decode(path, size)  # the more telling error first: truncated, or another size
                raise ImageFormatError(f"{path}: not the bytes recorded in {folder / 'manifest.json'} (sha256 "
                                       f"differs): cut short or changed after it was generated; regenerate or copy "
                                       f"it again")
            continue
        arr = _decode(path, size)
        size = size or (arr.shape[1], arr.shape[0])
    return size


def check_split_images(folder: str | os.PathLike, split: str) -> tuple[int, int] | None:
    """:func:`check_images` of every image the scenes file of ``FOLDER``'s split names
    (``scenes/<split>_scenes.json``, read by :func:`nsvqa.artifacts.read_scenes`); None, checking
    nothing, where the split has no scenes file.

    Raises:
        FormatError: an unreadable scenes file; ImageFormatError: a missing, truncated, changed or
            wrong-size image (named).
    """
    path = scenes_path(folder, split)
    if not path.is_file():
        return None
    return check_images(folder, split, [s.image_filename for s in read_scenes(path)], where=str(path))


__all__ = ["ImageFormatError", "read_image", "check_images", "check_split_images", "manifest_images"]
