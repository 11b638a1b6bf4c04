"""The official Super-CLEVR release <-> a variant folder (nsvqa.generation.official)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nsvqa.generation.annotations import rle_to_mask
from nsvqa.generation.official import (OFFICIAL_SPLITS, SCENES_FILE, SPLITS_KEY, OfficialFormatError,
                                       OfficialRelease, decode_runs, encode_runs, export_release,
                                       import_release, parse_split_ranges, tight_box)


def _load(path: Path):
    return json.loads(Path(path).read_text())


def _coco_body(path: Path) -> dict:
    """A COCO file without its ``info`` (which names the generator)."""
    coco = _load(path)
    coco.pop("info")
    return coco


def _masks(coco: dict) -> dict:
    """(image file name, object index, part name) -> (bbox, RLE) of every annotation."""
    names = {im["id"]: im["file_name"] for im in coco["images"]}
    return {(names[a["image_id"]], a["object_index"], a.get("part_name")): (a["bbox"], a["segmentation"])
            for a in coco["annotations"]}


# ---------------------------------------------------------------------- run lengths
def test_runs_round_trip_and_the_release_conventions():
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = rng.random((7, 9)) < rng.random()
        assert (decode_runs(encode_runs(m), 7, 9) == m).all()
    m = np.zeros((2, 3), bool)
    assert encode_runs(m) == "6"
    m[0, 0] = True  # a set first pixel: a 0-long 0-run first
    assert encode_runs(m) == "0,1,5"
    m[1, 1:] = True  # row-major: the last two pixels
    assert encode_runs(m) == "0,1,3,2"
    assert decode_runs(" 0,1,3,2 ", 2, 3).tolist() == [[True, False, False], [False, True, True]]
    assert tight_box(m) == [0, 0, 3, 2] and tight_box(np.zeros((4, 4), bool)) == [0, 0, 0, 0]


@pytest.mark.parametrize("text, msg", [("1,2", "sum to 3, expected 6 = 2 x 3"), ("3,x,3", "'x' is not an integer"),
                                       ("", "sum to 0"), (None, "expected a string")])
def test_decode_runs_errors(text, msg):
    with pytest.raises(OfficialFormatError, match="MASK") as e:
        decode_runs(text, 2, 3, "MASK")
    assert msg in str(e.value)


def test_split_ranges():
    assert parse_split_ranges(["test=0-9", "train=10-99", "val=100"]) == {
        "test": (0, 9), "train": (10, 99), "val": (100, 100)}
    for bad in (["test"], ["dev=0-3"], ["test=5-2"], ["test=a-b"], ["test=0-5", "val=5-9"], ["test=0", "test=1"]):
        with pytest.raises(ValueError):
            parse_split_ranges(bad)
    assert OFFICIAL_SPLITS == {"train": (0, 19_999), "val": (20_000, 24_999), "test": (25_000, 29_999)}


# ---------------------------------------------------------------------- ours -> official -> ours
def test_round_trip_gives_identical_annotations(tiny_root, tmp_path, load_script):
    src = tiny_root / "mid"
    rel = tmp_path / "release"
    assert load_script("export_superclevr").main(["--data", str(src), "--split", "test", "--out", str(rel)]) == 0
    scenes = _load(rel / SCENES_FILE)
    assert scenes["info"][SPLITS_KEY] == {"test": [0, 1]}
    coco = _load(src / "annotations" / "test_coco.json")
    ours = _load(src / "scenes" / "test_scenes.json")["scenes"]
    for sc, mine in zip(scenes["scenes"], ours):
        # the release's format: every object has an entry, masks as run lengths at the image's size
        assert sorted(sc["obj_mask_box"], key=int) == [str(j) for j in range(len(mine["objects"]))]
        for j, o in enumerate(mine["objects"]):
            entry = sc["obj_mask_box"][str(j)]
            assert entry["info"] == o["shape"] and "mask" not in sc["objects"][j]
            box, runs = entry["obj"]
            assert (decode_runs(runs, 48, 64) == rle_to_mask(o["mask"])).all() and box == [int(v) for v in o["bbox"]]
            assert set(entry) - {"info", "obj"} == set(o["part_masks"])
            assert sc["objects"][j]["pixel_coords"] == [o["pixel_coords"], [64, 48]]
    assert sorted(p.name for p in (rel / "images").iterdir()) == ["nsvqa_test_000000.png", "nsvqa_test_000001.png"]

    out = tmp_path / "data"
    assert load_script("import_superclevr").main(["--release", str(rel), "--out", str(out), "--variant", "back",
                                                  "--width", "64", "--height", "48", "--no-progress"]) == 0
    back = out / "back"
    assert _coco_body(back / "annotations" / "test_coco.json") == {k: v for k, v in coco.items() if k != "info"}
    for a, b in zip(_load(back / "scenes" / "test_scenes.json")["scenes"], ours):
        for oa, ob in zip(a["objects"], b["objects"]):
            assert (oa["bbox"], oa["mask"], oa["part_masks"]) == (ob["bbox"], ob["mask"], ob["part_masks"])
    qa = _load(back / "questions" / "test_questions.json")["questions"]
    qb = _load(src / "questions" / "test_questions.json")["questions"]
    assert [(q["image_index"], q["program"], q["answer"], q["question_index"]) for q in qa] == \
           [(q["image_index"], q["program"], q["answer"], q["question_index"]) for q in qb]
    for name in ("nsvqa_test_000000.png", "nsvqa_test_000001.png"):
        assert (back / "images" / "test" / name).read_bytes() == (src / "images" / "test" / name).read_bytes()
    man = _load(back / "manifest.json")
    assert man["splits"]["test"]["annotations"] and not man["evaluation_only"]
    assert set(man["splits"]["test"]["sha256"]) >= {"annotations/test_coco.json", "scenes/test_scenes.json"}


def test_several_splits_get_consecutive_ranges(tiny_root, tmp_path):
    src = tiny_root / "mid"
    rel = tmp_path / "release"
    res = export_release(src, rel, log=None)
    assert {s: v["range"] for s, v in res["splits"].items()} == {"train": [0, 3], "val": [4, 5], "test": [6, 7]}
    assert len(_load(rel / "superCLEVR_questions.json")["questions"]) == 20 * 8
    got = import_release(rel, tmp_path / "data" / "back", width=64, height=48, log=None)  # the recorded ranges
    assert {s: v["images"] for s, v in got.splits.items()} == {"train": 4, "val": 2, "test": 2}
    for split in ("train", "val", "test"):
        want = _masks(_load(src / "annotations" / f"{split}_coco.json"))
        assert _masks(_load(tmp_path / "data" / "back" / "annotations" / f"{split}_coco.json")) == want
    qs = _load(tmp_path / "data" / "back" / "questions" / "val_questions.json")["questions"]
    assert {q["image_index"] for q in qs} == {4, 5} and [q["question_index"] for q in qs] == list(range(40))
    with pytest.raises(ValueError, match="exists"):
        import_release(rel, tmp_path / "data" / "back", width=64, height=48, log=None)
    with pytest.raises(ValueError, match="exists"):
        export_release(src, rel, log=None)


def test_import_with_a_resize_scales_boxes_and_masks(tiny_root, tmp_path):
    src = tiny_root / "mid"
    rel = tmp_path / "release"
    export_release(src, rel, splits=["test"], log=None)
    want = _masks(_load(src / "annotations" / "test_coco.json"))
    # twice the size: every pixel becomes a 2 x 2 block, boxes double exactly
    import_release(rel, tmp_path / "big", width=128, height=96, log=None)
    coco = _load(tmp_path / "big" / "annotations" / "test_coco.json")
    assert {(im["width"], im["height"]) for im in coco["images"]} == {(128, 96)}
    got = _masks(coco)
    assert got.keys() == want.keys()
    for k, (box, rle) in got.items():
        assert box == [2 * v for v in want[k][0]], k
        assert (rle_to_mask(rle) == np.kron(rle_to_mask(want[k][1]), np.ones((2, 2), bool))).all(), k
    # half the size: boxes halve, masks are 24 x 32 (by area: within a pixel and a half of the
    # halved box), pixel_coords scale
    res = import_release(rel, tmp_path / "small", width=32, height=24, log=None)
    man = res.manifest["splits"]["test"]
    coco = _load(tmp_path / "small" / "annotations" / "test_coco.json")
    objects = [a for a in coco["annotations"] if "part_name" not in a]
    assert len(objects) == man["counts"]["objects"]
    got = _masks(coco)
    assert set(got) == set(want)
    for k, (box, rle) in got.items():
        assert rle["size"] == [24, 32]
        assert box == [v / 2 for v in want[k][0]], k
        mask = rle_to_mask(rle)
        cover = rle_to_mask(want[k][1]).reshape(24, 2, 32, 2).mean((1, 3))  # by area
        if (cover >= 0.5).any():
            assert (mask == (cover >= 0.5)).all(), k
        else:  # a visible part stays visible: its most covered pixels
            assert (mask == (cover == cover.max())).all(), k
        mx, my, mw, mh = tight_box(mask)  # inside the halved box, widened to whole pixels
        assert np.floor(box[0]) <= mx and mx + mw <= np.ceil(box[0] + box[2]), k
        assert np.floor(box[1]) <= my and my + mh <= np.ceil(box[1] + box[3]), k
    ours = _load(src / "scenes" / "test_scenes.json")["scenes"]
    small = _load(tmp_path / "small" / "scenes" / "test_scenes.json")["scenes"]
    (x, y, d), size = small[0]["objects"][0]["pixel_coords"]
    x0, y0, d0 = ours[0]["objects"][0]["pixel_coords"]
    assert size == [32, 24] and (x, y, d) == (round(x0 / 2, 3), round(y0 / 2, 3), d0)
    with Image.open(tmp_path / "small" / "images" / "test" / "nsvqa_test_000000.png") as im:
        assert im.size == (32, 24) and im.mode == "RGB"


def test_workers_write_the_same_files(tiny_root, tmp_path):
    rel = tmp_path / "release"
    export_release(tiny_root / "mid", rel, splits=["train"], log=None)
    import_release(rel, tmp_path / "one" / "v", width=48, height=36, log=None)
    import_release(rel, tmp_path / "two" / "v", width=48, height=36, workers=2, log=None)
    for f in ("scenes/train_scenes.json", "annotations/train_coco.json", "questions/train_questions.json",
              "images/train/nsvqa_train_000003.png"):
        assert (tmp_path / "one" / "v" / f).read_bytes() == (tmp_path / "two" / "v" / f).read_bytes(), f


# ---------------------------------------------------------------------- malformed releases
W, H = 64, 48


def _rect(x: int, y: int, w: int, h: int) -> np.ndarray:
    m = np.zeros((H, W), bool)
    m[y:y + h, x:x + w] = True
    return m


def _object(shape: str, x: float) -> dict:
    return {"shape": shape, "color": "red", "material": "metal", "size": "large", "rotation": 0.0,
            "3d_coords": [x, 0.0, 0.5], "pixel_coords": [[x * 10 + 20, 24, 10.0], [W, H]], "parts": {}}


def _release(root: Path, mutate=None, boxes: bool = True) -> Path:
    """A two-object scene (image_index 7) in the release's layout at 64 x 48."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "images").mkdir(exist_ok=True)
    Image.new("RGBA", (W, H), (90, 90, 90, 255)).save(root / "images" / "superCLEVR_new_000007.png")
    sc = {"image_index": 7, "image_filename": "superCLEVR_new_000007.png", "split": "new",
          "directions": {"right": [1, 0, 0], "left": [-1, 0, 0], "front": [0, -1, 0], "behind": [0, 1, 0],
                         "above": [0, 0, 1], "below": [0, 0, -1]},
          "objects": [_object("suv", 0.0), _object("truck", 2.0)]}
    if boxes:
        car, truck, door = _rect(10, 10, 12, 8), _rect(40, 20, 10, 10), _rect(10, 10, 4, 4)
        sc["obj_mask_box"] = {
            "0": {"info": "suv_model", "obj": [tight_box(car), encode_runs(car)],
                  "front_left_door": [tight_box(door), encode_runs(door)],
                  "back_left_door": [[0, 0, 0, 0], str(W * H)]},  # a hidden part: left out
            "1": {"info": "truck_model", "obj": [tight_box(truck), encode_runs(truck)]}}
    if mutate:
        mutate(sc)
    (root / SCENES_FILE).write_text(json.dumps({"info": {"split": "new"}, "scenes": [sc]}))
    q = {"image_index": 7, "image_filename": "superCLEVR_new_000007.png", "split": "new", "question_index": 41,
         "question": "How many things?", "answer": 2,
         "program": [{"function": "scene", "inputs": [], "side_inputs": []},
                     {"function": "count", "inputs": [0], "side_inputs": []}]}
    other = dict(q, image_index=8, image_filename="superCLEVR_new_000008.png")
    (root / "superCLEVR_questions_30k.json").write_text(json.dumps({"info": {}, "questions": [q, other]}))
    return root


