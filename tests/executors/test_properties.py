"""Property-based tests of the executors (hypothesis), over both ontologies: the contract, round
trips and soft likelihoods. Strategies and settings: ``property_strategies.py``; robustness to
mutated and garbage input: ``test_properties_robustness.py``; the bugs these properties found:
``test_properties_regressions.py``.

Properties:

1. The contract: on one-hot likelihoods the probabilistic executor, in both modes and in float32
   and float64, answers exactly like the deterministic one (and step by step, its trace agrees),
   one question at a time and batched over several scenes; where the deterministic one raises an
   :class:`ExecutionError`, the probabilistic one raises (``run``) or returns (``run_batch``) the
   same type.
3. Round trips: JSON and prefix forms; the canonical form answers like the program.
4. Probabilistic sanity on soft likelihoods: answer distributions are distributions whose most
   likely value is the answer; exact ``exist`` / ``count`` are 1 - prod(1 - p) / the
   Poisson-binomial of the input set's trace, threshold ones count p >= 0.7; ``unique``'s
   confidence is P(exactly one) and its posterior p_i prod_{j != i}(1 - p_j) / Z, and where it
   succeeds some p > 0 and at most one p = 1; batching does not change any distribution.

Every test is derandomized with no example database, so CI sees the same examples each run.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import event, note, strategies as st

from executors import (FUNCTIONS, SIGNATURES, DeterministicExecutor, ExecutionError, Node, Program,
                       ProbabilisticExecutor, SceneLikelihoods, SymbolicScene, UniquenessError, load_ontology)
from executors.dsl import ANSWER_TYPES, BOOL, INTEGER, OBJECT, OBJECT_SET, PART, PART_SET

from .property_strategies import (CONFIGS, ONTOLOGIES, _outcome, _property, assert_one_hot_trace,
                                  assert_same_outcome, draw_scene, grammar, programs, reachable, typed_programs)


# ====================================================================== generated programs are valid
@_property(150)
def test_generated_programs_validate(onto_name, data):
    onto = load_ontology(onto_name)
    program, types = data.draw(typed_programs(onto_name))
    assert program.validate(onto) == types
    assert Program.from_json(program.to_json(), onto) == program  # from_json validates too
    assert all(program[i].inputs == () or max(program[i].inputs) < i for i in range(len(program)))


@_property(100)
def test_generated_programs_with_shared_nodes_are_refused(onto_name, data):
    """A program validates exactly when no node's result is an input twice (a program is a tree)."""
    onto = load_ontology(onto_name)
    program, types = data.draw(typed_programs(onto_name, dag=True))
    refs = [j for node in program for j in node.inputs]
    shared = len(refs) != len(set(refs))
    event(f"shared: {shared}")
    for read in (lambda: program.validate(onto), lambda: Program.from_json(program.to_json(), onto),
                 program.to_prefix):
        if shared:
            with pytest.raises(ExecutionError, match="a program is a tree"):
                read()
        else:
            read()


def test_grammar_covers_every_function():
    """Each function of the table is reachable by the generator in some ontology, and the part
    functions only in an ontology with parts."""
    used = {s.name for name in ONTOLOGIES for opts in grammar(name).productions.values() for s, _ in opts}
    assert used == set(FUNCTIONS)
    clevr = {s.name for opts in grammar("clevr").productions.values() for s, _ in opts}
    assert not any(f.startswith("part") or f in ("object2part", "uniquepart") or f.endswith("texture")
                   for f in clevr)
    assert set(grammar("superclevr").answer_types) == set(ANSWER_TYPES)


# ====================================================================== property 1: the contract
@_property(200)
def test_one_hot_contract_single(onto_name, data):
    """``run``: same answer, same answer type, same trace step by step, or same exception type."""
    onto = load_ontology(onto_name)
    scene = draw_scene(data, onto_name)
    program = data.draw(programs(onto_name, scene=scene))
    note(f"program: {json.dumps(program.to_json())}")
    lik = SceneLikelihoods.from_scene(scene)
    types = program.validate(onto)
    det = _outcome(lambda: DeterministicExecutor(onto).run(program, scene))
    event(f"answer {types[-1]}: " + (type(det).__name__ if isinstance(det, ExecutionError) else "ok"))
    for mode, dtype in CONFIGS:
        ex = ProbabilisticExecutor(onto, mode=mode, dtype=dtype)
        got = _outcome(lambda: ex.run(program, lik))
        what = f"{mode}/{dtype} run"
        if isinstance(det, ExecutionError):
            assert_same_outcome(det, got, what)
            continue
        assert_same_outcome(det.answer, getattr(got, "answer", got), what)
        assert got.answer_type == det.answer_type == types[-1]
        assert_one_hot_trace(onto, scene, types, det.trace, got.trace, what)
        assert got.distribution == {det.answer: 1.0}


