"""NSCL baseline: the soft executor's semantics (against the question engine's answers), the
curriculum, learning, prediction from parses, the command line and the experiment's wiring.
Fixtures ``root`` (the tiny rendered dataset) and ``one_thread`` come from conftest.py.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch

from baselines import nscl
from baselines.nscl import training as nscl_training
from executors import load_ontology
from executors.errors import FormatError
from executors.io import normalize_answer
from executors.program import Program
from executors.scene import SceneLikelihoods, SymbolicScene
from nsvqa.training.checkpoint import load_checkpoint
from nsvqa.models import PredictInputs
from orchestration import models as registry

ONTO = load_ontology("superclevr")
CPU = torch.device("cpu")
BIG = 30.0  # a logit that makes a concept certain


def _one_hot_scene(record: dict) -> dict:
    """The executor's input for a ground-truth scene: every concept, relation and part certain."""
    scene = SymbolicScene.from_json(record, ONTO)
    n = len(scene)

    def one_hot(a, value):  # concept columns: the values a scene holds (21 shapes, no addi)
        row = torch.full((len(ONTO.scene_values(a)),), -BIG)
        row[ONTO.scene_values(a).index(value)] = BIG
        return row

    attrs = {a: torch.stack([one_hot(a, o[a]) for o in scene.objects]) for a in ONTO.attribute_names}
    rel = torch.full((n, n, len(ONTO.relations)), -BIG)
    for r, lists in scene.relation_lists().items():
        for i, js in enumerate(lists):
            for j in js:
                rel[i, j, ONTO.relations.index(r)] = BIG
    names = ONTO.part_names
    pe = torch.full((n, len(names)), -BIG)
    pattrs = {a: attrs[a][:, None, :].repeat(1, len(names), 1) for a in ("color", "material", "size", "texture")}
    for i, parts in enumerate(scene.parts):
        for name, pa in parts.items():
            pe[i, names.index(name)] = BIG
            for a, v in pa.items():
                pattrs[a][i, names.index(name)] = one_hot(a, v)
    return {"n": n, "attributes": attrs, "relations": rel, "part_exist": pe, "part_attributes": pattrs}


# ---------------------------------------------------------------------------- the executor
def test_soft_executor_answers_like_the_question_engine_on_certain_concepts(root):
    scenes = json.loads((root / "mid" / "scenes" / "train_scenes.json").read_text())["scenes"]
    questions = json.loads((root / "mid" / "questions" / "train_questions.json").read_text())["questions"]
    ex = nscl.SoftExecutor(ONTO, count_sigma=0.5)
    kinds, right = Counter(), 0
    for q in questions:
        program = Program.from_json(q["program"], ONTO)
        labels, probs = ex.run(program, program.validate(ONTO), _one_hot_scene(scenes[q["image_index"]]))
        assert abs(float(probs.sum()) - 1.0) < 1e-4
        got = labels[int(probs.argmax())]
        right += got == normalize_answer(q["answer"])
        kinds[program.nodes[-1].function] += 1
    assert right == len(questions), f"{right} / {len(questions)}"
    assert len(kinds) >= 5 and any(k.startswith("partquery") for k in kinds)  # the fixture covers parts


