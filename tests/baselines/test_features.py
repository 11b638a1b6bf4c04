"""The frozen backbone's feature cache (nsvqa.artifacts.features, baselines.common.backbone_features):
computed once, read back bit-for-bit, rebuilt when an image changes, rejected when truncated."""
from __future__ import annotations

import shutil

import pytest
import torch

from nsvqa.artifacts.features import (FeatureCacheError, FeatureKey, features_path, image_key, load_features,
                                      read_features, write_features)


def _key(**kw) -> FeatureKey:
    base = dict(source="/d/images/val", files=("a.png", "b.png"), image_sha256=("1" * 64, "2" * 64),
                backbone="lite0", weights_sha256="w" * 64, size=(48, 64), strides=(16,))
    return FeatureKey(**(base | kw))


def test_written_features_read_back_with_their_key(tmp_path):
    key = _key(strides=(8, 16))
    maps = {8: torch.randn(2, 40, 6, 8), 16: torch.randn(2, 112, 3, 4)}
    path = write_features(features_path(tmp_path, "val", key), key, maps)
    assert path.name == f"val_lite0_48x64_{key.digest()}.pt"
    got_key, got = read_features(path)
    assert got_key == key
    for s in (8, 16):
        assert got[s].dtype == torch.float16
        torch.testing.assert_close(got[s], maps[s].half())
    with pytest.raises(ValueError, match=r"one per file|expected \(2, C, h, w\)"):
        write_features(tmp_path / "x.pt", key, {8: torch.zeros(3, 40, 6, 8), 16: torch.zeros(2, 112, 3, 4)})


def test_every_part_of_the_key_changes_the_file_name():
    key = _key()
    for change in (dict(source="/e/images/val"), dict(image_sha256=("1" * 64, "3" * 64)),
                   dict(weights_sha256="random"), dict(size=(96, 128)), dict(strides=(8,))):
        assert _key(**change).digest() != key.digest(), change


def test_truncated_and_foreign_files_are_rejected_with_the_file_named(tmp_path):
    key = _key()
    path = write_features(tmp_path / "f.pt", key, {16: torch.randn(2, 112, 3, 4)})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FeatureCacheError, match=r"f\.pt: not a readable feature cache \(truncated"):
        read_features(path)
    built = []
    with pytest.raises(FeatureCacheError, match="truncated"):  # never silently replaced
        load_features(path, key, lambda: built.append(1) or {16: torch.zeros(2, 112, 3, 4)})
    assert not built
    torch.save({"something": 1}, tmp_path / "g.pt")
    with pytest.raises(FeatureCacheError, match=r"g\.pt: not a feature cache"):
        read_features(tmp_path / "g.pt")
    torch.save({"version": 1, "key": key.__dict__ | {"files": ["a.png"]}, "maps": {"16": torch.zeros(2, 112, 3, 4)}},
               tmp_path / "h.pt")
    with pytest.raises(FeatureCacheError, match=r"h\.pt, field 'key'|h\.pt, field 'maps\.16': shape"):
        read_features(tmp_path / "h.pt")


def test_stale_file_is_rebuilt_and_a_current_one_reused(tmp_path):
    old, new = _key(), _key(image_sha256=("1" * 64, "9" * 64))
    path = tmp_path / "c.pt"
    write_features(path, old, {16: torch.zeros(2, 112, 3, 4)})
    calls = []

    def build():
        calls.append(1)
        return {16: torch.ones(2, 112, 3, 4)}

    maps = load_features(path, new, build)
    assert calls == [1] and float(maps[16].min()) == 1.0
    assert read_features(path)[0] == new
    load_features(path, new, build)
    assert calls == [1]


