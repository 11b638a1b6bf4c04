"""The image-shuffle test: the derangement, the shuffled questions, the paired score, and the
experiment's shuffled predictions on the tiny rendered fixture (a model that reads the image loses
accuracy, the question-only LSTM none)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from executors import SceneLikelihoods, SymbolicScene, load_ontology
from nsvqa.artifacts.likelihoods import Detection, LikelihoodsHeader, ParsedSceneRecord, write_likelihoods
from nsvqa.artifacts.predictions import Prediction, read_predictions
from nsvqa.artifacts.questions import questions_path, read_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.evaluation.image_dependence import (image_derangement, image_dependence, runs_image_dependence,
                                                shuffled_questions)

ONTO = load_ontology("superclevr")


@pytest.mark.parametrize("n", [2, 3, 7, 50])
def test_derangement_moves_every_image_and_is_seeded(n):
    images = list(range(10, 10 + n))
    a = image_derangement(images, seed=3)
    assert sorted(a) == images and sorted(a.values()) == images  # a permutation
    assert all(a[i] != i for i in images)  # no image keeps its place
    assert a == image_derangement(reversed(images), seed=3)  # the order given does not matter
    if n > 3:
        assert any(image_derangement(images, seed=s) != a for s in range(4, 8))


def test_derangement_needs_two_images():
    with pytest.raises(ValueError, match="1 distinct image"):
        image_derangement([4, 4])


def _p(q, correct):
    return Prediction(question_index=q, question_type="count", answer="1", prediction="1" if correct else "2")


def test_dependence_pairs_questions_by_index():
    own = [_p(0, True), _p(1, True), _p(2, False), _p(3, True)]
    shuffled = [_p(3, False), _p(2, True), _p(1, False), _p(0, True), _p(9, True)]  # 9: not shared
    d = image_dependence(own, shuffled, n_boot=500)
    assert d["n"] == 4
    assert d["accuracy"] == pytest.approx(0.75) and d["shuffled_accuracy"] == pytest.approx(0.5)
    assert d["dependence"] == pytest.approx(0.25)
    lo, hi = d["ci95"]
    assert -1.0 <= lo <= 0.25 <= hi <= 1.0
    assert image_dependence(own, [_p(7, True)]) is None


def test_dependence_over_several_seeds_is_their_mean_with_the_seed_spread_in_its_interval():
    from dataclasses import replace

    def run(hits, shuffled_hits):  # ten images, one question each; the shuffled ones asked of image 9 - i
        own = [replace(_p(i, h), image_index=i) for i, h in enumerate(hits)]
        return own, [replace(_p(i, h), image_index=9 - i) for i, h in enumerate(shuffled_hits)]

    looks = run([True] * 10, [False] * 10)  # dependence 1.0
    barely = run([True] * 10, [True] * 8 + [False] * 2)  # 0.2
    one = runs_image_dependence([looks], n_boot=2000)
    both = runs_image_dependence([looks, barely], n_boot=2000)
    assert one["dependence"] == pytest.approx(1.0) and one["ci95"] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert both["runs"] == 2 and both["n"] == 10 and both["dependence"] == pytest.approx(0.6)
    # the seeds disagree: a replicate that draws one seed twice reaches either end
    lo, hi = both["ci95"]
    assert lo < 0.45 and hi > 0.75
    # a run's shuffled answers are weighed at their question's own image, not the one they were asked
    # of: a model that answers each question alike on both loses nothing in any replicate
    hits = [True] * 5 + [False] * 5
    blind = runs_image_dependence([run(hits, hits), run(hits[::-1], hits[::-1])], n_boot=2000)
    assert blind["dependence"] == 0.0 and blind["ci95"] == [0.0, 0.0]
    assert image_dependence(*looks, n_boot=2000)["dependence"] == one["dependence"]
    assert runs_image_dependence([]) is None


def test_shuffled_questions_keep_text_and_answer(tiny_root):
    qs = read_questions(questions_path(tiny_root / "mid", "test"))
    out, pairing = shuffled_questions(qs, seed=0)
    names = {q.image_index: q.image_filename for q in qs}
    assert len(out) == len(qs)
    for a, b in zip(qs, out):
        assert b.image_index == pairing[a.image_index] != a.image_index
        assert b.image_filename == names[b.image_index] and b.record["image_filename"] == b.image_filename
        assert (b.question, b.answer, b.question_index, b.program) == (a.question, a.answer, a.question_index,
                                                                       a.program)


def _oracle_parse(folder, path):
    """A parse of ``folder``'s test images that finds every object with one-hot attributes."""
    records = []
    for s in read_scenes(scenes_path(folder, "test")):
        lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(s.record, ONTO))
        dets = tuple(Detection(tuple(float(v) for v in box), 0.99, 1) for box in s.boxes())
        records.append(ParsedSceneRecord(s.image_index, s.image_filename, lik, dets))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_likelihoods(path, LikelihoodsHeader(data=str(folder), split="test", detector_classes={"1": "object"}),
                      records)


def test_a_model_that_reads_the_image_depends_on_it_and_the_lstm_does_not(tiny_root, tmp_path):
    from orchestration import models as registry
    from orchestration.experiment import VariantRun, model_specs, write_model_predictions, write_shuffled_predictions

    torch.set_num_threads(1)
    data = tiny_root / "mid"
    run = VariantRun(tmp_path / "runs", "mid")
    run.path.mkdir(parents=True)
    _oracle_parse(data, run.parsed("mid", "likelihoods"))
    lstm = registry.get("lstm")
    lstm.train(lstm.config(str(data), "tiny", steps=20), run.model_dir("lstm"), progress=False)
    specs = model_specs(["pnsvqa+gtprog", "lstm"])
    own = write_model_predictions(run, data, "test", specs)
    shuffled = write_shuffled_predictions(run, data, "test", specs, seed=0)
    assert not list(run.path.glob(".shuffle-*"))  # the view is removed
    dep = {m: image_dependence(read_predictions(own[m]), read_predictions(shuffled[m]), n_boot=500)
           for m in own}
    n = len(read_questions(questions_path(data, "test")))
    assert dep["pnsvqa+gtprog"]["n"] == dep["lstm"]["n"] == n
    # P-NSVQA on a perfect parse: every question right on its own image, far fewer on another one
    assert dep["pnsvqa+gtprog"]["accuracy"] > 0.9
    assert dep["pnsvqa+gtprog"]["dependence"] > 0.2 and dep["pnsvqa+gtprog"]["ci95"][0] > 0
    # the question-only LSTM answers the same whatever image it is shown
    assert dep["lstm"]["dependence"] == 0.0 and dep["lstm"]["ci95"] == [0.0, 0.0]
    shuffled_preds = read_predictions(shuffled["pnsvqa+gtprog"])
    own_preds = read_predictions(own["pnsvqa+gtprog"])
    assert [p.answer for p in shuffled_preds] == [p.answer for p in own_preds]  # answers of the own image
    assert all(a.image_index != b.image_index for a, b in zip(own_preds, shuffled_preds))
    assert np.isfinite(dep["pnsvqa+gtprog"]["shuffled_accuracy"])
