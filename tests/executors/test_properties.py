"""Property-based tests of the executors (hypothesis), over both ontologies.

Strategies: random scenes (0-6 objects, Super-CLEVR parts, 3D coordinates with CLEVR's or
axis-aligned ``directions``, with or without a ``relationships`` field) and random *valid*
programs generated type-directed from the signature table (:data:`executors.dsl.SIGNATURES`),
optionally sharing nodes (a DAG) and carrying dead nodes before the answer.

Properties:

1. The contract: on one-hot likelihoods the probabilistic executor, in both modes and in float32
   and float64, answers exactly like the deterministic one (and step by step, its trace agrees),
   one question at a time and batched over several scenes; where the deterministic one raises an
   :class:`ExecutionError`, the probabilistic one raises (``run``) or returns (``run_batch``) the
   same type.
2. Robustness: JSON garbage and mutated programs raise only :class:`ExecutionError` subclasses in
   ``Program.from_json`` and both executors; mutated scene dicts raise only :class:`FormatError`
   or :class:`ExecutionError` in ``SymbolicScene.from_json`` (and in the executors afterwards).
3. Round trips: JSON and prefix forms; the canonical form answers like the program.
4. Probabilistic sanity on soft likelihoods: answer distributions are distributions whose most
   likely value is the answer; exact ``exist`` / ``count`` are 1 - prod(1 - p) / the
   Poisson-binomial of the input set's trace, threshold ones count p >= 0.7; ``unique``'s
   confidence is P(exactly one) and its posterior p_i prod_{j != i}(1 - p_j) / Z, and where it
   succeeds some p > 0 and at most one p = 1; batching does not change any distribution.

Every test is derandomized with no example database, so CI sees the same examples each run; set
``NSVQA_HYPOTHESIS_SCALE=20`` (and ``NSVQA_HYPOTHESIS_RANDOM=1``) for a deeper local search. The
bugs these properties found are pinned as regression tests at the end of the file.
"""
from __future__ import annotations

import copy
import itertools
import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings, strategies as st

from executors import (FUNCTIONS, SIGNATURES, DeterministicExecutor, ExecutionError, FormatError,
                       InvalidObjectReference, Node, Program, ProbabilisticExecutor, SceneLikelihoods,
                       SymbolicScene, UniquenessError, load_ontology)
from executors.dsl import ANSWER_TYPES, BOOL, INTEGER, OBJECT, OBJECT_SET, PART, PART_SET, Signature

ONTOLOGIES = ("clevr", "superclevr")
CONFIGS = tuple(itertools.product(("threshold", "exact"), ("float32", "float64")))
_SCALE = float(os.environ.get("NSVQA_HYPOTHESIS_SCALE", "1"))


def _settings(n: int) -> settings:
    """Reproducible settings: fixed examples, no database, no deadline; ``n`` scaled by the env
    (``NSVQA_HYPOTHESIS_RANDOM=1`` draws fresh examples instead, for a local search)."""
    return settings(max_examples=max(1, int(n * _SCALE)), deadline=None, database=None,
                    derandomize=os.environ.get("NSVQA_HYPOTHESIS_RANDOM") != "1",
                    print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.large_base_example])


def _property(n: int):
    """The decorators of a property test ``test(onto_name, data)``: run on every ontology, under
    :func:`_settings` ``(n)``, ``data`` drawing its examples."""
    def decorate(test):
        return pytest.mark.parametrize("onto_name", ONTOLOGIES)(_settings(n)(given(data=st.data())(test)))
    return decorate


#: The direction vectors of every CLEVR v1.0 / Super-CLEVR scene.
CLEVR_DIRECTIONS = {"right": [0.6563112735748291, 0.7544902563095093, -0.0],
                    "behind": [-0.754490315914154, 0.6563112735748291, 0.0],
                    "above": [0.0, 0.0, 1.0], "below": [-0.0, -0.0, -1.0],
                    "left": [-0.6563112735748291, -0.7544902563095093, 0.0],
                    "front": [0.754490315914154, -0.6563112735748291, -0.0]}
