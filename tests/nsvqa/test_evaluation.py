"""nsvqa.artifacts.predictions (format, reader, question labels) and nsvqa.evaluation (accuracy, matrix, RD, ECE).

Every expected value is computed by hand in the test from tiny inputs.
"""
from __future__ import annotations

import json
import math

import pytest

from executors import Program, load_ontology
from executors.errors import FormatError
from nsvqa.evaluation import (ConceptSplit, accuracy, accuracy_by_type, accuracy_matrix, calibration,
                              distribution_relative_degrade, evaluate, expected_calibration_error,
                              factor_layout, factor_relative_degrade, head_tail_accuracy, id_ood_accuracy,
                              relative_degrade, reliability_bins)
from nsvqa.artifacts.predictions import (CellKey, Prediction, PredictionFormatError, find_prediction_files,
                                         load_question_meta, mentioned_concepts, parse_predictions_name,
                                         predictions_path, question_meta, question_type, read_predictions,
                                         shape_color_pairs, write_predictions)


def P(i, ok=True, qtype="query", **kw):
    """A prediction of question ``i`` that is right (``ok``), wrong, or absent (``ok=None``)."""
    pred = None if ok is None else ("yes" if ok else "no")
    return Prediction(question_index=i, question_type=qtype, answer="yes", prediction=pred, **kw)


def node(fn, inputs=(), values=()):
    return {"type": fn, "inputs": list(inputs), "value_inputs": list(values)}


# ---------------------------------------------------------------------------- the format
def test_round_trip(tmp_path):
    preds = [P(0, probability=0.25, family="part.json#0", concepts=("color=red", "shape=car"), image_index=3),
             P(1, ok=False, execution_error=True, guessed=True),
             P(2, ok=None, invalid_program=True, ood=True)]
    path = predictions_path(tmp_path, "p-nsvqa", "rd-", "rd+")
    assert path == tmp_path / "predictions" / "p-nsvqa__train-rd-__test-rd+.jsonl"
    assert write_predictions(path, preds) == 3
    assert read_predictions(path) == preds
    assert parse_predictions_name(path) == CellKey("p-nsvqa", "rd-", "rd+")
    first = json.loads(path.read_text().splitlines()[0])
    assert first["concepts"] == ["color=red", "shape=car"] and first["ood"] is None


def test_reader_accepts_json_literal_answers(tmp_path):
    f = tmp_path / "m__train-a__test-a.jsonl"
    f.write_text('{"question_index": 0, "question_type": "exist", "answer": true, "prediction": "yes"}\n\n'
                 '{"question_index": 1, "question_type": "count", "answer": 3, "prediction": 3}\n')
    a, b = read_predictions(f)
    assert (a.answer, a.correct, b.answer, b.prediction, b.correct) == ("yes", True, "3", "3", True)


@pytest.mark.parametrize("line, field, words", [
    ('{"question_index": 1, "question_type": "query", "answer": "red", "prediction": "red", "probability": 1.5}',
     "probability", "[0, 1]"),
    ('{"question_index": 1, "question_type": "color", "answer": "red", "prediction": "red"}',
     "question_type", "part_query"),
    ('{"question_index": 1, "question_type": "query", "answer": "red"}', "prediction", "missing"),
    ('{"question_index": 1, "question_type": "query", "answer": "red", "prediction": "red", "prob": 0.5}',
     "prob", "unknown field"),
    ('{"question_index": 0, "question_type": "query", "answer": "red", "prediction": "red"}',
     "question_index", "already on line 1"),
    ('{"question_index": 1, "question_type": "query", "answer": "red", "prediction": "red", "guessed": true}',
     "guessed", "execution_error"),
])
def test_reader_errors_name_file_line_field(tmp_path, line, field, words):
    f = tmp_path / "m__train-a__test-a.jsonl"
    f.write_text('{"question_index": 0, "question_type": "query", "answer": "red", "prediction": "red"}\n'
                 + line + "\n")
    with pytest.raises(PredictionFormatError) as e:
        read_predictions(f)
    msg = str(e.value)
    assert f"{f}, line 2, field '{field}'" in msg and words in msg


def test_reader_invalid_json_names_line(tmp_path):
    f = tmp_path / "m__train-a__test-a.jsonl"
    f.write_text('{"question_index": 0, "question_type": "query", "answer": "red", "prediction": "red"}\n{oops\n')
    with pytest.raises(PredictionFormatError, match=r"line 2: not valid JSON"):
        read_predictions(f)


