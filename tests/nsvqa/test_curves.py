"""Learning curves read back from a run's tensorboard logs, and drawn."""
from __future__ import annotations

import json

import pytest

from nsvqa.evaluation.curves import learning_curves, plot_curves, read_scalars


def _fake_run(path, resumed=False):
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(path / "tb"))
    for step, ap, minutes in ((300, 0.5, 5.0), (600, 0.8, 10.0)):
        w.add_scalar("detector_val/box_AP50", ap, step)
        w.add_scalar("detector_val/train_minutes", minutes, step)
    w.add_scalar("detector/loss", 1.0, 10)  # a training scalar: not a curve
    for epoch, acc, minutes in ((1, 0.6, 4.0), (2, 0.7, 8.0)):
        w.add_scalar("attributes_val/object.material", acc, epoch)
        w.add_scalar("end_to_end_val/nsvqa.all", acc - 0.1, epoch)
        w.add_scalar("end_to_end_val/train_minutes", minutes, epoch)
    w.close()
    if resumed:  # a second writer (a resumed run) logs step 600 again
        w = SummaryWriter(str(path / "tb"))
        w.add_scalar("detector_val/box_AP50", 0.85, 600)
        w.close()


def test_curves_put_the_head_after_the_detector_on_one_clock(tmp_path):
    _fake_run(tmp_path)
    c = learning_curves(tmp_path, "pretrained")
    assert c["label"] == "pretrained"
    assert [(r["step"], r["box_AP50"], r["minutes"]) for r in c["detector"]] == [(300, 0.5, 5.0), (600, pytest.approx(0.8), 10.0)]
    # the head's minutes start where the detector's end
    assert [r["minutes"] for r in c["end_to_end"]] == [14.0, 18.0]
    assert [r["minutes"] for r in c["attributes"]] == [14.0, 18.0]
    assert c["end_to_end"][1]["nsvqa.all"] == pytest.approx(0.6)
    path = plot_curves([c, learning_curves(tmp_path, "again")], tmp_path / "curves.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    json.dumps(c)  # the record is JSON


def test_a_step_logged_twice_keeps_its_last_value(tmp_path):
    _fake_run(tmp_path, resumed=True)
    assert read_scalars(tmp_path)["detector_val/box_AP50"] == [(300, 0.5), (600, pytest.approx(0.85))]


def test_not_a_run_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no tensorboard logs"):
        read_scalars(tmp_path)
