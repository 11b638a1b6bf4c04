"""Every input of a run is read and checked before its first step (docs/guarantees.md): empty or
malformed questions, scenes that do not pair with their questions, an unwritable runs folder."""
from __future__ import annotations

import json
import shutil

import pytest

from executors.errors import FormatError
from nsvqa.artifacts import read_questions, read_scenes
from orchestration.experiment import ExperimentError, train_variant
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


# ---------------------------------------------------------------- round two (issue 59): images, pairing, ids
def _png(path, size):
    from PIL import Image

    Image.new("RGB", size, (90, 90, 90)).save(path)


def test_a_missing_image_is_refused_before_any_work(data, tmp_path):
    (data / "hard" / "images" / "test" / "nsvqa_test_000001.png").unlink()
    with pytest.raises(FormatError, match=r"hard/images/test/nsvqa_test_000001\.png: missing"):
        _train(data, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_a_truncated_image_is_named_before_any_work(data, tmp_path):
    image = data / "mid" / "images" / "train" / "nsvqa_train_000002.png"
    image.write_bytes(image.read_bytes()[:300])
    with pytest.raises(FormatError, match=r"mid/images/train/nsvqa_train_000002\.png: not a whole image"):
        _train(data, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("manifest", [True, False])
def test_an_image_of_another_size_is_refused_naming_both_sizes(data, tmp_path, manifest):
    if not manifest:  # an imported release: the split's size is its first image's
        (data / "mid" / "manifest.json").unlink()
    _png(data / "mid" / "images" / "val" / "nsvqa_val_000001.png", (32, 24))
    with pytest.raises(FormatError, match=r"mid/images/val/nsvqa_val_000001\.png: 32x24 pixels, but the split's "
                                          r"images are 64x48"):
        _train(data, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_changed_image_bytes_are_refused_against_the_manifest(data):
    from nsvqa.artifacts.images import check_images

    image = data / "mid" / "images" / "test" / "nsvqa_test_000000.png"
    _png(image, (64, 48))  # whole, the right size, not the generator's
    with pytest.raises(FormatError, match=r"nsvqa_test_000000\.png: not the bytes recorded in .*manifest\.json"):
        check_images(data / "mid", "test", ["nsvqa_test_000000.png"])


def test_a_question_about_an_image_without_a_scene_is_refused(data, tmp_path):
    _edit(data / "hard" / "questions" / "test_questions.json",
          lambda d: d["questions"][4].update(image_index=7, image_filename="nsvqa_test_000007.png"))
    with pytest.raises(FormatError, match=r"hard/questions/test_questions\.json, question 4, field 'image_index': 7: "
                                          r"no scene of that image"):
        _train(data, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_duplicate_question_ids_are_refused_when_read(data, tmp_path):
    _edit(data / "hard" / "questions" / "test_questions.json", lambda d: d["questions"][5].update(question_index=2))
    with pytest.raises(FormatError, match=r"test_questions\.json, question 5, field 'question_index': 2 again "
                                          r"\(already question 2\)"):
        _train(data, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_the_missing_data_hint_is_a_command_that_runs(tmp_path, load_script):
    import re
    import shlex

    with pytest.raises(ExperimentError) as e:
        _train(tmp_path / "moved", tmp_path / "runs")
    command = re.search(r"generate it with python (scripts/generate_dataset\.py [^;]*);", str(e.value)).group(1)
    argv = shlex.split(command)[1:]
    args = load_script("generate_dataset").get_args_parser().parse_args(argv)  # every required argument given
    assert (args.variant, args.split, args.num_images, args.profile) == ("mid", "train", 600, "mini")  # the run's profile


def test_train_scene_parser_names_a_truncated_image_before_any_step(data, tmp_path, load_script, capsys):
    image = data / "mid" / "images" / "val" / "nsvqa_val_000001.png"
    image.write_bytes(image.read_bytes()[:100])
    rc = load_script("train_scene_parser").main(["--data", str(data / "mid"), "--profile", "tiny", "--out",
                                                 str(tmp_path / "scene"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "nsvqa_val_000001.png: not a whole image" in err, err
    assert not (tmp_path / "scene").exists()


def _readers():
    from executors.io import load_questions, load_scenes
    from nsvqa.artifacts import read_likelihoods, read_predictions, read_programs
    from nsvqa.artifacts.summary import read_summary

    return {"read_questions": read_questions, "read_scenes": read_scenes, "read_likelihoods": read_likelihoods,
            "read_programs": read_programs, "load_questions": load_questions, "load_scenes": load_scenes,
            "read_summary": read_summary}


@pytest.mark.parametrize("reader", sorted(_readers()))
@pytest.mark.parametrize("text, message", [
    (b'{"version": 1, "scenes": [{"image_index": 0}, {"image_index": 1, "answer": "2", "answer": "3"}], '
     b'"questions": [], "programs": []}', "at scenes[1], key 'answer': given twice in one object"),
    (b'{"version": 1, "scenes": [{"image_index": 1e999}], "questions": [], "programs": []}',
     "at scenes[0].image_index: the number 1e999 does not fit a 64-bit float"),
    (b'{"version": 1, "scenes": [{"margin": NaN}], "questions": [], "programs": []}',
     "at scenes[0].margin: the number NaN is not a JSON number"),
    (b'{"version": 1, "scenes": [{"image_filename": "caf\xe9.png"}], "questions": [], "programs": []}',
     "not UTF-8 text (byte 0xe9 at offset"),
])
def test_every_json_reader_refuses_ambiguous_json_naming_file_record_and_key(tmp_path, reader, text, message):
    """One strict loader (executors.io.loads_json) under every reader: a key twice (which value
    holds was the parser's choice: a question's answer decided silently), a number past a float,
    NaN, bytes not UTF-8 are each one FormatError line naming the file and the record."""
    path = tmp_path / "doc.json"
    path.write_bytes(text)
    if reader == "read_summary" and "NaN" in message:  # a record this project wrote: json.dumps' NaN reads
        assert _readers()[reader](path)["scenes"][0]["margin"] != 0
        return
    with pytest.raises(FormatError) as e:
        _readers()[reader](path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and message in msg, msg


def test_a_duplicated_answer_key_in_a_questions_file_stops_a_run_before_any_work(data, tmp_path):
    path = data / "hard" / "questions" / "test_questions.json"
    text = path.read_text()
    first = text.index('"answer":')
    path.write_text(text[:first] + '"answer": "purple", ' + text[first:])
    with pytest.raises(FormatError, match=r"hard/questions/test_questions\.json, at questions\[0\], key 'answer': "
                                          r"given twice"):
        _train(data, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()
