"""Further training seeds of the study's pieces (``StudyConfig.seed_pieces``): in the plan, in the
reruns' budget, and in the factor tables, which read every seed each model ran on every training
variant of the factor."""
from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from nsvqa.artifacts.predictions import CellKey, Prediction
from orchestration.study.settings.budget import budget, budget_markdown, over_cap
from orchestration.study.settings.config import STUDY, StudyConfig, StudyError
from orchestration.study.settings.pieces import study_pieces
from orchestration.study.report.findings import findings, qualifiers
from orchestration.study.running.launch import past_cap

#: the study without the further seeds it declares, the base the tests declare their own on
BASE = StudyConfig()
SEEDED = dataclasses.replace(BASE, seed_pieces=("easy-seed1-modular", "rd--seed2-film"))


def test_seed_pieces_come_last_in_their_order_as_their_seed_0_pieces_at_another_seed():
    plan = study_pieces(SEEDED)
    assert [p.name for p in plan[-2:]] == ["easy-seed1-modular", "rd--seed2-film"]
    assert [p.name for p in plan[:-2]] == [p.name for p in study_pieces(BASE)]
    zero = {p.name: p for p in study_pieces(BASE)}
    for p in plan[-2:]:
        z = zero[p.name.replace(f"-seed{p.seed}-", "-seed0-")]
        assert (p.variant, p.group, p.models, p.tests) == (z.variant, z.group, z.models, z.tests) and p.seed != 0


def test_a_reduced_seed_piece_named_is_widened_in_its_place_to_its_seed_0_pieces_models_and_tests():
    base = study_pieces(BASE)
    plan = study_pieces(dataclasses.replace(BASE, seed_pieces=("mid-seed1-modular",)))
    assert [p.name for p in plan] == [p.name for p in base]  # in its place, nothing appended
    zero, old = (next(p for p in base if p.name == n) for n in ("mid-seed0-modular", "mid-seed1-modular"))
    wide = next(p for p in plan if p.name == "mid-seed1-modular")
    assert "nscl" not in old.models and old.tests == ("mid",)  # the executors, tested in domain alone
    assert (wide.variant, wide.seed, wide.group, wide.models, wide.tests) == ("mid", 1, "modular", zero.models,
                                                                             zero.tests)
    assert [p for p in plan if p.name != "mid-seed1-modular"] == [p for p in base if p.name != "mid-seed1-modular"]
    # one that already has them is refused: a config whose mid is tested on mid alone
    alone = dataclasses.replace(BASE, factors=(), seed_pieces=("mid-seed2-film",))
    with pytest.raises(StudyError, match=r"'mid-seed2-film' is already a piece of the plan with its seed-0 piece's"):
        study_pieces(alone)


@pytest.mark.parametrize("name, says", [
    ("easy-seed0-modular", "is already a piece of the plan"),
    ("mid-seed0-modular", "is already a piece of the plan"),
    ("easy-seed01-modular", "is not <variant>-seed<N>-<group>"),
    ("easy-seed1-mdetr", "is not <variant>-seed<N>-<group>"),  # dropped: no seed-0 piece to reseed
    ("easy-modular", "is not <variant>-seed<N>-<group>"),
])
def test_a_seed_piece_that_is_no_seed_0_piece_at_another_seed_is_refused_by_name(name, says):
    with pytest.raises(StudyError, match=rf"StudyConfig.seed_pieces: '{name}' {says}"):
        study_pieces(dataclasses.replace(BASE, seed_pieces=(name,)))
    with pytest.raises(StudyError, match=r"'easy-seed1-modular' is named twice"):
        study_pieces(dataclasses.replace(BASE, seed_pieces=("easy-seed1-modular",) * 2))


def test_an_empty_seed_pieces_is_left_out_of_the_record():
    assert "seed_pieces" not in BASE.to_json()  # the records written before the field read the same
    assert SEEDED.to_json()["seed_pieces"] == ["easy-seed1-modular", "rd--seed2-film"]
    assert StudyConfig.from_json(SEEDED.to_json()) == SEEDED and StudyConfig.from_json(BASE.to_json()) == BASE
    assert StudyConfig.from_json(STUDY.to_json()) == STUDY  # the declared ones too


