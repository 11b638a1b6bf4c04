"""Program reading, writing, prefix tokens and validation."""
from __future__ import annotations

import pytest

from executors import (FUNCTIONS, DeterministicExecutor, InvalidProgram, Node, Program,
                       SymbolicScene, TypeMismatch)


def n(fn, inputs=(), values=()):
    return {"type": fn, "inputs": list(inputs), "value_inputs": list(values)}


COUNT_RED = [n("scene"), n("filter_color", [0], ["red"]), n("count", [1])]


# ---------------------------------------------------------------------- JSON
def test_reads_type_or_function_and_value_or_side_inputs():
    expected = Program((Node("scene"), Node("filter_color", (0,), ("red",)), Node("count", (1,))))
    release = Program.from_json(COUNT_RED)
    clevr_v1 = Program.from_json([{"function": "scene", "inputs": []},
                                  {"function": "filter_color", "inputs": [0], "side_inputs": ["red"]},
                                  {"function": "count", "inputs": [1]}])
    assert release == clevr_v1 == expected


def test_type_wins_over_function_and_value_inputs_over_side_inputs():
    p = Program.from_json([{"type": "scene", "function": "count", "inputs": []},
                           {"type": "filter_color", "inputs": [0], "value_inputs": ["red"],
                            "side_inputs": ["blue"]},
                           {"type": "count", "inputs": [1]}])
    assert p[0].function == "scene"
    assert p[1].value_inputs == ("red",)


def test_booleans_in_value_inputs_read_as_yes_no():
    p = Program.from_json([n("scene"), n("filter_color", [0], [True]), n("filter_color", [1], [False]),
                           n("count", [2])])
    assert p[1].value_inputs == ("yes",)
    assert p[2].value_inputs == ("no",)


def test_integer_value_inputs_read_as_strings():
    assert Program.from_json([n("scene"), n("filter_color", [0], [3]), n("count", [1])])[1].value == "3"


@pytest.mark.parametrize("key", ["type", "function"])
def test_to_json_round_trip(key):
    p = Program.from_json(COUNT_RED)
    js = p.to_json(key=key)
    assert all(set(d) == {key, "inputs", "value_inputs"} for d in js)
    assert js[1] == {key: "filter_color", "inputs": [0], "value_inputs": ["red"]}
    assert Program.from_json(js) == p


def test_to_json_default_key_is_type():
    assert Program.from_json(COUNT_RED).to_json() == COUNT_RED


@pytest.mark.parametrize("nodes, message", [
    ([], "non-empty list"),
    ({"type": "scene"}, "non-empty list"),
    ([n("scene"), "count"], "node 1: node must be an object"),
    ([n("scene"), {"inputs": [0]}], "node 1: missing field 'type' (or 'function')"),
    ([n("scene"), {"type": "count", "inputs": [0.0]}], "node 1 (count): bad field"),
    ([n("scene"), {"type": "count", "inputs": [True]}], "node 1 (count): bad field"),
    ([n("scene"), {"type": "count", "inputs": [0], "value_inputs": [None]}], "node 1 (count): bad field"),
])
def test_from_json_rejects_malformed_nodes(nodes, message):
    with pytest.raises(InvalidProgram) as exc:
        Program.from_json(nodes)
    assert exc.type is InvalidProgram
    assert message in str(exc.value)


def test_missing_inputs_field_names_node_and_function():
    with pytest.raises(InvalidProgram) as exc:
        Program.from_json([n("scene"), {"type": "count", "value_inputs": []}])
    assert exc.type is InvalidProgram
    assert (exc.value.node, exc.value.function) == (1, "count")
    assert str(exc.value) == "node 1 (count): missing field 'inputs'"


@pytest.mark.parametrize("field, bad", [("value_inputs", "red"), ("side_inputs", "red"), ("inputs", 0),
                                        ("inputs", "0")])
def test_fields_that_are_not_lists_are_rejected(field, bad):
    # a string must not be read as its characters ("red" -> "r", "e", "d")
    node = {"type": "filter_color", "inputs": [0], "value_inputs": ["red"]}
    if field == "side_inputs":
        del node["value_inputs"]
    node[field] = bad
    with pytest.raises(InvalidProgram) as exc:
        Program.from_json([n("scene"), node, n("count", [1])])
    assert exc.type is InvalidProgram
    assert str(exc.value).startswith("node 1 (filter_color): ")


