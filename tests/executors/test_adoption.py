"""What another VQA project needs to adopt the executors (issue 60): a license and a citation,
the program and scene formats of NS-VQA, clevr-iep and Super-CLEVR, the documented differences,
the installed commands, and the docs' snippets (run here on the bundled examples)."""
from __future__ import annotations

import ast
import contextlib
import io
import os
import re
from pathlib import Path

import numpy as np
import pytest

from executors import (DeterministicExecutor, InvalidProgram, Node, ProbabilisticExecutor, Program,
                       SceneLikelihoods, SymbolicScene, load_ontology)
from executors.program import _read_known

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "executors.md"
#: NS-VQA's reserved program tokens (its vocab.json)
SPECIAL = {"<NULL>": 0, "<START>": 1, "<END>": 2, "<UNK>": 3}


def _toml() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((REPO / "pyproject.toml").read_text())


# ---------------------------------------------------------------------- license, citation
def test_license_is_mit_and_declared_in_pyproject():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the nsvqa authors" in text
    project = _toml()["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]


def test_citation_cites_the_project_and_the_papers_it_implements():
    text = (REPO / "CITATION.cff").read_text()
    assert text.startswith("cff-version: 1.2.0")
    assert "license: MIT" in text
    assert 'title: "nsvqa' in text
    assert "Super-CLEVR: A Virtual Benchmark to Diagnose Domain Robustness in Visual Reasoning" in text
    assert "Visual Representation Learning Does Not Generalize Strongly Within the Same Domain" in text
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load(text)
    assert [r["year"] for r in cff["references"]] == [2023, 2022]


# ---------------------------------------------------------------------- program orders
TWO_INPUT = "greater_than count filter_material[rubber] scene count filter_shape[cube] scene"


def test_from_postfix_inverts_to_postfix_and_keeps_input_order():
    p = Program.from_prefix(TWO_INPUT)
    post = p.to_postfix()
    assert post == ["scene", "filter_material[rubber]", "count", "scene", "filter_shape[cube]", "count",
                    "greater_than"]
    assert Program.from_postfix(post) == p
    assert Program.from_postfix(" ".join(post)) == p
    # the old trap: reversed postfix read as prefix swaps the two inputs of greater_than
    swapped = Program.from_prefix(list(reversed(post)))
    assert swapped != p and swapped.nodes[-1].function == "greater_than"


def test_from_postfix_round_trips_every_example_program(example_programs):
    for p in example_programs:
        assert Program.from_postfix(p.to_postfix()) == p.canonical()
        assert Program.from_prefix(" ".join(p.to_prefix())) == p.canonical()


@pytest.mark.parametrize("tokens, message", [
    ("scene scene count", "postfix program of 3 tokens leaves 2 results"),
    ("count", "token 0 ('count') takes 1 input(s), 0 before it"),
    ("", "empty postfix program"),
    ("scene bogus", "unknown function 'bogus' at token 1"),
])
def test_from_postfix_rejects_what_is_not_one_tree(tokens, message):
    with pytest.raises(InvalidProgram, match=re.escape(message)):
        Program.from_postfix(tokens)


def test_from_prefix_reads_a_string_as_tokens():
    p = Program.from_prefix("count filter_color[red] scene")
    assert [n.function for n in p] == ["scene", "filter_color", "count"]
    assert Program.from_prefix("  count\tfilter_color[red]\nscene ") == p


def test_from_prefix_refuses_non_str_tokens_and_says_what_to_pass():
    with pytest.raises(InvalidProgram, match=r"token 0 is int 4, not a str; pass tokens .*from_token_ids"):
        Program.from_prefix([4, 11, 16])


# ---------------------------------------------------------------------- NS-VQA parser output
def _vocab(tokens):
    return {"program_token_to_idx": {**SPECIAL, **{t: 4 + k for k, t in enumerate(tokens)}}}


def test_from_token_ids_reads_nsvqa_parser_output():
    vocab = _vocab(["count", "filter_color[red]", "scene"])
    want = Program.from_prefix("count filter_color[red] scene")
    assert Program.from_token_ids([1, 4, 5, 6, 2, 0, 0], vocab) == want
    assert Program.from_token_ids(np.array([1, 4, 5, 6, 2, 6, 6]), vocab) == want  # after <END>: ignored
    assert Program.from_token_ids([4, 5, 6], vocab["program_token_to_idx"]) == want  # no <START>/<END>
    idx_to_token = {i: t for t, i in vocab["program_token_to_idx"].items()}
    assert Program.from_token_ids([1, 4, 5, 6, 2], idx_to_token) == want
    as_list = [t for t, _ in sorted(vocab["program_token_to_idx"].items(), key=lambda kv: kv[1])]
    assert Program.from_token_ids([1, 6, 5, 4, 2], as_list, order="postfix") == want


@pytest.mark.parametrize("ids, message", [
    ([1, 4, 3, 6, 2], "token '<UNK>' at position 2 is not a function token"),
    ([1, 4, 99, 2], "token index 99 at position 2 is not in the vocabulary"),
    ([1, 4, 2], "prefix program ends early"),
])
def test_from_token_ids_errors(ids, message):
    with pytest.raises(InvalidProgram, match=re.escape(message)):
        Program.from_token_ids(ids, _vocab(["count", "filter_color[red]", "scene"]))
    with pytest.raises(ValueError, match="order must be"):
        Program.from_token_ids([1, 2], _vocab([]), order="infix")


# ---------------------------------------------------------------------- NS-VQA derendered scenes
def _derendered(positions):
    attrs = [("cube", "red", "rubber", "large"), ("sphere", "blue", "metal", "small"),
             ("cylinder", "red", "metal", "small")]
    return {"image_index": 7, "objects": [
        {"shape": s, "color": c, "material": m, "size": z, "position": pos}
        for (s, c, m, z), pos in zip(attrs, positions)]}


def test_derendered_scene_relations_follow_nsvqa_rule(clevr):
    # object 1 is 0.1 right of and 0.1 in front of object 0: NS-VQA relates them (no margin),
    # the 0.2 margin of release scenes would not
    scene = SymbolicScene.from_json(_derendered([[0, 0, 0.7], [0.1, 0.1, 0.35], [-3, -1, 0.35]]), clevr)
    rel = scene.relation_lists()
    assert rel["right"] == [[1], [], [0, 1]]
    assert rel["left"] == [[2], [0, 2], []]
    assert rel["front"] == [[1], [], [0, 1]]
    assert rel["behind"] == [[2], [0, 2], []]
    assert scene.image_index == 7 and scene.relation_margin == 0.0


@pytest.mark.parametrize("make", [DeterministicExecutor, lambda o: ProbabilisticExecutor(o, mode="exact"),
                                  lambda o: ProbabilisticExecutor(o, mode="threshold")])
def test_derendered_scene_runs_in_both_executors(clevr, make):
    scene = SymbolicScene.from_json(_derendered([[0, 0, 0.7], [0.1, 0.1, 0.35], [-3, -1, 0.35]]), clevr)
    ex = make(clevr)
    target = scene if isinstance(ex, DeterministicExecutor) else SceneLikelihoods.from_scene(scene)
    prog = Program.from_prefix("count relate[right] unique filter_shape[cube] scene")
    assert ex.run(prog, target).answer == 1
    prog = Program.from_prefix("query_color unique relate[left] unique filter_shape[cube] scene")
    assert ex.run(prog, target).answer == "red"
    batch = ex.execute(ex.prepare([prog], [target], [0]))
    assert [getattr(a, "answer", a) for a in batch] == ["red"]


def test_derendered_position_errors_name_the_field(clevr):
    from executors import FormatError
    with pytest.raises(FormatError, match=r"scene, field 'position': expected shape \(3, 3\)"):
        SymbolicScene.from_json(_derendered([[0, 0], [1, 1], [2, 2]]), clevr)


# ---------------------------------------------------------------------- "function" nodes, fast path
def test_function_keyed_nodes_take_the_same_fast_path_as_type(clevr):
    import dataclasses
    onto = dataclasses.replace(clevr)  # a fresh cache
    nodes_t = Program.from_prefix(TWO_INPUT).to_json()
    nodes_f = Program.from_prefix(TWO_INPUT).to_json(key="function")
    side = [{"function": n["type"], "inputs": n["inputs"], "side_inputs": n["value_inputs"]} for n in nodes_t]
    assert _read_known(Program, nodes_t, onto) is None  # not read yet
    want = Program.from_json(nodes_t, onto)
    for nodes in (nodes_t, nodes_f, side):
        hit = _read_known(Program, nodes, onto)
        assert hit == want  # read without the full checks
        assert Program.from_json(nodes, onto) == want
    # a node spelt both ways is read as the full reader reads it (`type` first)
    mixed = [dict(n, type=n["function"]) for n in nodes_f]
    mixed[-1]["type"] = "less_than"
    assert _read_known(Program, mixed, onto) is None
    assert Program.from_json(mixed, onto).nodes[-1].function == "less_than"


# ---------------------------------------------------------------------- docs
def test_docs_list_every_difference_from_nsvqa_and_the_official_engines():
    text = DOC.read_text()
    sec = text[text.index("## 6. Differences from NS-VQA's executor and the official engines"):]
    rows = [ln.split("|")[1].strip() for ln in sec.splitlines() if ln.startswith("| ") and "---" not in ln]
    for what in ("`unique` on a set of several objects", "`unique` on an empty set", "relations",
                 "any failure", "program form", "functions", "filter values", "answers", "uncertainty"):
        assert any(r.startswith(what) for r in rows), what


def test_docs_coming_from_snippets_run_on_the_bundled_examples(monkeypatch):
    text = DOC.read_text()
    sec = text[text.index("## Coming from NS-VQA, clevr-iep or Super-CLEVR"):text.index("## 1. The language")]
    blocks = re.findall(r"```python\n(.*?)```", sec, re.S)
    assert len(blocks) == 4
    monkeypatch.chdir(REPO)
    namespace: dict = {}
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(DOC), "exec"), namespace)
        assert out.getvalue().splitlines() == re.findall(r"# => (.*)", block)


