"""nsvqa.artifacts: round trips (write -> read gives equal typed objects), byte-stable writes, and
bad input that names the file, the item and the field; the old readers as views of the new ones."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from executors import load_ontology
from executors.errors import FormatError
from executors.program import Program
from executors.scene import SceneLikelihoods, SymbolicScene
from nsvqa import artifacts
from nsvqa.artifacts import (Detection, LikelihoodsDocument, LikelihoodsFormatError, LikelihoodsHeader,
                             ParsedPrograms, ParsedSceneRecord, ProgramRecord, ProgramsFormatError, Question,
                             read_likelihoods, read_programs, read_questions, read_scenes, write_likelihoods,
                             write_programs, write_questions, write_scenes)

ONTO = load_ontology("superclevr")
EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


def node(fn, inputs=(), values=()):
    return {"type": fn, "inputs": list(inputs), "value_inputs": list(values)}


COUNT_RED = [node("scene"), node("filter_color", [0], ["red"]), node("count", [1])]
EMPTY_FILTER = [node("scene"), node("filter_color", [0], []), node("count", [1])]  # the release's defect


def dumps(obj) -> str:
    """What the generator writes: compact JSON and a newline."""
    return json.dumps(obj, separators=(",", ":")) + "\n"


def _questions_doc():
    return {"info": {"generator": "nsvqa", "split": "test"}, "questions": [
        {"image_index": 0, "image_filename": "x_test_000000.png", "question": "How many red things are there?",
         "program": COUNT_RED, "answer": 2, "question_family_index": 3, "template_filename": "zero_hop.json",
         "question_hash": "0_zero_hop_3_ab", "obj_map": {"0": [[13, 16]]}, "question_index": 0},
        {"image_index": 1, "image_filename": "x_test_000001.png", "question": "Are there any red things?",
         "program": [node("scene"), node("filter_color", [0], ["red"]), node("exist", [1])], "answer": True}]}


def _scenes_doc():
    def obj(shape, color, bbox):
        return {"shape": shape, "color": color, "material": "metal", "size": "large", "texture": "none",
                "rotation": 0.0, "3d_coords": [0.5 * len(bbox), 1.0, 0.0], "pixel_coords": [10, 20, 5],
                "parts": {}, "bbox": bbox}
    dirs = {"left": [-1, 0, 0], "right": [1, 0, 0], "front": [0, 1, 0], "behind": [0, -1, 0], "above": [0, 0, 1],
            "below": [0, 0, -1]}
    return {"info": {"split": "test"}, "scenes": [
        {"image_index": 0, "image_filename": "x_test_000000.png", "directions": dirs,
         "objects": [obj("suv", "red", [1, 2, 3, 4]), obj("jet", "blue", [10, 20, 5.5, 6])]},
        {"image_index": 1, "image_filename": "x_test_000001.png", "directions": dirs, "objects": []}]}


@pytest.fixture
def qfile(tmp_path):
    path = tmp_path / "test_questions.json"
    path.write_text(dumps(_questions_doc()))
    return path


# ---------------------------------------------------------------------------- questions
def test_questions_are_typed_once(qfile):
    qs = read_questions(qfile, ONTO, require_text=True, require_program=True, require_answer=True, require_image=True)
    assert len(qs) == 2 and qs.info == {"generator": "nsvqa", "split": "test"} and qs.path == qfile
    a, b = qs
    assert (a.index, a.question_index, a.image_index, a.image_filename, a.answer) == (0, 0, 0, "x_test_000000.png", "2")
    assert a.program == Program.from_json(COUNT_RED) and a.program_types == ("ObjectSet", "ObjectSet", "Integer")
    assert a.program_error is None and a.gold_tokens == tuple(Program.from_json(COUNT_RED).to_prefix())
    assert (a.family, a.question_hash, a.obj_map) == ("zero_hop.json#3", "0_zero_hop_3_ab", {"0": [[13, 16]]})
    assert a.where == f"{qfile}, question 0"
    # no question_index: the position; a boolean answer is yes/no; no family, no hash
    assert (b.question_index, b.answer, b.family, b.question_hash, b.obj_map) == (1, "yes", None, None, None)


def test_questions_round_trip_is_equal_and_byte_stable(qfile, tmp_path):
    qs = read_questions(qfile, ONTO)
    out = tmp_path / "out" / "q.json"
    write_questions(out, qs)
    assert out.read_bytes() == qfile.read_bytes()
    again = read_questions(out, ONTO)
    assert again == qs and again.path == out
    write_questions(tmp_path / "bare.json", list(qs))  # a bare list of records
    assert read_questions(tmp_path / "bare.json", ONTO) == artifacts.QuestionsFile(None, qs.questions)


def test_question_examples_round_trip(tmp_path):
    qs = read_questions(EXAMPLES / "questions.json", ONTO, require_valid=False)
    write_questions(tmp_path / "q.json", qs)
    assert read_questions(tmp_path / "q.json", ONTO, require_valid=False) == qs
    bad = [q for q in qs if q.program_error is not None]
    assert bad and all(q.program is not None and q.program_types is None for q in bad)


def test_an_invalid_program_is_kept_or_named(tmp_path):
    doc = _questions_doc()
    doc["questions"][1]["program"] = EMPTY_FILTER
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc))
    kept = read_questions(path, ONTO, require_valid=False)[1]
    assert kept.program == Program.from_json(EMPTY_FILTER) and kept.program_types is None
    assert kept.program_error.startswith("InvalidProgram: node 1 (filter_color)")
    with pytest.raises(FormatError, match=rf"^{path}, question 1, field 'program': node 1 \(filter_color\)"):
        read_questions(path, ONTO)
    # without an ontology the program is read structurally only
    assert read_questions(path)[1].program_error is None and read_questions(path)[1].program_types is None


@pytest.mark.parametrize("change, flags, message", [
    ({"answer": None}, {"require_answer": True}, "question 1: missing field 'answer'"),
    ({"program": None}, {"require_program": True}, "question 1: missing field 'program'"),
    ({"question": None}, {"require_text": True}, "question 1, field 'question': expected a string, got NoneType"),
    ({"question": 7}, {}, "question 1, field 'question': expected a string, got int"),
    ({"image_filename": None}, {"require_image": True},
     "question 1, field 'image_filename': expected a string, got NoneType"),
    ({"image_filename": "../x.png"}, {}, "question 1, field 'image_filename': '../x.png' must be relative"),
    ({"image_index": "1"}, {}, "question 1, field 'image_index': expected an integer, got '1'"),
    ({"answer": [1]}, {}, "question 1, field 'answer': expected a string, number or boolean, got list"),
    ({"question_index": -1}, {}, "question 1, field 'question_index': expected an integer >= 0, got -1"),
    ({"question_hash": 5}, {}, "question 1, field 'question_hash': expected a string, got int"),
    ({"program": [{"inputs": []}]}, {"require_valid": False},
     "question 1, field 'program': node 0: missing field 'type'"),
])
def test_bad_questions_name_file_question_and_field(tmp_path, change, flags, message):
    doc = _questions_doc()
    doc["questions"][1].update(change)
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as e:
        read_questions(path, ONTO, **flags)
    assert str(e.value).startswith(f"{path}, {message}")


def test_bad_question_files(tmp_path, qfile):
    with pytest.raises(FormatError, match=rf"^{tmp_path / 'nope.json'}: no questions file"):
        read_questions(tmp_path / "nope.json")
    cut = tmp_path / "cut.json"
    cut.write_bytes(qfile.read_bytes()[:150])  # truncated
    with pytest.raises(FormatError, match=rf"^{cut}: not valid JSON"):
        read_questions(cut)
    cut.write_text(json.dumps({"questions": [{"question": "ok?"}, 3]}))
    with pytest.raises(FormatError, match=rf"^{cut}, question 1: expected an object, got int"):
        read_questions(cut)
    cut.write_text(json.dumps({"info": {}, "items": []}))
    with pytest.raises(FormatError, match=r"expected \{'questions'"):
        read_questions(cut)
    # limit: only the first records are read (and checked)
    cut.write_text(json.dumps({"questions": [{"question": "ok?"}, 3]}))
    assert len(read_questions(cut, limit=1)) == 1


def test_question_views(qfile):
    """The older entry points are views of the typed items."""
    from baselines.common import QARecord, read_qa
    from nsvqa.artifacts.predictions import QuestionMeta, question_meta
    from nsvqa.evaluation.question_parser import read_question_items

    qs = read_questions(qfile, ONTO, require_text=True)
    assert read_question_items(qfile, ONTO, require_program=True) == list(qs)
    folder = qfile.parent / "v"
    (folder / "questions").mkdir(parents=True)
    (folder / "questions" / "test_questions.json").write_bytes(qfile.read_bytes())
    recs = read_qa(folder, "test", ONTO, require_answer=True, require_image=True)
    assert QARecord is Question and [(r.question, r.answer, r.image_filename) for r in recs] == \
        [(q.question, q.answer, q.image_filename) for q in qs]
    raw = _questions_doc()["questions"]
    for q, r in zip(qs, raw):
        assert QuestionMeta.from_question(q, ontology=ONTO) == question_meta(r, q.where, position=q.index, ontology=ONTO)


# ---------------------------------------------------------------------------- scenes
def test_scenes_round_trip_and_views(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(dumps(_scenes_doc()))
    sc = read_scenes(path)
    assert [(s.index, s.image_index, s.image_filename, len(s)) for s in sc] == \
        [(0, 0, "x_test_000000.png", 2), (1, 1, "x_test_000001.png", 0)]
    np.testing.assert_array_equal(sc[0].boxes(), np.array([[1, 2, 4, 6], [10, 20, 15.5, 26]], dtype=np.float32))
    assert sc[1].boxes().shape == (0, 4)
    assert isinstance(sc[0].symbolic(ONTO), SymbolicScene) and len(sc[0].symbolic(ONTO)) == 2
    assert set(sc.by_filename()) == {"x_test_000000.png", "x_test_000001.png"} and set(sc.by_image_index()) == {0, 1}
    write_scenes(tmp_path / "out.json", sc)
    assert (tmp_path / "out.json").read_bytes() == path.read_bytes()
    assert read_scenes(tmp_path / "out.json") == sc
    ex = read_scenes(EXAMPLES / "scenes.json")
    write_scenes(tmp_path / "ex.json", ex)
    assert read_scenes(tmp_path / "ex.json") == ex


def test_bad_scenes_name_file_scene_object_and_field(tmp_path):
    path = tmp_path / "s.json"
    for change, message in ((lambda d: d["scenes"][1].update(objects={}), "scene 1, field 'objects': expected a list"),
                            (lambda d: d["scenes"][1].update(image_index=1.5),
                             "scene 1, field 'image_index': expected an integer, got 1.5"),
                            (lambda d: d["scenes"][1]["objects"].append(4), "scene 1, object 0: expected an object"),
                            (lambda d: d["scenes"].append([]), "scene 2: expected an object, got list")):
        doc = _scenes_doc()
        change(doc)
        path.write_text(json.dumps(doc))
        with pytest.raises(FormatError) as e:
            read_scenes(path)
        assert str(e.value).startswith(f"{path}, {message}")
    doc = _scenes_doc()
    doc["scenes"][0]["objects"][1]["bbox"] = [1, 2, 3]
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=rf"^{path}, scene 0, object 1, field 'bbox': expected \[x, y, w, h\]"):
        read_scenes(path)[0].boxes()
    path.write_text(dumps(_scenes_doc())[:-40])
    with pytest.raises(FormatError, match="not valid JSON"):
        read_scenes(path)
    with pytest.raises(FormatError, match="no scenes file"):
        read_scenes(tmp_path / "none.json")


# ---------------------------------------------------------------------------- likelihoods
def _parsed_scene(n_obj: int = 2, seed: int = 0):
    """A scene parser's output (parsers.scene.scene_parser.ParsedScene) with masks and parts."""
    from parsers.scene.scene_parser import ParsedScene

    rng = np.random.default_rng(seed)
    h, w, p = 12, 16, len(ONTO.part_names)

    def dist(*shape):
        x = rng.random(shape) + 0.01
        return x / x.sum(-1, keepdims=True)

    lik = SceneLikelihoods(ONTO, rng.random(n_obj), {a: dist(n_obj, len(ONTO.values(a))) for a in ONTO.attributes},
                           rng.random((n_obj, 2)) * 10, rng.random(n_obj), part_exist=rng.random((n_obj, p)),
                           part_attributes={a: dist(n_obj, p, len(ONTO.values(a))) for a in ("color", "material")})
    masks = rng.random((n_obj, h, w)) > 0.5
    boxes = np.sort(rng.random((n_obj, 4)).astype(np.float32) * 10, axis=1)
    part_masks = rng.random((1, h, w)) > 0.7
    return ParsedScene(lik, boxes, masks, np.arange(1, n_obj + 1), rng.random(n_obj).astype(np.float32),
                       np.array([[1.0, 2.0, 3.0, 4.0]], dtype=np.float32), part_masks, np.array([30]),
                       np.array([0.75], dtype=np.float32), np.array([n_obj - 1]))


