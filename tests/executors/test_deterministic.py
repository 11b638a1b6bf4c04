"""The deterministic executor, one function kind at a time, on the 3-object scenes of conftest.

Super-CLEVR scene (``sc_json``), with its given ``relationships``:

    0 truck  red  metal  large   parts hood (0_13, rubber), front_left_wheel (0_15, blue)
    1 suv    blue rubber small   parts back_left_wheel (1_11, yellow)
    2 tandem red  rubber large   parts wheel_front (2_1, green), fork (2_3, metal)
    right of 0: [2]; left of 2: [0]; no other relation.

CLEVR scene (``clevr_json``): 0 large red metal cube, 1 small blue rubber sphere, 2 large red
rubber cylinder at (0, 0), (1, 0), (-1, 1) with +x right and +y behind; no ``relationships``.
"""
from __future__ import annotations

import pytest

from executors import (DeterministicExecutor, ExecutionError, InvalidProgram, Program, SymbolicScene,
                       UniquenessError)
from executors.deterministic import ExecutionResult


@pytest.fixture
def sc(superclevr, sc_json):
    return SymbolicScene.from_json(sc_json, superclevr)


@pytest.fixture
def cl(clevr, clevr_json):
    return SymbolicScene.from_json(clevr_json, clevr)


def run(scene, *tokens) -> ExecutionResult:
    """Run a prefix program (answer node first)."""
    return DeterministicExecutor(scene.ontology).run(Program.from_prefix(tokens), scene)


TRUCK = ("unique", "filter_shape[truck]", "scene")
SUV = ("unique", "filter_shape[suv]", "scene")
TANDEM = ("unique", "filter_shape[tandem]", "scene")


# ---------------------------------------------------------------------- objects
def test_result_fields(sc):
    r = run(sc, "count", "filter_color[red]", "scene")
    assert (r.answer, r.answer_type) == (2, "Integer")
    assert r.trace == [[0, 1, 2], [0, 2], 2]
    assert r.distribution is None and r.confidence is None
    r = DeterministicExecutor(sc.ontology).run(Program.from_prefix(["count", "scene"]), sc, trace=False)
    assert (r.answer, r.trace) == (3, None)


@pytest.mark.parametrize("tokens, answer", [
    (("count", "filter_material[rubber]", "scene"), 2),
    (("count", "filter_size[small]", "filter_color[blue]", "scene"), 1),
    (("exist", "filter_shape[aeroplane]", "scene"), "no"),
    (("exist", "filter_shape[bicycle]", "scene"), "yes"),
    (("count", "filter_texture[none]", "scene"), 3),
])
def test_filter_count_exist(sc, tokens, answer):
    assert run(sc, *tokens).answer == answer


@pytest.mark.parametrize("query, answer, key", [
    ("query_shape", "tandem bike", "tandem"),   # spoken in the answer, the key in the trace
    ("query_color", "red", "red"),
    ("query_material", "rubber", "rubber"),
    ("query_size", "large", "large"),
    ("query_texture", "none", "none"),
])
def test_query(sc, query, answer, key):
    r = run(sc, query, *TANDEM)
    assert r.answer == answer
    assert r.answer_type == query.split("_")[1].capitalize()
    assert r.trace[-1] == key
    assert r.trace[-2] == 2


@pytest.mark.parametrize("same, obj, kept", [
    ("same_color", TRUCK, [2]),        # the tandem is red too; the truck itself is excluded
    ("same_color", SUV, []),
    ("same_material", SUV, [2]),
    ("same_size", TANDEM, [0]),
    ("same_shape", TRUCK, []),         # same subtype, not same category: the suv is not a truck
    ("same_texture", SUV, [0, 2]),
])
def test_same_excludes_the_object_itself(sc, same, obj, kept):
    r = run(sc, "count", same, *obj)
    assert r.trace[-2] == kept
    assert r.answer == len(kept)


def test_same_on_clevr(cl):
    assert run(cl, "count", "same_size", "unique", "filter_shape[cube]", "scene").trace[-2] == [2]