def test_a_well_formed_release_imports(tmp_path, capsys):
    res = import_release(_release(tmp_path / "rel"), tmp_path / "data" / "sc", splits={"test": (0, 9)},
                         width=32, height=24)
    assert "1 questions are about images outside" in capsys.readouterr().err
    sc = _load(tmp_path / "data" / "sc" / "scenes" / "test_scenes.json")["scenes"][0]
    assert sc["split"] == "test" and "obj_mask_box" not in sc
    car, truck = sc["objects"]
    assert car["bbox"] == [5.0, 5.0, 6.0, 4.0] and truck["bbox"] == [20.0, 10.0, 5.0, 5.0]
    assert list(car["part_masks"]) == ["front_left_door"] and car["part_masks"]["front_left_door"]["bbox"] == [
        5.0, 5.0, 2.0, 2.0]
    assert car["pixel_coords"] == [[10.0, 12.0, 10.0], [32, 24]]
    q, = _load(tmp_path / "data" / "sc" / "questions" / "test_questions.json")["questions"]
    assert q["question_index"] == 0 and q["source_question_index"] == 41 and q["split"] == "test"
    assert q["program"] == [{"type": "scene", "inputs": [], "value_inputs": []},
                            {"type": "count", "inputs": [0], "value_inputs": []}]
    counts = res.manifest["splits"]["test"]["counts"]
    assert (counts["objects"], counts["parts"], counts["hidden_parts"]) == (2, 1, 1)


