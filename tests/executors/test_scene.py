"""SymbolicScene reading and relations; SceneLikelihoods validation and round trips."""
from __future__ import annotations

import copy
import dataclasses
import json

import numpy as np
import pytest

from executors import (DeterministicExecutor, FormatError, InvalidObjectReference, ProbabilisticExecutor, Program,
                       SceneLikelihoods, SymbolicScene, UniquenessError)
from executors.io import load_scenes

RELATIONS = ("left", "right", "front", "behind")


# ---------------------------------------------------------------------- reading
def test_reads_attributes_parts_and_positions(superclevr, sc_json):
    s = SymbolicScene.from_json(sc_json, superclevr)
    assert len(s) == 3
    assert s.objects[2] == {"shape": "tandem", "color": "red", "material": "rubber", "size": "large",
                            "texture": "none"}  # no texture field reads as none
    # a part attribute not given is the object's
    assert s.parts[0]["front_left_wheel"] == {"color": "blue", "material": "metal", "size": "large",
                                              "texture": "none"}
    assert s.parts[2]["fork"]["color"] == "red"
    np.testing.assert_array_equal(s.coords, [[0, 0, 0], [1, 0, 0], [-1, 1, 0]])
    np.testing.assert_array_equal(s.pixel_coords, [[320, 240], [420, 240], [220, 200]])
    assert (s.image_index, s.image_filename) == (7, "superCLEVR_new_000007.png")


def test_texture_release_spelling_is_canonicalised(superclevr, sc_json):
    sc_json["objects"][0]["texture"] = "None"
    sc_json["objects"][1]["texture"] = "checkered"
    s = SymbolicScene.from_json(sc_json, superclevr)
    assert [o["texture"] for o in s.objects] == ["none", "checkered", "none"]


def test_pixel_coords_both_formats(clevr, clevr_json):
    flat = SymbolicScene.from_json(clevr_json, clevr)  # CLEVR: [x, y, depth]
    for o in clevr_json["objects"]:
        o["pixel_coords"] = [o["pixel_coords"], [480, 320]]  # Super-CLEVR: [[x, y, depth], [W, H]]
    nested = SymbolicScene.from_json(clevr_json, clevr)
    np.testing.assert_array_equal(flat.pixel_coords, [[320, 240], [420, 240], [220, 200]])
    np.testing.assert_array_equal(nested.pixel_coords, flat.pixel_coords)


def _format_error(d, onto, *fragments, where="scenes.json, scene 4"):
    with pytest.raises(FormatError) as exc:
        SymbolicScene.from_json(d, onto, where=where)
    assert exc.type is FormatError
    msg = str(exc.value)
    assert msg.startswith(where), msg
    for f in fragments:
        assert f in msg, msg
    return msg


def test_bad_color_lists_valid_values(clevr, clevr_json):
    clevr_json["objects"][1]["color"] = "pink"
    _format_error(clevr_json, clevr, "object 1", "field 'color'", "'pink' is not a valid color",
                  "valid: ['gray', 'red', 'blue', 'green', 'brown', 'purple', 'cyan', 'yellow']")


def test_superclevr_shape_on_clevr_ontology(clevr, clevr_json):
    clevr_json["objects"][2]["shape"] = "truck"
    _format_error(clevr_json, clevr, "object 2", "field 'shape'", "valid: ['cube', 'sphere', 'cylinder']")


def test_non_string_value(clevr, clevr_json):
    clevr_json["objects"][0]["size"] = 3
    _format_error(clevr_json, clevr, "object 0", "field 'size'", "valid: ['large', 'small']")


def test_missing_shape(clevr, clevr_json):
    del clevr_json["objects"][2]["shape"]
    _format_error(clevr_json, clevr, "object 2", "missing field 'shape'")


def test_objects_missing_or_not_a_list(clevr):
    _format_error({"image_index": 0}, clevr, "field 'objects'")
    _format_error({"objects": {"0": {}}}, clevr, "field 'objects'")