def _base_scene_record(parsed, image_index, image_filename) -> dict:
    """What ``nsvqa.evaluation.scene_parser.scene_record`` wrote before the artifacts package (the format)."""
    from nsvqa.generation.annotations import mask_to_rle

    parsed.likelihoods.image_index = image_index
    dets = [{"box": [float(v) for v in b], "score": float(s), "label": int(c), "mask": mask_to_rle(m)[0]}
            for b, s, c, m in zip(parsed.boxes, parsed.scores, parsed.labels, parsed.masks)]
    parts = [{"object": int(o), "box": [float(v) for v in b], "score": float(s), "label": int(c),
              "mask": mask_to_rle(m)[0]}
             for o, b, s, c, m in zip(parsed.part_owner, parsed.part_boxes, parsed.part_scores, parsed.part_labels,
                                      parsed.part_masks)]
    return {"image_index": int(image_index), "image_filename": image_filename,
            "likelihoods": parsed.likelihoods.to_json(), "detections": dets, "parts": parts}


class _Parser:  # the attributes of a loaded scene parser that the header records
    detector_path = "/runs/scene/detector.pt"
    min_score = 0.5
    detector_classes = {1: "suv", 2: "wagon"}


@pytest.fixture
def lik_doc():
    header = LikelihoodsHeader.from_parser(_Parser(), Path("/runs/scene"), Path("/data/mid"), "test",
                                           provenance={"split": "test", "min_score": 0.5})
    scenes = (ParsedSceneRecord.from_parsed(_parsed_scene(2, 0), 4, "x_test_000004.png"),
              ParsedSceneRecord.from_parsed(_parsed_scene(0, 1), 5, "x_test_000005.png"))
    return LikelihoodsDocument(header, scenes)


