"""The study's plan (aliases, tests per training variant, pieces) and one tiny piece run end to end."""
from __future__ import annotations

import dataclasses
import gzip
import json
import os

import pytest

from nsvqa.generation.suite import SuiteProfile
from orchestration.study.settings.budget import budget_markdown
from orchestration.study.settings.config import STUDY, StudyConfig, StudyError, results_config
from orchestration.study.settings.pieces import (PART_GROUP, Piece, canonical, check_aliases, is_done, pending_pieces,
                                                 piece_setup, scene_source, study_pieces, training_variants,
                                                 variants_tested)
from orchestration.study.running.piece import run_piece
from nsvqa.artifacts.predictions import find_prediction_files, read_predictions

#: the study without the further seeds it declares (the plan as committed before them)
BASE = StudyConfig()


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
    assert "majority" not in film["easy"]
    # the paper-recipe mDETR runs on the default variant and the redundancy factor only (StudyConfig.dropped)
    assert sorted(mdetr) == ["mid", "rd+", "rd-"] and mdetr["rd+"] == ("mdetr",)
    everything = [p.name for p in study_pieces(dataclasses.replace(STUDY, dropped=()))]
    assert set(everything) - set(names) == set(STUDY.dropped)
    with pytest.raises(StudyError, match="unknown piece"):
        pending_pieces("nowhere", only=["mid-seed9-modular"])


def test_the_seeds_and_systematic_splits_skip_nscl_and_the_part_extension_has_its_own_data(tmp_path):
    plan = {p.name: p for p in study_pieces(BASE)}
    for name in ("mid-seed1-modular", "mid-seed2-modular", "sys-random-seed0-modular"):
        assert "nscl" not in plan[name].models and {"nsvqa", "pnsvqa", "pnsvqa-exact"} <= set(plan[name].models)
    assert "nscl" in plan["easy-seed0-modular"].models  # Tables 1-2 keep it
    parts = [p for p in plan.values() if p.group == PART_GROUP]
    assert sorted(p.variant for p in parts) == ["easy", "hard", "mid"]
    assert plan["hard-seed0-parts"].tests == ("hard", "easy", "mid") and "nscl" not in plan["mid-seed0-parts"].models
    names = list(plan)  # after the tables: the two decisive systematic splits, the seeds, the other splits, the parts
    assert (names.index("sys-composition-seed0-modular") < names.index("sys-extrapolation-seed0-modular")
            < names.index("mid-seed2-modular") < names.index("sys-random-seed0-modular")
            < names.index("sys-interpolation-seed0-modular")
            < min(names.index(f"{v}-seed0-parts") for v in ("easy", "mid", "hard")))
    assert [p.variant for p in study_pieces(dataclasses.replace(BASE, systematic_first=())) if p.group == "modular"][-4:] \
        == ["sys-random", "sys-composition", "sys-interpolation", "sys-extrapolation"]
    # mDETR off the default variant comes last: what the budget leaves out if it ends first
    assert names[-2:] == [f"{v}-seed0-mdetr" for v in ("rd-", "rd+")]
    assert names.index("mid-seed0-mdetr") == 2
    # the non-modular model that sees runs on every training variant, seed 0, on its own scene parser's tokens
    assert {p.variant for p in plan.values() if p.group == "seeing"} == set(training_variants())
    assert plan["mid-seed0-seeing"].models == ("objmac-trace",)
    # the groups committed before the image-shuffle test run again in domain at seed 2, after the parts
    assert names[-4:-2] == ["mid-seed2-film", "mid-seed2-mdetr"]
    assert plan["mid-seed2-film"].models == BASE.groups["film"] and plan["mid-seed2-mdetr"].tests == ("mid",)
    assert not [p for p in study_pieces(dataclasses.replace(BASE, shuffle_groups=())) if p.seed == 2
                and p.group != "modular"]
    assert study_pieces(dataclasses.replace(BASE, late_groups=(), dropped=()))[6].name == "easy-seed0-mdetr"
    setup = piece_setup(plan["easy-seed0-parts"], tmp_path / "data", tmp_path / "runs")
    assert (setup.data, setup.runs, setup.questions) == (tmp_path / "data" / "parts", tmp_path / "runs" / "parts",
                                                         "object+part")
    assert setup.scene_variant == "easy" and setup.scene_overrides["det_iterations"] == 600
    assert "mode" not in setup.scene_overrides  # the profile's part-aware detector
    rd = piece_setup(plan["rd+-seed0-modular"], tmp_path / "data", tmp_path / "runs")
    assert (rd.data, rd.questions, rd.scene_variant) == (tmp_path / "data", "object", "mid")
    assert not [p for p in study_pieces(dataclasses.replace(BASE, part_factor=None)) if p.group == PART_GROUP]


def _write_piece(results, name, variant, group, models, preds_by_model, test=None, seed=0):
    """A finished piece trained on ``variant`` at ``seed`` and tested on ``test`` (default: ``variant``)."""
    from nsvqa.artifacts.predictions import write_predictions

    d, test = results / "pieces" / name, test or variant
    for model, preds in preds_by_model.items():
        write_predictions(d / "predictions" / f"{model}__train-{variant}__test-{test}.jsonl.gz", preds)
    (d / "piece.json").write_text(json.dumps({
        "format": 1, "piece": {"variant": variant, "seed": seed, "group": group, "models": list(models),
                               "tests": [test]},
        "commit": None, "machine": None, "seconds": {"total": 60.0}}))