def test_part_not_on_that_shape(superclevr, sc_json):
    sc_json["objects"][1]["parts"]["wing_left"] = {"color": "red"}  # a suv has no wing
    msg = _format_error(sc_json, superclevr, "object 1", "field 'parts'",
                        "'wing_left' is not a part of 'suv'", "valid: ['front_left_door'")
    assert "'back_left_wheel'" in msg


def test_part_with_bad_attribute(superclevr, sc_json):
    sc_json["objects"][0]["parts"]["hood"]["material"] = "wood"
    _format_error(sc_json, superclevr, "object 0", "part 'hood'", "field 'material'",
                  "valid: ['rubber', 'metal']")


def test_part_attributes_not_an_object(superclevr, sc_json):
    sc_json["objects"][0]["parts"]["hood"] = "red"
    _format_error(sc_json, superclevr, "object 0, part 'hood'", "'red'")


def test_parts_on_an_ontology_without_parts(clevr, clevr_json):
    clevr_json["objects"][0]["parts"] = {"hood": {"color": "red"}}
    _format_error(clevr_json, clevr, "object 0", "field 'parts'", "ontology 'clevr' has no parts")


def test_bad_3d_coords(clevr, clevr_json):
    for o in clevr_json["objects"]:
        o["3d_coords"] = o["3d_coords"][:2]
    _format_error(clevr_json, clevr, "field '3d_coords'", "expected shape (3, 3), got (3, 2)")
    clevr_json["objects"][1]["3d_coords"] = [1.0, 0.0, float("nan")]
    clevr_json["objects"][0]["3d_coords"] = [1.0, 0.0, 0.0]
    clevr_json["objects"][2]["3d_coords"] = [1.0, 0.0, 0.0]
    _format_error(clevr_json, clevr, "field '3d_coords'", "non-finite")
    clevr_json["objects"][1]["3d_coords"] = [1.0, 0.0]  # ragged
    _format_error(clevr_json, clevr, "field '3d_coords'")


def test_bad_pixel_coords(clevr, clevr_json):
    clevr_json["objects"][1]["pixel_coords"] = ["x", "y"]
    _format_error(clevr_json, clevr, "object 1", "field 'pixel_coords'")


def test_relationships_referencing_a_missing_object(superclevr, sc_json):
    sc_json["relationships"]["left"][0] = [7]
    with pytest.raises(InvalidObjectReference) as exc:
        SymbolicScene.from_json(sc_json, superclevr, where="scenes.json, scene 4")
    assert exc.type is InvalidObjectReference
    assert str(exc.value) == ("scenes.json, scene 4, field 'relationships.left', object 0: "
                              "no object 7 in a scene of 3")


def test_relationships_with_wrong_length(superclevr, sc_json):
    sc_json["relationships"]["front"] = [[], []]
    _format_error(sc_json, superclevr, "field 'relationships.front'", "one list per object (3)")


@pytest.mark.parametrize("name", ["/data/images/x.png", "../x.png", "images/../../x.png",
                                  "C:\\images\\x.png", "..\\x.png", ""])
def test_unsafe_image_filename(clevr, clevr_json, name):
    clevr_json["image_filename"] = name
    _format_error(clevr_json, clevr, "field 'image_filename'", repr(name))


@pytest.mark.parametrize("name", ["x.png", "images/val/CLEVR_val_000000.png", "a..b.png"])
def test_safe_image_filename(clevr, clevr_json, name):
    clevr_json["image_filename"] = name
    assert SymbolicScene.from_json(clevr_json, clevr).image_filename == name


def test_load_scenes_names_the_file_and_scene(tmp_path, clevr_json):
    bad = copy.deepcopy(clevr_json)
    bad["objects"][2]["color"] = "pink"
    path = tmp_path / "scenes.json"
    path.write_text(json.dumps({"info": {}, "scenes": [clevr_json, bad]}))
    with pytest.raises(FormatError) as exc:
        load_scenes(path)
    assert str(exc.value).startswith(f"{path}, scene 1, object 2, field 'color': 'pink'")


# ---------------------------------------------------------------------- relations
def _without_relationships(d):
    d = dict(d)
    d.pop("relationships", None)
    return d