def test_names(tmp_path):
    with pytest.raises(ValueError, match="no '__'"):
        predictions_path(tmp_path, "a__b", "mid", "mid")
    with pytest.raises(PredictionFormatError, match="file name"):
        parse_predictions_name("film_mid_mid.jsonl")
    with pytest.raises(ValueError, match="two predictions for question_index 0"):
        write_predictions(tmp_path / "x.jsonl", [P(0), P(0)])
    # a run folder, a folder of runs and a predictions folder all find the file; two runs = two files
    for run in ("r1", "r2"):
        write_predictions(predictions_path(tmp_path / "runs" / run, "film", "mid", "hard"), [P(0)])
    key = CellKey("film", "mid", "hard")
    assert len(find_prediction_files([tmp_path / "runs"])[key]) == 2
    assert len(find_prediction_files([tmp_path / "runs" / "r1"])[key]) == 1
    assert len(find_prediction_files([tmp_path / "runs" / "r1" / "predictions"])[key]) == 1
    with pytest.raises(FileNotFoundError, match="nowhere"):
        find_prediction_files([tmp_path / "nowhere"])


# ---------------------------------------------------------------------------- question labels
@pytest.mark.parametrize("last, qtype", [
    ("count", "count"), ("exist", "exist"), ("equal_integer", "compare_number"), ("less_than", "compare_number"),
    ("equal_color", "compare_attribute"), ("query_shape", "query"), ("partquery_color", "part_query"),
    ("partquery_partname", "part_query")])
def test_question_type(last, qtype):
    assert question_type(Program.from_json([node("scene"), node(last, [0])])) == qtype


def test_question_type_rejects_a_non_answer():
    with pytest.raises(ValueError, match="filter_color"):
        question_type(Program.from_json([node("scene"), node("filter_color", [0], ["red"])]))


PART_QUESTION = {  # the shape of a Super-CLEVR part question
    "image_index": 4, "question_index": 7, "template_filename": "part.json", "question_family_index": 0,
    "answer": "brown", "program": [
        node("scene"), node("filter_color", [0], ["gray"]), node("filter_material", [1], ["rubber"]),
        node("unique", [2]), node("object2part", [3]), node("partfilter_material", [4], ["metal"]),
        node("partfilter_partname", [5], ["bumper_back"]), node("unique", [6]), node("partquery_color", [7])]}


def test_question_meta():
    m = question_meta(PART_QUESTION, "q.json, question 0", position=0)
    assert (m.question_index, m.image_index, m.family, m.question_type, m.answer, m.ood) == \
        (7, 4, "part.json#0", "part_query", "brown", None)
    assert m.concepts == ("color=gray", "material=rubber", "part_material=metal", "partname=bumper_back")
    assert mentioned_concepts(Program.from_json(PART_QUESTION["program"])) == m.concepts
    p = m.prediction("Brown", 0.9)
    assert p.correct and p.probability == 0.9 and p.concepts == m.concepts
    # no question_index: the position; a relation is a mentioned concept, empty value_inputs none;
    # spellings are canonical (the release's texture "None" is "none")
    q = {"answer": 2, "program": [node("scene"), node("filter_shape", [0], ["car"]), node("unique", [1]),
                                  node("relate", [2], ["left"]), node("filter_color", [3], []),
                                  node("filter_texture", [4], ["None"]), node("count", [5])]}
    m = question_meta(q, "q.json, question 5", position=5)
    assert (m.question_index, m.answer, m.concepts) == (5, "2", ("relation=left", "shape=car", "texture=none"))


@pytest.mark.parametrize("q, field", [({"answer": "red"}, "program"),
                                      ({"program": [node("scene"), node("count", [0])]}, "answer"),
                                      ({"answer": "1", "program": [{"inputs": []}]}, "program")])
def test_question_meta_errors(q, field):
    with pytest.raises(FormatError, match=rf"q.json, question 3, field '{field}'"):
        question_meta(q, "q.json, question 3", position=3)


COMPOSITION = {"factors": ["shape_category", "color"], "test_only": {"pairs": [["car", "red"], ["bus", "blue"]]}}


def test_composition_ood():
    onto = load_ontology("superclevr")
    red_suv = [node("scene"), node("filter_color", [0], ["red"]), node("filter_shape", [1], ["suv"]),
               node("exist", [2])]
    assert shape_color_pairs(Program.from_json(red_suv), onto) == {("car", "red")}
    assert question_meta({"answer": "yes", "program": red_suv}, "w", position=0, ood_spec=COMPOSITION).ood is True
    # red and suv on different objects: no held-out pair
    apart = [node("scene"), node("filter_color", [0], ["red"]), node("unique", [1]), node("relate", [2], ["left"]),
             node("filter_shape", [3], ["suv"]), node("exist", [4])]
    assert question_meta({"answer": "no", "program": apart}, "w", position=0, ood_spec=COMPOSITION).ood is False
    # a query: the answer names the other half of the pair
    query = [node("scene"), node("filter_shape", [0], ["bus"]), node("unique", [1]), node("query_color", [2])]
    assert question_meta({"answer": "blue", "program": query}, "w", position=0, ood_spec=COMPOSITION).ood is True
    assert question_meta({"answer": "red", "program": query}, "w", position=0, ood_spec=COMPOSITION).ood is False
    query_shape = [node("scene"), node("filter_color", [0], ["red"]), node("unique", [1]), node("query_shape", [2])]
    assert question_meta({"answer": "sedan", "program": query_shape}, "w", position=0,
                         ood_spec=COMPOSITION).ood is True


