"""The perception schedule check: the search's rule, its record and budget row, its finding on
hand-made predictions, and the check end to end on tiny data."""
from __future__ import annotations

import dataclasses
import json
import os
import time

import pytest

from nsvqa.artifacts.predictions import CellKey, Prediction
from nsvqa.generation.suite import SuiteProfile
from orchestration.study.settings.config import STUDY, StudyConfig, StudyError
from orchestration.study.settings.perception_record import (flat_tail, parse_perception_label, perception_label,
                                                            perception_seconds, perception_summary, plateau_text,
                                                            record_search, schedule_search)


def test_the_search_doubles_the_schedule_until_no_head_rises():
    base = {"easy": 0.80, "hard": 0.70}
    assert schedule_search({3: base}, 3)["next"] == 6  # nothing tried yet
    # one head still rises by half a point or more: the next schedule
    got = schedule_search({3: base, 6: {"easy": 0.85, "hard": 0.702}}, 3)
    assert (got["next"], got["tried"], got["stopped"], got["chosen"]) == (12, [6], None, None)
    # neither rises by 0.5 points at 12: a plateau; the chosen schedule has the highest mean on val
    got = schedule_search({3: base, 6: {"easy": 0.85, "hard": 0.702}, 12: {"easy": 0.853, "hard": 0.704}}, 3)
    assert (got["next"], got["tried"], got["stopped"], got["chosen"]) == (None, [6, 12], "plateau", 12)
    assert got["mean"] == pytest.approx({3: 0.75, 6: 0.776, 12: 0.7785})
    # a fall is no rise either, and a tie goes to fewer epochs
    flat = {3: {"easy": 0.5, "hard": 0.25}, 6: {"easy": 0.75, "hard": 0.5},
            12: {"easy": 0.75390625, "hard": 0.49609375}}
    got = schedule_search(flat, 3)
    assert (got["stopped"], got["chosen"]) == ("plateau", 6) and got["mean"][6] == got["mean"][12]
    # still rising at the last schedule: stopped by the cap
    rising = {e: {"easy": 0.5 + e / 100, "hard": 0.4 + e / 100} for e in (3, 6, 12, 24, 48)}
    got = schedule_search(rising, 3)
    assert (got["stopped"], got["tried"], got["chosen"]) == ("cap", [6, 12, 24, 48], 48)
    # the schedules and the threshold are the caller's
    got = schedule_search({1: {"mid": 0.5}, 2: {"mid": 0.51}}, 1, schedules=(2, 4), rise=0.02)
    assert (got["stopped"], got["chosen"]) == ("plateau", 2)
    with pytest.raises(ValueError, match=r"schedules \[2, 2\]: one or more, increasing, each above the study's 1"):
        schedule_search({1: {}}, 1, schedules=(2, 2))
    with pytest.raises(ValueError, match="6 epochs: no val metric for hard"):
        schedule_search({3: base, 6: {"easy": 0.9}}, 3)


def test_the_schedule_is_chosen_on_end_to_end_val_accuracy_not_on_the_metric_the_search_stops_on():
    # material rises to the cap, so every schedule is tried; end to end, 12 epochs serve the executors best
    material = {3: {"easy": 0.95, "mid": 0.895, "hard": 0.79}, 6: {"easy": 0.97, "mid": 0.929, "hard": 0.83},
                12: {"easy": 0.976, "mid": 0.931, "hard": 0.834}, 24: {"easy": 0.968, "mid": 0.939, "hard": 0.816},
                48: {"easy": 0.972, "mid": 0.943, "hard": 0.84}}
    e2e = {3: {"easy": 0.915, "mid": 0.885, "hard": 0.822}, 6: {"easy": 0.943, "mid": 0.915, "hard": 0.852},
           12: {"easy": 0.933, "mid": 0.908, "hard": 0.875}, 24: {"easy": 0.775, "mid": 0.765, "hard": 0.845},
           48: {"easy": 0.788, "mid": 0.89, "hard": 0.717}}
    on_material = schedule_search(material, 3)
    got = schedule_search(material, 3, select=e2e)
    assert (on_material["stopped"], on_material["chosen"]) == ("cap", 48)
    assert (got["stopped"], got["tried"], got["chosen"]) == ("cap", [6, 12, 24, 48], 12)  # the stop is material's
    assert got["mean"] == on_material["mean"] and got["select_mean"][12] == pytest.approx(0.905333, abs=1e-6)
    # while the search runs the leader is the selection's too
    assert schedule_search({e: material[e] for e in (3, 6, 12)}, 3, select=e2e)["leader"] == 12
    with pytest.raises(ValueError, match="12 epochs: no selection metric for hard"):
        schedule_search(material, 3, select={**e2e, 12: {"easy": 0.9, "mid": 0.9, "hard": None}})


