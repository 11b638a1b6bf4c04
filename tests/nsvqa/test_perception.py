"""The scene parser's perception on a split: recall, attribute accuracy, counts, ID / OOD objects of a
systematic split and where errors on held-out values land; parses built from the ground truth with
chosen mistakes."""
from __future__ import annotations

import json

import numpy as np
import pytest

from executors import SceneLikelihoods, SymbolicScene, load_ontology
from nsvqa.artifacts import read_scenes, scenes_path
from nsvqa.artifacts.likelihoods import Detection, LikelihoodsHeader, ParsedSceneRecord, write_likelihoods
from nsvqa.evaluation.perception import perception, training_counts
from nsvqa.generation.variants import load_variant

ONTO = load_ontology("superclevr")


@pytest.fixture(scope="module")
def sys_root(tmp_path_factory, require_renderer):
    from nsvqa.generation.dataset import generate_split, job_for

    root = tmp_path_factory.mktemp("sys_data")
    for variant, seed in (("sys-composition", 7), ("sys-interpolation", 8)):
        generate_split(job_for(root, variant, "test", 3, seed, 64, 48), progress=False)
    return root


def _parse(folder, path, edit=lambda i, scene, lik, dets: None):
    """A parse that finds every object with its true mask and one-hot attributes; ``edit`` changes
    a scene's likelihoods or detections in place."""
    from pycocotools import mask as mask_utils

    from nsvqa.generation.annotations import coco_rle

    records = []
    for i, s in enumerate(read_scenes(scenes_path(folder, "test"))):
        lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(s.record, ONTO))
        dets = []
        for o in s.record["objects"]:
            x, y, w, h = mask_utils.toBbox(coco_rle(o["mask"])).tolist()
            dets.append(Detection((x, y, x + w, y + h), 0.9, 1, dict(o["mask"])))
        edit(i, s.record, lik, dets)
        records.append(ParsedSceneRecord(s.image_index, s.image_filename, lik, tuple(dets)))
    write_likelihoods(path, LikelihoodsHeader(data=str(folder), split="test", detector_classes={"1": "object"}),
                      records)
    return [s.record for s in read_scenes(scenes_path(folder, "test"))]


def _set(lik, i, attribute, value):
    row = np.zeros(len(ONTO.values(attribute)))
    row[ONTO.values(attribute).index(value)] = 1.0
    lik.attributes[attribute][i] = row


def test_held_out_colours_wrong_toward_a_colour_training_showed_are_counted_apart(sys_root, tmp_path):
    folder = sys_root / "sys-composition"
    spec = load_variant("sys-composition").spec()
    held = {tuple(p) for p in spec["ood"]["test_only"]["pairs"]}

    def edit(i, scene, lik, dets):
        if i == 0:  # first object: a colour training showed with cars and buses; second: another held-out one
            _set(lik, 0, "color", "gray")
            c = next(c for (cat, c) in sorted(held) if cat == ONTO.category_of(scene["objects"][1]["shape"])
                     and c != scene["objects"][1]["color"])
            _set(lik, 1, "color", c)
            lik.exist[1] = 0.2  # and the argmax scene drops it: one object too few

    scenes = _parse(folder, tmp_path / "p.json", edit)
    objs = [o for s in scenes for o in s["objects"]]
    ood = [o for o in objs if (ONTO.category_of(o["shape"]), o["color"]) in held]
    assert len(ood) >= 2 and all((ONTO.category_of(o["shape"]), o["color"]) in held
                                 for o in scenes[0]["objects"][:2])  # the test split holds held-out pairs
    r = perception(tmp_path / "p.json", folder, spec=spec)
    assert r["all"]["objects"] == len(objs) and r["all"]["recall"] == 1.0
    cats = {ONTO.category_of(o["shape"]) for o in objs}
    assert r["all"]["recall_by_category"] == {c: {"objects": sum(ONTO.category_of(o["shape"]) == c for o in objs),
                                                  "recall": 1.0} for c in sorted(cats)}
    assert r["all"]["object.color"] == pytest.approx(1 - 2 / len(objs)) and r["all"]["object.shape"] == 1.0
    assert r["ood"]["objects"] == len(ood) and r["id"]["objects"] == len(objs) - len(ood)
    assert r["ood"]["object.color"] == pytest.approx(1 - 2 / len(ood))
    assert r["all"]["count_error"] == pytest.approx(-1 / len(scenes))
    assert r["all"]["count_exact"] == pytest.approx(1 - 1 / len(scenes))
    fb = r["fallback"]
    assert fb["wrong_colors"] == 2 and fb["seen_with_category"] == 0.5 and fb["predicted"]["gray"] == 1
    assert fb["uniform"] == pytest.approx(5 / 7)  # 5 of the 7 other colours were seen with cars and buses
    # without a systematic spec: everything, no groups
    assert set(perception(tmp_path / "p.json", folder)) == {"split", "min_exist", "all"}


