"""train_variant.py / run_factor.py: train on a variant, predict on its factor, resume, report."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from executors.io import load_questions
from nsvqa.training.checkpoint import load_checkpoint
from orchestration.experiment import ExperimentError, VariantRun, variants_to_test
from nsvqa.artifacts.predictions import read_predictions

TINY = ["--profile", "tiny", "--scene-set", "det_iterations=2", "--scene-set", "attr_epochs=1",
        "--question-set", "steps=20", "--threads", "1", "--no-progress"]
MODELS = "nsvqa,pnsvqa,pnsvqa-exact,nsvqa+gtprog"


@pytest.fixture(scope="module")
def suite(tmp_path_factory, require_renderer):
    from nsvqa.generation.suite import generate_suite

    root = tmp_path_factory.mktemp("suite")
    generate_suite(root, "visual", "tiny", progress=False, echo=lambda s: None)
    return root


@pytest.fixture(scope="module")
def trained(suite, tmp_path_factory, load_script):
    torch.manual_seed(0)
    runs = tmp_path_factory.mktemp("runs")
    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "mid", "--out", str(runs),
                                            "--factor", "visual", "--models", MODELS, *TINY])
    assert rc == 0
    return runs


def test_predictions_for_every_model_and_test_variant(suite, trained):
    run = VariantRun(trained, "mid")
    for test in ("easy", "mid", "hard"):
        questions = load_questions(suite / test / "questions" / "test_questions.json")
        for model in MODELS.split(","):
            path = run.predictions(model, test)
            assert path.name == f"{model}__train-mid__test-{test}.jsonl"
            preds = read_predictions(path)
            assert [p.question_index for p in preds] == list(range(len(questions)))
            assert [p.answer for p in preds] == [str(q["answer"]).lower() for q in questions]
            # every question gets an answer; failures are flagged guesses
            assert all(p.prediction is not None for p in preds)
            assert all(p.guessed == (p.invalid_program or p.execution_error) for p in preds)
            if model.startswith("pnsvqa"):
                assert all((p.probability is None) == p.guessed for p in preds)
            if model.endswith("+gtprog"):
                assert not any(p.invalid_program for p in preds)
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["tests"] == ["easy", "mid", "hard"]
    assert set(summary["accuracy"]) == set(MODELS.split(","))
    cfg = json.loads((run.path / "config.json").read_text())["config"]
    assert cfg["variant"] == "mid" and cfg["profile"] == "tiny"
    assert (run.scene_dir / "detector.pt").exists() and (run.question_dir / "question_parser.pt").exists()


def test_a_tiny_end_to_end_run_keeps_under_50_mb(trained):
    # what takes the space (docs/decisions.md, what a finished run keeps): the detector's weights,
    # then the parses and the other checkpoints; no optimizer state, no temporaries left
    files = [f for f in (trained / "mid").rglob("*") if f.is_file()]
    size = sum(f.stat().st_size for f in files)
    assert size < 50e6, size
    assert max(files, key=lambda f: f.stat().st_size).name == "detector.pt"
    assert not [f for f in files if f.name.endswith(".tmp")]
    for ck in (trained / "mid").rglob("*.pt"):
        if not ck.name.startswith("crops_"):
            assert "optimizer" not in load_checkpoint(ck)["train_state"], ck


def test_a_second_call_resumes_without_redoing_work(suite, trained, load_script):
    run = VariantRun(trained, "mid")
    parsed = run.parsed("hard", "likelihoods")
    programs = run.parsed("hard", "programs")
    before = (parsed.stat().st_mtime_ns, programs.stat().st_mtime_ns)
    step = load_checkpoint(run.scene_dir / "detector.pt", kind="detector")["train_state"]["step"]
    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "mid", "--out", str(trained),
                                            "--factor", "visual", "--models", MODELS, *TINY])
    assert rc == 0
    assert (parsed.stat().st_mtime_ns, programs.stat().st_mtime_ns) == before
    assert load_checkpoint(run.scene_dir / "detector.pt", kind="detector")["train_state"]["step"] == step
    history = json.loads((run.path / "config.json").read_text())["history"]
    assert len(history) == 2
    # a stale parse (its provenance no longer matches) is redone
    doc = json.loads(parsed.read_text())
    doc["provenance"]["detector"] = "0" * 64
    parsed.write_text(json.dumps(doc))
    from orchestration.experiment import parse_scenes

    parse_scenes(run, suite / "hard", "test", progress=False)
    assert json.loads(parsed.read_text())["provenance"]["detector"] != "0" * 64
    # another detection score cut is another parse, keeping at least as many detections
    n_before = sum(len(s["detections"]) for s in json.loads(parsed.read_text())["scenes"])
    parse_scenes(run, suite / "hard", "test", progress=False, min_score=0.0)
    doc = json.loads(parsed.read_text())
    assert doc["provenance"]["min_score"] == 0.0 and doc["min_score"] == 0.0
    assert sum(len(s["detections"]) for s in doc["scenes"]) >= n_before


def test_report_from_the_runs(trained, tmp_path, load_script):
    rc = load_script("evaluate_rd").main(["--runs", str(trained), "--out", str(tmp_path / "rep"),
                                          "--allow-partial-rd", "--no-plots"])
    assert rc == 0
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    vis = rep["factors"]["visual"]
    row = vis["models"]["pnsvqa"]["matrix"][vis["train_variants"].index("mid")]
    assert all(x is not None for x in row)
    other = vis["models"]["pnsvqa"]["matrix"][vis["train_variants"].index("easy")]
    assert other == [None, None, None]  # not trained on easy: missing, not zero
    rd = vis["models"]["nsvqa+gtprog"]["rd"]  # the tiny parsers' in-domain accuracy may be 0: no RD
    assert rd["partial"] and rd["value"] is not None and set(rd["per_train"]) == {"easy", "mid", "hard"}, rd
    acc = {s: rep_cell(rep, "nsvqa+gtprog", s) for s in ("easy", "mid", "hard")}
    expect = ((acc["mid"] - acc["easy"]) / acc["mid"] + (acc["mid"] - acc["hard"]) / acc["mid"]) / 2
    assert rd["value"] == pytest.approx(expect)


def rep_cell(rep, model, test):
    (cell,) = [c for c in rep["cells"] if c["model"] == model and c["train"] == "mid" and c["test"] == test]
    return cell["value"]


def test_errors_name_what_is_missing(suite, tmp_path, load_script, capsys):
    tv = load_script("train_variant")
    assert tv.main(["--data", str(tmp_path), "--variant", "mid", "--out", str(tmp_path / "r"), "--factor", "visual",
                    *TINY]) == 2
    assert "mid/questions/train_questions.json: missing" in capsys.readouterr().err
    assert tv.main(["--data", str(suite), "--variant", "mid", "--out", str(tmp_path / "r"),
                    "--models", "nsvqa,nope", *TINY]) == 2
    assert "unknown model(s) ['nope']" in capsys.readouterr().err
    assert tv.main(["--data", str(suite), "--variant", "head", "--out", str(tmp_path / "r"), *TINY]) == 2
    assert "only a test split" in capsys.readouterr().err
    with pytest.raises(ExperimentError, match="not a variant of factor 'visual'"):
        variants_to_test("rd-", "visual")
    assert variants_to_test("mid") == ["easy", "mid", "hard", "rd-", "rd+"]
    assert variants_to_test("sys-random") == ["sys-random"]
    # a missing test variant fails unless skipped
    assert tv.main(["--data", str(suite), "--variant", "mid", "--out", str(tmp_path / "r"), *TINY]) == 2
    assert "rd-/questions/test_questions.json: missing" in capsys.readouterr().err
    # a run whose summary cannot be read is refused before any work, the summary left as it was
    torn = VariantRun(tmp_path / "r2", "mid").path
    torn.mkdir(parents=True)
    (torn / "summary.json").write_text("{")
    assert tv.main(["--data", str(suite), "--variant", "mid", "--out", str(tmp_path / "r2"), "--factor", "visual",
                    *TINY]) == 2
    assert "mid/summary.json: not readable JSON" in capsys.readouterr().err
    assert [p.name for p in torn.iterdir()] == ["summary.json"] and (torn / "summary.json").read_text() == "{"


def test_run_factor_generates_only_what_it_needs_and_reports(tmp_path, load_script, capsys, require_renderer):
    rf = load_script("run_factor")
    rc = rf.main(["--factor", "visual", "--data", str(tmp_path / "d"), "--runs", str(tmp_path / "r"),
                  "--report", str(tmp_path / "rep"), "--train-variants", "mid", "--models", "nsvqa+gtprog",
                  "--allow-partial-rd", "--no-plots", *TINY])
    assert rc == 0
    # train/val only for the variant trained on; the test split of every variant
    assert sorted(p.name for p in (tmp_path / "d" / "easy" / "questions").iterdir()) == ["test_questions.json"]
    assert sorted(p.name for p in (tmp_path / "d" / "mid" / "questions").iterdir()) == [
        "test_questions.json", "train_questions.json", "val_questions.json"]
    assert not (tmp_path / "r" / "visual" / "mid" / "question_parser").exists()  # gt programs: no parser
    out = capsys.readouterr().out
    assert "# Relative Degrade report" in out and (tmp_path / "rep" / "visual" / "report.md").exists()
    assert rf.main(["--factor", "visual", "--data", str(tmp_path / "d"), "--runs", str(tmp_path / "r"),
                    "--report", str(tmp_path / "rep"), "--train-variants", "rd-", *TINY]) == 2
    assert "not trainable variants of visual" in capsys.readouterr().err


def test_a_call_for_other_models_keeps_the_summary_of_the_earlier_ones(suite, trained, load_script):
    run = VariantRun(trained, "mid")
    before = json.loads((run.path / "summary.json").read_text())
    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "mid", "--out", str(trained),
                                            "--factor", "visual", "--models", "majority", *TINY])
    assert rc == 0
    after = json.loads((run.path / "summary.json").read_text())
    assert after["models"] == [*MODELS.split(","), "majority"]
    assert {m: after["accuracy"][m] for m in MODELS.split(",")} == before["accuracy"]
    assert set(after["accuracy"]["majority"]) == {"easy", "mid", "hard"}
    assert "model_majority" in after["seconds"]
    assert {k: after["seconds"][k] for k in before["seconds"] if k.startswith("scene")} == \
        {k: v for k, v in before["seconds"].items() if k.startswith("scene")}


def test_nscl_chooses_its_cut_on_the_val_parses_then_answers_test(suite, trained, load_script):
    """A model that tunes on val: the run parses the training variant's val split beside its test
    parses, NSCL picks its detection cut there (``tuned.json``), and its test predictions follow."""
    from baselines.nscl import MIN_SCORE_CANDIDATES, TUNED
    from nsvqa.models import ModelSpec
    from orchestration import models as registry

    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "mid", "--out", str(trained),
                                            "--tests", "mid", "--models", "nscl", *TINY])
    assert rc == 0
    run = VariantRun(trained, "mid")
    assert run.parsed("mid", "likelihoods", "val").is_file() and run.parsed("mid", "programs", "val").is_file()
    assert run.parsed("mid", "likelihoods").is_file()  # the test split's own parse is apart
    tuned = json.loads((run.model_dir("nscl") / TUNED).read_text())
    assert tuned["key"]["split"] == "val" and tuned["min_score"] in MIN_SCORE_CANDIDATES
    assert max(tuned["accuracy_by_min_score"].values()) == tuned["accuracy_by_min_score"][str(tuned["min_score"])]
    summary = json.loads((run.path / "summary.json").read_text())
    assert "tune_nscl" in summary["seconds"] and "nscl" in summary["accuracy"]
    preds = read_predictions(run.predictions("nscl", "mid"))
    again = registry.get("nscl").predict(run.model_dir("nscl"), suite, "mid", "test",
                                         inputs=run.inputs("mid", ModelSpec("nscl")), min_score=tuned["min_score"])
    assert [p.prediction for p in preds] == [p.prediction for p in again]


def test_nsvqa_chooses_its_cuts_on_the_val_parses(suite, trained):
    """NS-VQA's existence cuts are hyper-parameters: the run chooses them on the training variant's
    val parses (never on test) and its test predictions are the deterministic executor's at them."""
    from executors import load_ontology
    from nsvqa.evaluation import accuracy
    from nsvqa.models import TUNED, ModelSpec
    from orchestration.models import get
    from nsvqa.models.pipeline import MIN_EXIST_CANDIDATES, MIN_PART_CANDIDATES, make_reasoner, predict

    run = VariantRun(trained, "mid")
    tuned = json.loads((run.model_dir("nsvqa") / TUNED).read_text())
    assert tuned["key"]["split"] == "val" and tuned["key"]["variant"] == "mid"
    assert tuned["min_exist"] in MIN_EXIST_CANDIDATES and tuned["min_part"] in MIN_PART_CANDIDATES
    assert len(tuned["accuracy"]) == len(MIN_EXIST_CANDIDATES) * len(MIN_PART_CANDIDATES)
    assert tuned["accuracy"][f"{tuned['min_exist']},{tuned['min_part']}"] == max(tuned["accuracy"].values())
    model = get("nsvqa")
    spec = ModelSpec("nsvqa")
    onto, metas, programs, scenes = model._read_inputs(suite, "mid", "test", spec, run.inputs("mid", spec))
    at_cuts = predict(make_reasoner("nsvqa", onto, min_exist=tuned["min_exist"], min_part=tuned["min_part"]),
                      metas, programs, scenes)
    written = read_predictions(run.predictions("nsvqa", "mid"))
    assert [p.prediction for p in written] == [p.prediction for p in at_cuts]
    # the val accuracy it was chosen by is the val accuracy of those cuts
    vspec = run.inputs("mid", spec, "val")
    onto, metas, programs, scenes = model._read_inputs(suite, "mid", "val", spec, vspec)
    val = accuracy(predict(make_reasoner("nsvqa", onto, min_exist=tuned["min_exist"], min_part=tuned["min_part"]),
                           metas, programs, scenes)).accuracy
    assert val == pytest.approx(max(tuned["accuracy"].values()))


