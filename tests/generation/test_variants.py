"""The variant catalogue: every spec loads, and each variant has its defining property."""
from __future__ import annotations

import json

import numpy as np
import pytest

from executors import load_ontology
from nsvqa.generation.sampler import sample_attributes, sample_layout
from nsvqa.generation.variants import VARIANT_DIR, VariantError, Variant, list_variants, load_variant

ONTO = load_ontology("superclevr")
EXPECTED = {"easy", "mid", "hard", "rd-", "rd+", "bal", "slt", "long", "head", "tail", "oppo",
            "co-0", "co-1", "co-2", "sys-random", "sys-composition", "sys-interpolation", "sys-extrapolation", "mid-v2"}


def _attrs(name, split, n=3000, seed=0):
    p = load_variant(name).scene_params(split, ONTO)
    return sample_attributes(np.random.default_rng(seed), ONTO, p.weights.validated(ONTO), n)


def test_catalogue_loads():
    assert set(list_variants()) == EXPECTED
    for name in EXPECTED:
        v = load_variant(name)
        for split in v.available_splits:
            v.scene_params(split, ONTO)
    assert load_variant("head").available_splits == ("test",)
    assert [load_variant(n).redundancy for n in ("rd-", "mid", "rd+")] == ["rd-", "rd", "rd+"]
    assert {load_variant(n).scene["complexity"] for n in ("bal", "slt", "long", "head", "tail", "oppo")} == {"hard"}


def test_catalogue_is_what_build_variants_writes(reference_fixtures, load_script, tmp_path):
    build = load_script("build_variants")
    assert build.main(["--dist", str(reference_fixtures / "superclevr" / "dist"), "--out", str(tmp_path)]) == 0
    repo = VARIANT_DIR
    for p in tmp_path.glob("*.json"):
        assert json.loads(p.read_text()) == json.loads((repo / p.name).read_text()), p.name


def test_a_clone_rebuilds_the_catalogue_byte_for_byte(load_script, tmp_path):
    """Without the generator's npz tables (a clone has none) the tables are read back from the
    committed variants: the same bytes, the catalogue's index included."""
    build = load_script("build_variants")
    assert build.main(["--dist", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]) == 0
    repo = VARIANT_DIR
    written = sorted(p.name for p in (tmp_path / "out").glob("*.json"))
    assert written == sorted(p.name for p in repo.glob("*.json"))
    for name in written:
        assert (tmp_path / "out" / name).read_bytes() == (repo / name).read_bytes(), name


def test_factors_come_from_the_catalogue_index():
    from nsvqa.generation.variants import FACTORS, get_factor

    assert list(FACTORS) == ["visual", "redundancy", "distribution", "compositionality", "systematic"]
    assert FACTORS["redundancy"] == ("rd-", "mid", "rd+")
    # a variant's factor is the first that lists it: mid is visual's (and redundancy's rd)
    assert load_variant("mid").factor == "visual" and load_variant("co-0").factor == "compositionality"
    assert get_factor("distribution").rd == "head_tail" and get_factor("systematic").rd is None
    with pytest.raises(KeyError, match=r"unknown factor 'light'; valid: \['visual'"):
        get_factor("light")


@pytest.mark.parametrize("attr", ["shape", "color", "material"])
def test_head_and_tail_hold_only_their_concepts(attr):
    """head: the frequent half of long's concepts; tail: the rare half; oppo: long reversed."""
    long = load_variant("long").scene["weights"][attr]
    head = {k for k, w in load_variant("head").scene["weights"][attr].items() if w > 0}
    tail = {k for k, w in load_variant("tail").scene["weights"][attr].items() if w > 0}
    assert head | tail == set(long) and len(head & tail) <= 1  # an odd count shares the middle one
    assert min(long[k] for k in head) >= max(long[k] for k in set(long) - head)
    assert max(long[k] for k in tail) <= min(long[k] for k in set(long) - tail)
    assert {o[attr] for o in _attrs("head", "test")} == head
    assert {o[attr] for o in _attrs("tail", "test")} == tail
    oppo = load_variant("oppo").scene["weights"][attr]
    assert max(oppo, key=oppo.get) in {k for k in long if long[k] == min(long.values())}


def test_long_and_slight_tails():
    for name, a in (("long", 2.0), ("slt", 1.3)):
        c = load_variant(name).scene["weights"]["color"]
        w = np.sort(np.array(list(c.values())))[::-1]
        np.testing.assert_allclose(w[:-1] / w[1:], a, rtol=2e-2)


