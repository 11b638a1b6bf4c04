"""Baselines (random, majority, lstm, cnn_lstm): registry, learning, runs, predictions, CLI, experiment.

One tiny rendered dataset (64x48 images, 20 questions each; the ``root`` fixture of conftest.py):
``mid`` train 4 / val 2 / test 2 images and ``hard`` test 2 images; every test runs on one CPU thread.
FiLM has its own file (test_film.py).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import fields
from types import SimpleNamespace

import pytest
import torch

import baselines
from baselines import common
from baselines.classifier import network_from_config
from baselines.neural_config import QUESTION_MUST_MATCH
from nsvqa.config import Config
from nsvqa.models import ModelConfig, UnknownModel, check_model
from executors import load_ontology
from executors.io import load_questions
from nsvqa.training.checkpoint import load_checkpoint
from nsvqa.artifacts.predictions import QUESTION_TYPES, load_question_meta, read_predictions
from orchestration import models as registry
from parsers.question.vocab import Vocabulary, tokenize

ONTO = load_ontology("superclevr")
LEARNED = ("lstm", "cnn_lstm")


def _train(name, root, out, **over):
    model = registry.get(name)
    cfg = model.config(str(root / "mid"), "tiny", **over)
    model.train(cfg, out, progress=False)
    return model


# ---------------------------------------------------------------------------- registry and configs
def test_registry_names_lookup_and_profiles():
    assert set(baselines.MODELS) >= {"random", "majority", "lstm", "cnn_lstm", "film", "mdetr", "nscl"}
    # the one front door, orchestration.models: the pipeline's models first, then the baselines sorted
    with pytest.raises(UnknownModel, match=r"unknown model 'nope'; valid: nsvqa, pnsvqa, pnsvqa-exact, cnn_lstm, "
                                           r"film, film-dense, film-trace, lstm, "):
        registry.get("nope")
    for name in baselines.MODELS:
        model = registry.get(name)
        assert model.name == name and set(model.profiles) >= set(baselines.PROFILE_NAMES)
        assert model.config("ROOT/mid", "mini").model == name
    assert registry.names()[3:] == tuple(sorted(baselines.MODELS))  # the table is the one list
    with pytest.raises(ValueError, match="model 'a__b'"):
        check_model("a__b", type("X", (baselines.LSTMBaseline,), {}))
    lstm = registry.get("lstm")
    with pytest.raises(KeyError, match="unknown profile 'huge'"):
        lstm.config("ROOT/mid", "huge")
    with pytest.raises(TypeError, match=r"unknown config fields \['image_width'\]"):
        lstm.config("ROOT/mid", "tiny", image_width=32)
    with pytest.raises(ValueError, match="batch must be >= 1, got 0"):
        lstm.config("ROOT/mid", "tiny", batch=0)
    with pytest.raises(ValueError, match="backbone 'vgg'"):
        registry.get("cnn_lstm").config("ROOT/mid", "tiny", backbone="vgg")
    assert registry.get("cnn_lstm").config("ROOT/mid", "full").backbone == "lite0"  # the paper: ImageNet features


#: the fields of a question model's config.json, in their order (a saved config reads the same)
QUESTION_FIELDS = ["data", "profile", "model", "seed", "device", "ontology", "max_train_questions", "steps", "lr",
                   "weight_decay", "warmup", "eval_every", "val_questions", "grad_clip", "batch", "min_word_count",
                   "word_dim", "hidden", "layers", "mlp_hidden", "dropout"]


def test_a_model_config_is_its_defaults_at_most_four_classes_deep():
    """Each model's config declares its own fields with their values (no placeholder): it derives
    from ModelConfig, or from its family's config, and nothing deeper (issue 79)."""
    for name in baselines.MODELS:
        cls = registry.get(name).config_class
        if cls is None:
            continue
        assert cls.PROFILES["mini"] == {}
        defaults = cls(data="ROOT/mid")  # the identity field alone: every other field has a default
        assert defaults == cls.from_profile("ROOT/mid", "mini"), name
        assert not [f.name for f in fields(cls) if f.kw_only], name  # none left without a default
        chain = [k for k in cls.__mro__ if issubclass(k, Config)]
        assert len(chain) <= 4 and chain[-2:] == [ModelConfig, Config], (name, chain)


