"""The study's declared design (``StudyConfig.design``, issue 77): the pieces its rule adds to the
plan, the heading their hours count under (``StudyConfig.headings``), and the report's provisional
verdicts until every declared piece is committed."""
from __future__ import annotations

import dataclasses

import pytest

from orchestration.study.settings.budget import budget, budget_markdown, heading_of, over_cap
from orchestration.study.settings.config import StudyConfig, StudyError
from orchestration.study.settings.pieces import design_names, design_only, study_pieces, training_variants
from orchestration.study.report.build import design_record, design_sentence

BASE = StudyConfig()
HEADING = "issue 77: the declared design"
DESIGN = dataclasses.replace(
    BASE, seed_pieces=("easy-seed1-modular",),
    design={"modular": {"seeds": (0, 1)}, "mdetr": {"seeds": (0, 1), "variants": ("mid", "rd+")}},
    headings={HEADING: {"cap_hours": 1.0, "design": True}, "issue 76": {"cap_hours": 5.0, "groups": ("seeing",)}})


def test_the_design_adds_every_piece_its_rule_names_the_plan_lacks_seed_by_seed_after_the_seed_pieces():
    names = design_only(DESIGN)
    # every training variant of the factors for modular, mid and rd+ for mDETR; the seed piece
    # already declared is not named again, mid-seed1-modular (reduced: the executors on mid) is widened
    want = [f"{v}-seed1-modular" for v in training_variants(DESIGN) if v != "easy"] + ["mid-seed1-mdetr",
                                                                                         "rd+-seed1-mdetr"]
    assert names == want
    plan = study_pieces(DESIGN)
    base = [p.name for p in study_pieces(BASE)]
    assert [p.name for p in plan] == base + ["easy-seed1-modular"] + [n for n in names if n not in base]
    zero = {p.name: p for p in plan if p.seed == 0}
    for p in plan:
        if p.name in names:
            z = zero[p.name.replace("-seed1-", "-seed0-")]
            assert (p.models, p.tests) == (z.models, z.tests)  # the widened mid-seed1-modular too


def test_a_design_that_names_a_piece_the_plan_lacks_or_a_malformed_entry_stops_before_any_work():
    with pytest.raises(StudyError, match=r"design\['mdetr'\]: the plan has no seed-0 piece of group 'mdetr' on easy"):
        study_pieces(dataclasses.replace(BASE, design={"mdetr": {"seeds": (0, 1), "variants": ("easy",)}}))
    with pytest.raises(StudyError, match=r"design\['film'\] must be"):
        design_names(study_pieces(BASE), dataclasses.replace(BASE, design={"film": {"seed": (1,)}}))


def test_each_piece_counts_under_the_first_heading_that_claims_it(tmp_path):
    plan = {p.name: p for p in study_pieces(DESIGN)}
    assert heading_of(plan["slt-seed1-modular"], DESIGN) == HEADING
    assert heading_of(plan["mid-seed0-seeing"], DESIGN) == "issue 76"
    assert heading_of(plan["easy-seed1-modular"], DESIGN) == "reruns"  # a seed piece: issue 64's cap
    assert heading_of(plan["mid-seed0-film"], DESIGN) == "study"
    b = budget(tmp_path, DESIGN)
    h = b["headings"][HEADING]
    assert [r["piece"] for r in h["pending"]] == design_only(DESIGN) and h["spent_hours"] == 0.0
    assert all(r["piece"] not in design_only(DESIGN) for r in b["pending"])
    assert f"{HEADING}: its own cap of 1 hours, 0.0 spent; nothing committed yet." in budget_markdown(b)


def test_a_heading_piece_is_held_to_its_headings_cap(tmp_path):
    plan = {p.name: p for p in study_pieces(DESIGN)}
    b = budget(tmp_path, DESIGN)
    b["headings"][HEADING]["spent_hours"] = 1.0
    assert over_cap(tmp_path, plan["slt-seed1-modular"], DESIGN, b=b) == f"{HEADING}'s pieces took 1.0 h, its 1-hour cap"
    assert over_cap(tmp_path, plan["mid-seed0-film"], DESIGN, b=b) is None


