"""Scene-parser training, parsing and evaluation on a tiny generated variant (CPU, 64x48 images)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from executors import SceneLikelihoods, SymbolicScene, load_ontology
from executors.io import load_scenes
from nsvqa.training import scene_parser as scene_training
from nsvqa.training.checkpoint import load_checkpoint
from nsvqa.training.loading import load_scene_parser
from nsvqa.training.scene_config import SceneParserConfig
from nsvqa.evaluation.scene_parser import (attribute_accuracy, coco_ap, coco_results, executor_accuracy, load_parsed,
                                           match_objects, stack_likelihoods)
from nsvqa.training import NonFiniteLoss
from nsvqa.fileio import sha256_file

ONTO = load_ontology("superclevr")
TINY = ["--profile", "tiny", "--det-iterations", "2", "--attr-epochs", "1", "--det-crop-images", "2",
        "--threads", "1", "--no-progress"]


@pytest.fixture(scope="module")
def data(tmp_path_factory, require_renderer):
    from nsvqa.generation.dataset import generate_split, job_for

    root = tmp_path_factory.mktemp("data")
    for split, n, seed in (("train", 4, 3), ("val", 2, 4)):
        job = job_for(root, "mid", split, n, seed, 64, 48)
        generate_split(job, progress=False)
    return job.folder


@pytest.fixture(scope="module")
def run(data, tmp_path_factory, load_script):
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("run") / "scene"
    load_script("train_scene_parser").main(["--data", str(data), "--out", str(out), *TINY])
    return out


def test_run_directory_holds_config_logs_and_self_contained_checkpoints(run, data):
    cfg = json.loads((run / "config.json").read_text())["config"]
    assert cfg["profile"] == "tiny" and cfg["det_iterations"] == 2 and cfg["data"] == str(data)
    assert any((run / "tb").iterdir()) and "attributes epoch 1 val" in (run / "train.log").read_text()
    det = load_checkpoint(run / "detector.pt", kind="detector")
    # the default detector: 'object' and 'part' (the listed parts), the head names both
    assert det["train_state"]["step"] == 2 and det["vocabularies"]["num_classes"] == 3
    assert det["vocabularies"]["mode"] == "agnostic+parts" and det["vocabularies"]["part_class_ids"] == [2]
    head = load_checkpoint(run / "attributes.pt", kind="attributes")
    assert head["vocabularies"]["attributes"]["partname"] == list(ONTO.part_names)
    assert set(head["extra"]["val"]) >= {"object.shape", "object.color", "part.partname", "part.color"}
    parser = load_scene_parser(run, min_score=0.0)
    parsed = parser.parse([torch.rand(3, 48, 64)])[0]
    assert parsed.likelihoods.attributes["color"].shape[1] == len(ONTO.values("color"))


def test_resume_continues_from_the_checkpoint(run, data, tmp_path, load_script, capsys):
    from nsvqa.training.checkpoint import save_checkpoint

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    # the clock goes on from the checkpoint's: say the first call trained for 1,000 s
    ck = load_checkpoint(copy / "detector.pt")
    save_checkpoint(copy / "detector.pt", kind=ck["kind"], config=ck["config"], state_dict=ck["state_dict"],
                    vocabularies=ck["vocabularies"], train_state=ck["train_state"],
                    extra={**ck["extra"], "seconds": 1000.0, "eval_seconds": 100.0})
    load_script("train_scene_parser").main(["--data", str(data), "--out", str(copy), "--resume", "--stage",
                                            "detector", *TINY[:2], "--det-iterations", "3", "--threads", "1",
                                            "--no-progress"])
    assert "detector: resumed at step 2" in (copy / "train.log").read_text()
    resumed = load_checkpoint(copy / "detector.pt")
    assert resumed["train_state"]["step"] == 3
    assert resumed["extra"]["seconds"] > 1000.0 and resumed["extra"]["eval_seconds"] >= 100.0
    # another seed: one line naming config.json and the field, exit status 2 (issue 59: no traceback)
    assert load_script("train_scene_parser").main(["--data", str(data), "--out", str(copy), "--resume", "--seed",
                                                   "5", *TINY]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.json: cannot resume, field 'seed' was 0, now 5" in err, err


def test_a_finished_run_keeps_what_a_rerun_needs_and_a_rerun_writes_nothing(run, data, tmp_path, load_script):
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    for name in ("detector.pt", "attributes.pt"):
        ts = load_checkpoint(copy / name)["train_state"]
        assert ts["finished"] is True and "optimizer" not in ts and "scheduler" in ts, name
    # weights, crop caches and logs: with torchvision's heads and Adam's moments the detector alone was 259 MB
    size = sum(f.stat().st_size for f in copy.rglob("*") if f.is_file())
    assert size < 40e6, size
    before = {f.name: f.read_bytes() for f in copy.glob("*.pt*")}
    load_script("train_scene_parser").main(["--data", str(data), "--out", str(copy), "--resume", *TINY])
    assert {f.name: f.read_bytes() for f in copy.glob("*.pt*")} == before
    assert load_scene_parser(copy, min_score=0.0).parse([torch.rand(3, 48, 64)])[0].likelihoods is not None


def test_batches_depend_only_on_seed_and_step():
    a = [scene_training._batch_indices(5, 2, s, 0) for s in range(5)]
    assert a == [scene_training._batch_indices(5, 2, s, 0) for s in range(5)]
    flat = sum(a, [])
    assert sorted(flat[:5]) == list(range(5)) and sorted(flat[5:10]) == list(range(5))
    assert a != [scene_training._batch_indices(5, 2, s, 1) for s in range(5)]


def test_a_non_finite_loss_stops_with_the_loss_dict(data, tmp_path, monkeypatch):
    def nan_loss(out, labels):
        return {"shape": torch.tensor(float("nan"), requires_grad=True),
                "total": torch.tensor(float("nan"), requires_grad=True)}

    monkeypatch.setattr(scene_training, "attribute_loss", nan_loss)
    cfg = SceneParserConfig.from_profile(str(data), "tiny", stage="attributes", det_crop_images=0)
    with pytest.raises(NonFiniteLoss, match=r"step 0: shape=nan, total=nan"):
        scene_training.train_scene_parser(cfg, tmp_path / "nan", progress=False)


def test_parse_and_evaluate_scripts(run, data, tmp_path, load_script):
    out = tmp_path / "parsed.json"
    load_script("parse_scenes").main(["--checkpoint", str(run), "--data", str(data), "--split", "val",
                                      "--out", str(out), "--min-score", "0.0", "--no-progress",
                                      "--npz", str(tmp_path / "parsed.npz"), "--scenes-out", str(tmp_path / "sc.json")])
    doc, liks = load_parsed(out)
    assert [s["image_index"] for s in doc["scenes"]] == [0, 1] and len(liks) == 2
    arrays = np.load(tmp_path / "parsed.npz")
    symbolic, _ = load_scenes(tmp_path / "sc.json", ONTO)  # the argmax scenes read as any scene file
    assert [len(sc) for sc in symbolic] == [len(lik) for lik in liks]
    assert [sc.image_filename for sc in symbolic] == [s["image_filename"] for s in doc["scenes"]]
    rc = load_script("execute_programs").main(["--scenes", str(tmp_path / "sc.json"), "--questions",
                                               str(data / "questions" / "val_questions.json"),
                                               "--out", str(tmp_path / "answers.jsonl")])
    assert rc == 0
    answers = (tmp_path / "answers.jsonl").read_text().splitlines()
    assert load_script("execute_programs").main(["--scenes", str(tmp_path / "sc.json"), "--questions",
                                                 str(data / "questions" / "val_questions.json"), "--executor",
                                                 "probabilistic", "--likelihoods", str(out),
                                                 "--out", str(tmp_path / "p_answers.jsonl")]) == 0
    assert len((tmp_path / "p_answers.jsonl").read_text().splitlines()) == len(answers) > 0
    for k, (s, lik) in enumerate(zip(doc["scenes"], liks)):
        assert len(s["detections"]) == len(lik) == arrays["valid"][k].sum()
        np.testing.assert_allclose(arrays["attr.color"][k, :len(lik)], lik.attributes["color"])
        np.testing.assert_allclose(arrays["exist"][k, :len(lik)], lik.exist)
    load_script("evaluate_scene_parser").main(["--parsed", str(out), "--data", str(data), "--split", "val",
                                               "--out", str(tmp_path / "m.json")])
    m = json.loads((tmp_path / "m.json").read_text())
    assert 0 <= m["coco_objects"]["segm"]["AP50"] <= 1
    assert m["attributes"]["objects_gt"] == sum(len(o) for o in [s["objects"] for s in _scenes(data, "val")])
    assert m["executors"]["questions"]["all"] == len(json.loads((data / "questions" / "val_questions.json")
                                                             .read_text())["questions"])


def _scenes(data, split):
    return json.loads((data / "scenes" / f"{split}_scenes.json").read_text())["scenes"]


def _gt_parse(data, split):
    """A perfect parse of the split, in the likelihoods.json form: ground-truth masks as detections,
    one-hot attributes, ground-plane positions (relations from them, as a parser's would be)."""
    scenes = []
    liks = []
    for s in _scenes(data, split):
        full = SceneLikelihoods.from_scene(SymbolicScene.from_json(s, ONTO))
        lik = SceneLikelihoods(ONTO, full.exist, full.attributes, full.positions[:, :2], None,
                               {r: np.asarray(v)[:2] for r, v in s["directions"].items()}, ONTO.relation_margin,
                               None, full.part_exist, full.part_attributes, s["image_index"])
        dets, parts = [], []
        for i, o in enumerate(s["objects"]):
            x, y, w, h = o["bbox"]
            dets.append({"box": [x, y, x + w, y + h], "score": 1.0, "label": ONTO.values("shape").index(o["shape"]) + 1,
                         "mask": o["mask"]})
            for name in sorted(o["parts"]):  # the listed parts, under their names' COCO ids
                pm = o["part_masks"][name]
                x, y, w, h = pm["bbox"]
                parts.append({"object": i, "box": [x, y, x + w, y + h], "score": 1.0, "mask": pm["mask"],
                              "label": len(ONTO.scene_values("shape")) + 1 + ONTO.part_names.index(name)})
        scenes.append({"image_index": s["image_index"], "detections": dets, "parts": parts, "likelihoods": lik.to_json()})
        liks.append(lik)
    classes = {str(len(ONTO.scene_values("shape")) + 1 + k): name for k, name in enumerate(ONTO.part_names)}
    return {"version": 1, "scenes": scenes, "detector_classes": classes}, liks


def test_a_perfect_parse_scores_perfectly(data):
    doc, liks = _gt_parse(data, "val")
    gt_path = data / "annotations" / "val_coco.json"
    shapes = list(range(1, 22))
    ap = coco_ap(gt_path, coco_results(doc), [0, 1], shapes)
    assert ap["bbox"]["AP50"] == pytest.approx(1.0) and ap["segm"]["AP"] == pytest.approx(1.0)
    acc = attribute_accuracy(doc, liks, {s["image_index"]: s for s in _scenes(data, "val")})
    assert acc["recall"] == acc["precision"] == 1.0
    assert all(acc[f"object.{a}"] == 1.0 for a in ("shape", "color", "material", "size", "texture"))
    assert all(acc[f"object.{a}.ece"] == pytest.approx(0.0) for a in ("shape", "color", "material"))  # certain, right
    assert acc["object.position_rmse"] == pytest.approx(0.0, abs=1e-6)
    assert acc["part.recall"] == 1.0 and acc["part.color"] == 1.0
    assert acc["parts_listed"] > 0 and acc["part.recall_mask"] == 1.0 and acc["part.partname"] == 1.0
    arrays = stack_likelihoods(liks)
    n = max(len(lik) for lik in liks)
    assert arrays["part_exist"].shape == (2, n, len(ONTO.part_names))
    for k, lik in enumerate(liks):
        assert arrays["valid"][k].sum() == len(lik) and not arrays["exist"][k, len(lik):].any()
        np.testing.assert_array_equal(arrays["part_attr.color"][k, :len(lik)], lik.part_attributes["color"])
    qs = json.loads((data / "questions" / "val_questions.json").read_text())["questions"]
    ex = executor_accuracy(liks, qs, ONTO)
    for model in ("nsvqa", "pnsvqa", "pnsvqa-exact"):
        assert ex[model]["all"] == 1.0, (model, ex)
    paired = ex["paired"]["pnsvqa-exact - nsvqa"]["all"]
    assert paired["diff"] == 0.0 and paired["ci95"] == [0.0, 0.0] and paired["n"] == ex["questions"]["all"]


def test_a_wrong_parse_scores_lower(data):
    doc, liks = _gt_parse(data, "val")
    for s in doc["scenes"]:  # every label wrong, the first detection moved off its object
        for d in s["detections"]:
            d["label"] = d["label"] % 21 + 1
        x0, y0, x1, y1 = s["detections"][0]["box"]
        s["detections"][0]["box"] = [x0 + 30, y0, x1 + 30, y1]
    ap = coco_ap(data / "annotations" / "val_coco.json", coco_results(doc), [0, 1], list(range(1, 22)))
    assert ap["bbox"]["AP50"] == 0.0 and ap["bbox_agnostic"]["AP50"] < 1.0
    assert ap["segm_agnostic"]["AP50"] == pytest.approx(1.0)  # masks still right, classes ignored
    for lik in liks:  # every color wrong
        lik.attributes["color"] = np.roll(lik.attributes["color"], 1, axis=1)
    acc = attribute_accuracy(doc, liks, {s["image_index"]: s for s in _scenes(data, "val")})
    assert acc["object.color"] == 0.0 and acc["object.shape"] == 1.0
    assert acc["object.color.ece"] == pytest.approx(1.0)  # certain and always wrong
    # parts: found by their masks but named wrong, or owned by another object
    for s in doc["scenes"]:
        for p in s["parts"]:
            p["label"] = int(p["label"]) + 1 if int(p["label"]) < 21 + len(ONTO.part_names) else 22
    acc = attribute_accuracy(doc, liks, {s["image_index"]: s for s in _scenes(data, "val")})
    assert acc["part.recall_mask"] == 1.0 and acc["part.partname"] == 0.0
    for s in doc["scenes"]:
        for p in s["parts"]:
            p["object"] = -1
    assert attribute_accuracy(doc, liks, {s["image_index"]: s for s in _scenes(data, "val")})["part.recall_mask"] == 0.0


def test_true_attributes_undo_exactly_that_attribute_s_errors(data):
    """with_true_attributes restores the matched detections' true value of the attributes named,
    leaves the others (and the input likelihoods) alone; the executors then get back what the
    attribute's errors cost."""
    from nsvqa.evaluation.scene_parser import with_true_attributes

    doc, liks = _gt_parse(data, "val")
    for lik in liks:  # every color and every material wrong
        for a in ("color", "material"):
            lik.attributes[a] = np.roll(lik.attributes[a], 1, axis=1)
    gt = {s["image_index"]: s for s in _scenes(data, "val")}
    qs = json.loads((data / "questions" / "val_questions.json").read_text())["questions"]
    fixed = with_true_attributes(doc, liks, gt, ["color"])
    acc = attribute_accuracy(doc, fixed, gt)
    assert acc["object.color"] == 1.0 and acc["object.material"] == 0.0
    assert attribute_accuracy(doc, liks, gt)["object.color"] == 0.0  # the input untouched
    both = with_true_attributes(doc, liks, gt, ["color", "material"])
    assert executor_accuracy(both, qs, ONTO)["nsvqa"]["all"] == 1.0
    assert executor_accuracy(liks, qs, ONTO)["nsvqa"]["all"] < 1.0
    with pytest.raises(KeyError, match="'colour'"):
        with_true_attributes(doc, liks, gt, ["colour"])


def test_match_objects_is_one_to_one_by_mask_iou():
    from nsvqa.generation.annotations import mask_to_rle

    def encode_mask(mask):
        return mask_to_rle(mask)[0]

    m = np.zeros((3, 10, 10), dtype=bool)
    m[0, :5, :5] = True
    m[1, :5, :6] = True  # IoU 25/30 with ground truth 0: loses it to the exact detection 1
    m[2, 6:, 6:] = True
    gts = [encode_mask(m[0]), encode_mask(m[2])]
    dets = [encode_mask(m[1]), encode_mask(m[0]), encode_mask(m[2])]
    assert sorted(match_objects(dets, gts)) == [(1, 0), (2, 1)]
    assert match_objects([], gts) == [] and match_objects(dets, gts, min_iou=1.01) == []


def test_part_crops_are_the_listed_parts_plus_a_few_others(data):
    scenes = _scenes(data, "train")
    objects = sum(len(s["objects"]) for s in scenes)
    listed = sum(len(o["parts"]) for s in scenes for o in s["objects"])
    others = sum(min(1, len(set(o["part_masks"]) - set(o["parts"]))) for s in scenes for o in s["objects"])
    crops = scene_training.gt_crops(data, "train", 16, parts=True, progress=False, extra_parts=1)
    assert int((crops.kind == 0).sum()) == objects
    assert int((crops.kind == 1).sum()) == listed + others
    everything = scene_training.gt_crops(data, "train", 16, parts=True, progress=False, extra_parts=None)
    assert int((everything.kind == 1).sum()) == sum(len(o["part_masks"]) for s in scenes for o in s["objects"])
    assert torch.equal(crops.x, scene_training.gt_crops(data, "train", 16, parts=True, progress=False,
                                                        extra_parts=1).x)  # same seed, same crops


def test_object_part_crops_show_the_part_on_its_object(data):
    """part_crop="object": a part's crop is its object's box with the part's mask; objects are
    cropped the same either way."""
    from nsvqa.generation.annotations import rle_to_mask
    from nsvqa.artifacts.images import read_image
    from nsvqa.training.datasets import AttributeCropDataset
    from parsers.scene.crops import crop_instance

    own = scene_training.gt_crops(data, "train", 16, parts=True, progress=False, extra_parts=0)
    ctx = scene_training.gt_crops(data, "train", 16, parts=True, progress=False, extra_parts=0, part_crop="object")
    objects = own.kind == 0
    assert torch.equal(own.x[objects], ctx.x[objects]) and not torch.equal(own.x[~objects], ctx.x[~objects])
    ds = AttributeCropDataset(data, "train", 16, parts=True, part_crop="object")
    item = next(it for it in ds.items if it.part is not None)
    scene = ds.scenes[item.image_index]
    o = scene["objects"][item.object_index]
    img = read_image(data / "images" / "train" / scene["image_filename"])
    mask = torch.from_numpy(rle_to_mask(o["part_masks"][item.part]["mask"])).float()[None]
    torch.testing.assert_close(ds[ds.items.index(item)][0], crop_instance(img, mask, o["bbox"], 16))
    with pytest.raises(ValueError, match="part_crop"):
        AttributeCropDataset(data, "train", 16, part_crop="scene")


def test_a_head_trained_for_another_runs_detector(run, data, tmp_path, load_script):
    head_dir = tmp_path / "head"
    load_script("train_scene_parser").main(["--data", str(data), "--out", str(head_dir), "--stage", "attributes",
                                            "--detector", str(run / "detector.pt"), "--min-score", "0.0", *TINY])
    assert not (head_dir / "detector.pt").exists()
    assert bool((load_checkpoint(head_dir / "crops_train_det.pt")["state_dict"]["source"] == 1).all())
    parser = load_scene_parser(head_dir, min_score=0.0)
    shape = parser.parse([torch.rand(3, 48, 64)])[0].likelihoods.attributes["shape"]
    assert shape.shape[1] == 22 and not shape[:, 21].any()  # the head's 21 shapes; addi never predicted
    load_script("parse_scenes").main(["--checkpoint", str(head_dir), "--data", str(data), "--split", "val",
                                      "--out", str(tmp_path / "p.json"), "--no-progress"])
    assert json.loads((tmp_path / "p.json").read_text())["detector"] == str(run / "detector.pt")


def test_a_crop_cache_made_with_other_crop_settings_is_cut_again_not_reused(run, data, tmp_path, load_script):
    args = ["--data", str(data), "--stage", "attributes", "--detector", str(run / "detector.pt"), "--min-score",
            "0.0", *TINY]
    first = tmp_path / "first"
    load_script("train_scene_parser").main(["--out", str(first), *args])
    names = ("crops_train_gt.pt", "crops_train_det.pt", "crops_val_gt.pt")
    tiny = load_checkpoint(first / names[0], kind="crops")["extra"]["made_from"]["crop_size"]
    for out, extra in ((tmp_path / "same", []), (tmp_path / "other", ["--set", f"crop_size={tiny + 8}"])):
        out.mkdir()
        for n in names:  # a run handed another run's caches, as a lever sweep does
            for f in (n, f"{n}.sha256"):
                shutil.copyfile(first / f, out / f)
        load_script("train_scene_parser").main(["--out", str(out), *args, *extra])
        side = tiny + 8 if extra else tiny
        for n in names:
            ck = load_checkpoint(out / n, kind="crops")
            assert ck["state_dict"]["x"].shape[-1] == side
            assert ck["extra"]["made_from"]["crop_size"] == side
            assert ((out / n).read_bytes() == (first / n).read_bytes()) == (not extra)
        log = (out / "train.log").read_text()
        assert ("cut with other crop_size; cutting again" in log) == bool(extra)
    det = load_checkpoint(first / "crops_train_det.pt", kind="crops")["extra"]["made_from"]
    assert det["detector_sha256"] == sha256_file(run / "detector.pt")


def test_detector_crops_carry_the_labels_of_the_ground_truth_they_match(data):
    """A detector that returns the ground-truth masks (in shuffled order, plus a miss) gets every
    object matched to its own labels."""
    from nsvqa.generation.annotations import rle_to_mask

    scenes = _scenes(data, "train")[:2]

    class Oracle(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = iter(scenes)

        def forward(self, images):
            s = next(self.calls)
            objs = s["objects"][::-1]
            masks = [torch.from_numpy(rle_to_mask(o["mask"])).bool() for o in objs]
            boxes = [[o["bbox"][0], o["bbox"][1], o["bbox"][0] + o["bbox"][2], o["bbox"][1] + o["bbox"][3]] for o in objs]
            miss = torch.zeros_like(masks[0])
            miss[:2, :2] = True
            return [{"boxes": torch.tensor(boxes + [[0, 0, 2, 2]], dtype=torch.float32),
                     "labels": torch.tensor([1] * len(objs) + [2]), "scores": torch.ones(len(objs) + 1),
                     "masks": torch.stack(masks + [miss])[:, None].float()}]

    crops = scene_training.detector_crops(Oracle(), {"part_class_ids": []}, data, "train", 16, 2, 0.5, 0.5,
                                          parts=False, progress=False)
    objects = [o for s in scenes for o in s["objects"]]
    assert len(crops) == len(objects) and bool((crops.source == 1).all())
    shapes = sorted(ONTO.values("shape").index(o["shape"]) for o in objects)
    assert sorted(crops.labels["shape"].tolist()) == shapes
    assert sorted(crops.labels["color"].tolist()) == sorted(ONTO.values("color").index(o["color"]) for o in objects)


def test_agnostic_detector_outputs_are_labelled_with_the_heads_shape(data, tmp_path, load_script):
    out = tmp_path / "agnostic"
    load_script("train_scene_parser").main(["--data", str(data), "--out", str(out), "--mode", "agnostic", *TINY])
    det = load_checkpoint(out / "detector.pt", kind="detector")
    assert det["vocabularies"]["num_classes"] == 2 and det["vocabularies"]["mode"] == "agnostic"
    parser = load_scene_parser(out, min_score=0.0)
    parser.detector.roi_heads.score_thresh = 0.0
    torch.manual_seed(1)
    parsed = [p for p in parser.parse([torch.rand(3, 48, 64) for _ in range(4)]) if len(p.labels)]
    assert parsed, "the untrained detector found nothing to label"
    ids = det["vocabularies"]["shape_ids"]
    for p in parsed:
        shapes = [ONTO.values("shape")[k] for k in p.likelihoods.attributes["shape"].argmax(1)]
        assert p.labels.tolist() == [ids[s] for s in shapes]
    assert set(parser.detector_classes.values()) == set(ONTO.scene_values("shape"))  # no class for addi


class _Oracle(torch.nn.Module):
    """A stand-in detector: each image's ground-truth object boxes and masks (label 1), or none;
    with ``parts`` ("listed" or "visible") also those parts of every object (label 2)."""

    def __init__(self, scenes, empty=False, parts=None):
        super().__init__()
        self.by_size = scenes
        self.empty, self.parts = empty, parts
        self.k = 0

    def forward(self, images):
        from nsvqa.generation.annotations import rle_to_mask

        out = []
        for img in images:
            sc = self.by_size[self.k]
            self.k += 1
            anns = [] if self.empty else [(o, 1) for o in sc["objects"]]
            if self.parts and not self.empty:
                anns += [(pm, 2) for o in sc["objects"] for name, pm in sorted(o["part_masks"].items())
                         if self.parts == "visible" or name in o["parts"]]
            boxes = torch.tensor([[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2], a["bbox"][1] + a["bbox"][3]]
                                  for a, _ in anns], dtype=torch.float32).reshape(-1, 4)
            masks = torch.stack([torch.from_numpy(rle_to_mask(a["mask"]).astype(np.float32))[None] for a, _ in anns]) \
                if anns else torch.zeros((0, 1) + tuple(img.shape[1:]))
            out.append({"boxes": boxes, "scores": torch.ones(len(anns)), "masks": masks,
                        "labels": torch.tensor([c for _, c in anns], dtype=torch.int64)})
        return out


def test_detector_ap_scores_a_detector_alone(data, tmp_path, load_script):
    from nsvqa.evaluation.scene_parser import detector_ap

    scenes = json.loads((data / "scenes" / "val_scenes.json").read_text())["scenes"]
    ap = detector_ap(_Oracle(scenes), data, "val")
    assert ap["images"] == len(scenes)
    assert ap["bbox"]["AP50"] == pytest.approx(1.0) and ap["segm"]["AP50"] == pytest.approx(1.0)
    assert detector_ap(_Oracle(scenes, empty=True), data, "val")["bbox"]["AP50"] == 0.0
    assert detector_ap(_Oracle(scenes), data, "val", limit=1)["images"] == 1


def test_detector_ap_scores_objects_and_listed_parts_apart(data):
    from nsvqa.evaluation.scene_parser import detector_ap

    scenes = json.loads((data / "scenes" / "val_scenes.json").read_text())["scenes"]
    assert any(o["parts"] for s in scenes for o in s["objects"]), "the fixture lists no parts"
    listed = detector_ap(_Oracle(scenes, parts="listed"), data, "val", part_class_ids=[2])
    # the part detections are not false objects, and the listed parts are all found
    assert listed["bbox"]["AP50"] == pytest.approx(1.0)
    assert listed["parts"]["bbox"]["AP50"] == pytest.approx(1.0) and listed["parts"]["segm"]["AP50"] == pytest.approx(1.0)
    # every visible part: the unlisted ones are false positives of the listed-parts AP (all at score 1)
    visible = detector_ap(_Oracle(scenes, parts="visible"), data, "val", part_class_ids=[2])
    assert visible["bbox"]["AP50"] == pytest.approx(1.0) and visible["parts"]["bbox"]["AP50"] < 0.9
    # without part classes every detection is an object: the parts are false objects
    assert detector_ap(_Oracle(scenes, parts="listed"), data, "val")["bbox"]["AP50"] < 0.9
    assert "parts" not in detector_ap(_Oracle(scenes), data, "val")


@pytest.mark.parametrize("mode", ["objects+parts", "agnostic+parts"])
def test_parts_modes_train_on_the_listed_parts(data, mode):
    from nsvqa.training.datasets import DetectionDataset

    ds = DetectionDataset(data, "train", mode)
    plain = DetectionDataset(data, "train", "objects")
    scenes = {s["image_index"]: s for s in _scenes(data, "train")}
    for i, iid in enumerate(ds.image_ids):
        _, target = ds[i]
        objs = scenes[iid]["objects"]
        n_listed = sum(len(o["parts"]) for o in objs)
        labels = target["labels"].tolist()
        assert len(labels) == len(objs) + n_listed == len(target["masks"]) == len(target["boxes"])
        parts = [c for c in labels if c in ds.part_class_ids]
        assert len(parts) == n_listed
        if mode == "agnostic+parts":
            assert sorted(set(labels) - {2}) == [1] and ds.part_class_ids == [2]
        else:  # the part names' COCO ids, one per listed part
            names = sorted(p for o in objs for p in o["parts"])
            assert sorted(ds.categories[c] for c in parts) == names
        assert plain[i][1]["labels"].tolist() == [c for c in labels if c not in ds.part_class_ids] \
            or mode == "agnostic+parts"
    assert ds.num_classes == (3 if mode == "agnostic+parts" else max(ds.part_ids.values()) + 1)


def test_agnostic_parts_take_their_names_from_the_head(data, tmp_path, load_script):
    out = tmp_path / "agnostic_parts"
    load_script("train_scene_parser").main(["--data", str(data), "--out", str(out), "--mode", "agnostic+parts", *TINY])
    det = load_checkpoint(out / "detector.pt", kind="detector")
    v = det["vocabularies"]
    assert v["num_classes"] == 3 and v["part_class_ids"] == [2] and v["classes"] == {"1": "object", "2": "part"}
    parser = load_scene_parser(out, min_score=0.0)
    assert parser.part_classes == {2: None}
    parser.detector.roi_heads.score_thresh = 0.0
    parser.min_containment = 0.0  # every part belongs to the object that overlaps it most
    torch.manual_seed(1)
    parsed = [p for p in parser.parse([torch.rand(3, 48, 64) for _ in range(6)]) if len(p.part_labels)]
    assert parsed, "the untrained detector found no parts to name"
    names = list(ONTO.part_names)
    for p in parsed:
        # part labels are the COCO ids of the names the head found most likely
        assert set(p.part_labels.tolist()) <= set(v["part_ids"].values())
        owned = p.part_owner >= 0
        if owned.any() and len(p.labels):
            lik = p.likelihoods
            assert lik.part_exist is not None and lik.part_exist.shape == (len(p.labels), len(names))
            # existence spread over names: never above the detection's score
            assert lik.part_exist.max() <= p.part_scores.max() + 1e-9


def test_head_epochs_log_end_to_end_accuracy(run, data, tmp_path, load_script):
    """e2e_eval_images: after each head epoch the run's parser answers the val questions."""
    from nsvqa.evaluation.curves import learning_curves

    out = tmp_path / "e2e"
    load_script("train_scene_parser").main(["--data", str(data), "--out", str(out), "--stage", "attributes",
                                            "--detector", str(run / "detector.pt"), "--min-score", "0.0",
                                            "--set", "e2e_eval_images=2", *TINY])
    rows = learning_curves(out)["end_to_end"]
    assert [r["step"] for r in rows] == [1] and 0.0 <= rows[0]["nsvqa.all"] <= 1.0 and "pnsvqa-exact.all" in rows[0]


def _scripted_e2e(monkeypatch, values):
    """executor_accuracy as the head's epochs see it: P-NSVQA-exact on object questions = ``values``
    in turn (the test decides which epoch is best)."""
    it = iter(values)

    def fake(liks, questions, ontology, *a, **k):
        v = next(it)
        return {"questions": {"all": 4, "objects": 4, "parts": 0}, "pnsvqa-exact": {"all": v, "objects": v},
                "paired": {}}

    monkeypatch.setattr(scene_training, "executor_accuracy", fake)


def test_the_head_kept_is_the_best_end_to_end_epoch_and_patience_stops_the_run(run, data, tmp_path, load_script,
                                                                             monkeypatch):
    """attr_select e2e: the run keeps the epoch with the best end-to-end val accuracy; with
    attr_patience it stops after that many epochs without a better one, and a resume trains nothing."""
    _scripted_e2e(monkeypatch, [0.5, 0.8, 0.6, 0.7, 0.9, 0.9])
    out = tmp_path / "select"
    args = ["--data", str(data), "--out", str(out), "--stage", "attributes", "--detector", str(run / "detector.pt"),
            "--min-score", "0.0", "--profile", "tiny", "--attr-epochs", "6", "--threads", "1", "--no-progress",
            "--set", "e2e_eval_images=1", "--set", "attr_select=e2e", "--set", "attr_patience=2"]
    load_script("train_scene_parser").main(args)
    ck = load_checkpoint(out / "attributes.pt", kind="attributes")
    assert ck["extra"]["best"] == {"epoch": 2, "value": 0.8}
    assert ck["extra"]["val"]["e2e.pnsvqa-exact.objects"] == 0.8  # the kept head's metrics
    assert ck["extra"]["last_val"]["e2e.pnsvqa-exact.objects"] == 0.7 and ck["extra"]["epochs_run"] == 4
    assert ck["train_state"]["finished"] is True and ck["train_state"]["stopped_early"] is True
    assert not (out / "attributes_best.pt").exists()
    assert "stopping early" in (out / "train.log").read_text()
    before = (out / "attributes.pt").read_bytes()
    load_script("train_scene_parser").main(args + ["--resume"])
    assert (out / "attributes.pt").read_bytes() == before


def test_choosing_end_to_end_without_a_detector_is_refused_before_training(data, tmp_path, load_script, capsys):
    out = tmp_path / "nodet"
    code = load_script("train_scene_parser").main(
        ["--data", str(data), "--out", str(out), "--stage", "attributes", "--profile", "tiny", "--threads", "1",
         "--no-progress", "--set", "e2e_eval_images=1", "--set", "attr_select=e2e"])
    assert code == 2 and "detector.pt: missing" in capsys.readouterr().err
    assert not (out / "attributes.pt").exists()


def test_calibration_stores_temperatures_that_the_parser_applies(run, data, tmp_path, load_script):
    out = tmp_path / "calibrated"
    load_script("train_scene_parser").main(
        ["--data", str(data), "--out", str(out), "--stage", "attributes", "--detector", str(run / "detector.pt"),
         "--min-score", "0.0", *TINY[:2], "--attr-epochs", "1", "--threads", "1", "--no-progress", "--set",
         "calibrate=true", "--set", "attr_augment=shift", "--set", "attr_clip=1.0"])
    ck = load_checkpoint(out / "attributes.pt", kind="attributes")
    temps = ck["vocabularies"]["temperatures"]
    assert set(temps) >= {"shape", "color", "material", "size"} and all(t > 0 for t in temps.values())
    ece = ck["extra"]["calibration"]["ece"]
    assert set(ece) >= {"object.shape", "object.material"}
    assert all(0.0 <= e["before"] <= 1.0 and 0.0 <= e["after"] <= 1.0 for e in ece.values())
    parser = load_scene_parser(out, min_score=0.0)
    assert parser.temperatures == pytest.approx(temps)
    torch.manual_seed(1)
    image = torch.rand(3, 48, 64)
    hot = parser.parse([image])[0].likelihoods.attributes["color"]
    parser.temperatures = {a: 1e3 for a in temps}  # far above 1: every distribution near uniform
    flat = parser.parse([image])[0].likelihoods.attributes["color"]
    if len(hot):
        placed = [ONTO.values("color").index(v) for v in ONTO.scene_values("color")]
        assert np.allclose(flat[:, placed], 1 / len(placed), atol=1e-3) and flat.max() < hot.max()


def test_a_part_share_trains_each_epoch_on_every_object_crop_and_that_share_of_the_part_crops(run, data, tmp_path,
                                                                                             load_script):
    steps = {}
    for share in (1.0, 0.25):
        out = tmp_path / f"share{share}"
        load_script("train_scene_parser").main(
            ["--data", str(data), "--out", str(out), "--stage", "attributes", "--detector", str(run / "detector.pt"),
             "--min-score", "0.0", "--profile", "tiny", "--attr-epochs", "2", "--threads", "1", "--no-progress",
             "--set", "attr_batch=4", "--set", f"attr_part_share={share}"])
        crops = [scene_training.CropSet.from_state(load_checkpoint(out / f"{n}.pt", kind="crops")["state_dict"])
                 for n in ("crops_train_gt", "crops_train_det") if (out / f"{n}.pt").exists()]
        kind = torch.cat([c.kind for c in crops])
        parts = int((kind == 1).sum())
        assert parts > 4  # the fixture's objects have listed parts
        per_epoch = int((kind == 0).sum()) + round(share * parts)
        ck = load_checkpoint(out / "attributes.pt", kind="attributes")
        steps[share] = ck["train_state"]["scheduler"]["last_epoch"]
        assert steps[share] == 2 * (per_epoch // 4)
    assert steps[0.25] < steps[1.0]


@pytest.mark.parametrize("fields, message", [({"attr_part_share": 0.0}, "attr_part_share must be in"),
                                             ({"attr_part_share": 1.5}, "attr_part_share must be in"),
                                             ({"attr_patience": 2}, "needs attr_select 'e2e'"),
                                             ({"attr_select": "e2e", "e2e_eval_images": 0}, "e2e_eval_images must be")])
def test_the_head_schedule_fields_are_checked(fields, message):
    SceneParserConfig(data="d").check()
    with pytest.raises(ValueError, match=message):
        SceneParserConfig(data="d", **fields).check()
