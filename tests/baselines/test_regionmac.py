"""regionmac-trace: objmac-trace's reasoner over a box-supervised detector's region features
(baselines/regionmac.py). Its registration, its tokens (boxes of a parse or of the scenes, the
detector's FPN maps cached in the house format), training and prediction through the one model
interface with a checkpoint that loads with ``weights_only=True``, and the image-shuffle test on a
fixture where the image alone decides the answer: positive dependence for it, zero for the LSTM."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from baselines.objtf import HEAD_FEATURES
from baselines.regionmac import (BACKBONE, RegionMACNet, RegionMACTraceBaseline, load_detector, region_tokens,
                                 split_maps)
from executors import DeterministicExecutor, Program, SceneLikelihoods, SymbolicScene, load_ontology
from executors.errors import FormatError
from nsvqa.artifacts.likelihoods import Detection, LikelihoodsHeader, ParsedSceneRecord, write_likelihoods
from nsvqa.artifacts.predictions import read_predictions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.evaluation.image_dependence import image_dependence
from nsvqa.fileio import sha256_file, write_json_atomic
from nsvqa.generation.questions.synthetic import synthetic_scene
from nsvqa.training.checkpoint import load_checkpoint, save_checkpoint
from nsvqa.training.scene_config import SceneParserConfig
import parsers.scene.detector
from orchestration import models as registry

ONTO = load_ontology("superclevr")
RGB = {"red": (200, 30, 30), "blue": (30, 60, 220), "green": (30, 150, 30), "yellow": (220, 210, 40)}
W, H, SIDE = 64, 48, 12


def _variant(root, n_train=120, n_val=8, n_test=40, seed=0, asked=("red", "blue")):
    """``ROOT/mid``: 64x48 images of three 12-px squares (one per third of the image, colours among
    :data:`RGB`) on gray, their scenes (boxes = the squares) and one exist question per colour of
    ``asked`` about every image: the text is the same on every image, the answer the image's."""
    from PIL import Image, ImageDraw

    folder = root / "mid"
    ex = DeterministicExecutor(ONTO)
    rng = np.random.default_rng(seed)
    colours = list(RGB)
    for split, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        (folder / "images" / split).mkdir(parents=True)
        scenes, questions = [], []
        for i in range(n):
            rec = synthetic_scene(ONTO, rng, 3, image_index=i, split=split, max_parts=0)
            rec["image_filename"] = f"s_{split}_{i:06d}.png"
            img = Image.new("RGB", (W, H), (110, 110, 110))
            draw = ImageDraw.Draw(img)
            for k, o in enumerate(rec["objects"]):
                o["color"] = colours[int(rng.integers(len(colours)))]
                x, y = 2 + 21 * k + int(rng.integers(0, 7)), int(rng.integers(2, H - SIDE - 2))
                o["bbox"] = [x, y, SIDE, SIDE]
                draw.rectangle([x, y, x + SIDE - 1, y + SIDE - 1], fill=RGB[o["color"]])
            img.save(folder / "images" / split / rec["image_filename"])
            scene = SymbolicScene.from_json(rec, ONTO)
            for c in asked:
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


def _detector(path, seed=0):
    """An untrained class-agnostic detector.pt of the study's kind (the Lite0 FPN of 64 channels,
    stride 8 first; random weights, ``weights=None``) for 64x48 images."""
    torch.manual_seed(seed)
    cfg = SceneParserConfig.from_profile("x", "tiny", mode="agnostic", det_backbone="lite0", det_min_stride=8)
    net = parsers.scene.detector.from_config(cfg, 2, H, W, pretrained=False)
    vocab = {"classes": {"1": "object"}, "part_class_ids": [], "num_classes": 2, "image_size": [H, W],
             "mode": "agnostic", "shape_ids": {}, "part_ids": {}}
    save_checkpoint(path, kind="detector", config=dataclasses.asdict(cfg), state_dict=net.state_dict(),
                    vocabularies=vocab)
    return path


def _truth_parse(data, split, path, detector, score=0.9):
    """A likelihoods.json of ``split`` whose detections are the scenes' boxes at ``score`` (and whose
    attribute distributions are the truth's: regionmac-trace must not read them), naming ``detector``."""
    records = []
    for s in read_scenes(scenes_path(data, split)):
        lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(s.record, ONTO))
        lik = dataclasses.replace(lik, exist=np.full(len(lik.exist), score))
        records.append(ParsedSceneRecord(s.image_index, s.image_filename, lik,
                                         tuple(Detection(tuple(map(float, b)), score, 1) for b in s.boxes())))
    write_likelihoods(path, LikelihoodsHeader(split=split, detector=str(detector), detector_classes={"1": "object"}),
                      records)


