"""Fixtures of the baselines tests: one CPU thread per module, and one tiny rendered dataset.

The dataset (64x48 images, 20 questions each): ``mid`` train 4 / val 2 / test 2 images and
``hard`` test 2 images; tests only read it (runs go to their own ``tmp_path``).
"""
from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def root(tmp_path_factory, require_renderer):
    from nsvqa.generation.dataset import generate_split, job_for

    root = tmp_path_factory.mktemp("data")
    for variant, split, n, seed in (("mid", "train", 4, 3), ("mid", "val", 2, 4), ("mid", "test", 2, 5),
                                    ("hard", "test", 2, 6)):
        generate_split(job_for(root, variant, split, n, seed, 64, 48), progress=False)
    return root


class StopAfterSave(Exception):
    """Raised by :func:`stop_after_save` right after the chosen checkpoint is written."""


@pytest.fixture
def stop_after_save(monkeypatch):
    """``with stop_after_save(module=common, at=None): train...``: inside it, training stops
    (StopAfterSave, expected) right after ``module._save`` writes the checkpoint of step ``at``
    (None: the first checkpoint). Every baseline's ``_save`` takes the train state as its
    second-to-last argument."""
    from contextlib import contextmanager

    from baselines import common

    @contextmanager
    def interrupted(module=common, at=None):
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
