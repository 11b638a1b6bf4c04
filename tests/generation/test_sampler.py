"""Scene sampling without rendering: concept weights, layouts, parts, textures, streams."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from executors import load_ontology
from nsvqa.generation import sampler
from nsvqa.generation.sampler import (ConceptWeights, PlacedObject, SceneParams, choose_parts,
                                      choose_textures, distribution_weights, far_apart, footprint,
                                      power_weights, rectangles_overlap, sample_attributes, sample_layout, streams)


@pytest.fixture(scope="module")
def onto():
    return load_ontology("superclevr")


def _extents(onto):
    return {s: (1.0, 0.45) for s in onto.scene_values("shape")}


def test_power_weights():
    np.testing.assert_allclose(power_weights(4, 1.0), [0.25] * 4)
    w = power_weights(8, 2.0)
    np.testing.assert_allclose(w[:-1] / w[1:], 2.0)
    assert w.sum() == pytest.approx(1.0)


def test_distribution_variants():
    n = 8
    long = distribution_weights(n, "long")
    np.testing.assert_allclose(long, power_weights(n, 2.0))
    np.testing.assert_allclose(distribution_weights(n, "slt"), power_weights(n, 1.3))
    np.testing.assert_allclose(distribution_weights(n, "bal"), np.full(n, 1 / n))
    np.testing.assert_allclose(distribution_weights(n, "head"), [0.25] * 4 + [0] * 4)
    np.testing.assert_allclose(distribution_weights(n, "tail"), [0] * 4 + [0.25] * 4)
    np.testing.assert_allclose(distribution_weights(n, "oppo"), long[::-1])
    assert distribution_weights(21, "head")[:11].sum() == pytest.approx(1.0)  # odd n: head gets the middle
    with pytest.raises(ValueError, match="unknown distribution 'wide'; valid"):
        distribution_weights(n, "wide")


@pytest.mark.parametrize("a", [1.0, 1.3, 2.0])
def test_sampled_frequencies_match_the_weights(onto, a):
    """Chi-square goodness of fit of 6,000 sampled objects, fixed seed."""
    w = ConceptWeights(shape=power_weights(21, a), color=power_weights(8, a),
                       material=power_weights(2, a)).validated(onto)
    objs = sample_attributes(np.random.default_rng(0), onto, w, 6000)
    assert all(o["shape"] != "addi" for o in objs)
    for attr, p in (("shape", w.shape), ("color", w.color), ("material", w.material)):
        vals = onto.scene_values(attr)  # shapes: the 21 placed ones, never addi
        counts = np.array([sum(o[attr] == v for o in objs) for v in vals])
        assert stats.chisquare(counts, p * counts.sum()).pvalue > 0.001, attr
    sizes = np.array([sum(o["size"] == v for o in objs) for v in onto.values("size")])
    assert stats.chisquare(sizes).pvalue > 0.001  # size stays uniform


def test_shape_color_matrix_conditions_colors(onto):
    """co-2 style: cars only red/blue, everything else only green."""
    shapes, colors = onto.scene_values("shape"), onto.values("color")
    m = np.zeros((21, 8))
    for k, s in enumerate(shapes):
        if s in onto.categories["car"]:
            m[k, [colors.index("red"), colors.index("blue")]] = [3, 1]
        else:
            m[k, colors.index("green")] = 1
    w = ConceptWeights(shape_color=m).validated(onto)
    objs = sample_attributes(np.random.default_rng(1), onto, w, 3000)
    cars = [o for o in objs if o["shape"] in onto.categories["car"]]
    assert {o["color"] for o in cars} == {"red", "blue"}
    assert {o["color"] for o in objs if o not in cars} == {"green"}
    red = sum(o["color"] == "red" for o in cars)
    assert stats.binomtest(red, len(cars), 0.75).pvalue > 0.001


@pytest.mark.parametrize("bad", [dict(shape=np.ones(20)), dict(color=-np.ones(8)), dict(material=[0, 0]),
                                 dict(shape_color=np.ones((21, 7)))])
def test_bad_weights_are_rejected(onto, bad):
    with pytest.raises(ValueError, match="concept weights"):
        ConceptWeights(**bad).validated(onto)


def test_rectangles_overlap():
    a = footprint(np.zeros(2), np.array([1.0, 0.5]), 0.0)
    assert rectangles_overlap(a, footprint(np.array([1.5, 0.0]), np.array([1.0, 0.5]), 0.0))
    assert not rectangles_overlap(a, footprint(np.array([2.5, 0.0]), np.array([1.0, 0.5]), 0.0))
    # rotated 45 degrees: the corner of b reaches into a only when close enough
    b = footprint(np.array([1.9, 1.0]), np.array([0.5, 0.5]), math.pi / 4)
    assert not rectangles_overlap(a, b)
    assert rectangles_overlap(a, footprint(np.array([1.5, 0.6]), np.array([0.5, 0.5]), math.pi / 4))
    assert rectangles_overlap(a, footprint(np.array([2.05, 0.0]), np.array([1.0, 0.5]), 0.0), gap=0.1)


def test_far_apart_never_skips_a_pair_the_full_test_would_reject():
    """The placement's shortcut: rectangles it calls far apart never overlap (gap included), on
    random pairs around its threshold; it skips a good share of them; and it is not the plain
    circle test, which would pass two squares corner to corner closer than the gap."""
    rng = np.random.default_rng(0)
    skipped = 0
    for _ in range(3000):
        ha, hb = rng.uniform(0.1, 1.0, 2), rng.uniform(0.1, 1.0, 2)
        gap = float(rng.uniform(0.0, 0.3))
        ra, rb = math.hypot(*ha), math.hypot(*hb)
        d = math.sqrt(2.0) * (ra + rb + gap) * rng.uniform(0.6, 1.2)
        phi = rng.uniform(0, 2 * math.pi)
        ca, cb = np.zeros(2), np.array([d * math.cos(phi), d * math.sin(phi)])
        a, b = footprint(ca, ha, rng.uniform(0, 2 * math.pi)), footprint(cb, hb, rng.uniform(0, 2 * math.pi))
        if far_apart((0.0, 0.0), ra, (float(cb[0]), float(cb[1])), rb, gap):
            skipped += 1
            assert not rectangles_overlap(a, b, gap)
    assert 500 < skipped < 2500
    sq = np.array([1.0, 1.0])
    a, b = footprint(np.zeros(2), sq, 0.0), footprint(np.array([2.1, 2.1]), sq, 0.0)
    assert math.hypot(2.1, 2.1) > 2 * math.hypot(1.0, 1.0) + 0.12  # the circles are further apart than the gap
    assert rectangles_overlap(a, b, 0.12) and not far_apart((0.0, 0.0), math.sqrt(2), (2.1, 2.1), math.sqrt(2), 0.12)


def _overlap_reference(a, b, gap):
    """The separating-axis test written out plainly: every edge normal of both, projections each time."""
    for poly in (a, b):
        for k in range(4):
            edge = poly[(k + 1) % 4] - poly[k]
            axis = np.array([-edge[1], edge[0]])
            axis /= np.linalg.norm(axis)
            pa, pb = a @ axis, b @ axis
            if pa.max() + gap <= pb.min() or pb.max() + gap <= pa.min():
                return False
    return True


def test_kept_footprints_answer_as_the_plain_separating_axis_test():
    """The placement keeps each footprint's edge normals and spans (sampler._Footprint): the same
    answers as the plain test on random pairs near touching, a kept footprint reused against many,
    and pairs exactly ``gap`` apart along an axis (the boundary case of ``<=``)."""
    rng = np.random.default_rng(1)
    kept = [sampler._Footprint(footprint(rng.uniform(-2, 2, 2), rng.uniform(0.1, 1.0, 2), rng.uniform(0, 7)))
            for _ in range(40)]
    answers = set()
    for _ in range(2000):
        k = kept[int(rng.integers(len(kept)))]
        b = footprint(k.corners.mean(0) + rng.normal(0, 1.2, 2), rng.uniform(0.1, 1.0, 2), rng.uniform(0, 7))
        gap = float(rng.choice([0.0, 0.05, 0.15]))
        want = _overlap_reference(k.corners, b, gap)
        assert sampler._Footprint(b).overlaps(k, gap) == k.overlaps(sampler._Footprint(b), gap) == want
        assert rectangles_overlap(k.corners, b, gap) == want
        answers.add(want)
    assert answers == {True, False}
    for gap in (0.0, 0.25, 0.5):  # edge to edge exactly gap apart: separated (<=), as before
        a = footprint(np.zeros(2), np.array([1.0, 0.5]), 0.0)
        b = footprint(np.array([2.0 + gap, 0.0]), np.array([1.0, 0.5]), 0.0)
        assert rectangles_overlap(a, b, gap) == _overlap_reference(a, b, gap)


def test_layouts_do_not_overlap_and_stay_in_the_area(onto):
    params = SceneParams(min_objects=10, max_objects=10)
    ext = _extents(onto)
    for seed in range(20):
        lay = sample_layout(np.random.default_rng(seed), onto, params, ext)
        assert len(lay.objects) == 10
        rects = [footprint(np.array(o.position), np.array(ext[o.shape]) * o.scale / 2, math.radians(o.rotation))
                 for o in lay.objects]
        for i in range(10):
            assert np.all(np.abs(lay.objects[i].position) <= params.area)
            for j in range(i):
                assert not rectangles_overlap(rects[i], rects[j], params.min_gap - 1e-9)


def test_streams_are_independent_and_reproducible(onto):
    a, b = streams(7, 3), streams(7, 3)
    assert a["layout"].random() == b["layout"].random()
    assert streams(7, 3)["layout"].random() != streams(7, 4)["layout"].random()
    # drawing from the parts stream does not move the layout stream
    s = streams(7, 3)
    s["parts"].random(100)
    assert s["layout"].random() == streams(7, 3)["layout"].random()


def test_parts_differ_from_the_object_and_textures(onto):
    rng = np.random.default_rng(0)
    w = ConceptWeights().validated(onto)
    seen = set()
    for _ in range(200):
        o = PlacedObject("sedan", "red", "metal", "large", 1.6, 0.0, (0.0, 0.0))
        visible = list(onto.parts_of("sedan")[:5])
        o.parts = choose_parts(rng, onto, o, visible, 3, w)
        assert len(o.parts) <= 3 and set(o.parts) <= set(visible)
        assert all(p["color"] != "red" for p in o.parts.values())
        seen.add(len(o.parts))
        choose_textures(rng, onto, o)
        assert o.texture in onto.values("texture")
        assert all(p["texture"] in onto.values("texture") for p in o.parts.values())
    assert seen == {0, 1, 2, 3}
    assert choose_parts(rng, onto, PlacedObject("sedan", "red", "metal", "large", 1, 0, (0, 0)), [], 3, w) == {}


def test_a_layout_whose_objects_do_not_fit_is_drawn_again_not_fatal(onto, require_renderer):
    """Train image 755 of the study's `long` variant draws ten large objects, long aeroplanes among
    them, that find no place on the ground: that try is rejected and the next one draws a new layout
    (this stopped the study's `long` data once)."""
    import hashlib

    from nsvqa.generation.renderer import Renderer
    from nsvqa.generation.sampler import PlacementError
    from nsvqa.generation.scenes import generate_image, model_extents
    from nsvqa.generation.variants import load_variant

    params = load_variant("long").scene_params("train", onto)
    seed = int.from_bytes(hashlib.sha256(b"0:train").digest()[:8], "little")  # the study's train split
    extents = {s: model_extents(s)[:2] for s in onto.scene_values("shape")}
    with pytest.raises(PlacementError, match="could not place 10 objects"):
        sample_layout(streams(seed, 755)["layout"], onto, params, extents)
    with Renderer(64, 48, samples=0, shadow_size=256) as r:
        got = generate_image(r, onto, params, seed, 755, "train", "x.png")
        objects = got.scene["objects"]
        assert 3 <= len(objects) <= 10 and got.rgb.shape == (48, 64, 3)
        assert set(np.unique(got.object_ids)) - {-1} == set(range(len(objects)))  # every object drawn
        # a layout that never fits is an error that names the image
        tight = dataclasses.replace(params, min_objects=10, max_objects=10, area=0.5, max_retries=3)
        with pytest.raises(RuntimeError, match=r"image 755: no layout with every object placed and visible"):
            generate_image(r, onto, tight, seed, 755, "train", "x.png")