def test_registered_holistic_needing_the_scene_parsers_parses_and_checked():
    m = registry.get("regionmac-trace")
    assert isinstance(m, RegionMACTraceBaseline) and m.family == "holistic" and m.uses_images
    need = m.needs()
    assert need.scene_parser and need.train_parses and not need.question_parser
    cfg = m.config("x", "mini")
    assert (cfg.reasoner, cfg.hops, cfg.trace_weight, cfg.part_tokens, cfg.tie_tokens) == ("mac", 6, 1.0, False, False)
    assert cfg.train_tokens == "parsed" and cfg.fpn_channels == 64
    with pytest.raises(ValueError, match="tie_tokens must be false"):
        m.config("x", "tiny", tie_tokens=True)
    with pytest.raises(ValueError, match="reasoner must be 'mac'"):
        m.config("x", "tiny", reasoner="transformer", trace_weight=0.0)


def test_tokens_pool_the_detectors_maps_at_the_boxes_and_cache_them(tmp_path):
    data = _variant(tmp_path / "data", n_train=4, n_val=2, n_test=2)
    det_path = _detector(tmp_path / "detector.pt")
    det = load_detector(det_path)
    maps, rows, sized = split_maps(det, sha256_file(det_path), data, "train")
    assert sorted(maps) == [8, 16, 32] and maps[8].shape == (4, 64, 8, 8) and maps[8].dtype == torch.float16
    assert sized == (H, W) and rows == {f"s_train_{i:06d}.png": i for i in range(4)}
    cached = list((data / "features").glob(f"train_{BACKBONE}_{H}x{W}_*.pt"))
    assert len(cached) == 1
    stamp = cached[0].stat().st_mtime_ns
    again, _, _ = split_maps(det, sha256_file(det_path), data, "train")  # read, not rebuilt
    assert cached[0].stat().st_mtime_ns == stamp and torch.equal(again[8], maps[8])
    boxes = [np.array([[2, 2, 14, 14], [30, 20, 42, 32], [0, 0, 5, 5]], dtype=np.float32), np.zeros((0, 4))]
    scores = [np.array([0.6, 0.9, 0.3], dtype=np.float32), np.zeros(0)]
    t = region_tokens(maps, [0, 1], boxes, scores, (W, H), sized, roi_size=2, max_tokens=4, min_score=0.5)
    assert t.shape == (2, 4, HEAD_FEATURES + 64 * 2 * 2)
    assert t[0, :, 0].tolist() == [1, 1, 0, 0] and not t[1].any()  # score 0.3 left out; no detection, no token
    np.testing.assert_allclose(t[0, 0, 2:7], [0.9, 30 / W, 20 / H, 42 / W, 32 / H], rtol=1e-6)  # highest first
    region = t[0, :2, HEAD_FEATURES:]
    assert not torch.allclose(region[0], region[1]) and torch.isfinite(region).all()


def test_network_normalises_valid_regions_only():
    torch.manual_seed(0)
    net = RegionMACNet(10, 5, HEAD_FEATURES + 8, torch.full((5,), -1), dim=16, heads=2, layers=1, ff=16, mlp_hidden=16,
                       dropout=0.0, hops=2)
    words, lengths = torch.tensor([[1, 2, 3]]), torch.tensor([3])
    tokens = torch.zeros(1, 4, HEAD_FEATURES + 8)
    tokens[0, 0, 0], tokens[0, 0, HEAD_FEATURES:] = 1.0, torch.randn(8)
    logits, reads = net(words, lengths, tokens, reads=True)  # training, one region: the running statistics
    assert logits.shape == (1, 5) and reads.shape == (1, 2, 5) and torch.isfinite(logits).all()
    net.eval()
    padded = tokens.clone()
    padded[0, 1:, HEAD_FEATURES:] = 1e3  # padding rows (valid 0) with garbage: not read
    torch.testing.assert_close(net(words, lengths, padded), net(words, lengths, tokens))