def _commit(results, name, group, steps, seed=0):
    d = results / "pieces" / name
    d.mkdir(parents=True)
    variant = name.split(f"-seed{seed}-")[0]
    (d / "piece.json").write_text(json.dumps({
        "format": 1, "piece": {"variant": variant, "seed": seed, "group": group},
        "seconds": {"total": sum(steps.values()), "attempts": [{"steps": steps}]}}))


def test_a_seed_piece_counts_under_the_reruns_cap_not_the_studys(tmp_path):
    steps = {"scene_parser": 1800.0, "question_parser": 600.0, "model_nscl": 600.0, "tune_nsvqa": 60.0,
             **{f"test_{v}": 120.0 for v in ("easy", "mid", "hard")}}
    _commit(tmp_path, "easy-seed0-modular", "modular", steps)
    b = budget(tmp_path, SEEDED)
    rows = b["reruns"]["pending"]
    assert [r["piece"] for r in rows] == ["easy-seed1-modular", "rd--seed2-film"]
    assert "easy-seed1-modular" not in [p["piece"] for p in b["pending"]]
    assert rows[0]["minutes"] == round(sum(steps.values()) / 60, 1) and rows[0]["within_cap"]
    assert rows[0]["cumulative_hours"] == round(sum(steps.values()) / 3600, 2)  # from the reruns' 0 hours
    assert "| pending seed piece |" in budget_markdown(b)
    # the study past its cap does not stop a seed piece; the reruns' cap does
    small = dataclasses.replace(SEEDED, budget_hours=0.5)
    easy1 = next(p for p in study_pieces(SEEDED) if p.name == "easy-seed1-modular")
    hard = next(p for p in study_pieces(SEEDED) if p.name == "hard-seed0-modular")
    assert over_cap(tmp_path, hard, small) and over_cap(tmp_path, easy1, small) is None
    assert past_cap([easy1], tmp_path, small) is None and past_cap([hard, easy1], tmp_path, small)
    # committed, its hours are one row of the reruns', not the study's
    _commit(tmp_path, "easy-seed1-modular", "modular", steps, seed=1)
    b = budget(tmp_path, SEEDED)
    assert b["done"] == 1 and b["spent_hours"] == round(sum(steps.values()) / 3600, 2)
    assert b["reruns"]["pieces"] == {"easy-seed1-modular": round(sum(steps.values()) / 3600, 2)}
    assert [r["piece"] for r in b["reruns"]["pending"]] == ["rd--seed2-film"]
    # the step medians read it too; past the reruns' cap it is refused there
    assert b["step_minutes"]["modular"]["model_nscl"] == 10.0
    rec = tmp_path / "pieces" / "easy-seed1-modular" / "piece.json"
    rec.write_text(json.dumps({**json.loads(rec.read_text()), "seconds": {"total": 25 * 3600.0}}))
    film2 = next(p for p in study_pieces(SEEDED) if p.name == "rd--seed2-film")
    assert "the reruns' (issue 64) 24-hour cap" in over_cap(tmp_path, film2, SEEDED)
    assert "their 24-hour cap" in past_cap([film2], tmp_path, SEEDED)


WIDE = dataclasses.replace(BASE, seed_pieces=("mid-seed1-modular",))


def _commit_piece(results, piece, seconds):
    """``piece`` committed under ``results`` as it ran (its models and tests), NSCL's training its hours."""
    d = results / "pieces" / piece.name
    d.mkdir(parents=True)
    (d / "piece.json").write_text(json.dumps({
        "format": 1, "piece": {"variant": piece.variant, "seed": piece.seed, "group": piece.group,
                               "models": list(piece.models), "tests": list(piece.tests)},
        "seconds": {"total": seconds, "attempts": [{"steps": {"model_nscl": seconds} if "nscl" in piece.models
                                                    else {}}]}}))
    return d


