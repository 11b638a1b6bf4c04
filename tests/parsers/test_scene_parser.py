"""Image -> SceneLikelihoods with (untrained) tiny models: valid hand-off, empty case, round trip."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from executors import (DeterministicExecutor, ProbabilisticExecutor, Program, SceneLikelihoods,
                       load_ontology)
from parsers.scene.attribute_head import AttributeHead
from nsvqa.training.scene_config import SceneParserConfig
from parsers.scene.detector import build_detector, detector_args
from parsers.scene.scene_parser import SceneParser, argmax_scene, head_distribution

TINY_DETECTOR = detector_args(SceneParserConfig.from_profile("d", "tiny"))  # the tiny profile's network

ONTO = load_ontology("superclevr")
DIRS = {"right": [0.66, 0.75], "left": [-0.66, -0.75], "behind": [-0.75, 0.66], "front": [0.75, -0.66]}


def _parser(score_thresh: float) -> SceneParser:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    det = build_detector(22, 48, 64, **TINY_DETECTOR, detections_per_image=5,
                         score_thresh=score_thresh)
    head = AttributeHead({a: len(ONTO.scene_values(a)) for a in ONTO.attributes}, 18, 16, "resnet",
                         pool="mean")  # 21 shapes
    return SceneParser(det, head, ONTO, DIRS, crop_size=32, min_score=0.0)


@pytest.fixture(scope="module")
def parsed():
    torch.manual_seed(1)
    return _parser(0.0).parse([torch.rand(3, 48, 64)])[0]


def test_detections_become_likelihoods(parsed):
    lik = parsed.likelihoods
    n = len(lik)
    assert n > 0 and parsed.boxes.shape == (n, 4) and parsed.masks.shape == (n, 48, 64)
    for a in ONTO.attributes:
        np.testing.assert_allclose(lik.attributes[a].sum(1), 1.0, atol=1e-9)
    assert np.all((lik.exist >= 0) & (lik.exist <= 1)) and lik.positions.shape == (n, 2)
    assert np.all(lik.position_std > 0)
    again = SceneLikelihoods.from_json(lik.to_json(), ONTO)
    np.testing.assert_array_equal(again.attributes["shape"], lik.attributes["shape"])
    np.testing.assert_array_equal(again.positions, lik.positions)


def test_one_column_per_ontology_shape_and_addi_is_never_predicted(parsed):
    """The head predicts the 21 placed shapes; the likelihoods have the ontology's 22 columns, the
    unplaced addi's at probability 0, so a question naming it counts an empty set."""
    shape = parsed.likelihoods.attributes["shape"]
    assert shape.shape == (len(parsed.likelihoods), 22)
    assert np.all(shape[:, ONTO.values("shape").index("addi")] == 0.0)
    r = ProbabilisticExecutor(ONTO, mode="exact").run(Program.from_prefix(["exist", "filter_shape[addi]", "scene"]),
                                                      parsed.likelihoods)
    assert r.answer == "no" and r.distribution == {"no": 1.0}


def test_head_distribution_maps_columns_by_name():
    placed, vals = ONTO.scene_values("shape"), ONTO.values("shape")
    logits = torch.randn(3, len(vals))
    d22 = head_distribution(ONTO, "shape", logits)  # a head with a column for addi: the column is dropped
    assert d22.shape == (3, 22) and np.all(d22[:, -1] == 0.0)
    np.testing.assert_allclose(d22.sum(1), 1.0)
    d21 = head_distribution(ONTO, "shape", logits[:, :21])
    np.testing.assert_allclose(d21, d22)
    names = list(reversed(placed))  # another column order, given by name
    np.testing.assert_allclose(head_distribution(ONTO, "shape", logits[:, :21].flip(1), names), d21)
    color = torch.randn(2, 8)
    np.testing.assert_array_equal(head_distribution(ONTO, "color", color), torch.softmax(color.double(), -1).numpy())


@pytest.mark.parametrize("width, names, message", [
    (20, None, re.escape("attribute head 'shape': 20 outputs, expected 22 (one per shape of ontology "
                         "'superclevr') or 21 (without the unplaced ['addi'])")),
    (21, list(ONTO.scene_values("shape")[:20]) + ["boat"], r"unknown \['boat'\], missing \['tandem'\]"),
    (20, list(ONTO.scene_values("shape")[:20]), r"unknown \[\], missing \['tandem'\]"),
    (22, list(ONTO.scene_values("shape")), "22 outputs but 21 values"),
])
def test_head_values_that_do_not_line_up_are_refused(width, names, message):
    with pytest.raises(ValueError, match=message):
        head_distribution(ONTO, "shape", torch.zeros(1, width), names)


