"""Rendered images (``images/<split>/<name>.png``, written by :mod:`nsvqa.generation.dataset`) as
the image models read them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image


def read_image(path: str | Path) -> "torch.Tensor":
    """The image file ``path`` as a (3, H, W) float32 tensor in [0, 1] (RGB; alpha dropped).

    Raises:
        FileNotFoundError: no such file (the path named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such image")
    with Image.open(path) as im:
        arr = np.asarray(im.convert("RGB"), dtype=np.uint8)
    return torch.from_numpy(arr.copy()).permute(2, 0, 1).float().div_(255.0)


__all__ = ["read_image"]