def test_the_report_gives_each_systematic_splits_id_and_ood_accuracy(tmp_path):
    from nsvqa.artifacts.predictions import Prediction
    from orchestration.study.report.build import build_study_report, study_markdown

    def p(i, right, ood):
        return Prediction(i, "count", "2", "2" if right else "3", ood=ood)

    # ID: 3 of 4 right; OOD: 1 of 4 right, the wrong ones answer 3 for 2 (+1) but one says 0 (-2)
    preds = [p(0, 1, False), p(1, 1, False), p(2, 1, False), p(3, 0, False),
             p(4, 1, True), p(5, 0, True), p(6, 0, True), Prediction(7, "count", "2", "0", ood=True)]
    _write_piece(tmp_path, "sys-composition-seed0-modular", "sys-composition", "modular", ["pnsvqa"],
                 {"pnsvqa": preds})
    report = json.loads(build_study_report(tmp_path, plots=False)["report.json"])
    row = report["systematic"]["sys-composition"]["pnsvqa"]
    assert (row["id"]["accuracy"], row["ood"]["accuracy"], row["overall"]["accuracy"]) == (0.75, 0.25, 0.5)
    assert row["ood_minus_id"] == -0.5 and row["ood"]["n"] == 4
    assert row["id"]["ci95"][0] < 0.75 < row["id"]["ci95"][1]
    assert row["ood"]["count_error"] == {"n": 4, "mean_error": 0.0} and row["id"]["count_error"]["mean_error"] == 0.25
    assert report["in_domain"] == [] and report["parts"] is None
    md = study_markdown(report)
    assert "| sys-composition | pnsvqa | 50.0 | 75.0 [" in md and "| -50.0 | +0.25 (4) / +0.00 (4) |" in md
    # the scene parser: its test split holds held-out pairs only, so the ID row is the val split's
    def measures(objects, recall, shape, color, count_error=None):
        return {"objects": objects, "recall": recall, "recall_by_category": {}, "object.shape": shape,
                "object.color": color, "object.material": None, "object.size": None, "count_exact": 0.5,
                "count_error": count_error}

    test = {"all": measures(30, 0.8, 0.9, 0.5, 0.2), "id": measures(0, None, None, None),
            "ood": measures(30, 0.8, 0.9, 0.5),
            "fallback": {"wrong_colors": 12, "seen_with_category": 0.75, "uniform": 0.625},
            "val": measures(40, 0.9, 0.95, 0.975, 0.1)}
    piece = tmp_path / "pieces" / "sys-composition-seed0-modular"
    (piece / "perception.json").write_text(json.dumps({"format": 1, "scene_parser_of": "sys-composition",
                                                       "tests": {"sys-composition": test}}))
    md = study_markdown(json.loads(build_study_report(tmp_path, plots=False)["report.json"]))
    assert "| sys-composition | ID (val split) | 40 | 90.0 | 95.0 | 97.5 | +0.10 | — |" in md
    assert "| sys-composition | OOD | 30 | 80.0 | 90.0 | 50.0 | — | 75.0% of 12 wrong colours seen with" in md
    assert "| sys-composition | ID | 0 |" not in md  # no ID object in the test split: no row


def test_the_report_shows_where_wrong_answers_land_on_the_tail_test(tmp_path):
    from nsvqa.artifacts.predictions import Prediction
    from orchestration.study.report.build import build_study_report, study_markdown

    def q(i, answer, pred):
        return Prediction(i, "query", answer, pred)

    # on tail scenes (cyan, brown are tail colours): bal's model errs among tail colours 2 of 3
    # times, long's answers a head colour (gray, red) 2 of 3 times
    runs = {"hard": [q(0, "cyan", "yellow"), q(1, "cyan", "cyan"), q(2, "brown", "purple"), q(3, "brown", "gray")],
            "long": [q(0, "cyan", "gray"), q(1, "cyan", "red"), q(2, "brown", "purple"), q(3, "brown", "brown")]}
    for variant, preds in runs.items():
        _write_piece(tmp_path, f"{variant}-seed0-modular", variant, "modular", ["pnsvqa"], {"pnsvqa": preds},
                     test="tail")
    files = build_study_report(tmp_path, plots=True)
    row = json.loads(files["report.json"])["fallback"]["tests"]["tail"]["pnsvqa"]
    assert (row["bal"]["wrong"], row["long"]["wrong"], "slt" in row) == (3, 3, False)
    assert row["long_minus_bal"]["diff"] == pytest.approx(1 / 3)
    md = study_markdown(json.loads(files["report.json"]))
    # 8 colours: a uniform wrong answer names one of 4 heads among the 7 others; on 4 questions
    # some replicates draw no wrong answer, so the difference has no interval
    assert row["long_minus_bal"]["ci95"] is None
    assert "| tail | pnsvqa | 33.3 (3) | — | 66.7 (3) | 57.1 | +33.3 |" in md
    assert files["distribution/fallback.png"].startswith(b"\x89PNG")


def test_table_2_gives_each_models_image_margin_beside_its_rds(tmp_path):
    from nsvqa.artifacts.predictions import Prediction
    from orchestration.study.report.build import build_study_report, study_latex, study_markdown

    def right(k):  # k of 4 questions right
        return [Prediction(i, "exist", "yes", "yes" if i < k else "no") for i in range(4)]

    _write_piece(tmp_path, "mid-seed0-film", "mid", "film", ["lstm", "film"], {"lstm": right(2), "film": right(3)})
    _write_piece(tmp_path, "mid-seed0-modular", "mid", "modular", ["nsvqa"], {"nsvqa": right(4)})
    report = json.loads(build_study_report(tmp_path, plots=False)["report.json"])
    md = study_markdown(report)
    table2 = md.split("## Table 2")[1].split("## Table 1")[0]
    assert "| model | visual | redundancy | compositionality | image margin |" in table2
    assert "| film | — | — | — | +25.0 |" in table2 and "| nsvqa | — | — | — | +50.0 |" in table2
    assert "| lstm | — | — | — | +0.0 |" in table2
    tex = study_latex(report)
    assert "model & visual & redundancy & compositionality & image margin \\\\" in tex
    assert "film & -- & -- & -- & +25.0 \\\\" in tex
    # the pieces, each with the command that reruns it
    pieces = md.split("## Pieces")[1]
    assert "`python scripts/run_study.py --only <piece>`" in pieces
    assert "| mid-seed0-film | 1.0 | — | an unrecorded CPU |" in pieces  # its record names no machine