def test_a_later_call_never_overwrites_the_seconds_a_finished_step_took(tmp_path):
    from nsvqa.artifacts.summary import SummaryFormatError, merged_summary

    base = {"variant": "mid", "seed": 0, "profile": "mini", "split": "test", "tests": ["mid"], "models": ["nsvqa"]}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({**base, "accuracy": {"nsvqa": {"mid": {"accuracy": 0.5}}},
                                "seconds": {"scene_parser": 1500.0, "test_mid": 30.0}}))
    # the second call finds the scene parser finished (0.2 s) and trains a new model
    out = merged_summary(path, {**base, "models": ["lstm"], "accuracy": {"lstm": {"mid": {"accuracy": 0.4}}},
                                "seconds": {"scene_parser": 0.2, "model_lstm": 40.0, "test_mid": 2.0}})
    assert out["seconds"] == {"scene_parser": 1500.2, "test_mid": 32.0, "model_lstm": 40.0}
    assert out["models"] == ["nsvqa", "lstm"] and set(out["accuracy"]) == {"nsvqa", "lstm"}
    # a summary it cannot read is refused, naming the file, and left as it was
    path.write_text('{"variant": "mid", "accu')
    with pytest.raises(SummaryFormatError, match=r"summary.json: not readable JSON"):
        merged_summary(path, {**base, "accuracy": {}, "seconds": {}})
    assert path.read_text() == '{"variant": "mid", "accu'