AXIS_DIRECTIONS = {"right": [1.0, 0.0, 0.0], "left": [-1.0, 0.0, 0.0], "behind": [0.0, 1.0, 0.0],
                   "front": [0.0, -1.0, 0.0], "above": [0.0, 0.0, 1.0], "below": [0.0, 0.0, -1.0]}


# ====================================================================== grammar of valid programs
@dataclass(frozen=True)
class Grammar:
    """Productions of one ontology: type -> ((signature, input types), ...), simplest first."""

    productions: dict
    min_height: dict  # type -> height of the smallest tree yielding it (scene = 1)
    answer_types: tuple


def _allowed(sig: Signature, onto) -> bool:
    """The rules of ``Program.validate`` that depend on the ontology alone."""
    if sig.attribute is not None and sig.attribute not in onto.attributes:
        return False
    if (sig.kind.startswith("part") or sig.kind == "object2part") and not onto.has_parts:
        return False
    return True


@lru_cache(maxsize=None)
def grammar(name: str) -> Grammar:
    onto = load_ontology(name)
    prods: dict[str, list] = {}
    for sig in SIGNATURES.values():
        if not _allowed(sig, onto):
            continue
        for combo in itertools.product(*sig.inputs):
            try:
                out = sig.output_type(combo)
            except KeyError:  # a polymorphic output undefined for this input type
                continue
            prods.setdefault(out, []).append((sig, combo))
    height: dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for t, opts in prods.items():
            for _, combo in opts:
                if all(c in height for c in combo):
                    h = 1 + max((height[c] for c in combo), default=0)
                    if h < height.get(t, math.inf):
                        height[t], changed = h, True
    ordered = {t: tuple(sorted(o, key=lambda sc: (1 + max((height.get(c, 99) for c in sc[1]), default=0),
                                                    sc[0].name, sc[1])))
               for t, o in sorted(prods.items()) if t in height}
    # drop productions whose inputs no tree yields (unique of a PartSet without parts)
    ordered = {t: tuple(o for o in opts if all(c in height for c in o[1])) for t, opts in ordered.items()}
    return Grammar(ordered, height, tuple(sorted(t for t in ordered if t in ANSWER_TYPES)))


def value_choices(sig: Signature, onto) -> tuple[str, ...]:
    """Every ``value_inputs`` value ``validate`` accepts for ``sig`` (aliases included)."""
    if sig.value == "relation":
        return tuple(onto.relations)
    if sig.value == "partname":
        return tuple(sorted(onto.partname_filters))
    a = sig.value
    base = onto.filter_values(a) if sig.kind == "filter" else onto.values(a)
    return tuple(base) + tuple(sorted(onto.aliases.get(a, {})))


def scene_hints(scenes) -> dict[str, tuple[str, ...]]:
    """Values present in the scenes (attribute -> values, ``partname`` -> filter values), so that
    generated filters often keep something and ``unique`` often succeeds."""
    hints: dict[str, set] = {}
    for s in scenes:
        onto = s.ontology
        names = set()
        for i, o in enumerate(s.objects):
            for a, v in o.items():
                hints.setdefault(a, set()).add(v)
            cat = onto.category_of(o["shape"])
            if cat is not None:
                hints["shape"].add(cat)
            for name, pa in (s.parts[i] if s.parts else {}).items():
                names.add(name)
                for a, v in pa.items():
                    hints.setdefault(a, set()).add(v)
        if names:
            hints.setdefault("partname", set()).update(
                k for k, keep in onto.partname_filters.items() if names & set(keep))
    return {k: tuple(sorted(v)) for k, v in hints.items() if v}


