"""P-NSVQA's executor: conformance on one-hot likelihoods, one test body over both executors,
the probabilistic rules on soft likelihoods, and the torch backend.

The contract (docs/executors.md, "The one-hot contract"): with one-hot likelihoods the
probabilistic executor answers exactly like the deterministic one, in both count/exist modes, and
fails where it fails.
"""
from __future__ import annotations

import numpy as np
import pytest

from executors import (DeterministicExecutor, ExecutionError, InvalidProgram, Program,
                       ProbabilisticExecutor, SceneLikelihoods, SymbolicScene, UniquenessError)
from executors.io import normalize_answer

MODES = ("threshold", "exact")


# ---------------------------------------------------------------------- reference conformance
@pytest.fixture(scope="module", params=["clevr_data", "sc_objects", "sc_parts"])
def dataset(request):
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reference_answers_on_one_hot_likelihoods(dataset, mode, dtype):
    ex = ProbabilisticExecutor(dataset.ontology, mode=mode, dtype=dtype)
    liks = [SceneLikelihoods.from_scene(s) for s in dataset.scenes]
    answers = ex.run_batch(dataset.programs, liks, dataset.scene_of)
    wrong = [(i, a, q["answer"]) for i, (a, q) in enumerate(zip(answers, dataset.questions))
             if isinstance(a, ExecutionError) or normalize_answer(a) != normalize_answer(q["answer"])]
    assert wrong == [], f"{dataset.name} {mode} {dtype}: {len(wrong)} wrong, first {wrong[:5]}"


