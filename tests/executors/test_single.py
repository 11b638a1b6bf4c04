"""One probabilistic question on Python floats (executors.single) against the batch path: the
same answers, distributions and traces up to float32 rounding, on soft likelihoods."""
from __future__ import annotations

import numpy as np
import pytest

from executors import ProbabilisticExecutor, Program, SceneLikelihoods, SymbolicScene, UniquenessError
from executors import single
from executors.probabilistic import SceneBatch, _filter_tables

PROGRAMS = [
    "count filter_color[red] scene",
    "exist filter_material[metal] filter_shape[cube] scene",
    "query_shape unique filter_size[large] scene",
    "count relate[left] unique filter_color[blue] scene",
    "count same_color unique filter_shape[sphere] scene",
    "count union filter_color[red] scene filter_shape[cube] scene",
    "exist intersect filter_color[red] scene filter_size[small] scene",
    "equal_color query_color unique filter_shape[cube] scene query_color unique filter_shape[sphere] scene",
    "equal_object unique filter_shape[cube] scene unique filter_color[blue] scene",
    "less_than count filter_color[red] scene count filter_material[metal] scene",
    "greater_than count filter_color[red] scene count filter_material[metal] scene",
    "equal_integer count filter_color[red] scene count filter_size[small] scene",
]


def _soft(clevr, clevr_json):
    lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(clevr_json, clevr))
    rng = np.random.default_rng(0)
    attrs = {a: 0.6 * v + 0.4 * rng.dirichlet(np.ones(v.shape[1]), size=v.shape[0])
             for a, v in lik.attributes.items()}
    return SceneLikelihoods(clevr, np.array([0.9, 0.75, 0.85]), attrs, lik.positions, np.full(3, 0.3),
                            lik.directions, lik.margin, None)


@pytest.mark.parametrize("mode", ["exact", "threshold"])
@pytest.mark.parametrize("tokens", PROGRAMS)
def test_single_question_matches_the_batch_path(clevr, clevr_json, mode, tokens):
    lik = _soft(clevr, clevr_json)
    prog = Program.from_prefix(tokens)
    assert single.plan(prog, clevr) is not None  # this question runs on Python floats
    ex = ProbabilisticExecutor(clevr, mode=mode)  # float32: the batch path's default
    r = ex.run(prog, lik)
    (ans, dist), = ex.run_batch_distributions([prog], [lik], [0])
    assert r.answer == ans
    assert r.distribution.keys() == dist.keys()
    np.testing.assert_allclose([r.distribution[k] for k in dist], list(dist.values()), rtol=1e-5, atol=1e-6)
    assert len(r.trace) == len(prog)
    for t in r.trace:  # object rows are float64 arrays of the scene's objects, values dicts
        assert (isinstance(t, np.ndarray) and t.dtype == np.float64 and t.shape == (3,)) or isinstance(t, dict)


def test_single_question_uniqueness_failure_cuts_the_trace(clevr, clevr_json):
    scene = SymbolicScene.from_json(clevr_json, clevr)
    prog = Program.from_prefix("query_color unique filter_color[purple] scene")
    with pytest.raises(UniquenessError) as e:
        ProbabilisticExecutor(clevr, mode="exact").run(prog, scene)
    assert e.value.node == 2 and e.value.function == "unique"
    assert e.value.trace[2:] == [None, None] and list(e.value.trace[0]) == [1.0, 1.0, 1.0]
    assert e.value.confidence == [None, None, None, None]


def test_symbolic_tables_equal_the_batch_tables(clevr, clevr_json, superclevr, sc_json):
    for onto, rec in ((clevr, clevr_json), (superclevr, sc_json)):
        scene = SymbolicScene.from_json(rec, onto)
        be = ProbabilisticExecutor(onto, dtype="float64").be
        for s in (scene, SymbolicScene(onto, [])):
            got = single.symbolic_tables(s, _filter_tables(onto))
            want = single.tables(SceneBatch.from_symbolic([s], onto, be))
            assert [np.asarray(g).tolist() for g in got[1:6]] == [np.asarray(w).tolist() for w in want[1:6]]
            assert got[0] == want[0] == len(s)


def test_from_symbolic_equals_the_one_hot_likelihoods_batch(clevr, clevr_json):
    scenes = [SymbolicScene.from_json(clevr_json, clevr), SymbolicScene(clevr, [])]
    be = ProbabilisticExecutor(clevr).be
    a = SceneBatch.from_symbolic(scenes, clevr, be)
    b = SceneBatch([SceneLikelihoods.from_scene(s) for s in scenes], clevr, be, False)
    for f in ("E", "A", "Ft", "Rf", "SAMEf", "attr_mask_t"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert (a.N, a.n_objects, a.filter_col) == (b.N, b.n_objects, b.filter_col)


def test_part_programs_take_the_batch_path(superclevr, sc_json):
    prog = Program.from_prefix("partquery_color unique partfilter_partname[hood] object2part unique "
                               "filter_shape[truck] scene")
    assert single.plan(prog, superclevr) is None
    scene = SymbolicScene.from_json(sc_json, superclevr)
    assert ProbabilisticExecutor(superclevr).run(prog, scene).answer == "red"


def test_count_and_unique_kernels_match_the_batch_kernels():
    from executors import kernels
    be = kernels.NumpyBackend("float64")
    rng = np.random.default_rng(3)
    for _ in range(200):
        p = rng.choice([0.0, 1.0, 0.3, 0.9], size=rng.integers(1, 8)).tolist()
        want = kernels.poisson_binomial(be, np.array([p]))[0]
        np.testing.assert_allclose(single.poisson_binomial(p), want, atol=1e-12)
        q, ok, z = kernels.exactly_one(be, np.array([p]))
        got = single.exactly_one(p)
        assert (got is not None) == bool(ok[0])
        if got is not None:
            np.testing.assert_allclose(got[0], q[0], atol=1e-12)
            assert got[1] == pytest.approx(float(z[0]))