@pytest.mark.parametrize("op, a, b, result", [
    ("union", "filter_color[blue]", "filter_shape[tandem]", [1, 2]),
    ("union", "filter_color[red]", "filter_size[large]", [0, 2]),
    ("intersect", "filter_color[red]", "filter_material[rubber]", [2]),
    ("intersect", "filter_color[blue]", "filter_size[large]", []),
])
def test_union_intersect(sc, op, a, b, result):
    r = run(sc, "count", op, a, "scene", b, "scene")
    assert r.trace[-2] == result
    assert r.answer == len(result)


@pytest.mark.parametrize("op, a, b, answer", [
    # red: 2, blue: 1, large: 2
    ("equal_integer", "filter_color[red]", "filter_size[large]", "yes"),
    ("equal_integer", "filter_color[red]", "filter_color[blue]", "no"),
    ("less_than", "filter_color[blue]", "filter_color[red]", "yes"),
    ("less_than", "filter_color[red]", "filter_size[large]", "no"),
    ("greater_than", "filter_color[red]", "filter_color[blue]", "yes"),
    ("greater_than", "filter_color[blue]", "filter_color[red]", "no"),
])
def test_compare_integers(sc, op, a, b, answer):
    r = run(sc, op, "count", a, "scene", "count", b, "scene")
    assert (r.answer, r.answer_type) == (answer, "Bool")
    assert r.trace[-1] is (answer == "yes")


@pytest.mark.parametrize("attr, x, y, answer", [
    ("color", TRUCK, TANDEM, "yes"),
    ("color", TRUCK, SUV, "no"),
    ("material", SUV, TANDEM, "yes"),
    ("shape", TRUCK, SUV, "no"),       # both cars, different shapes
    ("shape", TRUCK, TRUCK, "yes"),
    ("size", SUV, TANDEM, "no"),
])
def test_equal_attribute(sc, attr, x, y, answer):
    assert run(sc, f"equal_{attr}", f"query_{attr}", *x, f"query_{attr}", *y).answer == answer


def test_relate_uses_the_given_relationships(sc):
    # from the coordinates the suv (1) would be right of the truck; the given relationships say 2
    r = run(sc, "query_shape", "unique", "relate[right]", *TRUCK)
    assert r.trace[-3] == [2]
    assert r.answer == "tandem bike"
    assert run(sc, "count", "relate[front]", *TANDEM).answer == 0


def test_relate_from_coordinates(cl):
    # right of the cylinder (-1, 1): cube (0, 0) and sphere (1, 0); behind the cube: the cylinder
    assert run(cl, "count", "relate[right]", "unique", "filter_shape[cylinder]", "scene").trace[-2] == [0, 1]
    assert run(cl, "query_shape", "unique", "relate[behind]", "unique", "filter_shape[cube]",
               "scene").answer == "cylinder"


# ---------------------------------------------------------------------- parts
def test_object2part_on_an_object(sc):
    r = run(sc, "query_color", "unique", "part2object", "object2part", *TRUCK)
    assert r.trace[3] == ["0_13", "0_15"]  # only the parts the scene lists, in part-list order
    assert r.trace[4] == [0]
    assert r.answer == "red"


def test_object2part_on_a_set(sc):
    r = run(sc, "count", "part2object", "object2part", "filter_color[red]", "scene")
    assert r.trace[2] == ["0_13", "0_15", "2_1", "2_3"]
    assert r.trace[3] == [0, 2]


def test_object2part_of_an_object_without_listed_parts(superclevr, sc_json):
    sc_json["objects"][1]["parts"] = {}
    s = SymbolicScene.from_json(sc_json, superclevr)
    r = run(s, "count", "part2object", "object2part", *SUV)
    assert (r.trace[3], r.trace[4], r.answer) == ([], [], 0)


def test_part2object_on_a_part(sc):
    r = run(sc, "query_shape", "unique", "part2object", "uniquepart",
            "partfilter_partname[wheel_front]", "object2part", "scene")
    assert r.trace[:6] == [[0, 1, 2], ["0_13", "0_15", "1_11", "2_1", "2_3"], ["2_1"], "2_1", [2], 2]
    assert r.answer == "tandem bike"


def test_part2object_on_a_set(sc):
    r = run(sc, "count", "part2object", "partfilter_partname[wheel]", "object2part", "scene")
    assert r.trace[2] == ["0_15", "1_11", "2_1"]
    assert r.trace[3] == [0, 1, 2]
    assert r.answer == 3


