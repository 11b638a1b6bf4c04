"""nsvqa.models.pipeline: NS-VQA / P-NSVQA reasoners, guesses after failures, predictions records."""
from __future__ import annotations

import numpy as np
import pytest

from executors import Node, Program, SceneLikelihoods, SymbolicScene, load_ontology
from nsvqa.generation.questions import QuestionGenerator, synthetic_scene
from nsvqa.models.pipeline import NSVQA, PNSVQA, REASONERS, answer_pool, make_reasoner, predict
from nsvqa.artifacts.predictions import question_meta

ONTO = load_ontology("superclevr")


@pytest.fixture(scope="module")
def world():
    """6 synthetic scenes with generated questions: (metas, programs, likelihoods by image)."""
    gen = QuestionGenerator.default()
    rng = np.random.default_rng(0)
    records, liks = [], {}
    for i in range(6):
        scene = synthetic_scene(ONTO, rng, 5, image_index=i)
        liks[i] = SceneLikelihoods.from_scene(SymbolicScene.from_json(scene, ONTO))
        records += gen.generate(scene, rng, n_object=8, n_part=4, redundancy="rd")
    metas = [question_meta(q, f"q{k}", position=k, ontology=ONTO) for k, q in enumerate(records)]
    programs = [Program.from_json(q["program"]) for q in records]
    return metas, programs, liks


@pytest.mark.parametrize("name", REASONERS)
def test_every_reasoner_answers_ground_truth_scenes_exactly(world, name):
    metas, programs, liks = world
    assert len(metas) > 60
    preds = predict(make_reasoner(name, ONTO), metas, programs, liks)
    assert [p.correct for p in preds] == [True] * len(preds)
    assert not any(p.guessed or p.execution_error or p.invalid_program for p in preds)
    if name == "nsvqa":
        assert all(p.probability is None for p in preds)
    else:  # one-hot likelihoods: the executor is certain of every answer
        assert all(p.probability == pytest.approx(1.0) for p in preds)


def _colored(lik: SceneLikelihoods, rows: dict[int, dict[str, float]], default: str = "blue") -> SceneLikelihoods:
    """``lik`` with every object certainly ``default`` in color except the rows given."""
    vals = ONTO.values("color")
    m = np.zeros((len(lik), len(vals)))
    m[:, vals.index(default)] = 1.0
    for i, probs in rows.items():
        m[i] = 0.0
        for v, p in probs.items():
            m[i, vals.index(v)] = p
    attrs = {a: (m if a == "color" else x.copy()) for a, x in lik.attributes.items()}
    return SceneLikelihoods(ONTO, lik.exist.copy(), attrs, lik.positions, lik.position_std, lik.directions,
                            lik.margin, lik.relations, lik.part_exist, lik.part_attributes, lik.image_index)


def test_probability_of_the_prediction_comes_from_the_likelihoods(world):
    _, _, liks = world
    lik = _colored(liks[0], {2: {"red": 0.6, "blue": 0.4}})
    program = Program((Node("scene"), Node("filter_color", (0,), ("red",)), Node("exist", (1,))))
    meta = question_meta({"program": program.to_json(), "answer": "yes", "image_index": 0}, "q", position=0,
                         ontology=ONTO)
    (p,) = predict(PNSVQA(ONTO, "exact"), [meta], [program], {0: lik})
    assert p.prediction == "yes" and p.probability == pytest.approx(0.6)
    # threshold mode selects objects with p >= 0.7 only: nothing is red, with certainty
    (q,) = predict(PNSVQA(ONTO, "threshold"), [meta], [program], {0: lik})
    assert q.prediction == "no" and q.probability == pytest.approx(1.0)
    # NS-VQA: the argmax scene has a red object
    assert predict(NSVQA(ONTO), [meta], [program], {0: lik})[0].prediction == "yes"


def test_invalid_program_gives_a_flagged_seeded_guess(world):
    metas, programs, liks = world
    bad = [None, Program((Node("scene"), Node("filter_color", (0,), ("plaid",)), Node("count", (1,))))]
    preds = predict(NSVQA(ONTO), metas[:2], bad, liks, seed=3)
    again = predict(NSVQA(ONTO), metas[:2], bad, liks, seed=3)
    pool = set(answer_pool(None, ONTO))
    for p, q in zip(preds, again):
        assert p.invalid_program and p.guessed and not p.execution_error
        assert p.prediction == q.prediction and p.probability is None
        assert p.prediction in {str(x) for x in pool}
    other = [predict(NSVQA(ONTO), metas[:2], bad, liks, seed=s)[0].prediction for s in range(20)]
    assert len(set(other)) > 3  # the seed changes the guess
    none = predict(NSVQA(ONTO), metas[:2], bad, liks, guess=False)
    assert [p.prediction for p in none] == [None, None] and not any(p.guessed for p in none)