def test_scene_factor_ood():
    spec = {"factors": ["num_objects", "camera_scale"], "test_only": {"num_objects": [9, 10], "camera_scale": [1.3]}}
    q = {"answer": 3, "program": [node("scene"), node("count", [0])]}

    def ood(n, scale):
        scene = {"objects": [{}] * n, "camera": {"distance_scale": scale}}
        return question_meta(q, "w", position=0, ood_spec=spec, scene=scene).ood

    assert (ood(9, 1.0), ood(4, 1.3), ood(4, 1.0)) == (True, True, False)
    assert question_meta(q, "w", position=0, ood_spec=spec).ood is None  # no scene: unknown


# ---------------------------------------------------------------------------- accuracy
def test_accuracy_with_and_without_guesses():
    preds = [P(0), P(1), P(2, ok=True, execution_error=True, guessed=True),
             P(3, ok=False, invalid_program=True, guessed=True), P(4, ok=None, execution_error=True)]
    a = accuracy(preds)
    assert (a.n, a.n_correct, a.n_guessed, a.n_execution_error, a.n_invalid_program) == (5, 3, 2, 2, 1)
    assert a.accuracy == pytest.approx(3 / 5) and a.accuracy_no_guess == pytest.approx(2 / 5)
    assert accuracy([]).accuracy is None


def test_accuracy_by_type():
    preds = [P(0, qtype="count"), P(1, ok=False, qtype="count"), P(2, qtype="part_query")]
    by = accuracy_by_type(preds)
    assert list(by) == ["count", "part_query"]
    assert (by["count"].accuracy, by["part_query"].accuracy) == (0.5, 1.0)


def test_concept_split_and_head_tail():
    split = ConceptSplit.from_weights(
        head={"color": {"gray": 0.5, "red": 0.5, "cyan": 0.0}, "shape": {"suv": 0.5, "wagon": 0.5, "jet": 0.4}},
        tail={"color": {"gray": 0.0, "red": 0.0, "cyan": 1.0}, "shape": {"suv": 0, "wagon": 0, "jet": 0.6}},
        categories={"car": ["suv", "wagon", "addi"], "aeroplane": ["jet", "fighter"]})
    # jet is on both sides: neither; addi, which neither side weighs (no scene holds it), does not
    # keep car off the head side
    assert split.head["shape"] == {"suv", "wagon", "car"}
    assert split.side("part_color=cyan") == "tail" and split.side("shape=jet") is None
    assert split.group(["color=red", "shape=car", "size=large"]) == "head"
    assert split.group(["color=red", "part_color=cyan"]) == "tail"
    assert split.group(["shape=jet"]) is None and split.group(["size=small"]) is None
    preds = [P(0, concepts=("color=red",)), P(1, ok=False, concepts=("color=red",)),
             P(2, ok=False, concepts=("color=cyan",)), P(3, concepts=("size=small",))]
    ht = head_tail_accuracy(preds, split)
    assert (ht["head"].accuracy, ht["tail"].accuracy, ht["other"].n) == (0.5, 0.0, 1)


def test_catalogue_concept_split():
    split = ConceptSplit.from_catalogue()
    assert split.head["color"] == {"gray", "red", "blue", "green"}
    assert split.tail["material"] == {"metal"}
    assert "double" not in split.head["shape"] | split.tail["shape"]  # weighted in both head and tail


def _q(i, answer, prediction, qtype="query", **kw):
    return Prediction(question_index=i, question_type=qtype, answer=answer, prediction=prediction, **kw)