def test_backbone_features_are_cached_and_follow_the_images(root, tmp_path, require_backbone_weights):
    """Through the real backbone on the tiny dataset: the maps cover the whole split whatever
    subset is asked for; the second call reads the file; an image
    rewritten with other pixels gets another key, so its split is computed again and its maps
    differ in that image's row only."""
    from PIL import Image

    from baselines.common import backbone_features

    src = root / "mid" / "images" / "val"
    files = sorted(p.name for p in src.glob("*.png"))[:2]
    assert len(files) == 2
    data = tmp_path / "data"
    (data / "images").mkdir(parents=True)
    shutil.copytree(src, data / "images" / "val")
    cache = tmp_path / "cache"
    maps, rows = backbone_features(data, "val", files[1:] + files[1:], cache, height=64, width=96, strides=(8, 16))
    assert rows == {f: i for i, f in enumerate(files)}
    assert maps[8].shape == (2, 40, 8, 12) and maps[16].shape == (2, 112, 4, 6)
    assert len(list(cache.glob("*.pt"))) == 1
    mtime = next(cache.glob("*.pt")).stat().st_mtime_ns
    again, _ = backbone_features(data, "val", files[:1], cache, height=64, width=96, strides=(8, 16))
    assert next(cache.glob("*.pt")).stat().st_mtime_ns == mtime
    torch.testing.assert_close(again[16], maps[16])
    img = Image.open(data / "images" / "val" / files[1]).convert("RGB")
    Image.eval(img, lambda v: 255 - v).save(data / "images" / "val" / files[1])
    changed, _ = backbone_features(data, "val", files, cache, height=64, width=96, strides=(8, 16))
    assert len(list(cache.glob("*.pt"))) == 2
    torch.testing.assert_close(changed[16][0], maps[16][0])
    assert (changed[16][1].float() - maps[16][1].float()).abs().max() > 0.1
    with pytest.raises(FileNotFoundError, match="other.png: image file missing"):
        backbone_features(data, "val", ["other.png"], cache, height=64, width=96, strides=(8, 16))
    with pytest.raises(ValueError, match="strides \\[2\\]"):
        backbone_features(data, "val", files, cache, height=64, width=96, strides=(2,))


def test_image_key_names_a_missing_image(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.png: image file missing"):
        image_key(tmp_path, ["nope.png"], backbone="lite0", weights_sha256="w", size=(8, 8), strides=(16,))


@pytest.mark.parametrize("name", ["cnn_lstm", "film"])
def test_image_baselines_learn_on_the_cached_maps(name, root, tmp_path, require_backbone_weights):
    """``backbone=lite0``: the model reads the frozen backbone's cached stride-16 maps (computed
    once into the variant's ``features/`` folder and read again by prediction), and overfits eight
    training questions."""
    from orchestration import models as registry

    data = tmp_path / "data"
    shutil.copytree(root / "mid", data / "mid")
    model = registry.get(name)
    cfg = model.config(str(data / "mid"), "tiny", backbone="lite0", feature_stride=16, image_width=96, image_height=64,
                       max_train_questions=8, batch=8, steps=80, lr=3e-3, warmup=1, eval_every=80, val_questions=0)
    torch.manual_seed(0)
    model.train(cfg, tmp_path / "run", progress=False)
    cached = sorted(p.name for p in (data / "mid" / "features").glob("*.pt"))
    assert len(cached) == 1 and cached[0].startswith("train_lite0_64x96_")
    net = model.load(tmp_path / "run")[0]
    assert not any(isinstance(m, torch.nn.Conv2d) and m.in_channels == 3 for m in net.modules())  # no pixel CNN
    preds = model.predict(tmp_path / "run", data, "mid", "train")
    assert [p.correct for p in preds[:8]] == [True] * 8
    assert len(list((data / "mid" / "features").glob("*.pt"))) == 1  # prediction read the same file
    with pytest.raises(ValueError, match="feature_stride 12"):
        model.config(str(data / "mid"), "tiny", backbone="lite0", feature_stride=12)


def test_fine_tuned_lite0_reads_normalised_pixels_and_trains(require_backbone_weights):
    """``backbone=lite0-ft``: the ImageNet Lite0 on the pixels (images normalised as every pixel
    baseline's), its stride-16 map, with gradients into the pretrained weights."""
    from baselines.common import IMAGE_MEAN, IMAGE_STD, ImageEncoder, Lite0Trunk
    from baselines.film import build_cnn
    from parsers.backbones import EfficientNetLite0

    torch.manual_seed(0)
    trunk = Lite0Trunk(16).eval()
    x01 = torch.rand(2, 3, 64, 96)
    y = trunk((x01 - IMAGE_MEAN) / IMAGE_STD)
    assert y.shape == (2, 112, 4, 6)
    ref = EfficientNetLite0(weights="imagenet", min_stride=8).eval()(x01)["1"]
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    y.square().mean().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in trunk.net.parameters())
    cnn, channels = build_cnn("lite0-ft", 8, 3, feature_stride=32)
    assert channels == 320 and cnn(torch.zeros(1, 3, 64, 96)).shape == (1, 320, 2, 3)
    assert ImageEncoder("lite0-ft", 8, 16, feature_stride=16)(torch.zeros(2, 3, 64, 96)).shape == (2, 16)