def test_trains_predicts_and_round_trips_its_checkpoint(tmp_path):
    from nsvqa.models import PredictInputs

    data = _variant(tmp_path / "data", n_train=8, n_val=4, n_test=4)
    det_path = _detector(tmp_path / "detector.pt")
    m = registry.get("regionmac-trace")
    with pytest.raises(ValueError, match="no detector"):
        m.train(m.config(str(data), "tiny", steps=2), tmp_path / "nodet", progress=False)
    parses = tmp_path / "parses"
    parses.mkdir()
    for split in ("train", "val", "test"):
        _truth_parse(data, split, parses / f"{split}_likelihoods.json", det_path)
    cfg = m.config(str(data), "tiny", steps=6, eval_every=3, val_questions=8, train_tokens="parsed", parses=str(parses))
    run = m.train(cfg, tmp_path / "run", progress=False)
    log = (run / "train.log").read_text()
    assert "trace targets: 16 of 16 questions" in log and "val accuracy" in log
    ck = load_checkpoint(run / "baseline.pt", kind="baseline_regionmac-trace")  # torch.load(weights_only=True)
    assert ck["config"]["model"] == "regionmac-trace" and ck["config"]["detector"] == ""
    got = m.predict(run, data.parent, "mid", "test", inputs=PredictInputs(likelihoods=parses / "test_likelihoods.json"))
    assert len(got) == 8 and {p.prediction for p in got} <= {"yes", "no"}
    model, cfg2, vocab, answers = m.load(run)
    assert cfg2 == cfg
    for k, v in model.state_dict().items():
        torch.testing.assert_close(v, ck["state_dict"][k])
    again = m.predict(run, data.parent, "mid", "test", inputs=PredictInputs(likelihoods=parses / "test_likelihoods.json"))
    assert [p.to_json() for p in again] == [p.to_json() for p in got]
    json.dumps([p.to_json() for p in got])
    # the parse names the detector it came from; a missing image is named
    doc = json.loads((parses / "test_likelihoods.json").read_text())
    doc["scenes"][0]["image_filename"] = "elsewhere.png"
    (parses / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="no parse of image 's_test_000000.png'"):
        m.predict(run, data.parent, "mid", "test", inputs=PredictInputs(likelihoods=parses / "bad.json"))
    with pytest.raises(ValueError, match="fpn_channels is 32"):
        m.image_inputs(data, "test", ["s_test_000000.png"], m.config(str(data), "tiny", fpn_channels=32,
                                                                      detector=str(det_path)))


def test_depends_on_the_image_where_the_lstm_does_not(tmp_path):
    from orchestration.experiment import VariantRun, model_specs, write_model_predictions, write_shuffled_predictions

    torch.manual_seed(0)
    data = _variant(tmp_path / "data")
    det_path = _detector(tmp_path / "detector.pt")
    run = VariantRun(tmp_path / "runs", "mid")
    run.path.mkdir(parents=True)
    parses = run.parsed("mid", "likelihoods").parent
    parses.mkdir(parents=True)
    for split in ("train", "val"):
        _truth_parse(data, split, parses / f"{split}_likelihoods.json", det_path)
    _truth_parse(data, "test", run.parsed("mid", "likelihoods"), det_path)
    rm, lstm = registry.get("regionmac-trace"), registry.get("lstm")
    rm.train(rm.config(str(data), "tiny", steps=300, eval_every=300, val_questions=0, train_tokens="parsed",
                       parses=str(parses)), run.model_dir("regionmac-trace"), progress=False)
    lstm.train(lstm.config(str(data), "tiny", steps=100, val_questions=0), run.model_dir("lstm"), progress=False)
    specs = model_specs(["regionmac-trace", "lstm"])
    own = write_model_predictions(run, data, "test", specs)
    shuffled = write_shuffled_predictions(run, data, "test", specs)
    dep = {m: image_dependence(read_predictions(own[m]), read_predictions(shuffled[m]), n_boot=500) for m in own}
    print({m: (d["accuracy"], d["dependence"], d["ci95"]) for m, d in dep.items()})
    no_rate = np.mean([p.answer == "no" for p in read_predictions(own["lstm"])])
    assert dep["regionmac-trace"]["accuracy"] > max(no_rate, 1 - no_rate) + 0.1
    assert dep["regionmac-trace"]["dependence"] > 0.1 and dep["regionmac-trace"]["ci95"][0] > 0
    assert dep["lstm"]["dependence"] == 0.0