def test_head_fallback_reads_where_the_models_own_wrong_answers_land():
    from nsvqa.evaluation import fallback_share, head_fallback

    split = ConceptSplit({"color": frozenset({"gray", "red"})}, {"color": frozenset({"cyan", "yellow"})})
    values = {"color": ["gray", "red", "cyan", "yellow"]}
    preds = [_q(0, "cyan", "gray"), _q(1, "cyan", "yellow"), _q(2, "cyan", "cyan"),
             _q(3, "yellow", "red", execution_error=True, guessed=True),  # a random guess: no perception chose it
             _q(4, "yellow", "yes"),  # names no colour
             _q(5, "2", "3", qtype="count"), _q(6, "gray", "red"), _q(7, "large", "small")]
    flags = head_fallback(preds, split, values, attributes=("color",))
    assert sorted(flags) == [0, 1, 2, 3, 4, 6]  # the count and the size query are not read
    assert flags[0] == (True, True, pytest.approx(2 / 3), False)  # cyan answered gray: 2 heads of 3 others
    assert flags[1][:2] == (True, False) and flags[2][0] is False
    assert flags[3] == (False, False, pytest.approx(2 / 3), True) and flags[4][0] is False
    assert flags[6] == (True, True, pytest.approx(1 / 3), False)  # a head answer: 1 head among its others
    s = fallback_share(flags)
    assert (s["questions"], s["wrong"], s["guessed"]) == (6, 3, 1)
    assert s["share"] == pytest.approx(2 / 3) and s["uniform"] == pytest.approx(5 / 9)
    assert fallback_share(head_fallback(preds[2:3], split, values, ("color",)))["share"] is None


def test_paired_fallback_bootstraps_both_shares_on_the_same_questions():
    from nsvqa.evaluation import FallbackFlags, paired_fallback

    head, tail, right = (FallbackFlags(True, True, 0.5, False), FallbackFlags(True, False, 0.5, False),
                         FallbackFlags(False, False, 0.5, False))
    a = {i: head if i % 2 else right for i in range(40)}  # every wrong answer a head value
    b = {i: tail if i % 2 else right for i in range(40)}  # none
    r = paired_fallback(a, b)
    assert (r["n"], r["diff"], r["ci95"]) == (40, 1.0, [1.0, 1.0])
    mixed = {i: (head if i % 4 == 1 else tail) if i % 2 else right for i in range(40)}
    r = paired_fallback(a, mixed)
    assert r["diff"] == pytest.approx(0.5) and r["ci95"][0] < 0.5 < r["ci95"][1]
    assert paired_fallback(a, {i: right for i in range(40)}) is None  # B has no wrong answer
    lone = {i: tail if i == 0 else right for i in range(40)}  # some replicates draw no wrong answer of B
    assert paired_fallback(a, lone)["ci95"] is None


def test_id_ood():
    assert id_ood_accuracy([P(0), P(1)]) is None
    r = id_ood_accuracy([P(0, ood=False), P(1, ok=False, ood=True), P(2, ood=True), P(3)])
    assert (r["id"].accuracy, r["ood"].accuracy, r["ood"].n) == (1.0, 0.5, 2)


# ---------------------------------------------------------------------------- calibration
def test_ece_hand_computed():
    bins = reliability_bins([0.95, 0.95, 0.15, 0.55], [True, False, False, True], n_bins=10)
    assert [b.n for b in bins] == [0, 1, 0, 0, 0, 1, 0, 0, 0, 2]
    assert bins[9].confidence == pytest.approx(0.95) and bins[9].accuracy == 0.5
    # 2/4 * |0.5 - 0.95| + 1/4 * |0 - 0.15| + 1/4 * |1 - 0.55|
    assert expected_calibration_error(bins) == pytest.approx(0.225 + 0.0375 + 0.1125)
    # the edges: 0 in the first bin, 1 in the last
    assert [b.n for b in reliability_bins([0.0, 1.0], [True, True], n_bins=2)] == [1, 1]
    assert expected_calibration_error(reliability_bins([], [], 5)) is None
    with pytest.raises(ValueError, match="outside"):
        reliability_bins([1.2], [True])


def test_calibration_of_predictions():
    assert calibration([P(0), P(1)]) is None  # a model without probabilities
    c = calibration([P(0, probability=0.8), P(1, ok=False, probability=0.8), P(2)], n_bins=5)
    assert (c.n, c.coverage) == (2, pytest.approx(2 / 3))
    assert c.ece == pytest.approx(0.3)  # one bin: |0.5 - 0.8|


# ---------------------------------------------------------------------------- matrix and RD
V = ["easy", "mid", "hard"]
ACC = {("easy", "easy"): 0.8, ("easy", "mid"): 0.6, ("easy", "hard"): 0.4,
       ("mid", "easy"): 0.5, ("mid", "mid"): 0.5, ("mid", "hard"): 0.25,
       ("hard", "easy"): 0.9, ("hard", "mid"): 0.8, ("hard", "hard"): 1.0}


def test_matrix_missing_cells_are_none():
    acc = {k: v for k, v in ACC.items() if k != ("mid", "hard")}
    m = accuracy_matrix(acc, V, V)
    assert m[0] == [0.8, 0.6, 0.4] and m[1] == [0.5, 0.5, None]


