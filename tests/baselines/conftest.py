"""Fixtures of the baselines tests: one CPU thread per module, the shared tiny dataset as ``root``
(tests only read it; runs go to their own ``tmp_path``), interrupting a training run, and checking
that a resumed run ends like one trained straight."""
from __future__ import annotations

import json

import pytest
import torch

from nsvqa.artifacts.predictions import read_predictions
from nsvqa.training.checkpoint import load_checkpoint


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def root(tiny_root):
    """The shared tiny dataset (tests/conftest.py ``tiny_root``)."""
    return tiny_root


class StopAfterSave(Exception):
    """Raised by :func:`stop_after_save` right after the chosen checkpoint is written."""


@pytest.fixture
def stop_after_save(monkeypatch):
    """``with stop_after_save(module=classifier, at=None): train...``: inside it, training stops
    (StopAfterSave, expected) right after ``module._save`` writes the checkpoint of step ``at``
    (None: the first checkpoint). Every baseline's ``_save`` takes the train state as its
    second-to-last argument."""
    from contextlib import contextmanager

    from baselines import classifier  # train_classifier's _save

    @contextmanager
    def interrupted(module=classifier, at=None):
        real = module._save

        def save_then_stop(*a, **k):
            real(*a, **k)
            if at is None or a[-2]["step"] == at:
                raise StopAfterSave

        monkeypatch.setattr(module, "_save", save_then_stop)
        try:
            with pytest.raises(StopAfterSave):
                yield
        finally:
            monkeypatch.setattr(module, "_save", real)

    return interrupted


@pytest.fixture
def check_resumed_run(load_script, tmp_path):
    """``check_resumed_run(straight, interrupted, model, steps)``: the run directory ``interrupted``
    (stopped and resumed) ends like ``straight`` (trained in one go) of the same ``train_baseline``
    command, which predicted on ``mid`` and ``hard``: both checkpoints at step ``steps`` with the same
    weights, the same predictions files (40 questions each, probabilities in [0, 1]), which
    ``evaluate_rd`` reads as the cells (model, mid, mid) and (model, mid, hard). Returns the straight
    run's checkpoint and the interrupted run's predictions, by test variant."""
    def check(straight, interrupted, model: str, steps: int):
        a = load_checkpoint(straight / "baseline.pt", kind=f"baseline_{model}")
        b = load_checkpoint(interrupted / "baseline.pt", kind=f"baseline_{model}")
        assert a["train_state"]["step"] == b["train_state"]["step"] == steps
        assert a["state_dict"].keys() == b["state_dict"].keys()
        assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
        preds = {}
        for test in ("hard", "mid"):
            name = f"predictions/{model}__train-mid__test-{test}.jsonl"
            assert (straight / name).read_bytes() == (interrupted / name).read_bytes()
            preds[test] = read_predictions(interrupted / name)
            assert len(preds[test]) == 40 and all(0.0 <= p.probability <= 1.0 for p in preds[test])
        rc = load_script("evaluate_rd").main(["--runs", str(interrupted), "--out", str(tmp_path / "rep"),
                                              "--allow-partial-rd", "--no-plots"])
        assert rc == 0
        rep = json.loads((tmp_path / "rep" / "report.json").read_text())
        assert {(c["model"], c["train"], c["test"]) for c in rep["cells"]} == {(model, "mid", "mid"),
                                                                                (model, "mid", "hard")}
        return a, preds

    return check
