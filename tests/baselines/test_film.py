"""FiLM baseline: the network's parts, learning, that the question acts only through FiLM, and the
command line (train, exact resume, predict, RD report). Fixtures ``root`` (the tiny rendered
dataset) and ``one_thread`` come from conftest.py.
"""
from __future__ import annotations

import json

import pytest
import torch
from torch.nn import functional as F

import baselines
from baselines import common
from baselines.film import FiLMedResBlock, FiLMNet, coord_maps, film
from executors import load_ontology
from nsvqa.training.checkpoint import load_checkpoint
from parsers.question.vocab import Vocabulary, tokenize
from orchestration import models as registry

ONTO = load_ontology("superclevr")


def _encoded(root, n):
    records = common.read_qa(root / "mid", "train", ONTO, require_answer=True, require_image=True, limit=n)
    vocab = Vocabulary.build(tokenize(r.question) for r in records)
    answers = common.answer_vocabulary(ONTO, [r.answer for r in records])
    images = common.load_images(root / "mid", "train", [r.image_filename for r in records], 64, 48)
    return records, common.EncodedQA.build(records, vocab, answers, images), vocab, answers


# ---------------------------------------------------------------------------- parts and profiles
def test_coordinate_maps_film_and_block_shapes():
    c = coord_maps(torch.zeros(2, 5, 3, 4))
    assert c.shape == (2, 2, 3, 4)
    assert torch.allclose(c[0, 0, 0], torch.tensor([-1.0, -1 / 3, 1 / 3, 1.0]))  # x, left to right
    assert torch.equal(c[1, 1, :, 2], torch.tensor([-1.0, 0.0, 1.0]))  # y, top to bottom
    x = torch.randn(2, 3, 4, 5)
    g, b = torch.tensor([[1.0, 2.0, 0.0], [0.5, 1.0, 1.0]]), torch.tensor([[0.0, 1.0, 3.0], [0.0, 0.0, -1.0]])
    out = film(x, g, b)
    assert torch.allclose(out[0, 1], 2 * x[0, 1] + 1) and torch.equal(out[0, 2], torch.full((4, 5), 3.0))
    block = FiLMedResBlock(3)
    assert not block.bn.affine and block.proj.in_channels == 5  # coords in; the affine part is FiLM's
    assert block(x, g, b).shape == x.shape


def test_profiles_and_the_full_network():
    model = registry.get("film")
    full = model.config("ROOT/mid", "full")
    assert (full.num_blocks, full.module_dim, full.hidden, full.word_dim, full.classifier_proj, full.mlp_hidden) == (
        4, 128, 4096, 200, 512, 1024)
    assert (full.lr, full.weight_decay, full.backbone) == (3e-4, 1e-5, "lite0")  # frozen ImageNet maps
    assert all(model.config("ROOT/mid", p).weight_decay == 1e-5 for p in baselines.PROFILE_NAMES)
    with pytest.raises(ValueError, match="num_blocks must be >= 1, got 0"):
        model.config("ROOT/mid", "tiny", num_blocks=0)
    with pytest.raises(ValueError, match="backbone 'vgg'"):
        model.config("ROOT/mid", "tiny", backbone="vgg")
    # the full network's layout at small widths (resnet18 with weights=None up to layer3)
    net = FiLMNet(20, 7, word_dim=8, hidden=16, layers=1, backbone="resnet18", cnn_width=0, cnn_layers=0,
                  num_blocks=4, module_dim=8, classifier_proj=8, mlp_hidden=8, dropout=0.0, feature_stride=16)
    assert net.stem[0].in_channels == 256 + 2 and len(net.blocks) == 4
    words, lengths = common.pad_words([[3, 4, 5], [6]])
    gammas, betas = net.film_params(words, lengths)
    assert gammas.shape == betas.shape == (2, 4, 8)
    assert net(words, lengths, torch.randn(2, 3, 48, 64)).shape == (2, 7)
    with pytest.raises(ValueError, match="film needs images"):
        net(words, lengths)


# ---------------------------------------------------------------------------- learning
def test_one_step_lowers_the_loss_on_a_repeated_batch(root):
    torch.manual_seed(0)
    model = registry.get("film")
    _, data, vocab, answers = _encoded(root, 16)
    net = model.build_model(model.config(str(root / "mid"), "tiny"), len(vocab), len(answers))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    words, lengths, imgs, ans = common.collate_qa([data[i] for i in range(16)])

    def loss():
        return F.cross_entropy(net(words, lengths, imgs), ans)

    before = loss()
    opt.zero_grad()
    before.backward()
    opt.step()
    assert float(loss().detach()) < float(before.detach())