def test_a_record_is_read_under_the_rule_in_force_whatever_its_own_search_chose():
    def head(material, e2e):
        return {"final": {"object.material": material, "e2e.pnsvqa.all": e2e}}

    record = {"metric": "object.material", "rise": 0.005, "base_epochs": 3, "schedules": [6, 12],
              "heads": {"easy": {"3": head(0.90, 0.80), "6": head(0.92, 0.85), "12": head(0.95, 0.83)},
                        "hard": {"3": head(0.70, 0.70), "6": head(0.75, 0.74), "12": head(0.78, 0.73)}},
              "search": {"tried": [6, 12], "stopped": "cap", "chosen": 12}}  # chosen on material, as before
    got = record_search(record)
    assert (got["tried"], got["stopped"], got["chosen"]) == ([6, 12], "cap", 6)
    s = perception_summary({**record, "runs": {}})
    assert (s["chosen"], s["recorded_chosen"], s["select"]) == (6, 12, "e2e.pnsvqa.all")
    assert s["select_mean"] == pytest.approx({"3": 0.75, "6": 0.795, "12": 0.78})
    # a record that declares another selection metric is read with it
    assert record_search({**record, "select": "object.material"})["chosen"] == 12
    # a search not over chooses nothing; no base head, no search
    assert record_search({**record, "schedules": [6, 12, 24]})["chosen"] is None
    assert record_search({**record, "heads": {"easy": {"6": head(0.9, 0.9)}}}) is None
    with pytest.raises(StudyError, match=r"6 epochs: no selection metric for hard \(heads.<variant>.<E>.final"):
        record_search({**record, "heads": {**record["heads"], "hard": {**record["heads"]["hard"],
                                                                       "6": {"final": {"object.material": 0.75}}}}})


def test_labels_name_the_schedule():
    assert perception_label("pnsvqa-exact+gtprog", 24) == "pnsvqa-exact+gtprog.24ep"
    assert parse_perception_label("pnsvqa-exact+gtprog.24ep") == ("pnsvqa-exact+gtprog", 24)
    assert parse_perception_label("pnsvqa.10x") is None and parse_perception_label("pnsvqa") is None


def _head(material, seconds=None, shape=0.9, e2e=None, val=None):
    return {"final": {"object.material": material, "object.shape": shape,
                      "e2e.pnsvqa.all": material if e2e is None else e2e},
            "val": val or [{"epoch": 1}], "seconds": seconds}


def test_the_record_states_each_plateau_and_counts_the_checks_hours(tmp_path):
    from orchestration.study.settings.budget import budget, budget_markdown
    from orchestration.study.report.perception import perception_markdown

    record = {"metric": "object.material", "rise": 0.005, "base_epochs": 3, "schedules": [6, 12],
              "heads": {"easy": {"3": _head(0.80), "6": _head(0.85, 600), "12": _head(0.852, 1200)},
                        "hard": {"3": _head(0.70), "6": _head(0.75, 600), "12": _head(0.78, 1200)}},
              "search": {"tried": [6, 12], "stopped": "cap", "chosen": 12},
              "runs": {"3": {"easy": {"seconds": 300}}, "12": {"easy": {"seconds": 900}}},
              "other_seconds": [{"seconds": 600, "what": "a stopped attempt"}]}
    assert plateau_text(record, "easy") == "at 6 epochs (12 adds +0.2 points)"
    assert plateau_text(record, "hard") == "still rising at 12 epochs"
    running = {**record, "search": {}, "heads": {**record["heads"], "hard": {"3": _head(0.70), "6": _head(0.75, 600)}}}
    assert plateau_text(running, "easy") == "at 6 epochs (12 adds +0.2 points)"  # while the search runs
    assert plateau_text(running, "hard") == "still rising at 6 epochs"
    # a rise that stops and resumes is no plateau; a head that falls back after its last rise has one
    resumed = {**running, "heads": {
        "mid": {"3": _head(0.895), "6": _head(0.929, 600), "12": _head(0.931, 1200), "24": _head(0.9395, 2400)},
        "easy": {"3": _head(0.95), "6": _head(0.970, 600), "12": _head(0.976, 1200), "24": _head(0.968, 2400)}}}
    assert plateau_text(resumed, "mid") == "still rising at 24 epochs"
    assert plateau_text(resumed, "easy") == "at 12 epochs (24 adds -0.8 points)"
    assert perception_seconds(record) == 600 + 1200 + 600 + 1200 + 300 + 900 + 600  # the study's heads: none
    # what ran at once shares the machine: its time counted once
    both = {**record, "heads": {v: {**hs, "12": {**hs["12"], "at_once": 2}} for v, hs in record["heads"].items()}}
    assert perception_seconds(both) == perception_seconds(record) - 1200
    s = perception_summary(record)
    assert s["variants"]["easy"]["val"]["12"] == {"object.material": 0.852, "object.shape": 0.9,
                                                  "e2e.pnsvqa.all": 0.852}
    assert s["variants"]["easy"]["hours"] == 0.83 and s["chosen"] == 12 and s["recorded_chosen"] is None
    md = "\n".join(perception_markdown({"perception_schedule": {**s, "base_runs": "the check's 3-epoch arm ..."}}))
    assert ("| easy | 80.0 | 85.0 | 85.2 | 80.0 | 85.0 | 85.2 | 90.0 → 90.0 | at 6 epochs (12 adds +0.2 points) "
            "| 0.8 |") in md
    assert "| mean | 75.0 | 80.0 | 81.6 | 75.0 | 80.0 | 81.6 | | | |" in md
    assert ("Search: stopped at the last schedule after 6, 12 epochs; chosen: 12 epochs (mean val e2e.pnsvqa.all "
            "81.6%, next 80.0% at 6; mean val object.material 81.6%)") in md
    assert "the one of the highest mean val e2e.pnsvqa.all (end-to-end" in md and " The check's 3-epoch arm ..." in md
    # its hours count under the reruns of issue 64, as a row of their own
    folder = tmp_path / "perception_schedule"
    folder.mkdir()
    (folder / "perception_schedule.json").write_text(json.dumps(record))
    b = budget(tmp_path, STUDY)
    assert b["spent_hours"] == 0 and b["reruns"]["checks"] == {"perception schedule check": 1.5}
    assert b["reruns"]["spent_hours"] == 1.5 and "| perception schedule check | 1.5 |" in budget_markdown(b)
    record["runs"]["3"]["easy"] = {}
    (folder / "perception_schedule.json").write_text(json.dumps(record))
    with pytest.raises(StudyError, match=r"perception_schedule.json: runs.3.easy: no number in field seconds"):
        budget(tmp_path, STUDY)


