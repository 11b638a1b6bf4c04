"""Grounding targets from the ground-truth program's trace (objmac's ``trace_weight``): which
objects each hop reads, the matching of scene objects to tokens, the loss, and training with it."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from baselines.objtf import scene_tokens
from baselines.trace_targets import hop_sets, match_tokens, trace_loss
from executors import DeterministicExecutor, Program, SceneLikelihoods, SymbolicScene, load_ontology
from nsvqa.artifacts.questions import Question
from nsvqa.generation.questions.synthetic import synthetic_scene
from orchestration import models as registry

from .test_objtf import _symbolic_variant

ONTO = load_ontology("superclevr")


def _question(nodes):
    p = Program.from_json(nodes)
    return Question(index=0, question_index=0, question="q", image_index=0, image_filename="x.png", answer=None,
                    program=p, program_types=p.validate(ONTO), program_error=None, family=None, question_hash=None,
                    obj_map=None, record={}, where="q")


def test_hops_spread_over_the_object_steps_in_order_and_end_on_the_last():
    rec = synthetic_scene(ONTO, np.random.default_rng(1), 3)
    scene = SymbolicScene.from_json(rec, ONTO)
    ex = DeterministicExecutor(ONTO)
    colour = rec["objects"][0]["color"]
    nodes = [{"type": "scene", "inputs": [], "value_inputs": []},
             {"type": "filter_color", "inputs": [0], "value_inputs": [colour]},
             {"type": "exist", "inputs": [1], "value_inputs": []}]
    same = [i for i, o in enumerate(rec["objects"]) if o["color"] == colour]
    assert hop_sets(_question(nodes), scene, ex, 3) == [same] * 3
    # one object by its colour and shape, then the objects left of it: three object steps for six hops
    first = rec["objects"][0]
    nodes = [{"type": "scene", "inputs": [], "value_inputs": []},
             {"type": "filter_color", "inputs": [0], "value_inputs": [first["color"]]},
             {"type": "filter_shape", "inputs": [1], "value_inputs": [first["shape"]]},
             {"type": "unique", "inputs": [2], "value_inputs": []},
             {"type": "relate", "inputs": [3], "value_inputs": ["left"]},
             {"type": "count", "inputs": [4], "value_inputs": []}]
    q = _question(nodes)
    trace = ex.run(q.program, scene, trace=True).trace
    sets = hop_sets(q, scene, ex, 8)
    assert sets[0] == sorted(trace[1]) and sets[-1] == sorted(trace[4]) and sets[5] == [trace[3]]
    assert [len(s) for s in sets] == [len(trace[k]) if isinstance(trace[k], list) else 1
                                      for k in (1, 1, 2, 2, 3, 3, 4, 4)]
    assert hop_sets(_question(nodes[:1] + [{"type": "count", "inputs": [0], "value_inputs": []}]), scene, ex, 2) is None


def test_scene_objects_match_their_tokens_by_box():
    rec = synthetic_scene(ONTO, np.random.default_rng(2), 3)
    lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(rec, ONTO))
    lik.exist[:] = [0.6, 0.9, 0.3]  # tokens in order of existence: object 1, then 0; 2 is dropped
    boxes = np.array([[0, 0, 20, 20], [30, 20, 60, 44], [40, 0, 60, 10]], dtype=np.float32)
    t = scene_tokens(lik, boxes, (64, 48), max_tokens=8, min_exist=0.5, parts=True)
    scale = np.array([64, 48, 64, 48], dtype=np.float32)
    assert match_tokens(t, (boxes + 1) / scale) == {0: 1, 1: 0}
    assert match_tokens(t, np.array([[0, 0, 2, 2]], dtype=np.float32) / scale) == {}  # IoU below 0.5


def test_the_loss_is_lower_for_reads_on_the_target_and_zero_without_targets():
    valid = torch.tensor([[True, True, True, False]])
    members = torch.tensor([[[False, True, False, False]]])
    on = torch.tensor([[[-5.0, -5.0, 5.0, -5.0, 0.0]]])  # null, t0, t1 (the target), t2, padding
    off = torch.tensor([[[-5.0, 5.0, -5.0, -5.0, 0.0]]])
    yes = torch.tensor([[True]])
    assert trace_loss(on, valid, members, yes) < 0.1 < trace_loss(off, valid, members, yes)
    assert trace_loss(off, valid, members, torch.tensor([[False]])) == 0
    empty = torch.zeros_like(members)  # an empty set is the null token's
    assert trace_loss(torch.tensor([[[5.0, -5.0, -5.0, -5.0, 9.0]]]), valid, empty, yes) < 0.1


def test_objmac_trains_with_the_trace_and_its_reads_follow_it(tmp_path):
    torch.manual_seed(0)
    data = _symbolic_variant(tmp_path / "data", n_train=120)
    m = registry.get("objmac")
    runs = {}
    for w in (0.0, 1.0):
        runs[w] = tmp_path / f"run{w}"
        m.train(m.config(str(data), "tiny", steps=150, eval_every=150, val_questions=0, part_tokens=False,
                         trace_weight=w), runs[w], progress=False)
    assert "trace targets: 240 of 240 questions" in (runs[1.0] / "train.log").read_text()
    # the read attention of the traced model puts more mass on the asked colour's objects
    from baselines.trace_targets import hop_targets
    from baselines.qa_encoding import EncodedQA, read_qa

    mass = {}
    for w, run in runs.items():
        model, cfg, vocab, answers = m.load(run)
        recs = read_qa(data, "test", ONTO, require_answer=True, require_image=True)
        enc = EncodedQA.build(recs, vocab, answers, m.image_inputs(data, "test", [r.image_filename for r in recs], cfg))
        members, sup = hop_targets(recs, enc.image_rows.numpy(), enc.images, data, "test", ONTO, cfg.hops)
        from baselines.qa_encoding import pad_words
        words, lengths = pad_words(enc.words)
        tokens = enc.images[enc.image_rows]
        with torch.no_grad():
            _, reads = model(words, lengths, tokens, reads=True)
        valid = tokens[..., 0] > 0.5
        att = reads.masked_fill(~torch.cat([torch.ones_like(valid[:, :1]), valid], 1)[:, None], -1e9).softmax(-1)
        target = torch.cat([~members.any(-1, keepdim=True), members], -1).float()
        mass[w] = float((att * target).sum(-1)[:, -1].mean())
    with pytest.raises(ValueError, match="trace_weight"):
        registry.get("objtf").config("x", "tiny", trace_weight=1.0)
    traced = registry.get("objmac-trace")  # objmac with the trace, registered as a model of its own
    assert traced.family == "holistic" and traced.config("x", "mini").trace_weight == 1.0
    assert registry.get("objmac").config("x", "mini").trace_weight == 0.0
    assert mass[1.0] > mass[0.0] + 0.2 and mass[1.0] > 0.6
