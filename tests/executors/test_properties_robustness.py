"""Property 2 of the executors (hypothesis, both ontologies): robustness. JSON garbage and mutated
programs raise only :class:`ExecutionError` subclasses in ``Program.from_json`` and both executors
(and where a mutated program is valid, the contract holds); mutated scene dicts raise only
:class:`FormatError` or :class:`ExecutionError` in ``SymbolicScene.from_json`` (and in the executors
afterwards). Strategies and settings: ``property_strategies.py``.
"""
from __future__ import annotations

import copy
import json

from hypothesis import event, given, note, strategies as st

from executors import (FUNCTIONS, DeterministicExecutor, ExecutionError, FormatError, Program,
                       ProbabilisticExecutor, SceneLikelihoods, SymbolicScene, load_ontology)

from .property_strategies import (CONFIGS, ONTOLOGIES, _outcome, _property, _settings, assert_same_outcome,
                                  draw_scene, programs, scene_dicts)


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