@st.composite
def typed_programs(draw, onto_name: str, scene: SymbolicScene | None = None, max_depth: int = 6,
                   answer_type=None, dag: bool = True):
    """(Program, output type per node): a random valid program, nodes in post-order.

    Type-directed: for a wanted type pick a production whose smallest subtree fits the remaining
    depth, build its inputs recursively, draw its value from the ontology. With ``scene``, values
    lean to those in the scene and an ``Object`` / ``Part`` is often built as ``unique`` of filters
    aimed at one of its objects / parts, so that ``unique`` often succeeds. With ``dag`` an input
    may reuse an earlier node of its type, and dead nodes may precede the answer tree. Optional
    features are drawn as non-zero choices, so shrinking removes them.
    """
    onto, g = load_ontology(onto_name), grammar(onto_name)
    hints = scene_hints([scene]) if scene is not None else {}
    n_obj = len(scene) if scene is not None else 0
    with_parts = [(i, name) for i in range(n_obj) for name in sorted(scene.parts[i])] if n_obj else []
    nodes: list[Node] = []
    types: list[str] = []

    def emit(fn: str, inputs: tuple[int, ...], t: str, value: str | None = None) -> int:
        nodes.append(Node(fn, inputs, () if value is None else (value,)))
        types.append(t)
        return len(nodes) - 1

    def aimed_object(i: int, budget: int) -> int:
        """unique(filters with object i's values (...)) over the scene or a random set."""
        base = emit("scene", (), OBJECT_SET) if budget < 4 or draw(st.booleans()) else build(OBJECT_SET, budget - 3, True)
        o = scene.objects[i]
        for a in draw(st.lists(st.sampled_from(list(onto.attributes)), unique=True, min_size=1)):
            v = o[a]
            if a == "shape" and draw(st.integers(0, 3)) == 3:
                v = onto.category_of(v) or v
            base = emit(f"filter_{a}", (base,), OBJECT_SET, v)
        return emit("unique", (base,), OBJECT)

    def aimed_part(i: int, name: str, budget: int) -> int:
        owner = aimed_object(i, budget - 2) if draw(st.booleans()) else emit("scene", (), OBJECT_SET)
        ps = emit("partfilter_partname", (emit("object2part", (owner,), PART_SET),), PART_SET, name)
        if draw(st.booleans()):
            a = draw(st.sampled_from([a for a in onto.part_attributes if a in onto.attributes]))
            ps = emit(f"partfilter_{a}", (ps,), PART_SET, scene.parts[i][name][a])
        return emit(draw(st.sampled_from(["unique", "uniquepart"])), (ps,), PART)

    def build(t: str, budget: int, reuse: bool) -> int:
        if reuse and dag:
            same = [i for i, u in enumerate(types) if u == t]
            if same and draw(st.integers(0, 5)) == 5:
                return draw(st.sampled_from(same))
        if t == OBJECT and n_obj and draw(st.integers(0, 3)) != 0:
            return aimed_object(draw(st.integers(0, n_obj - 1)), budget)
        if t == PART and with_parts and draw(st.integers(0, 3)) != 0:
            return aimed_part(*draw(st.sampled_from(with_parts)), budget)
        opts = [o for o in g.productions[t]
                if 1 + max((g.min_height[c] for c in o[1]), default=0) <= budget]
        sig, combo = draw(st.sampled_from(opts))
        kids = tuple(build(c, budget - 1, True) for c in combo)
        value = None
        if sig.value is not None:
            allv = st.sampled_from(value_choices(sig, onto))
            hint = hints.get(sig.value, ())
            value = draw(st.one_of(allv, st.sampled_from(hint)) if hint else allv)
        return emit(sig.name, kids, t, value)

    if dag and draw(st.integers(0, 4)) == 4:  # dead code before the answer tree
        dead = draw(st.sampled_from(sorted(g.productions)))
        build(dead, max(3, g.min_height[dead]), False)
    t = answer_type or draw(st.sampled_from(g.answer_types))
    root = build(t, max_depth, False)
    assert root == len(nodes) - 1 and types[-1] == t
    return Program(tuple(nodes)), tuple(types)


def programs(onto_name: str, **kw):
    return typed_programs(onto_name, **kw).map(lambda pt: pt[0])


