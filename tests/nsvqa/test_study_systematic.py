"""orchestration.study.report.systematic: each point's verdict on hand-made inputs."""
from __future__ import annotations

from nsvqa.artifacts.predictions import Prediction
from orchestration.study.report.systematic import generalization_points


def row(acc, n=1000):
    k = round(acc * n)
    return {"n": n, "n_correct": k, "accuracy": k / n}


def points(report, cells=None):
    return {p["key"]: p for p in generalization_points(report, cells or {})}


def test_without_pieces_every_point_cannot_say_and_says_why():
    got = points({"systematic": {}, "findings": []})
    assert {p["verdict"] for p in got.values()} == {"cannot say"}
    assert all(p["why"] for p in got.values())


def test_drops_from_random_and_extrapolation_hardest():
    sysr = {"sys-random": {"pnsvqa": {"overall": row(0.85)}},
            "sys-composition": {"pnsvqa": {"ood": row(0.70)}},
            "sys-extrapolation": {"pnsvqa": {"ood": row(0.50)}}}
    got = points({"systematic": sysr})
    assert got["random_to_composition"]["verdict"] == got["random_to_extrapolation"]["verdict"] == "agrees"
    assert got["random_to_interpolation"]["verdict"] == "cannot say"  # not run: said why
    assert "needs sys-interpolation with OOD questions, and its ID questions or sys-random" in \
        got["random_to_interpolation"]["why"]
    assert ("sys-extrapolation OOD 50.0 against sys-random (the split has no ID test question) 85.0 (-35.0 points)"
            in got["random_to_extrapolation"]["ours"])
    assert got["extrapolation_hardest"]["verdict"] == "agrees"
    sysr["sys-extrapolation"]["pnsvqa"]["ood"] = row(0.90)  # easier than composition, above random
    got = points({"systematic": sysr})
    assert got["random_to_extrapolation"]["verdict"] == "differs"
    assert got["random_to_composition"]["verdict"] == "agrees"  # judged apart: one split does not flip another
    assert got["extrapolation_hardest"]["verdict"] == "differs"
    sysr["sys-extrapolation"]["pnsvqa"]["ood"] = row(0.71)  # within composition's interval
    assert points({"systematic": sysr})["extrapolation_hardest"]["verdict"] == "cannot say"
    # like with like: where the split has seen (ID) questions, its OOD accuracy is set against them,
    # not against another split's accuracy
    sysr["sys-composition"]["pnsvqa"]["id"] = row(0.65)  # OOD 70 above its own ID 65: no drop
    got = points({"systematic": sysr})
    assert got["random_to_composition"]["verdict"] != "agrees"
    assert "sys-composition OOD 70.0 against its ID 65.0 (+5.0 points); sys-random overall 85.0, not deciding" in \
        got["random_to_composition"]["ours"]


def test_the_held_out_factor_fails_while_the_seen_one_holds():
    def sp(color, shape):
        return {"systematic": {"sys-composition": {"scene parser": {
            "val": {"objects": 900, "object.color": 0.98, "object.shape": 0.92},
            "ood": {"objects": 1900, "object.color": color, "object.shape": shape}}}}}

    assert points(sp(0.67, 0.83))["modular_factors"]["verdict"] == "agrees"  # colour -31, shape -9
    assert points(sp(0.90, 0.70))["modular_factors"]["verdict"] == "differs"  # the seen factor fails more
    assert points(sp(0.90, 0.85))["modular_factors"]["verdict"] == "cannot say"


def test_models_agree_counts_shared_wrong_answers_against_chance():
    def P(i, pred, **kw):
        return Prediction(question_index=i, question_type="query", answer="red", prediction=pred, ood=True, **kw)

    colours = ["blue", "green", "cyan", "gray"]
    same = {("pnsvqa", "sys-composition", "sys-composition", 0): [P(i, colours[i % 4]) for i in range(200)],
            ("nsvqa", "sys-composition", "sys-composition", 0): [P(i, colours[i % 4]) for i in range(200)]}
    got = points({"systematic": {}}, same)["models_agree"]
    assert got["verdict"] == "agrees" and "the same wrong answer on 100.0%" in got["ours"]
    apart = dict(same)
    apart[("nsvqa", "sys-composition", "sys-composition", 0)] = [P(i, colours[(i + 1) % 4]) for i in range(200)]
    assert points({"systematic": {}}, apart)["models_agree"]["verdict"] == "differs"  # never the same: below chance