def test_rd_plain_factor():
    rd = relative_degrade(ACC, V, V)
    easy = ((0.8 - 0.6) / 0.8 + (0.8 - 0.4) / 0.8) / 2  # 0.375
    mid = ((0.5 - 0.5) / 0.5 + (0.5 - 0.25) / 0.5) / 2  # 0.25
    hard = ((1.0 - 0.9) / 1.0 + (1.0 - 0.8) / 1.0) / 2  # 0.15
    assert rd.per_train["easy"].value == pytest.approx(easy)
    assert rd.per_train["mid"].value == pytest.approx(mid)
    assert rd.value == pytest.approx((easy + mid + hard) / 3) and not rd.partial and rd.reason is None
    assert factor_relative_degrade("visual", ACC, V, V).value == pytest.approx(rd.value)


def test_rd_missing_inputs_give_none_with_reason():
    acc = {k: v for k, v in ACC.items() if k != ("mid", "hard")}
    rd = relative_degrade(acc, V, V)
    assert rd.value is None and "train mid / test hard" in rd.reason
    assert rd.per_train["easy"].value == pytest.approx(0.375)
    part = relative_degrade(acc, V, V, allow_partial=True)  # mid uses easy only: RD 0
    assert part.partial and part.value == pytest.approx((0.375 + 0.0 + 0.15) / 3)
    no_diag = relative_degrade({k: v for k, v in ACC.items() if k != ("hard", "hard")}, V, V, allow_partial=True)
    assert no_diag.per_train["hard"].value is None and "in-domain" in no_diag.per_train["hard"].reason
    assert no_diag.value == pytest.approx((0.375 + 0.25) / 2)
    zero = relative_degrade({**ACC, ("mid", "mid"): 0.0}, V, V)
    assert zero.value is None and "is 0" in zero.per_train["mid"].reason


DIST = {}
for t, (head, tail, long_, oppo, bal) in {"bal": (0.9, 0.7, 0.8, 0.6, 0.8), "slt": (0.8, 0.7, 0.8, 0.7, 0.8),
                                          "long": (0.9, 0.5, 0.85, 0.45, 0.75)}.items():
    DIST.update({(t, "head"): head, (t, "tail"): tail, (t, "long"): long_, (t, "oppo"): oppo, (t, "bal"): bal})


def test_rd_concept_distribution():
    rd = distribution_relative_degrade(DIST, ["bal", "slt", "long"])
    bal = ((0.9 - 0.7) + (0.8 - 0.6)) / 2 / 0.8  # 0.25
    slt = ((0.8 - 0.7) + (0.8 - 0.7)) / 2 / 0.8  # 0.125
    long_ = ((0.9 - 0.5) + (0.85 - 0.45)) / 2 / 0.75  # 0.5333
    assert rd.per_train["long"].value == pytest.approx(long_)
    assert rd.value == pytest.approx((bal + slt + long_) / 3)
    assert factor_relative_degrade("distribution", DIST, ["bal", "slt", "long"], []).value == pytest.approx(rd.value)
    missing = distribution_relative_degrade({k: v for k, v in DIST.items() if k != ("slt", "oppo")},
                                            ["bal", "slt", "long"])
    assert missing.value is None and "train slt / test oppo" in missing.reason
    part = distribution_relative_degrade({k: v for k, v in DIST.items() if k != ("slt", "oppo")},
                                         ["bal", "slt", "long"], allow_partial=True)
    assert part.partial and part.value == pytest.approx((bal + long_) / 2)


def test_rd_systematic_is_not_defined():
    rd = factor_relative_degrade("systematic", {("sys-random", "sys-random"): 0.9}, ["sys-random"], ["sys-random"])
    assert rd.value is None and "systematic" in rd.reason


def test_factor_layout_from_catalogue():
    assert factor_layout("distribution") == (["bal", "slt", "long"], ["bal", "slt", "long", "head", "tail", "oppo"])
    assert factor_layout("redundancy") == (["rd-", "mid", "rd+"], ["rd-", "mid", "rd+"])
    with pytest.raises(KeyError, match="valid"):
        factor_layout("colour")


def _cell(n_right, n=4, **kw):
    return [P(i, ok=i < n_right, **kw) for i in range(n)]