def test_likelihoods_keep_the_format(lik_doc, tmp_path):
    """The records and the header are what the scene parser's outputs always were."""
    parsed = _parsed_scene(3, 7)
    base = _base_scene_record(parsed, 9, "a.png")
    record = ParsedSceneRecord.from_parsed(_parsed_scene(3, 7), 9, "a.png").to_json()
    assert record == base
    assert json.dumps(record) == json.dumps(base)  # key order too
    doc = LikelihoodsHeader.from_parser(_Parser(), "/runs/scene", "/data/mid", "test",
                                        provenance={"k": 1}).to_json() | {"scenes": [base]}
    assert list(doc) == ["version", "checkpoint", "detector", "data", "split", "min_score", "detector_classes",
                         "provenance", "scenes"]
    assert doc["detector_classes"] == {"1": "suv", "2": "wagon"} and doc["version"] == 1


def test_likelihoods_round_trip_is_equal_and_byte_stable(lik_doc, tmp_path):
    from nsvqa.evaluation.scene_parser import load_parsed

    path = tmp_path / "parsed" / "likelihoods.json"
    write_likelihoods(path, lik_doc)
    back = read_likelihoods(path, ONTO)
    assert back == lik_doc and back.path == path and back.header.extra == {"provenance": {"split": "test",
                                                                                          "min_score": 0.5}}
    assert [len(s.detections) for s in back] == [2, 0] and back.scenes[0].parts[0].object == 1
    for a, b in zip(back.likelihoods, lik_doc.likelihoods):
        np.testing.assert_array_equal(a.attributes["color"], b.attributes["color"])
        np.testing.assert_array_equal(a.part_exist, b.part_exist)
    write_likelihoods(tmp_path / "again.json", back.header, back.scenes)
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    doc, liks = load_parsed(path, ONTO)
    assert doc == json.loads(path.read_text()) and [lik.image_index for lik in liks] == [4, 5]