def test_the_report_scores_the_part_extensions_part_and_object_questions_apart(tmp_path):
    from nsvqa.artifacts.predictions import Prediction
    from orchestration.study.report.build import build_study_report, question_kinds

    kinds = question_kinds()
    part_fam = next(f for f, k in kinds.items() if k == "part")
    obj_fam = next(f for f, k in kinds.items() if k == "object")
    # trained and tested on mid: part questions 1 of 2 right, object questions 2 of 2
    preds = [Prediction(0, "part_query", "red", "red", family=part_fam),
             Prediction(1, "part_query", "red", "blue", family=part_fam),
             Prediction(2, "count", "1", "1", family=obj_fam), Prediction(3, "exist", "yes", "yes", family=obj_fam)]
    _write_piece(tmp_path, "mid-seed0-parts", "mid", PART_GROUP, ["pnsvqa"], {"pnsvqa": preds})
    files = build_study_report(tmp_path, plots=False)
    report = json.loads(files["report.json"])
    assert report["in_domain"] == [] and report["factors"] == {}  # not in Tables 1-2
    parts = report["parts"]
    mid = parts["train_variants"].index("mid"), parts["test_variants"].index("mid")
    assert parts["kinds"]["part"]["pnsvqa"]["matrix"][mid[0]][mid[1]] == 0.5
    assert parts["kinds"]["object"]["pnsvqa"]["matrix"][mid[0]][mid[1]] == 1.0
    assert parts["kinds"]["part"]["pnsvqa"]["questions_in_domain"] == 2
    assert "parts/part/report.md" in files and "## Part questions (extension): the visual factor" in files[
        "report.md"].decode()
    # a family no template has is named, not silently counted as an object question
    _write_piece(tmp_path, "easy-seed0-parts", "easy", PART_GROUP, ["pnsvqa"],
                 {"pnsvqa": [Prediction(0, "count", "1", "1", family="gone.json#3")]})
    with pytest.raises(ValueError, match=r"pnsvqa \(train easy, test easy\).*gone.json#3"):
        build_study_report(tmp_path, plots=False)


def test_a_piece_runs_commits_gzipped_predictions_and_is_then_skipped(tmp_path, require_renderer, monkeypatch):
    import torch

    import orchestration.study.running.piece

    torch.manual_seed(0)
    head = ["started"]  # HEAD moves on while the piece runs (at its first message): it records the one it ran
    monkeypatch.setattr(orchestration.study.running.piece, "_commit", lambda: head[0])
    cfg = StudyConfig(sizes=SuiteProfile(4, 2, 2), image_profile="tiny", profile="tiny",
                      scene_overrides={"mode": "agnostic", "attr_parts": False, "det_iterations": 2,
                                       "attr_epochs": 1},
                      question_overrides={"steps": 20},
                      groups={"modular": ("nsvqa", "pnsvqa-exact+gtprog"), "film": ("majority",)})
    piece = Piece("mid", 0, "modular", cfg.groups["modular"], ("mid", "easy"))
    results = tmp_path / "results"
    rec = run_piece(piece, tmp_path / "data", tmp_path / "runs", results, cfg, jobs=1, workers=1,
                    progress=False, echo=lambda s: head.__setitem__(0, "moved"))
    assert head == ["moved"]
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
    assert rec["commit"] == "started"
    # the weights of the scene parser it read, so that the report can tell who shares its perception
    from nsvqa.training.checkpoint import weights_digest

    scene = tmp_path / "runs" / "mid" / "scene_parser"
    assert rec["scene_parser_weights"] == {"detector": weights_digest(scene / "detector.pt"),
                                           "attributes": weights_digest(scene / "attributes.pt")}
    # what the executors read is committed, and executes again to the same answers at this code
    from orchestration.study.running.parses import reexecute

    parses = results / "pieces" / piece.name / "parses"
    assert {p.name for p in (parses / "mid").iterdir()} == {"likelihoods.json.gz", "questions.json.gz",
                                                           "programs.json.gz"}
    again = reexecute(results)
    assert again["pieces"] == [piece.name] and again["differ"] == [] and again["answers"] == 2 * 2 * len(qs)
    # an executor change that alters an answer is named, file and question (the tiny NS-VQA's programs
    # all fail, and its seeded guesses do not move: P-NSVQA-exact's answers are the ones to change)
    import nsvqa.models.pipeline as pipeline

    monkeypatch.setattr(pipeline.PNSVQA, "_run", lambda self, programs, scenes: [pipeline.Answer("yes")] * len(programs))
    changed = reexecute(results)
    assert changed["differ"] and "pnsvqa-exact+gtprog__train-mid__test-" in changed["differ"][0]
    assert ": question " in changed["differ"][0] and "now 'yes'" in changed["differ"][0]
    monkeypatch.undo()
    monkeypatch.setattr(orchestration.study.running.piece, "_commit", lambda: head[0])
    # the scene parser's perception on each test variant, beside the predictions
    perc = json.loads((results / "pieces" / piece.name / "perception.json").read_text())
    gt = json.loads((tmp_path / "data" / "easy" / "scenes" / "test_scenes.json").read_text())["scenes"]
    assert set(perc["tests"]) == {"mid", "easy"} and perc["scene_parser_of"] == "mid"
    assert perc["tests"]["easy"]["all"]["objects"] == sum(len(sc["objects"]) for sc in gt)
    assert perc["tests"]["easy"]["all"]["images"] == len(gt)
    assert rec["seconds"]["total"] > 0 and len(rec["seconds"]["attempts"]) == 1
    assert is_done(results, piece)
    # the folder records the config its pieces ran under, and refuses another
    assert results_config(results) == cfg and results_config(results, cfg) == cfg
    other = dataclasses.replace(cfg, sizes=SuiteProfile(8, 2, 2))
    with pytest.raises(StudyError, match=r"study.json: this folder's pieces ran under another study config "
                                         r"\(fields sizes differ"):
        run_piece(Piece("easy", 0, "modular", ("nsvqa",), ("easy",)), tmp_path / "data", tmp_path / "runs",
                  results, other, jobs=1, workers=1, progress=False, echo=lambda s: None)
    assert not (tmp_path / "runs" / "easy").exists()  # refused before any work
    # a done piece is not pending any more
    assert piece.name not in [p.name for p in pending_pieces(results, STUDY)]
    # the report rebuilds from the committed predictions alone, and a changed number is caught
    from orchestration.study.report.publish import check_study_report, write_study_report
    from orchestration.study.report.build import build_study_report

    write_study_report(results, cfg)
    assert check_study_report(results, cfg) == []
    report = json.loads((results / "report.json").read_text())
    row = {r["model"]: r for r in report["in_domain"]}
    assert set(row) == {"nsvqa", "pnsvqa-exact+gtprog"}
    assert row["nsvqa"]["accuracy"] == rec["accuracy"]["nsvqa"]["mid"]["accuracy"]
    assert row["nsvqa"]["image_margin"] is None  # no question-only model ran
    assert report["perception"]["mid"]["easy"] == perc["tests"]["easy"]
    vis = report["factors"]["visual"]["models"]["nsvqa"]
    assert vis["matrix"][1][:2] == [rec["accuracy"]["nsvqa"]["easy"]["accuracy"],
                                    rec["accuracy"]["nsvqa"]["mid"]["accuracy"]]
    # compositionality reads mid as co-0
    comp = report["factors"]["compositionality"]["models"]["nsvqa"]["matrix"]
    assert comp[0][0] == rec["accuracy"]["nsvqa"]["mid"]["accuracy"]
    md = results / "report.md"
    md.write_text(md.read_text().replace("| nsvqa |", "| nsvqa (edited) |", 1))
    assert check_study_report(results, cfg) == ["report.md"]
    built = build_study_report(results, cfg)
    assert "in_domain.png" in built and built["reliability/pnsvqa-exact+gtprog.png"][:4] == b"\x89PNG"
    assert "reliability/nsvqa.png" not in built  # NS-VQA gives no probability
    # a second group on the same run records its own steps' seconds, not the run's running totals;
    # an earlier call of it that was stopped (its attempt left open) counts up to its last write
    run_dir = tmp_path / "runs" / "mid"
    first_start = json.loads((run_dir / "study_modular.json").read_text())["attempts"][0]["started"]
    (run_dir / "study_film.json").write_text(json.dumps({"attempts": [{"started": first_start - 1000}]}))
    (run_dir / "stopped.log").write_text("the stopped call's last line")
    os.utime(run_dir / "stopped.log", (first_start - 900, first_start - 900))
    second = Piece("mid", 0, "film", ("pnsvqa",), ("mid",))
    rec2 = run_piece(second, tmp_path / "data", tmp_path / "runs", results, cfg, jobs=1, workers=1,
                     progress=False, echo=lambda s: None)
    stopped, done = rec2["seconds"]["attempts"]
    assert stopped == {"started": first_start - 1000, "stopped": True, "seconds": pytest.approx(100)}
    steps = done["steps"]
    assert "test_mid" in steps and "test_easy" not in steps  # only what this call ran
    assert steps["total"] <= done["train_variant"]  # the run's running total is larger: the first piece's too
    assert rec2["seconds"]["total"] == pytest.approx(100 + done["generate"] + done["train_variant"])