@pytest.mark.parametrize("tokens, kept", [
    # parts not described otherwise take their object's attributes: the fork is red (its object's)
    (("partfilter_color[red]",), ["0_13", "2_3"]),
    (("partfilter_material[metal]",), ["0_15", "2_3"]),
    (("partfilter_size[small]",), ["1_11"]),
    (("partfilter_texture[none]",), ["0_13", "0_15", "1_11", "2_1", "2_3"]),
    (("partfilter_color[blue]", "partfilter_partname[wheel]"), ["0_15"]),
])
def test_partfilters(sc, tokens, kept):
    r = run(sc, "count", "part2object", *tokens, "object2part", "scene")
    assert r.trace[-3] == kept


@pytest.mark.parametrize("partname, query, answer, key", [
    ("front_left_wheel", "partquery_partname", "front left wheel", "front_left_wheel"),
    ("wheel_front", "partquery_partname", "front wheel", "wheel_front"),
    ("back_left_wheel", "partquery_color", "yellow", "yellow"),
    ("fork", "partquery_material", "metal", "metal"),
    ("fork", "partquery_color", "red", "red"),
    ("hood", "partquery_size", "large", "large"),
])
def test_partquery(sc, partname, query, answer, key):
    r = run(sc, query, "uniquepart", f"partfilter_partname[{partname}]", "object2part", "scene")
    assert r.answer == answer
    assert r.trace[-1] == key


def test_partquery_partname_via_unique_of_a_part_set(sc):
    # the official engine applies plain `unique` to part sets too
    r = run(sc, "partquery_partname", "unique", "partfilter_color[green]", "object2part", "scene")
    assert r.trace[-2] == "2_1"
    assert (r.answer, r.answer_type) == ("front wheel", "Partname")


# ---------------------------------------------------------------------- failures
@pytest.mark.parametrize("flt, size", [("filter_shape[bus]", 0), ("filter_color[red]", 2)])
def test_unique_needs_exactly_one(sc, flt, size):
    with pytest.raises(UniquenessError) as exc:
        run(sc, "query_shape", "unique", flt, "scene")
    e = exc.value
    assert exc.type is UniquenessError
    assert isinstance(e, ExecutionError) and not isinstance(e, InvalidProgram)
    assert (e.size, e.node, e.function) == (size, 2, "unique")
    assert str(e) == f"node 2 (unique): expects exactly one element, the set has {size}"


def test_unique_of_part_set_needs_exactly_one(sc):
    with pytest.raises(UniquenessError) as exc:
        run(sc, "partquery_color", "unique", "partfilter_partname[wheel]", "object2part", "scene")
    assert (exc.value.size, exc.value.node) == (3, 3)
    assert str(exc.value) == "node 3 (unique): expects exactly one element, the set has 3"


def test_uniquepart_failure_names_uniquepart(sc):
    with pytest.raises(UniquenessError) as exc:
        run(sc, "partquery_color", "uniquepart", "partfilter_partname[door]", "object2part", "scene")
    assert (exc.value.size, exc.value.node, exc.value.function) == (0, 3, "uniquepart")
    assert str(exc.value).startswith("node 3 (uniquepart): ")


def test_invalid_program_is_rejected_before_execution(sc):
    with pytest.raises(InvalidProgram, match=r"^node 1 \(filter_color\): value 'pink'"):
        run(sc, "count", "filter_color[pink]", "scene")


def test_run_batch_returns_the_error_in_place(sc, cl, superclevr):
    ex = DeterministicExecutor(superclevr)
    programs = [Program.from_prefix(t) for t in (
        ("count", "filter_shape[car]", "scene"),
        ("query_color", "unique", "filter_color[red]", "scene"),          # 2 red objects: fails
        ("partquery_partname", "uniquepart", "partfilter_color[yellow]", "object2part", "scene"),
        ("exist", "filter_shape[bus]", "scene"),
    )]
    other = SymbolicScene.from_json({"objects": [], "relationships": {r: [] for r in superclevr.relations}},
                                    superclevr)
    answers = ex.run_batch(programs + programs[:1], [sc, other], [0, 0, 0, 0, 1])
    assert answers[0] == 2
    assert isinstance(answers[1], UniquenessError) and answers[1].size == 2 and answers[1].node == 2
    assert answers[2:] == ["back left wheel", "no", 0]