def test_a_head_whose_last_schedule_is_flat_per_epoch_is_not_still_rising():
    def curve(values):
        return [{"epoch": i + 1, "object.material": v} for i, v in enumerate(values)]

    # rises from 8 to 16 epochs (+2.4 points), but its 16-epoch curve holds within 0.5 points over its last 5
    flat = curve([0.70, 0.75, 0.78, 0.80, 0.81, 0.82, 0.82, 0.83, 0.836, 0.8355, 0.8375, 0.838, 0.84, 0.841, 0.839, 0.84])
    assert flat_tail(flat, "object.material", 0.005, 16) == 6
    assert flat_tail(flat, "object.material", 0.005, 17) == 0  # the curve does not end at the schedule
    assert flat_tail([], "object.material", 0.005, 16) == 0
    record = {"metric": "object.material", "rise": 0.005, "base_epochs": 4, "schedules": [8, 16],
              "heads": {"hard": {"4": _head(0.79), "8": _head(0.816), "16": _head(0.84, val=flat)}}}
    assert plateau_text(record, "hard") == ("flat over the last 6 of its 16 epochs (within 0.5 points; 16 adds "
                                            "+2.4 points over 8)")
    # flat over fewer than a quarter of its epochs: still rising
    short = curve([0.70 + 0.009 * i for i in range(14)] + [0.84, 0.841])
    record["heads"]["hard"]["16"] = _head(0.84, val=short)
    assert flat_tail(short, "object.material", 0.005, 16) == 2 and plateau_text(record, "hard") == "still rising at 16 epochs"
    # no per-epoch curve: the schedules alone say it
    record["heads"]["hard"]["16"] = _head(0.84)
    assert plateau_text(record, "hard") == "still rising at 16 epochs"


def test_the_epoch_metrics_come_from_the_heads_log(tmp_path):
    from orchestration.study.checks.perception_schedule import epoch_metrics

    log = tmp_path / "train.log"
    log.write_text("2026-12-05 09:29:06,278 attributes epoch 1 val object.material=0.5000 object.shape=0.8000\n"
                   "2026-12-05 09:29:14,978 attributes epoch 1 end-to-end val (60 images) nsvqa.all=0.3600\n"
                   "2026-12-05 09:30:31,116 attributes epoch 2 val object.material=0.6000 object.shape=0.8500\n"
                   "2026-12-05 09:31:00,000 attributes: resumed after epoch 2 from attributes.pt\n"
                   "2026-12-05 09:31:52,848 attributes epoch 2 val object.material=0.6100 object.shape=0.8600\n"
                   "2026-12-05 09:32:52,848 attributes epoch 3 val object.material=0.7000 object.shape=0.9000\n")
    assert epoch_metrics(log, 2) == [{"epoch": 1, "object.material": 0.5, "object.shape": 0.8},
                                     {"epoch": 2, "object.material": 0.61, "object.shape": 0.86}]
    assert epoch_metrics(tmp_path / "none.log", 3) == []


