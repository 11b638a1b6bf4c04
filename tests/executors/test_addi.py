"""Super-CLEVR's 22nd shape, ``addi`` ("regular car"), against the official engine's semantics.

The official question generator's metadata (``metadata_part.json``, ``properties_cgpart.json``)
lists ``addi`` under ``car``; its image generator never places one (``part_dict.json`` has no
entry), so questions may name it over scenes that hold none. The official engine then filters to
the empty set: ``count`` 0, ``exist`` no, ``unique`` invalid (the generator drops the state; our
executors raise :class:`UniquenessError`), and ``filter_shape[car]`` keeps every car, an ``addi``
too if a scene had one (its ``_shape_hier`` maps ``addi`` to ``car``).

Every body runs over both executors (deterministic; probabilistic in both count/exist modes).
"""
from __future__ import annotations

import copy

import pytest

from executors import (DeterministicExecutor, ExecutionError, Program, ProbabilisticExecutor, SceneLikelihoods,
                       SymbolicScene, UniquenessError)
from executors.io import normalize_answer

EXECUTORS = ("deterministic", "threshold", "exact")


def _run(kind, scene, program):
    """Answer of ``program`` on ``scene`` (a SymbolicScene, or SceneLikelihoods for the
    probabilistic executor)."""
    if kind == "deterministic":
        return DeterministicExecutor(scene.ontology).run(program, scene).answer
    lik = SceneLikelihoods.from_scene(scene) if isinstance(scene, SymbolicScene) else scene
    return ProbabilisticExecutor(lik.ontology, mode=kind).run(program, lik).answer


@pytest.fixture(params=EXECUTORS)
def executor(request):
    return request.param


ADDI = ("filter_shape[addi]", "scene")
TRUCK = ("unique", "filter_shape[truck]", "scene")

#: On ``sc_json`` (0 truck, 1 suv, 2 tandem bike; no addi), answers as the official engine gives them.
CASES = [
    (("count",) + ADDI, 0),
    (("exist",) + ADDI, "no"),
    (("count", "filter_shape[car]", "scene"), 2),                     # the car category: truck and suv
    (("exist", "filter_color[red]") + ADDI, "no"),
    (("exist", "filter_shape[addi]", "filter_color[red]", "scene"), "no"),
    (("count", "union", "filter_shape[addi]", "scene", "filter_shape[truck]", "scene"), 1),
    (("count", "intersect", "filter_shape[addi]", "scene", "filter_shape[car]", "scene"), 0),
    (("equal_integer", "count") + ADDI + ("count", "filter_shape[aeroplane]", "scene"), "yes"),
    (("greater_than", "count", "filter_shape[car]", "scene", "count") + ADDI, "yes"),
    (("less_than", "count") + ADDI + ("count", "filter_shape[bus]", "scene"), "no"),
    (("count", "filter_shape[addi]", "relate[left]") + TRUCK, 0),
    (("exist", "filter_shape[addi]", "same_color") + TRUCK, "no"),
    (("count", "part2object", "object2part") + ADDI, 0),
]


@pytest.mark.parametrize("tokens, answer", CASES)
def test_questions_naming_addi(executor, superclevr, sc_json, tokens, answer):
    scene = SymbolicScene.from_json(sc_json, superclevr)
    assert _run(executor, scene, Program.from_prefix(tokens)) == answer


@pytest.mark.parametrize("tokens, node", [
    (("query_color", "unique") + ADDI, 2),
    (("query_shape", "unique", "filter_shape[addi]", "filter_color[red]", "scene"), 3),
    (("count", "same_shape", "unique") + ADDI, 2),
    (("equal_object",) + TRUCK + ("unique",) + ADDI, 5),
    (("partquery_color", "uniquepart", "partfilter_color[blue]", "object2part", "unique") + ADDI, 2),
])
def test_unique_of_addi_fails_as_in_the_official_engine(executor, superclevr, sc_json, tokens, node):
    """The official engine's ``unique`` returns ``__INVALID__`` on the empty set and the generator
    never emits such a question; both executors raise at that node."""
    scene = SymbolicScene.from_json(sc_json, superclevr)
    with pytest.raises(UniquenessError) as exc:
        _run(executor, scene, Program.from_prefix(tokens))
    assert (exc.type, exc.value.node, exc.value.function) == (UniquenessError, node, "unique")


def test_old_21_column_likelihoods_answer_alike(superclevr, sc_json):
    """Likelihoods written before addi joined the ontology (21 shape columns) read with addi at 0
    and answer every case like one-hot 22-column likelihoods."""
    scene = SymbolicScene.from_json(sc_json, superclevr)
    doc = SceneLikelihoods.from_scene(scene).to_json()
    assert len(doc["attributes"]["shape"][0]) == 22
    doc["attributes"]["shape"] = [row[:21] for row in doc["attributes"]["shape"]]
    old = SceneLikelihoods.from_json(doc, superclevr)
    assert old.attributes["shape"].shape == (3, 22) and not old.attributes["shape"][:, 21].any()
    for mode in ("threshold", "exact"):
        for tokens, answer in CASES:
            assert _run(mode, old, Program.from_prefix(tokens)) == answer, (mode, tokens)


