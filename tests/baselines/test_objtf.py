"""The object-token transformer (objtf), the seeing FiLM (film-dense) and the extra questions they
train on: token layout, training through the one engine, prediction from a parse, and the
image-shuffle test on a symbolic fixture whose answers depend on the image alone."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

import baselines
from nsvqa.training.more_questions import extra_questions
from baselines.objtf import HEAD_FEATURES, ObjTFBaseline, scene_tokens, token_dim, token_layout
from executors.errors import FormatError
from executors import DeterministicExecutor, Program, SceneLikelihoods, SymbolicScene, load_ontology
from nsvqa.artifacts.predictions import read_predictions
from nsvqa.evaluation.image_dependence import image_dependence
from nsvqa.fileio import write_json_atomic
from nsvqa.generation.questions.synthetic import synthetic_scene
from orchestration import models as registry

ONTO = load_ontology("superclevr")


def test_objtf_is_registered_holistic_and_asks_only_for_the_scene_parser():
    m = registry.get("objtf")
    assert isinstance(m, ObjTFBaseline) and m.family == "holistic"
    assert m.needs().scene_parser and not m.needs().question_parser
    assert registry.get("film-dense").family == "holistic"
    cfg = m.config("x", "mini")
    assert cfg.word_dim % cfg.heads == 0 and cfg.extra_questions_per_image > 0
    with pytest.raises(ValueError, match="heads"):
        m.config("x", "tiny", heads=5)


def test_scene_tokens_keep_likely_objects_and_their_parts():
    rng = np.random.default_rng(0)
    rec = synthetic_scene(ONTO, rng, 3, max_parts=2)
    lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(rec, ONTO))
    lik.exist[:] = [0.9, 0.2, 0.6]
    boxes = np.array([[0, 0, 32, 24], [10, 10, 20, 20], [32, 24, 64, 48]], dtype=np.float32)
    t = scene_tokens(lik, boxes, (64, 48), max_tokens=12, min_exist=0.5, parts=True)
    lay = token_layout(ONTO)
    assert t.shape == (12, token_dim(ONTO))
    n_parts = int(sum((lik.part_exist[i] >= 0.5).sum() for i in (0, 2)))
    assert t[:, 0].sum() == 2 + n_parts  # object 1 (existence 0.2) and its parts are left out
    np.testing.assert_allclose(t[0, 2:7], [0.9, 0, 0, 0.5, 0.5])  # most likely first, box / image size
    np.testing.assert_allclose(t[1, 2:7], [0.6, 0.5, 0.5, 1, 1])
    colour = ONTO.values("color").index(rec["objects"][0]["color"])
    assert t[0, lay["color"]][colour] == 1.0 and t[0, lay["color"]].sum() == 1.0
    assert (t[2:2 + n_parts, 1] == 1).all() and (t[2:2 + n_parts, lay["partname"]].sum(1) == 1).all()
    assert not t[2 + n_parts:].any()  # padding
    assert HEAD_FEATURES == 7


def _symbolic_variant(root, n_train=160, n_val=8, n_test=40, seed=0, colours=("red", "blue")):
    """``ROOT/mid``: synthetic 3-object scenes (blank 64x48 images) with one exist question per
    colour of ``colours`` about every scene: the text is the same on every image, the answer is the
    image's."""
    from PIL import Image

    folder = root / "mid"
    ex = DeterministicExecutor(ONTO)
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        (folder / "images" / split).mkdir(parents=True)
        scenes, questions = [], []
        for i in range(n):
            rec = synthetic_scene(ONTO, rng, 3, image_index=i, split=split)
            rec["image_filename"] = f"s_{split}_{i:06d}.png"
            for o in rec["objects"]:
                x, y = (o["3d_coords"][0] + 3) / 6 * 56, (o["3d_coords"][1] + 3) / 6 * 40
                o["bbox"] = [x, y, 8, 8]
            Image.new("RGB", (64, 48)).save(folder / "images" / split / rec["image_filename"])
            scene = SymbolicScene.from_json(rec, ONTO)
            for c in colours:
                nodes = [{"type": "scene", "inputs": [], "value_inputs": []},
                         {"type": "filter_color", "inputs": [0], "value_inputs": [c]},
                         {"type": "exist", "inputs": [1], "value_inputs": []}]
                answer = ex.run(Program.from_json(nodes), scene, trace=False).answer
                questions.append({"question": f"Is there a {c} thing?", "image_index": i,
                                  "image_filename": rec["image_filename"], "program": nodes,
                                  "answer": answer, "question_index": len(questions)})
            scenes.append(rec)
        write_json_atomic(folder / "scenes" / f"{split}_scenes.json", {"info": {}, "scenes": scenes})
        write_json_atomic(folder / "questions" / f"{split}_questions.json", {"info": {}, "questions": questions})
    return folder