# ---------------------------------------------------------------------- installed commands
def test_console_entry_points_name_main_of_a_cli_module_inside_the_packages():
    config = _toml()
    scripts = config["project"]["scripts"]
    assert scripts["nsvqa-execute-programs"] == "nsvqa.cli.execute_programs:main"  # numpy alone: below orchestration
    for wanted in ("evaluate_rd", "generate_dataset", "train_variant", "run_study"):
        assert scripts[f"nsvqa-{wanted.replace('_', '-')}"] == f"orchestration.cli.{wanted}:main"
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not any(p.split(".")[0].rstrip("*") == "scripts" for p in include), "scripts/ is not installed"
    assert not (REPO / "scripts" / "__init__.py").exists()  # shims for a clone, not a package
    for command, target in scripts.items():
        module, func = target.split(":")
        if ".cli." in module:  # a command's module is named after it
            assert command == "nsvqa-" + module.rsplit(".", 1)[1].replace("_", "-")
            shim = (REPO / "scripts" / (module.rsplit(".", 1)[1] + ".py")).read_text()
            assert f"from {module} import main" in shim and len(shim.splitlines()) <= 6, f"scripts/: not a shim of {module}"
        path = REPO / (module.replace(".", os.sep) + ".py")
        tree = ast.parse(path.read_text())
        mains = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == func]
        assert mains and [a.arg for a in mains[0].args.args] == ["argv"], target
        assert mains[0].args.defaults, f"{target}: argv needs a default (console scripts call main())"


