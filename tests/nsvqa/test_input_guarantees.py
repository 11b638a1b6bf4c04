"""Every input of a run is read and checked before its first step (docs/guarantees.md): empty or
malformed questions, scenes that do not pair with their questions, an unwritable runs folder."""
from __future__ import annotations

import json
import shutil

import pytest

from executors.errors import FormatError
from nsvqa.artifacts import read_questions, read_scenes
from nsvqa.experiment import ExperimentError, train_variant
from nsvqa.fileio import OutputNotWritable


@pytest.fixture
def data(tiny_root, tmp_path):
    root = tmp_path / "data"
    for v in ("mid", "hard"):
        shutil.copytree(tiny_root / v, root / v)
    return root


def _train(root, runs):
    return train_variant(root, "mid", runs, models=["nsvqa"], tests=["mid", "hard"], echo=lambda s: None)


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_an_empty_questions_list_is_refused_before_any_work(data, tmp_path):
    _edit(data / "mid" / "questions" / "train_questions.json", lambda d: d.update(questions=[]))
    with pytest.raises(ExperimentError, match=r"mid/questions/train_questions\.json, field 'questions': empty"):
        _train(data, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_a_corrupt_test_questions_file_is_found_before_training(data, tmp_path):
    _edit(data / "hard" / "questions" / "test_questions.json", lambda d: d["questions"][3].pop("answer"))
    with pytest.raises(FormatError, match=r"hard/questions/test_questions\.json, question 3: missing field 'answer'"):
        _train(data, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def _swap_image_index(doc):
    a, b = doc["scenes"][0], doc["scenes"][1]
    a["image_index"], b["image_index"] = b["image_index"], a["image_index"]


def test_scenes_that_do_not_pair_with_their_questions_are_an_error(data, tmp_path):
    scenes = data / "mid" / "scenes" / "val_scenes.json"
    _edit(scenes, _swap_image_index)
    with pytest.raises(FormatError, match=r"val_questions\.json, question 0, field 'image_filename': "
                                          r"'nsvqa_val_000000\.png', but the scene of image_index 0 in .*"
                                          r"val_scenes\.json is of 'nsvqa_val_000001\.png'"):
        _train(data, tmp_path / "runs")
    # the same join, read directly
    questions = read_questions(data / "mid" / "questions" / "val_questions.json")
    with pytest.raises(FormatError, match=r"question 0, field 'image_filename'"):
        read_scenes(scenes).by_image_index(questions)


def test_two_scenes_of_one_image_index_are_an_error(data):
    scenes = data / "mid" / "scenes" / "val_scenes.json"
    _edit(scenes, lambda d: d["scenes"][1].update(image_index=0))
    with pytest.raises(FormatError, match=r"val_scenes\.json, scene 1, field 'image_index': 0 again"):
        read_scenes(scenes).by_image_index()


def test_an_unwritable_runs_folder_is_refused_before_any_work(data, tmp_path):
    (tmp_path / "afile").write_text("")
    with pytest.raises(OutputNotWritable, match=r"afile/runs: cannot write there"):
        _train(data, tmp_path / "afile" / "runs")


def test_a_moved_data_root_names_the_path_and_the_command(tmp_path):
    with pytest.raises(ExperimentError, match=r"moved/mid/questions/train_questions\.json: missing \(generate it "
                                              r"with .*generate_dataset\.py --out .*moved --variant mid --split train"):
        _train(tmp_path / "moved", tmp_path / "runs")
