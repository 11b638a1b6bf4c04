"""The perception lever table (``results/perception_levers/run_levers.py``, issue 81): docs/perception.md
quotes ``levers.json`` through its generated block, and a table rebuilt elsewhere keeps only the
committed rows measured on a detector read here."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def levers():
    spec = importlib.util.spec_from_file_location("run_levers", ROOT / "results/perception_levers/run_levers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_perception_doc_quotes_the_committed_lever_table(levers):
    record = json.loads((levers.HERE / "levers.json").read_text())
    text = (levers.DOCS / "perception.md").read_text()
    begin, end = levers.DOC_MARKERS
    block = text.split(begin + "\n", 1)[1].split("\n" + end, 1)[0]
    assert block == "\n".join(levers.markdown(record))
    assert f"`{record['chosen']}`" in block


def _row(lever: str, sha: str | None, pnsvqa: float) -> dict:
    return {"lever": lever, "detector_sha256": sha, "pnsvqa_exact_objects": pnsvqa}


def test_a_committed_row_stays_only_where_a_run_here_read_its_detector(levers, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(levers, "HERE", tmp_path)
    (tmp_path / "levers.json").write_text(json.dumps({
        "val": [_row("det", "aaa", 0.8), _row("head-e2e", "aaa", 0.85), _row("head-e2e-p3", "bbb", 0.9),
                _row("head-e2e-p3-s8", None, 0.95)],
        "test_of_chosen": _row("head-e2e-p3-s8", None, 0.9)}))
    kept, test = levers._committed([_row("det", "aaa", 0.81)])
    assert [r["lever"] for r in kept] == ["head-e2e"]  # det is measured here again: its new row wins
    said = capsys.readouterr().out
    assert "'head-e2e-p3' dropped" in said and "'head-e2e-p3-s8' dropped" in said and "not recorded" in said
    assert test["lever"] == "head-e2e-p3-s8"