def test_given_relationships_are_used_as_is(superclevr, sc_json):
    s = SymbolicScene.from_json(sc_json, superclevr)
    assert s.relation_lists() == sc_json["relationships"]


def test_relations_from_3d_coordinates(superclevr, sc_json):
    s = SymbolicScene.from_json(_without_relationships(sc_json), superclevr)
    assert s.relation_lists() == {
        "right": [[1], [], [0, 1]], "left": [[2], [0, 2], []],
        "behind": [[2], [2], []], "front": [[], [], [0, 1]],
    }


def test_relation_margin_is_0_2(clevr, clevr_json):
    # right of 0: object 1 is 0.15 to the right (under the margin), object 2 is 0.5
    for o, x in zip(clevr_json["objects"], (0.0, 0.15, 0.5)):
        o["3d_coords"] = [x, 0.0, 0.35]
    rel = SymbolicScene.from_json(clevr_json, clevr).relation_lists()
    assert rel["right"] == [[2], [2], []]
    assert rel["left"] == [[], [], [0, 1]]
    assert rel["front"] == rel["behind"] == [[], [], []]
    assert clevr.relation_margin == 0.2


def test_image_plane_fallback(clevr, clevr_json):
    """No relationships, no 3D coordinates: x to the right, y down (lower in the image = front)."""
    for o in clevr_json["objects"]:
        del o["3d_coords"]
    rel = SymbolicScene.from_json(clevr_json, clevr).relation_lists()
    # pixels: 0 (320, 240), 1 (420, 240), 2 (220, 200)
    assert rel == {"right": [[1], [], [0, 1]], "left": [[2], [0, 2], []],
                   "front": [[], [], [0, 1]], "behind": [[2], [2], []]}


def test_image_plane_fallback_without_directions(clevr, clevr_json):
    del clevr_json["directions"]
    for o in clevr_json["objects"]:
        o["pixel_coords"] = [o["pixel_coords"], [640, 480]]
    rel = SymbolicScene.from_json(clevr_json, clevr).relation_lists()
    assert rel["right"] == [[1], [], [0, 1]]


def test_no_relationships_and_no_positions(clevr, clevr_json):
    """Relations cannot be computed; programs without relate still run."""
    for o in clevr_json["objects"]:
        del o["3d_coords"], o["pixel_coords"]
    s = SymbolicScene.from_json(clevr_json, clevr)
    with pytest.raises(FormatError, match="neither 'relationships' nor positions"):
        s.relation_lists()
    ex = DeterministicExecutor(clevr)
    assert ex.run(Program.from_prefix(["count", "filter_color[red]", "scene"]), s).answer == 2
    with pytest.raises(FormatError, match="neither 'relationships' nor positions"):
        ex.run(Program.from_prefix(["count", "relate[left]", "unique", "filter_shape[cube]", "scene"]), s)


@pytest.fixture(scope="module")
def clevr_val_scenes(reference_dir):
    return json.loads((reference_dir / "clevr" / "CLEVR_val_scenes_500.json").read_text())["scenes"]


@pytest.fixture(scope="module")
def superclevr_scenes(reference_fixtures):
    return json.loads((reference_fixtures / "superclevr" / "superCLEVR_scenes.json").read_text())["scenes"]


def _computed(scenes, onto):
    return [SymbolicScene.from_json(_without_relationships(d), onto).relation_lists() for d in scenes]


def test_computed_relations_match_real_clevr_scenes(clevr_val_scenes, clevr):
    assert len(clevr_val_scenes) == 500
    computed = _computed(clevr_val_scenes, clevr)
    wrong = [i for i, (c, d) in enumerate(zip(computed, clevr_val_scenes)) if c != d["relationships"]]
    assert wrong == []


def test_clevr_scenes_cannot_tell_the_margin(clevr_val_scenes):
    """Why CLEVR alone does not pin the margin: its generator keeps every pair of objects at
    least 0.4 apart along each direction, so any margin in [0, 0.4) gives the same relations."""
    closest = np.inf
    for d in clevr_val_scenes:
        c = np.asarray([o["3d_coords"] for o in d["objects"]])
        for r in RELATIONS:
            proj = c @ np.asarray(d["directions"][r])
            gap = np.abs(proj[:, None] - proj[None, :])
            np.fill_diagonal(gap, np.inf)
            closest = min(closest, gap.min())
    assert 0.4 <= closest < 0.401


