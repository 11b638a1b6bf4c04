"""mDETR baseline: Hungarian matching, token positive maps, the grounding targets, learning, the
MiniLM text encoder, and the command line (train, exact resume, predict, RD report). Fixtures
``root`` (the tiny rendered dataset) and ``one_thread`` come from conftest.py.
"""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from baselines import common, mdetr
from baselines.mdetr import training as mdetr_training
from baselines.mdetr import (MDETRNet, answer_groups, collate_grounded, decode_answers, grounding_losses,
                             hungarian_match, match_cost, positive_map, qa_loss, tokenize_questions)
from executors import load_ontology
from executors.errors import FormatError
from nsvqa.training.checkpoint import load_checkpoint
from orchestration import models as registry

ONTO = load_ontology("superclevr")


def _data(root, cfg, n):
    records = common.read_qa(root / "mid", "train", ONTO, require_answer=True, require_image=True, limit=n)
    answers = common.answer_vocabulary(ONTO, [r.answer for r in records])
    return records, mdetr.encode_split(root / "mid", "train", records, answers, cfg, ONTO, targets=True), answers


def _loss(net, x, cfg, groups):
    out = net(x["ids"], x["text_mask"], x["images"])
    parts = grounding_losses(out, x["targets"], x["text_mask"], cfg)
    return (cfg.w_l1 * parts["l1"] + cfg.w_giou * parts["giou"] + cfg.w_token * parts["token"]
            + cfg.w_contrastive * parts["contrastive"] + qa_loss(out, x["answers"], groups))


# ---------------------------------------------------------------------------- matching and targets
def test_hungarian_matching_on_a_hand_made_cost():
    # 4 queries x 3 targets: the greedy choice (query 0 -> target 0 at 1.0) is not the optimum
    cost = torch.tensor([[1.0, 1.1, 9.0],
                         [1.2, 9.0, 9.0],
                         [9.0, 9.0, 0.5],
                         [9.0, 9.0, 9.0]])
    rows, cols = hungarian_match(cost)
    assert rows.tolist() == [0, 1, 2] and cols.tolist() == [1, 0, 2]
    # the mDETR cost: the query holding a target's box and tokens is matched to it
    boxes = torch.tensor([[0.2, 0.2, 0.1, 0.1], [0.5, 0.5, 0.2, 0.2], [0.8, 0.3, 0.1, 0.2]])
    token_prob = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0], [0.25] * 4 + [0.0]])
    tgt_boxes = torch.tensor([[0.8, 0.3, 0.1, 0.2], [0.2, 0.2, 0.1, 0.1]])
    tgt_pos = torch.tensor([[False, False, False, True], [False, False, True, False]])
    rows, cols = hungarian_match(match_cost(boxes, token_prob, tgt_boxes, tgt_pos, 5.0, 2.0, 1.0))
    assert dict(zip(rows.tolist(), cols.tolist())) == {2: 0, 0: 1}
    # the token cost alone decides between two queries on the same box
    same = boxes[[1, 1]]
    c = match_cost(same, torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), same[:1], torch.tensor([[False, False, True]]),
                   5.0, 2.0, 1.0)
    assert hungarian_match(c)[0].tolist() == [1]


def test_positive_token_map_from_character_spans():
    q = "How large is the brown car?"
    ids, offsets = tokenize_questions([q], 64)
    tok = mdetr.tokenizer()
    assert tok.convert_ids_to_tokens(ids[0]) == ["[CLS]", "how", "large", "is", "the", "brown", "car", "?", "[SEP]"]
    # the brown car (chars 17-22, 23-26); a span inside one word; an empty span; the whole question
    pos = positive_map(offsets[0], [[[17, 22], [23, 26]], [[5, 7]], [[4, 4]], [[0, len(q)]]])
    assert pos.shape == (4, 9)
    assert pos[0].nonzero().flatten().tolist() == [5, 6]
    assert pos[1].nonzero().flatten().tolist() == [2]
    assert not pos[2].any()
    assert pos[3].tolist() == [False] + [True] * 7 + [False]  # never [CLS] / [SEP]
    # truncation keeps [CLS] ... [SEP] within max_tokens
    ids, offsets = tokenize_questions([q], 4)
    assert len(ids[0]) == len(offsets[0]) == 4 and tok.convert_ids_to_tokens(ids[0])[-1] == "[SEP]"