def _cells(label, inside, outside, n=300):
    """A model's predictions on the visual factor: ``inside`` right in domain, ``outside`` elsewhere."""
    out = {}
    for tr in ("easy", "mid", "hard"):
        for te in ("easy", "mid", "hard"):
            a = inside if tr == te else outside
            out[(label, tr, te)] = [Prediction(question_index=i, question_type="query", answer="yes",
                                               prediction="yes" if i < a * n else "no", image_index=i,
                                               question_hash=f"q{i}") for i in range(n)]
    return out


def test_the_finding_sets_the_two_schedules_side_by_side():
    from orchestration.study.report.perception import perception_check, perception_finding, perception_markdown

    pending = perception_finding({}, 0.12)
    assert pending["status"] == "pending" and pending["ours"] == (
        "pending: needs the perception schedule check (scripts/run_study.py --perception-check; not run yet)")
    cells = {}
    for m in ("nscl", "nsvqa", "pnsvqa", "pnsvqa-exact"):  # an RD of about 37% with the study's heads, 6% longer
        cells |= {CellKey(*k): [p] for k, p in _cells(perception_label(m, 3), 0.8, 0.5).items()}
    only_base = perception_finding(cells, 0.12, n_boot=200)
    assert only_base["status"] == "pending" and "longer heads (only 3 epochs run)" in only_base["ours"]
    for m in ("nscl", "nsvqa", "pnsvqa", "pnsvqa-exact"):
        cells |= {CellKey(*k): [p] for k, p in _cells(perception_label(m, 24), 0.9, 0.85).items()}
    study = {(*k, 0): p for k, p in _cells("film", 0.6, 0.59).items()}  # the non-modular side: about 2%
    got = perception_finding(cells, 0.12, study, n_boot=500)
    assert got["key"] == "visual_perception_schedule" and got["status"] == "not reproduced"
    assert got["paper"] == ("visual: NSCL, NS-VQA, P-NSVQA RD > 12% with the attribute heads trained longer "
                            "(24 epochs, chosen on end-to-end val accuracy; the study's 3)")
    assert "modular > 12% (nsvqa, pnsvqa): reproduced at 3 epochs, not reproduced at 24 (changes)" in got["ours"]
    assert ("non-modular more robust (nsvqa, pnsvqa against film seed 0, as the main finding): reproduced at 3 "
            "epochs, ") in got["ours"]
    assert "pnsvqa-exact RD 5.6 [" in got["ours"] and ", 37.5 [" in got["ours"] and "24 − 3 -31.9 [" in got["ours"]
    # NSCL reads no attribute head: a control, in neither verdict
    assert ("nscl reads no attribute head, so it is left out of both verdicts: its 24 − 3 is retraining noise, "
            "shown as a control") in got["ours"] and "nscl (control) RD 5.6 [" in got["ours"]
    assert len(got["intervals"]) == 2  # NS-VQA's and P-NSVQA's RD at 24 epochs against 12%
    # a longer schedule executed but not chosen is not the one judged; a search not over decides nothing
    for m in ("nscl", "nsvqa", "pnsvqa", "pnsvqa-exact"):
        cells |= {CellKey(*k): [p] for k, p in _cells(perception_label(m, 48), 0.8, 0.5).items()}
    with48 = perception_finding(cells, 0.12, study, chosen=24, n_boot=500)
    assert (with48["headline"], with48["intervals"]) == (got["headline"], got["intervals"])
    assert with48["ours"].replace(" (its answers with the heads of 24 and 48 epochs are not the same)", "") == got["ours"]
    open_search = perception_finding(cells, 0.12, study, searching=[6, 12], n_boot=200)
    assert open_search["status"] == "pending" and open_search["ours"] == (
        "pending: needs the perception schedule check's search, not over (heads tried: 6, 12 epochs)")
    assert open_search["paper"].endswith("trained longer")  # no schedule named before the choice
    at_cap = perception_finding(cells, 0.12, study, chosen=24, stopped="cap", n_boot=200)
    assert at_cap["paper"] == ("visual: NSCL, NS-VQA, P-NSVQA RD > 12% with the attribute heads trained longer (24 "
                               "epochs, chosen on end-to-end val accuracy; the study's 3; the search stopped at its "
                               "last schedule, not every head at a plateau)")
    # NSCL's answers with two longer heads: the same where it reads none, said beside the control
    assert "(its answers with the heads of 24 and 48 epochs are not the same)" in at_cap["ours"]
    same = {**cells, **{CellKey(perception_label("nscl", 48), k.train, k.test): v for k, v in cells.items()
                        if k.model == perception_label("nscl", 24)}}
    assert "nscl reads no attribute head (its answers with the heads of 24 and 48 epochs are the same)" in \
        perception_finding(same, 0.12, study, chosen=24, n_boot=200)["ours"]
    # the report: the row after the visual level's, and the record's section
    rows = perception_check({}, "/nonexistent", {}, [{"key": "visual"}, {"key": "visual_modular_level"}, {"key": "x"}])
    assert [r["key"] for r in rows] == ["visual", "visual_modular_level", "visual_perception_schedule", "x"]
    assert perception_markdown({}) == []


