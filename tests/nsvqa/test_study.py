"""The study's plan (aliases, tests per training variant, pieces) and one tiny piece run end to end."""
from __future__ import annotations

import dataclasses
import gzip
import json

import pytest

from nsvqa.generation.suite import SuiteProfile
from nsvqa.study import (STUDY, Piece, StudyConfig, StudyError, canonical, check_aliases, is_done, pending_pieces,
                         run_piece, scene_source, study_pieces, variants_tested, training_variants)
from nsvqa.artifacts.predictions import find_prediction_files, read_predictions


def test_aliases_share_their_targets_data():
    check_aliases(STUDY)
    assert canonical("co-0") == "mid" and canonical("bal") == "hard" and canonical("slt") == "slt"
    with pytest.raises(StudyError, match=r"alias 'co-1' -> 'mid': the variants differ in 'scene'"):
        check_aliases(dataclasses.replace(STUDY, aliases={"co-1": "mid"}))


def test_each_training_variant_is_tested_on_every_factor_it_serves():
    # mid is visual's and redundancy's default and compositionality's co-0
    assert variants_tested("mid") == ("mid", "easy", "hard", "rd-", "rd+", "co-1", "co-2")
    # hard is also the distribution factor's bal: tested on head, tail and oppo too
    assert variants_tested("hard") == ("hard", "easy", "mid", "slt", "long", "head", "tail", "oppo")
    assert variants_tested("slt") == ("slt", "hard", "long", "head", "tail", "oppo")
    assert variants_tested("sys-random") == ("sys-random",)
    assert training_variants() == ["mid", "easy", "hard", "rd-", "rd+", "slt", "long", "co-1", "co-2"]


def test_variants_with_the_same_images_share_the_first_ones_scene_parser():
    from nsvqa.generation.variants import load_variant

    # rd- and rd+ ask other questions about mid's images; every other training variant has its own
    assert {v: scene_source(v) for v in training_variants()} == {
        "mid": "mid", "easy": "easy", "hard": "hard", "rd-": "mid", "rd+": "mid", "slt": "slt", "long": "long",
        "co-1": "co-1", "co-2": "co-2"}
    assert scene_source("sys-random") == "sys-random"  # held-out values: other scenes
    assert not load_variant("sys-random").same_scenes(load_variant("mid"))
    assert load_variant("bal").same_scenes(load_variant("hard")) and not load_variant("slt").same_scenes(
        load_variant("hard"))
    assert scene_source("rd-", dataclasses.replace(STUDY, share_scene_parsers=False)) == "rd-"


def test_the_plan_runs_the_default_variant_first_and_each_piece_once():
    plan = study_pieces()
    names = [p.name for p in plan]
    assert names[:3] == ["mid-seed0-modular", "mid-seed0-film", "mid-seed0-mdetr"]
    assert len(names) == len(set(names))
    assert {"mid-seed1-modular", "mid-seed2-modular", "sys-extrapolation-seed0-modular"} <= set(names)
    # no alias is trained: its target's runs serve it
    assert not any(p.variant in STUDY.aliases for p in plan)
    film = {p.variant: p.models for p in plan if p.group == "film"}
    mdetr = {p.variant: p.models for p in plan if p.group == "mdetr"}
    assert "cnn_lstm" in mdetr["mid"] and "majority" in film["mid"] and "lstm" in film["easy"]
    assert mdetr["easy"] == ("mdetr",) and "majority" not in film["easy"]
    with pytest.raises(StudyError, match="unknown piece"):
        pending_pieces("nowhere", only=["mid-seed9-modular"])


