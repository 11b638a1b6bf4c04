"""scripts/parse_scenes.py and scripts/parse_questions.py: their inputs checked before the parse
(a truncated or wrong-size image named in one line), their outputs before any work (a folder where
a file goes, a read-only secondary output), and an existing output never replaced by an empty parse
(docs/guarantees.md)."""
from __future__ import annotations

import json
import shutil

import pytest

PARSERS = "pretrained:mid-mini"


@pytest.fixture
def data(tiny_root, tmp_path):
    shutil.copytree(tiny_root / "mid", tmp_path / "mid")
    return tmp_path / "mid"


def _run(load_script, name, argv, capsys):
    try:
        rc = load_script(name).main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    return rc, capsys.readouterr().err


def test_parse_scenes_names_a_truncated_image_in_one_line(load_script, data, tmp_path, capsys):
    image = data / "images" / "test" / "nsvqa_test_000001.png"
    image.write_bytes(image.read_bytes()[:200])
    rc, err = _run(load_script, "parse_scenes", ["--checkpoint", PARSERS, "--data", data, "--split", "test",
                                                 "--out", tmp_path / "l.json", "--no-progress"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "nsvqa_test_000001.png: not a whole image" in err, err
    assert not (tmp_path / "l.json").exists()


def test_parse_scenes_refuses_an_image_of_another_size(load_script, data, tmp_path, capsys):
    from PIL import Image

    Image.new("RGB", (32, 32)).save(data / "images" / "test" / "nsvqa_test_000000.png")
    rc, err = _run(load_script, "parse_scenes", ["--checkpoint", PARSERS, "--data", data, "--split", "test",
                                                 "--out", tmp_path / "l.json", "--no-progress"], capsys)
    assert rc == 2 and "nsvqa_test_000000.png: 32x32 pixels, but the split's images are 64x48" in err, err


def test_parse_scenes_never_replaces_an_output_by_an_empty_parse(load_script, data, tmp_path, capsys):
    out = tmp_path / "l.json"
    out.write_text('{"kept": true}')
    rc, err = _run(load_script, "parse_scenes", ["--checkpoint", PARSERS, "--data", data, "--split", "test",
                                                 "--out", out, "--limit", "0", "--no-progress"], capsys)
    assert rc == 2 and "l.json: this call produced no parsed images; the existing file is kept" in err, err
    assert json.loads(out.read_text()) == {"kept": True}


def test_parse_scenes_refuses_a_scenes_file_whose_path_escapes_its_root(load_script, data, tmp_path, capsys):
    path = data / "scenes" / "test_scenes.json"
    doc = json.loads(path.read_text())
    doc["scenes"][1]["image_filename"] = "../../secret.png"
    path.write_text(json.dumps(doc))
    rc, err = _run(load_script, "parse_scenes", ["--checkpoint", PARSERS, "--data", data, "--split", "test",
                                                 "--out", tmp_path / "l.json", "--no-progress"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "scene 1, field 'image_filename'" in err, err


def test_a_folder_where_a_file_goes_and_a_read_only_secondary_output_are_refused_first(load_script, data, tmp_path,
                                                                                        capsys):
    (tmp_path / "afolder").mkdir()
    (tmp_path / "afile").write_text("")
    argv = ["--checkpoint", "missing", "--data", data, "--split", "test", "--no-progress"]
    rc, err = _run(load_script, "parse_scenes", argv + ["--out", tmp_path / "afolder"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "afolder: is a folder; a file is written there" in err, err
    rc, err = _run(load_script, "parse_scenes", argv + ["--out", tmp_path / "l.json", "--npz",
                                                        tmp_path / "afile" / "l.npz"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "afile/l.npz: cannot write there" in err, err
    qargv = ["--checkpoint", "missing", "--questions", data / "questions" / "test_questions.json"]
    rc, err = _run(load_script, "parse_questions", qargv + ["--out", tmp_path / "p.json", "--metrics",
                                                            tmp_path / "afile" / "m.json"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "afile/m.json: cannot write there" in err, err
    rc, err = _run(load_script, "parse_questions", qargv + ["--out", tmp_path / "afolder"], capsys)
    assert rc == 2 and "afolder: is a folder; a file is written there" in err, err


def test_parse_questions_never_replaces_an_output_by_an_empty_parse(load_script, data, tmp_path, capsys):
    out = tmp_path / "p.json"
    out.write_text('{"kept": true}')
    rc, err = _run(load_script, "parse_questions", ["--checkpoint", PARSERS, "--questions",
                                                    data / "questions" / "test_questions.json", "--out", out,
                                                    "--limit", "0"], capsys)
    assert rc == 2 and "p.json: this call produced no questions; the existing file is kept" in err, err
    assert json.loads(out.read_text()) == {"kept": True}