def test_execution_error_guesses_within_the_answer_type(world):
    _, _, liks = world
    # `unique` over every object of a 5-object scene fails; the question asks a color
    program = Program((Node("scene"), Node("unique", (0,)), Node("query_color", (1,))))
    meta = question_meta({"program": program.to_json(), "answer": "red", "image_index": 0}, "q", position=7,
                         ontology=ONTO)
    colors = set(ONTO.values("color"))
    for name in REASONERS:
        preds = [predict(make_reasoner(name, ONTO), [meta], [program], liks, seed=s)[0] for s in range(10)]
        assert all(p.execution_error and p.guessed and not p.invalid_program for p in preds), name
        assert {p.prediction for p in preds} <= colors and len({p.prediction for p in preds}) > 1


def test_missing_scene_is_an_execution_error(world):
    metas, programs, liks = world
    preds = predict(make_reasoner("pnsvqa", ONTO), metas[:3], programs[:3], {}, guess=False)
    assert all(p.execution_error and p.prediction is None for p in preds)


def test_nsvqa_drops_unlikely_detections(world):
    _, _, liks = world
    lik = liks[1]
    exist = lik.exist.copy()
    exist[0] = 0.3
    low = SceneLikelihoods(ONTO, exist, lik.attributes, lik.positions, lik.position_std, lik.directions,
                           lik.margin, lik.relations, lik.part_exist, lik.part_attributes, lik.image_index)
    program = Program((Node("scene"), Node("count", (0,))))
    meta = question_meta({"program": program.to_json(), "answer": 4, "image_index": 1}, "q", position=0,
                         ontology=ONTO)
    assert predict(NSVQA(ONTO), [meta], [program], {1: low})[0].prediction == "4"
    assert predict(NSVQA(ONTO, min_exist=0.0), [meta], [program], {1: low})[0].prediction == "5"
    # exact P-NSVQA: the expected count is 4.3, the most likely count 4 with probability 0.7
    p = predict(PNSVQA(ONTO, "exact"), [meta], [program], {1: low})[0]
    assert p.prediction == "4" and p.probability == pytest.approx(0.7)


def test_reasoner_names():
    assert [make_reasoner(n, ONTO).name for n in REASONERS] == list(REASONERS)
    with pytest.raises(ValueError, match="unknown reasoner 'nsvqa\\+gtprog'"):  # options are no part of a name
        make_reasoner("nsvqa+gtprog", ONTO)


def test_a_failed_execution_carries_the_trace_before_the_failure(world):
    from executors import DeterministicExecutor, ExecutionError, ProbabilisticExecutor
    from executors.scene import argmax_scene

    _, _, liks = world
    program = Program((Node("scene"), Node("filter_color", (0,), ("blue",)), Node("unique", (1,)),
                       Node("query_shape", (2,))))
    lik = _colored(liks[2], {})  # five blue objects: unique fails at node 2
    with pytest.raises(ExecutionError) as d:
        DeterministicExecutor(ONTO).run(program, argmax_scene(lik), trace=True)
    assert d.value.node == 2 and d.value.trace == [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4], None, None]
    with pytest.raises(ExecutionError) as p:
        ProbabilisticExecutor(ONTO, "exact").run(program, lik, trace=True)
    assert p.value.node == 2 and p.value.trace[2:] == [None, None]
    assert np.allclose(p.value.trace[1], 1.0)


def test_guesses_never_draw_an_answer_no_scene_gives():
    from nsvqa.models.pipeline import answer_pool

    query_shape = Program((Node("scene"), Node("unique", (0,)), Node("query_shape", (1,))))
    shapes = answer_pool(query_shape, ONTO)
    assert "regular car" not in shapes and "regular car" not in answer_pool(None, ONTO)
    assert len(shapes) == len(ONTO.scene_values("shape")) == 21


def test_each_model_builds_the_reasoner_its_class_declares():
    """No reasoner is chosen by its name (issue 79): each model's class declares its reasoner and mode."""
    from nsvqa.models.pipeline import MODELS

    for name, cls in MODELS.items():
        assert type(cls(name).reasoner(ONTO)) is cls.reasoner_cls is type(make_reasoner(name, ONTO))
        assert make_reasoner(name, ONTO).name == name
    assert [make_reasoner(n, ONTO).executor.mode for n in ("pnsvqa", "pnsvqa-exact")] == ["threshold", "exact"]
    assert make_reasoner("pnsvqa", ONTO).executor.threshold == 0.7
    assert make_reasoner("nsvqa", ONTO, min_exist=0.2).min_exist == 0.2
    with pytest.raises(ValueError, match="NS-VQA has one mode"):
        NSVQA.build(ONTO, "exact")
    with pytest.raises(ValueError, match="P-NSVQA needs its executor's mode"):
        PNSVQA.build(ONTO)
