"""nsvqa.models and orchestration.models: the one model interface and its checks, the registry built
from the packages' tables, model specs and options, and a toy model that a test adds to a table and
runs through the experiment like any other (one file plus its line in a table is all a new model
takes)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

import baselines
from nsvqa.config import Config
from nsvqa.models import (PROFILE_NAMES, Model, ModelConfig, ModelSpec, Needs, PredictInputs, UnknownModel,
                          check_model)
from nsvqa.models import pipeline
from orchestration import models


def test_pipeline_models_are_in_the_registry_with_their_needs():
    assert models.names()[:3] == ("nsvqa", "pnsvqa", "pnsvqa-exact") == tuple(pipeline.MODELS)
    assert set(models.names()) == set(pipeline.MODELS) | set(baselines.MODELS)
    for name in ("nsvqa", "pnsvqa", "pnsvqa-exact"):
        m = models.get(name)
        assert m.name == name and isinstance(m, pipeline.MODELS[name])
        assert not m.trainable and m.train(None, "unused") is None
        assert m.needs(ModelSpec(name)) == Needs(True, True, images=True)
        assert m.needs(ModelSpec(name, gt_programs=True)) == Needs(True, False, images=True)


def test_specs_spell_options_and_round_trip():
    for label in ("nsvqa", "pnsvqa-exact+gtprog"):
        assert models.parse_spec(label).label == label
    assert models.parse_spec("pnsvqa+gtprog") == ModelSpec("pnsvqa", gt_programs=True)
    with pytest.raises(ValueError, match=r"unknown option '\+beam'"):
        models.parse_spec("nsvqa+beam")
    with pytest.raises(UnknownModel, match=r"unknown model 'nope'; valid: nsvqa, pnsvqa, pnsvqa-exact, cnn_lstm"):
        models.get("nope")
    with pytest.raises(UnknownModel, match=r"unknown model\(s\) \['a', 'b\+gtprog'\]"):
        models.parse_specs(["nsvqa", "a", "b+gtprog"])
    assert models.needs([ModelSpec("nsvqa", True), ModelSpec("pnsvqa")]) == Needs(True, True, images=True)
    assert models.needs([ModelSpec("nsvqa", True)]) == Needs(True, False, images=True)


def test_the_registry_checks_every_line_of_its_tables(monkeypatch):
    class Bad(Model):
        family = "holistic"

        def predict(self, *a, **k):
            return []

    with pytest.raises(ValueError, match="'\\+' spells options"):
        check_model("x+y", Bad)
    with pytest.raises(ValueError, match=r"family None; valid: modular, holistic, question-only"):
        check_model("undeclared", type("Undeclared", (Bad,), {"family": None}))
    with pytest.raises(ValueError, match=r"not a concrete subclass of nsvqa.models.Model"):
        check_model("abstract", Model)

    @dataclass(frozen=True)
    class Cfg(Config):  # the README's old example: none of the fields the experiment passes
        data: str
        profile: str = "tiny"

        PROFILES: ClassVar = {p: {} for p in PROFILE_NAMES}

    class Unfit(Bad):
        config_class = Cfg

    with pytest.raises(ValueError, match=r"must be a frozen dataclass deriving from nsvqa.models.ModelConfig"):
        check_model("unfit", Unfit)

    @dataclass(frozen=True)
    class Fit(ModelConfig):
        width: int = 4

        PROFILES: ClassVar = {p: {} for p in PROFILE_NAMES}

    @dataclass(frozen=True)
    class TinyOnly(Fit):
        PROFILES: ClassVar = {"tiny": {}}

    class NoProfiles(Bad):
        config_class = TinyOnly

    with pytest.raises(ValueError, match=r"no profile \['demo', 'mini', 'full'\]"):
        check_model("noprofiles", NoProfiles)
    with monkeypatch.context() as m:  # a table line the checks refuse: the registry answers nothing
        m.setitem(baselines.MODELS, "noprofiles", NoProfiles)
        with pytest.raises(ValueError, match=r"model 'noprofiles': no profile"):
            models.get("nsvqa")
    with monkeypatch.context() as m:  # one name, two tables
        m.setitem(baselines.MODELS, "nsvqa", Bad)
        with pytest.raises(ValueError, match=r"model 'nsvqa' is named twice: in nsvqa.models.pipeline.MODELS and in "
                                             r"baselines.MODELS"):
            models.names()
    # what the experiment passes is accepted by a config deriving from ModelConfig
    monkeypatch.setitem(baselines.MODELS, "fit", type("FitModel", (Bad,), {"config_class": Fit}))
    got = models.get("fit").config("data/x", "tiny", seed=3, device="cpu")
    assert (got.model, got.seed, got.device, got.width) == ("fit", 3, "cpu", 4)


def test_a_pipeline_model_without_its_parses_says_what_is_missing(tmp_path):
    with pytest.raises(ValueError, match="needs likelihoods and programs"):
        models.get("pnsvqa").predict(None, tmp_path, "mid", "test", inputs=PredictInputs())
    with pytest.raises(ValueError, match="needs likelihoods$"):
        models.get("nsvqa").predict(None, tmp_path, "mid", "test", spec=ModelSpec("nsvqa", True))


# ---------------------------------------------------------------------------- a toy model
def readme_model_source() -> str:
    """The model example of docs/models.md ("One model interface"), as the page shows it."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    start = text.index("```python\nimport json\nfrom collections import Counter")
    return text[start + len("```python\n"):text.index("```", start + 10)]


@pytest.fixture
def toy_model(monkeypatch):
    """The example model of docs/models.md, added to the baselines' table by running the page's
    code and its one table line."""
    import sys
    import types

    module = types.ModuleType("readme_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    exec(compile(readme_model_source(), "docs/models.md", "exec"), module.__dict__)
    monkeypatch.setitem(baselines.MODELS, "type_prior", module.TypePrior)  # the line in baselines/__init__.py
    return models.get("type_prior")


def test_a_toy_model_added_in_a_test_runs_through_the_experiment(toy_model, tiny_root, tmp_path):
    from orchestration.experiment import VariantRun, train_variant
    from nsvqa.artifacts.predictions import read_predictions

    assert "type_prior" in models.names() and toy_model.trainable and toy_model.needs() == Needs()  # no images
    summary = train_variant(tiny_root, "mid", tmp_path, models=["type_prior"], tests=["mid", "hard"],
                            spec=None, echo=lambda s: None)
    run = VariantRun(tmp_path, "mid")
    assert not run.scene_dir.exists() and not run.question_dir.exists()  # it needs no parser
    prior = json.loads((run.model_dir("type_prior") / "prior.json").read_text())
    for test in ("mid", "hard"):
        preds = read_predictions(run.predictions("type_prior", test))
        assert preds and all(p.prediction == prior.get(p.question_type) for p in preds)
        acc = sum(p.prediction == p.answer for p in preds) / len(preds)
        assert summary["accuracy"]["type_prior"][test]["accuracy"] == pytest.approx(acc)
    assert set(summary["seconds"]) >= {"model_type_prior", "test_mid", "test_hard"}


def test_a_model_that_needs_train_parses_gets_them_before_it_trains(tiny_root, tmp_path, monkeypatch):
    from orchestration import experiment
    from orchestration.experiment import VariantRun, model_specs, train_models
    from orchestration.train_spec import TrainSpec

    with pytest.raises(ValueError, match="needs the scene parser"):
        Needs(train_parses=True)
    assert Needs(True, False, True) | Needs(False, True, images=True) == Needs(True, True, True, True)

    @dataclass(frozen=True)
    class ParsesConfig(ModelConfig):
        parses: str = ""

        PROFILES: ClassVar = {p: {} for p in PROFILE_NAMES}

    seen = {}

    class ReadsTrainParses(Model):
        family = "holistic"
        config_class = ParsesConfig
        trains_on_parses = True

        def train(self, cfg, out, *, resume=False, progress=True):
            seen["parses"] = cfg.parses
            seen["files"] = sorted(p.name for p in Path(cfg.parses).iterdir())
            return Path(out)

        def predict(self, run_dir, root, variant, split="test", **kw):
            return []

    monkeypatch.setitem(baselines.MODELS, "reads_train_parses", ReadsTrainParses)
    assert models.get("reads_train_parses").needs() == Needs(scene_parser=True, train_parses=True, images=True)
    calls = []

    def fake_parse(run, data, split, *, progress=True, min_score=None, tuning=False):
        calls.append((split, tuning))
        out = run.parsed(data.name, "likelihoods", split if tuning else None)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("{}")
        return out

    monkeypatch.setattr(experiment, "parse_scenes", fake_parse)
    run = VariantRun(tmp_path, "mid")
    run.path.mkdir(parents=True)
    train_models(tiny_root / "mid", run, TrainSpec(profile="tiny", progress=False), model_specs(["reads_train_parses"]))
    assert calls == [("train", True), ("val", True)]
    assert Path(seen["parses"]) == run.path / "parsed" / "mid"
    assert seen["files"] == ["train_likelihoods.json", "val_likelihoods.json"]


def test_a_new_reasoner_is_a_class_and_its_line_and_the_lists_of_executing_models_follow(monkeypatch):
    """Issue 79: a program-executing model declares its reasoner (and mode) on its class and builds it;
    the lists of models that execute programs (transfer reports, pretrained sets, the study's executor
    and part models) are read from those declarations, not written out. The shipped study lists its
    models in its groups, so a new reasoner joins it by one line there, not by being registered."""
    from executors import load_ontology
    from orchestration.explain import MODELS as EXPLAINED
    from orchestration.study.settings.config import StudyConfig
    from orchestration.transfer import TRANSFER_MODELS

    shipped = ("nsvqa", "pnsvqa", "pnsvqa-exact", "nsvqa+gtprog", "pnsvqa+gtprog", "pnsvqa-exact+gtprog")
    assert models.executors() == TRANSFER_MODELS == shipped
    assert models.executors(gt_programs=False) == pipeline.REASONERS == shipped[:3]
    assert EXPLAINED == {"pnsvqa": "threshold", "pnsvqa-exact": "exact"}  # the P-NSVQA reasoners, by mode
    assert not any(models.get(n).executes_programs for n in baselines.MODELS)  # NSCL trains: not one of them

    class StrictExact(pipeline.PipelineModel):  # the user's one class ...
        reasoner_cls = pipeline.PNSVQA
        mode = "exact"
        threshold = 0.9

    monkeypatch.setitem(pipeline.MODELS, "pnsvqa-strict", StrictExact)  # ... and its one line
    onto = load_ontology("superclevr")
    reasoner = models.get("pnsvqa-strict").reasoner(onto)
    assert isinstance(reasoner, pipeline.PNSVQA) and reasoner.executor.mode == "exact"
    assert reasoner.executor.threshold == 0.9 == pipeline.make_reasoner("pnsvqa-strict", onto).executor.threshold
    assert models.executors() == (*shipped[:3], "pnsvqa-strict", *shipped[3:], "pnsvqa-strict+gtprog")
    modular = StudyConfig().groups["modular"]
    assert models.executing(modular) == StudyConfig().executor_models == shipped  # the study: as it was
    assert models.executing((*modular, "pnsvqa-strict")) == (*shipped, "pnsvqa-strict")
    with pytest.raises(UnknownModel, match="unknown model"):
        models.executing(["nope"])
