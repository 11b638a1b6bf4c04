"""The Mask R-CNN builder: real image size kept, trains on a repeated batch, valid empty output."""
from __future__ import annotations

import pytest
import torch

from nsvqa.training.scene_config import SceneParserConfig
from parsers.scene.detector import build_detector, detector_args

TINY = detector_args(SceneParserConfig.from_profile("d", "tiny"))  # the tiny profile's network


def _sample(h=48, w=64):
    img = torch.full((3, h, w), 0.5)
    img[:, 10:30, 8:30] = torch.tensor([0.8, 0.1, 0.1])[:, None, None]
    img[:, 20:40, 38:60] = torch.tensor([0.1, 0.2, 0.9])[:, None, None]
    masks = torch.zeros((2, h, w), dtype=torch.uint8)
    masks[0, 10:30, 8:30] = 1
    masks[1, 20:40, 38:60] = 1
    target = {"boxes": torch.tensor([[8.0, 10.0, 30.0, 30.0], [38.0, 20.0, 60.0, 40.0]]),
              "labels": torch.tensor([1, 2]), "masks": masks}
    return img, target


def test_keeps_the_image_size_and_learns():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = build_detector(num_classes=3, height=48, width=64, **TINY)
    assert (model.transform.min_size, model.transform.max_size) == ((48,), 64)
    img, target = _sample()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    losses = []
    for _ in range(6):
        ld = model([img], [target])
        loss = sum(ld.values())
        assert torch.isfinite(loss), {k: float(v.detach()) for k, v in ld.items()}
        losses.append(float(loss.detach()))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert set(ld) == {"loss_classifier", "loss_box_reg", "loss_mask", "loss_objectness", "loss_rpn_box_reg"}
    assert losses[-1] < losses[0]


def test_eval_output_is_valid_even_with_no_detection():
    torch.manual_seed(0)
    model = build_detector(num_classes=3, height=48, width=64, **TINY, score_thresh=1.1).eval()
    with torch.no_grad():
        (out,) = model([torch.rand(3, 48, 64)])
    assert out["boxes"].shape == (0, 4) and out["masks"].shape[1:] == (1, 48, 64)
    assert out["scores"].numel() == out["labels"].numel() == 0


def test_bad_network_arguments():
    with pytest.raises(ValueError, match=r"unknown detector backbone 'vgg'; valid: \['mobilenet_v3', 'resnet50', 'lite0', 'lite0_scratch'\]"):
        build_detector(3, 48, 64, backbone="vgg", anchor_sizes=(8,))
    with pytest.raises(ValueError, match="anchor_sizes: at least one anchor size is needed"):
        build_detector(3, 48, 64, backbone="mobilenet_v3", anchor_sizes=())


def test_network_arguments_reach_the_model():
    model = build_detector(3, 48, 64, **(TINY | {"anchor_sizes": (4, 8), "rpn_post_nms_test": 50, "rois_per_image": 32}))
    assert model.rpn.anchor_generator.sizes == ((4, 8),) * 3 and model.eval().rpn.post_nms_top_n() == 50
    assert model.roi_heads.fg_bg_sampler.batch_size_per_image == 32


def test_head_sizes_reach_the_model_and_keep_the_tiny_detector_small():
    model = build_detector(3, 48, 64, **TINY)
    assert model.roi_heads.box_head.fc7.out_features == TINY["box_head_size"] == 128
    assert model.roi_heads.mask_head[0][0].out_channels == TINY["mask_head_channels"] == 64
    assert model.roi_heads.mask_predictor.mask_fcn_logits.out_channels == 3
    # what a tiny run writes: float32 weights under 30 MB (torchvision's heads made it 86 MB)
    assert sum(p.numel() for p in model.state_dict().values()) * 4 < 30e6
    # the other profiles keep torchvision's heads, built as torchvision builds them
    for name in ("mini", "full"):
        cfg = SceneParserConfig.from_profile("d", name)
        assert (cfg.det_box_head_size, cfg.det_mask_head_channels) == (1024, 256)
    full = build_detector(22, 48, 64, **(TINY | {"box_head_size": 1024, "mask_head_channels": 256}))
    assert full.roi_heads.box_head.fc6.in_features == 256 * 7 * 7 and full.roi_heads.box_head.fc7.out_features == 1024
    with pytest.raises(ValueError, match=r"resnet50: box_head_size 128, mask_head_channels 64 and mask_roi 14; this "
                                         r"backbone takes torchvision's heads \(1024, 256, 14\)"):
        build_detector(3, 48, 64, **(TINY | {"backbone": "resnet50"}))