def test_the_question_models_keep_the_field_order_and_a_network_is_built_from_the_config_fields():
    lstm, cnn_lstm = (registry.get(n).config_class for n in ("lstm", "cnn_lstm"))
    assert [f.name for f in fields(lstm)] == QUESTION_FIELDS  # config.json unchanged
    assert [f.name for f in fields(cnn_lstm)] == QUESTION_FIELDS + ["image_width", "image_height", "backbone",
                                                                    "cnn_width", "image_dim", "cache_images",
                                                                    "feature_stride"]
    assert lstm.MUST_MATCH == QUESTION_MUST_MATCH
    assert cnn_lstm.MUST_MATCH == QUESTION_MUST_MATCH + ("image_width", "image_height", "backbone", "cnn_width",
                                                         "image_dim", "feature_stride")
    cfg = registry.get("cnn_lstm").config("ROOT/mid", "tiny")
    assert (cfg.batch, cfg.hidden, cfg.image_dim) == (16, 64, 64)
    net = registry.get("cnn_lstm").build_model(cfg, 7, 5)
    assert net.classifier[-1].out_features == 5 and net.question.embed.num_embeddings == 7

    class NeedsDepth(torch.nn.Module):
        def __init__(self, num_words, num_answers, *, hidden, depth, width=3):
            super().__init__()
            self.sizes = (num_words, num_answers, hidden, depth, width)

    with pytest.raises(TypeError, match="NeedsDepth: parameter 'depth' is no field of LSTMConfig"):
        network_from_config(NeedsDepth, registry.get("lstm").config("d"), 7, 5)
    assert network_from_config(NeedsDepth, SimpleNamespace(hidden=4, depth=2), 7, 5).sizes == (7, 5, 4, 2, 3)

def test_answer_vocabulary_covers_the_ontology_then_extra_training_answers():
    answers = common.answer_vocabulary(ONTO, ["yes", "zebra", "12"])
    assert answers[-2:] == ["12", "zebra"] and len(set(answers)) == len(answers)
    assert {"yes", "no", "0", "10", "red", "metal"} <= set(answers)


def test_image_encoders_give_the_feature_size():
    x = torch.rand(2, 3, 48, 64)
    assert common.ImageEncoder("small", 4, 16)(x).shape == (2, 16)
    assert common.ImageEncoder("resnet18", 0, 8)(x).shape == (2, 8)  # weights=None


# ---------------------------------------------------------------------------- learning
@pytest.mark.parametrize("name", LEARNED)
def test_one_step_lowers_the_loss_on_a_repeated_batch(root, name):
    torch.manual_seed(0)
    model = registry.get(name)
    cfg = model.config(str(root / "mid"), "tiny", dropout=0.0)
    records = common.read_qa(root / "mid", "train", ONTO, require_answer=True, require_image=True, limit=16)
    vocab = Vocabulary.build(tokenize(r.question) for r in records)
    answers = common.answer_vocabulary(ONTO, [r.answer for r in records])
    images = common.load_images(root / "mid", "train", [r.image_filename for r in records], 64, 48)
    data = common.EncodedQA.build(records, vocab, answers, images if model.uses_images else None)
    net = model.build_model(cfg, len(vocab), len(answers))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    words, lengths, imgs, ans = common.collate_qa([data[i] for i in range(16)])
    assert (imgs is None) != model.uses_images and words.shape[0] == 16

    def loss():
        return torch.nn.functional.cross_entropy(net(words, lengths, imgs), ans)

    before = loss()
    opt.zero_grad()
    before.backward()
    opt.step()
    assert float(loss().detach()) < float(before.detach())


