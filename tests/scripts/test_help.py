"""``--help`` of every script: each option says what it does, and its default through the one
help formatter (:class:`nsvqa.config.HelpFormatter`); choices come from the code's tables."""
from __future__ import annotations

import argparse

import pytest

from nsvqa.config import HelpFormatter

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: every script with a parser: its own, or its command's (orchestration/cli/, nsvqa/cli/; the script a shim)
SCRIPTS = sorted(p.stem for p in (REPO / "scripts").glob("*.py")
                 if any("def get_args_parser" in f.read_text() for f in (p, REPO / "orchestration" / "cli" / p.name,
                                                                         REPO / "nsvqa" / "cli" / p.name) if f.is_file()))


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_option_says_what_it_does_and_its_default(load_script, name):
    parser = load_script(name).get_args_parser()
    assert issubclass(parser.formatter_class, HelpFormatter), f"{name}: parser without nsvqa.config.HelpFormatter"
    missing = [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
               if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS and not (a.help or "").strip()]
    assert not missing, f"scripts/{name}.py: options without help: {missing}"
    formatter = parser.formatter_class(parser.prog)
    for a in parser._actions:
        if a.option_strings and a.default not in (None, False, argparse.SUPPRESS) and a.help != argparse.SUPPRESS:
            assert "default" in formatter._get_help_string(a), f"scripts/{name}.py: {a.option_strings[0]}'s default not shown"


def test_profile_choices_come_from_the_profile_tables(load_script):
    from nsvqa.models import PROFILE_NAMES

    for name in ("train_variant", "run_factor", "train_baseline"):
        help_text = " ".join(load_script(name).get_args_parser().format_help().split())
        assert "{" + ",".join(PROFILE_NAMES) + "}" in help_text, name
    assert "demo" in PROFILE_NAMES