@_property(80)
def test_one_hot_contract_batched(onto_name, data):
    """``run_batch`` over several scenes and many programs of different structure (grouped by the
    scheduler, chunked by ``max_batch``) answers like the deterministic ``run_batch`` and ``run``."""
    onto = load_ontology(onto_name)
    scenes = [draw_scene(data, onto_name)
              for _ in range(data.draw(st.integers(1, 4)))]
    index = data.draw(st.lists(st.integers(0, len(scenes) - 1), min_size=1, max_size=24))
    progs = [data.draw(programs(onto_name, scene=scenes[k])) for k in index]
    note(f"programs: {json.dumps([p.to_json() for p in progs])}; scene_index {index}")
    dex = DeterministicExecutor(onto)
    det = dex.run_batch(progs, scenes, index)
    singles = [_outcome(lambda: dex.run(p, scenes[k]).answer) for p, k in zip(progs, index)]
    for q, (a, b) in enumerate(zip(singles, det)):
        assert_same_outcome(a, b, f"deterministic run_batch, question {q}")
    liks = [SceneLikelihoods.from_scene(s) for s in scenes]
    max_batch = data.draw(st.sampled_from([8192, 1, 3, 7]))
    for mode, dtype in CONFIGS:
        ex = ProbabilisticExecutor(onto, mode=mode, dtype=dtype, max_batch=max_batch)
        got = ex.run_batch(progs, liks, index)
        assert len(got) == len(progs)
        for q, (a, b) in enumerate(zip(det, got)):
            assert_same_outcome(a, b, f"{mode}/{dtype} run_batch (max_batch {max_batch}), question {q}")
    # symbolic scenes are accepted in place of likelihoods
    got = ProbabilisticExecutor(onto, mode="exact").run_batch(progs, scenes, index)
    for q, (a, b) in enumerate(zip(det, got)):
        assert_same_outcome(a, b, f"run_batch on SymbolicScenes, question {q}")


@_property(15)
def test_one_hot_contract_batched_torch_cpu(onto_name, data):
    """The torch backend (CPU) keeps the contract too."""
    pytest.importorskip("torch")
    onto = load_ontology(onto_name)
    scenes = [draw_scene(data, onto_name)
              for _ in range(data.draw(st.integers(1, 3)))]
    index = data.draw(st.lists(st.integers(0, len(scenes) - 1), min_size=1, max_size=12))
    progs = [data.draw(programs(onto_name, scene=scenes[k])) for k in index]
    det = DeterministicExecutor(onto).run_batch(progs, scenes, index)
    for mode, dtype in CONFIGS:
        got = ProbabilisticExecutor(onto, mode=mode, dtype=dtype, device="cpu").run_batch(progs, scenes, index)
        for q, (a, b) in enumerate(zip(det, got)):
            assert_same_outcome(a, b, f"torch {mode}/{dtype}, question {q}")


