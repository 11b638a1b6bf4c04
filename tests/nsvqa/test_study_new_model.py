"""A new model runs in the study without a line of the study changed: a test adds a tiny model the way
a user would (one file, ``tests/fixtures/toy_model.py``, and its one line in ``baselines.MODELS``) and
runs it through one tiny piece of a group the study has never heard of. The plan asks the registry
what the piece needs (a scene parser: the model declares that it reads the parses), so the piece
trains its scene parser, parses the training splits before the model trains, and commits its
predictions and its scene parser's perception."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import baselines
from nsvqa.artifacts.predictions import find_prediction_files, read_predictions
from nsvqa.generation.suite import SuiteProfile
from orchestration import models
from orchestration.study.settings.budget import budget
from orchestration.study.settings.config import StudyConfig
from orchestration.study.settings.pieces import Piece, trains_scene_parser, uses_scene_parser

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy_model.py"


def load_toy(monkeypatch):
    """The user's file, imported as a module of its own name."""
    spec = importlib.util.spec_from_file_location("toy_model", TOY)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_new_model_runs_through_a_tiny_piece_of_a_new_group(tmp_path, require_renderer, monkeypatch):
    import torch

    from orchestration.study.running.piece import run_piece

    toy = load_toy(monkeypatch)
    monkeypatch.setitem(baselines.MODELS, "object-count", toy.ObjectCount)  # the one registration line
    assert "object-count" in models.names() and models.get("object-count").needs().train_parses

    torch.manual_seed(0)
    cfg = StudyConfig(sizes=SuiteProfile(4, 2, 2), image_profile="tiny", profile="tiny",
                      scene_overrides={"mode": "agnostic", "attr_parts": False, "det_iterations": 2,
                                       "attr_epochs": 1},
                      groups={"counting": ("object-count",)})
    piece = Piece("mid", 0, "counting", cfg.groups["counting"], ("mid", "easy"))
    assert uses_scene_parser(piece) and trains_scene_parser(piece, cfg)
    results = tmp_path / "results"
    rec = run_piece(piece, tmp_path / "data", tmp_path / "runs", results, cfg, jobs=1, workers=1,
                    progress=False, echo=lambda s: None)

    files = find_prediction_files([results])
    assert {(k.model, k.train, k.test) for k in files} == {("object-count", "mid", t) for t in ("mid", "easy")}
    qs = json.loads((tmp_path / "data" / "easy" / "questions" / "test_questions.json").read_text())["questions"]
    (path,) = files[next(k for k in files if k.test == "easy")]
    assert len(read_predictions(path)) == len(qs) == rec["accuracy"]["object-count"]["easy"]["n"]
    run = tmp_path / "runs" / "mid"
    learnt = json.loads((run / "baselines" / "object-count" / "object_count.json").read_text())
    assert learnt["train_scenes"] == 4  # the training split's parses were made before it trained
    assert (run / "scene_parser").is_dir() and not (run / "question_parser").exists()  # no program read
    perception = json.loads((results / "pieces" / piece.name / "perception.json").read_text())
    assert set(perception["tests"]) == {"mid", "easy"} and rec["scene_parser_of"] == "mid"
    # its hours count in the budget, its own scene parser's step among them, and its group's other
    # pieces are projected from it
    b = budget(results, cfg)
    assert b["done"] == 1 and {"parsers", "model_object-count", "test (own parser)"} <= set(b["step_minutes"]["counting"])
    assert {p["piece"] for p in b["pending"] if p["basis"] == "counting"} >= {"easy-seed0-counting", "hard-seed0-counting"}