# ---------------------------------------------------------------------- prefix tokens
def test_prefix_tokens_of_a_two_branch_program():
    p = Program.from_json([n("scene"), n("filter_color", [0], ["red"]), n("count", [1]),
                           n("scene"), n("filter_shape", [3], ["cube"]), n("count", [4]),
                           n("greater_than", [2, 5])])
    tokens = ["greater_than", "count", "filter_color[red]", "scene", "count", "filter_shape[cube]", "scene"]
    assert p.to_prefix() == tokens
    back = Program.from_prefix(tokens)
    assert back.to_prefix() == tokens
    # post-order: children before parents, the answer last
    assert [x.function for x in back] == ["scene", "filter_color", "count", "scene", "filter_shape",
                                          "count", "greater_than"]
    assert back[-1].inputs == (2, 5)


def test_canonical_drops_unused_nodes():
    p = Program.from_json([n("scene"), n("scene"), n("filter_color", [0], ["red"]), n("count", [2])])
    assert p.canonical() == Program.from_json(COUNT_RED)


SHARED = [n("scene"), n("filter_color", [0], ["red"]), n("filter_shape", [1], ["cube"]),
          n("filter_material", [1], ["rubber"]), n("union", [2, 3]), n("count", [4])]  # node 1 feeds both


def test_a_shared_node_is_refused_naming_both_users(clevr):
    """A program is a tree (every CLEVR and Super-CLEVR program is): a node whose result is an
    input twice is refused when read, validated or walked (issue 80: a shared chain made
    ``to_prefix`` exponential and parse_questions.py ran out of memory)."""
    message = "node 3 (filter_material): input 1 is already an input of node 2: a program is a tree"
    for read in (lambda: Program.from_json(SHARED), lambda: Program.from_json(SHARED, clevr),
                 lambda: Program(tuple(Node(x["type"], tuple(x["inputs"]), tuple(x["value_inputs"])) for x in SHARED)
                                 ).validate(clevr)):
        with pytest.raises(InvalidProgram) as exc:
            read()
        assert str(exc.value).startswith(message), exc.value
    twice = [n("scene"), n("union", [0, 0]), n("count", [1])]  # one node's input twice
    with pytest.raises(InvalidProgram, match=r"^node 1 \(union\): input 0 is already an input of node 1"):
        Program.from_json(twice, clevr)


def test_a_shared_chain_is_refused_at_once_not_walked():
    """60 unions, each of the previous one twice: 2^60 prefix tokens. Refused in linear time."""
    import time

    nodes = [Node("scene")] + [Node("union", (i, i)) for i in range(60)] + [Node("count", (60,))]
    t0 = time.perf_counter()
    for walk in (Program(tuple(nodes)).to_prefix, Program(tuple(nodes)).to_postfix):
        with pytest.raises(InvalidProgram, match="a program is a tree"):
            walk()
    assert time.perf_counter() - t0 < 1.0


def test_a_shared_node_of_known_nodes_is_refused(clevr):
    """Every node of the shared program read before, in a tree (the ontology's cache of known
    nodes): the shortcut read does not let it through."""
    tree = [n("scene"), n("filter_color", [0], ["red"]), n("scene"), n("filter_color", [2], ["red"]),
            n("union", [1, 3]), n("count", [4])]
    Program.from_json(tree, clevr)
    Program.from_json(tree, clevr)  # read again: through the cache
    shared = [n("scene"), n("filter_color", [0], ["red"]), n("scene"), n("filter_color", [0], ["red"]),
              n("union", [1, 3]), n("count", [4])]
    with pytest.raises(InvalidProgram, match=r"^node 3 \(filter_color\): input 0 is already an input of node 1"):
        Program.from_json(shared, clevr)