# ====================================================================== scenes
@st.composite
def scene_dicts(draw, onto_name: str, max_objects: int = 6, relationships=None):
    """A release-format scene dict of ``onto_name`` (``relationships``: None = either way)."""
    onto = load_ontology(onto_name)
    n = draw(st.integers(0, max_objects))
    grid = st.sampled_from([-1.0, -0.2, 0.0, 0.1, 0.2, 1.0])  # ties and margin-sized gaps
    xy = st.one_of(st.floats(-3, 3, allow_nan=False, allow_infinity=False), grid)
    z = st.floats(0, 1, allow_nan=False, allow_infinity=False)
    objects = []
    for _ in range(n):
        o = {a: draw(st.sampled_from(onto.values(a))) for a in ("shape", "color", "material", "size")}
        if "texture" in onto.attributes:  # absent reads as "none"; "None" is an alias
            tex = draw(st.sampled_from((None,) + onto.values("texture") + tuple(onto.aliases["texture"])))
            if tex is not None:
                o["texture"] = tex
        o["3d_coords"] = [draw(xy), draw(xy), draw(z)]
        if onto.has_parts:  # (a Super-CLEVR "addi", which no released scene holds, has no parts)
            names = (draw(st.lists(st.sampled_from(onto.parts_of(o["shape"])), unique=True, max_size=3))
                     if onto.parts_of(o["shape"]) else [])
            parts = {name: draw(st.fixed_dictionaries(
                {}, optional={a: st.sampled_from(onto.values(a)) for a in onto.part_attributes}))
                for name in names}
            if parts or draw(st.booleans()):
                o["parts"] = parts
        objects.append(o)
    d = {"image_index": draw(st.integers(0, 10 ** 6)), "objects": objects,
         "directions": copy.deepcopy(draw(st.sampled_from([CLEVR_DIRECTIONS, AXIS_DIRECTIONS])))}
    with_rel = draw(st.booleans()) if relationships is None else relationships
    if with_rel:  # arbitrary relations, an object to itself included (used as given)
        d["relationships"] = {r: [sorted(draw(st.lists(st.sampled_from(range(n)), unique=True))) if n else []
                                  for _ in range(n)] for r in onto.relations}
    return d


def build_scene(d: dict, onto_name: str) -> SymbolicScene:
    note(f"scene ({onto_name}): {json.dumps(d)}")
    return SymbolicScene.from_json(d, load_ontology(onto_name))


def draw_scene(data, onto_name: str, **kw) -> SymbolicScene:
    """A scene of :func:`scene_dicts` (with ``kw``) drawn by ``data``, built and noted."""
    return build_scene(data.draw(scene_dicts(onto_name, **kw)), onto_name)


# ====================================================================== helpers
def _outcome(fn):
    """``fn()``, or the ExecutionError it raised (any other exception propagates)."""
    try:
        return fn()
    except ExecutionError as e:
        return e


def assert_same_outcome(expected, got, what: str) -> None:
    """Same answer (value and Python type), or an exception of exactly the same type."""
    if isinstance(expected, ExecutionError):
        assert type(got) is type(expected), (
            f"{what}: deterministic raised {type(expected).__name__}({expected}), got {got!r}")
    else:
        assert not isinstance(got, BaseException), f"{what}: expected {expected!r}, got {got!r}"
        assert (type(got), got) == (type(expected), expected), f"{what}: expected {expected!r}, got {got!r}"


def _label(onto, t: str, v) -> str:
    """The value-space label of a deterministic trace value of type ``t``."""
    if t == BOOL:
        return "yes" if v else "no"
    if t == INTEGER:
        return str(v)
    return onto.spoken_value("partname" if t == "Partname" else t.lower(), v)


def _part_ids(onto, scene: SymbolicScene, arr: np.ndarray) -> list[str]:
    """Deterministic part ids ``"<object>_<index in the shape's part list>"`` of a (n, P) array."""
    out = []
    for i, k in zip(*np.nonzero(arr > 0.5)):
        name = onto.part_names[k]
        out.append((int(i), onto.parts_of(scene.objects[i]["shape"]).index(name)))
    return [f"{i}_{k}" for i, k in sorted(out)]