def test_objtf_learns_from_the_objects_and_depends_on_the_image(tmp_path):
    from orchestration.experiment import VariantRun, model_specs, write_model_predictions, write_shuffled_predictions

    torch.manual_seed(0)
    data = _symbolic_variant(tmp_path / "data")
    run = VariantRun(tmp_path / "runs", "mid")
    run.path.mkdir(parents=True)
    objtf, lstm = registry.get("objtf"), registry.get("lstm")
    objtf.train(objtf.config(str(data), "tiny", steps=300, eval_every=300, val_questions=0, part_tokens=False),
                run.model_dir("objtf"), progress=False)
    lstm.train(lstm.config(str(data), "tiny", steps=100, val_questions=0), run.model_dir("lstm"), progress=False)
    specs = model_specs(["objtf", "lstm"])
    # no parse in the run: objtf reads the ground-truth tokens (its standalone "oracle" inputs)
    own = write_model_predictions(run, data, "test", [specs[1]])
    own.update(_predict_oracle(run, data, objtf))
    shuffled = write_shuffled_predictions(run, data, "test", [specs[1]])
    shuffled.update(_predict_oracle(run, data, objtf, shuffled=True))
    dep = {m: image_dependence(read_predictions(own[m]), read_predictions(shuffled[m]), n_boot=500) for m in own}
    no_rate = np.mean([p.answer == "no" for p in read_predictions(own["lstm"])])
    assert dep["objtf"]["accuracy"] > no_rate + 0.1  # beyond the answer prior: it reads the tokens
    assert dep["objtf"]["dependence"] > 0.1 and dep["objtf"]["ci95"][0] > 0
    assert dep["lstm"]["dependence"] == 0.0


def _predict_oracle(run, data, model, shuffled=False):
    """objtf's predictions on ground-truth tokens (the run has no parse), own or shuffled."""
    import shutil
    import tempfile

    from nsvqa.artifacts.predictions import write_predictions
    from orchestration.experiment import shuffled_view

    tmp = tempfile.mkdtemp(dir=run.path)
    try:
        root, variant = data.parent, data.name
        if shuffled:
            view, _ = shuffled_view(data, "test", tmp)
            root = view.parent
        path = (run.shuffled_predictions if shuffled else run.predictions)("objtf", "mid")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_predictions(path, model.predict(run.model_dir("objtf"), root, variant, "test"))
        return {"objtf": path}
    finally:
        shutil.rmtree(tmp)


def test_objtf_predicts_from_a_parse(tmp_path):
    from nsvqa.artifacts.likelihoods import Detection, LikelihoodsHeader, ParsedSceneRecord, write_likelihoods
    from nsvqa.artifacts.scenes import read_scenes, scenes_path
    from nsvqa.models import PredictInputs

    data = _symbolic_variant(tmp_path / "data", n_train=6, n_val=2, n_test=4)
    m = registry.get("objtf")
    m.train(m.config(str(data), "tiny", steps=5, val_questions=4), tmp_path / "run", progress=False)
    records = []
    for s in read_scenes(scenes_path(data, "test")):
        lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(s.record, ONTO))
        records.append(ParsedSceneRecord(s.image_index, s.image_filename, lik,
                                         tuple(Detection(tuple(map(float, b)), 0.9, 1) for b in s.boxes())))
    parse = tmp_path / "likelihoods.json"
    write_likelihoods(parse, LikelihoodsHeader(split="test", detector_classes={"1": "object"}), records)
    got = m.predict(tmp_path / "run", data.parent, "mid", "test", inputs=PredictInputs(likelihoods=parse))
    truth = m.predict(tmp_path / "run", data.parent, "mid", "test")
    assert len(got) == len(truth) == 4 * 2
    # a parse with the true distributions and boxes gives the ground-truth tokens but existence 0.9
    assert [p.question_index for p in got] == [p.question_index for p in truth]
    json.dumps([p.to_json() for p in got])
    records[0] = ParsedSceneRecord(0, "elsewhere.png", records[0].likelihoods, records[0].detections)
    write_likelihoods(parse, LikelihoodsHeader(split="test", detector_classes={"1": "object"}), records)
    with pytest.raises(Exception, match="no parse of image 's_test_000000.png'"):
        m.predict(tmp_path / "run", data.parent, "mid", "test", inputs=PredictInputs(likelihoods=parse))