def test_soft_rules_on_a_hand_made_scene():
    ex = nscl.SoftExecutor(ONTO, count_sigma=0.5)
    colors = ONTO.values("color")
    attrs = {a: torch.full((3, len(ONTO.scene_values(a))), -BIG) for a in ONTO.attribute_names}
    for i, c in enumerate(("red", "red", "blue")):
        attrs["color"][i, colors.index(c)] = BIG
    scene = {"n": 3, "attributes": attrs, "relations": torch.full((3, 3, 4), -BIG)}

    def run(nodes):
        p = Program.from_json(nodes, ONTO)
        return ex.run(p, p.validate(ONTO), scene)

    red = [{"type": "scene", "inputs": [], "value_inputs": []},
           {"type": "filter_color", "inputs": [0], "value_inputs": ["red"]}]
    labels, probs = run(red + [{"type": "count", "inputs": [1], "value_inputs": []}])
    assert labels[int(probs.argmax())] == "2"
    # half-certain concepts: count is the sum of the memberships (2 x 0.5 + 1 -> 2 is the mode)
    attrs["color"][0, colors.index("red")] = 0.0
    attrs["color"][2, colors.index("red")] = 0.0
    labels, probs = run(red + [{"type": "count", "inputs": [1], "value_inputs": []}])
    assert labels[int(probs.argmax())] == "2" and float(probs.max()) < 0.8
    # exist is the max of the mask
    labels, probs = run(red + [{"type": "exist", "inputs": [1], "value_inputs": []}])
    assert labels == ["yes", "no"] and abs(float(probs[0]) - 1.0) < 1e-6
    with pytest.raises(Exception, match="matches nothing"):
        ex.columns("color", "plaid")
    # a shape no scene holds (Super-CLEVR's addi, "regular car"): the empty set, as in the official engine
    assert ex.columns("shape", "addi") == [] and len(ex.columns("shape", "car")) == 5
    addi = red[:1] + [{"type": "filter_shape", "inputs": [0], "value_inputs": ["addi"]}]
    labels, probs = run(addi + [{"type": "count", "inputs": [1], "value_inputs": []}])
    assert labels[int(probs.argmax())] == "0"
    labels, probs = run(addi + [{"type": "exist", "inputs": [1], "value_inputs": []}])
    assert labels[int(probs.argmax())] == "no"


# ---------------------------------------------------------------------------- data and curriculum
def test_curriculum_parsing_and_stages(root):
    assert nscl.parse_curriculum("0.2:5:6, 0.5:9:8") == [(0.2, 5, 6), (0.5, 9, 8)]
    assert nscl.parse_curriculum("") == []
    for bad in ("0.5:5", "0.5:5:6,0.4:9:9", "1.5:3:3", "0.2:0:3"):
        with pytest.raises(ValueError, match="curriculum stage"):
            nscl.parse_curriculum(bad)
    with pytest.raises(ValueError, match="curriculum stage"):
        registry.get("nscl").config(str(root / "mid"), "tiny", curriculum="x")
    cfg = registry.get("nscl").config(str(root / "mid"), "tiny", steps=100, curriculum="0.5:5:100")
    data = nscl.load_split(root / "mid", "train", ONTO, cfg, require_answer=True)
    sampler = nscl.CurriculumSampler(data, cfg)
    assert [int(end) for end, _ in sampler.stages] == [50, 100]
    early = [i for s in range(0, 50) for i in sampler(s)]
    assert early and all(len(data.questions[i].program) <= 5 for i in early)
    late = [i for s in range(50, 100) for i in sampler(s)]
    assert max(len(data.questions[i].program) for i in late) > 5
    assert sampler(7) == nscl.CurriculumSampler(data, cfg)(7)  # a function of (seed, step)
    per_image = Counter(data.questions[i].image_row for i in sampler(60))
    assert len(per_image) == min(cfg.images_per_batch, len(data.files))
    assert max(per_image.values()) <= cfg.questions_per_image


def test_boxes_are_scaled_to_the_resized_image(root):
    cfg = registry.get("nscl").config(str(root / "mid"), "tiny", image_width=32, image_height=24)
    data = nscl.load_split(root / "mid", "train", ONTO, cfg, require_answer=True)
    raw = nscl.scene_boxes(root / "mid", "train")
    name = data.files[0]
    assert data.images.shape[-2:] == (24, 32)
    assert torch.allclose(data.boxes[0], torch.from_numpy(raw[name]) / 2)  # 64x48 -> 32x24


def test_a_bad_bbox_names_file_scene_object_and_field(root, tmp_path):
    folder = tmp_path / "mid"
    (folder / "scenes").mkdir(parents=True)
    scenes = json.loads((root / "mid" / "scenes" / "train_scenes.json").read_text())
    scenes["scenes"][1]["objects"][2]["bbox"] = [1, 2, 3]
    (folder / "scenes" / "train_scenes.json").write_text(json.dumps(scenes))
    with pytest.raises(FormatError, match=r"train_scenes.json, scene 1, object 2, field 'bbox'"):
        nscl.scene_boxes(folder, "train")