@pytest.mark.parametrize("tokens, message", [
    (["count", "bogus", "scene"], "unknown function 'bogus' at token 1; valid: "),
    ([], "prefix program ends early after 0 tokens"),
    (["count", "filter_color[red]"], "prefix program ends early after 2 tokens"),
    (["equal_integer", "count", "scene"], "prefix program ends early after 3 tokens"),
    (["count", "scene", "scene", "scene"], "2 tokens left after a complete program: ['scene', 'scene']"),
    (["count", "filter_color[red", "scene"], "malformed token 'filter_color[red' at position 1"),
    (["count", "[red]", "scene"], "malformed token '[red]' at position 1"),
])
def test_from_prefix_errors(tokens, message):
    with pytest.raises(InvalidProgram) as exc:
        Program.from_prefix(tokens)
    assert exc.type is InvalidProgram
    assert message in str(exc.value)


@pytest.mark.parametrize("name", ["clevr_data", "sc_objects", "sc_parts"])
def test_prefix_round_trip_of_every_reference_program(request, name):
    """Every program of the reference question files (5,000 CLEVR, 100 + 450 Super-CLEVR)."""
    dataset = request.getfixturevalue(name)
    ex = DeterministicExecutor(dataset.ontology)
    for p, k in zip(dataset.programs, dataset.scene_of):
        tokens = p.to_prefix()
        back = Program.from_prefix(tokens)
        assert back.to_prefix() == tokens
        canon = p.canonical()
        assert canon == back
        scene = dataset.scenes[k]
        assert ex.run(canon, scene, trace=False).answer == ex.run(p, scene, trace=False).answer


def test_from_prefix_unknown_function_lists_every_valid_function():
    with pytest.raises(InvalidProgram) as exc:
        Program.from_prefix(["bogus"])
    assert str(exc.value).endswith("valid: " + ", ".join(FUNCTIONS))


# ---------------------------------------------------------------------- validation
def _raises(program_nodes, onto, exc_type, node, function, *fragments):
    with pytest.raises(exc_type) as exc:
        Program.from_json(program_nodes, onto)
    e = exc.value
    assert exc.type is exc_type, f"{exc.type.__name__} is not exactly {exc_type.__name__}: {e}"
    assert e.node == node
    msg = str(e)
    assert f"node {node}" in msg
    assert function in msg
    for f in fragments:
        assert f in msg, msg
    return e


def test_valid_program_returns_output_types(superclevr):
    types = Program.from_json(
        [n("scene"), n("filter_shape", [0], ["car"]), n("unique", [1]), n("object2part", [2]),
         n("partfilter_partname", [3], ["wheel"]), n("uniquepart", [4]), n("part2object", [5]),
         n("unique", [6]), n("query_shape", [7])]).validate(superclevr)
    assert types == ("ObjectSet", "ObjectSet", "Object", "PartSet", "PartSet", "Part", "ObjectSet",
                     "Object", "Shape")


def test_unknown_function_lists_valid_functions(clevr):
    e = _raises([n("scene"), n("count_all", [0])], clevr, InvalidProgram, 1, "'count_all'",
                "unknown function", "valid: " + ", ".join(FUNCTIONS))
    assert e.function is None


def test_wrong_arity(clevr):
    _raises([n("scene"), n("count", [0, 0])], clevr, InvalidProgram, 1, "(count)",
            "takes 1 input(s), got 2")
    _raises([n("scene"), n("union", [0])], clevr, InvalidProgram, 1, "(union)",
            "takes 2 input(s), got 1")


@pytest.mark.parametrize("bad", [1, 2, -1])
def test_input_that_is_not_an_earlier_node(clevr, bad):
    _raises([n("scene"), n("count", [bad]), n("count", [0])], clevr, InvalidProgram, 1, "(count)",
            f"input {bad} does not point to an earlier node")


@pytest.mark.parametrize("fn, value, listed", [
    ("filter_color", "pink", "['gray', 'red', 'blue', 'green', 'brown', 'purple', 'cyan', 'yellow']"),
    ("filter_shape", "articulated bus", "'articulated', 'regular'"),
    ("filter_size", "medium", "['large', 'small']"),
])
def test_value_outside_ontology_lists_valid_values(superclevr, fn, value, listed):
    _raises([n("scene"), n(fn, [0], [value]), n("count", [1])], superclevr, InvalidProgram, 1,
            f"({fn})", f"value {value!r} is not a valid", "valid: ", listed)


def test_shape_filter_lists_categories_as_valid_values(superclevr):
    e = _raises([n("scene"), n("filter_shape", [0], ["boat"]), n("count", [1])], superclevr,
                InvalidProgram, 1, "(filter_shape)")
    assert all(f"'{c}'" in str(e) for c in ("car", "bus", "motorbike", "aeroplane", "bicycle"))