def test_likelihoods_boxes_for_nscl(lik_doc, tmp_path):
    from baselines.nscl import detection_boxes

    path = tmp_path / "l.json"
    write_likelihoods(path, lik_doc)
    scores = [d.score for d in lik_doc.scenes[0].detections]
    cut = min(scores) + 1e-6
    boxes = read_likelihoods(path).boxes(cut)
    assert list(boxes) == ["x_test_000004.png", "x_test_000005.png"]
    assert boxes["x_test_000004.png"].shape == (1, 4) and boxes["x_test_000004.png"].dtype == np.float32
    assert boxes["x_test_000005.png"].shape == (0, 4)
    assert read_likelihoods(path).boxes(0.0)["x_test_000004.png"].shape == (2, 4)
    assert {k: v.tolist() for k, v in detection_boxes(path, cut).items()} == {k: v.tolist() for k, v in boxes.items()}


def _bad_lik(doc: dict, change) -> dict:
    doc = json.loads(json.dumps(doc))
    change(doc)
    return doc


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(version=2), "field 'version': expected 1, got 2"),
    (lambda d: d["scenes"][0].pop("likelihoods"), "scene 0: missing field 'likelihoods'"),
    (lambda d: d["scenes"][1].update(image_index="5"), "scene 1, field 'image_index': expected an integer, got '5'"),
    (lambda d: d["scenes"][0]["detections"][1].update(box=[1, 2, 3]),
     "scene 0, detection 1, field 'box': expected [x1, y1, x2, y2], got [1, 2, 3]"),
    (lambda d: d["scenes"][0]["detections"][0].update(score="high"),
     "scene 0, detection 0, field 'score': expected a number, got 'high'"),
    (lambda d: d["scenes"][0]["detections"].pop(),
     "scene 0, field 'detections': 1 detections for the 2 objects of 'likelihoods'"),
    (lambda d: d["scenes"][0]["parts"][0].update(object=2), "scene 0, part 0, field 'object': 2 but the scene has 2"),
    (lambda d: d["scenes"][0]["likelihoods"].pop("exist"), "scene 0: missing field 'exist'"),
    # the relation fields (issue 80: a NaN or zero margin answered relation questions wrongly, exit 0)
    (lambda d: d["scenes"][1]["likelihoods"].update(margin="abc"),
     "scene 1: likelihoods, field 'margin': expected a number >= 0, got str 'abc'"),
    (lambda d: d["scenes"][1]["likelihoods"].update(margin=-0.5),
     "scene 1: likelihoods, field 'margin': expected a finite number >= 0, got -0.5"),
    (lambda d: d["scenes"][0]["likelihoods"]["directions"].update(left=[0.0, 0.0]),
     "scene 0: likelihoods, field 'directions.left': expected a unit vector, got length 0"),
])
def test_bad_likelihoods_name_file_scene_and_field(lik_doc, tmp_path, change, message):
    path = tmp_path / "l.json"
    path.write_text(json.dumps(_bad_lik(lik_doc.to_json(), change)))
    with pytest.raises(LikelihoodsFormatError) as e:
        read_likelihoods(path, ONTO)
    assert str(e.value).startswith(f"{path}, {message}")


