"""``device="auto"``, the default of every config and command that takes a device: CUDA where torch
sees one, else the CPU, resolved in one place (:func:`nsvqa.config.resolve_device`)."""
from __future__ import annotations

import sys

import pytest
import torch

from baselines.lstm import LSTMConfig
from nsvqa.config import AUTO_DEVICE, resolve_device
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.training.scene_config import SceneParserConfig
from orchestration.train_spec import TrainSpec
from orchestration.study.running.launch import LaunchOptions


@pytest.fixture
def cuda(monkeypatch):
    """A machine where torch sees a CUDA device."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_auto_is_this_machines_device():
    assert resolve_device() == resolve_device(AUTO_DEVICE) == ("cuda" if torch.cuda.is_available() else "cpu")


def test_auto_is_the_cpu_without_cuda(no_cuda):
    assert resolve_device("auto") == "cpu"


def test_auto_is_cuda_where_torch_sees_it(cuda):
    assert resolve_device("auto") == "cuda"


def test_auto_is_the_cpu_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ModuleNotFoundError
    assert resolve_device("auto") == "cpu"


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "mps"])
def test_a_named_device_is_kept(cuda, device):
    assert resolve_device(device) == device


@pytest.mark.parametrize("make", [
    lambda **kw: SceneParserConfig(data="d", **kw),
    lambda **kw: QuestionParserConfig.from_profile("d", "tiny", **kw),
    lambda **kw: LSTMConfig.from_profile("d", "tiny", **kw),
])
def test_configs_default_to_auto_and_save_the_device_they_resolved(make, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = make()
    assert cfg.device == "cpu" and cfg.to_dict()["device"] == "cpu"
    assert type(cfg).from_dict(cfg.to_dict()) == cfg
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert make().device == "cuda" and make(device="auto").device == "cuda"
    assert make(device="cpu").device == "cpu"  # a named device stays, CUDA or not
    assert type(cfg).from_dict(cfg.to_dict()).device == "cpu"  # a saved config keeps its device


def test_a_train_spec_resolves_auto(cuda):
    assert TrainSpec().device == "cuda" and TrainSpec(device="cpu").device == "cpu"


def test_the_launcher_resolves_auto_where_the_jobs_run(no_cuda):
    assert LaunchOptions().device == "cpu"  # local: this machine
    # slurm: the jobs' nodes, asked for by --gpus-per-node, not the machine that submits
    assert LaunchOptions(launcher="slurm", gpus_per_node=2).device == "cuda"
    assert LaunchOptions(launcher="slurm").device == "cpu"
    assert LaunchOptions(launcher="slurm", device="cpu", gpus_per_node=2).device == "cpu"


def test_the_local_launcher_uses_this_machines_cuda(cuda):
    assert LaunchOptions(launcher="local").device == "cuda"
