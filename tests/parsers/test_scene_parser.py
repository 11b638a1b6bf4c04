"""Image -> SceneLikelihoods with (untrained) tiny models: valid hand-off, empty case, round trip."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from executors import (DeterministicExecutor, ProbabilisticExecutor, Program, SceneLikelihoods,
                       load_ontology)
from parsers.scene.attribute_head import AttributeHead
from parsers.scene.detector import build_detector
from parsers.scene.scene_parser import SceneParser

ONTO = load_ontology("superclevr")
DIRS = {"right": [0.66, 0.75], "left": [-0.66, -0.75], "behind": [-0.75, 0.66], "front": [0.75, -0.66]}


def _parser(score_thresh: float) -> SceneParser:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    det = build_detector(22, 48, 64, "tiny", detections_per_image=5, score_thresh=score_thresh)
    head = AttributeHead({a: len(ONTO.values(a)) for a in ONTO.attributes}, 18, 16)
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
