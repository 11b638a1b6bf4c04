"""Every command that takes ``--device`` defaults to ``auto`` (CUDA when present, else the CPU;
:func:`nsvqa.config.resolve_device`), the config-built options included."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch

from benchmarks import bench_baselines, bench_scene_parser
from nsvqa.config import resolve_device
from orchestration.training_args import add_training_args

REPO = Path(__file__).resolve().parents[2]
#: every script with a parser: its own, or its command's (orchestration/cli/, nsvqa/cli/; the script a shim)
SCRIPTS = sorted(p.stem for p in (REPO / "scripts").glob("*.py")
                 if any("def get_args_parser" in f.read_text() for f in (p, REPO / "orchestration" / "cli" / p.name,
                                                                         REPO / "nsvqa" / "cli" / p.name) if f.is_file()))


def _device_option(parser: argparse.ArgumentParser) -> argparse.Action | None:
    return next((a for a in parser._actions if "--device" in a.option_strings), None)


def _parsers(load_script):
    for name in SCRIPTS:
        yield f"scripts/{name}.py", load_script(name).get_args_parser()
    for mod in (bench_baselines, bench_scene_parser):
        yield mod.__name__, mod.get_args_parser()
    p = argparse.ArgumentParser()
    add_training_args(p)
    yield "orchestration.training_args", p


def test_every_device_option_defaults_to_auto(load_script, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    found = []
    for where, parser in _parsers(load_script):
        action = _device_option(parser)
        if action is None:
            continue
        found.append(where)
        if action.default is None:  # a config field's option: None is the config's own default
            assert "auto" in action.help, f"{where}: --device's help does not say its default, auto"
            continue
        assert action.default == "auto", f"{where}: --device defaults to {action.default!r}"
        if action.type is not None:  # resolved while parsing
            assert action.type is resolve_device, where
    assert {"scripts/train_baseline.py", "scripts/parse_questions.py", "scripts/run_study.py",
            "scripts/train_scene_parser.py", "scripts/train_question_parser.py",
            "orchestration.training_args"} <= set(found)


@pytest.mark.parametrize("cuda, want", [(False, "cpu"), (True, "cuda")])
def test_a_parsed_device_is_resolved(cuda, want, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    parser = bench_baselines.get_args_parser()
    assert parser.parse_args([]).device == want
    assert parser.parse_args(["--device", "cpu"]).device == "cpu"
