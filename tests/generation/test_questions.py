"""Question engine: templates, instantiation rules, redundancy levels, obj_map, balance, bounds."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from executors import DeterministicExecutor, ExecutionError, Program, SymbolicScene, load_ontology
from executors.dsl import SIGNATURES
from nsvqa.generation.questions import (GENERIC_NOUNS, LEVELS, PART_NOUNS, QuestionGenerator, TemplateError,
                                        attribute_words, load_templates, plural, synthetic_scene)

ONTO = load_ontology("superclevr")
EX = DeterministicExecutor(ONTO)
FILTER_KINDS = ("filter", "partfilter", "partfilter_partname")
DIRECTIONS = {"right": [0.656, 0.754, 0.0], "left": [-0.656, -0.754, 0.0], "behind": [-0.754, 0.656, 0.0],
              "front": [0.754, -0.656, 0.0], "above": [0.0, 0.0, 1.0], "below": [0.0, 0.0, -1.0]}


@pytest.fixture(scope="module")
def templates():
    return load_templates(ontology=ONTO)


def make_gen(templates, **kw) -> QuestionGenerator:
    return QuestionGenerator(ONTO, templates, **kw)


def hand_scene(objs, index=0) -> dict:
    """objs: (shape, color, material, size, (x, y), {part: (color, material)})."""
    objects = []
    for shape, color, material, size, (x, y), parts in objs:
        objects.append({"shape": shape, "color": color, "material": material, "size": size,
                        "3d_coords": [x, y, 0.5],
                        "parts": {p: {"color": c, "material": m, "size": size} for p, (c, m) in parts.items()}})
    rec = {"image_index": index, "image_filename": f"hand_{index:06d}.png", "split": "test",
           "directions": DIRECTIONS, "objects": objects}
    rec["relationships"] = SymbolicScene(ONTO, SymbolicScene.from_json(rec, ONTO).objects,
                                         coords=np.array([o["3d_coords"] for o in objects]),
                                         directions={k: np.array(v) for k, v in DIRECTIONS.items()}
                                         ).relation_lists()
    return rec


HAND = [
    hand_scene([("suv", "red", "metal", "large", (0, 0),
                 {"front_left_wheel": ("blue", "rubber"), "hood": ("yellow", "metal")}),
                ("school", "yellow", "rubber", "small", (2, 1), {"roof": ("red", "metal")}),
                ("road", "blue", "metal", "small", (-2, 1.5),
                 {"saddle": ("green", "rubber"), "wheel_front": ("gray", "metal")})], 0),
    hand_scene([("jet", "gray", "metal", "large", (0, 2), {"wing_left": ("red", "rubber"), "fin": ("cyan", "metal")}),
                ("sedan", "gray", "rubber", "small", (1.5, -1), {"trunk": ("purple", "rubber")}),
                ("chopper", "green", "metal", "large", (-1.5, -1.5),
                 {"gas_tank": ("red", "metal"), "seat": ("brown", "rubber"), "engine": ("yellow", "metal")}),
                ("sedan", "purple", "metal", "small", (-2.5, 2), {})], 1),
    hand_scene([("truck", "brown", "rubber", "large", (2.5, 2.5), {"back_left_wheel": ("green", "metal")}),
                ("tandem", "cyan", "metal", "small", (-2, 0),
                 {"fork": ("red", "rubber"), "rearlight": ("blue", "metal")}),
                ("articulated", "red", "metal", "large", (0.5, -2.5),
                 {"wheel_front_left": ("blue", "rubber"), "roof": ("gray", "metal")}),
                ("biplane", "yellow", "rubber", "small", (-0.5, 2), {"propeller": ("purple", "metal")}),
                ("mountain", "red", "rubber", "small", (2.5, -0.5), {"saddle": ("yellow", "metal")})], 2),
]


def synthetic(n, seed=7, start=100):
    rng = np.random.default_rng(seed)
    return [synthetic_scene(ONTO, rng, image_index=start + i) for i in range(n)]


@pytest.fixture(scope="module")
def reference_scenes(reference_fixtures):
    p = Path(reference_fixtures) / "superclevr" / "superCLEVR_scenes.json"
    if not p.exists():
        pytest.skip("superCLEVR_scenes.json not present")
    return json.loads(p.read_text())["scenes"]


def run_all(gen, scenes, level="rd", seed=0, **kw):
    out = []
    for s in scenes:
        rng = np.random.default_rng([seed, s["image_index"]])
        out += [(q, s) for q in gen.generate(s, rng, redundancy=level, **kw)]
    return out


# ---------------------------------------------------------------------- checks
def trace_of(q, scene):
    prog = Program.from_json(q["program"], ONTO)  # validates
    sym = SymbolicScene.from_json(scene, ONTO)
    return prog, sym, EX.run(prog, sym, trace=True)


def check_question(q, scene):
    prog, sym, res = trace_of(q, scene)
    assert res.answer == q["answer"], q
    assert q["redundancy"] in LEVELS
    assert q["image_index"] == scene["image_index"] and q["image_filename"] == scene["image_filename"]
    # every unique is unambiguous: the program prefix before it yields exactly one element
    for i, n in enumerate(prog):
        if n.function in ("unique", "uniquepart"):
            assert len(res.trace[n.inputs[0]]) == 1, (q["question"], i)
    # texts: no placeholder left, no texture 'none', a question
    assert "<" not in q["question"] and "[" not in q["question"] and "none" not in q["question"]
    assert q["question"][0].isupper() and q["question"].endswith("?")
    last = q["program"][-1]["type"]
    if last in ("count",):
        assert isinstance(q["answer"], int)
    elif last in ("exist", "equal_integer", "less_than", "greater_than") or last.startswith("equal_"):
        assert q["answer"] in ("yes", "no")
    elif last == "query_shape":
        assert q["answer"] in {ONTO.spoken_value("shape", v) for v in ONTO.values("shape")}
    elif last == "partquery_partname":
        assert q["answer"] in {ONTO.spoken_value("partname", v) for v in ONTO.part_names}
    check_obj_map(q, sym)


def words_of_object(o) -> set[str]:
    w = set()
    for a in ("size", "color", "material"):
        w |= set(attribute_words(ONTO, a, o[a]))
    cat = ONTO.category_of(o["shape"])
    nouns = (set(attribute_words(ONTO, "shape", o["shape"])) | set(attribute_words(ONTO, "shape", cat))
             | set(GENERIC_NOUNS))
    return w | nouns | {plural(x) for x in nouns}


def words_of_part(pa, name) -> set[str]:
    w = set()
    for a in ("color", "material"):
        w |= set(attribute_words(ONTO, a, pa[a]))
    keys = [k for k, names in ONTO.partname_filters.items() if name in names]
    return w | {ONTO.spoken_value("partname", k) for k in keys} | set(PART_NOUNS)


def check_obj_map(q, sym):
    text = q["question"]
    if any(n["type"] == "unique" for n in q["program"]):
        assert q["obj_map"], q  # (a question about empty sets only grounds nothing)
    for key, spans in q["obj_map"].items():
        if "_" in key:
            o, k = map(int, key.split("_"))
            name = ONTO.parts_of(sym.objects[o]["shape"])[k]
            allowed = words_of_part(sym.parts[o][name], name)
        else:
            allowed = words_of_object(sym.objects[int(key)])
        assert spans
        for s, e in spans:
            assert 0 <= s < e <= len(text)
            assert text[s:e].lower() in allowed, (key, text[s:e], text)


def remove_node(prog: Program, f: int) -> tuple[Program, dict]:
    """The program without node f (its consumers read f's input); old -> new index map."""
    src = prog[f].inputs[0]
    new, remap = [], {}
    for i, n in enumerate(prog):
        if i == f:
            continue
        remap[i] = len(new)
        ins = tuple(remap[src] if j == f else remap[j] for j in n.inputs)
        new.append(type(n)(n.function, ins, n.value_inputs))
    remap[f] = remap[src]
    return Program(tuple(new)), remap


def chain_end(prog: Program, i: int) -> int:
    """Follow the filter chain after node i (filters only) to its last node."""
    while True:
        nxt = [j for j, n in enumerate(prog) if i in n.inputs]
        if len(nxt) == 1 and SIGNATURES[prog[nxt[0]].function].kind in FILTER_KINDS:
            i = nxt[0]
        else:
            return i


def changed(prog, sym, base_trace, modified, remap, end) -> bool:
    try:
        res = EX.run(modified, sym, trace=True)
    except ExecutionError:
        return True
    return res.trace[remap[end]] != base_trace[end]


def _words(spoken: str) -> set[str]:
    return set(spoken.replace("head light", "headlight").replace("tail light", "taillight").split())


def visually_ambiguous_without(prog: Program, trace, f: int, sym, skip: bool = True) -> bool:
    """Whether the part filters of f's chain, without f (with it when not ``skip``), fit several
    parts in the image: every part of each object's shape, unlisted parts looking like their
    object, and a part-name value fitting every part whose spoken name holds its words (an
    independent re-implementation of the generator's rule)."""
    i = f
    while SIGNATURES[prog[i].function].kind in FILTER_KINDS:
        i = prog[i].inputs[0]
    if prog[i].function != "object2part":
        return False
    objs = trace[prog[i].inputs[0]]
    objs = [objs] if isinstance(objs, int) else objs
    filters, j = [], chain_end(prog, i)
    while j != i:
        if j != f or not skip:
            filters.append((prog[j].function.split("_", 1)[1], prog[j].value_inputs[0]))
        j = prog[j].inputs[0]
    fits = 0
    for o in objs:
        for name in ONTO.parts_of(sym.objects[o]["shape"]):
            look = sym.parts[o].get(name, sym.objects[o])
            ok = True
            for a, v in filters:
                if a == "partname":
                    ok &= (name in ONTO.partname_matching(v)
                           or _words(ONTO.spoken_value("partname", v)) <= _words(ONTO.spoken_value("partname", name)))
                else:
                    ok &= look[a] == v
            fits += ok
    return fits > 1


def filters_irreducible(q, scene) -> bool:
    prog, sym, res = trace_of(q, scene)
    for f, n in enumerate(prog):
        if SIGNATURES[n.function].kind in FILTER_KINDS:
            end = chain_end(prog, f)
            mod, remap = remove_node(prog, f)
            if not changed(prog, sym, res.trace, mod, remap, end) and \
                    not visually_ambiguous_without(prog, res.trace, f, sym):
                return False
    return True


def relates_needed(q, scene) -> bool:
    prog, sym, res = trace_of(q, scene)
    for r, n in enumerate(prog):
        if n.function != "relate":
            continue
        end = chain_end(prog, r)
        consumers = [j for j, m in enumerate(prog) if end in m.inputs]
        if end == r and consumers and prog[consumers[0]].function == "intersect":
            end = consumers[0]  # a raw relate (single-and): judge by the intersection it feeds
        nodes = list(prog.nodes)
        nodes[r] = type(n)("scene", (), ())
        mod = Program(tuple(nodes))
        if not changed(prog, sym, res.trace, mod, {i: i for i in range(len(prog))}, end):
            return False
    return True


# ---------------------------------------------------------------------- templates
def test_templates_load_and_cover_the_families(templates):
    assert len(templates) == 99
    per_file = Counter(t.filename for t in templates)
    assert per_file == {"zero_hop.json": 6, "one_hop.json": 6, "two_hop.json": 6, "three_hop.json": 6,
                        "comparison.json": 16, "compare_integer.json": 9, "single_and.json": 5,
                        "single_or.json": 8, "same_relate.json": 28, "part.json": 9}
    assert sum(t.kind == "part" for t in templates) == 9
    assert all(t.kind == "part" for t in templates if t.filename == "part.json")


def _write(tmp_path, tpl, name="bad.json"):
    (tmp_path / name).write_text(json.dumps({"group": "x", "templates": [tpl]}))
    return tmp_path


def test_template_errors_name_file_template_and_node(tmp_path):
    ok = {"name": "t", "nodes": [{"type": "scene"}, {"type": "filter_count", "inputs": [0], "ref": "A"}],
          "refs": {"A": {}}, "text": ["How many <A+>?"]}
    load_templates(_write(tmp_path, ok), ONTO)
    bad_type = dict(ok, nodes=[{"type": "scene"}, {"type": "filter_cout", "inputs": [0], "ref": "A"}])
    with pytest.raises(TemplateError, match=r"bad\.json, template 0 \(t\), node 1: unknown node type 'filter_cout'"):
        load_templates(_write(tmp_path, bad_type), ONTO)
    # count of an Object: the executors' signature table rejects it, naming the node
    wrong = dict(ok, nodes=[{"type": "scene"}, {"type": "filter_unique", "inputs": [0], "ref": "A"},
                            {"type": "count", "inputs": [1]}])
    with pytest.raises(TemplateError, match=r"template 0 \(t\), node 2 \(count\): .*Object"):
        load_templates(_write(tmp_path, wrong), ONTO)
    no_ref = dict(ok, text=["How many things?"])
    with pytest.raises(TemplateError, match=r"text 0: does not mention \['A'\]"):
        load_templates(_write(tmp_path, no_ref), ONTO)
    opt = dict(ok, text=["How many [<A+>]?"])
    with pytest.raises(TemplateError, match="inside an optional"):
        load_templates(_write(tmp_path, opt), ONTO)
    bad_attr = dict(ok, refs={"A": {"exclude": ["colour"]}})
    with pytest.raises(TemplateError, match="reference 'A', field 'exclude'"):
        load_templates(_write(tmp_path, bad_attr), ONTO)
    with pytest.raises(FileNotFoundError):
        load_templates(tmp_path / "missing", ONTO)


# ---------------------------------------------------------------------- questions
@pytest.mark.parametrize("level", LEVELS)
def test_hand_scenes_every_question_is_valid(templates, level):
    gen = make_gen(templates)
    qs = run_all(gen, HAND, level)
    assert len(qs) >= 3 * 12
    for q, s in qs:
        check_question(q, s)


def test_reference_scenes_every_question_is_valid(templates, reference_scenes):
    for level in LEVELS:
        gen = make_gen(templates)
        qs = run_all(gen, reference_scenes, level)
        assert len(qs) == 20 * len(reference_scenes), gen.last_report
        for q, s in qs:
            check_question(q, s)


@pytest.fixture(scope="module")
def levels_run(templates):
    """The same 12 scenes at the three levels (fresh generators, same seeds)."""
    scenes = HAND + synthetic(9)
    gens = {lvl: make_gen(templates) for lvl in LEVELS}
    runs = {lvl: run_all(gens[lvl], scenes, lvl) for lvl in LEVELS}
    for g in gens.values():  # the search never builds a program the executor rejects
        assert not {"execution", "render"} & set(g.rejections), g.rejections
    return scenes, runs


def test_no_degenerate_relate(levels_run):
    _, runs = levels_run
    for lvl in ("rd-", "rd"):
        for q, s in runs[lvl]:
            assert relates_needed(q, s), (lvl, q["question"])


def test_rd_minus_has_no_redundant_filter_and_rd_plus_more(levels_run):
    _, runs = levels_run
    for q, s in runs["rd-"]:
        assert filters_irreducible(q, s), q["question"]
    nf = {lvl: np.mean([sum(n["type"].startswith(("filter_", "partfilter_")) for n in q["program"])
                        for q, _ in runs[lvl]]) for lvl in LEVELS}
    assert nf["rd-"] < nf["rd"] < nf["rd+"]
    # rd+ adds relations that hold
    rel = {lvl: np.mean([sum(n["type"] == "relate" for n in q["program"]) for q, _ in runs[lvl]]) for lvl in LEVELS}
    assert rel["rd+"] > rel["rd"] == rel["rd-"]
    for q, s in runs["rd"] + runs["rd+"]:
        check_question(q, s)


def test_levels_ask_the_same_questions(levels_run):
    _, runs = levels_run
    hashes = {lvl: [q["question_hash"] for q, _ in runs[lvl]] for lvl in LEVELS}
    assert hashes["rd-"] == hashes["rd"] == hashes["rd+"]
    for a, b, c in zip(runs["rd-"], runs["rd"], runs["rd+"]):
        assert a[0]["answer"] == b[0]["answer"] == c[0]["answer"]
        assert a[0]["question_family_index"] == c[0]["question_family_index"]
        # grounded objects of rd- are grounded at every level
        assert set(a[0]["obj_map"]) <= set(c[0]["obj_map"])
    assert len(set(hashes["rd"])) == len(hashes["rd"])


def test_determinism(templates):
    scenes = HAND + synthetic(3)
    a = run_all(make_gen(templates), scenes, "rd", seed=3)
    b = run_all(make_gen(templates), scenes, "rd", seed=3)
    assert [q for q, _ in a] == [q for q, _ in b]
    # resuming from a saved state gives the same questions for the remaining scenes
    g1 = make_gen(templates)
    first = run_all(g1, scenes[:3], "rd", seed=3)
    g2 = make_gen(templates)
    g2.load_state(json.loads(json.dumps(g1.state())))
    rest = run_all(g2, scenes[3:], "rd", seed=3)
    assert [q for q, _ in first + rest] == [q for q, _ in a]
    c = run_all(make_gen(templates), scenes, "rd", seed=4)
    assert [q["question"] for q, _ in a] != [q["question"] for q, _ in c]


def test_families_are_covered(templates, levels_run):
    scenes, _ = levels_run
    gen = make_gen(templates)
    qs = run_all(gen, scenes + synthetic(8, seed=11, start=300), "rd")
    fams = Counter((q["template_filename"], q["question_family_index"]) for q, _ in qs)
    part = {f for f in fams if f[0] == "part.json"}
    assert part == {("part.json", i) for i in range(9)}
    assert len(fams) - len(part) >= 85, sorted(fams)


def test_answers_are_balanced_per_family(templates):
    gen = make_gen(templates)
    qs = run_all(gen, synthetic(30, seed=21, start=500), "rd", n_object=30)
    per = defaultdict(Counter)
    for q, _ in qs:
        per[(q["template_filename"], q["question_family_index"])][q["answer"]] += 1
    checked = 0
    for fam, c in per.items():
        top = c.most_common(2)
        second = top[1][1] if len(top) > 1 else 0
        assert top[0][1] <= gen.balance_slack + gen.balance_ratio * second, (fam, c)
        if sum(c.values()) >= 8:
            checked += 1
            assert top[0][1] / sum(c.values()) <= 0.7, (fam, c)
    assert checked >= 10
    yes = sum(q["answer"] == "yes" for q, _ in qs)
    no = sum(q["answer"] == "no" for q, _ in qs)
    assert 0.4 <= yes / (yes + no) <= 0.6


def test_bounded_search_reports_impossible_scenes(templates):
    gen = make_gen(templates, max_tries=200)
    one = hand_scene([("suv", "red", "metal", "large", (0, 0), {})], 9)
    qs = gen.generate(one, np.random.default_rng(0))
    rep = gen.last_report
    assert len(qs) < 20 and not rep["complete"]
    assert rep["produced"]["object"] == sum(q["template_filename"] != "part.json" for q in qs)
    assert rep["produced"]["part"] == 0
    assert any("part questions: 0 of 10" in r for r in rep["reasons"])
    assert all(a <= 200 for a in rep["attempts"].values())
    for q in qs:
        check_question(q, one)
    empty = {"image_index": 10, "image_filename": "e.png", "split": "test", "objects": [],
             "relationships": {r: [] for r in ONTO.relations}}
    assert gen.generate(empty, np.random.default_rng(0)) == []
    assert gen.last_report["complete"] is False
    with pytest.raises(ValueError, match="redundancy"):
        gen.generate(one, np.random.default_rng(0), redundancy="rd++")


def test_part_references_are_unambiguous_in_the_image(templates, levels_run):
    _, runs = levels_run
    checked = 0
    for lvl in LEVELS:
        for q, s in runs[lvl]:
            prog, sym, res = trace_of(q, s)
            for i, n in enumerate(prog):
                if n.function == "unique" and SIGNATURES[prog[n.inputs[0]].function].kind in FILTER_KINDS[1:]:
                    # the whole part description fits exactly one part of the image
                    end = n.inputs[0]
                    assert not visually_ambiguous_without(prog, res.trace, end, sym, skip=False), q["question"]
                    assert len(res.trace[end]) == 1
                    checked += 1
    assert checked > 50


def test_part_descriptions_are_unambiguous_in_the_image(templates):
    """A part phrase must not fit an unlisted part of the same object (which looks like its object)."""
    gen = make_gen(templates)
    # the suv's listed front left wheel is blue; its three other wheels are red like the body
    scene = hand_scene([("suv", "red", "metal", "large", (0, 0), {"front_left_wheel": ("blue", "rubber")}),
                        ("suv", "green", "rubber", "small", (2, 2), {"trunk": ("yellow", "metal")})], 11)
    qs = gen.generate(scene, np.random.default_rng(1), n_object=0, n_part=30, redundancy="rd-")
    assert qs
    for q in qs:
        check_question(q, scene)
        for n in q["program"]:
            if n["type"] == "partfilter_partname" and n["value_inputs"] == ["wheel"]:
                # a bare "wheel" would be ambiguous: a color or material must come with it
                assert any(m["type"] in ("partfilter_color", "partfilter_material") for m in q["program"])


def test_textures_are_optional_and_never_none(templates):
    rng = np.random.default_rng(3)
    scenes = [synthetic_scene(ONTO, rng, image_index=700 + i, textures=True) for i in range(6)]
    plain = run_all(make_gen(templates), scenes, "rd+")
    assert not any("texture" in n["type"] for q, _ in plain for n in q["program"])
    textured = run_all(make_gen(templates, use_texture=True), scenes, "rd+")
    assert any("texture" in n["type"] for q, _ in textured for n in q["program"])
    for q, s in textured:
        assert all(n["value_inputs"] != ["none"] for n in q["program"])
        prog, sym, res = trace_of(q, s)
        assert res.answer == q["answer"]


def test_synthetic_scene_is_a_valid_record():
    rec = synthetic_scene(ONTO, np.random.default_rng(0), 5, image_index=3)
    sym = SymbolicScene.from_json(rec, ONTO)
    assert len(sym) == 5 and rec["image_index"] == 3
    assert rec["relationships"] == sym.relation_lists()
    assert all(len(o["parts"]) <= 3 for o in rec["objects"])


def _part_program(shape_filter, key):
    from executors import Node
    nodes = [Node("scene"), Node("filter_color", (0,), ("red",))]
    if shape_filter:
        nodes.append(Node("filter_shape", (1,), (shape_filter,)))
    nodes += [Node("unique", (len(nodes) - 1,)), Node("object2part", (len(nodes),)),
              Node("partfilter_partname", (len(nodes) + 1,), (key,))]
    return nodes


@pytest.mark.parametrize("shape_filter,key,ambiguous", [
    (None, "wheel_back_left", True),          # "the back left wheel of the red thing": bus or car key?
    (None, "back_left_wheel", True),
    ("school", "wheel_back_left", False),     # a bus: its key
    ("car", "back_left_wheel", False),        # every car model uses this key
    (None, "wheel", False),                   # generic names have one key
    (None, "back_left_door", False),          # only cars have it: no other key is spoken alike
])
def test_ambiguous_part_name_rule(templates, shape_filter, key, ambiguous):
    gen = make_gen(templates)
    got = gen.ambiguous_part_name(_part_program(shape_filter, key))
    assert (got == key) if ambiguous else got is None


def test_generated_part_names_are_determined_by_the_words(templates):
    """A bus and a car both have a part spoken "back left wheel" under different keys; questions
    about it name the model or category, unless the check is turned off (the official engine)."""
    scene = hand_scene([("school", "red", "metal", "large", (0, 0), {"wheel_back_left": ("blue", "rubber")}),
                        ("sedan", "green", "rubber", "small", (2, 2), {"back_left_wheel": ("yellow", "metal")}),
                        ("jet", "gray", "metal", "small", (-2, 1), {"wheel_back_left": ("purple", "rubber")})], 12)
    found = {}
    for check in (True, False):
        gen = make_gen(templates, unambiguous_part_names=check)
        qs = []
        for seed in range(6):
            qs += gen.generate(scene, np.random.default_rng(seed), n_object=0, n_part=20, redundancy="rd-")
        from executors import Node
        found[check] = sum(bool(gen.ambiguous_part_name(
            [Node(n["type"], tuple(n["inputs"]), tuple(n["value_inputs"])) for n in q["program"]])) for q in qs)
        if check:
            assert gen.rejections["ambiguous_part_name"] > 0
            assert any("wheel_back_left" in json.dumps(q["program"]) for q in qs)
    assert found[True] == 0 and found[False] > 0


def test_visual_levels_share_questions_each_answered_at_its_level(templates):
    """With the easy form of a layout as a companion, every program (at every redundancy level)
    runs on it, part descriptions use only what a part shows at both levels, and ``answer_scene``
    answers the same questions at its own level."""
    from nsvqa.generation.scenes import plain_parts, question_scene

    ex = DeterministicExecutor(ONTO)
    made = Counter()
    for k, mid in enumerate(HAND + synthetic(6)):
        ask, (easy,) = question_scene(mid)
        assert [o["parts"] for o in easy["objects"]] == [plain_parts(o, o["parts"]) for o in mid["objects"]]
        gen = make_gen(templates)
        qs = gen.generate(ask, np.random.default_rng(k), companions=[easy], answer_scene=easy)
        assert "visual_level" not in gen.last_report["rejected"]  # the search only describes what both show
        free = make_gen(templates).generate(ask, np.random.default_rng(k))
        made.update(part=sum(q["template_filename"].startswith("part") for q in qs),
                    free_part=sum(q["template_filename"].startswith("part") for q in free))
        sym_easy = SymbolicScene.from_json(easy, ONTO)
        sym_mid = SymbolicScene.from_json(mid, ONTO)
        for q in qs:
            program = Program.from_json(q["program"], ONTO)
            assert ex.run(program, sym_easy).answer == q["answer"]  # answered at the easy level
            ex.run(program, sym_mid)  # and well-posed at mid
            for d in (n for n in q["program"] if n.get("type", n.get("function", "")).startswith("partfilter_")):
                attr = d.get("type", d.get("function"))[len("partfilter_"):]
                assert attr not in ("color",), q["question"]  # a recoloured part's colour is not shown at easy
    assert made["part"] >= 0.8 * made["free_part"] > 0, made


def test_absent_shapes_include_addi_as_in_the_official_generator(templates):
    """The official generator's empty filter options draw shapes from all 22 subtypes of its
    metadata, ``addi`` ("regular car") included, although no scene holds one; ours draws the
    shapes of a set description that need not match the scene from the same 22 values. Such a
    question counts or tests an empty set; no unique reference ever names ``addi``."""
    fams = [t for t in templates if t.filename == "zero_hop.json" and t.index in (0, 1)]  # count, exist
    qs = run_all(make_gen(fams), synthetic(100, seed=7, start=100), "rd", n_object=10, n_part=0)
    named = [(q, s) for q, s in qs if any("addi" in n["value_inputs"] for n in q["program"])]
    assert {q["program"][-1]["type"] for q, _ in named} == {"count", "exist"}
    for q, s in named:
        check_question(q, s)
        assert "regular car" in q["question"]
        assert q["answer"] == (0 if q["program"][-1]["type"] == "count" else "no")
        assert all(o["shape"] != "addi" for o in s["objects"])
    assert len(named) < 0.05 * len(qs)  # the scenes' own shapes are asked about far more often
