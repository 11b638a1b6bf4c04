"""film-trace: FiLM (film-dense) with a grounding loss on its FiLMed blocks' cells from the training
programs' traces. The cell targets on a hand-made scene, the loss (film-dense's at weight 0), that
the cell heads learn, and training through the one engine with its config round trip. Fixtures
``root`` (the tiny rendered dataset) and ``one_thread`` come from conftest.py."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from baselines import common
from baselines.film_trace import FiLMTraceNet, feature_grid
from baselines.trace_targets import cell_loss, cell_targets
from executors import Program, load_ontology
from executors.errors import FormatError
from nsvqa.artifacts.questions import Question
from nsvqa.fileio import write_json_atomic
from nsvqa.generation.annotations import mask_to_rle
from nsvqa.generation.questions.synthetic import synthetic_scene
from parsers.question.vocab import Vocabulary, tokenize
from orchestration import models as registry

ONTO = load_ontology("superclevr")
H, W, GRID = 48, 64, (6, 8)  # 8-pixel cells


def _scene_folder(tmp_path):
    """``tmp_path/mid``: one 3-object train scene at 64 x 48 with hand-made masks: object 0 (red)
    covers the cells rows 0-1 x cols 0-1; object 1 (blue) rows 3-4 x cols 5-6 and a quarter of
    col 7 (not its); object 2 (green) a 3 x 3 patch inside cell (5, 2) only."""
    rec = synthetic_scene(ONTO, np.random.default_rng(0), 3, split="train")
    rec["image_filename"] = "s_train_000000.png"
    masks = np.zeros((3, H, W), dtype=bool)
    masks[0, 0:16, 0:16] = True
    masks[1, 24:40, 40:58] = True
    masks[2, 41:44, 18:21] = True
    for o, colour, m in zip(rec["objects"], ("red", "blue", "green"), masks):
        o["color"] = colour
        o["mask"], o["bbox"] = mask_to_rle(m)
    write_json_atomic(tmp_path / "mid" / "scenes" / "train_scenes.json", {"info": {}, "scenes": [rec]})
    return tmp_path / "mid", rec


def _question(nodes, image="s_train_000000.png"):
    p = Program.from_json(nodes)
    return Question(index=0, question_index=0, question="q", image_index=0, image_filename=image, answer=None,
                    program=p, program_types=p.validate(ONTO), program_error=None, family=None, question_hash=None,
                    obj_map=None, record={}, where="q")


def _colour(c, last):
    return [{"type": "scene", "inputs": [], "value_inputs": []},
            {"type": "filter_color", "inputs": [0], "value_inputs": [c]},
            {"type": last, "inputs": [1], "value_inputs": []}]


def _cells(rows, cols):
    out = np.zeros(GRID, dtype=bool)
    out[np.ix_(rows, cols)] = True
    return out


def test_a_question_about_one_object_marks_only_its_cells(tmp_path):
    folder, _ = _scene_folder(tmp_path)
    questions = [_question(_colour("blue", "unique") + [{"type": "query_shape", "inputs": [2], "value_inputs": []}]),
                 _question(_colour("green", "exist")),
                 _question(_colour("purple", "exist")),  # no purple object: an empty set, all cells off
                 _question([{"type": "scene", "inputs": [], "value_inputs": []},
                            {"type": "count", "inputs": [0], "value_inputs": []}])]  # no object step: no target
    members, sup, cells = cell_targets(questions, np.zeros(4, dtype=np.int64), 1, folder, "train", ONTO, 2, GRID)
    assert members.shape == (4, 2, 3) and cells.shape == (1, 3, *GRID)
    assert sup.tolist() == [[True, True], [True, True], [True, True], [False, False]]
    target = (members[..., None, None] & cells[0][None, None]).any(2).numpy()
    blue = _cells([3, 4], [5, 6])  # col 7 holds a quarter of it: below half, and not the cell it covers most
    assert (target[0, 0] == blue).all() and (target[0, 1] == blue).all()
    assert (target[1, 1] == _cells([5], [2])).all()  # smaller than a cell: the cell it covers most
    assert not target[2].any() and not target[3].any()
    assert (cells[0, 0].numpy() == _cells([0, 1], [0, 1])).all()


def test_an_object_without_a_mask_is_named(tmp_path):
    folder, rec = _scene_folder(tmp_path)
    del rec["objects"][1]["mask"]
    write_json_atomic(folder / "scenes" / "train_scenes.json", {"info": {}, "scenes": [rec]})
    with pytest.raises(FormatError, match=r"train_scenes.json, scene 0, object 1, field 'mask'"):
        cell_targets([_question(_colour("red", "exist"))], np.zeros(1, dtype=np.int64), 1, folder, "train", ONTO, 2,
                     GRID)
    with pytest.raises(FormatError, match=r"no scene of image 'other.png'"):
        cell_targets([_question(_colour("red", "exist"), "other.png")], np.zeros(1, dtype=np.int64), 1, folder,
                     "train", ONTO, 2, GRID)


def test_the_cell_loss_is_low_on_the_target_and_zero_without_one():
    members = torch.tensor([[[False, True]]])
    cells = torch.zeros(1, 2, 2, 2, dtype=torch.bool)
    cells[0, 1, 0, 0] = cells[0, 0, 1, 1] = True
    on = torch.tensor([[[[9.0, -9.0], [-9.0, -9.0]]]])  # marks object 1's cell only
    off = torch.tensor([[[[-9.0, -9.0], [-9.0, 9.0]]]])  # marks object 0's
    yes = torch.tensor([[True]])
    assert cell_loss(on, members, cells, yes) < 1e-3 < 4 < cell_loss(off, members, cells, yes)
    assert cell_loss(off, members, cells, torch.tensor([[False]])) == 0


class _Log:
    def __init__(self):
        self.lines = []

    def log(self, msg):
        self.lines.append(msg)


def _setup(root, **overrides):
    m = registry.get("film-trace")
    cfg = m.config(str(root / "mid"), "tiny", **overrides)
    records = common.read_qa(root / "mid", "train", ONTO, require_answer=True, require_image=True)
    vocab = Vocabulary.build(tokenize(r.question) for r in records)
    answers = common.answer_vocabulary(ONTO, [r.answer for r in records])
    data = common.EncodedQA.build(records, vocab, answers, m.image_inputs(
        root / "mid", "train", [r.image_filename for r in records], cfg))
    torch.manual_seed(0)
    net = m.build_model(cfg, len(vocab), len(answers))
    return m, cfg, records, data, net


def _batch(data, n=16):
    from nsvqa.training.data import StepBatch

    return StepBatch(0, list(range(n)), common.collate_qa([data[i] for i in range(n)]))


def test_weight_zero_is_film_dense_loss_and_the_cell_heads_learn(root):
    m, cfg, records, data, net = _setup(root, trace_weight=0.0)
    batch = _batch(data)
    words, lengths, imgs, ans = batch.data
    loss, values = m.training_loss(cfg, root / "mid", records, data, _Log())(net, batch)
    assert torch.equal(loss, F.cross_entropy(net(words, lengths, imgs), ans)) and set(values) == {"loss"}
    # with the trace: the answers' loss plus the cells', built once; the heads learn the cells
    m, cfg, records, data, net = _setup(root)
    assert feature_grid(cfg, data.images) == (6, 8) and isinstance(net, FiLMTraceNet) and len(net.cell_heads) == 2
    log = _Log()
    loss_fn = m.training_loss(cfg, root / "mid", records, data, log)
    assert log.lines[0].startswith("trace targets: ") and f" of {len(records)} questions" in log.lines[0]
    loss, values = loss_fn(net, batch)
    assert torch.allclose(loss, values["answer_loss"] + values["trace_loss"]) and values["trace_loss"] > 0
    assert torch.allclose(values["answer_loss"], F.cross_entropy(net(words, lengths, imgs), ans))
    # after 40 steps on the batch the cells beat the best constant guess (the base rate) and rank
    # the targets' cells above the others
    members, sup, cells = cell_targets(records, data.image_rows.numpy(), len(data.images), root / "mid", "train",
                                       ONTO, 2, GRID)
    idx = torch.as_tensor(batch.indices)
    on = (members[idx][..., None, None] & cells[data.image_rows[idx]][:, None]).any(2)
    seen = sup[idx][..., None, None].expand_as(on)
    rate = float(on[seen].float().mean())
    constant = -(rate * np.log(rate) + (1 - rate) * np.log(1 - rate))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(40):
        opt.zero_grad()
        loss_fn(net, batch)[0].backward()
        opt.step()
    assert float(loss_fn(net, batch)[1]["trace_loss"].detach()) < 0.8 * constant
    with torch.no_grad():
        cell_logits = net(words, lengths, imgs, cells=True)[1]
    pos, neg = cell_logits[on & seen], cell_logits[~on & seen]
    assert float((pos[:, None] > neg[None]).float().mean()) > 0.85
    with pytest.raises(ValueError, match="trace_blocks 'first': valid: all, last"):
        m.config("x", "tiny", trace_blocks="first")
    assert len(m.build_model(m.config("x", "tiny", trace_blocks="last"), 5, 3).cell_heads) == 1


def test_trains_through_the_engine_and_the_config_round_trips(root, tmp_path):
    m = registry.get("film-trace")
    assert m.family == "holistic" and m.config("x", "mini").trace_weight == 1.0
    cfg = m.config(str(root / "mid"), "tiny", steps=4, val_questions=4, trace_blocks="last")
    m.train(cfg, tmp_path / "run", progress=False)
    saved = json.loads((tmp_path / "run" / "config.json").read_text())["config"]
    assert saved["model"] == "film-trace" and saved["trace_blocks"] == "last" and saved["trace_weight"] == 1.0
    assert "trace targets: " in (tmp_path / "run" / "train.log").read_text()
    net, loaded, _, _ = m.load(tmp_path / "run")
    assert loaded == cfg and isinstance(net, FiLMTraceNet) and len(net.cell_heads) == 1
    preds = m.predict(tmp_path / "run", root, "mid", "test")
    assert len(preds) == 40 and all(0.0 <= p.probability <= 1.0 for p in preds)