def test_which_models_read_the_attribute_head_is_declared():
    from orchestration.study.report.perception import reads_attribute_head

    assert [reads_attribute_head(m) for m in ("nsvqa", "pnsvqa", "pnsvqa-exact+gtprog", "nscl", "film", "unknown")] \
        == [True, True, True, False, False, False]
    # objmac-trace's tokens are the attribute head's distributions; regionmac-trace, its subclass, reads regions
    assert [reads_attribute_head(m) for m in ("objmac-trace", "regionmac-trace")] == [True, False]


def test_non_modular_more_robust_is_judged_against_the_pooled_seeds_as_the_main_finding():
    from orchestration.study.report.perception import perception_finding

    cells = {}
    for e in (3, 24):  # an RD of about 22% at both schedules
        for m in ("nsvqa", "pnsvqa"):
            cells |= {CellKey(*k): [p] for k, p in _cells(perception_label(m, e), 0.9, 0.7).items()}
    # film seed 0 hardly degrades (about 2%), seed 1 by 44%: pooled, the seeds drawn, the side is no longer clear
    study = {(*k, 0): p for k, p in _cells("film", 0.6, 0.59).items()}
    study |= {(*k, 1): p for k, p in _cells("film", 0.9, 0.5).items()}
    alone = perception_finding(cells, 0.12, study, n_boot=400)
    pooled = perception_finding(cells, 0.12, study, pooled={"film": [0, 1]}, n_boot=400)
    assert ("non-modular more robust (nsvqa, pnsvqa against film seed 0, as the main finding): reproduced at 3 "
            "epochs, reproduced at 24 (unchanged)") in alone["ours"]
    assert ("non-modular more robust (nsvqa, pnsvqa against film seeds 0, 1 pooled, as the main finding): "
            "inconclusive at 3 epochs, inconclusive at 24 (unchanged)") in pooled["ours"]
    assert "nscl" not in pooled["ours"]  # no control where NSCL has no predictions
    # a seed the study pools that lacks a cell leaves the model without an RD, not pooled over fewer seeds
    partial = {k: v for k, v in study.items() if k != ("film", "easy", "hard", 1)}
    assert "no non-modular visual RD to judge against" in perception_finding(
        cells, 0.12, partial, pooled={"film": [0, 1]}, n_boot=200)["ours"]


def test_the_base_runs_are_said_from_the_record_and_the_committed_cells():
    from orchestration.study.report.perception import base_runs_text

    record = {"seed": 0, "base_epochs": 3, "runs": {"3": {v: {"threads": 1} for v in ("easy", "mid", "hard")}}}
    pieces = [{"name": f"{v}-seed0-modular", "machine": {"torch_threads": 2}} for v in ("easy", "mid", "hard")]
    study = {(*k, 0): p for k, p in _cells("nscl", 0.8, 0.5).items()}
    cells = {CellKey(*k): [p] for k, p in _cells(perception_label("nscl", 3), 0.8, 0.5).items()}
    ours = _cells(perception_label("nscl", 3), 0.8, 0.5)
    ours[(perception_label("nscl", 3), "mid", "mid")] = _cells("x", 0.84, 0.5)[("x", "mid", "mid")]
    moved = {CellKey(*k): [p] for k, p in ours.items()}
    assert base_runs_text(record, moved, study, pieces) == (
        "the check's 3-epoch arm executed its own base runs of seed 0 (record runs.3.<variant>), trained with 1 torch "
        "thread; the study's seed-0 modular pieces trained with 2 torch threads, so they are not the study's pieces' "
        "runs: 1 of its 9 cells answer otherwise than the committed seed-0 cell (largest: nscl mid → mid 84.0 "
        "against 80.0)")
    assert base_runs_text(record, moved, study, pieces, short=True) == (
        "its 3-epoch arm is not the study's pieces' runs (1 torch thread, the pieces 2 torch threads; 1 of 9 cells "
        "answer otherwise)")
    assert base_runs_text(record, cells, study, pieces, short=True) == ""  # the same answers: nothing to say
    # the same answers in every cell: the study's runs; threads that differ by variant are named
    mixed = {**record, "runs": {"3": {"easy": {"threads": 2}, "hard": {"threads": 2}, "mid": {"threads": 1}}}}
    assert base_runs_text(mixed, cells, study, pieces).endswith(
        "trained with torch threads easy 2, hard 2, mid 1; the study's seed-0 modular pieces trained with 2 torch "
        "threads; all 9 of its cells answer as the committed seed-0 cells (the study's runs)")
    assert base_runs_text(record, cells, {}, []).endswith(
        "the study's seed-0 modular pieces trained with threads no committed piece records; no committed seed-0 cell "
        "to compare its cells with")
    assert base_runs_text({}, cells, study, pieces) == ""