def test_concept_accuracy_pairs_each_box_with_its_object(root):
    cfg = registry.get("nscl").config(str(root / "mid"), "tiny")
    data = nscl.load_split(root / "mid", "train", ONTO, cfg, require_answer=True)
    records = json.loads((root / "mid" / "scenes" / "train_scenes.json").read_text())["scenes"]
    scenes = {r["image_filename"]: SymbolicScene.from_json(r, ONTO) for r in records}
    by_file = {r["image_filename"]: _one_hot_scene(r) for r in records}
    net = registry.get("nscl").build_model(cfg, ONTO)
    net.forward = lambda images, boxes: [by_file[f] for f in data.files[:len(boxes)]]  # one batch: all images
    assert nscl.concept_accuracy(net, data, scenes, ONTO, CPU) == {a: 1.0 for a in ONTO.attribute_names}
    # the same concepts one object off: most objects are named wrongly
    rolled = {f: {**sc, "attributes": {a: v.roll(1, 0) for a, v in sc["attributes"].items()}}
              for f, sc in by_file.items()}
    net.forward = lambda images, boxes: [rolled[f] for f in data.files[:len(boxes)]]
    assert nscl.concept_accuracy(net, data, scenes, ONTO, CPU)["color"] < 0.5


# ---------------------------------------------------------------------------- learning
def test_one_step_lowers_the_loss_on_a_repeated_batch(root):
    torch.manual_seed(0)
    model = registry.get("nscl")
    cfg = model.config(str(root / "mid"), "tiny")
    data = nscl.load_split(root / "mid", "train", ONTO, cfg, require_answer=True, limit=16)
    net, ex = model.build_model(cfg, ONTO), nscl.SoftExecutor(ONTO, cfg.count_sigma)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)  # a small step: sharp min/max masks and τ = 0.1

    def loss():
        return nscl.question_losses(net, ex, data, nscl.collate_nscl([data[i] for i in range(16)])).mean()

    before = loss()
    opt.zero_grad()
    before.backward()
    assert net.concepts.embedding["color"].grad.abs().sum() > 0  # concepts learn from answers
    opt.step()
    assert float(loss().detach()) < float(before.detach())


def test_overfits_eight_questions(root, tmp_path):
    model = registry.get("nscl")
    torch.manual_seed(0)
    cfg = model.config(str(root / "mid"), "tiny", max_train_questions=8, images_per_batch=4, questions_per_image=8,
                       steps=100, lr=3e-3, warmup=1, eval_every=100, val_questions=0, curriculum="")
    model.train(cfg, tmp_path / "run", progress=False)
    preds = model.predict(tmp_path / "run", root, "mid", "train")
    assert [p.correct for p in preds[:8]] == [True] * 8
    assert all(0.0 <= p.probability <= 1.0 for p in preds)


# ---------------------------------------------------------------------------- prediction from parses
def test_predicts_from_detections_and_parsed_programs(root, tmp_path):
    model = registry.get("nscl")
    run = tmp_path / "run"
    model.train(model.config(str(root / "mid"), "tiny", steps=2, eval_every=2, val_questions=0), run, progress=False)
    scenes = json.loads((root / "mid" / "scenes" / "test_scenes.json").read_text())["scenes"]
    questions = json.loads((root / "mid" / "questions" / "test_questions.json").read_text())["questions"]
    # image 0: its true boxes as detections (one scoring under min_score); image 1: no detection
    dets = [{"box": [o["bbox"][0], o["bbox"][1], o["bbox"][0] + o["bbox"][2], o["bbox"][1] + o["bbox"][3]],
             "score": 0.9 if k else 0.2, "label": 1, "mask": None} for k, o in enumerate(scenes[0]["objects"])]

    def parsed(scene, dets):  # a likelihoods.json scene: one likelihoods row per detection
        full = SceneLikelihoods.from_scene(SymbolicScene.from_json(scene, ONTO))
        n = len(dets)
        lik = SceneLikelihoods(ONTO, full.exist[:n], {a: v[:n] for a, v in full.attributes.items()}, full.positions[:n],
                               None, full.directions, full.margin, image_index=scene["image_index"])
        return {"image_index": scene["image_index"], "image_filename": scene["image_filename"],
                "likelihoods": lik.to_json(), "detections": dets, "parts": []}

    lik = tmp_path / "likelihoods.json"
    lik.write_text(json.dumps({"version": 1, "scenes": [parsed(scenes[0], dets), parsed(scenes[1], [])]}))
    boxes = nscl.detection_boxes(lik, 0.5)
    assert len(boxes[scenes[0]["image_filename"]]) == len(dets) - 1 and len(boxes[scenes[1]["image_filename"]]) == 0
    rows = [{"program": q["program"], "valid": True, "error": None} for q in questions]
    rows[0] = {"program": None, "valid": False, "error": "no parse"}
    progs = tmp_path / "programs.json"
    progs.write_text(json.dumps({"programs": rows}))
    preds = model.predict(run, root, "mid", "test", inputs=PredictInputs(likelihoods=lik, programs=progs))
    majority = load_checkpoint(run / "baseline.pt")["vocabularies"]["majority_answer"]
    assert len(preds) == len(questions)
    assert preds[0].invalid_program and preds[0].guessed and preds[0].prediction == majority
    on_1 = [p for p, q in zip(preds, questions) if q["image_index"] == scenes[1]["image_index"]]
    assert on_1 and all(p.execution_error and p.guessed for p in on_1)
    on_0 = [p for p, q in zip(preds[1:], questions[1:]) if q["image_index"] == scenes[0]["image_index"]]
    assert on_0 and not any(p.guessed for p in on_0)
    # a stricter detection threshold than the config's: no box left on image 0 either
    strict = model.predict(run, root, "mid", "test", inputs=PredictInputs(likelihoods=lik, programs=progs), min_score=0.95)
    assert all(p.guessed for p in strict)
    with pytest.raises(ValueError, match="min_score must be in"):
        model.predict(run, root, "mid", "test", inputs=PredictInputs(likelihoods=lik, programs=progs), min_score=2.0)
    rows.pop()
    progs.write_text(json.dumps({"programs": rows}))
    with pytest.raises(FormatError, match="programs for"):
        model.predict(run, root, "mid", "test", inputs=PredictInputs(likelihoods=lik, programs=progs))