# ====================================================================== property 3: round trips
@_property(150)
def test_round_trips(onto_name, data):
    onto = load_ontology(onto_name)
    program, types = data.draw(typed_programs(onto_name))
    note(f"program: {json.dumps(program.to_json())}")
    # JSON, both key spellings, through text
    for key in ("type", "function"):
        js = program.to_json(key=key)
        assert Program.from_json(js) == program
        assert Program.from_json(json.loads(json.dumps(js)), onto) == program
    # prefix tokens
    prefix = program.to_prefix()
    canon = Program.from_prefix(prefix)
    assert canon.to_prefix() == prefix
    assert canon == program.canonical() == canon.canonical()
    assert canon.validate(onto)[-1] == types[-1]
    for tok in prefix:
        from executors.program import parse_token
        fn, vals = parse_token(tok)
        assert Node(fn, (), vals).token() == tok
    if reachable(program) == set(range(len(program))) and all(
            sum(n.inputs.count(i) for n in program) <= 1 for i in range(len(program))):
        # a tree: the canonical form renumbers its nodes (children left to right), keeps them all
        assert sorted(n.token() for n in canon) == sorted(n.token() for n in program)
    # the canonical form answers like the program (dead nodes of the program may fail alone)
    scene = draw_scene(data, onto_name)
    ex = DeterministicExecutor(onto)
    a = _outcome(lambda: ex.run(program, scene).answer)
    b = _outcome(lambda: ex.run(canon, scene).answer)
    if not isinstance(a, ExecutionError) or reachable(program) == set(range(len(program))):
        assert_same_outcome(a, b, "canonical form")
        assert_same_outcome(a, _outcome(lambda: ProbabilisticExecutor(onto).run(canon, scene).answer),
                            "canonical form, probabilistic")


# ====================================================================== property 4: soft likelihoods
@st.composite
def soft_likelihoods(draw, scene: SymbolicScene) -> SceneLikelihoods:
    """One-hot likelihoods of ``scene`` mixed with Dirichlet noise, exist in (0, 1], soft
    relations (given or spatial with position noise), soft parts (only parts of the shape)."""
    onto = scene.ontology
    hard = SceneLikelihoods.from_scene(scene)
    n = len(scene)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    w = draw(st.one_of(st.sampled_from([0.0, 0.05, 0.3, 1.0]), st.floats(0, 1)))
    alpha = draw(st.sampled_from([1.0, 0.2, 5.0]))

    def mix(onehot):
        noise = rng.dirichlet(np.full(onehot.shape[-1], alpha), size=onehot.shape[:-1])
        return (1 - w) * onehot + w * noise

    exist = {"one": np.ones(n), "uniform": 1.0 - rng.uniform(0, 1, n),
             "high": rng.uniform(0.6, 1.0, n), "tiny": rng.uniform(1e-6, 1e-2, n)}[
        draw(st.sampled_from(["one", "uniform", "high", "tiny"]))]
    attrs = {a: mix(m) for a, m in hard.attributes.items()}
    relations, std = None, rng.uniform(0, 0.5, n) if draw(st.booleans()) else np.zeros(n)
    if draw(st.booleans()):
        relations = {r: (1 - w) * m + w * rng.uniform(0, 1, (n, n)) for r, m in hard.relations.items()}
    part_exist = part_attrs = None
    if hard.part_exist is not None:
        valid = np.array([[p in onto.parts_of(o["shape"]) for p in onto.part_names] for o in scene.objects],
                         dtype=float).reshape(n, len(onto.part_names))
        part_exist = (1 - w) * hard.part_exist + w * rng.uniform(0, 1, hard.part_exist.shape) * valid
        part_attrs = {a: mix(np.asarray(m)) for a, m in hard.part_attributes.items()}
    return SceneLikelihoods(onto, exist, attrs, hard.positions, std, hard.directions, hard.margin,
                            relations, part_exist, part_attrs)


def _poisson_binomial(p: np.ndarray) -> np.ndarray:
    d = np.array([1.0])
    for x in p:
        d = np.convolve(d, [1.0 - x, x])
    return d


def _exactly_one(p: np.ndarray) -> float:
    return float(sum(p[i] * np.prod(np.delete(1.0 - p, i)) for i in range(len(p))))


def _answer_keys(onto, t: str, n: int) -> set:
    if t == BOOL:
        return {"yes", "no"}
    if t == INTEGER:
        return set(range(n + 1))
    if t == "Partname":
        return {onto.spoken_value("partname", p) for p in onto.part_names}
    a = t.lower()
    return {onto.spoken_value(a, v) for v in onto.values(a)}


