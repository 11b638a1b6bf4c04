"""The bugs the executors' property tests found, pinned (tests of ``SymbolicScene.from_json``,
``Program.from_prefix`` and both executors on the scene that showed each).
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from executors import (DeterministicExecutor, FormatError, InvalidObjectReference, Program, ProbabilisticExecutor,
                       SceneLikelihoods, SymbolicScene)

from .property_strategies import AXIS_DIRECTIONS, CONFIGS


# ====================================================================== regressions (found by the properties)
def _two_objects(**extra) -> dict:
    d = {"objects": [{"shape": "cube", "color": "red", "material": "metal", "size": "large",
                      "3d_coords": [0.0, 0.0, 0.0]},
                     {"shape": "sphere", "color": "red", "material": "metal", "size": "large",
                      "3d_coords": [1.0, 0.0, 0.0]}],
         "directions": copy.deepcopy(AXIS_DIRECTIONS)}
    d.update(extra)
    return d


_NO_REL = {"left": [[], []], "right": [[], []], "front": [[], []], "behind": [[], []]}
_LEFT_OF_CUBE = ["count", "relate[left]", "unique", "filter_shape[cube]", "scene"]


def test_regression_pixel_coords_mapping(clevr):
    """Was KeyError from ``_pixel``."""
    d = _two_objects()
    d["objects"][0]["pixel_coords"] = {"x": 1, "y": 2}
    with pytest.raises(FormatError, match=r"object 0, field 'pixel_coords'"):
        SymbolicScene.from_json(d, clevr)


@pytest.mark.parametrize("field", ["3d_coords", "pixel_coords"])
def test_regression_integer_beyond_float_range(clevr, field):
    """Was OverflowError."""
    d = _two_objects()
    d["objects"][0][field] = [10 ** 400, 0, 0]
    with pytest.raises(FormatError, match=field):
        SymbolicScene.from_json(d, clevr)


@pytest.mark.parametrize("vector", ["abc", {"x": 1}, [[1, 0], [0]], [-1.0, 0.0]])
def test_regression_bad_direction_vector(clevr, vector):
    """Was ValueError/TypeError from numpy, or for a 2-vector a numpy ValueError in ``relate``."""
    d = _two_objects()
    d["directions"]["left"] = vector
    with pytest.raises(FormatError, match=r"directions\.left"):
        SymbolicScene.from_json(d, clevr)


@pytest.mark.parametrize("entry", [1, None, 2.5])
def test_regression_relationships_entry_not_a_list(clevr, entry):
    """Was TypeError ('int' object is not iterable)."""
    with pytest.raises(FormatError, match=r"relationships\.left', object 0"):
        SymbolicScene.from_json(_two_objects(relationships=dict(_NO_REL, left=[entry, []])), clevr)


def test_regression_relationships_boolean_index(clevr):
    """Was accepted as object 1, then IndexError (numpy boolean mask) in from_scene."""
    with pytest.raises(InvalidObjectReference, match="no object True"):
        SymbolicScene.from_json(_two_objects(relationships=dict(_NO_REL, left=[[True], []])), clevr)


def test_regression_self_relation_keeps_the_contract(clevr):
    """A given relation of an object to itself: the probabilistic executor zeroed the diagonal
    (answer 0), the deterministic one kept it (answer 1)."""
    scene = SymbolicScene.from_json(_two_objects(relationships=dict(_NO_REL, left=[[0], []])), clevr)
    program = Program.from_prefix(_LEFT_OF_CUBE)
    assert DeterministicExecutor(clevr).run(program, scene).answer == 1
    for mode, dtype in CONFIGS:
        ex = ProbabilisticExecutor(clevr, mode=mode, dtype=dtype)
        assert ex.run(program, scene).answer == 1
        assert ex.run_batch([program], [scene], [0]) == [1]


def test_regression_partname_answers_with_one_spoken_form_are_merged(superclevr):
    """17 pairs of part names share a spoken answer (front_left_wheel / wheel_front_left, ...):
    the distribution dict overwrote instead of adding (summing to 0.7 here) and the answer was the
    argmax of a column ("hood", 0.4) instead of the answer ("front left wheel", 0.3 + 0.3)."""
    d = {"objects": [{"shape": "truck", "color": "red", "material": "metal", "size": "large",
                      "3d_coords": [0.0, 0.0, 0.0]},
                     {"shape": "articulated", "color": "red", "material": "metal", "size": "large",
                      "3d_coords": [2.0, 0.0, 0.0]}],
         "directions": copy.deepcopy(AXIS_DIRECTIONS)}
    scene = SymbolicScene.from_json(d, superclevr)
    hard = SceneLikelihoods.from_scene(scene)
    names = superclevr.part_names
    pe = np.zeros((2, len(names)))
    # odds 3 : 3 : 4 -> q = 0.3 (truck front_left_wheel), 0.3 (bus wheel_front_left), 0.4 (truck hood)
    pe[0, names.index("front_left_wheel")] = 0.75
    pe[1, names.index("wheel_front_left")] = 0.75
    pe[0, names.index("hood")] = 0.8
    lik = SceneLikelihoods(superclevr, hard.exist, hard.attributes, hard.positions, hard.position_std,
                           hard.directions, hard.margin, hard.relations, pe, None)
    program = Program.from_prefix(["partquery_partname", "unique", "object2part", "scene"])
    for mode, dtype in CONFIGS:
        ex = ProbabilisticExecutor(superclevr, mode=mode, dtype=dtype)
        res = ex.run(program, lik)
        assert res.distribution == pytest.approx({"front left wheel": 0.6, "hood": 0.4}, abs=1e-6)
        assert res.answer == "front left wheel"
        assert ex.run_batch([program], [lik], [0]) == ["front left wheel"]


def test_regression_from_prefix_deep_program():
    """Was RecursionError past ~1000 tokens (``to_prefix`` is iterative, so the round trip broke)."""
    tokens = ["exist"] + ["same_color", "unique"] * 600 + ["scene"]
    program = Program.from_prefix(tokens)
    assert len(program) == 1202 and program.to_prefix() == tokens
    assert Program.from_json(program.to_json()) == program


# ====================================================================== regression
@pytest.mark.parametrize("mode", ["threshold", "exact"])
def test_regression_unique_group_with_one_underflowing_row_is_normalised(clevr, mode):
    """Was: once one row of a batched unique group underflowed (redone in log space), the other
    rows were returned unnormalised, so batching changed another question's answer."""
    def cube(color, x):
        return {"shape": "cube", "color": color, "material": "metal", "size": "large", "3d_coords": [x, 0.0, 0.0]}

    # scene 0: 8 objects present with probability 1 - 2**-24 (the float32 just below 1): in float32
    # Z = P(exactly one) = 8 p (1 - p)**7 = 2**-165 underflows to 0 although it is not 0
    many = SymbolicScene.from_json({"objects": [cube("gray", float(i)) for i in range(8)],
                                    "directions": copy.deepcopy(AXIS_DIRECTIONS)}, clevr)
    lik0 = SceneLikelihoods.from_scene(many)
    lik0.exist[:] = 1.0 - 2.0 ** -24
    # scene 1: cube 0 red with probability 0.5 (else blue), cube 1 blue, right of cube 0
    two = SymbolicScene.from_json({"objects": [cube("red", 0.0), cube("blue", 1.0)],
                                   "directions": copy.deepcopy(AXIS_DIRECTIONS)}, clevr)
    lik1 = SceneLikelihoods.from_scene(two)
    blue = clevr.values("color").index("blue")
    lik1.attributes["color"][0, :] = 0.0
    lik1.attributes["color"][0, [clevr.values("color").index("red"), blue]] = 0.5
    q0 = Program.from_prefix(["exist", "relate[left]", "unique", "scene"])  # unique at height 2
    q1 = Program.from_prefix(["exist", "relate[right]", "unique", "filter_color[red]", "scene"])  # height 2
    ex = ProbabilisticExecutor(clevr, mode=mode, dtype="float32")
    alone = ex.run(q1, lik1)
    assert alone.answer == "yes" and alone.distribution == {"yes": 1.0}  # q = [1, 0]: cube 1 is right of it
    # batched with q0, q1 gets q = [0.5, 0] (= w, unnormalised): threshold "no", exact {yes: 0.5, no: 0.5}
    assert ex.run_batch([q0, q1], [lik0, lik1], [0, 1])[1] == "yes"
    assert ex.distributions(ex.prepare([q0, q1], [lik0, lik1], [0, 1]))[1] == {"yes": 1.0}