def test_evaluate_runs_and_matrix():
    cells = {CellKey("m", "easy", "easy"): [_cell(4), _cell(2)],  # runs: 1.0 and 0.5
             CellKey("m", "easy", "mid"): [_cell(2)],
             CellKey("m", "mid", "mid"): [_cell(3)]}
    rep = evaluate(cells, factors={"visual": (V, V)})
    vis = rep["factors"]["visual"]["models"]["m"]
    assert vis["matrix"][0] == [0.75, 0.5, None] and vis["matrix"][2] == [None, None, None]
    assert vis["std"][0][0] == pytest.approx(math.sqrt(((1 - 0.75) ** 2 + (0.5 - 0.75) ** 2) / 1))
    assert vis["rd"]["value"] is None
    assert vis["rd"]["per_train"]["easy"]["reason"] == "missing train easy / test hard"
    cell = rep["cells"][0]
    assert (cell["train"], cell["test"], cell["n_runs"], cell["overall"]["n"]) == ("easy", "easy", 2, 8)
    json.dumps(rep, allow_nan=False)  # strict JSON: missing values are null, never NaN


def test_evaluate_metric_without_guesses():
    guess = [P(0), P(1, ok=True, execution_error=True, guessed=True)]
    rep = evaluate({CellKey("m", "easy", "easy"): [guess]}, metric="accuracy_no_guess", factors={"visual": (V, V)})
    assert rep["factors"]["visual"]["models"]["m"]["matrix"][0][0] == 0.5
    rep = evaluate({CellKey("m", "easy", "easy"): [guess]}, factors={"visual": (V, V)})
    assert rep["factors"]["visual"]["models"]["m"]["matrix"][0][0] == 1.0


def test_load_question_meta_reads_scenes_for_scene_factor_splits(tmp_path):
    folder = tmp_path / "sys-extrapolation"
    (folder / "questions").mkdir(parents=True)
    (folder / "scenes").mkdir()
    count = [node("scene"), node("count", [0])]
    qs = [{"image_index": 0, "answer": 3, "program": count}, {"image_index": 1, "answer": 9, "program": count}]
    (folder / "questions" / "test_questions.json").write_text(json.dumps({"info": {}, "questions": qs}))
    scenes = [{"image_index": 0, "objects": [{}] * 3, "camera": {"distance_scale": 1.1}},
              {"image_index": 1, "objects": [{}] * 9, "camera": {"distance_scale": 1.1}}]
    (folder / "scenes" / "test_scenes.json").write_text(json.dumps({"info": {}, "scenes": scenes}))
    # the catalogue's spec (no manifest): 9 and 10 objects, camera scale 1.3 never seen in training
    metas = load_question_meta(tmp_path, "sys-extrapolation")
    assert [(m.question_index, m.question_type, m.ood) for m in metas] == [(0, "count", False), (1, "count", True)]


def test_official_questions_get_labels(reference_dir):
    for name in ("superCLEVR_questions_official_objects.json", "superCLEVR_questions_official_parts.json"):
        path = reference_dir / "superclevr" / name
        records = json.loads(path.read_text())["questions"]
        metas = [question_meta(q, f"{path}, question {i}", position=i) for i, q in enumerate(records)]
        for q, m in zip(records, metas):
            last = q["program"][-1]["type"]
            expected = ("part_query" if last.startswith("partquery_") else "query" if last.startswith("query_")
                        else "compare_attribute" if last.startswith("equal_") and last != "equal_integer"
                        else "compare_number" if last in ("equal_integer", "less_than", "greater_than")
                        else last)
            assert m.question_type == expected, (name, q["question_index"])
            assert all("=" in c for c in m.concepts)


def test_paired_comparison_by_hand():
    from nsvqa.evaluation import default_comparisons, evaluate, paired_comparison

    # 10 shared questions: both right on 5, only A on 3, only B on 1, both wrong on 1
    a_ok = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
    b_ok = [1, 1, 1, 1, 1, 0, 0, 0, 1, 0]
    a = [P(i, bool(x)) for i, x in enumerate(a_ok)] + [P(99, True)]  # q 99: not in B, left out
    b = [P(i, bool(x)) for i, x in enumerate(b_ok)]
    r = paired_comparison([a], [b])
    assert r["n"] == 10 and r["acc_a"] == 0.8 and r["acc_b"] == 0.6 and r["diff"] == pytest.approx(0.2)
    assert (r["a_only"], r["b_only"]) == (3, 1)
    assert r["p_mcnemar"] == pytest.approx(0.625)  # two-sided binomial: 2 * P(X >= 3 | n=4) = 2 * 5/16
    assert r["ci95"][0] < 0.2 < r["ci95"][1] and -1 <= r["ci95"][0] and r["ci95"][1] <= 1
    assert paired_comparison([a], [[]]) is None
    assert default_comparisons(["nsvqa", "pnsvqa", "pnsvqa-exact", "pnsvqa+gtprog", "nsvqa+gtprog", "lstm"]) == [
        ("pnsvqa", "nsvqa"), ("pnsvqa-exact", "nsvqa"), ("pnsvqa+gtprog", "nsvqa+gtprog")]
    rep = evaluate({CellKey("pnsvqa", "mid", "mid"): [a], CellKey("nsvqa", "mid", "mid"): [b]})
    (c,) = rep["comparisons"]
    assert (c["a"], c["b"], c["train"], c["test"], c["n"]) == ("pnsvqa", "nsvqa", "mid", "mid", 10)