def _truth_parse(data, split, path, exist=0.9):
    """A likelihoods.json of ``split`` with the ground-truth distributions and boxes, every object
    detected with existence ``exist``."""
    from nsvqa.artifacts.likelihoods import Detection, LikelihoodsHeader, ParsedSceneRecord, write_likelihoods
    from nsvqa.artifacts.scenes import read_scenes, scenes_path

    records = []
    for s in read_scenes(scenes_path(data, split)):
        lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(s.record, ONTO))
        lik = dataclasses.replace(lik, exist=np.full(len(lik.exist), exist))
        records.append(ParsedSceneRecord(s.image_index, s.image_filename, lik,
                                         tuple(Detection(tuple(map(float, b)), exist, 1) for b in s.boxes())))
    write_likelihoods(path, LikelihoodsHeader(split=split, detector_classes={"1": "object"}), records)
    return records


def test_objtf_trains_on_the_runs_parses_of_the_training_splits(tmp_path):
    data = _symbolic_variant(tmp_path / "data", n_train=6, n_val=2, n_test=2)
    m = registry.get("objtf")
    assert m.needs().train_parses and m.needs().scene_parser
    cfg = m.config(str(data), "tiny", steps=2, val_questions=4, train_tokens="parsed")
    with pytest.raises(ValueError, match="train_tokens='parsed' needs parses"):
        m.train(cfg, tmp_path / "run0", progress=False)
    parses = tmp_path / "parses"
    parses.mkdir()
    for split in ("train", "val"):
        _truth_parse(data, split, parses / f"{split}_likelihoods.json", exist=0.75)
    cfg = m.config(str(data), "tiny", steps=2, val_questions=4, train_tokens="parsed", parses=str(parses))
    names = [f"s_train_{i:06d}.png" for i in range(6)]
    tokens, rows = m.image_inputs(data, "train", names, cfg)
    truth, _ = m.image_inputs(data, "train", names, m.config(str(data), "tiny"))
    objects = (tokens[..., 0] > 0) & (tokens[..., 1] == 0)  # valid, not a part
    assert objects.sum() == 6 * 3 and torch.allclose(tokens[..., 2][objects], torch.tensor(0.75))  # the parse's
    assert torch.allclose(truth[..., 2][(truth[..., 0] > 0) & (truth[..., 1] == 0)], torch.tensor(1.0))  # the scenes'
    m.train(cfg, tmp_path / "run", progress=False)  # train and val tokens from the parses
    (parses / "val_likelihoods.json").unlink()
    with pytest.raises(FormatError, match="val_likelihoods.json"):
        m.train(cfg, tmp_path / "run1", progress=False)
    with pytest.raises(ValueError, match="train_tokens must be one of truth, parsed"):
        m.config(str(data), "tiny", train_tokens="both")


def test_extra_questions_are_asked_of_the_same_scenes_and_reused(tmp_path):
    data = _symbolic_variant(tmp_path / "data", n_train=3, n_val=1, n_test=1)
    out = tmp_path / "extra.json"
    qs = extra_questions(data, "train", 6, out, seed=1, ontology=ONTO)
    assert 0 < len(qs) <= 18
    assert {q.image_filename for q in qs} <= {f"s_train_{i:06d}.png" for i in range(3)}
    assert all(q.program_types is not None and q.answer is not None for q in qs)
    stamp = out.stat().st_mtime_ns
    assert [q.question for q in extra_questions(data, "train", 6, out, seed=1, ontology=ONTO)] == \
        [q.question for q in qs] and out.stat().st_mtime_ns == stamp  # reused, not rewritten
    assert [q.question for q in extra_questions(data, "train", 6, out, seed=2)] != [q.question for q in qs]


