"""Fixtures of the baselines tests: one CPU thread per module, the shared tiny dataset as ``root``
(tests only read it; runs go to their own ``tmp_path``), and interrupting a training run."""
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
