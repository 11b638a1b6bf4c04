"""End-to-end generation at 64x48: determinism, resume, masks, relationships, COCO, variants."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from executors import DeterministicExecutor, Program, SymbolicScene, load_ontology
from nsvqa.generation.annotations import rle_to_mask

from nsvqa.generation.dataset import generate_split, job_for, png_bytes

W, H, N = 64, 48, 4


def _job(root: Path, variant: str = "mid", n: int = N, seed: int = 3):
    return job_for(root, variant, "val", n, seed, W, H)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory, require_renderer):
    """The same split generated three times: in-process, with 2 workers, and across 2 shards."""
    roots = [tmp_path_factory.mktemp(n) for n in ("one", "two", "shards")]
    generate_split(_job(roots[0]), workers=1, progress=False)
    generate_split(_job(roots[1]), workers=2, progress=False)
    generate_split(_job(roots[2]), shard=(1, 2), progress=False)
    generate_split(_job(roots[2]), shard=(0, 2), progress=False)
    return roots


def test_png_bytes_keep_the_pixels_and_repeat_exactly():
    rng = np.random.default_rng(0)
    flat = np.repeat(rng.integers(0, 256, (H, 1, 3), dtype=np.uint8), W, axis=1)  # runs, as renders have
    noisy = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    for rgb in (flat, noisy):
        data = png_bytes(rgb)
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and data == png_bytes(rgb.copy())
        with Image.open(io.BytesIO(data)) as im:
            assert im.mode == "RGB" and np.array_equal(np.asarray(im), rgb)
    assert len(png_bytes(flat)) < len(png_bytes(noisy)) / 10  # really compressed


def test_same_bytes_for_any_division_of_the_work(generated):
    a, b, c = (_files(r / "mid") for r in generated)
    assert sorted(a) == sorted(b) == sorted(c)
    assert len([k for k in a if k.endswith(".png")]) == N
    # the per-image records (resume markers) are gone once the split is merged
    assert sorted(k for k in a if not k.startswith("images/")) == [
        "annotations/val_coco.json", "manifest.json", "questions/val_questions.json", "scenes/val_scenes.json",
        "scenes/val_visual_parts.json"]  # kept: a larger split of the same settings reuses these images
    for k in a:
        assert a[k] == b[k] == c[k], k


def test_resume_after_an_interruption_gives_the_same_bytes(generated, tmp_path):
    job = _job(tmp_path)

    class Stop(Exception):
        pass

    def stop_after_two(k, seen=[]):
        seen.append(k)
        if len(seen) == 2:
            raise Stop

    with pytest.raises(Stop):
        generate_split(job, progress=False, on_image=stop_after_two)
    assert not (job.folder / "manifest.json").exists()
    assert not list(job.folder.rglob("*.tmp"))
    res = generate_split(job, progress=False)
    assert (res["rendered"], res["skipped"], res["finalized"]) == (N - 2, 2, True)
    assert _files(job.folder) == _files(generated[0] / "mid")


@pytest.fixture(scope="module")
def scenes(generated):
    data = json.loads((generated[0] / "mid" / "scenes" / "val_scenes.json").read_text())
    return data["scenes"]


def test_scene_records(scenes):
    onto = load_ontology("superclevr")
    assert [s["image_index"] for s in scenes] == list(range(N))
    for s in scenes:
        assert 3 <= len(s["objects"]) <= 10
        for o in s["objects"]:
            mask = rle_to_mask(o["mask"])
            assert mask.shape == (H, W) and mask.sum() > 0
            ys, xs = np.nonzero(mask)
            x, y, w, h = o["bbox"]
            assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (x, y, x + w, y + h)
            px, py, depth = o["pixel_coords"]
            assert x - 2 <= px <= x + w + 2 and y - 2 <= py <= y + h + 2 and depth > 0
            assert set(o["parts"]) <= set(o["part_masks"])        # recoloured parts are visible
            for name, pm in o["part_masks"].items():
                pmask = rle_to_mask(pm["mask"])
                assert pmask.sum() > 0 and not (pmask & ~mask).any()  # parts lie inside their object
                assert name in onto.parts_of(o["shape"])
        # relationships are what the executors compute from the coordinates (0.2 margin)
        plain = {k: v for k, v in s.items() if k != "relationships"}
        assert SymbolicScene.from_json(plain, onto).relation_lists() == s["relationships"]


def test_coco_file_loads_in_pycocotools(generated, scenes):
    from pycocotools.coco import COCO

    coco = COCO(str(generated[0] / "mid" / "annotations" / "val_coco.json"))
    onto = load_ontology("superclevr")
    assert len(coco.getCatIds()) == 21 + len(onto.part_names)
    for s in scenes:
        anns = coco.loadAnns(coco.getAnnIds(imgIds=[s["image_index"]]))
        objs = [a for a in anns if "part_name" not in a]
        assert len(objs) == len(s["objects"])
        for a in objs:
            o = s["objects"][a["object_index"]]
            assert coco.loadCats(a["category_id"])[0]["name"] == o["shape"]
            assert (coco.annToMask(a).astype(bool) == rle_to_mask(o["mask"])).all()


def test_manifest(generated):
    m = json.loads((generated[0] / "mid" / "manifest.json").read_text())
    split = m["splits"]["val"]
    assert split["counts"]["images"] == N and split["config"]["seed"] == 3
    import hashlib
    for rel, digest in split["sha256"].items():
        assert hashlib.sha256((generated[0] / "mid" / rel).read_bytes()).hexdigest() == digest


def test_visual_complexity_levels_share_the_layout(tmp_path, require_renderer):
    recs = {}
    for v in ("easy", "mid", "hard"):
        job = _job(tmp_path, v, n=2, seed=11)
        generate_split(job, progress=False)
        recs[v] = json.loads((job.folder / "scenes" / "val_scenes.json").read_text())["scenes"]
    keys = ("shape", "color", "material", "size", "rotation", "3d_coords")
    for e, m, h in zip(recs["easy"], recs["mid"], recs["hard"]):
        for oe, om, oh in zip(e["objects"], m["objects"], h["objects"]):
            assert [oe[k] for k in keys] == [om[k] for k in keys] == [oh[k] for k in keys]
            # easy lists the parts mid recolours, with their object's colour and material
            assert oe["parts"] == {n: {"color": oe["color"], "material": oe["material"], "size": oe["size"]}
                                   for n in om["parts"]} and oe["texture"] == "none"
            assert {n: {k: v for k, v in p.items() if k != "texture"} for n, p in oh["parts"].items()} == om["parts"]
            assert om["texture"] == "none"
            assert "visual_parts" not in oe and "visual_parts" not in e  # a generation aid only
    assert any(o["parts"] for s in recs["mid"] for o in s["objects"])
    assert any(o["texture"] != "none" for s in recs["hard"] for o in s["objects"])
    # one question set for the three levels, each answered at its own level
    qs = {v: json.loads((tmp_path / v / "questions" / "val_questions.json").read_text())["questions"]
          for v in ("easy", "mid", "hard")}
    same = [(q["image_index"], q["question"], q["program"], q["question_hash"], q["obj_map"]) for q in qs["mid"]]
    assert len(same) >= 2 * 15
    for v in ("easy", "hard"):
        assert [(q["image_index"], q["question"], q["program"], q["question_hash"], q["obj_map"])
                for q in qs[v]] == same
    assert sum(1 for q in qs["mid"] if q["template_filename"].startswith("part")) >= 2 * 5
    onto = load_ontology("superclevr")
    ex = DeterministicExecutor(onto)
    for v in ("easy", "mid", "hard"):
        sym = {s["image_index"]: SymbolicScene.from_json(s, onto) for s in recs[v]}
        for q in qs[v]:
            assert ex.run(Program.from_json(q["program"], onto), sym[q["image_index"]]).answer == q["answer"]
    # answers differ where the easy level shows a part in its object's colour
    assert any(a["answer"] != b["answer"] for a, b in zip(qs["easy"], qs["mid"]))
    assert all(a["answer"] == b["answer"] for a, b in zip(qs["mid"], qs["hard"]))
    from nsvqa.generation.stats import shared_question_sets

    sh = shared_question_sets([tmp_path / v for v in ("easy", "mid", "hard")], "val")
    assert sh["identical"] and sh["shared"] == len(same) and sh["answers_differing_from_first"][0] > 0
    assert sh["answers_differing_from_first"][0] == sh["answers_differing_from_first"][1]


def test_questions_are_answered_by_the_executor(generated, scenes):
    from executors import DeterministicExecutor, Program
    from executors.io import normalize_answer

    onto = load_ontology("superclevr")
    data = json.loads((generated[0] / "mid" / "questions" / "val_questions.json").read_text())
    qs = data["questions"]
    assert data["info"]["redundancy"] == "rd" and len(qs) > 5 * N
    assert [q["question_index"] for q in qs] == list(range(len(qs)))
    sym = {s["image_index"]: SymbolicScene.from_json(s, onto) for s in scenes}
    ex = DeterministicExecutor(onto)
    for q in qs:
        answer = ex.run(Program.from_json(q["program"], onto), sym[q["image_index"]]).answer
        assert normalize_answer(answer) == normalize_answer(q["answer"]), q["question"]
    m = json.loads((generated[0] / "mid" / "manifest.json").read_text())
    assert m["splits"]["val"]["counts"]["questions"] == len(qs)