def test_parser_checks_head_values_and_shape_ids_against_the_ontology():
    det = build_detector(22, 48, 64, **TINY_DETECTOR)
    head = AttributeHead({a: len(ONTO.scene_values(a)) for a in ONTO.attributes}, 18, 16, "resnet",
                         pool="mean")
    vocab = {a: list(ONTO.scene_values(a)) for a in ONTO.attributes} | {"partname": list(ONTO.part_names)}
    p = SceneParser(det, head, ONTO, DIRS, 32, 0.0, head_values=vocab, shape_label_ids=list(range(1, 22)))
    assert list(p.shape_label_ids) == list(range(1, 22)) + [-1]  # no detector class for addi
    with pytest.raises(ValueError, match="attribute head 'shape': 21 outputs but 22 head_values"):
        SceneParser(det, head, ONTO, DIRS, 32, 0.0, head_values={"shape": list(ONTO.values("shape"))})
    with pytest.raises(ValueError, match=r"missing \['tandem'\]"):
        SceneParser(det, head, ONTO, DIRS, 32, 0.0, head_values={"shape": list(ONTO.values("shape")[:20])})
    with pytest.raises(ValueError, match=r"shape_label_ids: 20 ids, expected one per shape of the ontology \(22\) "
                                         r"or per placed shape \(21\)"):
        SceneParser(det, head, ONTO, DIRS, 32, 0.0, shape_label_ids=list(range(20)))


def test_argmax_scene_and_both_executors_run(parsed):
    scene = parsed.symbolic()
    assert len(scene) == len(parsed.likelihoods)
    assert set(scene.relation_lists()) == set(ONTO.relations)
    prog = Program.from_prefix(["count", "relate[left]", "unique", "filter_size[large]", "scene"])
    det = DeterministicExecutor(ONTO).run_batch([Program.from_prefix(["count", "scene"]), prog], [scene], [0, 0])
    assert det[0] == len(scene)
    prob = ProbabilisticExecutor(ONTO, mode="exact").run(Program.from_prefix(["count", "scene"]), parsed.likelihoods)
    assert sum(prob.distribution.values()) == pytest.approx(1.0, abs=1e-5)


def test_zero_detections_give_an_empty_valid_scene():
    torch.manual_seed(1)
    p = _parser(1.1).parse([torch.rand(3, 48, 64)])[0]
    assert len(p.likelihoods) == 0 and p.boxes.shape == (0, 4) and p.masks.shape == (0, 48, 64)
    assert DeterministicExecutor(ONTO).run(Program.from_prefix(["count", "scene"]), p.symbolic()).answer == 0
    r = ProbabilisticExecutor(ONTO).run(Program.from_prefix(["exist", "scene"]), p.likelihoods)
    assert r.answer == "no"


class _FixedDetector(torch.nn.Module):
    """Returns the same detections for every image (what a trained Mask R-CNN would output)."""

    def __init__(self, boxes, labels, scores, masks):
        super().__init__()
        self.out = {"boxes": torch.tensor(boxes, dtype=torch.float32), "labels": torch.tensor(labels),
                    "scores": torch.tensor(scores), "masks": torch.stack(masks)[:, None].float()}

    def forward(self, images):
        return [dict(self.out) for _ in images]


class _FixedHead(torch.nn.Module):
    """Attribute logits chosen per crop row (rows in detection order)."""

    def __init__(self, logits: dict[str, torch.Tensor]):
        super().__init__()
        self.logits = logits

    def forward(self, x, geometry):
        n = x.shape[0]
        assert geometry.shape == (n, 4) and bool(((geometry >= 0) & (geometry <= 1)).all())
        out = {a: v[:n] for a, v in self.logits.items()}
        out["position"], out["position_logvar"] = torch.zeros(n, 2), torch.zeros(n, 2)
        return out


def _onehot(values: list[str], attr: str, scale: float = 20.0) -> torch.Tensor:
    vals = ONTO.values(attr) if attr != "partname" else ONTO.part_names
    m = torch.zeros(len(values), len(vals))
    for i, v in enumerate(values):
        m[i, vals.index(v)] = scale
    return m