def test_grounding_targets_of_the_fixture(root):
    cfg = registry.get("mdetr").config(str(root / "mid"), "tiny")
    records, data, _ = _data(root, cfg, 40)
    raw = json.loads((root / "mid" / "questions" / "train_questions.json").read_text())["questions"]
    scenes = {s["image_filename"]: s for s in
              json.loads((root / "mid" / "scenes" / "train_scenes.json").read_text())["scenes"]}
    checked = 0
    for r, boxes, pos in zip(records, data.boxes, data.positives):
        omap = raw[r.index]["obj_map"]
        assert pos.shape == (len(boxes), len(data.ids[r.index])) and boxes.shape[1] == 4
        assert ((boxes >= 0) & (boxes <= 1)).all()
        objects = [k for k in omap if "_" not in k]
        if len(boxes) and objects and objects[0] == next(iter(omap)):
            x, y, w, h = scenes[r.image_filename]["objects"][int(objects[0])]["bbox"]
            want = torch.tensor([(x + w / 2) / 64, (y + h / 2) / 48, w / 64, h / 48])
            assert torch.allclose(boxes[0], want)
            assert pos[0].any()
            checked += 1
    assert checked >= 10


def test_bad_obj_map_names_file_question_and_field(root, tmp_path):
    data = tmp_path / "mid"
    shutil.copytree(root / "mid", data, ignore=shutil.ignore_patterns("val*", "test*"))
    path = data / "questions" / "train_questions.json"
    doc = json.loads(path.read_text())
    doc["questions"][3]["obj_map"] = {"99": [[0, 3]]}
    path.write_text(json.dumps(doc))
    model = registry.get("mdetr")
    with pytest.raises(FormatError, match=r"train_questions\.json, question 3, field 'obj_map': key '99' is not an "
                                          r"object of the scene"):
        model.train(model.config(str(data), "tiny", steps=1, pretrain_steps=1), tmp_path / "run", progress=False)
    doc["questions"][3]["obj_map"] = {"0": [[5]]}
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"question 3, field 'obj_map': key '0': expected \[\[start, end\]"):
        model.train(model.config(str(data), "tiny", steps=1, pretrain_steps=1), tmp_path / "run", progress=False)
    del doc["questions"][3]["obj_map"]
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"question 3: missing field 'obj_map'"):
        model.train(model.config(str(data), "tiny", steps=1, pretrain_steps=1), tmp_path / "run", progress=False)


# ---------------------------------------------------------------------------- profiles and network
def test_profiles_answer_types_and_decoding():
    model = registry.get("mdetr")
    assert "mdetr" in registry.names()
    full = model.config("ROOT/mid", "full")
    assert (full.d_model, full.enc_layers, full.dec_layers, full.num_queries, full.backbone) == (256, 6, 6, 25,
                                                                                                 "lite0-ft")
    assert (full.text_encoder, full.freeze_text, full.lr, full.lr_text) == ("minilm", False, 1e-4, 1e-5)
    with pytest.raises(ValueError, match="text_encoder 'bert'"):
        model.config("ROOT/mid", "tiny", text_encoder="bert")
    with pytest.raises(ValueError, match="d_model must be a multiple of 4"):
        model.config("ROOT/mid", "tiny", d_model=30)
    answers = common.answer_vocabulary(ONTO)
    groups = answer_groups(answers)
    assert [answers[i] for i in groups[0]] == ["yes", "no"]
    assert [answers[i] for i in groups[1]] == [str(n) for n in range(11)]
    assert len(groups[2]) == len(answers) - 13 and "red" in [answers[i] for i in groups[2]]
    # the argmax type's argmax answer, probability p(type) * p(answer | type)
    out = {"type_logits": torch.log(torch.tensor([[0.2, 0.5, 0.3]])),
           "answer_logits": [torch.zeros(1, 2), torch.log(torch.tensor([[0.1] * 8 + [0.8, 0.1, 0.1]])),
                             torch.zeros(1, len(groups[2]))]}
    ids, probs = decode_answers(out, groups)
    assert answers[ids[0]] == "8" and probs[0] == pytest.approx(0.5 * 0.8 / 1.8, rel=1e-5)