@pytest.fixture(scope="module")
def example_programs():
    from executors.io import load_questions, parse_program
    onto = load_ontology("superclevr")
    out = []
    for i, q in enumerate(load_questions(REPO / "data" / "examples" / "questions.json")):
        try:
            out.append(parse_program(q, onto, f"question {i}"))
        except InvalidProgram:
            pass  # the example of an invalid program
    assert len(out) >= 10
    return out


def test_node_tokens_round_trip():
    assert Node("filter_color", (0,), ("red",)).token() == "filter_color[red]"


def test_nsvqa_derendered_reference_scenes_answer_like_the_official_engine(reference_dir):
    """The first 1,000 official CLEVR questions on their scenes derendered as NS-VQA writes them
    (position = 3d_coords projected on right and front, and the height; no relationships): both
    executors give the official answers (CLEVR's renderer keeps objects apart by more than the
    releases' margin, so NS-VQA's rule and the releases' relationships agree there)."""
    import json
    from executors.io import normalize_answer, parse_program
    clevr = load_ontology("clevr")
    raw = json.loads((reference_dir / "clevr" / "CLEVR_val_scenes_500.json").read_text())["scenes"]
    questions = json.loads((reference_dir / "clevr" / "CLEVR_val_questions_500_official.json").read_text())
    questions = questions["questions"][:1000]
    scenes, where = [], {}
    for s in raw:
        right, front = np.asarray(s["directions"]["right"]), np.asarray(s["directions"]["front"])
        objs = [{**{a: o[a] for a in ("shape", "color", "material", "size")},
                 "position": [float(np.dot(o["3d_coords"], right)), float(np.dot(o["3d_coords"], front)),
                              o["3d_coords"][2]]} for o in s["objects"]]
        where[s["image_index"]] = len(scenes)
        scenes.append(SymbolicScene.from_json({"image_index": s["image_index"], "objects": objs}, clevr))
    programs = [parse_program(q, clevr, f"question {i}") for i, q in enumerate(questions)]
    index = [where[q["image_index"]] for q in questions]
    gold = [normalize_answer(q["answer"]) for q in questions]
    det = DeterministicExecutor(clevr)
    prob = ProbabilisticExecutor(clevr, mode="exact")
    for ex in (det, prob):
        got = [normalize_answer(a) for a in ex.execute(ex.prepare(programs, scenes, index))]
        assert got == gold
    one = [normalize_answer(prob.run(p, scenes[k]).answer) for p, k in list(zip(programs, index))[:200]]
    assert one == gold[:200]