def test_a_shipped_set_packs_verifies_parses_and_answers(suite, trained, tmp_path, monkeypatch, load_script):
    """pretrained:<name>: a run's parsers packed without training state in float16, checked by
    sha256 (a corrupted copy is refused naming the file), parsing an image, and a variant run that
    uses them instead of training."""
    from nsvqa.pretrained import PretrainedError, pack_pretrained, read_manifest, resolve_checkpoint
    from nsvqa.training.checkpoint import load_checkpoint
    from nsvqa.training.loading import load_question_parser, load_scene_parser, parse_split

    monkeypatch.setenv("NSVQA_PRETRAINED_DIR", str(tmp_path / "pretrained"))
    run = VariantRun(trained, "mid")
    folder = pack_pretrained(run.path, "tiny-mid", {"profile": "tiny"})
    assert read_manifest("tiny-mid")["profile"] == "tiny"
    ck = load_checkpoint(folder / "scene_parser" / "detector.pt", kind="detector")  # its shipped form, read
    assert not (folder / "scene_parser" / "detector.pt").exists() and ck["train_state"] == {}
    assert {v.dtype for v in ck["state_dict"].values() if v.is_floating_point()} == {torch.float16}
    scene_dir = resolve_checkpoint("pretrained:tiny-mid", "scene_parser")
    assert scene_dir == folder / "scene_parser"
    parser = load_scene_parser(scene_dir)
    (idx, name, parsed), = list(parse_split(parser, suite / "mid", "test", limit=1, progress=False))
    (_, _, full), = list(parse_split(load_scene_parser(run.scene_dir), suite / "mid", "test", limit=1,
                                     progress=False))
    # float16 storage, float32 networks: the same image parses alike
    lik, ref = parsed.likelihoods, full.likelihoods
    assert idx == 0 and lik.exist.shape == ref.exist.shape
    assert np.allclose(lik.exist, ref.exist, atol=2e-2)
    assert all(np.allclose(lik.attributes[a], ref.attributes[a], atol=2e-2) for a in ref.attributes)
    q = load_question_parser(resolve_checkpoint("pretrained:tiny-mid", "question_parser"))
    assert len(q.parse(["How many things are there?"])) == 1
    # a run on the shipped parsers trains nothing and answers every test variant
    out = tmp_path / "runs"
    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "mid", "--out", str(out),
                                            "--tests", "easy,mid", "--models", "nsvqa,pnsvqa-exact",
                                            "--pretrained", "pretrained:tiny-mid", *TINY])
    assert rc == 0
    prun = VariantRun(out, "mid")
    assert not (prun.path / "scene_parser").exists() and not (prun.path / "question_parser").exists()
    assert len(read_predictions(prun.predictions("nsvqa", "easy"))) == \
        len(load_questions(suite / "easy" / "questions" / "test_questions.json"))
    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "mid", "--out", str(out),
                                            "--tests", "mid", "--models", "nscl",
                                            "--pretrained", "pretrained:tiny-mid", *TINY])
    assert rc == 2  # a trainable model the set does not hold would train
    # a corrupted copy is refused, the file named
    det = folder / "scene_parser" / "detector.safetensors"
    det.write_bytes(det.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(PretrainedError, match=r"detector\.safetensors: sha256 differs"):
        resolve_checkpoint("pretrained:tiny-mid", "scene_parser")
    with pytest.raises(PretrainedError, match=r"no pretrained set 'nope'.*shipped: .*tiny-mid"):
        resolve_checkpoint("pretrained:nope", "scene_parser")
    # a run folder serves as parsers too; a folder without them is refused, the missing one named
    from nsvqa.pretrained import parsers_dir

    assert parsers_dir(run.path) == run.path
    with pytest.raises(PretrainedError, match=r"baselines/scene_parser: missing"):
        parsers_dir(run.path / "baselines")


def test_a_shipped_set_holds_trained_models_that_a_run_loads_instead_of_training(suite, trained, tmp_path,
                                                                               monkeypatch, load_script):
    """A set packed with models: their checkpoints in float16 without training state, listed in the
    manifest, loaded by a run on the set (nothing trained) and answering as the run that trained them."""
    from nsvqa.pretrained import PretrainedError, add_models, pack_pretrained, read_manifest, shipped_models
    from nsvqa.training.checkpoint import load_checkpoint

    monkeypatch.setenv("NSVQA_PRETRAINED_DIR", str(tmp_path / "pretrained"))
    own = tmp_path / "own"
    assert load_script("train_variant").main(["--data", str(suite), "--variant", "mid", "--out", str(own),
                                              "--tests", "mid", "--models", "majority,lstm", *TINY]) == 0
    base = VariantRun(own, "mid")
    with pytest.raises(PretrainedError, match=r"film/baseline\.pt: no checkpoint of model 'film'"):
        pack_pretrained(VariantRun(trained, "mid").path, "bad", {}, models={"film": base.model_dir("film")})
    assert not (tmp_path / "pretrained" / "bad").exists()
    folder = pack_pretrained(VariantRun(trained, "mid").path, "tiny-mid", {},
                             models={"majority": base.model_dir("majority")})
    assert add_models("tiny-mid", {"lstm": base.model_dir("lstm")}, {"lstm": {"piece": "x"}}) == folder
    assert read_manifest("tiny-mid")["models"] == {"majority": {}, "lstm": {"piece": "x"}}  # sha256-checked
    assert shipped_models(folder) == ("majority", "lstm")
    ck = load_checkpoint(folder / "lstm" / "baseline.pt", kind="baseline_lstm")
    assert ck["train_state"] == {} and {v.dtype for v in ck["state_dict"].values()} == {torch.float16}
    out = tmp_path / "runs"
    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "mid", "--out", str(out),
                                            "--tests", "mid", "--models", "majority,lstm,nsvqa",
                                            "--pretrained", "pretrained:tiny-mid", *TINY])
    assert rc == 0
    prun = VariantRun(out, "mid")
    assert not (prun.path / "baselines" / "lstm").exists()  # loaded from the set, not trained
    for m in ("majority", "lstm"):
        shipped = [p.prediction for p in read_predictions(prun.predictions(m, "mid"))]
        trained_here = [p.prediction for p in read_predictions(base.predictions(m, "mid"))]
        assert len(shipped) == len(trained_here) > 0
        agree = sum(a == b for a, b in zip(shipped, trained_here)) / len(shipped)
        assert agree == 1.0 if m == "majority" else agree >= 0.9  # float16 weights, float32 network


