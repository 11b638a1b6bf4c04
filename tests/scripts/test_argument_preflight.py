"""Arguments refused at parsing, before any work, naming the argument: an executor threshold outside
(0, 1], an absurd image size; and a scenes file whose image path escapes its folder is one line
naming the file, the scene and the field (docs/guarantees.md; issue 59)."""
from __future__ import annotations

import json
import shutil

import pytest


def _exit(load_script, name, argv, capsys):
    try:
        rc = load_script(name).main(argv)
    except SystemExit as e:
        rc = e.code
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("name", ["execute_programs", "evaluate_scene_parser", "demo_executors"])
@pytest.mark.parametrize("value", ["0", "1.5", "-0.2", "nan"])
def test_a_threshold_outside_0_1_is_refused_naming_the_argument(load_script, name, value, tmp_path, capsys):
    argv = {"execute_programs": ["--scenes", "s", "--questions", "q", "--out", str(tmp_path / "p.jsonl")],
            "evaluate_scene_parser": ["--parsed", "p", "--data", "d", "--out", str(tmp_path / "m.json")],
            "demo_executors": []}[name]
    rc, err = _exit(load_script, name, argv + ["--threshold", value], capsys)
    assert rc == 2 and f"argument --threshold: expected a probability in (0, 1], got '{value}'" in err, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("flag, value", [("--width", "100000"), ("--height", "8"), ("--width", "wide")])
def test_an_absurd_image_size_is_refused_naming_the_argument(load_script, flag, value, tmp_path, capsys):
    rc, err = _exit(load_script, "generate_dataset", ["--out", str(tmp_path), "--variant", "easy", "--split", "test",
                                                      "--num-images", "1", flag, value], capsys)
    assert rc == 2 and f"argument {flag}: expected pixels from 16 to 4096, got '{value}'" in err, err
    assert not list(tmp_path.iterdir())


