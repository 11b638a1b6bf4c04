"""Tests of the headless OpenGL renderer (tiny images; skipped when no EGL context can be made)."""
from __future__ import annotations

import colorsys

import numpy as np
import pytest

from nsvqa.generation.meshes import Mesh
from nsvqa.generation.renderer import (TEXTURES, Camera, DrawItem, Lights, Renderer,
                                       RendererUnavailable)

W, H = 64, 48
RED = (173 / 255, 35 / 255, 35 / 255)
BLUE = (42 / 255, 75 / 255, 215 / 255)
CAM = Camera(eye=(6.0, -5.0, 4.0), target=(0.0, 0.0, 0.3), fov_y_deg=40.0)
LIGHTS = Lights(key_dir=(-0.05, 0.64, 0.77), key_intensity=0.9,
                fill_dir=(0.40, -0.73, 0.55), fill_intensity=0.45, ambient=0.3)


def box_mesh(size=(1.0, 1.0, 1.0)) -> Mesh:
    """Axis-aligned flat-shaded box centred at the origin, counter-clockwise from outside."""
    size = np.asarray(size, np.float64)
    pos, nrm, uv, idx = [], [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            a, b = [(1, 2), (2, 0), (0, 1)][axis]
            if sign < 0:
                a, b = b, a
            corners = []
            for cu, cv in ((-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)):
                p = np.zeros(3)
                p[axis], p[a], p[b] = 0.5 * sign, cu, cv
                corners.append(p * size)
            n = np.zeros(3)
            n[axis] = sign
            base = len(pos)
            pos += corners
            nrm += [n] * 4
            uv += [((c[a] / size[a] + 0.5) * size[a], (c[b] / size[b] + 0.5) * size[b])
                   for c in corners]
            idx += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    return Mesh(np.array(pos, np.float32), np.array(nrm, np.float32), np.array(uv, np.float32),
                np.array(idx, np.uint32))


def translate(x=0.0, y=0.0, z=0.0) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


BOX = box_mesh()


def item(mesh=BOX, model=None, color=RED, metal=False, texture="none", oid=0, pid=0):
    return DrawItem(mesh, translate(0, 0, 0.5) if model is None else model, color, metal,
                    texture, oid, pid)


@pytest.fixture(scope="module", params=[4, 0], ids=["msaa4", "fxaa"])
def renderer(request):
    try:
        r = Renderer(W, H, samples=request.param, shadow_size=512)
    except RendererUnavailable as e:
        pytest.skip(f"no headless OpenGL: {e}")
    yield r
    r.release()


def projected_box(mesh: Mesh, model: np.ndarray, camera=CAM) -> np.ndarray:
    p = mesh.positions @ model[:3, :3].T + model[:3, 3]
    return camera.project(p, W, H)


def lum(rgb: np.ndarray) -> np.ndarray:
    return rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])


# ------------------------------------------------------------------------------ id pass


def test_mask_nonempty_and_inside_projected_bbox(renderer):
    model = translate(0.3, -0.2, 0.5)
    res = renderer.render([item(model=model)], CAM, LIGHTS)
    assert res.rgb.shape == (H, W, 3) and res.rgb.dtype == np.uint8
    assert res.object_ids.shape == (H, W) and res.object_ids.dtype == np.int16
    assert res.part_ids.shape == (H, W) and res.part_ids.dtype == np.int16
    ys, xs = np.nonzero(res.object_ids == 0)
    assert len(xs) > 50
    pr = projected_box(BOX, model)
    assert xs.min() >= np.floor(pr[:, 0].min()) and xs.max() <= np.ceil(pr[:, 0].max())
    assert ys.min() >= np.floor(pr[:, 1].min()) and ys.max() <= np.ceil(pr[:, 1].max())
    assert set(np.unique(res.object_ids)) == {-1, 0}
    assert set(np.unique(res.part_ids)) == {-1, 0}


def test_background_is_minus_one(renderer):
    res = renderer.render([], CAM, LIGHTS)
    assert (res.object_ids == -1).all() and (res.part_ids == -1).all()
    res = renderer.render([item()], CAM, LIGHTS)
    for y, x in ((0, 0), (0, W - 1), (H - 1, 0), (H - 1, W - 1)):
        assert res.object_ids[y, x] == -1 and res.part_ids[y, x] == -1


