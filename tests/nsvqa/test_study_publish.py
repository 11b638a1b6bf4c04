"""orchestration.study.report.publish: documents quote the report through generated blocks, and their prose
carries no number of its own."""
from __future__ import annotations

from orchestration.study.report.publish import DOC_BLOCKS, render_doc, stray_numbers


def _report():
    return {"study": {"default_variant": "mid", "sizes": {"train": 2000, "val": 150, "test": 300},
                      "image_profile": "mini", "questions": "object", "data_seed": 0, "profile": "mini",
                      "scene_overrides": {"det_iterations": 600}, "question_overrides": {"steps": 1600},
                      "parse_min_score": 0.05, "seeds": [0, 1, 2], "budget_hours": 44.0},
            "question_only": "lstm",
            "in_domain": [{"model": "objmac-trace", "kind": "holistic", "perception": "the parser's distributions",
                           "accuracy": 0.638, "ci95": [0.62, 0.655], "image_margin": 0.224,
                           "image_dependence": 0.207}],
            "seeds": {"nsvqa": {"per_seed": {"0": 0.72, "1": 0.737}, "mean": 0.7285, "std": 0.012}},
            "findings": [{"key": "k", "paper": "claim", "ours": "a − b +1.0 [+0.2, +1.8]", "status": "reproduced",
                          "qualifier": "one training seed", "decided_by": "rule", "rests_on": "—",
                          "correction": {"k": 10, "findings": 1, "n_boot": 20000, "precision": 0.0008}}]}


def test_a_document_is_rendered_from_the_report_and_a_changed_number_is_caught():
    text = ("# Study\n\nThe sizes:\n\n<!-- generated:config:begin -->\n<!-- generated:config:end -->\n\n"
            "Findings:\n<!-- generated:findings:begin -->\n<!-- generated:findings:end -->\n"
            "<!-- generated:in-domain:begin -->\n<!-- generated:in-domain:end -->\n"
            "<!-- generated:seeds:begin -->\n<!-- generated:seeds:end -->\n")
    blocks = DOC_BLOCKS["docs/study.md"]
    doc = render_doc(text, blocks, _report(), "study.md")
    assert "2,000 train / 150 val / 300 test images" in doc and "**reproduced** (one training seed)" in doc
    assert "objmac-trace (sees through the parser's distributions)" in doc and "| +22.4 |" in doc
    assert "20,000 replicates" in doc
    assert render_doc(doc, blocks, _report(), "study.md") == doc  # idempotent: --check compares this
    assert stray_numbers(doc) == []  # every number sits in a generated block
    edited = doc.replace("| +22.4 |", "| +23.4 |")
    assert render_doc(edited, blocks, _report(), "study.md") != edited


def test_numbers_in_prose_are_named_but_names_references_and_code_are_not():
    prose = ("Trained on `mid` (`det_iterations=600`), see Table 1, Fig. 3 and Sec. 5.2 (CVPR 2023); "
             "the 95% interval; co-1 and rd+ and mid-seed0-modular; [link](results/2.md).\n")
    assert stray_numbers(prose) == []
    bad = "P-NSVQA's RD is 7.3% against NS-VQA's.\nThe gap: +12.4 points.\n"
    assert stray_numbers(bad) == ["P-NSVQA's RD is 7.3% against NS-VQA's.", "The gap: +12.4 points."]


def test_the_repositorys_own_documents_carry_no_number_outside_their_generated_blocks():
    """What ``run_study.py --check`` also asks of them, here without rebuilding the report: a sentence
    edited by hand that states a number (or wraps a reference such as "exit status 5" over two
    lines) fails the suite, not only the check."""
    from pathlib import Path

    from orchestration.study.report.publish import doc_paths

    repo = Path(__file__).resolve().parents[2]
    docs = doc_paths(repo / "results" / "study", repo)
    assert docs and all(p.is_file() for p in docs)
    assert {str(p.relative_to(repo)): stray_numbers(p.read_text()) for p in docs} == {
        str(p.relative_to(repo)): [] for p in docs}