@pytest.mark.parametrize("name,steps", [("lstm", 120), ("cnn_lstm", 120)])
def test_overfits_eight_questions(root, tmp_path, name, steps):
    records = common.read_qa(root / "mid", "train", ONTO, require_answer=True, require_image=False, limit=8)
    assert len({r.question for r in records}) == 8  # a question-only model can tell them apart
    torch.manual_seed(0)
    model = _train(name, root, tmp_path / name, max_train_questions=8, batch=8, steps=steps, lr=3e-3, warmup=1,
                   eval_every=steps, val_questions=0)
    preds = model.predict(tmp_path / name, root, "mid", "train")
    assert [p.correct for p in preds[:8]] == [True] * 8
    assert all(0.0 <= p.probability <= 1.0 for p in preds)


def test_run_directory_checkpoint_and_exact_resume(root, tmp_path, stop_after_save):
    kw = dict(steps=8, batch=8, eval_every=4, val_questions=4, dropout=0.2)
    straight = tmp_path / "straight"
    _train("cnn_lstm", root, straight, **kw)
    cfg = json.loads((straight / "config.json").read_text())["config"]
    assert cfg["model"] == "cnn_lstm" and cfg["profile"] == "tiny" and cfg["steps"] == 8
    assert any((straight / "tb").iterdir()) and "val accuracy=" in (straight / "train.log").read_text()
    assert (straight / "cache" / "train_64x48.pt").is_file()
    ck = load_checkpoint(straight / common.CHECKPOINT, kind="baseline_cnn_lstm")
    assert ck["train_state"]["step"] == 8 and ck["vocabularies"]["answer"][:2] == ["suv", "wagon"]
    assert 0.0 <= ck["extra"]["val_accuracy"] <= 1.0

    interrupted = tmp_path / "interrupted"
    with stop_after_save():
        _train("cnn_lstm", root, interrupted, **kw)
    model = registry.get("cnn_lstm")
    model.train(model.config(str(root / "mid"), "tiny", **kw), interrupted, resume=True, progress=False)
    a = load_checkpoint(straight / common.CHECKPOINT)["state_dict"]
    b = load_checkpoint(interrupted / common.CHECKPOINT)["state_dict"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert "resumed at step 4" in (interrupted / "train.log").read_text()
    with pytest.raises(ValueError, match="cannot resume, field 'seed' was 0, now 1"):
        model.train(model.config(str(root / "mid"), "tiny", **kw, seed=1), interrupted, resume=True, progress=False)


# ---------------------------------------------------------------------------- random / majority
def test_majority_predicts_the_per_type_mode(root, tmp_path):
    model = _train("majority", root, tmp_path / "maj")
    counts: dict[str, Counter] = {}
    for m in load_question_meta(root, "mid", "train"):
        counts.setdefault(m.question_type, Counter())[m.answer] += 1
    preds = model.predict(tmp_path / "maj", root, "hard", "test")
    assert len(preds) == len(load_questions(root / "hard" / "questions" / "test_questions.json"))
    for p in preds:
        c = counts.get(p.question_type) or sum(counts.values(), Counter())
        top = max(c.values())
        assert p.prediction == min(a for a, n in c.items() if n == top)
        assert p.probability == pytest.approx(top / sum(c.values()))


def test_random_is_seeded_and_within_the_types_answers(root, tmp_path):
    model = _train("random", root, tmp_path / "r0")
    seen: dict[str, set] = {}
    for m in load_question_meta(root, "mid", "train"):
        seen.setdefault(m.question_type, set()).add(m.answer)
    a = model.predict(tmp_path / "r0", root, "mid", "test")
    assert a == model.predict(tmp_path / "r0", root, "mid", "test")
    for p in a:
        options = seen.get(p.question_type) or set().union(*seen.values())
        assert p.prediction in options and p.probability == pytest.approx(1 / len(options))
    _train("random", root, tmp_path / "r1", seed=1)
    b = model.predict(tmp_path / "r1", root, "mid", "test")
    assert [p.prediction for p in a] != [p.prediction for p in b]
    assert {p.question_type for p in a} <= set(QUESTION_TYPES)


# ---------------------------------------------------------------------------- the command line
def test_script_trains_predicts_and_writes_named_files(root, tmp_path, load_script, capsys):
    tb = load_script("train_baseline")
    out = tmp_path / "lstm"
    assert tb.main(["--model", "lstm", "--data", str(root / "mid"), "--profile", "tiny", "--out", str(out),
                    "--set", "steps=3", "--threads", "1", "--no-progress", "--predict", str(root / "hard")]) == 0
    path = out / "predictions" / "lstm__train-mid__test-hard.jsonl"
    assert f"{path}: 40 questions, accuracy" in capsys.readouterr().out
    assert len(read_predictions(path)) == 40
    # prediction alone, on another variant and split
    assert tb.main(["--model", "lstm", "--data", str(root / "mid"), "--out", str(out), "--predict-only",
                    "--predict", str(root / "mid"), "--split", "val", "--no-progress"]) == 0
    assert len(read_predictions(out / "predictions" / "lstm__train-mid__test-mid.jsonl")) == 40
    assert load_checkpoint(out / "baseline.pt")["train_state"]["step"] == 3
    assert tb.main(["--model", "lstm", "--data", str(root / "hard"), "--out", str(out), "--predict-only",
                    "--predict", str(root / "hard"), "--no-progress"]) == 2
    assert f"field 'data': the run was trained on {root / 'mid'}, not on --data" in capsys.readouterr().err


def test_script_refuses_a_profile_it_does_not_list(root, tmp_path, load_script, capsys):
    with pytest.raises(SystemExit) as e:
        load_script("train_baseline").main(["--data", str(root / "mid"), "--out", str(tmp_path / "run"),
                                            "--model", "lstm", "--profile", "huge"])
    assert e.value.code == 2 and "invalid choice: 'huge' (choose from 'tiny', 'demo', 'mini', 'full')" in \
        capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    (["--model", "nope"], "unknown baseline 'nope'; valid: cnn_lstm, film, film-dense, film-trace, lstm, majority, mdetr, nscl, objmac, objmac-trace, objtf, random"),
    (["--model", "lstm", "--set", "image_width=3"], "unknown config fields ['image_width']"),
    (["--model", "lstm", "--set", "steps"], "--set: expected NAME=VALUE, got 'steps'"),
    (["--model", "majority", "--predict-only", "--predict", "DATA"], "baseline.pt: no checkpoint file"),
])
def test_script_bad_input_exits_2_naming_what(root, tmp_path, load_script, capsys, args, message):
    args = [str(root / "mid") if a == "DATA" else a for a in args]
    rc = load_script("train_baseline").main(["--data", str(root / "mid"), "--out", str(tmp_path / "run"),
                                              "--no-progress", *args])
    assert rc == 2 and message in capsys.readouterr().err