def _set(path, value):
    def mutate(sc):
        node = sc
        for k in path[:-1]:
            node = node[k]
        if value is _DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return mutate


_DELETE = object()


@pytest.mark.parametrize("mutate, where, msg", [
    (_set(["obj_mask_box", "1", "obj", 1], "5,3"), "object 1, field 'obj_mask_box.1.obj' mask",
     "sum to 8, expected 3072 = 48 x 64"),
    (_set(["obj_mask_box", "0", "front_left_door", 1], "10,x,3062"),
     "object 0, field 'obj_mask_box.0.front_left_door' mask", "'x' is not an integer"),
    (_set(["obj_mask_box", "1", "obj", 0], [40, 20, 30, 10]), "object 1, field 'obj_mask_box.1.obj' box",
     "lies outside the 64 x 48 image"),
    (_set(["obj_mask_box", "1", "obj", 0], [-1, 20, 10, 10]), "object 1, field 'obj_mask_box.1.obj' box", "outside"),
    (_set(["obj_mask_box", "1", "obj", 0], [40, 20, 10]), "object 1, field 'obj_mask_box.1.obj' box",
     "expected a box [x, y, w, h]"),
    (_set(["obj_mask_box", "1", "obj", 0], [0, 0, 10, 10]), "object 1, field 'obj_mask_box.1.obj'",
     "lie outside its box"),
    (_set(["obj_mask_box", "1", "obj"], _DELETE), "object 1, field 'obj_mask_box.1.obj'", "missing"),
    (_set(["obj_mask_box", "1"], _DELETE), "object 1, field 'obj_mask_box.1'", "missing"),
    (_set(["obj_mask_box", "0", "front_left_door"], [[10, 10, 4, 4]]),
     "object 0, field 'obj_mask_box.0.front_left_door'", "expected [box, mask]"),
    (_set(["obj_mask_box", "0", "wing_left"], [[0, 0, 0, 0], "3072"]), "object 0, field 'obj_mask_box.0.wing_left'",
     "is not a part of 'suv'"),
    (_set(["obj_mask_box", "2"], {"obj": [[0, 0, 0, 0], "3072"]}), "field 'obj_mask_box'", "key '2'"),
    (_set(["objects", 1, "color"], _DELETE), "object 1", "color"),
    (_set(["image_filename"], "superCLEVR_new_000009.png"), "field 'image_filename'", "no image"),
])
def test_malformed_obj_mask_box_names_file_scene_object_and_field(tmp_path, mutate, where, msg):
    rel = _release(tmp_path / "rel", mutate)
    with pytest.raises(OfficialFormatError) as e:
        import_release(rel, tmp_path / "data" / "sc", splits={"test": (0, 9)}, log=None)
    text = str(e.value)
    assert str(rel / SCENES_FILE) in text and "scene image_index 7" in text, text
    assert where in text and msg in text, text
    assert isinstance(e.value, ValueError)


