"""The image inputs of the learned baselines. Images are read once per split (one decode per image,
shared by its questions), resized to the profile's size and kept as uint8 (:func:`load_images`); the
training and validation images are cached in ``RUN/cache/<split>_<W>x<H>.pt`` (:func:`image_cache`)
so a resumed run skips the decoding, and :func:`normalise_images` makes them a network's input. With
the frozen ImageNet backbone the input is instead its maps, computed once per split and cached in
the data folder (:func:`backbone_features`, :func:`feature_cache_dir`); :func:`image_inputs` reads
whichever the config names.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import torch
from PIL import Image
from torch.nn import functional as F
from tqdm import tqdm

from nsvqa.artifacts.features import features_path, image_key, load_features
from nsvqa.artifacts.images import read_image
from nsvqa.fileio import atomic_open
from parsers.backbones import TAP_STRIDES, WEIGHTS_SHA256, EfficientNetLite0

IMAGE_MEAN, IMAGE_STD = 0.5, 0.25  # images in [0, 1] -> roughly zero mean, unit variance


def load_images(folder: str | Path, split: str, filenames: Sequence[str], width: int, height: int, *,
                cache: Path | None = None, progress: bool = False) -> tuple[torch.Tensor, dict[str, int]]:
    """The distinct images of ``filenames`` from ``FOLDER/images/<split>/``, resized.

    Returns:
        images (M, 3, height, width) uint8, and file name -> row.

    With ``cache`` (a ``.pt`` path) the tensor is read from there when it holds the same files of
    the same folder at this size, and written there (atomically) otherwise.

    Raises:
        FileNotFoundError: an image file that does not exist (its path named).
    """
    folder = Path(folder)
    files = list(dict.fromkeys(filenames))
    key = {"source": str((folder / "images" / split).resolve()), "files": files, "size": [height, width]}
    if cache is not None and cache.is_file():
        try:
            payload = torch.load(cache, weights_only=True)
            if {k: payload.get(k) for k in key} == key:
                return payload["images"], {f: i for i, f in enumerate(files)}
        except Exception:  # a foreign or truncated cache is rebuilt
            pass
    out = torch.empty((len(files), 3, height, width), dtype=torch.uint8)
    for i, name in enumerate(tqdm(files, desc=f"images {split}", disable=not progress)):
        path = folder / "images" / split / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: image file missing")
        x = read_image(path)
        if x.shape[1:] != (height, width):
            x = F.interpolate(x[None], size=(height, width), mode="bilinear", antialias=True, align_corners=False)[0]
        out[i] = x.mul(255.0).round_().clamp_(0, 255).to(torch.uint8)
    if cache is not None:
        with atomic_open(cache, "wb") as f:
            torch.save(key | {"images": out}, f)
    return out, {f: i for i, f in enumerate(files)}


#: the frozen backbones whose maps :func:`backbone_features` caches
FEATURE_BACKBONES = ("lite0",)


def backbone_features(folder: str | Path, split: str, filenames: Sequence[str], cache_dir: str | Path, *,
                      height: int, width: int, strides: Sequence[int] = (16,), backbone: str = "lite0",
                      batch: int = 16, progress: bool = False) -> tuple[dict[int, torch.Tensor], dict[str, int]]:
    """The frozen ImageNet backbone's maps of the images of ``FOLDER/images/<split>/``, resized to
    ``height`` x ``width``, computed once for the whole split (every ``*.png``: a run on a subset
    and a prediction on all of it share one file) and cached in ``cache_dir``
    (:mod:`nsvqa.artifacts.features`: one file per images, weights, size and strides; a stale file
    is rebuilt, a truncated one raises :class:`~nsvqa.artifacts.features.FeatureCacheError`).

    Returns:
        stride -> (M, C, h, w) float16 maps of the split's M images (Lite0: strides 4 / 8 / 16 / 32
        give 24 / 40 / 112 / 320 channels), and file name -> row (every file of ``filenames`` has one).

    Raises:
        ValueError: an unknown ``backbone`` or stride.
        FileNotFoundError: an image file that does not exist (its path named).
        parsers.backbones.WeightsUnavailable: the weights package is not installed.
    """
    if backbone not in FEATURE_BACKBONES:
        raise ValueError(f"feature backbone {backbone!r}: valid: {', '.join(FEATURE_BACKBONES)}")
    bad = sorted(set(strides) - set(TAP_STRIDES))
    if bad or not strides:
        raise ValueError(f"strides {list(strides)}: each must be one of {list(TAP_STRIDES)}")
    images = Path(folder) / "images" / split
    files = sorted(p.name for p in images.glob("*.png"))  # the whole split: one file serves every subset
    have = set(files)
    for name in filenames:
        if name not in have:
            raise FileNotFoundError(f"{images / name}: image file missing")
    key = image_key(images, files, backbone=backbone, weights_sha256=WEIGHTS_SHA256, size=(height, width),
                    strides=sorted(strides))

    def build() -> dict[int, torch.Tensor]:
        net = EfficientNetLite0(weights="imagenet", min_stride=4 if 4 in key.strides else 8).eval()
        index = {st: str(i) for i, st in enumerate(net.strides)}
        out: dict[int, list[torch.Tensor]] = {st: [] for st in key.strides}
        for a in tqdm(range(0, len(files), batch), desc=f"{backbone} features {split}", disable=not progress):
            x = torch.stack([read_image(images / f) for f in files[a:a + batch]])
            if x.shape[-2:] != (height, width):
                x = F.interpolate(x, size=(height, width), mode="bilinear", antialias=True, align_corners=False)
            with torch.no_grad():
                maps = net(x)
            for st in key.strides:
                out[st].append(maps[index[st]].to(torch.float16))
        return {st: torch.cat(v) if v else torch.zeros((0, 1, 1, 1), dtype=torch.float16) for st, v in out.items()}

    maps = load_features(features_path(cache_dir, split, key), key, build)
    return maps, {f: i for i, f in enumerate(files)}


def feature_cache_dir(folder: str | Path) -> Path:
    """``FOLDER/features/``: where a variant's frozen-backbone maps are cached, shared by every
    model and run that reads that variant."""
    return Path(folder) / "features"


def image_inputs(folder: str | Path, split: str, filenames: Sequence[str], cfg: Any, run: str | Path | None = None,
                 progress: bool = False) -> tuple[torch.Tensor, dict[str, int]]:
    """What an image model reads of ``filenames``: the frozen backbone's cached maps at
    ``cfg.feature_stride`` (``cfg.backbone == "lite0"``, :func:`backbone_features`; (M, C, h, w)
    float16) or the images resized to the config's size ((M, 3, H, W) uint8, :func:`load_images`,
    cached in ``run`` when given), and file name -> row."""
    if cfg.backbone == "lite0":
        maps, rows = backbone_features(folder, split, filenames, feature_cache_dir(folder), height=cfg.image_height,
                                       width=cfg.image_width, strides=(cfg.feature_stride,), progress=progress)
        return maps[cfg.feature_stride], rows
    return load_images(folder, split, filenames, cfg.image_width, cfg.image_height,
                       cache=image_cache(run, cfg, split) if run is not None else None, progress=progress)


def image_cache(run: str | Path, cfg: Any, split: str) -> Path | None:
    """``RUN/cache/<split>_<W>x<H>.pt``, where a run keeps ``split``'s images resized to
    ``cfg.image_width`` x ``cfg.image_height`` (for :func:`load_images`), or None when
    ``cfg.cache_images`` is off."""
    return Path(run) / "cache" / f"{split}_{cfg.image_width}x{cfg.image_height}.pt" if cfg.cache_images else None


def normalise_images(images: torch.Tensor) -> torch.Tensor:
    """uint8 (B, 3, H, W) -> float32 (B, 3, H, W), ``(x / 255 - 0.5) / 0.25``."""
    return images.float().div_(255.0).sub_(IMAGE_MEAN).div_(IMAGE_STD)


def image_size(folder: Path, split: str, name: str) -> tuple[int, int]:
    """(width, height) of the image ``FOLDER/images/<split>/<name>`` (its header only).

    Raises:
        FileNotFoundError: no such file (the path named).
    """
    path = Path(folder) / "images" / split / name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: image file missing")
    with Image.open(path) as im:
        return im.size


__all__ = ["image_size", "IMAGE_MEAN", "IMAGE_STD", "load_images", "FEATURE_BACKBONES", "backbone_features", "feature_cache_dir",
           "image_inputs", "image_cache", "normalise_images"]