def check_soft_result(onto, ex, program, types, n: int, res, tol: float) -> None:
    """The distribution, the trace of exist/count/unique nodes and the set memberships."""
    t = types[-1]
    dist = res.distribution
    assert dist and all(p > 0 for p in dist.values()), dist
    assert set(dist) <= _answer_keys(onto, t, n), dist
    total = sum(dist.values())
    assert abs(total - 1) <= tol, f"{t} distribution sums to {total}: {dist}"
    assert dist[res.answer] == max(dist.values()), (res.answer, dist)
    exact = ex.mode == "exact"
    for i, node in enumerate(program):
        sig = SIGNATURES[node.function]
        tr = res.trace[i]
        if types[i] in (OBJECT_SET, OBJECT, PART_SET, PART):
            assert np.all(tr >= 0) and np.all(tr <= 1 + tol), f"node {i}: {tr}"
        if sig.kind in ("exist", "count", "unique"):
            arr = np.asarray(res.trace[node.inputs[0]])
        if sig.kind == "exist":
            want = 1.0 - float(np.prod(1.0 - arr.astype(float))) if exact else float(np.any(arr >= ex.threshold))
            assert abs(tr.get("yes", 0.0) - want) <= tol, f"node {i} exist: {tr} vs {want} from {arr}"
            assert abs(sum(tr.values()) - 1) <= tol
        elif sig.kind == "count":
            want = (_poisson_binomial(arr.astype(float)) if exact
                    else np.eye(n + 1)[int(np.sum(arr >= ex.threshold))])
            got = np.array([tr.get(str(k), 0.0) for k in range(n + 1)])
            assert set(tr) <= {str(k) for k in range(n + 1)}, tr
            np.testing.assert_allclose(got, want, atol=tol, err_msg=f"node {i} count of {arr}")
        elif sig.kind == "unique":  # it succeeded: some p > 0 and at most one p = 1
            flat = arr.astype(float).reshape(-1)
            assert np.any(flat > 0) and np.sum(flat >= 1.0) <= 1, f"node {i}: unique of {flat} succeeded"
            z = _exactly_one(flat)
            assert abs(res.confidence[i] - z) <= tol, f"node {i}: confidence {res.confidence[i]} vs {z}"
            assert abs(float(np.sum(tr)) - 1) <= tol, f"node {i}: posterior {tr} of {flat}"
            want = np.array([flat[j] * np.prod(np.delete(1.0 - flat, j)) for j in range(len(flat))])
            if want.sum() > 1e-300:  # the posterior, independently (where it does not underflow)
                np.testing.assert_allclose(np.asarray(tr, dtype=float).reshape(-1), want / want.sum(),
                                           atol=10 * tol, err_msg=f"node {i}: posterior of {flat}")


@_property(100)
def test_soft_likelihoods_give_distributions(onto_name, data):
    onto = load_ontology(onto_name)
    scene = draw_scene(data, onto_name)
    lik = data.draw(soft_likelihoods(scene))
    note(f"likelihoods: {json.dumps(lik.to_json())}")
    pts = [data.draw(typed_programs(onto_name, scene=scene))
           for _ in range(data.draw(st.integers(1, 6)))]
    progs = [p for p, _ in pts]
    note(f"programs: {json.dumps([p.to_json() for p in progs])}")
    for mode, dtype in CONFIGS:
        ex = ProbabilisticExecutor(onto, mode=mode, dtype=dtype)
        tol = 1e-4 if dtype == "float32" else 1e-9
        singles = []
        for program, types in pts:
            res = _outcome(lambda: ex.run(program, lik))
            singles.append(res)
            if isinstance(res, ExecutionError):
                assert type(res) is UniquenessError, res
                continue
            check_soft_result(onto, ex, program, types, len(scene), res, tol)
        # batched (fused filter chains, grouped nodes) = one at a time
        batched = ex.distributions(ex.prepare(progs, [lik], [0] * len(progs)))
        answers = ex.run_batch(progs, [lik], [0] * len(progs))
        for q, (s, bd, ba) in enumerate(zip(singles, batched, answers)):
            if isinstance(s, ExecutionError):
                assert bd is None and type(ba) is type(s), (q, bd, ba)
                continue
            keys = set(s.distribution) | set(bd)
            for k in keys:
                assert abs(s.distribution.get(k, 0.0) - bd.get(k, 0.0)) <= tol, (q, k, s.distribution, bd)
            if ba != s.answer:  # only a tie may flip
                assert abs(bd.get(ba, 0.0) - bd.get(s.answer, 0.0)) <= tol, (q, ba, s.answer, bd)