def test_the_report_judges_the_schedule_the_rule_chooses_against_the_pooled_side(tmp_path):
    from nsvqa.artifacts.predictions import write_predictions
    from orchestration.study.report.perception import perception_check, perception_markdown

    folder = tmp_path / "perception_schedule"
    (folder / "predictions").mkdir(parents=True)
    heads = {v: {"3": _head(0.80, e2e=0.80), "24": _head(0.90, 600, e2e=0.90), "48": _head(0.91, 1200, e2e=0.70)}
             for v in ("easy", "mid", "hard")}
    record = {"seed": 0, "metric": "object.material", "rise": 0.005, "base_epochs": 3, "schedules": [24, 48],
              "heads": heads, "search": {"tried": [24, 48], "stopped": "cap", "chosen": 48},  # chosen on material
              "runs": {"3": {v: {"threads": 1, "seconds": 1} for v in heads}}}
    (folder / "perception_schedule.json").write_text(json.dumps(record))
    for e, (inside, outside) in ((3, (0.8, 0.5)), (24, (0.9, 0.85)), (48, (0.8, 0.5))):
        for m in ("nsvqa", "pnsvqa"):
            for (label, tr, te), preds in _cells(perception_label(m, e), inside, outside).items():
                write_predictions(folder / "predictions" / (CellKey(label, tr, te).filename() + ".gz"), preds)
    study = {(*k, s): p for s in (0, 1) for k, p in _cells("film", 0.6, 0.59).items()}
    report = {"pieces": [], "factors": {"visual": {"models": {"film": {"seeds": [0, 1]}}}}}
    row = perception_check(report, tmp_path, study, [{"key": "visual_modular_level"}])[-1]
    assert report["perception_schedule"]["chosen"] == 24 and report["perception_schedule"]["recorded_chosen"] == 48
    assert "(24 epochs, chosen on end-to-end val accuracy; the study's 3; the search stopped" in row["paper"]
    assert "against film seeds 0, 1 pooled, as the main finding" in row["ours"] and "at 48" not in row["ours"]
    assert "the check's 3-epoch arm executed its own base runs of seed 0" in row["ours"]
    md = "\n".join(perception_markdown(report))
    assert "chosen: 24 epochs (mean val e2e.pnsvqa.all 90.0%, next 70.0% at 48" in md
    assert "The record's own search, run under the earlier rule (the highest mean val object.material), chose 48" in md


def test_heads_are_projected_at_the_slowest_recorded_rate():
    from orchestration.study.checks.perception_schedule import head_projection

    record = {"heads": {"easy": {"3": {"epochs": 3, "seconds": None}, "6": {"epochs": 6, "seconds": 600.0}},
                        "hard": {"6": {"epochs": 6, "seconds": 720.0}}}}
    assert head_projection(record, 12, 3, cores=2) == 120.0 * 12 * 1.5  # 3 heads share 2 cores
    assert head_projection(record, 12, 2, cores=2) == head_projection(record, 12, 1) == 120.0 * 12
    assert head_projection(record, 12, 0) == 0.0
    assert head_projection({"heads": {"easy": {"3": {"epochs": 3, "seconds": None}}}}, 12, 1) is None
    # a head trained three at once on two cores ran at two thirds of its own core's rate
    shared = {"heads": {"easy": {"6": {"epochs": 6, "seconds": 900.0, "at_once": 3, "cores": 2}},
                        "hard": {"6": {"epochs": 6, "seconds": 480.0}}}}
    assert head_projection(shared, 12, 1) == 100.0 * 12


def test_the_heads_that_fit_are_a_whole_schedule_else_those_that_can_be_executed_in_the_same_call():
    from orchestration.study.checks.perception_schedule import heads_that_fit

    heads, runs = (lambda k: 100.0 * k), (lambda k: 10.0 * k)
    assert heads_that_fit(3, None, heads, runs) == 3  # no deadline
    assert heads_that_fit(3, 330.0, heads, runs) == 3
    assert heads_that_fit(3, 300.0, heads, runs) == 3  # all three fit, not with their runs: the search's next step
    assert heads_that_fit(3, 299.0, heads, runs) == 2  # two fit with their runs
    assert heads_that_fit(3, 205.0, heads, runs) == 1  # two fit alone, one with its run: that one, executed
    assert heads_that_fit(3, 105.0, heads, runs) == 1  # one fits, not with its run: trained alone
    assert heads_that_fit(3, 99.0, heads, runs) == 0
    assert heads_that_fit(2, 100.0, heads, lambda k: None) == 1  # no projection of the runs: taken as none