def test_a_piece_runs_commits_gzipped_predictions_and_is_then_skipped(tmp_path, require_renderer):
    import torch

    torch.manual_seed(0)
    cfg = StudyConfig(sizes=SuiteProfile(4, 2, 2), image_profile="tiny", profile="tiny",
                      scene_overrides={"mode": "agnostic", "attr_parts": False, "det_iterations": 2,
                                       "attr_epochs": 1},
                      question_overrides={"steps": 20},
                      groups={"modular": ("nsvqa", "pnsvqa-exact+gtprog"), "film": ("majority",)})
    piece = Piece("mid", 0, "modular", cfg.groups["modular"], ("mid", "easy"))
    results = tmp_path / "results"
    rec = run_piece(piece, tmp_path / "data", tmp_path / "runs", results, cfg, jobs=1, workers=1,
                    progress=False, echo=lambda s: None)
    # the paper's question set: object questions only, 10 per image
    qs = json.loads((tmp_path / "data" / "mid" / "questions" / "test_questions.json").read_text())["questions"]
    assert qs and all(not any(n["type"].startswith("part") for n in q["program"]) for q in qs)
    files = find_prediction_files([results])
    assert {(k.model, k.train, k.test) for k in files} == {
        (m, "mid", t) for m in ("nsvqa", "pnsvqa-exact+gtprog") for t in ("mid", "easy")}
    for key, (path,) in files.items():
        assert path.suffix == ".gz"
        gzip.decompress(path.read_bytes())  # a whole gzip file
        preds = read_predictions(path)
        assert len(preds) == len(qs)
        assert rec["accuracy"][key.model][key.test]["n"] == len(preds)
    assert rec["study"]["questions"] == "object" and rec["piece"]["variant"] == "mid" and rec["scene_parser_of"] == "mid"
    assert rec["seconds"]["total"] > 0 and len(rec["seconds"]["attempts"]) == 1
    assert is_done(results, piece)
    # a done piece is not pending any more
    assert piece.name not in [p.name for p in pending_pieces(results, STUDY)]
    # the report rebuilds from the committed predictions alone, and a changed number is caught
    from nsvqa.evaluation.study_report import build_study_report, check_study_report, write_study_report

    write_study_report(results, cfg)
    assert check_study_report(results, cfg) == []
    report = json.loads((results / "report.json").read_text())
    row = {r["model"]: r for r in report["in_domain"]}
    assert set(row) == {"nsvqa", "pnsvqa-exact+gtprog"}
    assert row["nsvqa"]["accuracy"] == rec["accuracy"]["nsvqa"]["mid"]["accuracy"]
    assert row["nsvqa"]["image_margin"] is None  # no question-only model ran
    vis = report["factors"]["visual"]["models"]["nsvqa"]
    assert vis["matrix"][1][:2] == [rec["accuracy"]["nsvqa"]["easy"]["accuracy"],
                                    rec["accuracy"]["nsvqa"]["mid"]["accuracy"]]
    # compositionality reads mid as co-0
    comp = report["factors"]["compositionality"]["models"]["nsvqa"]["matrix"]
    assert comp[0][0] == rec["accuracy"]["nsvqa"]["mid"]["accuracy"]
    md = results / "report.md"
    md.write_text(md.read_text().replace("| nsvqa |", "| nsvqa (edited) |", 1))
    assert check_study_report(results, cfg) == ["report.md"]
    assert "in_domain.png" in build_study_report(results, cfg)
    # a second group on the same run records its own steps' seconds, not the run's running totals
    second = Piece("mid", 0, "film", ("pnsvqa",), ("mid",))
    rec2 = run_piece(second, tmp_path / "data", tmp_path / "runs", results, cfg, jobs=1, workers=1,
                     progress=False, echo=lambda s: None)
    steps = rec2["seconds"]["attempts"][0]["steps"]
    assert "test_mid" in steps and "test_easy" not in steps  # only what this call ran
    assert steps["total"] <= rec2["seconds"]["total"]  # the run's running total is larger: the first piece's too


def test_checkpoint_seconds_reads_what_each_checkpoint_records(tmp_path):
    import torch

    from nsvqa.study import checkpoint_seconds
    from nsvqa.training.checkpoint import save_checkpoint

    w = {"w": torch.zeros(1)}
    save_checkpoint(tmp_path / "scene_parser" / "detector.pt", kind="detector", config={}, state_dict=w,
                    vocabularies={}, extra={"val": {"box_AP50": 0.9, "train_minutes": 2.5}})
    save_checkpoint(tmp_path / "question_parser" / "question_parser.pt", kind="question_parser", config={},
                    state_dict=w, vocabularies={}, extra={"supervised_seconds": 30.0, "supervised_val": {"exact": 1}})
    save_checkpoint(tmp_path / "baselines" / "lstm" / "checkpoint.pt", kind="lstm", config={}, state_dict=w,
                    vocabularies={})
    (tmp_path / "broken.pt").write_bytes(b"not a checkpoint")
    assert checkpoint_seconds(tmp_path) == {"question_parser/question_parser.pt": {"supervised_seconds": 30.0},
                                            "scene_parser/detector.pt": {"train_seconds": 150.0}}