def test_extra_questions_resume_where_they_stopped_with_the_same_bytes(tmp_path, monkeypatch):
    import nsvqa.training.more_questions as mq

    data = _symbolic_variant(tmp_path / "data", n_train=3, n_val=1, n_test=1)
    whole = tmp_path / "whole.json"
    extra_questions(data, "train", 6, whole, seed=1, chunk=1)
    assert not (tmp_path / "whole.json.partial").exists()  # swept once the file is written
    real, calls = mq.more_questions, []

    def stop_at_the_second_chunk(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    out = tmp_path / "stopped.json"
    monkeypatch.setattr(mq, "more_questions", stop_at_the_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        extra_questions(data, "train", 6, out, seed=1, chunk=1)
    assert not out.exists() and (tmp_path / "stopped.json.partial").is_file()
    monkeypatch.setattr(mq, "more_questions", real)
    extra_questions(data, "train", 6, out, seed=1, chunk=1)
    assert out.read_bytes() == whole.read_bytes() and not (tmp_path / "stopped.json.partial").exists()


def test_film_dense_trains_on_more_questions(root, tmp_path):
    m = registry.get("film-dense")
    cfg = m.config(str(root / "mid"), "tiny", steps=4, val_questions=4)
    assert cfg.extra_questions_per_image == 5
    m.train(cfg, tmp_path / "run", progress=False)
    log = (tmp_path / "run" / "train.log").read_text()
    n_file = len(json.loads((root / "mid" / "questions" / "train_questions.json").read_text())["questions"])
    n_extra = len(json.loads((tmp_path / "run" / "extra_questions.json").read_text())["questions"])
    assert n_extra > 0 and f"data: {n_file + n_extra} train questions" in log
    assert len(m.predict(tmp_path / "run", root, "mid", "test")) == 40


def test_a_family_outside_the_list_is_refused_by_the_registry(monkeypatch):
    from nsvqa.models import Model, check_model
    from orchestration import models

    class Odd(Model):
        family = "semi-modular"

        def predict(self, *a, **k):
            return []

    with pytest.raises(ValueError, match="family 'semi-modular'; valid: modular, holistic, question-only"):
        check_model("odd-family", Odd)
    monkeypatch.setitem(baselines.MODELS, "odd-family", Odd)  # a table line naming it: the registry refuses
    with pytest.raises(ValueError, match="model 'odd-family': family 'semi-modular'"):
        models.names()


def test_objmac_learns_from_the_objects_and_survives_a_scene_without_objects(tmp_path):
    from baselines.objtf import ObjMACBaseline, ObjTFNet

    m = registry.get("objmac")
    assert isinstance(m, ObjMACBaseline) and m.family == "holistic" and m.needs().train_parses
    assert m.config("x", "mini").reasoner == "mac" and registry.get("objtf").config("x", "mini").reasoner == "transformer"
    with pytest.raises(ValueError, match="reasoner must be one of transformer, mac"):
        m.config("x", "tiny", reasoner="lstm")
    torch.manual_seed(0)
    net = ObjTFNet(12, 3, 10, torch.tensor([-1, -1, -1]), dim=16, heads=2, layers=1, ff=16, mlp_hidden=16,
                   dropout=0.0, reasoner="mac", hops=2)
    words = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    tokens = torch.zeros(2, 4, 10)
    tokens[0, :2, 0] = 1.0  # the second scene has no object at all
    tokens[0, :2, 7:] = torch.rand(2, 3)
    out = net(words, torch.tensor([3, 2]), tokens)
    assert out.shape == (2, 3) and torch.isfinite(out).all()
    out.sum().backward()
    assert net.mac.control_att.weight.grad.abs().sum() > 0 and net.tokens[0].weight.grad.abs().sum() > 0

    data = _symbolic_variant(tmp_path / "data")
    m.train(m.config(str(data), "tiny", steps=300, eval_every=300, val_questions=0, part_tokens=False),
            tmp_path / "run", progress=False)
    preds = m.predict(tmp_path / "run", data.parent, "mid", "test")
    acc = np.mean([p.prediction == p.answer for p in preds])
    no_rate = np.mean([p.answer == "no" for p in preds])
    assert acc > max(no_rate, 1 - no_rate) + 0.1  # beyond the answer prior: it reads the tokens
