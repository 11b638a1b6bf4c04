"""Tokens <-> program round trips, and invalid decodes flagged (never executed)."""
from __future__ import annotations

import json

import pytest

from executors import DeterministicExecutor, Program, load_ontology
from parsers.question.decode import ParsedProgram, ids_to_program, program_tokens, tokens_to_program
from parsers.question.vocab import END_ID, NULL_ID, START_ID, UNK_ID, Vocabulary

ONTO = load_ontology("superclevr")


def _programs(root) -> list[Program]:
    qs = json.loads((root / "questions" / "train_questions.json").read_text())["questions"]
    return [Program.from_json(q["program"], ONTO) for q in qs]


def test_generated_programs_round_trip_through_tokens_and_ids(qp_data):
    programs = _programs(qp_data)
    assert len(programs) > 40
    vocab = Vocabulary.build(program_tokens(p) for p in programs)
    funcs = set()
    for p in programs:
        toks = program_tokens(p)
        parsed = tokens_to_program(toks, ONTO)
        assert parsed.valid and parsed.error is None and parsed.tokens == tuple(toks)
        assert parsed.program.to_json() == p.canonical().to_json()
        assert parsed.program.to_prefix() == toks
        ids = vocab.encode(toks) + [END_ID, NULL_ID, NULL_ID]
        again = ids_to_program(ids, vocab, ONTO)
        assert again.tokens == tuple(toks) and again.program == parsed.program
        funcs |= {n.function for n in p}
    assert {"count", "unique", "relate", "exist"} <= funcs  # the fixture covers the main functions


def test_round_trip_keeps_the_answer(qp_data):
    qs = json.loads((qp_data / "questions" / "train_questions.json").read_text())["questions"]
    scenes = json.loads((qp_data / "scenes" / "train_scenes.json").read_text())["scenes"]
    from executors import SymbolicScene

    ex = DeterministicExecutor(ONTO)
    by_index = {s["image_index"]: SymbolicScene.from_json(s, ONTO) for s in scenes}
    for q in qs[:30]:
        p = tokens_to_program(program_tokens(Program.from_json(q["program"])), ONTO).program
        assert str(ex.run(p, by_index[q["image_index"]]).answer) == str(q["answer"])


def test_two_branch_program_round_trip():
    toks = ["equal_integer", "count", "filter_color[red]", "scene", "count", "filter_shape[car]", "scene"]
    p = tokens_to_program(toks, ONTO).program
    assert [n.function for n in p] == ["scene", "filter_color", "count", "scene", "filter_shape", "count",
                                       "equal_integer"]
    assert p[-1].inputs == (2, 5)
    assert p.to_prefix() == toks


@pytest.mark.parametrize("tokens, message", [
    ([], "empty program"),
    (["count", "<UNK>", "scene"], "special token <UNK> at position 1"),
    (["count", "scene", "<START>"], "special token <START> at position 2"),
    (["count", "filter_colour[red]", "scene"], "InvalidProgram: unknown function 'filter_colour' at token 1"),
    (["count", "filter_color[red]"], "InvalidProgram: prefix program ends early after 2 tokens"),
    (["count", "scene", "scene"], "InvalidProgram: 1 tokens left after a complete program"),
    (["count", "unique", "scene"], "TypeMismatch: node 2 (count): input 0 (node 1) is Object, expected ObjectSet"),
    (["count", "filter_color[banana]", "scene"], "InvalidProgram: node 1 (filter_color): value 'banana' is not a "
                                                 "valid color"),
    (["count", "filter_color", "scene"], "InvalidProgram: node 1 (filter_color): empty value_inputs"),
    (["filter_color[red]", "scene"], "InvalidProgram: node 1 (filter_color): the last node yields ObjectSet, "
                                     "not an answer"),
    (["count", "filter_color[red", "scene"], "InvalidProgram: malformed token 'filter_color[red' at position 1"),
])
def test_invalid_decodes_are_flagged(tokens, message):
    parsed = tokens_to_program(tokens, ONTO)
    assert isinstance(parsed, ParsedProgram)
    assert not parsed.valid and parsed.program is None
    assert parsed.error.startswith(message), parsed.error
    assert parsed.tokens == tuple(tokens)


def test_ids_without_end_are_invalid():
    vocab = Vocabulary(["count", "scene"])
    parsed = ids_to_program([4, 5, 5, 5], vocab, ONTO)
    assert not parsed.valid and parsed.error == "no <END> within 4 decoded tokens"
    assert parsed.tokens == ("count", "scene", "scene", "scene")
    ok = ids_to_program([4, 5, END_ID, NULL_ID], vocab, ONTO)
    assert ok.valid and ok.program.to_prefix() == ["count", "scene"]
    assert not ids_to_program([4, UNK_ID, END_ID], vocab, ONTO).valid
    assert ids_to_program([START_ID, 4, 5, END_ID], vocab, ONTO).error == "special token <START> at position 0"


@pytest.mark.parametrize("shape,decoded,expected", [
    ("school", "back_left_wheel", "wheel_back_left"),   # a bus uses the wheel_* spelling
    ("car", "wheel_back_left", "back_left_wheel"),      # every car model the other one
    ("school", "wheel_back_left", "wheel_back_left"),   # already right
    (None, "back_left_wheel", "back_left_wheel"),       # no model named: left as decoded
    ("school", "roof", "roof"),                         # one spelling only
])
def test_part_name_keys_follow_the_named_model(shape, decoded, expected):
    onto = load_ontology("superclevr")
    chain = ["unique", f"filter_shape[{shape}]"] if shape else ["unique"]
    tokens = ["partquery_color", "unique", f"partfilter_partname[{decoded}]", "object2part", *chain,
              "filter_color[red]", "scene"]
    p = tokens_to_program(tokens, onto)
    assert p.valid
    names = [n.value_inputs[0] for n in p.program.nodes if n.function == "partfilter_partname"]
    assert names == [expected]
    assert f"partfilter_partname[{expected}]" in p.tokens  # tokens are the resolved program's
    assert onto.alike_partnames("back_left_wheel") == ("back_left_wheel", "wheel_back_left")


def test_programs_naming_addi_decode():
    """The program vocabulary is built from the training programs (not from the ontology): a
    question naming the unplaced shape addi ("regular car") gives the token ``filter_shape[addi]``,
    and a decode of it is a valid program (it was an invalid value while the ontology had 21 shapes)."""
    toks = ["exist", "filter_shape[addi]", "filter_color[red]", "scene"]
    vocab = Vocabulary.build([toks, ["count", "filter_shape[car]", "scene"]])
    assert "filter_shape[addi]" in vocab
    parsed = ids_to_program(vocab.encode(toks) + [END_ID], vocab, ONTO)
    assert parsed.valid and parsed.program.to_prefix() == toks
    assert tokens_to_program(["count", "filter_shape[regular car]", "scene"], ONTO).error.startswith(
        "InvalidProgram: node 1 (filter_shape): value 'regular car' is not a valid shape")