def test_relation_outside_ontology(clevr):
    _raises([n("scene"), n("unique", [0]), n("relate", [1], ["above"]), n("count", [2])], clevr,
            InvalidProgram, 2, "(relate)", "'above' is not a valid relation",
            "['left', 'right', 'front', 'behind']")


def test_unknown_partname(superclevr):
    _raises([n("scene"), n("object2part", [0]), n("partfilter_partname", [1], ["sail"]),
             n("uniquepart", [2]), n("partquery_color", [3])], superclevr, InvalidProgram, 2,
            "(partfilter_partname)", "'sail' is not a valid partname", "'wheel'")


@pytest.mark.parametrize("fn", ["filter_color", "filter_shape", "relate"])
def test_empty_value_inputs(clevr, fn):
    prog = [n("scene"), n("unique", [0]), n(fn, [1]), n("count", [2])] if fn == "relate" else \
        [n("scene"), n(fn, [0]), n("count", [1])]
    k = 2 if fn == "relate" else 1
    _raises(prog, clevr, InvalidProgram, k, f"({fn})", "empty value_inputs; expected one of [")


def test_two_values(clevr):
    _raises([n("scene"), n("filter_color", [0], ["red", "blue"]), n("count", [1])], clevr,
            InvalidProgram, 1, "(filter_color)", "takes one value, got ['red', 'blue']")


def test_value_on_function_that_takes_none(clevr):
    _raises([n("scene"), n("count", [0], ["red"])], clevr, InvalidProgram, 1, "(count)",
            "takes no value_inputs, got ['red']")


def test_type_mismatch_count_of_object(clevr):
    _raises([n("scene"), n("unique", [0]), n("count", [1])], clevr, TypeMismatch, 2, "(count)",
            "input 0 (node 1) is Object, expected ObjectSet")


def test_type_mismatch_query_of_object_set(clevr):
    _raises([n("scene"), n("query_color", [0])], clevr, TypeMismatch, 1, "(query_color)",
            "is ObjectSet, expected Object")


def test_type_mismatch_second_input(clevr):
    _raises([n("scene"), n("count", [0]), n("scene"), n("equal_integer", [1, 2])], clevr, TypeMismatch,
            3, "(equal_integer)", "input 1 (node 2) is ObjectSet, expected Integer")


def test_type_mismatch_is_an_invalid_program():
    assert issubclass(TypeMismatch, InvalidProgram)


@pytest.mark.parametrize("nodes, last, fn, typ", [
    ([n("scene")], 0, "scene", "ObjectSet"),
    ([n("scene"), n("filter_color", [0], ["red"])], 1, "filter_color", "ObjectSet"),
    ([n("scene"), n("unique", [0])], 1, "unique", "Object"),
])
def test_last_node_must_yield_an_answer(clevr, nodes, last, fn, typ):
    _raises(nodes, clevr, InvalidProgram, last, f"({fn})", f"the last node yields {typ}, not an answer")


@pytest.mark.parametrize("fn", ["filter_texture", "same_texture"])
def test_texture_functions_on_clevr(clevr, fn):
    prog = ([n("scene"), n(fn, [0], ["none"]), n("count", [1])] if fn == "filter_texture"
            else [n("scene"), n("unique", [0]), n(fn, [1]), n("count", [2])])
    k = 1 if fn == "filter_texture" else 2
    _raises(prog, clevr, InvalidProgram, k, f"({fn})", "attribute 'texture' is not in ontology 'clevr'")


def test_texture_filter_on_superclevr_accepts_the_release_spelling(superclevr):
    Program.from_json([n("scene"), n("filter_texture", [0], ["None"]), n("count", [1])], superclevr)


@pytest.mark.parametrize("nodes, k", [
    ([n("scene"), n("object2part", [0]), n("uniquepart", [1]), n("partquery_color", [2])], 1),
    ([n("scene"), n("unique", [0]), n("object2part", [1]), n("part2object", [2]), n("count", [3])], 2),
])
def test_part_functions_on_clevr(clevr, nodes, k):
    _raises(nodes, clevr, InvalidProgram, k, "(object2part)", "ontology 'clevr' has no parts")