def test_bad_likelihoods_files(lik_doc, tmp_path):
    path = tmp_path / "l.json"
    write_likelihoods(path, lik_doc)
    path.write_bytes(path.read_bytes()[:-100])  # truncated
    with pytest.raises(LikelihoodsFormatError, match=rf"^{path}: not valid JSON"):
        read_likelihoods(path)
    with pytest.raises(FormatError, match="no likelihoods file"):
        read_likelihoods(tmp_path / "none.json")
    doc = lik_doc.to_json()
    doc["scenes"][0]["image_filename"] = None
    path.write_text(json.dumps(doc))
    with pytest.raises(LikelihoodsFormatError, match=r"scene 0, field 'image_filename': expected a string"):
        read_likelihoods(path).boxes(0.5)


def test_detections_are_typed():
    d = Detection((1.0, 2.0, 3.0, 4.0), 0.5, 3)
    assert d.to_json() == {"box": [1.0, 2.0, 3.0, 4.0], "score": 0.5, "label": 3, "mask": None}
    p = Detection.from_json({"object": -1, "box": [0, 0, 1, 1], "score": 1, "label": 40, "mask": None}, "w", part=True)
    assert p.object == -1 and p.to_json()["object"] == -1


# ---------------------------------------------------------------------------- programs
def _programs() -> ParsedPrograms:
    return ParsedPrograms({"checkpoint": "abc", "beam": 1}, "/data/mid/questions/test_questions.json",
                          (ProgramRecord(Program.from_json(COUNT_RED)), ProgramRecord(None, "InvalidProgram: no end")))


def test_programs_round_trip_is_equal_and_byte_stable(tmp_path, qfile):
    path = tmp_path / "parsed" / "programs.json"
    write_programs(path, _programs())
    text = path.read_text()
    # the shape the experiment always wrote
    assert text == dumps({"provenance": {"checkpoint": "abc", "beam": 1},
                          "questions_file": "/data/mid/questions/test_questions.json",
                          "programs": [{"program": COUNT_RED, "valid": True, "error": None},
                                       {"program": None, "valid": False, "error": "InvalidProgram: no end"}]})
    back = read_programs(path, questions=read_questions(qfile))
    assert back == _programs() and back.path == path and [r.valid for r in back] == [True, False]
    assert back.program_list() == [Program.from_json(COUNT_RED), None]
    write_programs(tmp_path / "again.json", back)
    assert (tmp_path / "again.json").read_text() == text


