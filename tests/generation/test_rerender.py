"""Render looks (nsvqa.generation.looks) and official scenes re-rendered (nsvqa.generation.rerender)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from executors import load_ontology
from nsvqa.generation.annotations import rle_to_mask
from nsvqa.generation.looks import LOOKS, OFFICIAL_LONGEST_SIDE, get_look
from nsvqa.generation.renderer import Camera
from nsvqa.generation.rerender import colour_gaps, fit_camera, official_layout, rotation_offset


# ---------------------------------------------------------------------- looks
def test_looks_scale_vehicles_per_size_in_v1_and_per_shape_in_v2():
    v1, v2 = get_look("v1"), get_look("v2")
    assert v1.scale("suv", "large") == 2.2 and v1.scale("jet", "small") == 1.15
    assert v2.scale("suv", "large") == pytest.approx(3.5 * 0.8736)
    assert v2.scale("articulated", "small") == pytest.approx(1.8 * 0.9718)
    assert set(OFFICIAL_LONGEST_SIDE) >= set(load_ontology("superclevr").scene_values("shape"))  # + addi
    assert v1.lights().key_intensity == 0.9 and v1.lights().env_gain == 1.0  # the renderer's defaults
    assert v2.fov_y_deg == pytest.approx(37.85)
    with pytest.raises(ValueError, match=r"no render look 'v9' \(looks: v1, v2\)"):
        get_look("v9")
    with pytest.raises(ValueError, match="no size 'huge'"):
        v1.scale("suv", "huge")


def test_a_variant_with_a_look_records_it_and_v1_configs_do_not_name_it(tmp_path, monkeypatch):
    import shutil

    from nsvqa.generation.dataset import job_for
    from nsvqa.generation.variants import VariantError, load_variant, primary_factor, variant_dir

    assert "look" not in job_for(tmp_path, "mid", "test", 2, 0).config()["params"]  # as before looks existed
    assert load_variant("mid").scene_params("test", load_ontology("superclevr")).look == "v1"
    assert job_for(tmp_path, "mid-v2", "test", 2, 0).config()["params"]["look"] == "v2"
    assert primary_factor("mid-v2") == "" and not load_variant("mid-v2").same_scenes(load_variant("mid"))
    vdir = tmp_path / "variants"
    shutil.copytree(variant_dir(), vdir)
    spec = json.loads((vdir / "mid-v2.json").read_text())
    spec.update(name="mid-v9", scene={"complexity": "mid", "look": "v9"})
    (vdir / "mid-v9.json").write_text(json.dumps(spec))
    monkeypatch.setenv("NSVQA_VARIANT_DIR", str(vdir))
    with pytest.raises(VariantError, match=r"mid-v9\.json.*no render look 'v9'"):
        job_for(tmp_path, "mid-v9", "test", 2, 0)


def test_a_v2_split_has_clevrs_camera_and_larger_vehicles_than_v1(tmp_path, require_renderer):
    from nsvqa.generation.dataset import generate_split, job_for
    from nsvqa.generation.scenes import model_extents

    generate_split(job_for(tmp_path, "mid-v2", "test", 2, 5, 64, 48, questions="object"), progress=False)
    scenes = json.loads((tmp_path / "mid-v2" / "scenes" / "test_scenes.json").read_text())["scenes"]
    assert all(s["camera"]["fov_y_deg"] == pytest.approx(37.85) for s in scenes)
    manifest = json.loads((tmp_path / "mid-v2" / "manifest.json").read_text())
    assert manifest["splits"]["test"]["config"]["params"]["look"] == "v2"
    # each vehicle at v2's length for its shape and size: its centre at half the height that gives
    v2 = get_look("v2")
    for s in scenes:
        for o in s["objects"]:
            half = model_extents(o["shape"])[2] * v2.scale(o["shape"], o["size"]) / 2
            assert o["3d_coords"][2] == pytest.approx(half, abs=1e-5)
            assert half > model_extents(o["shape"])[2] * get_look("v1").scale(o["shape"], o["size"]) / 2


# ---------------------------------------------------------------------- camera fit
def test_fit_camera_recovers_a_known_camera_and_needs_three_points():
    cam = Camera(eye=(7.2, -6.6, 5.5), target=(0.1, -0.1, 0.0), fov_y_deg=37.85)
    pts = np.array([[1.0, 0.5, 0.4], [-2.0, 1.0, 0.3], [0.5, -2.5, 0.6], [2.5, 2.0, 0.2], [-1.0, -1.0, 0.5]])
    pix = cam.project(pts, 640, 480)
    fit = fit_camera(pts, pix, 640, 480)
    assert np.allclose(fit.camera.eye, cam.eye, atol=1e-3)
    assert np.allclose(fit.camera.target[:2], cam.target[:2], atol=1e-3)
    assert fit.camera.fov_y_deg == pytest.approx(37.85, abs=1e-3)
    assert fit.rms_px < 1e-3
    with pytest.raises(ValueError, match="3 or more points"):
        fit_camera(pts[:2], pix[:2], 640, 480)


def test_our_own_scene_read_as_an_official_one_is_drawn_where_it_was(tiny_root, require_renderer):
    """A scene of ours, written as the release writes one (pixel_coords with the resolution, the
    rotation in the official models' convention), comes back from the fitted camera onto the same
    pixels: each object's re-rendered mask overlaps its original mask."""
    from nsvqa.generation.renderer import Renderer
    from nsvqa.generation.rerender import rerender_scene

    onto = load_ontology("superclevr")
    scene = json.loads((tiny_root / "mid" / "scenes" / "test_scenes.json").read_text())["scenes"][0]
    official = {"objects": [], "image_index": 0}
    for o in scene["objects"]:
        official["objects"].append({
            **{k: o[k] for k in ("shape", "color", "material", "size", "3d_coords", "parts")},
            "rotation": o["rotation"] - rotation_offset(o["shape"], onto),
            "pixel_coords": [list(o["pixel_coords"]), [64, 48]]})
    if len(official["objects"]) < 3:
        pytest.skip("the fixture's first scene has fewer than 3 objects")
    layout, fit = official_layout(official, onto)
    assert fit.rms_px < 0.05
    assert fit.camera.fov_y_deg == pytest.approx(scene["camera"]["fov_y_deg"], abs=0.05)
    renderer = Renderer(64, 48)
    try:
        image = np.zeros((48, 64, 3), np.uint8)
        r = rerender_scene(renderer, onto, official, image)
    finally:
        renderer.release()
    for i, o in enumerate(scene["objects"]):
        original = rle_to_mask(o["mask"]).astype(bool)
        again = r.object_ids == i
        iou = (original & again).sum() / max((original | again).sum(), 1)
        assert iou > 0.9, (i, o["shape"], iou)
    assert r.ground["theirs_rgb"] == [0.0, 0.0, 0.0]
    gaps = colour_gaps(r.objects, [r.ground])
    assert gaps["ground"]["objects"] == 1 and gaps["ground"]["theirs_brightness"] == 0.0


def test_official_layout_names_the_scene_object_and_field():
    onto = load_ontology("superclevr")
    bad = {"objects": [{"shape": "suv", "color": "red", "material": "metal", "size": "huge",
                        "3d_coords": [0, 0, 0], "pixel_coords": [[1, 2, 3], [640, 480]]}]}
    with pytest.raises(ValueError, match=r"scene 7, object 0, field 'size': 'huge'"):
        official_layout(bad, onto, "scene 7")
    bad["objects"][0].update(size="large", pixel_coords="here")
    with pytest.raises(ValueError, match=r"scene 7, object 0, field 'pixel_coords'"):
        official_layout(bad, onto, "scene 7")


def test_the_sample_scenes_fit_clevrs_camera(reference_fixtures):
    """The measurement behind look v2: every official sample scene's fitted camera has CLEVR's
    vertical field of view (35 mm lens, 32 mm sensor at 4:3: 37.85 degrees)."""
    onto = load_ontology("superclevr")
    scenes = json.loads((reference_fixtures / "superclevr" / "superCLEVR_scenes.json").read_text())["scenes"]
    for s in scenes:
        _, fit = official_layout(s, onto, f"scene {s['image_index']}", look="v2")
        assert fit.camera.fov_y_deg == pytest.approx(37.85, abs=0.5)
        assert fit.rms_px < 10 and (fit.width, fit.height) == (640, 480)
    assert LOOKS["v2"].fov_y_deg == pytest.approx(37.85)


def test_v2_places_ten_large_vehicles_where_whole_footprints_would_not_fit():
    import dataclasses

    from nsvqa.generation import looks
    from nsvqa.generation.sampler import SceneParams, sample_layout
    from nsvqa.generation.scenes import model_extents

    onto = load_ontology("superclevr")
    extents = {s: model_extents(s)[:2] for s in onto.scene_values("shape")}
    for k in range(10):  # v2: every ten-object layout is placed
        layout = sample_layout(np.random.default_rng(k), onto, SceneParams(min_objects=10, max_objects=10, look="v2"),
                               extents)
        assert len(layout.objects) == 10 and layout.look == "v2"
    whole = dataclasses.replace(looks.LOOKS["v2"], name="whole", footprint_scale=1.0)
    fails = 0
    try:
        looks.LOOKS["whole"] = whole
        for k in range(30):
            try:
                sample_layout(np.random.default_rng(k), onto, SceneParams(min_objects=10, max_objects=10, look="whole"),
                              extents)
            except RuntimeError:
                fails += 1
    finally:
        del looks.LOOKS["whole"]
    assert fails > 0  # what footprint_scale 0.8 is for