def test_verdicts_are_provisional_while_a_declared_piece_is_pending():
    b = {"pending": [{"piece": "a"}], "reruns": {"pending": []}, "headings": {HEADING: {"pending": [{"piece": "b"}]}}}
    d = design_record(b, DESIGN)
    assert d == {"complete": False, "pending": ["a", "b"], "seed_pieces": 1, "design_pieces": len(design_only(DESIGN))}
    text = design_sentence({"design": d})
    assert "chosen by how near their findings' intervals lay to 0" in text
    assert "Every verdict is provisional until the declared design is complete." in text
    done = design_record({"pending": []}, BASE)
    assert done["complete"] and design_sentence({"design": done}) == ("Every verdict is final: the declared design "
                                                                       "is complete.")


def test_a_model_no_piece_has_trained_is_projected_with_its_analogs_training_step():
    from orchestration.study.settings.budget import _expected_steps
    from orchestration.study.settings.pieces import Piece

    piece = Piece("easy", 0, "regionmac", ("regionmac-trace",), ("easy", "mid", "hard"))
    measured = ["model_objmac-trace", "model_nscl", "parsers (shared scene parser)", "test"]
    keys = _expected_steps(piece, BASE, measured)
    assert "model_objmac-trace" in keys and "model_nscl" not in keys  # its analog's step, no other model's
    assert _expected_steps(piece, BASE, ["model_regionmac-trace", "model_objmac-trace"])[0] == "model_regionmac-trace"


def test_the_readme_says_whether_every_declared_piece_is_committed_and_the_table_has_a_column_per_group_that_sees():
    from orchestration.study.report.findings import seeing_sides
    from orchestration.study.report.publish import findings_table, plan_sentence

    few = {"pieces": [{}] * 3, "budget": {"pending": [{"piece": "a"}], "headings": {HEADING: {"pending": [
        {"piece": "b"}]}}}}
    assert plan_sentence(few) == "3 pieces committed; 2 declared pieces not run yet: `a`, `b`."
    many = {"pieces": [], "budget": {"pending": [{"piece": str(i)} for i in range(7)]}}
    assert plan_sentence(many) == '0 pieces committed; 7 declared pieces not run yet (report.md, "Budget", lists them).'
    assert plan_sentence({"pieces": [{}], "budget": {"pending": []}}) == \
        "Every declared piece of the plan is committed (1 piece)."
    sides = seeing_sides({"seeing": ("objmac-trace",), "regionmac": ("regionmac-trace",)})
    row = {"paper": "p", "ours": "o", "status": "reproduced", "qualifier": "", "rests_on": "r",
           "seeing": {"regionmac": {"status": "pending", "qualifier": ""}}}
    table = findings_table({"findings": [row], "seeing": sides})
    assert table[0].count("|") == 7 and table[2] == "| p | o | **reproduced** | r | — | **pending** |"


def test_the_seeds_each_factor_pools_are_generated_from_the_report():
    from orchestration.study.report.publish import factor_seeds_lines

    report = {"factors": {"visual": {"models": {"nscl": {"rd": 0.1, "seeds": [0, 1, 2]}, "film": {"rd": 0.1,
                                                                                                   "seeds": [0, 1]},
                                                "mdetr": {"rd": None}, "objmac-trace": {"rd": 0.1}}},
                          "distribution": {"models": {"nsvqa": {"rd": 0.3}}}}}
    assert factor_seeds_lines(report) == [
        "- The visual factor's RDs pool: nscl seeds 0–2; film seeds 0, 1; objmac-trace seed 0.",
        "- The distribution factor's RDs pool: nsvqa seed 0."]