def test_programs_from_a_parser():
    from parsers.question.decode import ParsedProgram

    parses = [ParsedProgram(("count",), Program.from_json(COUNT_RED)), ParsedProgram(("scene",), None, "bad")]
    doc = ParsedPrograms.from_parses(parses, provenance={"beam": 1}, questions_file=Path("q.json"))
    assert doc == ParsedPrograms({"beam": 1}, "q.json", (ProgramRecord(Program.from_json(COUNT_RED)),
                                                       ProgramRecord(None, "bad")))


def test_the_program_count_must_match_the_questions(tmp_path, qfile):
    from baselines.nscl import parsed_programs

    path = tmp_path / "p.json"
    write_programs(path, ParsedPrograms({}, None, _programs().programs[:1]))
    with pytest.raises(ProgramsFormatError, match=rf"^{path}: 1 programs for the 2 questions of {qfile}$"):
        read_programs(path, questions=read_questions(qfile))
    with pytest.raises(FormatError, match=rf"^{path}: 1 programs for the 3 questions$"):
        parsed_programs(path, 3)
    assert parsed_programs(path, 1) == [Program.from_json(COUNT_RED)]


@pytest.mark.parametrize("row, message", [
    ({"program": None}, "program 1: missing field 'valid'"),
    ({"program": None, "valid": "no"}, "program 1, field 'valid': expected true or false, got 'no'"),
    ({"program": None, "valid": True}, "program 1, field 'valid': true with no program"),
    ({"program": COUNT_RED, "valid": False}, "program 1, field 'valid': false with a program"),
    ({"program": [{"type": "count"}], "valid": True}, "program 1, field 'program': node 0 (count): missing field"),
    ({"program": None, "valid": False, "error": 3}, "program 1, field 'error': expected a string or null, got int"),
    (7, "program 1: expected an object, got int"),
])
def test_bad_programs_name_file_record_and_field(tmp_path, row, message):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"programs": [{"program": COUNT_RED, "valid": True, "error": None}, row]}))
    with pytest.raises(ProgramsFormatError) as e:
        read_programs(path)
    assert str(e.value).startswith(f"{path}, {message}")


def test_bad_programs_files(tmp_path):
    path = tmp_path / "p.json"
    write_programs(path, _programs())
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(ProgramsFormatError, match=rf"^{path}: not valid JSON"):
        read_programs(path)
    path.write_text(json.dumps({"provenance": {}}))
    with pytest.raises(ProgramsFormatError, match=rf"^{path}, field 'programs': expected a list, got NoneType"):
        read_programs(path)
    with pytest.raises(ProgramsFormatError, match="no programs file"):
        read_programs(tmp_path / "none.json")
    # the parts a hand-made file may leave out
    path.write_text(json.dumps({"programs": [{"program": None, "valid": False}]}))
    doc = read_programs(path, questions=1)
    assert (doc.provenance, doc.questions_file, doc.programs) == ({}, None, (ProgramRecord(None),))


# ---------------------------------------------------------------------------- predictions
def test_predictions_are_re_exported(tmp_path):
    from nsvqa.artifacts import predictions

    assert artifacts.Prediction is predictions.Prediction and artifacts.read_predictions is predictions.read_predictions
    p = [artifacts.Prediction(0, "count", "2", "3", 0.25, question_hash="h"), artifacts.Prediction(1, "exist", "yes", None)]
    artifacts.write_predictions(tmp_path / "p.jsonl", p)
    assert artifacts.read_predictions(tmp_path / "p.jsonl") == p
    with pytest.raises(AttributeError):
        artifacts.nothing  # noqa: B018


def test_read_image_gives_rgb_in_unit_range_and_names_a_missing_file(tmp_path):
    import numpy as np
    from PIL import Image

    from nsvqa.artifacts.images import read_image

    rgba = np.zeros((4, 6, 4), dtype=np.uint8)
    rgba[..., 0], rgba[..., 3] = 255, 128  # red, half transparent: alpha is dropped
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    img = read_image(tmp_path / "a.png")
    assert tuple(img.shape) == (3, 4, 6) and float(img[0].min()) == 1.0 and float(img[1:].max()) == 0.0
    with pytest.raises(FileNotFoundError, match="b.png: no such image"):
        read_image(tmp_path / "b.png")