def test_reference_answers_in_small_chunks(sc_parts):
    """Chunking (max_batch) does not change answers; part and object questions mix."""
    ex = ProbabilisticExecutor(sc_parts.ontology, mode="exact", max_batch=37)
    chunks = ex.prepare(sc_parts.programs, sc_parts.scenes, sc_parts.scene_of)
    assert len(chunks) == -(-len(sc_parts.programs) // 37)
    answers = ex.execute(chunks)
    assert [normalize_answer(a) for a in answers] == [normalize_answer(q["answer"]) for q in sc_parts.questions]


# ---------------------------------------------------------------------- one body, both executors
def _det(scene, program):
    return DeterministicExecutor(scene.ontology).run(program, scene).answer


def _prob(mode):
    def run(scene, program):
        return ProbabilisticExecutor(scene.ontology, mode=mode).run(program, SceneLikelihoods.from_scene(scene)).answer
    return run


@pytest.fixture(params=["deterministic", "threshold", "exact"])
def execute(request):
    return _det if request.param == "deterministic" else _prob(request.param)


TRUCK = ("unique", "filter_shape[truck]", "scene")
TANDEM = ("unique", "filter_shape[tandem]", "scene")


@pytest.mark.parametrize("tokens, answer", [
    (("count", "filter_color[red]", "scene"), 2),
    (("count", "filter_size[small]", "filter_color[blue]", "scene"), 1),
    (("exist", "filter_shape[aeroplane]", "scene"), "no"),
    (("exist", "filter_shape[bicycle]", "scene"), "yes"),
    (("count", "filter_shape[car]", "scene"), 2),
    (("query_shape",) + TANDEM, "tandem bike"),
    (("query_texture",) + TANDEM, "none"),
    (("count", "relate[right]") + TRUCK, 1),            # the scene's relationships: right of 0 is [2]
    (("count", "same_color") + TANDEM, 1),
    (("count", "union", "filter_size[small]", "scene", "filter_shape[truck]", "scene"), 2),
    (("count", "intersect", "filter_color[red]", "scene", "filter_material[rubber]", "scene"), 1),
    (("greater_than", "count", "filter_color[red]", "scene", "count", "filter_color[blue]", "scene"), "yes"),
    (("less_than", "count", "filter_color[red]", "scene", "count", "filter_color[blue]", "scene"), "no"),
    (("equal_integer", "count", "filter_size[large]", "scene", "count", "filter_color[red]", "scene"), "yes"),
    (("equal_color", "query_color") + TRUCK + ("query_color",) + TANDEM, "yes"),
    (("equal_object",) + TRUCK + TANDEM, "no"),
    (("count", "part2object", "partfilter_partname[wheel]", "object2part", "scene"), 3),
    (("query_color", "unique", "part2object", "object2part") + TRUCK, "red"),
    (("partquery_partname", "unique", "partfilter_color[green]", "object2part", "scene"), "front wheel"),
    (("partquery_color", "uniquepart", "partfilter_partname[back_left_wheel]", "object2part", "scene"), "yellow"),
    (("partquery_material", "uniquepart", "partfilter_partname[fork]", "object2part", "scene"), "metal"),
    (("query_shape", "unique", "part2object", "uniquepart", "partfilter_partname[wheel_front]",
      "object2part", "scene"), "tandem bike"),
])
def test_functions_on_both_executors(execute, superclevr, sc_json, tokens, answer):
    scene = SymbolicScene.from_json(sc_json, superclevr)
    assert execute(scene, Program.from_prefix(tokens)) == answer


@pytest.mark.parametrize("tokens, node, function", [
    (("query_shape", "unique", "filter_shape[bus]", "scene"), 2, "unique"),          # empty set
    (("query_shape", "unique", "filter_color[red]", "scene"), 2, "unique"),          # two elements
    (("partquery_color", "uniquepart", "partfilter_partname[door]", "object2part", "scene"), 3, "uniquepart"),
    (("count", "relate[left]", "unique", "filter_color[red]", "scene"), 2, "unique"),
])
def test_uniqueness_failures_on_both_executors(execute, superclevr, sc_json, tokens, node, function):
    scene = SymbolicScene.from_json(sc_json, superclevr)
    with pytest.raises(UniquenessError) as exc:
        execute(scene, Program.from_prefix(tokens))
    assert (exc.type, exc.value.node, exc.value.function) == (UniquenessError, node, function)


def test_first_failing_node_is_reported_in_a_batch(superclevr, sc_json):
    """Two failing uniques in independent branches: both executors name the earlier node."""
    scene = SymbolicScene.from_json(sc_json, superclevr)
    p = Program.from_json([
        {"type": "scene", "inputs": []},
        {"type": "filter_color", "inputs": [0], "value_inputs": ["red"]},
        {"type": "unique", "inputs": [1]},                                  # node 2: two red objects
        {"type": "scene", "inputs": []},
        {"type": "filter_shape", "inputs": [3], "value_inputs": ["bus"]},
        {"type": "unique", "inputs": [4]},                                  # node 5: no bus
        {"type": "equal_object", "inputs": [5, 2]},
    ], superclevr)
    det = DeterministicExecutor(superclevr).run_batch([p], [scene], [0])[0]
    for mode in MODES:
        prob = ProbabilisticExecutor(superclevr, mode=mode).run_batch([p], [scene], [0])[0]
        assert type(prob) is type(det) is UniquenessError
        assert prob.node == det.node == 2


CHAINS = [("query_shape", "unique", "filter_color[red]", "scene"),                       # fails at node 2
          ("query_shape", "unique", "filter_size[large]", "filter_color[red]", "scene"),  # fails at node 3
          ("query_shape", "unique", "filter_material[rubber]", "filter_size[large]", "filter_color[red]", "scene"),
          ("query_shape", "unique", "filter_color[blue]", "scene"),
          ("exist", "filter_size[small]", "filter_color[red]", "scene"),
          ("count", "filter_color[red]", "scene")]


def test_filter_chains_of_any_width_batch_like_single_runs(superclevr, sc_json):
    """Questions whose filter chains differ in length share one skeleton and one group per step
    (narrower chains padded): every answer, failing node and distribution is that of the
    question run alone (and of the deterministic executor)."""
    scene = SymbolicScene.from_json(sc_json, superclevr)
    programs = [Program.from_prefix(t) for t in CHAINS]
    det = DeterministicExecutor(superclevr).run_batch(programs, [scene], [0] * len(programs))
    ex = ProbabilisticExecutor(superclevr, mode="exact", dtype="float64")
    got = ex.run_batch(programs, [scene], [0] * len(programs))
    assert [type(g) for g in got] == [type(d) for d in det]
    assert [(g.node, g.function) for g in got[:2]] == [(d.node, d.function) for d in det[:2]] == [(2, "unique"),
                                                                                                    (3, "unique")]
    assert got[2:] == det[2:] == ["tandem bike", "suv", "no", 2]
    lik = _soft(superclevr, sc_json)
    batched = ex.distributions(ex.prepare(programs, [lik], [0] * len(programs)))
    for program, dist in zip(programs, batched):
        single = ex.run(program, lik).distribution
        assert set(single) == set(dist)
        assert all(dist[k] == pytest.approx(v, abs=1e-12) for k, v in single.items())


def test_invalid_program_names_the_question(superclevr, sc_json):
    scene = SymbolicScene.from_json(sc_json, superclevr)
    good = Program.from_prefix(["count", "scene"])
    bad = Program.from_prefix(["count", "filter_color[pink]", "scene"])
    with pytest.raises(InvalidProgram, match=r"^question 1: node 1 \(filter_color\): value 'pink'"):
        ProbabilisticExecutor(superclevr).prepare([good, bad], [scene], [0, 0])


# ---------------------------------------------------------------------- soft likelihoods
def _soft(superclevr, sc_json, exist=(0.9, 0.6, 0.8)):
    lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(sc_json, superclevr))
    lik.exist = np.asarray(exist, dtype=float)
    col = lik.attributes["color"]
    lik.attributes["color"] = 0.8 * col + 0.2 / col.shape[1]
    return SceneLikelihoods(superclevr, lik.exist, lik.attributes, lik.positions, lik.position_std,
                            lik.directions, lik.margin, lik.relations, lik.part_exist, lik.part_attributes)