def test_a_pieces_ledger_is_read_whole_or_refused_with_its_file_named(tmp_path):
    from orchestration.study.settings.attempts import attempt_starts, read_ledger

    assert read_ledger(tmp_path / "study_modular.json") == {"attempts": []}  # a first call
    good = {"attempts": [{"started": 10.0, "stopped": True, "seconds": 5.0}, {"started": 20}]}
    (tmp_path / "study_film.json").write_text(json.dumps(good))
    assert read_ledger(tmp_path / "study_film.json") == good
    assert attempt_starts(tmp_path, tmp_path / "study_modular.json") == [10.0, 20.0]
    for text, match in [('{"attempts": [{"started"', r"study_film.json: not readable JSON"),
                        ('{"attempt": []}', r"study_film.json: field 'attempts': expected a list"),
                        ('{"attempts": [{"started": "noon"}]}', r"study_film.json: attempts\[0\]: expected an object")]:
        (tmp_path / "study_film.json").write_text(text)
        with pytest.raises(StudyError, match=match):
            read_ledger(tmp_path / "study_film.json")
        with pytest.raises(StudyError, match=match):  # another group's call reads it too, and stops
            attempt_starts(tmp_path, tmp_path / "study_modular.json")
    assert (tmp_path / "study_film.json").read_text() == '{"attempts": [{"started": "noon"}]}'  # left as it was


def test_a_study_config_reads_from_json_over_the_defaults_and_names_a_bad_field(tmp_path):
    assert StudyConfig.from_json(STUDY.to_json()) == STUDY  # lists read back as the defaults' tuples
    # the shipped mini schedule's scene overrides do not resolve at the full profile: refused when read
    with pytest.raises(StudyError, match=r"field 'scene_overrides': det_eval_every"):
        StudyConfig.from_json({"profile": "full"})
    big = StudyConfig.from_json({"sizes": {"train": 20000, "val": 5000, "test": 5000}, "profile": "full",
                                 "seeds": [0, 1], "groups": {"modular": ["nsvqa", "pnsvqa"]}, "scene_overrides": {},
                                 "part_scene_overrides": {}})
    assert big.sizes == SuiteProfile(20000, 5000, 5000) and big.profile == "full" and big.seeds == (0, 1)
    assert big.groups == {"modular": ("nsvqa", "pnsvqa")} and big.image_profile == STUDY.image_profile
    for bad, match in [({"size": {}}, r"my.json: unknown field\(s\) \['size'\]"),
                       ({"seeds": 3}, r"my.json: field 'seeds' must be like its default \[0, 1, 2\], not 3"),
                       ({"budget_hours": "24"}, r"field 'budget_hours' must be like its default 44.0"),
                       ({"sizes": {"train": 10}}, r"field 'sizes' must be"), ([], r"a JSON object, not list")]:
        with pytest.raises(StudyError, match=match):
            StudyConfig.from_json(bad, source="my.json")
    # a folder without study.json is the given config's (else the shipped study's)
    assert results_config(tmp_path) is STUDY and results_config(tmp_path, big) is big
    (tmp_path / "study.json").write_text("{")
    with pytest.raises(StudyError, match=r"study.json: not JSON"):
        results_config(tmp_path)


def test_the_shipped_results_record_the_shipped_study():
    """``results/study`` ran under :data:`STUDY`: a change to STUDY must come with another folder."""
    from pathlib import Path

    assert results_config(Path(__file__).resolve().parents[2] / "results" / "study", STUDY) == STUDY


def test_the_model_lists_read_from_the_registry_are_those_the_shipped_study_records():
    """``executor_models`` and ``part_models`` are the default modular group's models that execute
    programs, read from what their classes declare (issue 79): the labels ``results/study/study.json``
    records, in its order."""
    from pathlib import Path

    recorded = json.loads((Path(__file__).resolve().parents[2] / "results" / "study" / "study.json").read_text())
    executing = ("nsvqa", "pnsvqa", "pnsvqa-exact", "nsvqa+gtprog", "pnsvqa+gtprog", "pnsvqa-exact+gtprog")
    for cfg in (BASE, STUDY):
        assert cfg.executor_models == tuple(recorded["executor_models"]) == executing
        assert cfg.part_models == tuple(recorded["part_models"]) == executing