def test_model_overrides_from_the_command_line():
    import argparse

    from nsvqa.config import ConfigError
    from orchestration.experiment_cli import spec_from_args
    from orchestration.training_args import add_training_args

    p = argparse.ArgumentParser()
    add_training_args(p)
    _, spec = spec_from_args(p.parse_args(["--model-set", "film.steps=7", "--model-set", "lstm.lr=0.5"]))
    assert spec.model_overrides == {"film": {"steps": 7}, "lstm": {"lr": 0.5}}
    with pytest.raises(ConfigError, match=r"--model-set 'steps=7': expected MODEL.NAME=VALUE"):
        spec_from_args(p.parse_args(["--model-set", "steps=7"]))
    with pytest.raises(ConfigError, match="model 'nsvqa' has no config"):
        spec_from_args(p.parse_args(["--model-set", "nsvqa.x=1"]))
    with pytest.raises(ConfigError, match=r"--model-set 'nope.x=1': unknown model 'nope'; valid: nsvqa, pnsvqa"):
        spec_from_args(p.parse_args(["--model-set", "nope.x=1"]))
    with pytest.raises(ConfigError, match=r"unknown config fields \['stpes'\]"):
        spec_from_args(p.parse_args(["--model-set", "film.stpes=7"]))


def test_pack_pretrained_measures_both_storages_on_val(suite, trained, tmp_path, load_script):
    run = VariantRun(trained, "mid")
    rc = load_script("pack_pretrained").main(["--run", str(run.path), "--name", "tiny", "--data", str(suite / "mid"),
                                              "--out", str(tmp_path)])
    assert rc == 0
    man = json.loads((tmp_path / "tiny" / "manifest.json").read_text())
    for storage in ("val_float32", "val_float16"):
        m = man[storage]
        assert m["scene_parser"]["images"] == len(list((suite / "mid" / "images" / "val").glob("*.png")))
        assert set(m["scene_parser"]["executors"]) >= {"nsvqa", "pnsvqa", "pnsvqa-exact"}
        assert 0.0 <= m["question_parser"]["exact"] <= 1.0
    assert man["scene_parser_config"]["profile"] == "tiny" and set(man["sha256"]) == {
        f"{c}.{ext}" for c in ("scene_parser/detector", "scene_parser/attributes", "question_parser/question_parser")
        for ext in ("safetensors", "json")} | {"nsvqa/tuned.json"}
    assert set(man["card"]) == {"intended_use", "training_data", "profile", "accuracy", "limits"}
    assert man["card"]["profile"] == "tiny"