def assert_one_hot_trace(onto, scene, types, det_trace, prob_trace, what: str) -> None:
    """Every node of the probabilistic trace is the one-hot image of the deterministic one."""
    for i, (t, dv, pv) in enumerate(zip(types, det_trace, prob_trace)):
        w = f"{what}, node {i} ({t})"
        if t in (OBJECT_SET, OBJECT, PART_SET, PART):
            pv = np.asarray(pv, dtype=float)
            assert np.all((np.abs(pv) < 1e-6) | (np.abs(pv - 1) < 1e-6)), f"{w}: not 0/1: {pv}"
        if t == OBJECT_SET:
            assert np.flatnonzero(pv > 0.5).tolist() == dv, f"{w}: {pv} vs {dv}"
        elif t == OBJECT:
            assert np.flatnonzero(pv > 0.5).tolist() == [dv], f"{w}: {pv} vs {dv}"
        elif t == PART_SET:
            assert _part_ids(onto, scene, pv) == sorted(dv, key=lambda s: tuple(map(int, s.split("_")))), w
        elif t == PART:
            assert _part_ids(onto, scene, pv) == [dv], w
        else:
            assert set(pv) == {_label(onto, t, dv)} and abs(next(iter(pv.values())) - 1) < 1e-6, \
                f"{w}: {pv} vs {dv!r}"


def reachable(program: Program) -> set[int]:
    seen, stack = set(), [len(program) - 1]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(program[i].inputs)
    return seen


# ====================================================================== generated programs are valid
@_property(150)
def test_generated_programs_validate(onto_name, data):
    onto = load_ontology(onto_name)
    program, types = data.draw(typed_programs(onto_name))
    assert program.validate(onto) == types
    assert Program.from_json(program.to_json(), onto) == program  # from_json validates too
    assert all(program[i].inputs == () or max(program[i].inputs) < i for i in range(len(program)))


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


# ====================================================================== property 2: robustness
_KEYS = ("type", "function", "inputs", "value_inputs", "side_inputs")
_WORDS = tuple(sorted({v for name in ONTOLOGIES for o in [load_ontology(name)]
                       for a in o.attributes for v in o.filter_values(a)}
                      | {"left", "right", "front", "behind", "wheel", "front_left_wheel", "None", "yes"}))
_junk_key = st.one_of(st.sampled_from(_KEYS + ("objects", "shape", "parts", "3d_coords")),
                      st.text(alphabet="xyz0_", max_size=3))
_junk_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.integers(-2 ** 70, 2 ** 70),
                       st.floats(), st.text(max_size=6), st.sampled_from(FUNCTIONS), st.sampled_from(_WORDS))
junk = st.recursive(_junk_leaf, lambda c: st.one_of(st.lists(c, max_size=3),
                                                    st.dictionaries(_junk_key, c, max_size=3)),
                    max_leaves=10)
_junk_nondict = junk.filter(lambda x: not isinstance(x, dict))

junk_nodes = st.lists(st.fixed_dictionaries({}, optional={
    "type": st.one_of(st.sampled_from(FUNCTIONS), junk),
    "function": st.one_of(st.sampled_from(FUNCTIONS), junk),
    "inputs": st.one_of(st.lists(st.integers(-3, 8), max_size=3), junk),
    "value_inputs": st.one_of(st.lists(st.sampled_from(_WORDS), max_size=2), junk),
    "side_inputs": st.one_of(st.lists(st.sampled_from(_WORDS), max_size=2), junk)}), max_size=7)


def _pick(draw, nodes):
    """A random node dict of ``nodes`` (None if there is none)."""
    if not nodes:
        return None
    n = nodes[draw(st.integers(0, len(nodes) - 1))]
    return n if isinstance(n, dict) else None


def _m_drop(draw, nodes):
    if nodes:
        del nodes[draw(st.integers(0, len(nodes) - 1))]


def _m_duplicate(draw, nodes):
    if nodes:
        i, j = draw(st.integers(0, len(nodes) - 1)), draw(st.integers(0, len(nodes)))
        nodes.insert(j, copy.deepcopy(nodes[i]))