def test_a_committed_reduced_piece_named_in_seed_pieces_is_pending_under_the_reruns(tmp_path):
    from orchestration.study.settings.budget import rerun_hours
    from orchestration.study.settings.pieces import is_done, is_reduced, pending_pieces

    plan = {p.name: p for p in study_pieces(WIDE)}
    wide, zero = plan["mid-seed1-modular"], plan["mid-seed0-modular"]
    reduced = dataclasses.replace(wide, models=STUDY.executor_models, tests=("mid",))
    _commit_piece(tmp_path, zero, 3600.0)
    _commit_piece(tmp_path, reduced, 1800.0)
    assert budget(tmp_path, BASE)["done"] == 2 and "mid-seed1-modular" not in str(budget(tmp_path, BASE)["pending"])
    b = budget(tmp_path, WIDE)
    # the reduced piece's hours stay the study's; the widened one is projected under the reruns
    assert b["done"] == 2 and b["spent_hours"] == 1.5 and b["spent_hours_by_group"] == {"modular": 1.0, "seeds": 0.5}
    assert [r["piece"] for r in b["reruns"]["pending"]] == ["mid-seed1-modular"]
    assert b["reruns"]["pending"][0]["minutes"] == 60.0 and b["reruns"]["pieces"] == {}
    assert "mid-seed1-modular" not in [r["piece"] for r in b["pending"]]
    assert over_cap(tmp_path, wide, dataclasses.replace(WIDE, budget_hours=1.0)) is None  # the reruns' cap holds it
    # the runner skips it and refuses to run it into the same folder
    assert is_done(tmp_path, wide) and is_reduced(tmp_path, wide) and not is_reduced(tmp_path, zero)
    assert wide not in pending_pieces(tmp_path, WIDE)
    with pytest.raises(StudyError, match=r"mid-seed1-modular: committed under .* with fewer models or tests"):
        pending_pieces(tmp_path, WIDE, only=["mid-seed1-modular"])
    # staged whole under reruns/: its hours are the reruns', nothing pending
    staged = _commit_piece(tmp_path / "reruns", wide, 4500.0)
    b = budget(tmp_path, WIDE)
    assert b["reruns"]["pieces"] == {"mid-seed1-modular": 1.25} and b["reruns"]["pending"] == []
    assert b["spent_hours"] == 1.5 and b["done"] == 2
    # promoted in place of the reduced one: the study keeps the reduced piece's hours, as for every rerun
    shutil.rmtree(tmp_path / "pieces" / "mid-seed1-modular")
    shutil.move(str(staged), str(tmp_path / "pieces" / "mid-seed1-modular"))
    (tmp_path / "reruns" / "promoted.json").write_text(json.dumps(
        {"commit": "0" * 40, "pieces": {"mid-seed1-modular": {"old_seconds": 1800.0}}}))
    b = budget(tmp_path, WIDE)
    assert b["spent_hours"] == 1.5 and b["done"] == 2 and b["spent_hours_by_group"]["seeds"] == 0.5
    assert b["reruns"]["pieces"] == {"mid-seed1-modular": 1.25} == rerun_hours(tmp_path, WIDE)["pieces"]
    assert b["reruns"]["pending"] == [] and not is_reduced(tmp_path, wide)


def test_more_seeds_marks_a_widened_piece_run_once_the_widened_one_is_committed():
    from orchestration.study.report.seeds import more_seeds

    zero = {"name": "mid-seed0-modular", "models": ["nsvqa", "nscl"], "tests": ["mid", "rd-", "rd+"]}
    row = {"key": "redundancy", "status": "reproduced", "intervals": [[0.001, 0.05]],
           "basis": {"seeds": 1, "cells": [[["mid", "nscl"]]]}}
    for seed_1, done in (({"models": ["nsvqa"], "tests": ["mid"]}, "partly"), (zero, "run")):
        got = more_seeds([row], {}, [zero, {**seed_1, "name": "mid-seed1-modular"}], 1)
        assert {p["piece"]: p["done"] for p in got["pieces"]}["mid-seed1-modular"] == done


