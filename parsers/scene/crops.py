"""Square 4-channel crops (RGB + instance mask): the attribute head's input, shared by training
(ground-truth masks) and parsing (detector masks)."""
from __future__ import annotations

import numpy as np
import torch

from parsers.choices import PART_CROPS


def check_part_crop(part_crop: str) -> None:
    """ValueError naming the valid values unless ``part_crop`` is one of :data:`parsers.choices.PART_CROPS`."""
    if part_crop not in PART_CROPS:
        raise ValueError(f"part_crop must be one of {list(PART_CROPS)}, got {part_crop!r}")


def box_geometry(bbox: list[float], height: int, width: int) -> torch.Tensor:
    """(4,) the box (xywh) as centre and size relative to the image: the attribute head's cue for
    the ground-plane position, which a crop alone no longer shows."""
    x, y, w, h = bbox
    return torch.tensor([(x + w / 2) / width, (y + h / 2) / height, w / width, h / height], dtype=torch.float32)


def crop_instance(image: torch.Tensor, mask: torch.Tensor, bbox: list[float], size: int,
                  margin: float = 0.15) -> torch.Tensor:
    """(4, size, size): the box (xywh, widened by ``margin`` and made square) cut from the image
    and its mask, resized bilinearly (the mask channel stays in [0, 1])."""
    x, y, w, h = bbox
    side = max(w, h) * (1 + 2 * margin) + 1.0
    cx, cy = x + w / 2, y + h / 2
    x0, y0 = int(np.floor(cx - side / 2)), int(np.floor(cy - side / 2))
    s = int(np.ceil(side))
    stacked = torch.cat([image, mask], 0)
    _, H, W = stacked.shape
    pad = torch.zeros((4, s, s), dtype=stacked.dtype)
    sx0, sy0, sx1, sy1 = max(x0, 0), max(y0, 0), min(x0 + s, W), min(y0 + s, H)
    if sx1 > sx0 and sy1 > sy0:
        pad[:, sy0 - y0:sy1 - y0, sx0 - x0:sx1 - x0] = stacked[:, sy0:sy1, sx0:sx1]
    return torch.nn.functional.interpolate(pad[None], size=(size, size), mode="bilinear", align_corners=False)[0]


def shift_crops(x: torch.Tensor, generator: torch.Generator, max_shift: float = 0.08,
                scale: tuple[float, float] = (0.9, 1.1)) -> torch.Tensor:
    """(B, C, S, S) crops each moved by up to ``max_shift`` of the side along each axis and scaled
    by a factor drawn from ``scale`` (one affine warp per crop, bilinear, zeros outside), the same
    warp for every channel, so the mask channel stays on its object. Colours are not changed: the
    small highlights that tell metal from rubber stay as rendered. The draws come from
    ``generator`` (CPU), so a seeded generator gives the same crops."""
    b = x.shape[0]
    u = torch.rand((b, 3), generator=generator)
    s = scale[0] + (scale[1] - scale[0]) * u[:, 0]
    t = (2 * u[:, 1:] - 1) * (2 * max_shift)  # grid units: the side is 2
    theta = torch.zeros((b, 2, 3))
    theta[:, 0, 0] = theta[:, 1, 1] = 1.0 / s
    theta[:, :, 2] = t
    grid = torch.nn.functional.affine_grid(theta.to(x.device, x.dtype), list(x.shape), align_corners=False)
    return torch.nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