def test_a_variant_with_mids_images_uses_mids_scene_parser_and_its_parses(suite, trained, load_script, monkeypatch,
                                                                          capsys):
    from nsvqa.fileio import sha256_folder
    from nsvqa.generation.suite import generate_suite

    generate_suite(suite, "redundancy", "tiny", variants=["rd-"], progress=False, echo=lambda s: None)
    for split in ("train", "test"):  # rd- asks other questions about mid's images
        assert sha256_folder(suite / "rd-" / "images" / split) == sha256_folder(suite / "mid" / "images" / split)
    assert (suite / "rd-" / "questions" / "test_questions.json").read_bytes() != \
        (suite / "mid" / "questions" / "test_questions.json").read_bytes()
    mid, rd = VariantRun(trained, "mid"), VariantRun(trained, "rd-", scene_variant="mid")
    assert rd.scene_dir == mid.scene_dir
    detector = (mid.scene_dir / "detector.pt").stat().st_mtime_ns

    import nsvqa.training.loading as loading

    def no_parsing(*a, **k):
        raise AssertionError("mid's images were parsed again")

    monkeypatch.setattr(loading, "parse_split", no_parsing)
    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "rd-", "--out", str(trained),
                                            "--tests", "rd-,mid", "--models", "nsvqa,pnsvqa",
                                            "--scene-parser-of", "mid", *TINY])
    assert rc == 0
    assert not (rd.path / "scene_parser").exists()  # no second scene parser
    assert (mid.scene_dir / "detector.pt").stat().st_mtime_ns == detector
    assert (rd.question_dir / "question_parser.pt").exists()  # its own questions: its own question parser
    for test, split in (("rd-", None), ("mid", None), ("rd-", "val")):
        mine = json.loads(rd.parsed(test, "likelihoods", split).read_text())
        theirs = json.loads(mid.parsed("mid", "likelihoods", split).read_text())
        assert mine["scenes"] == theirs["scenes"] and mine["provenance"] == theirs["provenance"]
        assert mine["data"] == str(suite / test) and mine["checkpoint"] == str(mid.scene_dir)
    assert json.loads((rd.path / "config.json").read_text())["config"]["scene_variant"] == "mid"
    assert len(read_predictions(rd.predictions("pnsvqa", "rd-"))) == len(
        load_questions(suite / "rd-" / "questions" / "test_questions.json"))
    # a variant whose images differ cannot borrow mid's scene parser
    rc = load_script("train_variant").main(["--data", str(suite), "--variant", "easy", "--out", str(trained),
                                            "--tests", "easy", "--models", "nsvqa", "--scene-parser-of", "mid", *TINY])
    assert rc != 0
    assert "cannot use the scene parser of 'mid': their scene settings differ" in capsys.readouterr().err