def test_factor_on_the_questions_its_test_variants_share(tmp_path):
    from nsvqa.evaluation.report import to_markdown

    def run(test, right):
        """easy asks object questions o0..o3; mid and hard ask them and part questions p0..p3."""
        hashes = [f"o{i}" for i in range(4)] + ([] if test == "easy" else [f"p{i}" for i in range(4)])
        return [P(i, ok=h in right, question_hash=h) for i, h in enumerate(hashes)]

    # trained on mid: every object question right everywhere, part questions wrong: on all
    # questions easy (100%) looks easier than mid (50%); on the shared ones they are equal
    cells = {CellKey("m", "mid", t): [run(t, {"o0", "o1", "o2", "o3"})] for t in V}
    rep = evaluate(cells, factors={"visual": (V, V)}, allow_partial=True)
    fac = rep["factors"]["visual"]
    assert fac["shared_questions"] == {"n": 4, "per_test": {"easy": 4, "mid": 8, "hard": 8}}
    m = fac["models"]["m"]
    assert m["matrix"][1] == [1.0, 0.5, 0.5] and m["rd"]["per_train"]["mid"]["value"] == pytest.approx((-1.0 + 0.0) / 2)
    assert m["shared"]["matrix"][1] == [1.0, 1.0, 1.0]
    assert m["shared"]["rd"]["per_train"]["mid"]["value"] == pytest.approx(0.0)
    # one part question right on hard only: the shared matrix does not see it
    cells[CellKey("m", "mid", "hard")] = [run("hard", {"o0", "o1", "o2", "o3", "p0"})]
    m = evaluate(cells, factors={"visual": (V, V)})["factors"]["visual"]["models"]["m"]
    assert m["matrix"][1][2] == pytest.approx(5 / 8) and m["shared"]["matrix"][1][2] == 1.0
    md = to_markdown(evaluate(cells, factors={"visual": (V, V)}))
    assert "On the 4 questions every test variant asks" in md
    # predictions without hashes (older files), or variants asking the same questions: no shared block
    plain = {CellKey("m", "mid", t): [_cell(3)] for t in V}
    assert evaluate(plain, factors={"visual": (V, V)})["factors"]["visual"]["shared_questions"] is None
    same = {CellKey("m", "mid", t): [run("mid", {"o0"})] for t in V}
    rep = evaluate(same, factors={"visual": (V, V)})
    assert rep["factors"]["visual"]["shared_questions"] is None and "shared" not in rep["factors"]["visual"]["models"]["m"]
    # the field round-trips through a predictions file
    path = tmp_path / "predictions" / "m__train-mid__test-easy.jsonl"
    write_predictions(path, run("easy", {"o0"}))
    assert [p.question_hash for p in read_predictions(path)] == ["o0", "o1", "o2", "o3"]


def test_objects_without_masks_match_the_detection_whose_box_holds_them_nearest_its_centre():
    from nsvqa.evaluation.scene_parser import match_by_centre, match_scene, pixel_xy

    boxes = [[0, 0, 10, 10], [4, 4, 24, 24], [50, 50, 60, 60]]
    # (5, 5) lies in boxes 0 and 1 and is nearer box 0's centre; (12, 12) only in box 1; (80, 80) in none
    assert sorted(match_by_centre(boxes, [(5, 5), (12, 12), (80, 80)])) == [(0, 0), (1, 1)]
    # one to one: two objects in one box, the nearer gets it
    assert match_by_centre([[0, 0, 10, 10]], [(1, 1), (5, 6)]) == [(0, 1)]
    assert match_by_centre([], [(1, 1)]) == [] and match_by_centre(boxes, []) == []
    # the release's pixel_coords and ours
    assert pixel_xy({"pixel_coords": [[169.0, 113.0, 11.1], [320, 240]]}) == (169.0, 113.0)
    assert pixel_xy({"pixel_coords": [3, 4, 9.5]}) == (3.0, 4.0)
    pairs, how = match_scene([{"box": [0, 0, 10, 10]}], [{"pixel_coords": [5, 5, 1.0]}])
    assert pairs == [(0, 0)] and "centre" in how