def test_a_finer_mask_grid_predicts_finer_masks_that_train():
    """mask_roi 28: the mask head reads a 28 x 28 grid and predicts 56 x 56 masks (the targets
    follow the logits' size), with the same weights' shapes as at 14."""
    torch.manual_seed(0)
    fine = build_detector(3, 48, 64, **(TINY | {"mask_roi": 28}))
    assert fine.roi_heads.mask_roi_pool.output_size == (28, 28)
    coarse = build_detector(3, 48, 64, **TINY)
    assert {k: v.shape for k, v in fine.state_dict().items()} == {k: v.shape for k, v in coarse.state_dict().items()}
    fine.train()
    mask = torch.zeros((1, 48, 64), dtype=torch.uint8)
    mask[0, 10:30, 20:40] = 1
    target = [{"boxes": torch.tensor([[20.0, 10.0, 40.0, 30.0]]), "labels": torch.tensor([1]), "masks": mask}]
    losses = fine([torch.rand(3, 48, 64)], target)
    assert torch.isfinite(losses["loss_mask"])
    fine.eval()
    with torch.no_grad():
        feats = fine.backbone(fine.transform([torch.rand(3, 48, 64)])[0].tensors)
        grid = fine.roi_heads.mask_roi_pool(feats, [torch.tensor([[20.0, 10.0, 40.0, 30.0]])], [(48, 64)])
        assert fine.roi_heads.mask_predictor(fine.roi_heads.mask_head(grid)).shape[-2:] == (56, 56)
    with pytest.raises(ValueError, match="mask_roi must be >= 1"):
        build_detector(3, 48, 64, **(TINY | {"mask_roi": 0}))


def test_an_image_scale_resizes_inside_the_model_and_maps_detections_back():
    torch.manual_seed(0)
    big = build_detector(3, 48, 64, **(TINY | {"image_scale": 2.0})).eval()
    assert (big.transform.min_size, big.transform.max_size) == ((96,), 128)
    with torch.no_grad():
        images, _ = big.transform([torch.rand(3, 48, 64)])
        assert tuple(images.tensors.shape[-2:]) >= (96, 128)
        big.roi_heads.score_thresh = 0.0  # an untrained model: keep what it finds
        out = big([torch.rand(3, 48, 64)])[0]
    assert out["masks"].shape[-2:] == (48, 64)  # the image's own size
    if len(out["boxes"]):
        assert float(out["boxes"][:, 2].max()) <= 64 and float(out["boxes"][:, 3].max()) <= 48
    with pytest.raises(ValueError, match="image_scale must be > 0"):
        build_detector(3, 48, 64, **(TINY | {"image_scale": 0.0}))
    assert SceneParserConfig.from_profile("d", "mini", det_image_scale=2.0).det_image_scale == 2.0


def test_full_profile_is_lite0_fpn_at_the_real_size():
    model = build_detector(num_classes=22, height=480, width=640, **detector_args(SceneParserConfig.from_profile("d", "full")),
                           weights=None)
    assert type(model.backbone.body).__name__ == "EfficientNetLite0"
    assert model.rpn.anchor_generator.sizes == ((16,), (32,), (64,), (128,), (256,))
    assert (model.transform.min_size, model.transform.max_size) == ((480,), 640)
    assert model.roi_heads.box_predictor.cls_score.out_features == 22


def test_resnet50_fpn_stays_available():
    model = build_detector(num_classes=22, height=480, width=640, backbone="resnet50", anchor_sizes=(32,))
    assert type(model.backbone.body).__name__ == "IntermediateLayerGetter"


# ---------------------------------------------------------------------------- the Lite0 backbones
LITE0 = dict(backbone="lite0", anchor_sizes=(8, 16, 32, 64), trainable_layers=5, rpn_post_nms_train=50,
             rpn_post_nms_test=20, rois_per_image=16)