def test_superclevr_scenes_pin_the_margin_at_0_2(superclevr_scenes, superclevr):
    """Super-CLEVR scenes have pairs closer than the margin: 0.2 matches every relationship list,
    no margin (0.0) does not."""
    given = [d["relationships"] for d in superclevr_scenes]
    assert _computed(superclevr_scenes, superclevr) == given
    no_margin = dataclasses.replace(superclevr, relation_margin=0.0)
    assert _computed(superclevr_scenes, no_margin) != given


# ---------------------------------------------------------------------- the empty scene
@pytest.fixture
def empty_scene(clevr):
    return SymbolicScene.from_json({"objects": [], "relationships": {r: [] for r in RELATIONS}}, clevr)


@pytest.mark.parametrize("prefix, answer", [
    (["count", "scene"], 0),
    (["exist", "scene"], "no"),
    (["count", "filter_color[red]", "scene"], 0),
    (["exist", "union", "filter_size[large]", "scene", "filter_size[small]", "scene"], "no"),
])
def test_empty_scene_answers(clevr, empty_scene, prefix, answer):
    r = DeterministicExecutor(clevr).run(Program.from_prefix(prefix), empty_scene)
    assert r.answer == answer
    assert r.trace[0] == []


def test_empty_scene_unique_fails(clevr, empty_scene):
    with pytest.raises(UniquenessError) as exc:
        DeterministicExecutor(clevr).run(Program.from_prefix(["query_color", "unique", "scene"]), empty_scene)
    assert exc.value.size == 0
    assert str(exc.value) == "node 1 (unique): expects exactly one element, the set has 0"


def test_empty_scene_without_relationships_counts_zero(clevr):
    """Zero detections: no relationships and no positions, yet a valid scene."""
    scene = SymbolicScene.from_json({"objects": []}, clevr)
    assert scene.relation_lists() == {r: [] for r in RELATIONS}
    assert DeterministicExecutor(clevr).run(Program.from_prefix(["count", "scene"]), scene).answer == 0


def test_single_object_without_positions_relates_to_nothing(clevr, clevr_json):
    obj = clevr_json["objects"][0]
    del obj["3d_coords"], obj["pixel_coords"]
    scene = SymbolicScene.from_json({"objects": [obj]}, clevr)
    assert scene.relation_lists() == {r: [[]] for r in RELATIONS}
    r = DeterministicExecutor(clevr).run(Program.from_prefix(["count", "relate[left]", "unique", "scene"]), scene)
    assert r.answer == 0


# ---------------------------------------------------------------------- SceneLikelihoods
def _onehot(onto, attr, idx):
    return np.eye(len(onto.values(attr)))[idx]


def _likelihoods(onto, **kw):
    base = dict(exist=np.ones(3), positions=np.zeros((3, 2)),
                attributes={a: _onehot(onto, a, [0, 1, 0]) for a in onto.attributes})
    base.update(kw)
    return SceneLikelihoods(onto, **base)


def _attrs_with(onto, attr, matrix):
    a = {k: _onehot(onto, k, [0, 1, 0]) for k in onto.attributes}
    a[attr] = matrix
    return a


def _lik_error(onto, *fragments, **kw):
    with pytest.raises(FormatError) as exc:
        _likelihoods(onto, **kw)
    assert exc.type is FormatError
    msg = str(exc.value)
    for f in fragments:
        assert f in msg, msg


def test_valid_likelihoods(clevr):
    lik = _likelihoods(clevr)
    assert len(lik) == 3
    assert set(lik.directions) == set(RELATIONS)  # image-plane directions for 2-D positions
    np.testing.assert_array_equal(lik.position_std, np.zeros(3))


