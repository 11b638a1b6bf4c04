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


def test_a_smaller_num_images_is_refused_without_force(gen, tmp_path, capsys):
    argv = ["--out", str(tmp_path), "--variant", "easy", "--split", "test", "--profile", "tiny", "--no-progress"]
    assert gen.main(argv + ["--num-images", "2"]) == 0
    before = (tmp_path / "easy" / "scenes" / "test_scenes.json").read_bytes()
    capsys.readouterr()
    for n in ("1", "0"):
        assert gen.main(argv + ["--num-images", n]) == 2
        err = capsys.readouterr().err
        assert "manifest.json: split easy/test holds 2 images" in err and "--force" in err
    assert (tmp_path / "easy" / "scenes" / "test_scenes.json").read_bytes() == before
    assert gen.main(argv + ["--num-images", "2"]) == 0  # the same settings: nothing to do
    assert "rendered 0, already done 2" in capsys.readouterr().err
    assert gen.main(argv + ["--num-images", "1", "--force"]) == 0
    assert sorted(p.name for p in (tmp_path / "easy" / "images" / "test").iterdir()) == ["nsvqa_test_000000.png"]
    assert json.loads((tmp_path / "easy" / "manifest.json").read_text())["splits"]["test"]["counts"]["images"] == 1


def test_an_unwritable_out_is_one_line_before_any_work(gen, tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    assert gen.main(["--out", str(tmp_path / "afile"), "--variant", "easy", "--split", "test",
                     "--num-images", "1", "--profile", "tiny", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "afile/easy: cannot write there" in err


def test_every_flag_has_help_with_its_default(gen):
    from nsvqa.generation.dataset import PROFILES

    text = " ".join(gen.get_args_parser().format_help().split())
    for flag in ("--num-images", "--seed", "--split", "--workers", "--force"):
        assert flag in text
    assert "(default: 0)" in text and "(default: 1)" in text
    for name in PROFILES:
        assert name in text


def test_a_rerun_sweeps_the_temporaries_a_killed_run_left(gen, tmp_path, capsys):
    import os
    import subprocess
    import sys

    from nsvqa.fileio import _host

    argv = ["--out", str(tmp_path), "--variant", "easy", "--split", "test", "--num-images", "2",
            "--profile", "tiny", "--no-progress"]
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    images = tmp_path / "easy" / "images" / "test"
    images.mkdir(parents=True)
    stale = [images / f".nsvqa_test_000001.png.nsvqa-{_host()}-{dead.pid}.x1y2z3w4.tmp",
             tmp_path / "easy" / f".manifest.json.nsvqa-{_host()}-{dead.pid}.a1b2c3d4.tmp"]
    for p in stale:
        p.write_bytes(b"half a file")
    live = images / f".other.png.nsvqa-{_host()}-{os.getpid()}.q1w2e3r4.tmp"
    live.write_bytes(b"being written")
    assert gen.main(argv) == 0
    assert not any(p.exists() for p in stale) and live.exists()


# ---------------------------------------------------------------- round two (issue 59)
@pytest.mark.parametrize("change, setting", [(["--seed", "1"], "seed 0 (this command: 1, set by --seed)"),
                                             (["--profile", "mini"], "height 48 (this command: 240, set by --profile"),
                                             (["--questions", "object"], "questions_per_image [10, 10] (this command: "
                                                                         "[10, 0], set by --questions)")])
def test_another_setting_is_refused_without_force(gen, tmp_path, capsys, change, setting):
    argv = ["--out", str(tmp_path), "--variant", "easy", "--split", "test", "--num-images", "1", "--profile", "tiny",
            "--no-progress"]
    assert gen.main(argv) == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "easy").rglob("*") if p.is_file()}
    capsys.readouterr()
    changed = argv + change  # argparse: the last value wins
    assert gen.main(changed) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "manifest.json: split easy/test was made with other settings: " in err, err
    assert setting in err and "--force" in err, err
    assert {p.name: p.read_bytes() for p in (tmp_path / "easy").rglob("*") if p.is_file()} == before


def test_a_split_begun_with_other_settings_is_refused_too(gen, tmp_path, capsys):
    from nsvqa.generation.dataset import generate_split, job_for

    job = job_for(tmp_path, "easy", "test", 2, 0, 64, 48)

    def stop(k):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate_split(job, progress=False, on_image=stop)
    argv = ["--out", str(tmp_path), "--variant", "easy", "--split", "test", "--num-images", "2", "--no-progress"]
    assert gen.main(argv) == 2  # --profile tiny forgotten: the 64x48 image begun is not mixed with 320x240 ones
    err = capsys.readouterr().err
    assert "easy/scenes/test/settings.json: split easy/test was made with other settings: height 48" in err, err
    assert gen.main(argv + ["--profile", "tiny"]) == 0
    assert "rendered 1, already done 1" in capsys.readouterr().err


def test_force_replaces_a_split_of_other_settings(gen, tmp_path, capsys):
    argv = ["--out", str(tmp_path), "--variant", "easy", "--split", "test", "--num-images", "1", "--profile", "tiny",
            "--no-progress"]
    assert gen.main(argv) == 0
    assert gen.main(argv + ["--seed", "3", "--force"]) == 0
    assert "rendered 1, already done 0" in capsys.readouterr().err
    manifest = json.loads((tmp_path / "easy" / "manifest.json").read_text())
    assert manifest["splits"]["test"]["config"]["seed"] == 3


def test_growing_a_split_renders_only_the_new_images_and_gives_the_same_bytes(gen, tmp_path, capsys):
    argv = ["--variant", "easy", "--split", "test", "--profile", "tiny", "--no-progress"]
    assert gen.main(["--out", str(tmp_path / "grown"), "--num-images", "2", *argv]) == 0
    capsys.readouterr()
    assert gen.main(["--out", str(tmp_path / "grown"), "--num-images", "3", *argv]) == 0
    assert "rendered 1, already done 2" in capsys.readouterr().err
    assert gen.main(["--out", str(tmp_path / "fresh"), "--num-images", "3", *argv]) == 0

    def files(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    assert files(tmp_path / "grown") == files(tmp_path / "fresh")