def test_a_scene_holding_an_addi_is_read_as_a_car(executor, superclevr, sc_json):
    """No released scene holds one, but the official engine's semantics are clear if one did:
    ``filter_shape[addi]`` keeps it, ``filter_shape[car]`` too (``_shape_hier``), and its spoken
    name is "regular car"."""
    d = copy.deepcopy(sc_json)
    d["objects"][1]["shape"] = "addi"
    del d["objects"][1]["parts"]  # addi has no parts
    scene = SymbolicScene.from_json(d, superclevr)
    for tokens, answer in [(("count",) + ADDI, 1), (("count", "filter_shape[car]", "scene"), 2),
                           (("query_shape", "unique") + ADDI, "regular car"),
                           (("query_color", "unique") + ADDI, "blue"),
                           (("count", "filter_shape[suv]", "scene"), 0)]:
        assert _run(executor, scene, Program.from_prefix(tokens)) == answer, tokens


# ---------------------------------------------------------------------- the released questions
def _names_addi(q: dict) -> bool:
    return "regular car" in q["question"] or any("addi" in (n.get("value_inputs") or n.get("side_inputs") or [])
                                                 for n in q["program"])


@pytest.fixture(scope="module", params=["sc_objects", "sc_parts"])
def released(request):
    return request.getfixturevalue(request.param)


def test_released_questions_naming_addi_answer_as_released(released):
    """Every official question that names addi validates (``parse_program`` in the fixture would
    have raised) and both executors give its answer. The stored excerpts (100 object and 450 part
    questions over 10 scenes) hold none, so the next test derives such questions from them."""
    named = [i for i, q in enumerate(released.questions) if _names_addi(q)]
    det = DeterministicExecutor(released.ontology)
    for i in named:
        scene = released.scenes[released.scene_of[i]]
        want = normalize_answer(released.questions[i]["answer"])
        assert normalize_answer(det.run(released.programs[i], scene).answer) == want, i
        for mode in ("threshold", "exact"):
            got = ProbabilisticExecutor(released.ontology, mode=mode).run(released.programs[i], scene).answer
            assert normalize_answer(got) == want, (i, mode)


def _with_addi(q: dict) -> list | None:
    """The program of ``q`` with the value of every ``filter_shape`` node whose released
    ``_output`` is empty replaced by ``addi`` (None when it has no such node). The official engine
    keeps an empty output empty under that change, so every node output and the answer stay those
    the release records."""
    prog = copy.deepcopy(q["program"])
    changed = False
    for n in prog:
        if (n.get("type") or n.get("function")) == "filter_shape" and n["_output"] == []:
            key = "value_inputs" if "value_inputs" in n else "side_inputs"
            n[key] = ["addi"]
            changed = True
    return prog if changed else None


def test_released_questions_with_addi_in_their_empty_shape_filters(sc_objects):
    """21 of the 100 released object questions filter a shape to the empty set; naming addi there
    instead is a question the official engine answers exactly as released (count 0, exist no, or
    whatever follows from the empty set). Deterministic traces match every released ``_output``;
    the probabilistic executor (one-hot likelihoods, both modes) gives every answer."""
    det = DeterministicExecutor(sc_objects.ontology)
    probs = {m: ProbabilisticExecutor(sc_objects.ontology, mode=m) for m in ("threshold", "exact")}
    programs, scene_of, answers = [], [], []
    for q, k in zip(sc_objects.questions, sc_objects.scene_of):
        prog = _with_addi(q)
        if prog is None:
            continue
        p = Program.from_json(prog, sc_objects.ontology)  # validates: addi is a shape
        r = det.run(p, sc_objects.scenes[k])
        assert normalize_answer(r.answer) == normalize_answer(q["answer"]), q["question"]
        assert r.trace == [n["_output"] for n in q["program"]], q["question"]
        programs.append(p)
        scene_of.append(k)
        answers.append(normalize_answer(q["answer"]))
    assert len(programs) == 21
    assert {p.nodes[-1].function for p in programs} >= {"count", "exist"}
    liks = [SceneLikelihoods.from_scene(s) for s in sc_objects.scenes]
    for mode, ex in probs.items():
        got = ex.run_batch(programs, liks, scene_of)
        bad = [(i, a, w) for i, (a, w) in enumerate(zip(got, answers))
               if isinstance(a, ExecutionError) or normalize_answer(a) != w]
        assert bad == [], (mode, bad[:5])
    assert not any(o["shape"] == "addi" for s in sc_objects.scenes for o in s.objects)
