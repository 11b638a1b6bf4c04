"""The parsers shipped in the repository (pretrained/mid-mini): they verify, load with
weights_only, parse a tiny image and a question, and a corrupted copy is refused naming the file."""
from __future__ import annotations

import shutil

import numpy as np
import pytest


def test_the_shipped_parsers_verify_load_and_parse(tiny_root, require_backbone_weights):
    from nsvqa.pretrained import read_manifest, resolve_checkpoint
    from nsvqa.training.loading import load_question_parser, load_scene_parser, parse_split

    manifest = read_manifest("mid-mini")
    assert manifest["scene_parser_config"]["profile"] == "mini"
    parser = load_scene_parser(resolve_checkpoint("pretrained:mid-mini", "scene_parser"))  # sha256-checked
    (idx, _, parsed), = list(parse_split(parser, tiny_root / "mid", "test", limit=1, progress=False))
    lik = parsed.likelihoods
    assert idx == 0 and lik.exist.ndim == 1
    assert np.all((lik.exist >= 0) & (lik.exist <= 1))
    for values in lik.attributes.values():  # a distribution over each attribute's values per object
        assert np.allclose(np.asarray(values).sum(-1), 1.0, atol=1e-3)
    q = load_question_parser(resolve_checkpoint("pretrained:mid-mini", "question_parser"))
    (parsed_q,) = q.parse(["How many red cars are there?"])
    assert parsed_q.error is None
    assert parsed_q.tokens == ("count", "filter_shape[car]", "filter_color[red]", "scene")


def test_a_corrupted_copy_of_the_shipped_parsers_is_refused(tmp_path, monkeypatch):
    from nsvqa.pretrained import PretrainedError, pretrained_dir, resolve_checkpoint

    shutil.copytree(pretrained_dir() / "mid-mini", tmp_path / "mid-mini")
    monkeypatch.setenv("NSVQA_PRETRAINED_DIR", str(tmp_path))
    head = tmp_path / "mid-mini" / "scene_parser" / "attributes.safetensors"
    data = bytearray(head.read_bytes())
    data[len(data) // 2] ^= 0xFF
    head.write_bytes(bytes(data))
    with pytest.raises(PretrainedError, match=r"attributes\.safetensors: sha256 differs"):
        resolve_checkpoint("pretrained:mid-mini", "scene_parser")


def test_every_shipped_model_reproduces_the_study_within_its_interval():
    """Each model of the shipped set (and each executor on its parsers) scored, in the piece that
    trained it, a test accuracy on the training variant inside the committed study's 95% interval
    of that cell (results/study/report.json, read now: a rebuilt report that moves the interval away
    fails here until the set is packed again)."""
    import json
    from pathlib import Path

    from nsvqa.pretrained import read_manifest

    manifest = read_manifest("mid-mini")
    report = json.loads((Path(__file__).resolve().parents[2] / "results" / "study" / "report.json").read_text())
    committed = {r["model"]: r for r in report["in_domain"]}
    shipped = manifest["models"] | manifest["executors"]
    assert {"nscl", "film", "mdetr", "lstm", "cnn_lstm", "objmac-trace", "nsvqa", "pnsvqa"} <= set(shipped)
    for model, rec in shipped.items():
        lo, hi = committed[model]["ci95"]
        assert lo <= rec["test_accuracy"] <= hi, (model, rec["test_accuracy"], (lo, hi), rec["piece"]["name"])
