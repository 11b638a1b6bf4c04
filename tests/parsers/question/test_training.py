"""Training: overfitting 20 questions, exact resume, checkpoints, REINFORCE, bad input and losses."""
from __future__ import annotations

import json

import pytest
import torch

from executors.errors import FormatError
from nsvqa.fileio import sha256_file
from nsvqa.training.checkpoint import load_checkpoint, sidecar_path
from nsvqa.evaluation.question_parser import read_question_items
from nsvqa.training.loading import QUESTION_CHECKPOINT as CHECKPOINT, QUESTION_KIND as KIND
from nsvqa.training.loading import load_question_parser
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.training.question_parser import evaluate, train_question_parser
from nsvqa.training.sampling import BucketedBatches
from nsvqa.training import NonFiniteLoss
from parsers.question.seq2seq import Seq2Seq


def _cfg(data, **kw) -> QuestionParserConfig:
    return QuestionParserConfig.from_profile(data, "tiny", **kw)


@pytest.fixture(scope="module")
def overfit_run(tiny20, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "overfit"
    cfg = _cfg(tiny20, steps=200, batch=20, lr=1e-2, eval_every=100, val_questions=20, word_dim=32, hidden=48)
    train_question_parser(cfg, out, progress=False)
    return out


def test_tiny_model_overfits_20_questions(overfit_run, tiny20):
    parser = load_question_parser(overfit_run)
    items = read_question_items(tiny20 / "questions" / "train_questions.json", parser.ontology, require_program=True)
    assert len(items) == 20
    from executors.io import load_scenes

    scenes, _ = load_scenes(tiny20 / "scenes" / "train_scenes.json", parser.ontology)
    m = evaluate(parser, items, scenes)
    assert m["exact"] == 1.0 and m["valid"] == 1.0 and m["answer_accuracy"] == 1.0
    assert evaluate(parser, items, beam_size=3)["exact"] == 1.0


def test_run_directory_and_checkpoint(overfit_run):
    cfg = json.loads((overfit_run / "config.json").read_text())
    assert cfg["config"]["profile"] == "tiny" and cfg["config"]["steps"] == 200 and cfg["config"]["hidden"] == 48
    log = (overfit_run / "train.log").read_text()
    assert "20 train questions" in log and "supervised step 200 val (20 questions) exact=1.0000" in log
    assert any((overfit_run / "tb").iterdir())
    ck = load_checkpoint(overfit_run / CHECKPOINT, kind=KIND)
    assert ck["vocabularies"]["question"]["tokens"][:4] == ["<NULL>", "<START>", "<END>", "<UNK>"]
    assert ck["train_state"]["stage"] == "reinforce" and ck["extra"]["supervised_val"]["exact"] == 1.0
    # the checkpoint alone rebuilds the model
    model = Seq2Seq.from_config(ck["config"], len(ck["vocabularies"]["question"]["tokens"]),
                                len(ck["vocabularies"]["program"]["tokens"]))
    model.load_state_dict(ck["state_dict"])


def test_unknown_words_never_crash(overfit_run):
    parser = load_question_parser(overfit_run)
    questions = ["florb zzyx quux?", "", "???", "How many " + "blorp " * 80 + "?", "Is there a red car?"]
    words, lengths = parser.encode(questions)
    assert words[0, :3].tolist() == [3, 3, 3] and lengths[1] == 1
    parsed = parser.parse(questions, beam_size=2)
    assert len(parsed) == 5
    for p in parsed:
        assert (p.program is None) == (p.error is not None)
        if p.valid:
            p.program.validate(parser.ontology)


def test_resume_is_exact(qp_data, tmp_path):
    kw = dict(steps=8, batch=8, eval_every=4, val_questions=4, dropout=0.2)
    straight = tmp_path / "straight"
    train_question_parser(_cfg(qp_data, **kw), straight, progress=False)
    # interrupt an 8-step run right after its step-4 checkpoint, then resume it
    interrupted = tmp_path / "interrupted"

    class Stop(Exception):
        pass

    import nsvqa.training.question_parser as qt

    real = qt._Trainer.save
    calls = []

    def save_then_stop(self, state):
        real(self, state)
        calls.append(state["step"])
        raise Stop

    qt._Trainer.save = save_then_stop
    try:
        with pytest.raises(Stop):
            train_question_parser(_cfg(qp_data, **kw), interrupted, progress=False)
    finally:
        qt._Trainer.save = real
    assert calls == [4]
    train_question_parser(_cfg(qp_data, **kw), interrupted, resume=True, progress=False)
    a = load_checkpoint(straight / CHECKPOINT)["state_dict"]
    b = load_checkpoint(interrupted / CHECKPOINT)["state_dict"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert "resumed at step 4" in (interrupted / "train.log").read_text()
    with pytest.raises(ValueError, match="cannot resume, field 'seed' was 0, now 1"):
        train_question_parser(_cfg(qp_data, **(kw | {"seed": 1})), interrupted, resume=True, progress=False)


def test_batch_schedule_is_a_function_of_seed_and_step():
    import numpy as np

    lengths = np.array([5, 9, 3, 7, 1, 8, 2, 6, 4, 10, 11])
    a, b = BucketedBatches(lengths, 3, seed=7), BucketedBatches(lengths, 3, seed=7)
    seq = [a(s).tolist() for s in range(12)]
    assert [b(s).tolist() for s in (5, 0, 11, 3)] == [seq[5], seq[0], seq[11], seq[3]]
    assert a.steps_per_epoch == 4
    for e in range(3):  # every epoch covers every question once
        assert sorted(sum(seq[4 * e:4 * e + 4], [])) == list(range(11))
    assert seq[:4] != [BucketedBatches(lengths, 3, seed=8)(s).tolist() for s in range(4)]


def test_reinforce_stage(tiny20, overfit_run, tmp_path):
    import shutil

    out = tmp_path / "rl"
    shutil.copytree(overfit_run, out)
    cfg = json.loads((out / "config.json").read_text())["config"]
    cfg = QuestionParserConfig(**(cfg | {"reinforce": True, "reinforce_steps": 4, "reinforce_batch": 10,
                                         "eval_every": 2}))
    train_question_parser(cfg, out, resume=True, progress=False)
    ck = load_checkpoint(out / CHECKPOINT, kind=KIND)
    assert ck["train_state"]["stage"] == "reinforce" and ck["train_state"]["step"] == 4
    assert ck["train_state"]["baseline"] > 0.5  # the overfit parser mostly answers right
    log = (out / "train.log").read_text()
    assert "reinforce step 4 reward=" in log and "reinforce step 4 val" in log


def test_non_finite_loss_stops_training(qp_data, tmp_path, monkeypatch):
    monkeypatch.setattr(Seq2Seq, "loss", lambda self, *a: torch.tensor(float("nan"), requires_grad=True))
    with pytest.raises(NonFiniteLoss, match="non-finite loss at step 0: loss=nan"):
        train_question_parser(_cfg(qp_data, steps=3), tmp_path / "nan", progress=False)


def test_bad_questions_name_file_item_and_field(tmp_path):
    root = tmp_path / "bad"
    (root / "questions").mkdir(parents=True)
    qfile = root / "questions" / "train_questions.json"
    good = {"question": "How many things?", "image_index": 0,
            "program": [{"type": "scene", "inputs": [], "value_inputs": []},
                        {"type": "count", "inputs": [0], "value_inputs": []}]}
    qfile.write_text(json.dumps({"questions": [good, {"image_index": 0, "program": good["program"]}]}))
    with pytest.raises(FormatError, match=rf"{qfile}, question 1, field 'question': expected a string, got NoneType"):
        train_question_parser(_cfg(root), tmp_path / "r1", progress=False)
    bad_prog = dict(good, program=[{"type": "scene", "inputs": [], "value_inputs": []},
                                   {"type": "filter_color", "inputs": [0], "value_inputs": ["plaid"]},
                                   {"type": "count", "inputs": [1], "value_inputs": []}])
    qfile.write_text(json.dumps({"questions": [good, good, bad_prog]}))
    with pytest.raises(FormatError, match=r"question 2, field 'program': node 1 \(filter_color\): value 'plaid'"):
        train_question_parser(_cfg(root), tmp_path / "r2", progress=False)
    qfile.write_text(json.dumps({"questions": [{"question": "x?"}]}))
    with pytest.raises(FormatError, match=r"question 0: missing field 'program'"):
        train_question_parser(_cfg(root), tmp_path / "r3", progress=False)


def test_config_resolution():
    cfg = QuestionParserConfig.from_profile("d", "mini", steps=10, lr=None)
    assert cfg.steps == 10 and cfg.lr > 0 and cfg.hidden > 0 and cfg.layers == 2
    with pytest.raises(TypeError, match="unknown config fields \\['stpes'\\]"):
        QuestionParserConfig.from_profile("d", "mini", stpes=3)
    with pytest.raises(KeyError, match="unknown profile 'big'"):
        QuestionParserConfig.from_profile("d", "big")
    with pytest.raises(ValueError, match="batch must be >= 1, got 0"):
        QuestionParserConfig.from_profile("d", "tiny", batch=0)


def test_extra_questions_per_image_trains_on_more_questions_of_the_same_scenes(qp_data, tmp_path):
    """``extra_questions_per_image`` adds questions of the training scenes (counted in the log, kept in
    RUN/extra_questions.json, in the vocabularies); 0 is the train file alone; a config saved before
    the field existed loads and resumes as 0."""
    kw = dict(steps=2, batch=8, eval_every=2, val_questions=4)
    n_file = len(json.loads((qp_data / "questions" / "train_questions.json").read_text())["questions"])
    plain = tmp_path / "plain"
    train_question_parser(_cfg(qp_data, **kw), plain, progress=False)
    assert f"data: {n_file} train questions from" in (plain / "train.log").read_text()
    assert not (plain / "extra_questions.json").exists()
    more = tmp_path / "more"
    train_question_parser(_cfg(qp_data, extra_questions_per_image=5, **kw), more, progress=False)
    extra = json.loads((more / "extra_questions.json").read_text())
    n_extra = len(extra["questions"])
    assert 12 < n_extra <= 12 * 5 and extra["info"]["per_image"] == 5
    assert {q["image_index"] for q in extra["questions"]} == set(range(12))  # the training scenes
    assert f"data: {n_file + n_extra} train questions from" in (more / "train.log").read_text()
    assert f"({n_file} of the file, {n_extra} more of its scenes" in (more / "train.log").read_text()
    words = set(load_checkpoint(more / CHECKPOINT)["vocabularies"]["question"]["tokens"])
    assert {w.lower().strip("?.,;") for q in extra["questions"] for w in q["question"].split()} - {""} <= words | {
        w.lower() for w in words}
    with pytest.raises(ValueError, match="cannot resume, field 'extra_questions_per_image' was 5, now 0"):
        train_question_parser(_cfg(qp_data, **kw), more, resume=True, progress=False)
    with pytest.raises(ValueError, match="extra_questions_per_image must be >= 0, got -1"):
        _cfg(qp_data, extra_questions_per_image=-1)
    # a run saved before the field existed: its config.json and checkpoint lack it
    saved = json.loads((plain / "config.json").read_text())
    del saved["config"]["extra_questions_per_image"]
    (plain / "config.json").write_text(json.dumps(saved))
    ck = load_checkpoint(plain / CHECKPOINT)
    del ck["config"]["extra_questions_per_image"]
    torch.save(ck, plain / CHECKPOINT)
    sidecar_path(plain / CHECKPOINT).write_text(f"{sha256_file(plain / CHECKPOINT)}  {CHECKPOINT}\n")
    assert load_question_parser(plain) is not None
    stamp = (plain / CHECKPOINT).stat().st_mtime_ns
    train_question_parser(_cfg(qp_data, **kw), plain, resume=True, progress=False)  # finished: nothing to train
    assert (plain / CHECKPOINT).stat().st_mtime_ns == stamp
    assert QuestionParserConfig.from_dict(ck["config"]).extra_questions_per_image == 0