def test_lite0_trains_a_step_and_infers_on_a_tiny_image():
    from torchvision.ops import FrozenBatchNorm2d

    from parsers.backbones import IMAGE_MEAN, IMAGE_STD

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = build_detector(3, 48, 64, **LITE0, weights=None)  # same network, random init: no wheel read
    assert model.backbone.out_channels == 64 and model.backbone.body.normalize is False
    assert model.transform.image_mean == list(IMAGE_MEAN) and model.transform.image_std == list(IMAGE_STD)
    assert model.rpn.anchor_generator.sizes == ((8,), (16,), (32,), (64,))  # one per map, pool level last
    assert all(isinstance(m, FrozenBatchNorm2d) for m in model.backbone.body.modules() if "Norm" in type(m).__name__)
    frozen = [p for u in model.backbone.body.units()[:3] for p in u.parameters()]
    assert frozen and not any(p.requires_grad for p in frozen)
    img, target = _sample()
    model.train()
    ld = model([img], [target])
    loss = sum(ld.values())
    assert torch.isfinite(loss) and set(ld) == {"loss_classifier", "loss_box_reg", "loss_mask", "loss_objectness",
                                                "loss_rpn_box_reg"}
    loss.backward()
    torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01).step()
    with torch.no_grad():
        (out,) = model.eval()([img])
    assert out["boxes"].shape[1:] == (4,) and out["masks"].shape[1:] == (1, 48, 64)


def test_lite0_scratch_has_trainable_batchnorm_and_other_anchor_counts_go_on_every_map():
    model = build_detector(3, 48, 64, **(LITE0 | {"backbone": "lite0_scratch", "anchor_sizes": (8, 16),
                                                  "trainable_layers": 8}))
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in model.backbone.body.modules()) == 48
    assert all(p.requires_grad for p in model.backbone.parameters())
    assert model.rpn.anchor_generator.sizes == ((8, 16),) * 4


def test_lite0_with_imagenet_weights_holds_them(require_backbone_weights):
    from parsers.backbones import imagenet_state_dict

    model = build_detector(3, 48, 64, **LITE0)
    stem = imagenet_state_dict()["_conv_stem.weight"]
    assert torch.equal(model.backbone.body._conv_stem.weight, stem)


def test_lite0_with_a_stride_4_level_puts_one_anchor_size_per_map():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = build_detector(2, 48, 64, **(LITE0 | {"anchor_sizes": (4, 8, 16, 32, 64), "min_stride": 4}), weights=None)
    assert model.rpn.anchor_generator.sizes == ((4,), (8,), (16,), (32,), (64,))
    assert model.roi_heads.box_roi_pool.featmap_names == ["0", "1", "2", "3"]
    with torch.no_grad():
        feats = model.backbone(torch.rand(1, 3, 48, 64))
    assert [tuple(f.shape[-2:]) for f in feats.values()] == [(12, 16), (6, 8), (3, 4), (2, 2), (1, 1)]
    model.train()
    target = {"boxes": torch.tensor([[10.0, 10.0, 30.0, 30.0], [40.0, 5.0, 46.0, 11.0]]), "labels": torch.tensor([1, 1]),
              "masks": torch.zeros((2, 48, 64), dtype=torch.uint8)}
    target["masks"][0, 10:30, 10:30] = 1
    target["masks"][1, 5:11, 40:46] = 1
    losses = model([torch.rand(3, 48, 64)], [target])
    assert all(torch.isfinite(v) for v in losses.values())


def test_box_arithmetic_stays_float32_under_bf16_autocast():
    """Mixed precision: the convolutions run in bfloat16, but the RPN head's and the box
    predictor's outputs (what boxes are decoded from) come out float32, so no proposal's
    coordinates are rounded to bfloat16's 2-px steps near 300 px."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = build_detector(2, 48, 64, **LITE0, weights=None).train()
    seen = {}

    def conv_dtype(module, inputs, output):
        seen.setdefault("conv", output.dtype)  # returns None: the output is left as it is

    def proposals_dtype(module, args):
        seen.setdefault("proposals", args[1][0].dtype)  # roi_heads(features, proposals, ...)

    model.rpn.head.conv[0].register_forward_hook(conv_dtype)
    model.roi_heads.register_forward_pre_hook(proposals_dtype)
    target = {"boxes": torch.tensor([[10.0, 10.0, 30.0, 30.0]]), "labels": torch.tensor([1]),
              "masks": torch.zeros((1, 48, 64), dtype=torch.uint8)}
    target["masks"][0, 10:30, 10:30] = 1
    with torch.autocast("cpu", dtype=torch.bfloat16):
        losses = model([torch.rand(3, 48, 64)], [target])
    assert seen == {"conv": torch.bfloat16, "proposals": torch.float32}
    assert all(torch.isfinite(v) for v in losses.values())