def test_script_names_a_missing_data_folder(tmp_path, load_script, capsys):
    rc = load_script("train_baseline").main(["--model", "lstm", "--data", str(tmp_path / "nope" / "mid"),
                                              "--out", str(tmp_path / "run"), "--profile", "tiny"])
    assert rc == 2 and f"--data {tmp_path / 'nope' / 'mid'}: no such directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    rc = load_script("train_baseline").main(["--model", "lstm", "--data", str(tmp_path / "empty"),
                                              "--out", str(tmp_path / "run"), "--profile", "tiny"])
    assert rc == 2 and "empty/questions/train_questions.json: no questions file" in capsys.readouterr().err


def test_bad_records_name_file_question_and_field(tmp_path):
    from executors.errors import FormatError

    folder = tmp_path / "v"
    (folder / "questions").mkdir(parents=True)
    path = folder / "questions" / "train_questions.json"
    good = {"question": "How many cars?", "answer": 2, "image_filename": "x.png"}
    for bad, message in ((good | {"answer": None}, "question 1: missing field 'answer'"),
                         ({k: v for k, v in good.items() if k != "image_filename"},
                          "question 1, field 'image_filename': expected a string, got NoneType")):
        path.write_text(json.dumps({"questions": [good, bad]}))
        with pytest.raises(FormatError, match=message):
            common.read_qa(folder, "train", ONTO, require_answer=True, require_image=True)
    with pytest.raises(FileNotFoundError, match=r"images/train/x.png: image file missing"):
        common.load_images(folder, "train", ["x.png"], 8, 6)
    path.write_text(json.dumps({"questions": [{"question": "How many cars?"}]}))
    (rec,) = common.read_qa(folder, "train", ONTO, require_answer=False, require_image=False)
    assert rec.answer is None and rec.image_filename is None