def test_a_stopped_attempt_counts_up_to_its_last_write_before_the_next_start(tmp_path):
    from orchestration.study.settings.attempts import attempt_seconds, close_stopped_attempts, stopped_in_training

    run, data = tmp_path / "run", tmp_path / "data" / "slt"
    (run / "scene_parser").mkdir(parents=True)
    data.mkdir(parents=True)
    t = 1_000_000.0

    def write(path, at):
        path.write_text("x")
        os.utime(path, (at, at))

    write(run / "old.pt", t - 50)  # an earlier piece's: before the attempt started
    write(run / "scene_parser" / "train.log", t + 300)
    write(data / "img.png", t + 120)
    write(run / "later.json", t + 2000)  # another piece's, after the next start (t + 1500)
    ledger = {"attempts": [{"generate": 5.0, "train_variant": 10.0, "steps": {}},  # an old record: no start
                           {"started": t},  # stopped
                           {"started": t + 5000, "generate": 1.0, "train_variant": 2.0, "steps": {}}]}
    closed = close_stopped_attempts(ledger, [run, data], later=[t + 1500])
    assert closed["attempts"][1] == {"started": t, "stopped": True, "seconds": 300.0}
    assert closed["attempts"][0] == ledger["attempts"][0] and closed["attempts"][2] == ledger["attempts"][2]
    assert ledger["attempts"][1] == {"started": t}  # the input is left as it was
    assert [attempt_seconds(a) for a in closed["attempts"]] == [15.0, 300.0, 3.0]
    # without the other piece's start, its file would be counted as the stopped attempt's
    assert close_stopped_attempts(ledger, [run, data])["attempts"][1]["seconds"] == 2000.0
    # closing twice changes nothing; an attempt that wrote nothing counts 0
    assert close_stopped_attempts(closed, [run, data]) == closed
    assert close_stopped_attempts({"attempts": [{"started": t + 9000}]}, [run])["attempts"][0]["seconds"] == 0.0
    # one killed in training (its data generated) keeps its generation seconds, and says so

    late = close_stopped_attempts({"attempts": [{"started": t + 200, "generate": 30.0}]}, [run],
                                  later=[t + 1500])["attempts"][0]
    assert late == {"started": t + 200, "generate": 30.0, "stopped": True, "seconds": 100.0}
    assert stopped_in_training(late) and not stopped_in_training(closed["attempts"][1])