def test_the_experiment_gives_nscl_the_parsers(tmp_path):
    from orchestration import experiment, models
    from nsvqa.models import Needs

    specs = experiment.model_specs(["nscl", "nscl+gtprog", "lstm"])
    assert [models.get(s.name).needs(s) for s in specs] == [Needs(True, True, images=True),
                                                         Needs(True, False, images=True), Needs()]
    run = experiment.VariantRun(tmp_path, "mid", seed=3)
    assert run.inputs("hard", specs[0]) == PredictInputs(run.parsed("hard", "likelihoods"),
                                                         run.parsed("hard", "programs"), seed=3)
    assert run.inputs("hard", specs[1]).programs is None and run.inputs("hard", specs[2]) == PredictInputs(seed=3)


def _detections_of(root, split):
    """A ``likelihoods.json`` of ``split``: every true box as a detection, the first object's of
    each image scoring 0.2 and the others 0.9."""
    scenes = json.loads((root / "mid" / "scenes" / f"{split}_scenes.json").read_text())["scenes"]
    rows = []
    for sc in scenes:
        dets = [{"box": [o["bbox"][0], o["bbox"][1], o["bbox"][0] + o["bbox"][2], o["bbox"][1] + o["bbox"][3]],
                 "score": 0.9 if k else 0.2, "label": 1, "mask": None} for k, o in enumerate(sc["objects"])]
        lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(sc, ONTO))
        rows.append({"image_index": sc["image_index"], "image_filename": sc["image_filename"],
                     "likelihoods": lik.to_json(), "detections": dets, "parts": []})
    return {"version": 1, "scenes": rows}


def test_the_score_cut_is_chosen_on_val_and_used_at_test(root, tmp_path):
    """``tune`` scores each candidate cut on the given split's parses, keeps the best in
    ``tuned.json`` (reused while its inputs are the same), and ``predict`` then cuts there."""
    from nsvqa.evaluation import accuracy

    model = registry.get("nscl")
    run = tmp_path / "run"
    model.train(model.config(str(root / "mid"), "tiny", steps=30, eval_every=30, val_questions=0), run, progress=False)
    lik = tmp_path / "val_likelihoods.json"
    lik.write_text(json.dumps(_detections_of(root, "val")))
    inputs = PredictInputs(likelihoods=lik)
    got = model.tune(run, root, "mid", "val", inputs=inputs, candidates=(0.1, 0.5, 0.95))
    by_cut = {c: accuracy(model.predict(run, root, "mid", "val", inputs=inputs, min_score=c)).accuracy
              for c in (0.1, 0.5, 0.95)}
    assert got["accuracy_by_min_score"] == {str(c): a for c, a in by_cut.items()}
    assert by_cut[got["min_score"]] == max(by_cut.values())
    assert nscl.read_tuned(run)["min_score"] == got["min_score"]
    chosen = model.predict(run, root, "mid", "val", inputs=inputs)
    assert [p.prediction for p in chosen] == [p.prediction for p in model.predict(
        run, root, "mid", "val", inputs=inputs, min_score=got["min_score"])]
    mtime = (run / nscl.TUNED).stat().st_mtime_ns
    assert model.tune(run, root, "mid", "val", inputs=inputs, candidates=(0.1, 0.5, 0.95)) == got
    assert (run / nscl.TUNED).stat().st_mtime_ns == mtime  # same checkpoint and parses: reused
    assert model.tune(run, root, "mid", "val", inputs=PredictInputs()) == {}  # ground-truth boxes: nothing to cut
    (run / nscl.TUNED).write_text('{"min_score": "high"}')
    with pytest.raises(FormatError, match=r"tuned\.json, field 'min_score'"):
        model.predict(run, root, "mid", "val", inputs=inputs)


