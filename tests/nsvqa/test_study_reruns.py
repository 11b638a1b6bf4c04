"""The staged reruns (issue 64) counted under their own heading of the budget, apart from the cap."""
from __future__ import annotations

import json

import pytest

from orchestration.study.settings.config import StudyConfig, StudyError
from orchestration.study.settings.budget import RERUN_CAP_HOURS, budget, budget_markdown, rerun_hours

#: the study without the further seeds it declares (those are pending under the reruns)
BASE = StudyConfig()


def test_a_staged_rerun_counts_under_its_own_heading(tmp_path):
    assert budget(tmp_path, BASE).get("reruns") is None  # nothing staged: no heading
    piece = tmp_path / "reruns" / "pieces" / "mid-seed0-modular"
    piece.mkdir(parents=True)
    (piece / "piece.json").write_text(json.dumps({"seconds": {"total": 5400.0}}))
    b = budget(tmp_path, BASE)
    assert b["spent_hours"] == 0 and b["reruns"] == {"cap_hours": RERUN_CAP_HOURS, "spent_hours": 1.5,
                                                      "pieces": {"mid-seed0-modular": 1.5}}
    text = budget_markdown(b)
    assert "| mid-seed0-modular | 1.5 |" in text and f"**1.5** of {RERUN_CAP_HOURS:g}" in text
    (piece / "piece.json").write_text("{}")
    with pytest.raises(StudyError, match=r"piece.json: no readable field seconds.total"):
        rerun_hours(tmp_path)


def test_a_promoted_rerun_counts_as_a_rerun_and_the_study_keeps_the_replaced_hours(tmp_path):
    piece = tmp_path / "pieces" / "mid-seed0-modular"
    piece.mkdir(parents=True)
    (piece / "piece.json").write_text(json.dumps({"seconds": {"total": 5400.0}}))
    assert budget(tmp_path, BASE)["spent_hours"] == 1.5  # not promoted: a study piece
    (tmp_path / "reruns").mkdir()
    (tmp_path / "reruns" / "promoted.json").write_text(json.dumps(
        {"commit": "0" * 40, "pieces": {"mid-seed0-modular": {"old_seconds": 7200.0}}}))
    b = budget(tmp_path, BASE)
    assert b["spent_hours"] == 2.0 and b["spent_hours_by_group"] == {"modular": 2.0}
    assert b["reruns"]["pieces"] == {"mid-seed0-modular": 1.5} and b["done"] == 1
    (tmp_path / "reruns" / "promoted.json").write_text(json.dumps({"pieces": {"mid-seed0-modular": {}}}))
    with pytest.raises(StudyError, match=r"promoted.json: not a record of promoted reruns"):
        budget(tmp_path, BASE)


def test_a_piece_that_parsed_otherwise_than_the_scene_parser_it_borrows_is_refused(tmp_path):
    import gzip
    import re

    from orchestration.study.report.build import build_study_report, check_shared_scene_parsers

    def parses(piece, split, scenes, header):
        path = tmp_path / "pieces" / piece / "parses" / split / "likelihoods.json.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(json.dumps({"version": 1, **header, "scenes": scenes}).encode()))
        return path

    # rd+ borrows mid's scene parser; its parses of mid and rd+ equal mid's, though the headers differ
    for split in ("mid", "rd+"):
        parses("mid-seed0-modular", split, [{"image_index": 0, "x": 1}], {"provenance": "a"})
        parses("rd+-seed0-modular", split, [{"image_index": 0, "x": 1}], {"provenance": "b"})
    parses("rd+-seed0-modular", "rd-", [{"image_index": 0, "x": 2}], {})  # the lender never parsed it
    parses("mid-seed1-modular", "mid", [{"image_index": 0, "x": 3}], {})  # another seed lends nothing
    assert check_shared_scene_parsers(tmp_path) == 2
    mine = parses("rd+-seed0-modular", "rd+", [{"image_index": 0, "x": 1.5}], {})
    with pytest.raises(StudyError, match=re.escape(f"{mine}: rd+-seed0-modular borrows the scene parser of "
                                                   f"mid-seed0-modular, but its parses of rd+ differ from ")):
        check_shared_scene_parsers(tmp_path)
    with pytest.raises(StudyError, match="do not share a perception"):
        build_study_report(tmp_path, plots=False)  # before any work
    mine.unlink()
    # the pieces that record the weights of the scene parser they read: one folder, one set of weights
    def record(piece, weights):
        path = tmp_path / "pieces" / piece / "piece.json"
        path.write_text(json.dumps({"scene_parser_weights": weights}))
        return path

    record("mid-seed0-modular", {"detector": "d", "attributes": "a"})
    record("mid-seed1-modular", {"detector": "d1", "attributes": "a1"})  # another seed: another folder
    record("rd+-seed0-modular", {"detector": "d", "attributes": "a"})  # borrows mid's
    assert check_shared_scene_parsers(tmp_path) == 2
    seeing = tmp_path / "pieces" / "mid-seed0-seeing"
    seeing.mkdir()
    assert check_shared_scene_parsers(tmp_path) == 2  # a piece without the record is not compared
    theirs = record("mid-seed0-seeing", {"detector": "d", "attributes": "a2"})  # trained it again
    with pytest.raises(StudyError, match=re.escape(f"{theirs}: mid-seed0-seeing read the scene parser of mid with other "
                                                   f"weights than {tmp_path / 'pieces' / 'mid-seed0-modular'}")):
        check_shared_scene_parsers(tmp_path)
