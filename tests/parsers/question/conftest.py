"""Fixtures of the question-parser tests: a small generated dataset on disk (no rendering)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch


@pytest.fixture(scope="session")
def qp_data(tmp_path_factory, write_qa_split) -> Path:
    """ROOT/VARIANT with train (12 scenes) and val (4 scenes) splits of synthetic questions."""
    root = tmp_path_factory.mktemp("qp") / "mid"
    write_qa_split(root, "train", 12, seed=0)
    write_qa_split(root, "val", 4, seed=1, start=100)
    return root


@pytest.fixture(scope="session")
def tiny20(tmp_path_factory, qp_data) -> Path:
    """A variant whose train and val splits are the same 20 questions (for the overfitting test)."""
    root = tmp_path_factory.mktemp("qp20") / "mid"
    for sub in ("scenes", "questions"):
        (root / sub).mkdir(parents=True)
    qs = json.loads((qp_data / "questions" / "train_questions.json").read_text())["questions"][:20]
    scenes = (qp_data / "scenes" / "train_scenes.json").read_text()
    for split in ("train", "val"):
        (root / "questions" / f"{split}_questions.json").write_text(json.dumps({"questions": qs}))
        (root / "scenes" / f"{split}_scenes.json").write_text(scenes)
    return root


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """The tests run on one CPU thread (a training job may share the machine); session-scoped so
    that it is in place before the module-scoped training fixtures."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