def test_likelihoods_wrong_shape(clevr):
    _lik_error(clevr, "field 'attributes.color'", "expected shape (3, 8), got (3, 7)",
               attributes=_attrs_with(clevr, "color", _onehot(clevr, "color", [0, 1, 0])[:, :7]))
    _lik_error(clevr, "field 'exist'", "got (1, 3)", exist=np.ones((1, 3)))
    _lik_error(clevr, "field 'positions'", positions=np.zeros((2, 2)))


def test_likelihoods_over_the_placed_shapes(superclevr):
    """21 shape columns (the placed shapes: files and parsers from before addi joined the ontology)
    read as 22 with addi at 0; other widths are refused, naming both accepted ones."""
    placed = np.eye(21)[[0, 5, 20]]
    lik = _likelihoods(superclevr, attributes=_attrs_with(superclevr, "shape", placed))
    assert lik.attributes["shape"].shape == (3, 22)
    np.testing.assert_array_equal(lik.attributes["shape"], np.eye(22)[[0, 5, 20]])
    assert [superclevr.values("shape")[k] for k in lik.attributes["shape"].argmax(1)] == ["suv", "articulated",
                                                                                            "tandem"]
    _lik_error(superclevr, "field 'attributes.shape': 20 columns, expected 22 (one per shape of ontology "
               "'superclevr': ['suv',", "or 21 (the same without the unplaced ['addi'])",
               attributes=_attrs_with(superclevr, "shape", np.eye(20)[[0, 1, 2]]))
    # part tables carry no shape; their attributes have nothing unplaced and keep the plain check
    pe = np.zeros((3, len(superclevr.part_names)))
    _lik_error(superclevr, "field 'part_attributes.color'", "expected shape",
               part_exist=pe, part_attributes={"color": np.full((3, len(superclevr.part_names), 7), 1 / 7)})


def test_likelihoods_distribution_not_summing_to_one(clevr):
    m = _onehot(clevr, "color", [0, 1, 0])
    m[1, 1] = 0.9
    _lik_error(clevr, "field 'attributes.color', index (1,)", "sums to 0.9, not 1",
               attributes=_attrs_with(clevr, "color", m))


def test_likelihoods_probability_above_one(clevr):
    m = _onehot(clevr, "material", [0, 1, 0])
    m[2] = [1.5, -0.5]  # sums to 1 but is no distribution
    _lik_error(clevr, "field 'attributes.material', index (2, 0)", "1.5", "not a probability",
               attributes=_attrs_with(clevr, "material", m))
    _lik_error(clevr, "field 'exist', index (1,)", "1.2", exist=[1.0, 1.2, 1.0])


def test_likelihoods_nan(clevr):
    m = _onehot(clevr, "size", [0, 1, 0]).astype(float)
    m[0, 1] = np.nan
    _lik_error(clevr, "field 'attributes.size', index (0, 1)", "nan",
               attributes=_attrs_with(clevr, "size", m))
    _lik_error(clevr, "field 'exist', index (2,)", exist=[1.0, 0.5, np.nan])


def test_likelihoods_missing_attribute(clevr):
    a = {k: _onehot(clevr, k, [0, 1, 0]) for k in clevr.attributes if k != "size"}
    _lik_error(clevr, "missing attribute 'size'", attributes=a)


def test_likelihoods_3d_positions_need_directions(clevr):
    _lik_error(clevr, "field 'directions'", positions=np.zeros((3, 3)))


def test_likelihoods_from_json_names_where(clevr):
    d = _likelihoods(clevr).to_json()
    d["exist"][1] = 1.5
    with pytest.raises(FormatError) as exc:
        SceneLikelihoods.from_json(d, clevr, where="lik.json, scene 2")
    assert str(exc.value).startswith("lik.json, scene 2: ")
    assert "field 'exist', index (1,)" in str(exc.value)
    del d["positions"]
    with pytest.raises(FormatError, match=r"^lik.json, scene 2: missing field 'positions'"):
        SceneLikelihoods.from_json(d, clevr, where="lik.json, scene 2")