def test_parts_belong_to_the_object_that_contains_them():
    h, w = 48, 64
    car, plane = torch.zeros(h, w, dtype=torch.bool), torch.zeros(h, w, dtype=torch.bool)
    car[5:25, 5:30] = True
    plane[20:45, 35:60] = True
    wheel, wing, stray = (torch.zeros(h, w, dtype=torch.bool) for _ in range(3))
    wheel[18:24, 8:14] = True     # inside the car
    wing[25:30, 40:55] = True     # inside the plane
    stray[0:4, 60:64] = True      # inside nothing
    names = {22: "wheel_front_left", 23: "wing_left", 24: "door_front_left"}
    det = _FixedDetector([[5, 5, 30, 25], [35, 20, 60, 45], [8, 18, 14, 24], [40, 25, 55, 30], [60, 0, 64, 4]],
                         [1, 2, 22, 23, 24], [0.9, 0.8, 0.6, 0.7, 0.9], [car, plane, wheel, wing, stray])
    rows = 5
    logits = {a: torch.zeros(rows, len(ONTO.values(a))) for a in ONTO.attributes}
    logits["shape"] = _onehot(["regular", "jet", "suv", "suv", "suv"], "shape")
    logits["color"] = _onehot(["red", "blue", "blue", "blue", "red"], "color")   # wheel differs, wing does not
    logits["material"] = _onehot(["metal", "rubber", "metal", "rubber", "metal"], "material")
    logits["partname"] = torch.zeros(rows, len(ONTO.part_names))
    parser = SceneParser(det, _FixedHead(logits), ONTO, DIRS, crop_size=16, min_score=0.5, part_classes=names,
                         merge_iou=None)  # rows of _FixedHead follow the detection order
    p = parser.parse([torch.rand(3, h, w)])[0]
    assert len(p.likelihoods) == 2 and list(p.part_owner) == [0, 1, -1]
    k_wheel, k_wing = ONTO.part_names.index("wheel_front_left"), ONTO.part_names.index("wing_left")
    pe = p.likelihoods.part_exist
    assert pe[0, k_wheel] == pytest.approx(0.6, abs=1e-6)        # detected and recoloured: listed
    assert pe[1, k_wing] == pytest.approx(0.0, abs=1e-6)         # detected but looks like its object
    assert pe.sum() == pytest.approx(pe[0, k_wheel])
    scene = p.symbolic()
    assert scene.parts[0] == {"wheel_front_left": {"color": "blue", "material": "metal",
                                                   "size": scene.objects[0]["size"],
                                                   "texture": scene.objects[0]["texture"]}} and scene.parts[1] == {}
    prog = Program.from_prefix(["partquery_color", "uniquepart", "partfilter_partname[wheel_front_left]",
                                "object2part", "unique", "filter_color[red]", "scene"])
    assert DeterministicExecutor(ONTO).run(prog, scene).answer == "blue"
    assert ProbabilisticExecutor(ONTO).run(prog, p.likelihoods).answer == "blue"
    p.likelihoods.attributes["shape"][0] = _onehot(["suv"], "shape", 1.0)[0].numpy()  # a car without that wheel
    assert argmax_scene(p.likelihoods).parts[0] == {}


def test_per_class_detections_of_one_object_merge_into_one():
    from parsers.scene.scene_parser import merge_classes

    boxes = torch.tensor([[0, 0, 10, 10], [0, 0, 10, 11], [0, 0, 10, 10.5], [20, 20, 30, 30], [1, 1, 4, 4], [1, 1, 4, 4.2]],
                         dtype=torch.float32)
    scores = torch.tensor([0.5, 0.3, 0.1, 0.4, 0.6, 0.5])
    labels = torch.tensor([1, 2, 2, 3, 30, 31])  # 30, 31: parts, never merged
    idx, merged = merge_classes(boxes, scores, labels, {30, 31}, 0.7)
    assert idx.tolist() == [4, 0, 5, 3]
    # class 1 (0.5) + class 2's best (0.3; its 0.1 duplicate adds nothing)
    assert merged.tolist() == pytest.approx([0.6, 0.8, 0.5, 0.4])
    idx, merged = merge_classes(boxes[:0], scores[:0], labels[:0], set(), 0.7)
    assert len(idx) == len(merged) == 0


