"""Every script checks its outputs before any work (nsvqa.config.check_outputs): an output that
cannot be written is one line naming the path and exit status 2."""
from __future__ import annotations

import pytest

IN = "missing-input"  # never read: the preflight runs first
#: script -> its arguments, with OUT where an output path goes
ARGV = {
    "build_ontology": ["--out", "OUT"],
    "build_variants": ["--out", "OUT"],
    "contact_sheet": ["--out", "OUT"],
    "dataset_stats": [IN, "--json", "OUT/stats.json"],
    "evaluate_rd": ["--runs", IN, "--out", "OUT"],
    "evaluate_scene_parser": ["--parsed", IN, "--data", IN, "--out", "OUT/metrics.json"],
    "evaluate_transfer": ["--release", IN, "--out", "OUT"],
    "execute_programs": ["--scenes", IN, "--questions", IN, "--out", "OUT/p.jsonl"],
    "explain": ["--run", IN, "--data", IN, "--index", "0", "--out", "OUT"],
    "export_superclevr": ["--data", IN, "--out", "OUT"],
    "generate_dataset": ["--out", "OUT", "--variant", "easy", "--split", "test", "--num-images", "1"],
    "generate_suite": ["--out", "OUT"],
    "import_superclevr": ["--out", "OUT"],
    "make_examples": ["--out-dir", "OUT"],
    "pack_pretrained": ["--run", IN, "--name", "x", "--data", IN, "--out", "OUT"],
    "parse_questions": ["--checkpoint", IN, "--questions", IN, "--out", "OUT/programs.json"],
    "parse_scenes": ["--checkpoint", IN, "--data", IN, "--out", "OUT/likelihoods.json"],
    "rerender_official": ["--release", IN, "--out", "OUT"],
    "run_factor": ["--factor", "visual", "--data", IN, "--runs", "OUT", "--report", "OUT"],
    "scene_parser_curves": ["--run", IN, "--out", "OUT/curves"],
    "train_baseline": ["--model", "lstm", "--data", IN, "--out", "OUT"],
    "train_question_parser": ["--data", IN, "--out", "OUT"],
    "train_scene_parser": ["--data", IN, "--out", "OUT"],
    "train_variant": ["--data", IN, "--variant", "mid", "--out", "OUT"],
}


@pytest.mark.parametrize("name", sorted(ARGV))
def test_an_unwritable_output_is_one_line_before_any_work(load_script, name, tmp_path, capsys):
    blocker = tmp_path / "afile"  # a file where a folder is needed: unwritable even for root
    blocker.write_text("")
    argv = [a.replace("OUT", str(blocker / "out")) for a in ARGV[name]]
    try:
        rc = load_script(name).main(argv)
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "afile/out" in err and "cannot write there" in err, err
    assert blocker.read_text() == ""
