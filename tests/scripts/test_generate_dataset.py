"""scripts/generate_dataset.py: the on-disk layout, the profile sizes, resume and bad arguments."""
from __future__ import annotations

import json

import pytest
from PIL import Image

pytest.importorskip("moderngl")


@pytest.fixture(scope="module")
def gen(load_script, require_renderer):
    return load_script("generate_dataset")


def test_writes_the_dataset_layout(gen, tmp_path, capsys):
    argv = ["--out", str(tmp_path), "--variant", "easy", "--split", "test", "--num-images", "2",
            "--profile", "tiny", "--no-progress"]
    assert gen.main(argv) == 0
    root = tmp_path / "easy"
    assert sorted(p.name for p in (root / "images" / "test").iterdir()) == [
        "nsvqa_test_000000.png", "nsvqa_test_000001.png"]
    assert Image.open(root / "images" / "test" / "nsvqa_test_000000.png").size == (64, 48)
    scenes = json.loads((root / "scenes" / "test_scenes.json").read_text())["scenes"]
    assert [s["image_filename"] for s in scenes] == ["nsvqa_test_000000.png", "nsvqa_test_000001.png"]
    assert (root / "annotations" / "test_coco.json").exists()
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["splits"]["test"]["config"]["width"] == 64
    assert "rendered 2, already done 0" in capsys.readouterr().err
    assert gen.main(argv) == 0  # everything done: nothing rendered again
    assert "rendered 0, already done 2" in capsys.readouterr().err


def test_unknown_variant_and_bad_shard(gen, tmp_path, capsys):
    assert gen.main(["--out", str(tmp_path), "--variant", "medium", "--num-images", "1"]) == 2
    assert "unknown variant 'medium'; valid: ['bal', 'co-0'" in capsys.readouterr().err
    assert gen.main(["--out", str(tmp_path), "--variant", "head", "--split", "train", "--num-images", "1"]) == 2
    assert "variant 'head' has no 'train' split (only ('test',))" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        gen.main(["--out", str(tmp_path), "--num-images", "1", "--shard", "2/2"])
    assert e.value.code == 2