def test_co2_categories_share_colors_and_co1_shapes_differ():
    for name, same in (("co-2", True), ("co-1", False)):
        m = load_variant(name).scene_params("train", ONTO).weights.shape_color
        placed = ONTO.scene_values("shape")  # the matrix rows: no row for addi, which no scene holds
        for shapes in ONTO.categories.values():
            rows = {tuple(np.round(m[placed.index(s)], 6)) for s in shapes if s in placed}
            assert (len(rows) == 1) == same, (name, shapes)
    co2 = load_variant("co-2").scene_params("train", ONTO).weights.shape_color
    cats = {tuple(np.round(co2[placed.index(s[0])], 6)) for s in ONTO.categories.values()}
    assert len(cats) == 5  # categories differ


def test_composition_block_is_held_out_of_training():
    v = load_variant("sys-composition")
    block = {tuple(p) for p in v.ood["test_only"]["pairs"]}
    train = _attrs("sys-composition", "train", 4000)
    seen = {(ONTO.category_of(o["shape"]), o["color"]) for o in train}
    assert not seen & block
    assert {c for c, _ in seen} == set(ONTO.categories) and {k for _, k in seen} == set(ONTO.values("color"))
    test = {(ONTO.category_of(o["shape"]), o["color"]) for o in _attrs("sys-composition", "test", 500)}
    assert test == block


@pytest.mark.parametrize("name", ["sys-random", "sys-interpolation", "sys-extrapolation"])
def test_systematic_factor_splits(name):
    v = load_variant(name)
    train = {tuple(p) for p in v.splits["train"]["joint"]}
    test = {tuple(p) for p in v.splits["test"]["joint"]}
    assert train and test and not train & test
    assert {tuple(p) for p in v.ood["test_only"]["pairs"]} == test
    ext = {m: 1.0 for m in ONTO.values("shape")}
    extents = {s: (1.0, 0.4) for s in ext}
    for split, allowed in (("train", train), ("test", test)):
        p = v.scene_params(split, ONTO)
        rng = np.random.default_rng(1)
        for _ in range(20):
            lay = sample_layout(rng, ONTO, p, extents)
            assert (len(lay.objects), lay.camera_scale) in allowed
    if name == "sys-extrapolation":
        assert all(n >= 9 or s >= 1.3 for n, s in test) and all(n < 9 and s < 1.3 for n, s in train)
    if name == "sys-interpolation":
        assert v.ood["test_only"]["num_objects"] == [6, 7] and v.ood["test_only"]["camera_scale"] == [1.0]


def test_bad_specs_name_the_field(tmp_path):
    with pytest.raises(VariantError, match=r"unknown variant 'wide'; valid: \['bal'"):
        load_variant("wide")
    base = json.loads((VARIANT_DIR / "long.json").read_text())
    bad = dict(base, scene=dict(base["scene"], weights=dict(base["scene"]["weights"], color={"red": 1.0})))
    with pytest.raises(VariantError, match=r"x.json, field 'scene.weights.color': expected a weight for each"):
        Variant.from_dict(bad, "x.json").scene_params("train", ONTO)
    with pytest.raises(VariantError, match=r"field 'questions.redundancy'"):
        Variant.from_dict(dict(base, questions={"redundancy": "rd++"}), "x.json")
    with pytest.raises(VariantError, match="has no 'train' split"):
        load_variant("tail").scene_params("train", ONTO)


def test_the_catalogue_declares_its_aliases_and_their_specs_agree():
    """co-0 is mid and bal is hard: the index says so, and the specs differ in name and description only."""
    from nsvqa.generation.variants import SCENE_KEYS, aliases

    assert aliases() == {"co-0": "mid", "bal": "hard"}
    for alias, target in aliases().items():
        a, b = load_variant(alias).spec(), load_variant(target).spec()
        assert all(a.get(k) == b.get(k) for k in (*SCENE_KEYS, "questions")), (alias, target)


def test_the_built_in_data_readers_refuse_a_key_given_twice(tmp_path):
    """The ontology, variant and template readers go through the one strict reader too."""
    from executors.errors import FormatError
    from executors.ontology import load_ontology
    from nsvqa.generation.questions.templates import TemplateError, load_templates
    from nsvqa.generation.variants import VariantError, load_variant

    onto = tmp_path / "o.json"
    onto.write_text('{"attributes": {}, "attributes": {}}')
    with pytest.raises(FormatError, match=r"o\.json, at the top level, key 'attributes': given twice"):
        load_ontology(onto)
    var = tmp_path / "v.json"
    var.write_text('{"name": "a", "name": "b"}')
    with pytest.raises(VariantError, match=r"v\.json, at the top level, key 'name': given twice"):
        load_variant(var)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "x.json").write_text('{"templates": [{"text": "a", "text": "b"}]}')
    with pytest.raises(TemplateError, match=r"x\.json, at templates\[0\], key 'text': given twice"):
        load_templates(tmp_path / "t")