def test_miscounts_on_held_out_counts_are_checked_against_the_training_counts(sys_root, tmp_path):
    folder = sys_root / "sys-interpolation"
    spec = load_variant("sys-interpolation").spec()
    assert training_counts(spec) == {3, 4, 5, 8, 9, 10}

    def edit(i, scene, lik, dets):  # every image: the last detection is missed (score and existence low)
        lik.exist[-1] = 0.1

    scenes = _parse(folder, tmp_path / "p.json", edit)
    r = perception(tmp_path / "p.json", folder, spec=spec)
    held_n = set(spec["ood"]["test_only"]["num_objects"])
    # interpolation's test grid: every image has a held-out count (6, 7) or the held-out camera scale
    assert r["id"]["images"] == 0 and r["ood"]["images"] == len(scenes) and r["ood"]["count_error"] == -1.0
    assert r["ood"]["recall"] == 1.0 and r["ood"]["objects"] == sum(len(s["objects"]) for s in scenes)
    expect = sum(len(s["objects"]) - 1 in {3, 4, 5, 8, 9, 10} for s in scenes) / len(scenes)
    assert r["fallback"]["ood"]["miscounted"] == len(scenes)
    assert r["fallback"]["ood"]["to_training_count"] == pytest.approx(expect)
    assert r["fallback"]["training_counts"] == [3, 4, 5, 8, 9, 10] and held_n == {6, 7}


def test_a_parse_of_other_images_is_refused_naming_the_file_and_field(sys_root, tmp_path):
    _parse(sys_root / "sys-composition", tmp_path / "p.json")
    with pytest.raises(ValueError, match=r"p.json, field 'data': a parse of .*sys-composition.*not of 'sys-inter"):
        perception(tmp_path / "p.json", sys_root / "sys-interpolation")
    with pytest.raises(ValueError, match=r"p.json, field 'split': a parse of 'test', not of 'val'"):
        perception(tmp_path / "p.json", sys_root / "sys-composition", "val")
    _parse(sys_root / "sys-composition", tmp_path / "q.json")
    doc = tmp_path / "q.json"
    d = json.loads(doc.read_text())  # a scene no ground-truth scene has
    d["scenes"][1]["image_index"] = 99
    doc.write_text(json.dumps(d))
    with pytest.raises(KeyError, match=r"q.json: scene 99: no ground-truth scene with that image_index"):
        perception(doc, sys_root / "sys-composition")


def test_recall_is_also_given_per_shape_category(sys_root, tmp_path):
    folder = sys_root / "sys-composition"

    def edit(i, scene, lik, dets):  # the first image's first object: its detection masks the second object
        if i == 0:
            dets[0] = dets[1]

    scenes = _parse(folder, tmp_path / "p.json", edit)
    objs = [o for s in scenes for o in s["objects"]]
    missed = ONTO.category_of(scenes[0]["objects"][0]["shape"])
    r = perception(tmp_path / "p.json", folder)
    by_cat = r["all"]["recall_by_category"]
    n = {c: sum(ONTO.category_of(o["shape"]) == c for o in objs) for c in by_cat}
    assert sum(v["objects"] for v in by_cat.values()) == len(objs) and all(v["objects"] == n[c] for c, v in by_cat.items())
    assert by_cat[missed]["recall"] == pytest.approx((n[missed] - 1) / n[missed])
    assert all(v["recall"] == 1.0 for c, v in by_cat.items() if c != missed)
    assert r["all"]["recall"] == pytest.approx(1 - 1 / len(objs))
