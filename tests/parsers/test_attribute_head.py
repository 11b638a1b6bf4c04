"""The attribute head: shapes of its outputs, mixed object/part losses, and that it learns."""
from __future__ import annotations

import math

import pytest
import torch

from nsvqa.training.scene_config import SceneParserConfig
from parsers.scene.attribute_head import AttributeHead, attribute_loss

NUM = {"shape": 21, "color": 8, "material": 2, "size": 2, "texture": 5, "partname": 85}


def _batch(n=8, size=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand((n, 4, size, size), generator=g)
    kind = torch.tensor([0, 1] * (n // 2))
    labels = {"kind": kind, "position": torch.randn((n, 2), generator=g)}
    for a, k in NUM.items():
        labels[a] = torch.randint(0, k, (n,), generator=g)
    return x, labels


@pytest.mark.parametrize("profile", ["tiny", "mini"])
def test_outputs(profile):
    torch.manual_seed(0)
    p = SceneParserConfig.from_profile("d", profile)  # the profile's ResNet sizes
    net = AttributeHead(NUM, p.head_depth, p.head_width, "resnet", pool="mean").eval()
    x, _ = _batch(size=p.crop_size)
    with torch.no_grad():
        out = net(x)
    for a, k in NUM.items():
        assert out[a].shape == (8, k)
    assert out["position"].shape == out["position_logvar"].shape == (8, 2)


def test_loss_uses_the_right_items():
    torch.manual_seed(0)
    net = AttributeHead(NUM, 18, 16, "resnet", pool="mean")
    x, labels = _batch()
    out = net(x)
    losses = attribute_loss(out, labels)
    assert set(losses) == set(NUM) | {"position", "total"}
    # partname only over parts, shape only over objects: changing an object's partname label
    # (meaningless for objects) does not change the loss
    labels2 = dict(labels, partname=labels["partname"].clone())
    labels2["partname"][0] = (labels["partname"][0] + 1) % 85  # item 0 is an object
    assert torch.equal(attribute_loss(out, labels2)["partname"], losses["partname"])
    only_objects = {k: v[::2] for k, v in labels.items()}
    out_obj = {k: v[::2] for k, v in out.items()}
    assert "partname" not in attribute_loss(out_obj, only_objects)


def _fit(net, x, labels, steps: int) -> tuple[float, float]:
    """(first, last) loss of ``steps`` Adam steps on one repeated batch."""
    opt = torch.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=1e-3)
    net.train()
    losses = []
    for _ in range(steps):
        loss = attribute_loss(net(x), labels)["total"]
        losses.append(float(loss.detach()))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return losses[0], losses[-1]


def test_one_training_step_lowers_the_loss_on_a_repeated_batch():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    first, last = _fit(AttributeHead(NUM, 18, 16, "resnet", pool="mean"), *_batch(), steps=8)
    assert math.isfinite(last) and last < first


def test_position_is_read_from_the_box_geometry():
    """Fresh random crops every step, positions a function of where the box is: only the geometry
    input can explain them, and without it the prediction is far off."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = AttributeHead({"shape": 3}, 18, 8, "resnet", pool="mean")
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)

    def batch(n):
        g = torch.rand(n, 4)
        return torch.rand(n, 4, 16, 16), g, {"kind": torch.zeros(n, dtype=torch.long),
                                              "shape": torch.zeros(n, dtype=torch.long), "position": 6 * g[:, :2] - 3}

    net.train()
    for _ in range(200):
        x, g, labels = batch(32)
        loss = attribute_loss(net(x, g), labels)["total"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    x, g, labels = batch(256)
    with torch.no_grad():
        err = (net(x, g)["position"] - labels["position"]).pow(2).mean().sqrt()
        blind = (net(x)["position"] - labels["position"]).pow(2).mean().sqrt()
    spread = labels["position"].std(0).mean()
    assert err < 0.25 * spread and blind > spread


def test_lite0_trunk_outputs_and_learns():
    """The EfficientNet-Lite0 trunk from scratch (trainable BatchNorm; the ImageNet weights' own
    tests are in test_backbones) gives every output and lowers the loss on a repeated batch."""
    torch.manual_seed(0)
    net = AttributeHead(NUM, 18, 64, "lite0_scratch", pool="mean")
    assert net.trunk.out_features == 112 + 320
    x, labels = _batch(size=48)
    first, last = _fit(net, x, labels, steps=15)
    assert last < 0.7 * first
    net.eval()
    with torch.no_grad():
        out = net(x)
    assert all(out[a].shape == (8, k) for a, k in NUM.items())
    with pytest.raises(ValueError, match="unknown attribute-head backbone 'vgg'"):
        AttributeHead(NUM, 18, 64, "vgg", pool="mean")


def test_pretrained_lite0_trunk_takes_the_mask_channel(require_backbone_weights):
    net = AttributeHead(NUM, 18, 64, "lite0", pool="mean").eval()
    from torchvision.ops import FrozenBatchNorm2d

    assert net.trunk.body._conv_stem.weight.shape[1] == 4
    assert all(isinstance(m, FrozenBatchNorm2d) for m in net.trunk.modules() if "BatchNorm" in type(m).__name__)
    x, _ = _batch(size=64)
    with torch.no_grad():
        out = net(x)
    assert out["shape"].shape == (8, 21)


def test_mask_pooling_sees_what_lies_under_the_mask():
    """``pool="mean+mask"`` adds the maps pooled under the mask channel: moving the mask over a
    fixed image changes those features and leaves the crop-wide ones alone (the stem's mask weights
    set to zero, so the mask reaches the features only through the pooling)."""
    torch.manual_seed(0)
    net = AttributeHead(NUM, 18, 64, "lite0_scratch", pool="mean+mask").eval()
    assert net.trunk.out_features == 2 * (112 + 320)
    with torch.no_grad():
        net.trunk.body._conv_stem.weight[:, 3:] = 0
    x = torch.rand((2, 4, 64, 64), generator=torch.Generator().manual_seed(1))
    x[:, 3] = 0
    x[0, 3, :16, :16] = 1  # top-left corner
    x[1, 3, 48:, 48:] = 1  # bottom-right corner
    x[1, :3] = x[0, :3]
    with torch.no_grad():
        f = net.trunk(x)
    wide, under = f[:, :432], f[:, 432:]
    torch.testing.assert_close(wide[0], wide[1])
    assert (under[0] - under[1]).norm() > 0.1 * under[0].norm()
    with pytest.raises(ValueError, match="unknown attribute-head pool 'max'"):
        AttributeHead(NUM, 18, 64, "lite0_scratch", pool="max")


def test_channels_last_trunk_matches_the_contiguous_computation():
    """The trunk computes in channels-last memory format (for speed); the numbers are those of the
    same network on a contiguous input, forward and backward."""
    from parsers.backbones import EfficientNetLite0

    torch.manual_seed(0)
    net = AttributeHead(NUM, 18, 64, "lite0_scratch", pool="mean").eval()
    x = torch.rand((3, 4, 48, 48), generator=torch.Generator().manual_seed(2))
    body = net.trunk.body
    ref = EfficientNetLite0.forward(body, x.contiguous())
    got = body(x.contiguous(memory_format=torch.channels_last))
    for k in ref:
        torch.testing.assert_close(got[k], ref[k], rtol=1e-4, atol=1e-5)
    out = net.trunk(x)
    torch.testing.assert_close(out, torch.cat([ref["1"].mean((2, 3)), ref["2"].mean((2, 3))], 1), rtol=1e-4, atol=1e-5)


def test_the_head_reads_the_trunk_maps_it_is_given():
    """``strides``: the finer stride-8 map joins the pooled feature (40 more channels per pool)."""
    torch.manual_seed(0)
    three = AttributeHead(NUM, 18, 64, "lite0_scratch", pool="mean+mask", strides=(8, 16, 32)).eval()
    assert three.trunk.out_features == 2 * (40 + 112 + 320)
    with torch.no_grad():
        out = three(torch.rand((2, 4, 64, 64)))
    assert out["material"].shape == (2, 2)
    cfg = SceneParserConfig.from_profile("d", "mini", head_strides=(8, 16, 32))
    assert AttributeHead.from_config(cfg, NUM, pretrained=False).trunk.out_features == 2 * (40 + 112 + 320)
    with pytest.raises(ValueError, match="strides must be distinct values of"):
        AttributeHead(NUM, 18, 64, "lite0_scratch", pool="mean", strides=(4, 16))
    with pytest.raises(ValueError, match="head_strides must be distinct"):
        SceneParserConfig.from_profile("d", "mini", head_strides=(16, 16))


def test_shifted_crops_move_the_mask_with_the_pixels_and_keep_their_colours():
    from parsers.scene.crops import shift_crops

    x = torch.zeros((3, 4, 32, 32))
    x[:, :3, 12:20, 12:20] = torch.tensor([0.9, 0.2, 0.1]).view(1, 3, 1, 1)  # a red square, its mask
    x[:, 3, 12:20, 12:20] = 1.0
    a = shift_crops(x, torch.Generator().manual_seed(3))
    b = shift_crops(x, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and not torch.equal(a, x)  # seeded, and it moves
    inside = a[:, 3] > 0.99  # where the warped mask is whole, the colour is the square's, untouched
    assert inside.any()
    for c, v in enumerate((0.9, 0.2, 0.1)):
        torch.testing.assert_close(a[:, c][inside], torch.full_like(a[:, c][inside], v), atol=1e-4, rtol=0)
    same = shift_crops(x, torch.Generator().manual_seed(3), max_shift=0.0, scale=(1.0, 1.0))
    torch.testing.assert_close(same, x, atol=1e-5, rtol=0)