@pytest.mark.parametrize("margin", [float("nan"), float("inf"), -0.1, "0.2", "abc", True, None, [0.2]])
def test_likelihoods_bad_margin_is_refused(clevr, margin):
    """The relation margin is checked at construction as positions are (a NaN margin answered
    every relation question with probability 1), from the API and from JSON."""
    _lik_error(clevr, "field 'margin'", margin=margin)
    d = _likelihoods(clevr).to_json()
    d["margin"] = margin
    with pytest.raises(FormatError, match=r"^lik.json, scene 0: likelihoods, field 'margin'"):
        SceneLikelihoods.from_json(d, clevr, where="lik.json, scene 0")


def test_likelihoods_good_margins_are_floats(clevr):
    assert _likelihoods(clevr, margin=0).margin == 0.0 and isinstance(_likelihoods(clevr, margin=0).margin, float)
    assert _likelihoods(clevr, margin=np.float32(0.25)).margin == 0.25


@pytest.mark.parametrize("bad,fragment", [
    ([np.nan, 0.0], "non-finite"), ([np.inf, 0.0], "non-finite"), ([0.0, 0.0], "unit vector, got length 0"),
    ([2.0, 0.0], "unit vector, got length 2"), ([1.0, 0.0, 0.0], "expected 2 numbers"), ("right", "expected 2 numbers"),
    (["a", "b"], "expected 2 numbers")])
def test_likelihoods_bad_directions_are_refused(clevr, bad, fragment):
    dirs = {"left": [-1.0, 0.0], "right": bad, "front": [0.0, 1.0], "behind": [0.0, -1.0]}
    _lik_error(clevr, "field 'directions.right'", fragment, directions=dirs)
    d = _likelihoods(clevr).to_json()
    d["directions"]["right"] = bad if not isinstance(bad, list) else [float(x) if not isinstance(x, str) else x
                                                                      for x in bad]
    with pytest.raises(FormatError, match=r"^lik.json, scene 0: likelihoods, field 'directions.right'"):
        SceneLikelihoods.from_json(d, clevr, where="lik.json, scene 0")


def test_likelihoods_directions_outside_the_relations_need_only_be_finite(clevr):
    """The scene parser carries the scenes' ``above``/``below`` without their z (zero vectors):
    kept, unused; a relation's direction of (nearly) unit length, rounded as in CLEVR, is accepted."""
    dirs = {"left": [-0.6563, -0.7545], "right": [0.6563, 0.7545], "front": [0.7545, -0.6563],
            "behind": [-0.7545, 0.6563], "above": [0.0, 0.0], "below": [0.0, 0.0]}
    assert set(_likelihoods(clevr, directions=dirs).directions) == set(dirs)
    _lik_error(clevr, "field 'directions.above'", "non-finite", directions=dirs | {"above": [np.nan, 0.0]})
    _lik_error(clevr, "field 'directions': expected an object", directions=[[1.0, 0.0]])


def test_from_scene_is_one_hot(superclevr, sc_json):
    s = SymbolicScene.from_json(sc_json, superclevr)
    lik = SceneLikelihoods.from_scene(s)
    np.testing.assert_array_equal(lik.exist, np.ones(3))
    for a in superclevr.attributes:
        m = lik.attributes[a]
        assert m.shape == (3, len(superclevr.values(a)))
        np.testing.assert_array_equal(m.sum(axis=1), np.ones(3))
        assert set(np.unique(m)) <= {0.0, 1.0}
        assert [superclevr.values(a)[k] for k in m.argmax(axis=1)] == [o[a] for o in s.objects]
    # relations: 0/1 matrices of the scene's relationships ([i, j] = j in relation to i)
    np.testing.assert_array_equal(lik.relations["right"], [[0, 0, 1], [0, 0, 0], [0, 0, 0]])
    # parts: the listed ones exist, with their own attributes; others look like their object
    names = superclevr.part_names
    assert lik.part_exist.shape == (3, 85)
    assert {(i, names[k]) for i, k in zip(*np.nonzero(lik.part_exist))} == {
        (0, "hood"), (0, "front_left_wheel"), (1, "back_left_wheel"), (2, "wheel_front"), (2, "fork")}
    colors = superclevr.values("color")
    pc = lik.part_attributes["color"]
    assert colors[pc[0, names.index("front_left_wheel")].argmax()] == "blue"
    assert colors[pc[0, names.index("roof")].argmax()] == "red"
    assert superclevr.values("material")[lik.part_attributes["material"][2, names.index("fork")].argmax()] == "metal"
    np.testing.assert_array_equal(lik.positions, s.coords)
    assert lik.margin == 0.2