def test_a_call_that_fails_closes_its_attempt_with_the_error(tmp_path, monkeypatch):
    import orchestration.study.running.piece
    from orchestration.study.settings.attempts import stopped_in_training

    piece = Piece("long", 0, "modular", ("nsvqa",), ("long",))
    ledger = tmp_path / "runs" / "long" / "study_modular.json"

    def fail(*args, **kwargs):
        raise RuntimeError("could not place 10 objects")

    monkeypatch.setattr(orchestration.study.running.piece, "generate_piece_data", fail)
    with pytest.raises(RuntimeError, match="could not place"):
        run_piece(piece, tmp_path / "data", tmp_path / "runs", tmp_path / "results", STUDY, echo=lambda s: None)
    (first,) = json.loads(ledger.read_text())["attempts"]
    assert first["stopped"] and first["error"] == "RuntimeError: could not place 10 objects"
    assert first["seconds"] >= 0 and not stopped_in_training(first)  # no step was cut short
    # a failure in training: the attempt holds its generation seconds and is one stopped in training
    monkeypatch.setattr(orchestration.study.running.piece, "generate_piece_data", lambda *a, **k: None)
    monkeypatch.setattr(orchestration.study.running.piece, "train_variant", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run_piece(piece, tmp_path / "data", tmp_path / "runs", tmp_path / "results", STUDY, echo=lambda s: None)
    got = json.loads(ledger.read_text())["attempts"]
    assert got[0] == first and got[1]["error"] == "KeyboardInterrupt: " and stopped_in_training(got[1])
    assert not is_done(tmp_path / "results", piece)


def test_checkpoint_seconds_reads_what_each_checkpoint_records(tmp_path):
    import torch

    from orchestration.study.running.piece import checkpoint_seconds
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


def test_a_part_piece_trains_part_aware_parsers_on_its_own_data(tmp_path, require_renderer):
    import torch

    from orchestration.study.report.build import build_study_report, question_kinds
    from nsvqa.training.checkpoint import load_checkpoint

    torch.manual_seed(0)
    cfg = StudyConfig(sizes=SuiteProfile(2, 1, 1), image_profile="tiny", profile="tiny",
                      part_scene_overrides={"det_iterations": 2, "attr_epochs": 1},
                      part_question_overrides={"steps": 20})
    piece = Piece("mid", 0, PART_GROUP, ("pnsvqa-exact", "nsvqa+gtprog"), ("mid",))
    results = tmp_path / "results"
    rec = run_piece(piece, tmp_path / "data", tmp_path / "runs", results, cfg, jobs=1, workers=1,
                    progress=False, echo=lambda s: None)
    assert rec["questions"] == "object+part" and rec["scene_parser_of"] == "mid"
    assert not (tmp_path / "data" / "mid").exists() and not (tmp_path / "runs" / "mid").exists()
    qs = json.loads((tmp_path / "data" / "parts" / "mid" / "questions" / "test_questions.json").read_text())["questions"]
    kinds = question_kinds()
    fams = [kinds[f"{q['template_filename']}#{q['question_family_index']}"] for q in qs]
    assert "part" in fams and "object" in fams
    # the profile's part-aware scene parser: a detector with a part class, a head that learned part crops
    det = load_checkpoint(tmp_path / "runs" / "parts" / "mid" / "scene_parser" / "detector.pt")
    assert det["config"]["mode"] == "agnostic+parts" and det["config"]["attr_parts"] is True
    report = json.loads(build_study_report(results, cfg, plots=False)["report.json"])
    preds = read_predictions(results / "pieces" / piece.name / "predictions" /
                             "nsvqa+gtprog__train-mid__test-mid.jsonl.gz")
    part = [p for p in preds if kinds[p.family] == "part"]
    i, j = report["parts"]["train_variants"].index("mid"), report["parts"]["test_variants"].index("mid")
    assert report["parts"]["kinds"]["part"]["nsvqa+gtprog"]["matrix"][i][j] == pytest.approx(
        sum(p.correct for p in part) / len(part))


def test_the_report_sets_exact_inference_beside_the_threshold_on_each_factor(tmp_path):
    from nsvqa.artifacts.predictions import Prediction
    from orchestration.study.report.build import build_study_report, study_markdown

    # threshold: 1 of 2 right, each said with probability 0.9 (over-confident); exact: 2 of 2 at 1.0
    thr = [Prediction(0, "count", "2", "2", probability=0.9), Prediction(1, "count", "2", "3", probability=0.9)]
    exact = [Prediction(0, "count", "2", "2", probability=1.0), Prediction(1, "count", "2", "2", probability=1.0)]
    _write_piece(tmp_path, "mid-seed0-modular", "mid", "modular", ["pnsvqa", "pnsvqa-exact"],
                 {"pnsvqa": thr, "pnsvqa-exact": exact})
    report = json.loads(build_study_report(tmp_path, plots=False)["report.json"])
    for f in ("visual", "redundancy", "compositionality"):  # mid serves all three (co-0 is mid)
        m, e = report["factors"][f]["models"]["pnsvqa"], report["factors"][f]["models"]["pnsvqa-exact"]
        assert (m["cells"], m["accuracy_mean"], e["accuracy_mean"]) == (1, 0.5, 1.0)
        assert m["ece_mean"] == pytest.approx(0.4) and e["ece_mean"] == pytest.approx(0.0)
    md = study_markdown(report)
    assert "| visual | pnsvqa / pnsvqa-exact | 1 | 50.0 / 100.0 | — / — | 40.00 / 0.00 |" in md


def test_the_reports_rds_have_paired_intervals_and_the_findings_read_them(tmp_path):
    from nsvqa.artifacts.predictions import Prediction, write_predictions
    from orchestration.study.report.build import build_study_report, rd_pairs

    n, levels = 120, ("rd-", "mid", "rd+")

    def run(right):
        return [Prediction(i, "exist", "yes", "yes" if i < right * n else "no") for i in range(n)]

    # FiLM loses nothing off its training level; P-NSVQA and NS-VQA lose a quarter of it
    own = {"film": (0.5, 0.5), "pnsvqa": (0.8, 0.6), "nsvqa": (0.8, 0.6)}
    for t in levels:
        for group, models in (("modular", ("pnsvqa", "nsvqa")), ("film", ("film",))):
            d = tmp_path / "pieces" / f"{t}-seed0-{group}"
            for m in models:
                for s in levels:
                    write_predictions(d / "predictions" / f"{m}__train-{t}__test-{s}.jsonl.gz",
                                      run(own[m][0] if s == t else own[m][1]))
            (d / "piece.json").write_text(json.dumps({
                "format": 1, "piece": {"variant": t, "seed": 0, "group": group, "models": list(models),
                                       "tests": list(levels)},
                "commit": None, "machine": None, "seconds": {"total": 60.0}}))
    files = build_study_report(tmp_path, plots=False)
    report = json.loads(files["report.json"])
    red = report["factors"]["redundancy"]
    assert red["models"]["pnsvqa"]["rd"] == pytest.approx(0.25)
    lo, hi = red["models"]["pnsvqa"]["rd_ci95"]
    assert lo < 0.25 < hi and red["models"]["film"]["rd"] == 0 and hi - lo > 0.02
    pairs = [(c["a"], c["b"]) for c in red["rd_comparisons"]]
    assert pairs == [p for p in rd_pairs() if p in pairs] and ("pnsvqa", "film") in pairs and ("nsvqa", "film") in pairs
    same = next(c for c in red["rd_comparisons"] if (c["a"], c["b"]) == ("pnsvqa", "nsvqa"))
    assert same["diff"] == 0 and same["ci95"] == [0.0, 0.0]  # identical answers, the same redrawn questions
    finding = next(f for f in report["findings"] if f["key"] == "redundancy")
    assert finding["status"] == "reversed" and "pnsvqa − film +25.0 [" in finding["ours"]
    md, tex = files["report.md"].decode(), files["report.tex"].decode()
    assert f"| pnsvqa | — | 25.00 [{100 * lo:.2f}, {100 * hi:.2f}] | — |" in md
    assert "| redundancy | pnsvqa − film | +25.00 | [" in md
    assert f"pnsvqa & -- & 25.00 {{\\scriptsize [{100 * lo:.2f}, {100 * hi:.2f}]}} & -- & -- \\\\" in tex  # no margin: no LSTM


def test_the_budget_adds_the_committed_hours_and_projects_each_pending_piece_from_its_groups_steps(tmp_path):
    from orchestration.study.settings.budget import budget, budget_markdown

    def commit(name, variant, group, steps, *, parser_of=None, note=None, total=None, stopped=None,
               in_training=True, lost=False):
        d = tmp_path / "pieces" / name
        d.mkdir(parents=True)
        first = {"started": 0.0, "stopped": True, "seconds": stopped} | ({"generate": 10.0} if in_training else {})
        first |= {"lost": True} if lost else {}
        attempts = ([first] if stopped else []) + [{"steps": steps}]
        rec = {"format": 1, "piece": {"variant": variant, "seed": 0, "group": group},
               "scene_parser_of": parser_of or variant,
               "seconds": {"total": total or sum(steps.values()), "attempts": attempts}}
        if note:
            rec["note"] = note
        (d / "piece.json").write_text(json.dumps(rec))

    # two attempts' seconds of one step add up; a noted record counts in the hours, not the medians
    commit("easy-seed0-modular", "easy", "modular",
           {"scene_parser": 1200.0, "question_parser": 300.0, "model_nscl": 600.0, "tune_nsvqa": 60.0,
            "test_easy": 120.0, "test_mid": 120.0, "test_hard": 120.0})
    commit("mid-seed0-modular", "mid", "modular", {"scene_parser": 99999.0}, note="stopped attempts", total=3600.0)
    commit("rd--seed0-modular", "rd-", "modular",
           {"scene_parser": 10.0, "question_parser": 500.0, "model_nscl": 1000.0, "tune_nsvqa": 60.0,
            "test_rd-": 30.0, "test_mid": 30.0, "test_rd+": 30.0}, parser_of="mid")
    commit("mid-seed0-film", "mid", "film", {"model_lstm": 60.0, "model_film": 1500.0, "model_random": 6.0,
                                             "test_mid": 12.0})
    # so does one with an attempt stopped in training (the step the next one resumed is partial);
    # one stopped while generating its data cut no step short, and counts in both
    commit("rd+-seed0-modular", "rd+", "modular", {"question_parser": 88888.0}, parser_of="mid", stopped=400.0,
           total=1000.0)
    commit("rd+-seed0-film", "rd+", "film", {"model_film": 1700.0}, stopped=40.0, in_training=False, total=1740.0)
    # an attempt stopped in training whose run folder was lost (marked by hand): the next one
    # trained every step anew, so its steps count in the medians
    commit("easy-seed0-film", "easy", "film", {"model_film": 1800.0}, stopped=500.0, lost=True, total=2300.0)
    # the question parser trained beside the scene parser: both record the span, once in the total
    side = 1810.0 + 600 + 60 + 720
    commit("slt-seed0-modular", "slt", "modular",
           {"scene_parser": 1800.0, "question_parser": 1810.0, "model_nscl": 600.0, "tune_nsvqa": 60.0,
            **{f"test_{v}": 120.0 for v in ("slt", "hard", "long", "head", "tail", "oppo")}, "total": side},
           total=side)
    b = budget(tmp_path, StudyConfig(budget_hours=6.0))  # no further seeds declared
    spent = (1200 + 300 + 600 + 60 + 360 + 3600 + 10 + 500 + 1000 + 60 + 90 + 1578 + 1000 + 1740 + 2300
             + 1810 + 600 + 60 + 720)
    assert b["done"] == 8 and b["spent_hours"] == round(spent / 3600, 2)
    # the hours by part of the study add up to the total, and the table prints them
    assert sum(b["spent_hours_by_group"].values()) == pytest.approx(b["spent_hours"], abs=0.05)
    assert "| **total** |" in budget_markdown(b)
    assert b["step_minutes"]["film"]["model_film"] == round(1700 / 60, 1)  # median of 1500, 1700 and 1800
    # the parsers' phase: easy's one after the other (1,500 s), slt's side by side (1,810 s); the
    # noted record's 99999 s left out
    assert b["step_minutes"]["modular"]["parsers"] == round((1500 + 1810) / 2 / 60, 1)
    assert b["step_minutes"]["modular"]["parsers (shared scene parser)"] == round(510 / 60, 1)
    assert b["step_minutes"]["modular"]["model_nscl"] == 10.0  # median of 600, 1000 and 600
    rows = {p["piece"]: p for p in b["pending"]}
    # hard trains its own parsers, NSCL, and is tested on 8 variants
    hard = (1655 + 600 + 60 + 8 * 120) / 60
    assert rows["hard-seed0-modular"]["minutes"] == round(hard, 1) and rows["hard-seed0-modular"]["basis"] == "modular"
    # film off the default variant trains the LSTM and FiLM only (random and majority are default-only)
    assert rows["hard-seed0-film"]["minutes"] == round((60 + 1700 + 8 * 12) / 60, 1)
    # a seed of the default variant runs no NSCL; no mdetr piece is committed: no projection
    assert rows["mid-seed1-modular"]["minutes"] == round((1655 + 60 + 120) / 60, 1)
    assert rows["mid-seed0-mdetr"]["minutes"] is None and rows["mid-seed0-mdetr"]["cumulative_hours"] is None
    # the part extension borrows the modular steps, and the table says it is a lower bound
    assert rows["easy-seed0-parts"]["basis"] == "modular"
    cumulative = [p["cumulative_hours"] for p in b["pending"] if p["minutes"] is not None]
    assert cumulative == sorted(cumulative)
    inside = [p["within_cap"] for p in b["pending"] if p["minutes"] is not None]
    assert inside[0] and not inside[-1] and inside == sorted(inside, reverse=True)
    md = budget_markdown(b)
    assert "| easy-seed0-parts |" in md and "modular, a lower bound" in md and "no committed piece of its group" in md
    (tmp_path / "pieces" / "mid-seed0-film" / "piece.json").write_text('{"seconds": {}}')
    with pytest.raises(StudyError, match=r"mid-seed0-film/piece.json: no readable field seconds.total"):
        budget(tmp_path)


def test_the_budget_counts_the_scale_checks_runs_and_its_other_seconds(tmp_path):
    from orchestration.study.settings.budget import budget, budget_markdown
    from orchestration.study.settings.scale_record import SCALE_BUDGET_GROUP

    assert SCALE_BUDGET_GROUP not in budget(tmp_path)["spent_hours_by_group"]  # the check has not run
    folder = tmp_path / "redundancy_scale"
    folder.mkdir()
    rec = {"scales": {"1": {"runs": {"rd-": {"seconds": 1800.0}, "rd+": {"seconds": 900.0}}},
                      "10": {"runs": {"rd-": {"seconds": 3600.0}}}},
           "other_seconds": [{"seconds": 1800.0, "what": "a scene parser"}]}
    (folder / "scale.json").write_text(json.dumps(rec))
    b = budget(tmp_path)
    assert b["spent_hours_by_group"] == {SCALE_BUDGET_GROUP: 2.25} and b["spent_hours"] == 2.25
    assert "0 pieces committed and the redundancy scale check: 2.2 hours" in budget_markdown(b)
    rec["other_seconds"].append({"what": "forgot the seconds"})
    (folder / "scale.json").write_text(json.dumps(rec))
    with pytest.raises(StudyError, match=r"redundancy_scale/scale.json: other_seconds\[1\]: no number in field seconds"):
        budget(tmp_path)
    (folder / "scale.json").write_text('{"scales": ')
    with pytest.raises(StudyError, match=r"redundancy_scale/scale.json: not readable JSON"):
        budget(tmp_path)


def test_a_systematic_pieces_perception_has_its_val_split_as_the_id_reference(tmp_path, monkeypatch):
    import orchestration.study.running.piece
    from orchestration.study.running.piece import write_perception

    calls = []

    def fake(path, folder, split, spec=None):
        calls.append((path.name, folder.name, split, bool(spec and spec.get("ood"))))
        return {"split": split, "all": {"objects": 40 if split == "val" else 30}}

    monkeypatch.setattr(orchestration.study.running.piece, "perception", fake)
    piece = Piece("sys-composition", 0, "modular", ("nsvqa",), ("sys-composition",))
    parsed = tmp_path / "runs" / "sys-composition" / "parsed" / "sys-composition"
    parsed.mkdir(parents=True)
    (parsed / "likelihoods.json").write_text("{}")
    with pytest.raises(StudyError, match=r"val_likelihoods.json: no parse of sys-composition's val split"):
        write_perception(piece_setup(piece, tmp_path / "data", tmp_path / "runs"), tmp_path / "results")
    (parsed / "val_likelihoods.json").write_text("{}")
    out = json.loads(write_perception(piece_setup(piece, tmp_path / "data", tmp_path / "runs"), tmp_path / "results").read_text())
    assert out["tests"]["sys-composition"] == {"split": "test", "all": {"objects": 30}, "val": {"objects": 40}}
    assert calls[-2:] == [("likelihoods.json", "sys-composition", "test", True),
                          ("val_likelihoods.json", "sys-composition", "val", True)]
    # a factor's piece has no val entry
    calls.clear()
    mid = Piece("mid", 0, "modular", ("nsvqa",), ("mid",))
    (tmp_path / "runs" / "mid" / "parsed" / "mid").mkdir(parents=True)
    (tmp_path / "runs" / "mid" / "parsed" / "mid" / "likelihoods.json").write_text("{}")
    out = json.loads(write_perception(piece_setup(mid, tmp_path / "data", tmp_path / "runs"), tmp_path / "results").read_text())
    assert out["tests"]["mid"] == {"split": "test", "all": {"objects": 30}} and len(calls) == 1


def test_the_commit_a_piece_records_is_head_when_the_process_first_asked(monkeypatch):
    """A process running several pieces runs the code it imported: later commits do not move it."""
    import subprocess

    import orchestration.study.running.piece

    orchestration.study.running.piece._commit.cache_clear()
    heads = iter(["a" * 40, "b" * 40])
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, next(heads) + "\n", ""))
    try:
        assert orchestration.study.running.piece._commit() == "a" * 40
        assert orchestration.study.running.piece._commit() == "a" * 40  # HEAD moved to b…, the process did not
    finally:
        orchestration.study.running.piece._commit.cache_clear()