def _m_swap(draw, nodes):
    if nodes:
        i, j = draw(st.integers(0, len(nodes) - 1)), draw(st.integers(0, len(nodes) - 1))
        nodes[i], nodes[j] = nodes[j], nodes[i]


def _m_function(draw, nodes):
    n = _pick(draw, nodes)
    if n is not None:
        key = "type" if "type" in n else "function"
        n[key] = draw(st.one_of(st.sampled_from(FUNCTIONS), st.text(max_size=12), junk))


def _m_input(draw, nodes):
    n = _pick(draw, nodes)
    if n is None or not isinstance(n.get("inputs"), list):
        return
    ins = n["inputs"]
    idx = st.one_of(st.integers(-len(nodes) - 3, len(nodes) + 3), junk)
    op = draw(st.integers(0, 2))
    if op == 0 and ins:
        ins[draw(st.integers(0, len(ins) - 1))] = draw(idx)
    elif op == 1:
        ins.append(draw(idx))
    elif ins:
        ins.pop(draw(st.integers(0, len(ins) - 1)))


def _m_values(draw, nodes):
    n = _pick(draw, nodes)
    if n is not None:
        key = draw(st.sampled_from(["value_inputs", "side_inputs"]))
        word = st.one_of(st.sampled_from(_WORDS), _junk_leaf)
        n[key] = draw(st.one_of(st.just([]), st.lists(word, min_size=1, max_size=3), junk))


def _m_field_type(draw, nodes):
    n = _pick(draw, nodes)
    if n is not None:
        n[draw(st.sampled_from(_KEYS))] = draw(junk)


def _m_delete_key(draw, nodes):
    n = _pick(draw, nodes)
    if n:
        del n[draw(st.sampled_from(sorted(n, key=str)))]


def _m_replace_node(draw, nodes):
    if nodes:
        nodes[draw(st.integers(0, len(nodes) - 1))] = draw(junk)


def _m_truncate(draw, nodes):
    del nodes[draw(st.integers(0, len(nodes))):]


PROGRAM_MUTATIONS = (_m_drop, _m_duplicate, _m_swap, _m_function, _m_input, _m_values, _m_field_type,
                     _m_delete_key, _m_replace_node, _m_truncate)


@st.composite
def mutated_programs(draw, onto_name: str):
    """The JSON nodes of a valid program after one to four random mutations."""
    nodes = draw(programs(onto_name, max_depth=4)).to_json(key=draw(st.sampled_from(["type", "function"])))
    for _ in range(draw(st.integers(1, 4))):
        draw(st.sampled_from(PROGRAM_MUTATIONS))(draw, nodes)
    return nodes


def assert_only_execution_errors(nodes, onto_name: str, scene: SymbolicScene) -> None:
    """Read ``nodes`` with and without the ontology and run what reads on both executors: only
    ExecutionErrors may escape, and where the program is valid the contract holds."""
    onto = load_ontology(onto_name)
    lik = SceneLikelihoods.from_scene(scene)
    for with_onto in (False, True):
        program = _outcome(lambda: Program.from_json(nodes, onto if with_onto else None))
        if isinstance(program, ExecutionError):
            continue
        det = _outcome(lambda: DeterministicExecutor(onto).run(program, scene).answer)
        det_batch = _outcome(lambda: DeterministicExecutor(onto).run_batch([program], [scene], [0])[0])
        assert_same_outcome(det, det_batch, "deterministic run_batch")
        for mode, dtype in CONFIGS:
            ex = ProbabilisticExecutor(onto, mode=mode, dtype=dtype)
            assert_same_outcome(det, _outcome(lambda: ex.run(program, lik).answer), f"{mode}/{dtype} run")
            assert_same_outcome(det, _outcome(lambda: ex.run_batch([program], [lik], [0])[0]),
                                f"{mode}/{dtype} run_batch")


@_property(150)
def test_mutated_programs_raise_only_execution_errors(onto_name, data):
    scene = draw_scene(data, onto_name, max_objects=4)
    nodes = data.draw(mutated_programs(onto_name))
    note(f"nodes: {nodes!r}")
    assert_only_execution_errors(nodes, onto_name, scene)


