"""The rule that lists the findings more training seeds would decide, and the pieces it asks for."""
from orchestration.study.report.seeds import listed, more_seeds, more_seeds_markdown, piece_of

PIECES = [{"name": "easy-seed0-modular", "models": ["nsvqa", "pnsvqa"]},
          {"name": "hard-seed0-modular", "models": ["nsvqa", "pnsvqa"]},
          {"name": "easy-seed0-film", "models": ["lstm", "film"]},
          {"name": "hard-seed0-film", "models": ["lstm", "film"]},
          {"name": "easy-seed1-modular", "models": ["nsvqa", "pnsvqa"]},
          {"name": "hard-seed1-modular", "models": ["nsvqa"]}]
CELLS = [["easy", "nsvqa"], ["hard", "nsvqa"], ["easy", "film"], ["hard", "film"]]


def row(key, intervals, seeds=1, status="reproduced", cells=None, **basis):
    return {"key": key, "status": status, "intervals": intervals, "side": 1, "level": False,
            "basis": {"seeds": seeds, "cells": cells if cells is not None else [CELLS] * len(intervals), **basis}}


def test_knife_edge_interval_is_listed_with_its_reason():
    got = listed(row("visual", [[0.004, 0.05], [0.08, 0.12]]), k=10)
    assert got is not None and got["key"] == "visual"
    assert [iv["interval"] for iv in got["intervals"]] == [[0.004, 0.05]]  # the far one is not
    assert "a bound within 1.5 points of 0" in got["intervals"][0]["why"]


def test_clear_interval_several_seeds_and_pending_are_not_listed():
    assert listed(row("far", [[0.05, 0.09]]), k=1) is None
    assert listed(row("seeds", [[0.001, 0.03]], seeds=3), k=10) is None
    assert listed(row("pending", [], status="pending"), k=10) is None
    assert listed(row("counts", [[0.001, 0.03]], counts=True), k=10) is None


def test_holding_at_95_only_is_listed_even_far_from_zero():
    ci = [0.02, 0.10]  # clear of 0 at 95%; widened over 60 intervals it is not (half-width x ~1.7)
    got = listed(row("corr", [ci]), k=60)
    assert got is not None and got["intervals"][0]["why"] == ["clear of 0 at 95% only"]
    assert listed(row("corr", [ci]), k=1) is None  # no correction: nothing to lose


def test_pieces_most_decisive_first_and_done_marked():
    rows = [row("a", [[0.001, 0.02]]),
            row("b", [[0.002, 0.03]], cells=[[["easy", "nsvqa"], ["easy", "film"]]])]
    rec = more_seeds(rows, {}, PIECES, k=4)
    names = [p["piece"] for p in rec["pieces"]]
    # seed 1 of every piece before seed 2 of any (a factor pools a seed only once every training
    # variant has it); within a seed easy's pieces (two intervals) before hard's (one)
    assert names[:2] == ["easy-seed1-film", "easy-seed1-modular"]
    assert set(names[2:4]) == {"hard-seed1-film", "hard-seed1-modular"}
    assert names[4:6] == ["easy-seed2-film", "easy-seed2-modular"]
    assert set(names[6:]) == {"hard-seed2-film", "hard-seed2-modular"}
    done = {p["piece"]: p["done"] for p in rec["pieces"]}
    assert (done["easy-seed1-modular"], done["easy-seed2-modular"]) == ("run", "no")
    assert done["hard-seed1-modular"] == "partly"  # committed without pnsvqa: it cannot stand in
    assert rec["pieces"][0]["findings"] == ["a", "b"]


def test_seeing_rows_count_only_when_judged():
    judged = {**row("v", [[0.001, 0.02]]), "rests_on": "seeing objmac-trace"}
    unjudged = {**row("w", [[0.001, 0.02]]), "rests_on": "—"}
    rec = more_seeds([], {"seeing": [judged, unjudged]}, PIECES, k=2)
    assert [(f["key"], f["against"]) for f in rec["findings"]] == [("v", "seeing")]


def test_piece_of_and_markdown():
    assert piece_of(PIECES, "hard", "film") == "hard-seed0-film"
    assert piece_of(PIECES, "mid", "film") is None
    md = more_seeds_markdown(more_seeds([row("a", [[0.001, 0.02]])], {}, PIECES, k=1))
    assert any(line.startswith("| a | paper-recipe | reproduced | [+0.1, +2.0]") for line in md)
    assert [line for line in md if line.startswith("| a |")][0].endswith(
        "| easy-seed0-film, easy-seed0-modular, hard-seed0-film, hard-seed0-modular |")
    bare = row("b", [[0.001, 0.02]], cells=[[]])  # an interval without cells, as a check's own runs give
    assert [line for line in more_seeds_markdown(more_seeds([bare], {}, PIECES, k=1))
            if line.startswith("| b |")][0].endswith("| no study piece |")
    assert more_seeds_markdown({"findings": []})[0].startswith("No finding")
