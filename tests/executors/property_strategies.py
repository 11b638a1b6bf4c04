"""What the property tests of the executors share (hypothesis; imported by
``test_properties.py``, ``test_properties_robustness.py`` and ``test_properties_regressions.py``):

- the settings: :func:`_settings` (derandomized, no example database; ``NSVQA_HYPOTHESIS_SCALE=20``
  and ``NSVQA_HYPOTHESIS_RANDOM=1`` for a deeper local search) and :func:`_property` (a test
  ``test(onto_name, data)`` over both ontologies);
- random *valid* programs, generated type-directed from the signature table
  (:data:`executors.dsl.SIGNATURES`), optionally sharing nodes (a DAG) and carrying dead nodes
  before the answer (:func:`typed_programs`, :func:`programs`);
- random scenes: 0-6 objects, Super-CLEVR parts, 3D coordinates with CLEVR's or axis-aligned
  ``directions``, with or without a ``relationships`` field (:func:`scene_dicts`, :func:`draw_scene`);
- the comparisons of the two executors (:func:`assert_same_outcome`, :func:`assert_one_hot_trace`).

A test keeps its examples as long as its own source does not change: hypothesis seeds a
derandomized test from its source.
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
from hypothesis import HealthCheck, given, note, settings, strategies as st

from executors import ExecutionError, Node, Program, SymbolicScene, load_ontology
from executors.dsl import ANSWER_TYPES, BOOL, INTEGER, OBJECT, OBJECT_SET, PART, PART_SET, SIGNATURES, Signature

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
                   answer_type=None, dag: bool = False):
    """(Program, output type per node): a random valid program, nodes in post-order.

    Type-directed: for a wanted type pick a production whose smallest subtree fits the remaining
    depth, build its inputs recursively, draw its value from the ontology. With ``scene``, values
    lean to those in the scene and an ``Object`` / ``Part`` is often built as ``unique`` of filters
    aimed at one of its objects / parts, so that ``unique`` often succeeds. Dead nodes may precede
    the answer tree. With ``dag`` an input may reuse an earlier node of its type: a shared node,
    which validation refuses (a program is a tree; issue 80). Optional features are drawn as
    non-zero choices, so shrinking removes them.
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

    if draw(st.integers(0, 4)) == 4:  # dead code before the answer tree
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