@_property(100)
def test_garbage_programs_raise_only_execution_errors(onto_name, data):
    scene = draw_scene(data, onto_name, max_objects=3)
    nodes = data.draw(st.one_of(junk, junk_nodes))
    note(f"nodes: {nodes!r}")
    assert_only_execution_errors(nodes, onto_name, scene)


_tokens = st.lists(st.one_of(
    st.sampled_from(FUNCTIONS),
    st.builds(lambda f, v: f"{f}[{v}]", st.sampled_from(FUNCTIONS), st.one_of(st.sampled_from(_WORDS), st.text(max_size=4))),
    st.text(max_size=8)), max_size=12)


@_settings(150)
@given(tokens=_tokens)
def test_garbage_prefix_tokens_raise_only_invalid_program(tokens):
    onto = load_ontology("superclevr")
    program = _outcome(lambda: Program.from_prefix(tokens))
    if isinstance(program, ExecutionError):
        return
    assert program.to_prefix() == tokens  # a prefix form that reads is the program's prefix form
    _outcome(lambda: program.validate(onto))


# ---------------------------------------------------------------------- scenes
_rel_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 8), st.floats(), st.text(max_size=3))
_huge = st.sampled_from([10 ** 400, -(10 ** 400), 2 ** 1024])  # beyond float range
_coord = st.one_of(st.floats(), st.integers(-10 ** 6, 10 ** 6), _huge, st.text(max_size=3), st.none(),
                   st.lists(st.floats(), max_size=2), st.dictionaries(_junk_key, st.floats(), max_size=2))
_vector = st.one_of(st.lists(_coord, max_size=4), junk)


def _s_top(draw, d, onto):
    key = draw(st.sampled_from(["objects", "directions", "relationships", "image_filename", "image_index"]))
    if draw(st.booleans()):
        d.pop(key, None)
    elif key == "image_filename":
        d[key] = draw(st.one_of(junk, st.sampled_from(["/abs.png", "../up.png", "a/../../b.png", "C:\\x.png",
                                                          "\\\\host\\x.png", "", "ok.png", "a/b.png"])))
    elif key == "directions":
        d[key] = draw(st.one_of(junk, st.dictionaries(st.sampled_from(onto.relations), _vector, max_size=4)))
    elif key == "relationships":
        d[key] = draw(st.one_of(junk, st.dictionaries(st.sampled_from(onto.relations),
                                                      st.lists(st.one_of(st.lists(_rel_leaf), _rel_leaf)))))
    else:
        d[key] = draw(junk)


def _s_objects(draw, d, onto):
    objs = d.get("objects")
    if not isinstance(objs, list):
        return
    op = draw(st.integers(0, 2))
    if op == 0:
        objs.append(draw(st.one_of(junk, st.just({"shape": onto.values("shape")[0]}))))
    elif objs and op == 1:
        del objs[draw(st.integers(0, len(objs) - 1))]  # relationships now name a missing object
    elif objs:
        objs[draw(st.integers(0, len(objs) - 1))] = draw(junk)


def _s_object_field(draw, d, onto):
    objs = d.get("objects")
    if not isinstance(objs, list) or not objs or not isinstance(objs[0], dict):
        return
    o = objs[draw(st.integers(0, len(objs) - 1))]
    if not isinstance(o, dict):
        return
    key = draw(st.sampled_from(list(onto.attributes) + ["texture", "3d_coords", "pixel_coords", "parts"]))
    if draw(st.booleans()):
        o.pop(key, None)
    elif key in ("3d_coords", "pixel_coords"):
        o[key] = draw(st.one_of(st.lists(_coord, max_size=5), st.lists(st.lists(_coord, max_size=3), max_size=2),
                                st.text(max_size=3), st.none(), st.floats(), _huge, st.integers(-5, 5),
                                st.dictionaries(st.one_of(_junk_key, st.integers(0, 2)), _coord, max_size=3)))
    elif key == "parts":
        o[key] = draw(junk)
    else:
        o[key] = draw(st.one_of(junk, st.sampled_from(_WORDS)))