def test_exact_count_is_poisson_binomial(superclevr, sc_json):
    lik = _soft(superclevr, sc_json)
    r = ProbabilisticExecutor(superclevr, mode="exact", dtype="float64").run(
        Program.from_prefix(["count", "filter_color[red]", "scene"]), lik)
    p = r.trace[1]  # membership of each object in the red set
    red = 0.8 + 0.2 / 8
    np.testing.assert_allclose(p, [0.9 * red, 0.6 * 0.2 / 8, 0.8 * red])
    # brute force over the 2^3 outcomes
    want = np.zeros(4)
    for bits in range(8):
        k = bin(bits).count("1")
        want[k] += np.prod([p[i] if bits >> i & 1 else 1 - p[i] for i in range(3)])
    got = np.array([r.distribution.get(k, 0.0) for k in range(4)])
    np.testing.assert_allclose(got, want, atol=1e-12)
    assert r.answer == int(np.argmax(want))


def test_threshold_count_selects_at_0_7(superclevr, sc_json):
    lik = _soft(superclevr, sc_json, exist=(0.95, 1.0, 0.7))
    prog = Program.from_prefix(["count", "filter_shape[tandem]", "scene"])
    assert ProbabilisticExecutor(superclevr, mode="threshold", dtype="float64").run(prog, lik).answer == 1
    lik.exist[2] = 0.69
    assert ProbabilisticExecutor(superclevr, mode="threshold", dtype="float64").run(prog, lik).answer == 0
    ex = ProbabilisticExecutor(superclevr, mode="threshold", threshold=0.5, dtype="float64")
    assert ex.run(prog, lik).answer == 1


def test_exact_exist_and_unique_conditioning(superclevr, sc_json):
    lik = _soft(superclevr, sc_json)
    ex = ProbabilisticExecutor(superclevr, mode="exact", dtype="float64")
    r = ex.run(Program.from_prefix(["exist", "filter_color[red]", "scene"]), lik)
    p = r.trace[1]
    assert r.distribution["yes"] == pytest.approx(1 - np.prod(1 - p))
    # unique: posterior of "which one" given exactly one, and its confidence P(exactly one)
    r = ex.run(Program.from_prefix(["query_shape", "unique", "filter_color[red]", "scene"]), lik)
    p = r.trace[1]
    w = np.array([p[i] * np.prod([1 - p[j] for j in range(3) if j != i]) for i in range(3)])
    np.testing.assert_allclose(r.trace[2], w / w.sum())
    assert r.confidence[2] == pytest.approx(w.sum())
    assert sum(r.distribution.values()) == pytest.approx(1.0)
    assert r.answer in ("truck", "tandem bike")


def test_spatial_likelihood_without_relationships(clevr, clevr_json):
    """Positions with uncertainty: relate gives a graded likelihood; with zero uncertainty it is
    the deterministic margin rule."""
    scene = SymbolicScene.from_json(clevr_json, clevr)
    lik = SceneLikelihoods.from_scene(scene)
    soft = SceneLikelihoods(clevr, lik.exist, lik.attributes, lik.positions, np.full(3, 0.5),
                            lik.directions, lik.margin, None)
    prog = Program.from_prefix(["count", "relate[right]", "unique", "filter_shape[cylinder]", "scene"])
    ex = ProbabilisticExecutor(clevr, mode="exact", dtype="float64")
    p = ex.run(prog, soft).trace[-2]
    assert 0.5 < p[1] < 1 and 0.5 < p[0] < p[1] and p[2] == 0  # farther right = more likely
    hard = SceneLikelihoods(clevr, lik.exist, lik.attributes, lik.positions, np.zeros(3),
                            lik.directions, lik.margin, None)
    assert ex.run(prog, hard).answer == DeterministicExecutor(clevr).run(prog, scene).answer == 2


# ---------------------------------------------------------------------- torch backend
def test_torch_cpu_backend_matches_numpy(sc_parts):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    for mode in MODES:
        a = ProbabilisticExecutor(sc_parts.ontology, mode=mode, device="cpu").run_batch(
            sc_parts.programs, sc_parts.scenes, sc_parts.scene_of)
        b = ProbabilisticExecutor(sc_parts.ontology, mode=mode).run_batch(
            sc_parts.programs, sc_parts.scenes, sc_parts.scene_of)
        assert a == b
        assert [normalize_answer(x) for x in a] == [normalize_answer(q["answer"]) for q in sc_parts.questions]