def test_dataset_stats_names_a_scene_whose_image_path_escapes_its_folder(load_script, tiny_root, tmp_path, capsys):
    shutil.copytree(tiny_root / "mid", tmp_path / "mid")
    path = tmp_path / "mid" / "scenes" / "val_scenes.json"
    doc = json.loads(path.read_text())
    doc["scenes"][1]["image_filename"] = "../../../etc/passwd"
    path.write_text(json.dumps(doc))
    manifest = (tmp_path / "mid" / "manifest.json").read_bytes()
    rc, err = _exit(load_script, "dataset_stats", [str(tmp_path / "mid")], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert "val_scenes.json, scene 1, field 'image_filename': '../../../etc/passwd' must be relative" in err
    assert (tmp_path / "mid" / "manifest.json").read_bytes() == manifest  # nothing written


IN = "missing-input"  # never read: the preflight runs first
#: script -> arguments with FILE where a file is written
FILE_OUT = {"parse_scenes": ["--checkpoint", IN, "--data", IN, "--out", "FILE"],
            "parse_questions": ["--checkpoint", IN, "--questions", IN, "--out", "FILE"],
            "execute_programs": ["--scenes", IN, "--questions", IN, "--out", "FILE"],
            "evaluate_scene_parser": ["--parsed", IN, "--data", IN, "--out", "FILE"],
            "dataset_stats": [IN, "--json", "FILE"]}
#: script -> arguments with DIR where a folder is written
FOLDER_OUT = {"evaluate_rd": ["--runs", IN, "--out", "DIR"],
              "train_variant": ["--data", IN, "--variant", "mid", "--out", "DIR"],
              "train_question_parser": ["--data", IN, "--out", "DIR"],
              "train_baseline": ["--model", "lstm", "--data", IN, "--out", "DIR"],
              "generate_dataset": ["--out", "DIR", "--variant", "easy", "--split", "test", "--num-images", "1"],
              "generate_suite": ["--out", "DIR"],
              "run_factor": ["--factor", "visual", "--data", IN, "--runs", "DIR", "--report", "DIR"],
              "evaluate_transfer": ["--release", IN, "--out", "DIR"]}


@pytest.mark.parametrize("name", sorted(FILE_OUT))
def test_an_existing_folder_where_a_file_goes_is_one_line_before_any_work(load_script, name, tmp_path, capsys):
    (tmp_path / "afolder").mkdir()
    argv = [a.replace("FILE", str(tmp_path / "afolder")) for a in FILE_OUT[name]]
    rc, err = _exit(load_script, name, argv, capsys)
    assert rc == 2 and err.count("\n") == 1 and "afolder: is a folder; a file is written there" in err, err


@pytest.mark.parametrize("name", sorted(FOLDER_OUT))
def test_an_existing_file_where_a_folder_goes_is_one_line_before_any_work(load_script, name, tmp_path, capsys):
    (tmp_path / "afile").write_text("kept")
    argv = [a.replace("DIR", str(tmp_path / "afile")) for a in FOLDER_OUT[name]]
    rc, err = _exit(load_script, name, argv, capsys)
    assert rc == 2 and err.count("\n") == 1 and "afile" in err and ("is a file" in err or "cannot write" in err), err
    assert (tmp_path / "afile").read_text() == "kept"


def test_generate_suite_refuses_a_split_of_other_settings_in_one_line(load_script, tmp_path, capsys,
                                                                      require_renderer):
    from nsvqa.generation.dataset import generate_split, job_for

    generate_split(job_for(tmp_path, "easy", "test", 1, 0, 64, 48), progress=False)
    rc, err = _exit(load_script, "generate_suite", ["--out", str(tmp_path), "--factor", "visual", "--profile", "tiny",
                                                    "--seed", "4", "--no-progress"], capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert "split easy/test was made with other settings: seed 0 (this command: 4, set by --seed)" in err


def _snapshot(root):
    return sorted((str(p.relative_to(root)), p.is_dir() or p.read_bytes()) for p in root.rglob("*"))


@pytest.mark.parametrize("name, argv, where", [
    ("train_variant", ["--data", "ROOT", "--variant", "mid", "--out", "ROOT"], "a data root"),
    ("train_variant", ["--data", "ROOT", "--variant", "mid", "--out", "ROOT/runs"], "inside the data root"),
    ("train_variant", ["--data", "ROOT", "--variant", "mid", "--out", "ROOT/mid/runs"], "inside the dataset of a variant"),
    ("run_factor", ["--factor", "visual", "--data", "ROOT", "--runs", "ROOT/runs", "--report", "OTHER/report"],
     "inside the data root"),
    ("train_question_parser", ["--data", "ROOT/mid", "--out", "ROOT/mid/run"], "inside the dataset of a variant"),
    ("train_question_parser", ["--data", "ROOT/mid", "--out", "ROOT/run"], "inside the data root"),
    ("train_scene_parser", ["--data", "ROOT/mid", "--out", "ROOT/scene"], "inside the data root"),
    ("train_baseline", ["--model", "lstm", "--data", "ROOT/mid", "--out", "ROOT/lstm"], "inside the data root"),
])
def test_a_run_inside_the_data_is_refused_before_any_work(load_script, write_qa_split, tmp_path, capsys, name, argv,
                                                          where):
    """A runs root resolving into the data (the data root itself: its run folder ``mid`` would be
    the variant's folder; a folder under it; a variant folder) is one line, exit 2, nothing written."""
    root = tmp_path / "data"
    write_qa_split(root / "mid", "train", 1, seed=0)
    before = _snapshot(root)
    argv = [a.replace("ROOT", str(root)).replace("OTHER", str(tmp_path / "other")) for a in argv]
    rc, err = _exit(load_script, name, [*argv, "--profile", "tiny"], capsys)
    assert rc == 2 and err.count("\n") == 1 and where in err and "Traceback" not in err, err
    assert _snapshot(root) == before and not (tmp_path / "other").exists()


def test_a_run_beside_the_data_is_not_refused(write_qa_split, tmp_path):
    from nsvqa.fileio import OutputNotWritable, check_outside_data
    from orchestration.experiment import train_variant

    root = tmp_path / "data"
    write_qa_split(root / "mid", "train", 1, seed=0)
    check_outside_data(tmp_path / "runs", root)
    check_outside_data(tmp_path / "runs" / "mid", root / "mid", variant_folder=True)
    check_outside_data(tmp_path / "r", tmp_path / "empty")  # a folder holding no variant is no data root
    (tmp_path / "empty").mkdir()
    check_outside_data(tmp_path / "empty" / "r", tmp_path / "empty")
    with pytest.raises(OutputNotWritable, match=r"a data root"):  # the API refuses as the script does
        train_variant(root, "mid", root, models=["nsvqa"], echo=lambda s: None)
    assert sorted(p.name for p in root.iterdir()) == ["mid"]