def _s_parts(draw, d, onto):
    objs = d.get("objects")
    if not isinstance(objs, list) or not objs or not isinstance(objs[-1], dict):
        return
    parts = objs[-1].setdefault("parts", {})
    if not isinstance(parts, dict):
        return
    any_part = sorted(set(onto.part_names) | {"wheel", "nope"})
    name = draw(st.one_of(st.sampled_from(any_part), st.text(max_size=4)))
    parts[name] = draw(st.one_of(junk, st.fixed_dictionaries({}, optional={
        a: st.one_of(st.sampled_from(_WORDS), junk) for a in ("color", "material", "size", "texture", "shape")})))


def _s_relationships(draw, d, onto):
    objs = d.get("objects")
    n = len(objs) if isinstance(objs, list) else 0
    rel = d.get("relationships")
    if not isinstance(rel, dict):
        rel = d["relationships"] = {r: [[] for _ in range(n)] for r in onto.relations}
    r = draw(st.sampled_from(onto.relations))
    op = draw(st.integers(0, 3))
    if op == 0:
        rel.pop(r, None)
    elif op == 1:
        rel[r] = draw(st.one_of(junk, st.lists(st.one_of(st.lists(_rel_leaf, max_size=3), _rel_leaf),
                                               min_size=n, max_size=n)))
    elif isinstance(rel.get(r), list) and rel[r]:
        i = draw(st.integers(0, len(rel[r]) - 1))
        rel[r][i] = draw(st.one_of(st.lists(_rel_leaf, max_size=3), _rel_leaf, junk,
                                   st.dictionaries(st.integers(-2, 8), st.none(), max_size=2)))


def _s_directions(draw, d, onto):
    dirs = d.get("directions")
    if isinstance(dirs, dict) and dirs:
        key = draw(st.sampled_from(sorted(dirs)))
        if draw(st.booleans()):
            del dirs[key]  # incomplete directions are ignored
        else:
            dirs[key] = draw(_vector)


SCENE_MUTATIONS = (_s_top, _s_objects, _s_object_field, _s_parts, _s_relationships, _s_directions)


@st.composite
def mutated_scene_dicts(draw, onto_name: str):
    onto = load_ontology(onto_name)
    d = copy.deepcopy(draw(scene_dicts(onto_name, max_objects=3)))
    for _ in range(draw(st.integers(1, 3))):
        draw(st.sampled_from(SCENE_MUTATIONS))(draw, d, onto)
    if draw(st.integers(0, 9)) == 9:
        d = draw(junk)
    return d


@_property(250)
def test_mutated_scenes_raise_only_format_or_execution_errors(onto_name, data):
    """``SymbolicScene.from_json`` rejects bad scenes with FormatError / ExecutionError only; a
    scene it accepts runs on both executors raising nothing else either (a FormatError when it has
    neither relationships nor positions to relate by), and keeps the contract."""
    onto = load_ontology(onto_name)
    d = data.draw(mutated_scene_dicts(onto_name))
    note(f"scene: {d!r}")
    try:
        scene = SymbolicScene.from_json(d, onto)
    except (FormatError, ExecutionError):
        event("scene rejected")
        return
    event("scene accepted")
    program = data.draw(programs(onto_name, max_depth=4, scene=scene))
    note(f"program: {json.dumps(program.to_json())}")
    try:
        det = _outcome(lambda: DeterministicExecutor(onto).run(program, scene).answer)
    except FormatError:
        det = None
    try:
        lik = SceneLikelihoods.from_scene(scene)
    except FormatError:
        return
    for mode, dtype in CONFIGS:
        got = _outcome(lambda: ProbabilisticExecutor(onto, mode=mode, dtype=dtype).run(program, lik).answer)
        assert det is not None, "from_scene found relations the deterministic executor did not"
        assert_same_outcome(det, got, f"{mode}/{dtype} on an accepted mutated scene")


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