def test_one_step_lowers_the_loss_on_a_repeated_batch(root):
    torch.manual_seed(0)
    cfg = registry.get("mdetr").config(str(root / "mid"), "tiny")
    _, data, answers = _data(root, cfg, 16)
    groups = answer_groups(answers)
    net = MDETRNet([len(g) for g in groups], cfg)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = collate_grounded([data[i] for i in range(16)])
    assert sum(len(t[0]) for t in x["targets"]) > 0
    before = _loss(net, x, cfg, groups)
    opt.zero_grad()
    before.backward()
    opt.step()
    assert float(_loss(net, x, cfg, groups).detach()) < float(before.detach())


def test_minilm_text_encoder_shapes_and_frozen_weights(root):
    cfg = registry.get("mdetr").config(str(root / "mid"), "tiny", text_encoder="minilm", freeze_text=True)
    _, data, answers = _data(root, cfg, 2)
    groups = answer_groups(answers)
    net = MDETRNet([len(g) for g in groups], cfg).train()
    assert not net.text.bert.training and not any(p.requires_grad for p in net.text.bert.parameters())
    assert net.text.bert.config.hidden_size == 384
    x = collate_grounded([data[0], data[1]])
    out = net(x["ids"], x["text_mask"], x["images"])
    T = x["ids"].shape[1]
    assert out["boxes"].shape == (2, 10, 4) and out["token_logits"].shape == (2, 10, cfg.max_tokens + 1)
    assert out["text_emb"].shape == (2, T, 32) and out["type_logits"].shape == (2, 3)
    assert [o.shape[1] for o in out["answer_logits"]] == [len(g) for g in groups]
    # the frozen MiniLM stays out of the checkpoint and comes back from the package
    weights = mdetr_training._weights(net)
    assert not any(k.startswith("text.bert.") for k in weights) and "text.resize.0.weight" in weights
    again = MDETRNet([len(g) for g in groups], cfg).eval()
    mdetr_training._load_weights(again, weights, "test")
    with torch.no_grad():
        assert torch.allclose(again(x["ids"], x["text_mask"], x["images"])["boxes"],
                              net.eval()(x["ids"], x["text_mask"], x["images"])["boxes"])


OVERFIT_STEPS = 120


@pytest.fixture(scope="module")
def overfit(root, tmp_path_factory):
    """A run trained on the first 8 training questions only."""
    out = tmp_path_factory.mktemp("mdetr_overfit")
    model = registry.get("mdetr")
    model.train(model.config(str(root / "mid"), "tiny", max_train_questions=8, batch=8, pretrain_steps=10,
                             steps=OVERFIT_STEPS, lr=2e-3, warmup=1, eval_every=OVERFIT_STEPS, val_questions=0,
                             finetune_grounding_weight=0.2),
                out, progress=False)
    return out


def test_overfits_eight_questions(root, overfit):
    preds = registry.get("mdetr").predict(overfit, root, "mid", "train")
    assert len(preds) == 80
    assert [p.correct for p in preds[:8]] == [True] * 8
    assert all(0.0 <= p.probability <= 1.0 for p in preds)
    log = (overfit / "train.log").read_text()
    assert "step 10 (pretrain)" in log and f"step {10 + OVERFIT_STEPS} (finetune)" in log


def test_prediction_needs_no_scenes(root, overfit, tmp_path):
    shutil.copytree(root / "hard", tmp_path / "hard", ignore=shutil.ignore_patterns("scenes", "annotations"))
    preds = registry.get("mdetr").predict(overfit, tmp_path, "hard", "test")
    assert [p.prediction for p in preds] == [p.prediction for p in registry.get("mdetr").predict(
        overfit, root, "hard", "test")]