def test_class_agnostic_parts_are_named_by_the_head():
    """A detector with one ``part`` class: the head's part-name distribution names each part, its
    existence is spread over the names, and the output labels are the likeliest name's COCO id."""
    h, w = 48, 64
    car = torch.zeros(h, w, dtype=torch.bool)
    car[5:40, 5:60] = True
    wheel, door, wheel2 = (torch.zeros(h, w, dtype=torch.bool) for _ in range(3))
    wheel[30:38, 8:16] = True
    door[10:20, 20:30] = True
    wheel2[30:38, 40:48] = True
    det = _FixedDetector([[5, 5, 60, 40], [8, 30, 16, 38], [20, 10, 30, 20], [40, 30, 48, 38]],
                         [1, 2, 2, 2], [0.9, 0.8, 0.6, 0.7], [car, wheel, door, wheel2])
    rows = 4
    logits = {a: torch.zeros(rows, len(ONTO.values(a))) for a in ONTO.attributes}
    logits["shape"] = _onehot(["suv"] * 4, "shape")
    logits["color"] = _onehot(["red", "blue", "green", "blue"], "color")  # every part differs from the car
    logits["material"] = _onehot(["metal"] * 4, "material")
    names = ONTO.part_names
    pn = torch.full((rows, len(names)), -30.0)
    k_wheel, k_fl, k_bl = (names.index(n) for n in ("back_left_wheel", "door_front_left", "door_back_right"))
    pn[1, k_wheel] = 0.0                   # surely the front-left wheel
    pn[2, k_fl] = pn[2, k_bl] = 0.0        # one of two doors, half and half
    pn[3, k_wheel] = 0.0                   # a second detection of the same wheel, lower score
    logits["partname"] = pn
    part_ids = np.arange(100, 100 + len(names))
    parser = SceneParser(det, _FixedHead(logits), ONTO, DIRS, crop_size=16, min_score=0.5, part_classes={2: None},
                         merge_iou=None, part_label_ids=part_ids)
    p = parser.parse([torch.rand(3, h, w)])[0]
    pe = p.likelihoods.part_exist
    assert pe[0, k_wheel] == pytest.approx(0.8, abs=1e-6)  # the better detection of the wheel holds it
    assert pe[0, k_fl] == pytest.approx(0.3, abs=1e-6) and pe[0, k_bl] == pytest.approx(0.3, abs=1e-6)
    assert pe.sum() == pytest.approx(1.4, abs=1e-6)
    color = ONTO.values("color")
    assert color[int(p.likelihoods.part_attributes["color"][0, k_wheel].argmax())] == "blue"
    assert color[int(p.likelihoods.part_attributes["color"][0, k_fl].argmax())] == "green"
    assert p.part_labels[0] == 100 + k_wheel and p.part_labels[2] == 100 + k_wheel
    assert p.part_labels[1] in (100 + k_fl, 100 + k_bl)
    with pytest.raises(ValueError, match="part_label_ids: 3 ids"):
        SceneParser(det, _FixedHead(logits), ONTO, DIRS, 16, 0.5, part_classes={2: None}, part_label_ids=[1, 2, 3])


def test_object_part_crops_show_the_part_on_its_whole_object():
    """part_crop="object": a part's crop is cut from its owner's box (the part's mask as the 4th
    channel); a part that belongs to no object keeps its own box."""
    from parsers.scene.crops import crop_instance

    h, w = 48, 64
    car, wheel, stray = (torch.zeros(h, w, dtype=torch.bool) for _ in range(3))
    car[5:40, 5:60] = True
    wheel[30:38, 8:16] = True
    stray[0:4, 60:64] = True
    boxes = [[5, 5, 60, 40], [8, 30, 16, 38], [60, 0, 64, 4]]
    det = _FixedDetector(boxes, [1, 2, 2], [0.9, 0.8, 0.7], [car, wheel, stray])
    logits = {a: torch.zeros(3, len(ONTO.values(a))) for a in ONTO.attributes} | {
        "partname": torch.zeros(3, len(ONTO.part_names))}
    seen = {}

    class Recording(_FixedHead):
        def forward(self, x, geometry):
            seen["x"] = x.clone()
            return super().forward(x, geometry)

    img = torch.rand(3, h, w)
    for mode, wheel_box in (("object", boxes[0]), ("part", boxes[1])):
        parser = SceneParser(det, Recording(logits), ONTO, DIRS, crop_size=16, min_score=0.5, part_classes={2: None},
                             merge_iou=None, part_crop=mode)
        parser.parse([img])
        x0, y0, x1, y1 = wheel_box
        want = crop_instance(img, wheel[None].float(), [x0, y0, x1 - x0, y1 - y0], 16)
        torch.testing.assert_close(seen["x"][1], want)
        x0, y0, x1, y1 = boxes[2]  # no owner: its own box
        torch.testing.assert_close(seen["x"][2], crop_instance(img, stray[None].float(), [x0, y0, x1 - x0, y1 - y0], 16))
    with pytest.raises(ValueError, match="part_crop"):
        SceneParser(det, _FixedHead(logits), ONTO, DIRS, 16, 0.5, part_crop="scene")