def test_transfer_to_an_official_release_reports_by_question_kind(suite, trained, tmp_path, load_script):
    from nsvqa.generation.official import export_release

    # an official-layout release of mid's test split, without masks: evaluation only, as the sample renders
    export_release(suite / "mid", tmp_path / "release", splits=["test"], log=None)
    scenes = json.loads((tmp_path / "release" / "superCLEVR_scenes.json").read_text())
    for s in scenes["scenes"]:
        s.pop("obj_mask_box")
    (tmp_path / "release" / "superCLEVR_scenes.json").write_text(json.dumps(scenes))
    first, last = scenes["info"]["nsvqa_splits"]["test"]
    out = tmp_path / "out"
    rc = load_script("evaluate_transfer").main(["--release", str(tmp_path / "release"), "--split", f"test={first}-{last}",
                                                "--parsers", str(VariantRun(trained, "mid").path), "--width", "64",
                                                "--height", "48", "--work", str(tmp_path / "work"), "--out", str(out)])
    assert rc == 0
    rep = json.loads((out / "report.json").read_text())
    qs = load_questions(suite / "mid" / "questions" / "test_questions.json")
    n_part = sum(any("part" in n["type"] for n in q["program"]) for q in qs)
    assert rep["questions"] == {"object": len(qs) - n_part, "part": n_part} and n_part > 0
    det = rep["detection"]
    assert "centre" in det["matched_by"] and det["objects_gt"] == sum(len(s["objects"]) for s in scenes["scenes"])
    assert 0 <= det["matched"] <= min(det["objects_gt"], det["detections"])
    assert det["recall"] == pytest.approx(det["matched"] / det["objects_gt"])
    for label, acc in rep["models"].items():
        assert acc["all"]["n"] == len(qs) and acc["object"]["n"] + acc["part"]["n"] == len(qs), label
        hits = sum(round(acc[k]["accuracy"] * acc[k]["n"]) for k in ("object", "part") if acc[k]["n"])
        assert hits == round(acc["all"]["accuracy"] * len(qs))
    assert set(rep["models"]) == {"nsvqa", "pnsvqa", "pnsvqa-exact", "nsvqa+gtprog", "pnsvqa+gtprog",
                                  "pnsvqa-exact+gtprog"}
    assert rep["question_parser"]["all"]["n"] == len(qs)
    assert "| object |" in (out / "report.md").read_text()
    # a split the release does not have is an error naming it
    rc = load_script("evaluate_transfer").main(["--release", str(tmp_path / "release"), "--split", "test=900-999",
                                                "--parsers", str(VariantRun(trained, "mid").path),
                                                "--work", str(tmp_path / "work2"), "--out", str(tmp_path / "o2")])
    assert rc == 2