OVERFIT_STEPS = 100


@pytest.fixture(scope="module")
def overfit(root, tmp_path_factory):
    """A run trained on the first 8 training questions only."""
    out = tmp_path_factory.mktemp("film_overfit")
    model = registry.get("film")
    torch.manual_seed(0)
    model.train(model.config(str(root / "mid"), "tiny", max_train_questions=8, batch=8, steps=OVERFIT_STEPS, lr=3e-3,
                             warmup=1, eval_every=OVERFIT_STEPS, val_questions=0), out, progress=False)
    return out


def test_overfits_eight_questions(root, overfit):
    preds = registry.get("film").predict(overfit, root, "mid", "train")
    assert [p.correct for p in preds[:8]] == [True] * 8
    assert all(0.0 <= p.probability <= 1.0 for p in preds)


def test_the_question_acts_through_film_alone(root, overfit):
    records = common.read_qa(root / "mid", "train", ONTO, require_answer=True, require_image=True, limit=40)
    learnt = records[:8]
    # two of the learnt questions on one image with different answers, and a question on another image
    pairs = [(a, b) for a in learnt for b in learnt
             if a.index < b.index and a.image_filename == b.image_filename and a.answer != b.answer]
    assert pairs, "the 8 training questions hold no two on one image with different answers"
    qa, qb = pairs[0]
    other_image = next(r for r in records if r.image_filename != qa.image_filename)
    net, _, vocab, answers = registry.get("film").load(overfit)
    data = common.EncodedQA.build(records, vocab, answers, common.load_images(
        root / "mid", "train", [r.image_filename for r in records], 64, 48))
    pos = {r.index: i for i, r in enumerate(records)}

    def logits(q, image_of=None):
        words, lengths, _, _ = common.collate_qa([data[pos[q.index]]])
        _, _, imgs, _ = common.collate_qa([data[pos[(image_of or q).index]]])
        with torch.no_grad():
            return net(words, lengths, imgs)

    # trained: the two questions on the same image get their own (right) answers
    la, lb = logits(qa), logits(qb)
    assert answers[int(la.argmax())] == qa.answer and answers[int(lb.argmax())] == qb.answer
    assert float((la - lb).abs().max()) > 1e-3
    # γ = 1, β = 0 for every question (the generator zeroed): the question no longer matters ...
    with torch.no_grad():
        net.film_generator.weight.zero_()
        net.film_generator.bias.zero_()
    words, lengths, imgs, _ = common.collate_qa([data[pos[qa.index]]])
    gammas, betas = net.film_params(words, lengths)
    assert torch.equal(gammas, torch.ones_like(gammas)) and torch.equal(betas, torch.zeros_like(betas))
    za, zb = logits(qa), logits(qb)
    assert torch.equal(za, zb)
    with torch.no_grad():
        assert torch.equal(za, net.answer(imgs, gammas, betas))
    # ... while the image still does
    assert not torch.equal(za, logits(qa, image_of=other_image))


# ---------------------------------------------------------------------------- the command line
def test_script_trains_resumes_exactly_predicts_and_evaluates(root, tmp_path, load_script, stop_after_save, capsys,
                                                              check_resumed_run):
    tb = load_script("train_baseline")
    args = ["--model", "film", "--data", str(root / "mid"), "--profile", "tiny", "--threads", "1", "--no-progress",
            "--set", "steps=6", "--set", "batch=8", "--set", "eval_every=3", "--set", "val_questions=4",
            "--set", "dropout=0.2", "--predict", str(root / "hard"), "--predict", str(root / "mid")]
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    assert tb.main([*args, "--out", str(straight)]) == 0
    assert "film__train-mid__test-hard.jsonl: 40 questions, accuracy" in capsys.readouterr().out
    cfg = json.loads((straight / "config.json").read_text())["config"]
    assert cfg["model"] == "film" and cfg["steps"] == 6 and cfg["num_blocks"] == 2
    assert (straight / "cache" / "train_64x48.pt").is_file()

    with stop_after_save():
        tb.main([*args, "--out", str(interrupted)])
    assert load_checkpoint(interrupted / common.CHECKPOINT)["train_state"]["step"] == 3
    assert tb.main([*args, "--out", str(interrupted), "--resume"]) == 0
    assert "resumed at step 3" in (interrupted / "train.log").read_text()
    a, preds = check_resumed_run(straight, interrupted, "film", 6)
    assert all(p.prediction in a["vocabularies"]["answer"] for ps in preds.values() for p in ps)
