"""Configs without torch: importing a config module of ``nsvqa`` or ``parsers`` loads no torch (the
networks build themselves from a config, :func:`parsers.scene.detector.from_config`,
:meth:`parsers.scene.attribute_head.AttributeHead.from_config`,
:meth:`parsers.question.seq2seq.Seq2Seq.from_config`; the tables a config validates against live in
:mod:`parsers.choices`), and building the parser of a command that trains (what ``--help`` runs)
loads none either: the commands import torch after parsing, where it is not yet loaded.

Each import runs in a fresh interpreter, so that nothing another test imported counts.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: every module of nsvqa and parsers that holds a run config or the tables a config checks
CONFIG_MODULES = ("nsvqa.config", "nsvqa.models", "nsvqa.training.scene_config", "nsvqa.training.question_config",
                  "parsers.choices")
#: the commands whose --help used to load torch (issue 79): their parsers, built without it
COMMANDS = ("run_factor", "run_study", "train_baseline", "train_scene_parser", "train_variant")


def _loads_torch(code: str) -> bool:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint('torch' in sys.modules)"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    return out[-1] == "True"


@pytest.mark.parametrize("module", CONFIG_MODULES)
def test_a_config_module_loads_no_torch(module):
    assert not _loads_torch(f"import {module}"), f"import {module} loads torch"


def test_the_scene_parser_config_builds_and_checks_without_torch():
    # a named device: "auto" asks torch whether there is CUDA (nsvqa.config.resolve_device)
    code = ("from nsvqa.training.scene_config import SceneParserConfig\n"
            "cfg = SceneParserConfig.from_profile('d', 'tiny', device='cpu')\n"
            "assert SceneParserConfig.from_dict(cfg.to_dict()) == cfg\n"
            "try:\n    SceneParserConfig.from_profile('d', 'tiny', device='cpu', det_backbone='vgg')\n"
            "except ValueError as e:\n    assert 'det_backbone' in str(e)\n"
            "else:\n    raise AssertionError('vgg accepted')")
    assert not _loads_torch(code)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_training_command_builds_its_parser_without_torch(command):
    code = f"from orchestration.cli import {command}\n{command}.get_args_parser().format_help()"
    assert not _loads_torch(code), f"orchestration.cli.{command}: building the parser loads torch"