def test_occluded_object_has_fewer_pixels(renderer):
    back = item(model=translate(-1.2, 1.0, 0.5), color=BLUE, oid=1)
    front = item(model=translate(0.0, 0.0, 0.5), oid=0)
    alone = renderer.render([back], CAM, LIGHTS)
    both = renderer.render([front, back], CAM, LIGHTS)
    n_alone = int((alone.object_ids == 1).sum())
    n_both = int((both.object_ids == 1).sum())
    assert n_alone > 0 and 0 < n_both < n_alone
    # the order of the items does not matter: nearest fragment wins
    swapped = renderer.render([back, front], CAM, LIGHTS)
    assert np.array_equal(swapped.object_ids, both.object_ids)


def test_part_ids_separate_sub_meshes(renderer):
    body = item(model=translate(0, 0, 0.3) @ np.diag([1.6, 1.0, 0.6, 1.0]), oid=3, pid=0)
    roof = item(model=translate(0, 0, 0.85) @ np.diag([0.8, 0.8, 0.5, 1.0]), color=BLUE,
                oid=3, pid=2)
    res = renderer.render([body, roof], CAM, LIGHTS)
    assert set(np.unique(res.object_ids)) == {-1, 3}
    assert set(np.unique(res.part_ids)) == {-1, 0, 2}
    assert ((res.part_ids >= 0) == (res.object_ids == 3)).all()
    # the roof is above the body: its pixels are higher up in the image on average
    ys_body = np.nonzero(res.part_ids == 0)[0]
    ys_roof = np.nonzero(res.part_ids == 2)[0]
    assert ys_roof.mean() < ys_body.mean()


def test_render_is_deterministic(renderer):
    scene = [item(model=translate(0.3, 0, 0.5), metal=True, texture="checkered"),
             item(model=translate(-1.0, 1.0, 0.5), color=BLUE, oid=1, texture="dotted")]
    a = renderer.render(scene, CAM, LIGHTS)
    b = renderer.render(scene, CAM, LIGHTS)
    assert a.rgb.tobytes() == b.rgb.tobytes()
    assert a.object_ids.tobytes() == b.object_ids.tobytes()
    assert a.part_ids.tobytes() == b.part_ids.tobytes()


def test_mesh_uploaded_once(renderer):
    scene = [item(model=translate(x, 0, 0.5), oid=i) for i, x in enumerate((-1.0, 1.0))]
    renderer.render(scene, CAM, LIGHTS)
    n = len(renderer._meshes)
    renderer.render(scene, CAM, LIGHTS)
    assert len(renderer._meshes) == n and id(BOX) in renderer._meshes