def test_the_in_domain_rows_carry_the_image_shuffle_tests_dependence(tmp_path):
    from nsvqa.artifacts.predictions import Prediction, write_predictions
    from orchestration.study.report.publish import in_domain_table, readme_results
    from orchestration.study.report.build import build_study_report

    def right(k, n=8):  # k of n questions right
        return [Prediction(i, "exist", "yes", "yes" if i < k else "no", image_index=i) for i in range(n)]

    _write_piece(tmp_path, "mid-seed0-film", "mid", "film", ["lstm", "film"], {"lstm": right(4), "film": right(5)})
    _write_piece(tmp_path, "mid-seed0-modular", "mid", "modular", ["nsvqa"], {"nsvqa": right(8)})
    # the image-shuffle test's predictions: the LSTM loses nothing, NS-VQA falls to the prior
    shuffled = tmp_path / "pieces" / "mid-seed0-film" / "shuffled"
    write_predictions(shuffled / "lstm__train-mid__test-mid.jsonl.gz", right(4))
    write_predictions(tmp_path / "pieces" / "mid-seed0-modular" / "shuffled" / "nsvqa__train-mid__test-mid.jsonl.gz",
                      right(4))
    report = json.loads(build_study_report(tmp_path, plots=False)["report.json"])
    rows = {r["model"]: r for r in report["in_domain"]}
    assert rows["lstm"]["image_dependence"] == 0.0 and rows["nsvqa"]["image_dependence"] == 0.5
    assert "image_dependence" not in rows["film"]  # no shuffled predictions committed: not scored
    assert (rows["lstm"]["kind"], rows["film"]["kind"], rows["nsvqa"]["kind"]) == ("question-only", "holistic",
                                                                                   "modular")
    table = "\n".join(in_domain_table(report))
    assert "| nsvqa | modular | +50.0 | 100.0 [" in table and "| +50.0 |" in table  # image margin first
    assert "| film | holistic | +12.5 | 62.5 [" in table and table.rstrip().endswith("| +50.0 |")
    assert "docs/study.md" in readme_results(report)  # the README points to it (its in-domain table is the demo's)
    # FiLM's further seeds have the test: it pools them all (seeds, then images) and says so
    for seed, own, other in ((1, right(5), right(5)), (2, right(6), right(2))):
        _write_piece(tmp_path, f"mid-seed{seed}-film", "mid", "film", ["film"], {"film": own}, seed=seed)
        write_predictions(tmp_path / "pieces" / f"mid-seed{seed}-film" / "shuffled" / "film__train-mid__test-mid.jsonl.gz",
                          other)
    report = json.loads(build_study_report(tmp_path, plots=False)["report.json"])
    film = next(r for r in report["in_domain"] if r["model"] == "film")
    assert film["image_dependence"] == 0.25 and film["image_dependence_seeds"] == [1, 2]
    assert film["accuracy"] == 5 / 8  # the row itself stays seed 0's
    assert "| film | holistic | +12.5 | 62.5 [" in "\n".join(in_domain_table(report))
    assert "| +25.0 (mean of seeds 1, 2) |" in "\n".join(in_domain_table(report))


@pytest.mark.parametrize("field,value,message", [
    ("scene_overrides", {"attr_epochs": 3, "atr_lr": 1e-3}, "field 'scene_overrides'"),
    ("question_overrides", {"steps": -1}, "field 'question_overrides'"),
    ("model_overrides", {"film": {"stpes": 10}}, "field 'model_overrides', model 'film'"),
    ("model_overrides", {"no-such-model": {}}, "field 'model_overrides', model 'no-such-model'"),
])
def test_a_misspelt_or_out_of_range_setting_fails_when_the_config_is_read(field, value, message):
    with pytest.raises(StudyError, match=message):
        StudyConfig.from_json({field: value}, source="my.json")