def test_the_experiment_tunes_nscl_on_the_val_parses(tmp_path):
    from orchestration import experiment, models

    assert models.get("nscl").tunes_on_val and not models.get("film").tunes_on_val
    run = experiment.VariantRun(tmp_path, "mid")
    spec = experiment.model_specs(["nscl"])[0]
    val = run.inputs("mid", spec, "val")
    assert val.likelihoods == tmp_path / "mid" / "parsed" / "mid" / "val_likelihoods.json"
    assert val.programs == tmp_path / "mid" / "parsed" / "mid" / "val_programs.json"
    assert run.inputs("mid", spec).likelihoods == tmp_path / "mid" / "parsed" / "mid" / "likelihoods.json"


def test_learns_on_the_cached_backbone_maps(root, tmp_path, require_backbone_weights):
    """``backbone=lite0``: RoIAlign over the frozen Lite0's cached stride-16 maps (no pixel CNN);
    eight questions are overfitted and predicted from the same cache file."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(root / "mid", data / "mid")
    model = registry.get("nscl")
    torch.manual_seed(0)
    cfg = model.config(str(data / "mid"), "tiny", backbone="lite0", feature_stride=16, image_width=96, image_height=64,
                       max_train_questions=8, images_per_batch=4, questions_per_image=8, steps=100, lr=3e-3,
                       warmup=1, eval_every=100, val_questions=0, curriculum="")
    model.train(cfg, tmp_path / "run", progress=False)
    net = model.load(tmp_path / "run")[0]
    assert net.stride == 16 and not any(isinstance(m, torch.nn.Conv2d) for m in net.modules())
    preds = model.predict(tmp_path / "run", data, "mid", "train")
    assert [p.correct for p in preds[:8]] == [True] * 8
    assert len(list((data / "mid" / "features").glob("train_lite0_64x96_*.pt"))) == 1
    with pytest.raises(ValueError, match="backbone 'resnet18'"):
        model.config(str(data / "mid"), "tiny", backbone="resnet18")


# ---------------------------------------------------------------------------- the command line
def test_script_trains_resumes_exactly_predicts_and_evaluates(root, tmp_path, load_script, stop_after_save, capsys,
                                                              check_resumed_run):
    tb = load_script("train_baseline")
    args = ["--model", "nscl", "--data", str(root / "mid"), "--profile", "tiny", "--threads", "1", "--no-progress",
            "--set", "steps=6", "--set", "eval_every=3", "--set", "val_questions=4", "--set", "curriculum=0.5:6:10",
            "--predict", str(root / "hard"), "--predict", str(root / "mid")]
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    assert tb.main([*args, "--out", str(straight)]) == 0
    assert "nscl__train-mid__test-hard.jsonl: 40 questions, accuracy" in capsys.readouterr().out
    assert json.loads((straight / "config.json").read_text())["config"]["curriculum"] == "0.5:6:10"
    with stop_after_save(nscl_training):
        tb.main([*args, "--out", str(interrupted)])
    assert load_checkpoint(interrupted / "baseline.pt")["train_state"]["step"] == 3
    assert tb.main([*args, "--out", str(interrupted), "--resume"]) == 0
    assert "resumed at step 3" in (interrupted / "train.log").read_text()
    check_resumed_run(straight, interrupted, "nscl", 6)
    assert Path(interrupted / "tb").is_dir()