def test_mirrored_model_and_open_surface(renderer):
    plain = renderer.render([item()], CAM, LIGHTS)
    mirrored = renderer.render([item(model=translate(0, 0, 0.5) @ np.diag([-1.0, 1, 1, 1]))],
                               CAM, LIGHTS)
    assert np.array_equal(plain.object_ids, mirrored.object_ids)
    assert np.abs(plain.rgb.astype(int) - mirrored.rgb).max() <= 2
    # a single quad (not closed) is seen from both sides
    quad = Mesh(np.array([[-0.6, 0, 0], [0.6, 0, 0], [0.6, 0, 1], [-0.6, 0, 1]], np.float32),
                np.tile(np.float32([0, -1, 0]), (4, 1)), np.zeros((4, 2), np.float32),
                np.array([[0, 1, 2], [0, 2, 3]], np.uint32))
    for angle in (0.0, np.pi):
        rot = np.eye(4)
        rot[:2, :2] = [[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]
        res = renderer.render([item(mesh=quad, model=translate(0, 0, 0.05) @ rot)], CAM, LIGHTS)
        assert (res.object_ids == 0).sum() > 20


def test_render_ids_matches_render(renderer):
    scene = [item(model=translate(0.3, 0, 0.5), metal=True, texture="dotted"),
             item(model=translate(-1.0, 1.0, 0.5), color=BLUE, oid=1, pid=3)]
    full = renderer.render(scene, CAM, LIGHTS)
    obj, part = renderer.render_ids(scene, CAM)
    assert np.array_equal(obj, full.object_ids) and np.array_equal(part, full.part_ids)
    again = renderer.render(scene, CAM, LIGHTS)  # the colour path is unaffected
    assert again.rgb.tobytes() == full.rgb.tobytes()


def test_unknown_texture_rejected(renderer):
    with pytest.raises(ValueError):
        renderer.render([item(texture="plaid")], CAM, LIGHTS)


# ------------------------------------------------------------------------------ shading


def test_metal_red_and_brighter_highlights_than_rubber(renderer):
    # the key light placed where the top face mirrors it toward the camera
    top = np.array([0.0, 0.0, 1.0])
    v = np.asarray(CAM.eye) - top
    v /= np.linalg.norm(v)
    key = 2 * v[2] * np.array([0, 0, 1.0]) - v
    lights = Lights(key_dir=tuple(key), key_intensity=0.9, fill_dir=LIGHTS.fill_dir,
                    fill_intensity=0.45, ambient=0.3)
    peaks = {}
    for metal in (False, True):
        res = renderer.render([item(metal=metal)], CAM, lights)
        px = res.rgb[res.object_ids == 0].astype(np.float64)
        assert len(px) > 50
        mean = px.mean(0)
        assert mean[0] > 1.3 * mean[1] and mean[0] > 1.3 * mean[2], mean  # red-dominant
        peaks[metal] = lum(px).max()
    assert peaks[True] > peaks[False] + 20, peaks


@pytest.mark.parametrize("texture", [t for t in TEXTURES if t != "none"])
def test_textures_change_pixels_but_keep_hue(renderer, texture):
    model = translate(0, 0, 0.5) @ np.diag([1.5, 1.5, 1.0, 1.0])
    for color in (RED, BLUE):
        plain = renderer.render([item(model=model, color=color)], CAM, LIGHTS)
        tex = renderer.render([item(model=model, color=color, texture=texture)], CAM, LIGHTS)
        assert np.array_equal(plain.object_ids, tex.object_ids)
        m = plain.object_ids == 0
        diff = np.abs(plain.rgb[m].astype(int) - tex.rgb[m]).sum(-1)
        assert (diff > 30).mean() > 0.1, texture  # visibly patterned
        h_plain = colorsys.rgb_to_hsv(*(plain.rgb[m].mean(0) / 255))[0]
        h_tex = colorsys.rgb_to_hsv(*(tex.rgb[m].mean(0) / 255))[0]
        dh = min(abs(h_plain - h_tex), 1 - abs(h_plain - h_tex))
        assert dh < 0.03, (texture, h_plain, h_tex)


def test_shadow_darkens_ground_away_from_key_light(renderer):
    key = np.asarray(LIGHTS.key_dir, np.float64)
    away = -key[:2] / np.linalg.norm(key[:2])  # horizontal direction the shadow falls toward
    obj = item(model=translate(0, 0, 0.5))
    with_obj = renderer.render([obj], CAM, LIGHTS)
    ground_only = renderer.render([], CAM, LIGHTS)
    # ground points just beyond the box on the shadow side, and beside it (lit)
    side = np.array([-away[1], away[0]])
    pts = np.array([[*(away * 0.9), 0.0], [*(side * 1.3), 0.0]])
    (xs, ys, _), (xl, yl, _) = CAM.project(pts, W, H)
    ys_, xs_ = int(ys), int(xs)
    yl_, xl_ = int(yl), int(xl)
    assert with_obj.object_ids[ys_, xs_] == -1 and with_obj.object_ids[yl_, xl_] == -1
    shadow = lum(with_obj.rgb[ys_, xs_])
    lit = lum(with_obj.rgb[yl_, xl_])
    assert shadow < lum(ground_only.rgb[ys_, xs_]) - 15
    assert shadow < lit - 15
    assert abs(lit - lum(ground_only.rgb[yl_, xl_])) < 6


# ------------------------------------------------------------------------------ camera


def test_project_agrees_with_mask_centroid(renderer):
    for x, y in ((0.0, 0.0), (1.2, -0.8), (-1.5, 1.0)):
        model = translate(x, y, 0.5) @ np.diag([0.6, 0.6, 0.6, 1.0])
        res = renderer.render([item(model=model)], CAM, LIGHTS)
        ys, xs = np.nonzero(res.object_ids == 0)
        centre = CAM.project(np.array([[x, y, 0.5]]), W, H)[0]
        # pixel (i, j) covers [i, i+1) x [j, j+1): its centre is at (i + 0.5, j + 0.5)
        assert abs(xs.mean() + 0.5 - centre[0]) < 1.5 and abs(ys.mean() + 0.5 - centre[1]) < 1.5


def test_project_conventions():
    p = CAM.project(np.array([CAM.target]), W, H)[0]
    assert p[0] == pytest.approx(W / 2) and p[1] == pytest.approx(H / 2)
    assert p[2] == pytest.approx(np.linalg.norm(np.subtract(CAM.target, CAM.eye)))
    up = CAM.project(np.array([np.add(CAM.target, (0, 0, 0.5))]), W, H)[0]
    assert up[1] < p[1]  # y grows downward
    v = CAM.view_matrix()
    assert v @ np.array([*CAM.eye, 1.0]) == pytest.approx([0, 0, 0, 1])
    proj = CAM.projection_matrix(W / H)
    clip = proj @ v @ np.array([*CAM.target, 1.0])
    assert clip[:2] / clip[3] == pytest.approx([0, 0], abs=1e-9)


def test_ground_directions():
    d = CAM.ground_directions()
    assert set(d) == {"left", "right", "front", "behind", "above", "below"}
    right, behind = np.array(d["right"]), np.array(d["behind"])
    for k in ("left", "right", "front", "behind"):
        assert np.linalg.norm(d[k]) == pytest.approx(1.0) and d[k][2] == 0.0
    assert right @ behind == pytest.approx(0.0, abs=1e-12)
    assert np.array(d["left"]) == pytest.approx(-right)
    assert np.array(d["front"]) == pytest.approx(-behind)
    assert d["above"] == [0.0, 0.0, 1.0] and d["below"] == [0.0, 0.0, -1.0]
    # right moves right in the image, behind moves away (up the image, deeper)
    t = np.asarray(CAM.target) * [1, 1, 0]
    p0, pr, pb = CAM.project(np.array([t, t + right, t + behind]), W, H)
    assert pr[0] > p0[0] and pb[1] < p0[1] and pb[2] > p0[2]
    # CLEVR convention: behind is right rotated by +90 degrees about z
    assert behind == pytest.approx([-right[1], right[0], 0.0])


# ------------------------------------------------------------------------------ errors


def test_unavailable_names_apt_packages(monkeypatch):
    import moderngl

    def boom(*args, **kwargs):
        raise Exception("eglGetDisplay failed")

    monkeypatch.setattr(moderngl, "create_standalone_context", boom)
    with pytest.raises(RendererUnavailable) as err:
        Renderer(8, 8)
    assert "libegl1" in str(err.value) and "libgl1-mesa-dri" in str(err.value)


def test_ids_identical_with_and_without_msaa():
    try:
        msaa, fast = Renderer(W, H, samples=4), Renderer(W, H, samples=0)
    except RendererUnavailable as e:
        pytest.skip(f"no headless OpenGL: {e}")
    with msaa, fast:
        scene = [item(model=translate(0.3, 0, 0.5), metal=True, texture="stripped"),
                 item(model=translate(-1.0, 1.0, 0.5), color=BLUE, oid=1, pid=2)]
        a, b = msaa.render(scene, CAM, LIGHTS), fast.render(scene, CAM, LIGHTS)
        assert np.array_equal(a.object_ids, b.object_ids)
        assert np.array_equal(a.part_ids, b.part_ids)
        # same picture up to the anti-aliasing of the edges
        assert np.abs(a.rgb.astype(int) - b.rgb).mean() < 4


def test_torchvision_can_be_used_after_rendering():
    """Regression: importing torchvision after an llvmpipe EGL context existed segfaulted."""
    import subprocess
    import sys

    code = ("from nsvqa.generation.renderer import Renderer, RendererUnavailable\n"
            "try:\n    Renderer(32, 24).release()\nexcept RendererUnavailable:\n    pass\n"
            "import torch, torchvision\n"
            "print(torchvision.models.resnet18().eval()(torch.rand(1, 3, 64, 64)).shape)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "torch.Size([1, 1000])" in r.stdout