# ---------------------------------------------------------------------------- the command line
def test_script_trains_resumes_exactly_predicts_and_evaluates(root, tmp_path, load_script, stop_after_save, capsys,
                                                              check_resumed_run):
    tb = load_script("train_baseline")
    args = ["--model", "mdetr", "--data", str(root / "mid"), "--profile", "tiny", "--threads", "1", "--no-progress",
            "--set", "pretrain_steps=2", "--set", "steps=5", "--set", "batch=8", "--set", "eval_every=2",
            "--set", "val_questions=4", "--set", "dropout=0.2",
            "--predict", str(root / "hard"), "--predict", str(root / "mid")]
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    assert tb.main([*args, "--out", str(straight)]) == 0
    assert "mdetr__train-mid__test-hard.jsonl: 40 questions, accuracy" in capsys.readouterr().out
    cfg = json.loads((straight / "config.json").read_text())["config"]
    assert cfg["model"] == "mdetr" and (cfg["pretrain_steps"], cfg["steps"]) == (2, 5)
    assert (straight / "cache" / "train_64x48.pt").is_file()
    log = (straight / "train.log").read_text()
    assert "step 2 (pretrain)" in log and "step 4 (finetune)" in log and "val accuracy=" in log

    with stop_after_save(mdetr_training, at=4):  # interrupted in the fine-tuning phase
        tb.main([*args, "--out", str(interrupted)])
    assert load_checkpoint(interrupted / common.CHECKPOINT)["train_state"]["step"] == 4
    assert tb.main([*args, "--out", str(interrupted), "--resume"]) == 0
    assert "resumed at step 4" in (interrupted / "train.log").read_text()
    a, preds = check_resumed_run(straight, interrupted, "mdetr", 7)
    assert all(p.prediction in a["vocabularies"]["answer"] for ps in preds.values() for p in ps)
    # a finished run is left as it is
    assert tb.main([*args, "--out", str(interrupted), "--resume"]) == 0
    assert "finished at step 7" in (interrupted / "train.log").read_text()


