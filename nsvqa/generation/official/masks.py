"""The release's ``obj_mask_box`` geometry: run-length masks, tight boxes, resizing masks and boxes."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from nsvqa.generation.official.release import OfficialFormatError


def decode_runs(text: Any, height: int, width: int, where: str = "mask") -> np.ndarray:
    """The boolean (height, width) mask of a release run-length string.

    Args:
        text (str): comma-separated run lengths over the row-major flattened image, alternating
            runs of 0 and 1, starting with a 0-run (which may be 0 long).
        height (int), width (int): the image's size; the runs must sum to height * width.
        where (str): names the mask in error messages (file, scene, object, field).

    Raises:
        OfficialFormatError: not a string, a token that is not a non-negative integer, or runs that
            do not sum to height * width.
    """
    if not isinstance(text, str):
        raise OfficialFormatError(f"{where}: expected a string of run lengths, got {type(text).__name__}")
    tokens = text.strip().split(",") if text.strip() else []
    try:
        runs = np.asarray([int(t) for t in tokens], dtype=np.int64)
    except ValueError:
        bad = next(t for t in tokens if not t.strip().lstrip("+").isdigit())
        raise OfficialFormatError(f"{where}: run length {bad.strip()!r} is not an integer") from None
    n = height * width
    if (runs < 0).any():
        raise OfficialFormatError(f"{where}: negative run length {int(runs[runs < 0][0])}")
    total = int(runs.sum())
    if total != n:
        raise OfficialFormatError(f"{where}: the {len(runs)} run lengths sum to {total}, expected "
                                  f"{n} = {height} x {width} (the image's height x width)")
    if len(runs) <= 1:
        return np.zeros((height, width), dtype=bool)
    values = (np.arange(len(runs)) % 2).astype(bool)
    return np.repeat(values, runs).reshape(height, width)


def encode_runs(mask: np.ndarray) -> str:
    """The release's run-length string of a mask (row-major, 0-run first; no zero-length run
    except a leading one when the first pixel is set).

    Args:
        mask (np.ndarray): boolean (H, W) mask.
    """
    flat = np.asarray(mask, dtype=bool).ravel()
    if flat.size == 0:
        return "0"
    cut = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    runs = np.diff(np.concatenate([[0], cut, [flat.size]]))
    if flat[0]:
        runs = np.concatenate([[0], runs])
    return ",".join(str(int(r)) for r in runs)


def tight_box(mask: np.ndarray) -> list[int]:
    """``[x, y, w, h]`` of the set pixels of a mask (end exclusive, the release's and pycocotools'
    convention); ``[0, 0, 0, 0]`` for an empty mask.

    Args:
        mask (np.ndarray): boolean (H, W) mask.
    """
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    if not len(rows):
        return [0, 0, 0, 0]
    return [int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)]


def resize_mask(mask: np.ndarray, width: int, height: int) -> np.ndarray:
    """A mask resized by area: a pixel is set when at least half of its area is covered by set
    source pixels; a non-empty mask that would vanish keeps its most covered pixels (so a visible
    object or part stays visible).

    Args:
        mask (np.ndarray): boolean (H, W) mask.
        width (int), height (int): the size to resize to.

    Returns:
        np.ndarray: boolean (height, width) mask (``mask`` itself when the size is the same).
    """
    if mask.shape == (height, width):
        return mask
    out = np.zeros((height, width), dtype=bool)
    x, y, w, h = tight_box(mask)
    if not w:
        return out
    src_h, src_w = mask.shape
    wy, wx = _area_weights(src_h, height), _area_weights(src_w, width)
    # only the target pixels that overlap the mask's box (the mask is 0 elsewhere)
    ty0, ty1 = math.floor(y * height / src_h), min(height, math.ceil((y + h) * height / src_h))
    tx0, tx1 = math.floor(x * width / src_w), min(width, math.ceil((x + w) * width / src_w))
    cover = wy[ty0:ty1, y:y + h] @ mask[y:y + h, x:x + w].astype(np.float64) @ wx[tx0:tx1, x:x + w].T
    part = cover >= 0.5 - 1e-9
    if not part.any():
        part = cover >= cover.max() - 1e-9
    out[ty0:ty1, tx0:tx1] = part
    return out


@lru_cache(maxsize=16)
def _area_weights(n_src: int, n_dst: int) -> np.ndarray:
    """(n_dst, n_src): the fraction of target pixel i's extent that source pixel r covers."""
    scale = n_src / n_dst
    edges = np.arange(n_dst + 1) * scale
    r = np.arange(n_src)
    lo = np.maximum(r[None, :], edges[:-1, None])
    hi = np.minimum(r[None, :] + 1, edges[1:, None])
    return np.clip(hi - lo, 0.0, None) / scale


def scale_box(box: Sequence[float], sx: float, sy: float) -> list[float]:
    """``box`` scaled with its image, rounded to 4 decimals.

    Args:
        box (sequence of 4 floats): ``[x, y, w, h]`` in pixels.
        sx (float), sy (float): new width / old width, new height / old height.
    """
    x, y, w, h = box
    return [round(float(x) * sx, 4), round(float(y) * sy, 4), round(float(w) * sx, 4), round(float(h) * sy, 4)]


def _check_box(box: Any, width: int, height: int, where: str) -> list[float]:
    ok = (isinstance(box, (list, tuple)) and len(box) == 4
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in box))
    if not ok:
        raise OfficialFormatError(f"{where}: expected a box [x, y, w, h] of 4 numbers, got {box!r}")
    x, y, w, h = box
    if w < 0 or h < 0 or x < 0 or y < 0 or x + w > width or y + h > height:
        raise OfficialFormatError(f"{where}: box {list(box)} ([x, y, w, h]) lies outside the "
                                  f"{width} x {height} image")
    return [float(v) for v in box]