def test_rd_bootstrap_interval_is_paired_over_shared_test_questions():
    from nsvqa.evaluation.comparison import rd_bootstrap
    from nsvqa.evaluation.resampling import percentile_interval
    from nsvqa.evaluation.report import to_markdown

    def run(n, right, shift=0):
        """n questions, the first ``right`` of them (rotated by ``shift``) answered right."""
        return [P(i, ok=(i - shift) % n < right) for i in range(n)]

    def cells_of(n, models):
        # own variant 80% right, the others 60%: RD = (0.8 - 0.6) / 0.8 = 0.25 from every variant
        return {CellKey(m, t, s): [run(n, int(n * (0.8 if s == t else 0.6)), shift)]
                for m, shift in models.items() for t in V for s in V}

    cells = cells_of(200, {"a": 0, "b": 0, "c": 57})
    reps = rd_bootstrap(cells, "visual", V, V, ["a", "b", "c"], n_boot=400)
    assert set(reps) == {"a", "b", "c"} and all(len(r) == 400 for r in reps.values())
    lo, hi = percentile_interval(reps["a"])
    assert lo < 0.25 < hi and 0.1 < lo and hi < 0.4
    assert abs(float(reps["a"].mean()) - 0.25) < 0.02
    # b answers exactly as a: every replicate scores both on the same draw, so the difference is 0
    assert percentile_interval(reps["a"] - reps["b"]) == [0.0, 0.0]
    # c is as accurate on other questions: its difference from a varies around 0
    dlo, dhi = percentile_interval(reps["a"] - reps["c"])
    assert dlo < 0 < dhi
    # the same predictions and seed give the same replicates; another seed others
    again = rd_bootstrap(cells, "visual", V, V, ["a"], n_boot=400)
    assert (again["a"] == reps["a"]).all()
    assert not (rd_bootstrap(cells, "visual", V, V, ["a"], n_boot=400, seed=1)["a"] == reps["a"]).all()
    # four times the questions: about half the width
    big = percentile_interval(rd_bootstrap(cells_of(800, {"a": 0}), "visual", V, V, ["a"], n_boot=400)["a"])
    assert 0.3 < (big[1] - big[0]) / (hi - lo) < 0.7
    assert percentile_interval([0.1, float("nan")]) is None

    rep = evaluate(cells, factors={"visual": (V, V)}, n_boot=300, rd_pairs=[("a", "b"), ("a", "c"), ("a", "zz")])
    fac = rep["factors"]["visual"]
    assert fac["models"]["a"]["rd"]["value"] == pytest.approx(0.25)
    assert fac["models"]["a"]["rd"]["ci95"][0] < 0.25 < fac["models"]["a"]["rd"]["ci95"][1]
    assert [(c["a"], c["b"]) for c in fac["rd_comparisons"]] == [("a", "b"), ("a", "c")]  # zz: no such model
    assert fac["rd_comparisons"][0]["ci95"] == [0.0, 0.0] and fac["rd_comparisons"][1]["diff"] == pytest.approx(0)
    md = to_markdown(rep)
    assert "| a | 25.00 | [" in md and "RD differences A − B" in md
    off = evaluate(cells, factors={"visual": (V, V)}, n_boot=0)["factors"]["visual"]
    assert "ci95" not in off["models"]["a"]["rd"] and off["rd_comparisons"] == []


def test_rd_bootstrap_draws_the_variants_that_ask_the_same_questions_together():
    from nsvqa.evaluation.comparison import rd_bootstrap
    from nsvqa.evaluation.resampling import percentile_interval

    n = 300

    def run(hashed, flip=()):
        # the same questions on every variant; a model right on the first 2/3, except where flipped
        return [Prediction(question_index=i, question_type="query", answer="yes",
                           prediction="yes" if (i < 2 * n // 3) != (i in flip) else "no",
                           question_hash=f"q{i}" if hashed else None) for i in range(n)]

    for hashed in (True, False):
        # a question-only model: the same answers on every test variant, so its RD is 0 on every draw
        cells = {CellKey("lstm", t, s): [run(hashed)] for t in V for s in V}
        # a model that loses 30 questions off its own variant
        cells.update({CellKey("cnn", t, s): [run(hashed, () if s == t else range(30))] for t in V for s in V})
        reps = rd_bootstrap(cells, "visual", V, V, ["lstm", "cnn"], n_boot=300)
        lo, hi = percentile_interval(reps["lstm"])
        if hashed:  # drawn together: a drop of exactly 0 on every replicate
            assert lo == hi == 0.0
        else:  # drawn apart (no hash to pair them by): the drops of a pair of variants cancel to first
            # order but leave -(a_t - a_s)^2 / (a_t a_s): the interval lies below 0, the LSTM symptom
            assert lo < -0.001 and hi <= 0
        clo, chi = percentile_interval(reps["cnn"])
        assert clo > 0  # 30 of the 200 right ones lost: RD 0.15
        if hashed:
            assert chi - clo < 0.12