# ---------------------------------------------------------------------------- the experiment
def test_needs_and_models_know_the_baselines():
    from orchestration import experiment, models
    from nsvqa.models import Needs

    assert set(baselines.MODELS) < set(models.names()) and "nsvqa" in models.names()
    need = lambda labels: models.needs(experiment.model_specs(labels))  # noqa: E731
    assert need(["lstm", "random"]) == Needs()  # question-only: not even the images
    assert need(["lstm", "nsvqa+gtprog"]) == Needs(True, False, images=True)
    assert need(["cnn_lstm", "pnsvqa"]) == Needs(True, True, images=True)
    assert need(["cnn_lstm"]) == Needs(images=True)
    with pytest.raises(experiment.ExperimentError, match=r"unknown model\(s\) \['nope'\]; valid: nsvqa, .*cnn_lstm"):
        experiment.model_specs(["nope"])
    with pytest.raises(experiment.ExperimentError, match=r"'lstm' does not answer from ground-truth programs"):
        experiment.model_specs(["lstm+gtprog"])


def test_train_variant_trains_baselines_alone_and_evaluate_rd_reads_them(root, tmp_path, load_script):
    from orchestration.experiment import VariantRun, train_variant
    from orchestration.train_spec import TrainSpec

    models = ["random", "majority", "lstm", "cnn_lstm"]
    spec = TrainSpec(profile="tiny", progress=False,
                     model_overrides={"lstm": {"steps": 4}, "cnn_lstm": {"steps": 4}})
    runs = tmp_path / "runs"
    summary = train_variant(root, "mid", runs, models=models, spec=spec, tests=["mid", "hard"], echo=lambda s: None)
    run = VariantRun(runs, "mid")
    assert not run.scene_dir.exists() and not run.question_dir.exists() and not (run.path / "parsed").exists()
    assert set(summary["accuracy"]) == set(models) and set(summary["accuracy"]["lstm"]) == {"mid", "hard"}
    for test in ("mid", "hard"):
        questions = load_questions(root / test / "questions" / "test_questions.json")
        for m in models:
            preds = read_predictions(run.predictions(m, test))
            assert [p.question_index for p in preds] == list(range(len(questions)))
            assert [p.answer for p in preds] == [str(q["answer"]).lower() for q in questions]
            assert all(p.prediction is not None and not p.guessed for p in preds)
    assert load_checkpoint(run.model_dir("lstm") / "baseline.pt")["train_state"]["step"] == 4
    # a second call finds the baselines trained
    mtime = (run.model_dir("cnn_lstm") / "baseline.pt").stat().st_mtime_ns
    train_variant(root, "mid", runs, models=models, spec=spec, tests=["mid", "hard"], echo=lambda s: None)
    assert (run.model_dir("cnn_lstm") / "baseline.pt").stat().st_mtime_ns == mtime
    assert "nothing to do" in (run.model_dir("majority") / "train.log").read_text()

    rc = load_script("evaluate_rd").main(["--runs", str(runs), "--out", str(tmp_path / "rep"), "--allow-partial-rd",
                                          "--no-plots"])
    assert rc == 0
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    cells = {(c["model"], c["test"]) for c in rep["cells"] if c["train"] == "mid"}
    assert cells == {(m, t) for m in models for t in ("mid", "hard")}


def test_train_variant_script_accepts_baseline_names(root, tmp_path, load_script, capsys):
    tv = load_script("train_variant")
    assert tv.main(["--data", str(root), "--variant", "mid", "--out", str(tmp_path / "runs"), "--tests", "mid,hard",
                    "--models", "majority,random", "--profile", "tiny", "--no-progress"]) == 0
    assert "majority" in capsys.readouterr().out
    assert len(read_predictions(tmp_path / "runs" / "mid" / "predictions" / "random__train-mid__test-hard.jsonl")) == 40