def test_validation_reports_the_first_bad_node(clevr):
    # node 1 has a bad value and node 2 a type error: node 1 is reported
    _raises([n("scene"), n("filter_color", [0], ["pink"]), n("query_color", [1])], clevr,
            InvalidProgram, 1, "(filter_color)")


# ---------------------------------------------------------------------- filters on hand-made scenes
def _trace(onto, scene_json, prefix):
    p = Program.from_prefix(prefix)
    p.validate(onto)
    return DeterministicExecutor(onto).run(p, SymbolicScene.from_json(scene_json, onto)).trace


@pytest.mark.parametrize("value, kept", [
    ("car", [0, 1]), ("bicycle", [2]), ("bus", []), ("suv", [1]), ("truck", [0]), ("tandem", [2]),
])
def test_hierarchical_shape_filter(superclevr, sc_json, value, kept):
    trace = _trace(superclevr, sc_json, ["count", f"filter_shape[{value}]", "scene"])
    assert trace == [[0, 1, 2], kept, len(kept)]


@pytest.mark.parametrize("value, kept", [
    ("wheel", ["0_15", "1_11", "2_1"]),        # generic: every wheel, whatever its full name
    ("wheel_front", ["2_1"]),                   # a full name (contained in no other part here)
    ("front_left_wheel", ["0_15"]),
    ("hood", ["0_13"]),
    ("fork", ["2_3"]),
    ("door", []),
])
def test_partname_filter(superclevr, sc_json, value, kept):
    trace = _trace(superclevr, sc_json,
                   ["exist", "part2object", f"partfilter_partname[{value}]", "object2part", "scene"])
    assert trace[1] == ["0_13", "0_15", "1_11", "2_1", "2_3"]
    assert trace[2] == kept


def test_generic_partname_filter_covers_every_naming_scheme(superclevr):
    wheels = set(superclevr.partname_matching("wheel"))
    assert {"front_left_wheel", "wheel_front_left", "wheel_front", "wheel_back"} <= wheels
    assert all("wheel" in w for w in wheels)
    every = {p for parts in superclevr.parts_per_shape.values() for p in parts if "wheel" in p}
    assert wheels == every


# ---------------------------------------------------------------------- nodes read before
@pytest.mark.parametrize("bad, exc_type, fragment", [
    ([n("scene"), n("filter_color", [True], ["red"]), n("count", [1])], InvalidProgram, "True"),
    ([n("scene"), n("filter_color", [0.0], ["red"]), n("count", [1])], InvalidProgram, "0.0"),
    ([n("scene"), {"type": "filter_color", "inputs": {0: 0}, "value_inputs": ["red"]}, n("count", [1])],
     InvalidProgram, "'inputs' must be a list"),
    ([n("scene"), n("filter_color", [0, "red"], []), n("count", [1])], InvalidProgram,
     "input 'red' is not an integer"),
    ([n("scene"), n("filter_color", [], [0, "red"]), n("count", [1])], InvalidProgram, "takes 1 input"),
    ([n("filter_color", [0], ["red"]), n("scene"), n("count", [1])], InvalidProgram,
     "does not point to an earlier node"),
    ([n("scene"), n("filter_color", [0], ["red"]), n("unique", [1]), n("count", [2])], TypeMismatch,
     "is Object"),
    ([n("scene"), n("filter_color", [0], ["red"])], InvalidProgram, "not an answer"),
])
def test_nodes_read_before_are_checked_again_where_they_stand(bad, exc_type, fragment):
    from executors import load_ontology
    from dataclasses import replace

    onto = replace(load_ontology("clevr"))  # a copy: caches of its own
    good = Program.from_json(COUNT_RED, onto)
    Program.from_json([n("scene"), n("filter_color", [0], ["red"]), n("unique", [1]),
                       n("query_shape", [2])], onto)
    again = Program.from_json(COUNT_RED, onto)
    assert again == good and again.validate(onto) == ("ObjectSet", "ObjectSet", "Integer")
    with pytest.raises(exc_type) as exc:
        Program.from_json(bad, onto)
    with pytest.raises(exc_type) as fresh:
        Program.from_json(bad, replace(load_ontology("clevr")))
    assert str(exc.value) == str(fresh.value) and fragment in str(exc.value)