def P(i, ok):
    return Prediction(question_index=i, question_type="exist", answer="yes", prediction="yes" if ok else "no")


def _cells(model, trains, tests, seeds, n=60):
    return {(model, t, s, seed): [P(i, i < 0.8 * n) for i in range(n)]
            for seed in seeds for t in trains for s in tests}


def test_a_factor_reads_the_seeds_every_training_variant_of_a_model_ran():
    from orchestration.study.report.build import factor_cells, seeded_factor_cells

    visual = ("easy", "mid", "hard")
    cells = {**_cells("nsvqa", visual, visual, (0, 1, 2)),
             **_cells("film", visual, visual, (0,)), **_cells("film", ("easy", "hard"), visual, (1,)),
             ("film", "mid", "mid", 1): [P(0, True)]}  # mid at seed 1 tested on mid alone: no whole row
    got, seeds = seeded_factor_cells(cells, "visual", STUDY)
    assert seeds == {"nsvqa": [0, 1, 2], "film": [0]}
    assert [len(v) for k, v in got.items() if k.model == "nsvqa"] == [3] * 9
    assert got[CellKey("nsvqa", "easy", "hard")][2] is cells[("nsvqa", "easy", "hard", 2)]
    assert {k: v for k, v in got.items() if k.model == "film"} == {
        k: v for k, v in factor_cells(cells, "visual", STUDY).items() if k.model == "film"}
    # an alias reads its target's seeds: compositionality's co-0 is mid
    comp = ("mid", "co-1", "co-2")
    cells = _cells("nsvqa", comp, comp, (0, 1))
    assert seeded_factor_cells(cells, "compositionality", STUDY)[1] == {"nsvqa": [0, 1]}


def test_a_finding_on_pooled_seeds_is_no_longer_one_seeds(tmp_path):
    from nsvqa.artifacts.predictions import write_predictions
    from orchestration.study.report.build import build_study_report

    levels, n = ("rd-", "mid", "rd+"), 60
    own = {"film": (0.5, 0.5), "pnsvqa": (0.8, 0.6), "nsvqa": (0.8, 0.6)}
    for seed in (0, 1, 2):
        for t in levels:
            for group, models in (("modular", ("pnsvqa", "nsvqa")), ("film", ("film",))):
                d = tmp_path / "pieces" / f"{t}-seed{seed}-{group}"
                for m in models:
                    for s in levels:
                        right = own[m][0] if s == t else own[m][1]
                        write_predictions(d / "predictions" / f"{m}__train-{t}__test-{s}.jsonl.gz",
                                          [P(i, i < right * n) for i in range(n)])
                (d / "piece.json").write_text(json.dumps({
                    "format": 1, "piece": {"variant": t, "seed": seed, "group": group, "models": list(models),
                                           "tests": list(levels)},
                    "commit": None, "machine": None, "seconds": {"total": 60.0}}))
    files = build_study_report(tmp_path, plots=False)
    report = json.loads(files["report.json"])
    red = report["factors"]["redundancy"]["models"]
    assert red["pnsvqa"]["seeds"] == red["film"]["seeds"] == [0, 1, 2] and red["pnsvqa"]["rd"] == pytest.approx(0.25)
    finding = next(f for f in report["findings"] if f["key"] == "redundancy")
    assert finding["basis"]["seeds"] == 3 and "three training seeds" in finding["qualifier"]
    assert "one training seed" not in finding["qualifier"]
    md = files["report.md"].decode()
    assert "mean of seeds 0, 1, 2" in md and "it draws the training seeds too" in md
    # one model of the comparison at one seed: the finding rests on one seed again
    report["factors"]["redundancy"]["models"]["film"].pop("seeds")
    again = next(f for f in findings(report, {}) if f["key"] == "redundancy")
    assert again["basis"]["seeds"] == 1 and "one training seed" in qualifiers(again)