def test_the_check_trains_longer_heads_on_the_study_runs_detectors(tmp_path, require_renderer, monkeypatch):
    import torch

    from nsvqa.artifacts.predictions import read_predictions
    from nsvqa.fileio import sha256_file
    from orchestration.experiment import VariantRun
    from orchestration.study.report.perception import perception_cells, perception_finding
    from orchestration.study.checks.perception_schedule import OutOfTime, run_perception_check

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = StudyConfig(sizes=SuiteProfile(4, 2, 2), image_profile="tiny", profile="tiny",
                      scene_overrides={"mode": "agnostic", "attr_parts": False, "det_iterations": 2, "attr_epochs": 1,
                                       "e2e_eval_images": 2},  # the schedule is chosen on end-to-end val accuracy
                      question_overrides={"steps": 10}, groups={"modular": ("pnsvqa", "nsvqa", "nscl")})
    data, runs, results = tmp_path / "data", tmp_path / "runs", tmp_path / "results"
    # settings that measure no end-to-end val accuracy cannot choose a schedule: refused before any work
    no_e2e = dataclasses.replace(cfg, scene_overrides={**cfg.scene_overrides, "e2e_eval_images": 0})
    with pytest.raises(StudyError, match=r"chooses its schedule on e2e.pnsvqa.all .* \(e2e_eval_images 0 in profile "
                                         r"'tiny'\)"):
        run_perception_check(data, runs, tmp_path / "other", no_e2e, train_base=True, echo=lambda s: None,
                             schedules=(2, 4), jobs=1, workers=1, progress=False)
    assert not data.exists()
    # every change counts as a rise: both longer schedules are tried (the rule stops at its cap)
    kw = dict(schedules=(2, 4), rise=-1.0, jobs=1, workers=1, progress=False)
    with pytest.raises(StudyError, match=r"easy/scene_parser/detector.pt: the perception check executes the study's "
                                         r"run of easy seed 0, .* scripts/run_study.py --only easy-seed0-modular .* "
                                         r"add --perception-base"):
        run_perception_check(data, runs, results, cfg, echo=lambda s: None, **kw)
    assert not data.exists()

    said: list[str] = []
    rec = run_perception_check(data, runs, results, cfg, train_base=True, echo=said.append, **kw)
    trains = ["easy", "mid", "hard"]
    assert rec["trains"] == rec["tests"] == trains and rec["base_epochs"] == 1
    search = rec["search"]
    assert search["tried"] == [2, 4] and search["stopped"] == "cap"
    means = {e: sum(rec["heads"][v][str(e)]["final"]["e2e.pnsvqa.all"] for v in trains) / 3 for e in (2, 4)}
    chosen = max((2, 4), key=lambda e: (means[e], -e))  # on end-to-end val accuracy
    assert search["chosen"] == chosen and rec["select"] == "e2e.pnsvqa.all"
    assert search["select_mean"] == {str(e): pytest.approx(m) for e, m in means.items()} | {
        "1": pytest.approx(sum(rec["heads"][v]["1"]["final"]["e2e.pnsvqa.all"] for v in trains) / 3)}
    for v in trains:
        base = VariantRun(runs, v)
        for e in (2, 4):
            head = rec["heads"][v][str(e)]
            scene = runs / "perception-schedule" / "heads" / f"{e}ep" / v / "scene_parser"
            assert head["epochs"] == e and len(head["val"]) == e and head["seconds"] > 0
            assert head["detector"] == str((base.scene_dir / "detector.pt").resolve())
            for crops in ("crops_train_gt.pt", "crops_val_gt.pt"):  # the base run's, linked: none built again
                assert os.path.samefile(scene / crops, base.scene_dir / crops)
        assert rec["heads"][v]["1"]["seconds"] is None  # the study's head: its compute is the study's
        one, long = rec["runs"]["1"][v], rec["runs"][str(chosen)][v]
        # the pair differs in the head alone
        assert long["detector_sha256"] == one["detector_sha256"] == sha256_file(base.scene_dir / "detector.pt")
        assert long["question_parser_sha256"] == one["question_parser_sha256"]
        assert long["attributes_sha256"] == rec["heads"][v][str(chosen)]["attributes_sha256"]
        assert long["attributes_sha256"] != one["attributes_sha256"]
        assert long["run"] == str(runs / "perception-schedule" / f"{chosen}ep" / v)
        assert (runs / "perception-schedule" / f"{chosen}ep" / v / "baselines" / "nscl").is_dir()  # NSCL again
        for t in trains:
            n = len(json.loads((data / t / "questions" / "test_questions.json").read_text())["questions"])
            for e in (1, chosen):
                for m in ("pnsvqa", "nsvqa", "nscl"):
                    path = results / "perception_schedule" / "predictions" / f"{m}.{e}ep__train-{v}__test-{t}.jsonl.gz"
                    assert len(read_predictions(path)) == n
    out = results / "perception_schedule"
    assert json.loads((out / "perception_schedule.json").read_text()) == rec
    # a second call trains nothing and executes nothing
    files = {p: p.stat().st_mtime_ns for p in (out / "predictions").iterdir()}
    said.clear()
    again = run_perception_check(data, runs, results, cfg, echo=said.append, **kw)
    assert sum("done, skipped" in s for s in said) == 6 and not any("attribute head" in s for s in said)
    assert {p: p.stat().st_mtime_ns for p in (out / "predictions").iterdir()} == files and again["search"] == search
    # another rule is another check
    with pytest.raises(StudyError, match=r"ran with another rise \(rise -1.0, now 0.005\); give another results"):
        run_perception_check(data, runs, results, cfg, schedules=(2, 4), jobs=1, workers=1, progress=False)
    # the runs root lost (a new session) with the search not over: the base runs' scene parsers are
    # trained again, all at once, and must learn the weights the record holds, and the heads not
    # recorded are trained all at once, each in a process of one thread, to the weights one process
    # learned
    import shutil

    first = {v: rec["heads"][v]["4"]["attributes_weights"] for v in trains}
    saved = json.loads((out / "perception_schedule.json").read_text())
    for v in trains:
        del saved["heads"][v]["4"]
    (out / "perception_schedule.json").write_text(json.dumps(saved))
    shutil.rmtree(runs)
    with pytest.raises(StudyError, match=r"easy: the base run of easy lacks its scene parser; .* --perception-base"):
        run_perception_check(data, runs, results, cfg, echo=lambda s: None, **kw)
    with pytest.raises(OutOfTime, match=r"the heads of 4 epochs of easy, mid, hard not started: projected \d+ min, "
                                        r"0 min left"):  # the base runs first, then no time for the heads
        run_perception_check(data, runs, results, cfg, train_base=True, echo=lambda s: None,
                             deadline=time.monotonic(), **{**kw, "jobs": 2})
    again = run_perception_check(data, runs, results, cfg, train_base=True, echo=lambda s: None, **{**kw, "jobs": 2})
    assert {v: again["heads"][v]["4"]["attributes_weights"] for v in trains} == first
    assert all(again["runs"]["1"][v]["weights"] == rec["runs"]["1"][v]["weights"] for v in trains)
    assert sorted(o["what"] for o in again["other_seconds"]) == sorted(
        f"the base run of {v}: its scene parser trained again (the runs root lost them)" for v in trains)
    assert again["search"] == search
    # time for one head of a schedule and its run only: that one now, executed, the others in the next call
    import orchestration.study.checks.perception_schedule as ps

    saved = json.loads((out / "perception_schedule.json").read_text())
    for v in trains:
        del saved["heads"][v]["4"]
    saved["runs"].pop("4", None)
    (out / "perception_schedule.json").write_text(json.dumps(saved))
    shutil.rmtree(runs / "perception-schedule" / "heads" / "4ep")
    monkeypatch.setattr(ps, "head_projection", lambda record, epochs, k, cores=1: 100.0 * k)
    monkeypatch.setattr(ps, "execution_projection", lambda record, results, vs, tests, seed, cores=1: 10.0 * len(vs))
    with pytest.raises(OutOfTime, match=r"the heads of 4 epochs of mid, hard not started: no time left for them after "
                                        r"those of easy"):
        run_perception_check(data, runs, results, cfg, train_base=True, echo=lambda s: None,
                             deadline=time.monotonic() + 150, **kw)
    part = json.loads((out / "perception_schedule.json").read_text())
    assert [v for v in trains if "4" in part["heads"][v]] == ["easy"] and list(part["runs"]["4"]) == ["easy"]
    assert (part["heads"]["easy"]["4"]["at_once"], part["runs"]["4"]["easy"]["at_once"]) == (1, 1)
    assert part["search"] == search
    monkeypatch.undo()
    again = run_perception_check(data, runs, results, cfg, train_base=True, echo=lambda s: None, **kw)
    assert all("4" in again["heads"][v] for v in trains)
    # the others executed only where the search chose their schedule
    assert sorted(again["runs"]["4"]) == (sorted(trains) if chosen == 4 else ["easy"])
    assert again["search"] == search  # the same weights: the same search
    # a base run trained again to other weights stops the check
    saved = json.loads((out / "perception_schedule.json").read_text())
    saved["runs"]["1"]["easy"]["weights"]["detector"] = "0" * 64
    del saved["heads"]["easy"]["4"]
    (out / "perception_schedule.json").write_text(json.dumps(saved))
    shutil.rmtree(runs / "easy" / "scene_parser")
    with pytest.raises(StudyError, match=r"easy: the base run of easy holds other weights than the check ran on "
                                         r"\(detector: [0-9a-f]{12}, recorded 000000000000\)"):
        run_perception_check(data, runs, results, cfg, train_base=True, echo=lambda s: None, **kw)
    # the finding reads the committed predictions
    f = perception_finding(perception_cells(results), 0.12, chosen=chosen, n_boot=200)
    if f["status"] == "pending":  # tiny parsers may answer nothing right in domain: no RD to decide on
        assert f"visual RD at {chosen} epochs, which the check's predictions do not give (" in f["ours"]
    else:
        assert "modular > 12% (nsvqa, pnsvqa): " in f["ours"] and f"at {chosen} epochs" in f["ours"]