def test_with_two_jobs_the_question_parser_trains_in_a_second_process(suite, tmp_path):
    """``jobs=2``: the question parser trains in a spawned process (its output in
    RUN/question_parser.log) beside the scene parser; both finish, each with its seconds, and the
    process's thread count is what it was before."""
    from orchestration.experiment import train_parsers
    from orchestration.train_spec import TrainSpec

    run = VariantRun(tmp_path, "mid")
    spec = TrainSpec(profile="tiny", scene_overrides={"det_iterations": 2, "attr_epochs": 1},
                     question_overrides={"steps": 20}, jobs=2, progress=False)
    before = torch.get_num_threads()
    seconds = train_parsers(suite / "mid", run, spec, scene=True, question=True)
    assert torch.get_num_threads() == before
    assert set(seconds) == {"scene_parser", "question_parser"}
    assert (run.question_dir / "question_parser.pt").is_file() and (run.scene_dir / "attributes.pt").is_file()
    assert "supervised step" in (run.path / "question_parser.log").read_text() + \
        (run.question_dir / "train.log").read_text()


def test_a_finished_run_resumes_from_its_moved_data_root_and_refuses_other_data(suite, trained, tmp_path,
                                                                                load_script, capsys):
    import shutil

    from nsvqa.fileio import sha256_file

    moved, runs = tmp_path / "moved", tmp_path / "runs"
    shutil.copytree(suite, moved)
    shutil.copytree(trained, runs)
    checkpoints = {p: sha256_file(p) for p in runs.rglob("*.pt")}
    argv = ["--variant", "mid", "--out", str(runs), "--factor", "visual", "--models", MODELS, *TINY]
    assert load_script("train_variant").main(["--data", str(moved), *argv]) == 0  # the same data, moved
    assert {p: sha256_file(p) for p in runs.rglob("*.pt")} == checkpoints  # nothing trained again
    assert json.loads((runs / "mid" / "config.json").read_text())["config"]["data"] == str(moved)
    other = tmp_path / "other"
    shutil.copytree(moved, other)
    manifest = json.loads((other / "hard" / "manifest.json").read_text())
    manifest["splits"]["test"]["sha256"]["questions/test_questions.json"] = "0" * 64  # other questions
    (other / "hard" / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert load_script("train_variant").main(["--data", str(other), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"field 'data' was '{moved}', now '{other}'; the data at {other} is not the data the run was made " \
           f"with at {moved}" in err