def test_missing_scene_fields_and_unknown_parts(tmp_path):
    rel = _release(tmp_path / "a", _set(["image_index"], _DELETE))
    with pytest.raises(OfficialFormatError, match=r"scene 0: missing field 'image_index'"):
        import_release(rel, tmp_path / "data" / "a", splits={"test": (0, 9)}, log=None)
    rel = _release(tmp_path / "b", _set(["obj_mask_box", "0", "wing_left"], [[0, 0, 1, 1], "0,1,3071"]))
    res = import_release(rel, tmp_path / "data" / "b", splits={"test": (0, 9)}, unknown_parts="skip", log=None)
    assert res.manifest["splits"]["test"]["counts"]["skipped_parts"] == 1


def test_scenes_without_obj_mask_box_are_for_evaluation_only(tmp_path, load_script, capsys):
    rel = _release(tmp_path / "rel", boxes=False)
    out = tmp_path / "data"
    assert load_script("import_superclevr").main(["--release", str(rel), "--out", str(out), "--split", "val=0-9",
                                                  "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "imported for evaluation only" in err and "evaluation only" in err.splitlines()[-1]
    folder = out / "superclevr"
    assert not (folder / "annotations").exists()
    man = _load(folder / "manifest.json")
    assert man["evaluation_only"] and man["splits"]["val"]["evaluation_only"]
    assert not man["splits"]["val"]["annotations"]
    assert "bbox" not in _load(folder / "scenes" / "val_scenes.json")["scenes"][0]["objects"][0]
    # exported again: no obj_mask_box, the same scenes
    export_release(folder, tmp_path / "again", log=None)
    assert "obj_mask_box" not in _load(tmp_path / "again" / SCENES_FILE)["scenes"][0]


def test_some_scenes_of_a_split_without_obj_mask_box(tmp_path):
    rel = _release(tmp_path / "rel")
    doc = _load(rel / SCENES_FILE)
    plain = copy.deepcopy(doc["scenes"][0])
    del plain["obj_mask_box"]
    plain.update(image_index=8, image_filename="superCLEVR_new_000008.png")
    Image.new("RGB", (W, H)).save(rel / "images" / "superCLEVR_new_000008.png")
    doc["scenes"].append(plain)
    (rel / SCENES_FILE).write_text(json.dumps(doc))
    with pytest.raises(OfficialFormatError, match="scene image_index 8: missing field 'obj_mask_box'"):
        import_release(rel, tmp_path / "data" / "sc", splits={"test": (0, 9)}, log=None)


def test_release_discovery(tmp_path):
    rel = _release(tmp_path / "rel")
    assert OfficialRelease.find(rel).questions == (rel / "superCLEVR_questions_30k.json",)
    (rel / "superCLEVR_questions_30k.json").rename(rel / "superCLEVR_questions_a.json")
    (rel / "superCLEVR_questions_b.json").write_text("[]")
    with pytest.raises(OfficialFormatError, match="several question files"):
        OfficialRelease.find(rel)
    with pytest.raises(OfficialFormatError, match="no scenes file"):
        OfficialRelease.find(tmp_path)


# ---------------------------------------------------------------------- the real sample scenes
def test_reference_samples_import_for_evaluation_only(reference_dir, tmp_path):
    from executors import load_ontology
    from nsvqa.artifacts import read_questions, read_scenes

    sc = reference_dir / "superclevr"
    release = OfficialRelease.find(sc, questions=[sc / "superCLEVR_questions_official_objects.json",
                                                  sc / "superCLEVR_questions_official_parts.json"])
    notes = []
    res = import_release(release, tmp_path / "ref", splits=parse_split_ranges(["test=0-9"]), log=notes.append)
    assert res.splits["test"]["images"] == 10 and not res.splits["test"]["annotations"]
    assert any("evaluation only" in n for n in notes)
    folder = tmp_path / "ref"
    assert not (folder / "annotations" / "test_coco.json").exists()
    assert _load(folder / "manifest.json")["splits"]["test"]["evaluation_only"] is True
    onto = load_ontology("superclevr")
    qs = read_questions(folder / "questions" / "test_questions.json", onto, require_program=True,
                        require_answer=True, require_image=True)
    assert len(qs) == 550 and [q.question_index for q in qs] == list(range(550))
    scenes = read_scenes(folder / "scenes" / "test_scenes.json")
    assert [s.image_index for s in scenes] == list(range(10))
    for s in scenes:
        s.symbolic(onto)
        with Image.open(folder / "images" / "test" / s.image_filename) as im:
            assert im.size == (320, 240) and im.mode == "RGB"
    # the answers of the release's own engine hold on the imported scenes
    from executors import DeterministicExecutor
    from executors.io import normalize_answer

    ex = DeterministicExecutor(onto)
    by_index = {s.image_index: s.symbolic(onto) for s in scenes}
    assert all(normalize_answer(ex.run(q.program, by_index[q.image_index]).answer) == q.answer for q in qs)


def test_an_object_with_no_visible_pixel(tmp_path):
    def hide(sc):
        sc["objects"].append(_object("jet", 4.0))
        sc["obj_mask_box"]["2"] = {"info": "jet_model", "obj": [[0, 0, 0, 0], str(W * H)]}

    res = import_release(_release(tmp_path / "rel", hide), tmp_path / "data" / "sc", splits={"test": (0, 9)},
                         log=None)
    assert res.manifest["splits"]["test"]["counts"]["hidden_objects"] == 1
    hidden = _load(tmp_path / "data" / "sc" / "scenes" / "test_scenes.json")["scenes"][0]["objects"][2]
    assert hidden["bbox"] == [0.0, 0.0, 0.0, 0.0] and not rle_to_mask(hidden["mask"]).any()
    ann = [a for a in _load(tmp_path / "data" / "sc" / "annotations" / "test_coco.json")["annotations"]
           if a["object_index"] == 2]
    assert [a["area"] for a in ann] == [0.0]  # the detector's dataset skips it (area 0)