def _assert_likelihoods_equal(a, b):
    for f in ("exist", "positions", "position_std", "part_exist"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)
    for f in ("attributes", "directions", "relations", "part_attributes"):
        x, y = getattr(a, f) or {}, getattr(b, f) or {}
        assert set(x) == set(y)
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])
    assert (a.margin, a.image_index) == (b.margin, b.image_index)


@pytest.mark.parametrize("layout", ["coords", "pixels", "empty"])
def test_from_scene_equals_the_checked_constructor(superclevr, sc_json, layout):
    """from_scene skips the constructor's checks; what it builds is what they accept unchanged."""
    if layout == "pixels":
        for o in sc_json["objects"]:
            del o["3d_coords"]
        del sc_json["directions"]
    elif layout == "empty":
        sc_json = {"objects": [], "relationships": {r: [] for r in RELATIONS}}
    lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(sc_json, superclevr))
    fields = {f.name: getattr(lik, f.name) for f in dataclasses.fields(lik)}
    checked = SceneLikelihoods(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in fields.items()})
    _assert_likelihoods_equal(lik, checked)
    assert lik.positions.shape[1] == (3 if layout == "coords" else 2)
    assert set(lik.directions) == set(RELATIONS)


def test_likelihoods_json_round_trip_is_exact(superclevr, sc_json):
    lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(sc_json, superclevr))
    d = json.loads(json.dumps(lik.to_json()))
    back = SceneLikelihoods.from_json(d, superclevr)
    _assert_likelihoods_equal(lik, back)
    assert back.to_json() == d
    assert back.image_index == 7


def test_likelihoods_json_round_trip_of_soft_values(clevr):
    rng = np.random.default_rng(0)
    attrs = {}
    for a in clevr.attributes:
        m = rng.random((3, len(clevr.values(a))))
        attrs[a] = m / m.sum(axis=1, keepdims=True)
    lik = SceneLikelihoods(clevr, rng.random(3), attrs, rng.random((3, 2)), rng.random(3) * 0.1,
                           margin=0.05)
    back = SceneLikelihoods.from_json(json.loads(json.dumps(lik.to_json())), clevr)
    _assert_likelihoods_equal(lik, back)
    assert back.relations is None and back.part_exist is None


@pytest.mark.parametrize("dim", [2, 3])
def test_likelihoods_json_round_trip_of_zero_objects(superclevr, dim):
    """A parse with no detection: JSON keeps no inner dimensions ([] for (0, K)), loading restores them."""
    attrs = {a: np.zeros((0, len(superclevr.values(a)))) for a in superclevr.attributes}
    dirs = {r: np.eye(dim)[0] * (1 if r in ("right", "behind") else -1) for r in superclevr.relations}
    p = len(superclevr.part_names)
    pattrs = {a: np.zeros((0, p, len(superclevr.values(a)))) for a in superclevr.part_attributes
              if a in superclevr.attributes}
    lik = SceneLikelihoods(superclevr, np.zeros(0), attrs, np.zeros((0, dim)), None, dirs, 0.2, None,
                           np.zeros((0, p)), pattrs, 4)
    back = SceneLikelihoods.from_json(json.loads(json.dumps(lik.to_json())), superclevr)
    _assert_likelihoods_equal(lik, back)
    assert back.positions.shape == (0, dim) and back.part_exist.shape == (0, p)
    assert DeterministicExecutor(superclevr).run(Program.from_prefix(["count", "scene"]),
                                                 SymbolicScene(superclevr, [])).answer == 0
    assert ProbabilisticExecutor(superclevr).run(Program.from_prefix(["exist", "scene"]), back).answer == "no"