# ---------------------------------------------------------------------------- the pretrained backbone
def test_learns_on_the_cached_backbone_maps_and_logs_the_grounding_curve(root, tmp_path, require_backbone_weights):
    """``backbone=lite0``: the transformer reads the frozen Lite0's cached stride-16 maps (no pixel
    CNN), eight questions are overfitted, and the val grounding losses are logged from the
    untrained model on (the curve that says whether the grounding converges)."""
    import torch

    from nsvqa.training.checkpoint import load_checkpoint

    data = tmp_path / "data"
    shutil.copytree(root / "mid", data / "mid")
    model = registry.get("mdetr")
    torch.manual_seed(0)
    cfg = model.config(str(data / "mid"), "tiny", backbone="lite0", feature_stride=16, image_width=96, image_height=64,
                       max_train_questions=8, batch=8, pretrain_steps=10, steps=OVERFIT_STEPS, lr=2e-3, warmup=1,
                       eval_every=OVERFIT_STEPS // 2, val_questions=0, val_grounding=16, finetune_grounding_weight=0.2)
    model.train(cfg, tmp_path / "run", progress=False)
    net = model.load(tmp_path / "run")[0]
    assert not any(isinstance(m, torch.nn.Conv2d) and m.in_channels == 3 for m in net.modules())
    preds = model.predict(tmp_path / "run", data, "mid", "train")
    assert [p.correct for p in preds[:8]] == [True] * 8
    assert sorted(p.name.split("_")[0] for p in (data / "mid" / "features").glob("*.pt")) == ["train", "val"]
    curve = load_checkpoint(tmp_path / "run" / "baseline.pt")["extra"]["val_grounding"]
    steps = [row[0] for row in curve]
    assert steps[0] == 0 and steps[-1] == 10 + OVERFIT_STEPS and steps == sorted(steps) and len(steps) >= 3
    assert all(row[1] > 0 and 0 <= row[2] <= 2 for row in curve)  # L1 per box, 1 - GIoU in [0, 2]
    assert "step 0 (untrained) val l1=" in (tmp_path / "run" / "train.log").read_text()


def test_a_config_saved_with_the_removed_reference_points_option():
    """``reference_points`` (tried, did not converge faster) was removed: a config saved with it
    off still loads; one that used it cannot, and says why."""
    from baselines.mdetr import MDETRConfig

    d = registry.get("mdetr").config("ROOT/mid", "tiny").to_dict()
    assert MDETRConfig.from_dict(d | {"reference_points": False}) == MDETRConfig.from_dict(d)
    with pytest.raises(ValueError, match="'reference_points': True, an option that was removed"):
        MDETRConfig.from_dict(d | {"reference_points": True})

def test_query_selection_proposes_from_the_cells_and_is_scored_densely():
    """``query_selection`` (two-stage): the object queries start from the top-scoring cells'
    proposals; the dense loss is small when the cell holding the target's centre scores high and
    proposes its box, large when another cell does."""
    import torch

    from baselines.mdetr import MDETRNet, cell_centres, proposal_loss

    torch.testing.assert_close(cell_centres(2, 3)[[0, 4]], torch.tensor([[1 / 6, 0.25], [0.5, 0.75]]))
    h, w = 3, 4
    target = torch.tensor([[0.6, 0.5, 0.2, 0.3]])  # centre in row 1, column 2: cell 6
    boxes = torch.full((1, h * w, 4), 0.5)
    boxes[0, 6] = target[0]
    good = torch.full((1, h * w), -8.0)
    good[0, 6] = 8.0
    bad = torch.full((1, h * w), -8.0)
    bad[0, 0] = 8.0
    targets = [(target, torch.zeros(1, 5, dtype=torch.bool))]
    lo = proposal_loss({"logits": good, "boxes": boxes, "grid": (h, w)}, targets)
    hi = proposal_loss({"logits": bad, "boxes": boxes, "grid": (h, w)}, targets)
    assert float(lo) < 0.01 < 1.0 < float(hi)
    moved = boxes.clone()
    moved[0, 6] = torch.tensor([0.3, 0.2, 0.1, 0.1])
    assert float(proposal_loss({"logits": good, "boxes": moved, "grid": (h, w)}, targets)) > float(lo) + 0.5
    cfg = registry.get("mdetr").config("ROOT/mid", "tiny", query_selection=True, num_queries=4)
    net = MDETRNet([2, 3, 4], cfg).eval()
    with torch.no_grad():
        out = net(torch.randint(1, 100, (2, 7)), torch.ones(2, 7, dtype=torch.bool),
                  torch.randn(2, 3, cfg.image_height, cfg.image_width))
    p = out["proposals"]
    assert p["logits"].shape == (2, p["grid"][0] * p["grid"][1]) and out["boxes"].shape == (2, 4, 4)
    top = p["logits"].topk(4, dim=1).indices
    # an untrained refinement stays near its proposal: the query boxes start where the top cells proposed
    props = torch.gather(p["boxes"], 1, top[..., None].expand(-1, -1, 4))
    assert float((out["boxes"] - props).abs().max()) < 0.5


def test_qa_text_feeds_the_question_encoding_to_the_answer_heads():
    """``qa_text``: the QA heads read [QA query ; mean of the text encoder's tokens], so two
    questions on the same image differ in their answer logits through the text path alone."""
    import torch

    from baselines.mdetr import MDETRNet

    cfg = registry.get("mdetr").config("ROOT/mid", "tiny", qa_text=True)
    torch.manual_seed(0)
    net = MDETRNet([2, 3, 4], cfg).eval()
    assert net.type_head[0].in_features == 2 * cfg.d_model
    seen = {}
    net.type_head.register_forward_hook(lambda m, inp, out: seen.__setitem__("x", inp[0]))
    ids = torch.randint(1, 100, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[1, 5:] = False  # padding is left out of the mean
    with torch.no_grad():
        net(ids, mask, torch.zeros(2, 3, cfg.image_height, cfg.image_width))
        text = net.text(ids, mask)
    torch.testing.assert_close(seen["x"][0, cfg.d_model:], text[0].mean(0))
    torch.testing.assert_close(seen["x"][1, cfg.d_model:], text[1, :5].mean(0))
