"""Pretrained sets for an installed package: a name resolves from NSVQA_PRETRAINED_DIR, the clone,
then the user cache; ``nsvqa-fetch-pretrained`` fills the cache from a file:// or http:// folder,
every file checked against the manifest's sha256, nothing half-written on a failure; the shipped
form (.safetensors + .json) reads back as the checkpoint it was written from."""
from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest

from nsvqa.fileio import sha256_file

SHIPPED = Path(__file__).resolve().parents[2] / "pretrained" / "mid-mini"
#: the files of the small set the tests serve: the shipped question parser and NS-VQA's cuts
SMALL = ("question_parser/question_parser.safetensors", "question_parser/question_parser.json", "nsvqa/tuned.json")


def _small_set(root: Path, name: str = "qp-set") -> Path:
    """A set ``ROOT/<name>/`` of the shipped question parser, with its manifest."""
    folder = root / name
    for rel in SMALL:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHIPPED / rel, folder / rel)
    card = {"intended_use": "tests", "training_data": {"variant": "mid"}, "profile": "mini", "accuracy": {},
            "limits": "a question parser alone"}
    (folder / "manifest.json").write_text(json.dumps({"name": name, "card": card,
                                                      "sha256": {rel: sha256_file(folder / rel) for rel in SMALL}}))
    return folder


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """As after a regular install: no clone's pretrained/, no NSVQA_PRETRAINED_DIR, a cache of its own."""
    import nsvqa.pretrained

    monkeypatch.setattr(nsvqa.pretrained, "PRETRAINED_DIR", tmp_path / "site-packages" / "pretrained")
    monkeypatch.delenv("NSVQA_PRETRAINED_DIR", raising=False)
    monkeypatch.delenv("NSVQA_PRETRAINED_URL", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "nsvqa" / "pretrained"


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.is_dir() else []


def test_a_set_served_from_a_file_url_is_fetched_into_the_cache_checked_and_loads(tmp_path, installed, capsys):
    from nsvqa.fetch import main
    from nsvqa.pretrained import PretrainedError, available, cache_dir, locate, resolve_checkpoint
    from nsvqa.training.loading import load_question_parser

    assert cache_dir() == installed
    with pytest.raises(PretrainedError, match=r"no pretrained set 'qp-set'.*nsvqa-fetch-pretrained qp-set"):
        locate("qp-set")
    src = _small_set(tmp_path / "served")
    assert main(["qp-set", "--url", src.as_uri()]) == 0
    assert "3 files checked" in capsys.readouterr().out
    assert locate("qp-set") == installed / "qp-set" and available() == ["qp-set"]
    assert _leftovers(installed) == ["qp-set"]  # no temporary left beside it
    parser = load_question_parser(resolve_checkpoint("pretrained:qp-set", "question_parser"))
    (parsed,) = parser.parse(["How many red cars are there?"])
    assert parsed.tokens == ("count", "filter_shape[car]", "filter_color[red]", "scene")
    # the same set again: nothing to do; a different one of that name: refused without --force
    assert main(["qp-set", "--url", src.as_uri()]) == 0
    man = json.loads((src / "manifest.json").read_text())
    (src / "manifest.json").write_text(json.dumps({**man, "card": {**man["card"], "limits": "other"}}))
    assert main(["qp-set", "--url", src.as_uri()]) == 2
    assert "a different set 'qp-set' is cached there; --force replaces it" in capsys.readouterr().err
    assert main(["qp-set", "--url", src.as_uri(), "--force"]) == 0
    assert json.loads((installed / "qp-set" / "manifest.json").read_text())["card"]["limits"] == "other"
    assert _leftovers(installed) == ["qp-set"]


def test_a_file_that_fails_its_check_leaves_nothing_in_the_cache(tmp_path, installed):
    from nsvqa.fetch import FetchError, fetch_set

    src = _small_set(tmp_path / "served")
    tensors = src / SMALL[0]
    data = bytearray(tensors.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tensors.write_bytes(bytes(data))
    with pytest.raises(FetchError, match=r"question_parser\.safetensors: sha256 \w+ differs from the \w+ its manifest "
                                         r"records.*nothing was written to the cache"):
        fetch_set("qp-set", src.as_uri())
    assert _leftovers(installed) == []
    # a manifest of another set, a file name that climbs out, a missing file, a bad URL: refused alike
    good = _small_set(tmp_path / "served2")
    with pytest.raises(FetchError, match=r"field 'name': 'qp-set'; expected the set asked for, 'other'"):
        fetch_set("other", good.as_uri())
    man = json.loads((good / "manifest.json").read_text())
    (good / "manifest.json").write_text(json.dumps({**man, "sha256": {"../evil.json": "0" * 64}}))
    with pytest.raises(FetchError, match=r"file name '\.\./evil\.json' is not a path inside the set"):
        fetch_set("qp-set", good.as_uri())
    (good / "manifest.json").write_text(json.dumps({**man, "sha256": {**man["sha256"], "nope.json": "0" * 64}}))
    with pytest.raises(FetchError, match=r"nope\.json: not fetched"):
        fetch_set("qp-set", good.as_uri())
    with pytest.raises(FetchError, match=r"a file://, http:// or https:// URL expected"):
        fetch_set("qp-set", "ftp://example.org/qp-set")
    with pytest.raises(FetchError, match=r"a plain name"):
        fetch_set("../qp-set", good.as_uri())
    assert _leftovers(installed) == []


def test_a_set_is_fetched_over_http(tmp_path, installed):
    from nsvqa.fetch import fetch_set
    from nsvqa.pretrained import verified

    _small_set(tmp_path / "served")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "served"))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        folder = fetch_set("qp-set", f"http://127.0.0.1:{server.server_address[1]}/qp-set")
    finally:
        server.shutdown()
        server.server_close()
    assert folder == installed / "qp-set" and verified("qp-set") == folder


def test_names_resolve_from_the_variable_then_the_clone_then_the_cache(tmp_path, monkeypatch):
    import nsvqa.pretrained as pre

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("NSVQA_PRETRAINED_DIR", raising=False)
    cached = _small_set(pre.cache_dir(), "mid-mini")
    assert pre.locate("mid-mini") == SHIPPED  # the clone's comes before the cache
    assert pre.search_dirs() == [pre.PRETRAINED_DIR, pre.cache_dir()]
    monkeypatch.setattr(pre, "PRETRAINED_DIR", tmp_path / "no-clone" / "pretrained")
    assert pre.locate("mid-mini") == cached
    _small_set(tmp_path / "env", "mid-mini")
    monkeypatch.setenv("NSVQA_PRETRAINED_DIR", str(tmp_path / "env"))
    assert pre.locate("mid-mini") == tmp_path / "env" / "mid-mini"
    assert pre.locate(str(cached)) == cached  # an explicit folder, whatever the variable says
    assert pre.verified(cached) == cached
    with pytest.raises(pre.PretrainedError, match=r"is not a pretrained set"):
        pre.locate(str(tmp_path / "env"))


def test_the_shipped_form_reads_back_as_the_checkpoint_and_refuses_an_altered_copy(tmp_path):
    import torch

    from nsvqa.pretrained import convert_set
    from nsvqa.training.checkpoint import (CheckpointError, checkpoint_files, checkpoint_sha256, load_checkpoint,
                                           save_checkpoint, save_shipped)

    state = {"w": torch.randn(3, 2).half(), "n": torch.tensor(7), "e": torch.zeros(0)}
    save_checkpoint(tmp_path / "run" / "m.pt", kind="m", config={"sizes": (1, 2), "x": float("nan")},
                    state_dict=state, vocabularies={"answer": ["yes", "no"]}, extra={"note": "é"})
    ck = load_checkpoint(tmp_path / "run" / "m.pt")
    tensors, meta = save_shipped(tmp_path / "set" / "m.pt", ck)
    assert (tensors.name, meta.name) == ("m.safetensors", "m.json") and checkpoint_files(tmp_path / "set" / "m.pt") == \
        [tensors, meta]
    back = load_checkpoint(tmp_path / "set" / "m.pt", kind="m")  # the .pt is not there: its shipped form is read
    assert list(back) == list(ck) and list(back["state_dict"]) == list(state)
    assert all(torch.equal(back["state_dict"][k], v) and back["state_dict"][k].dtype == v.dtype for k, v in state.items())
    assert back["config"]["sizes"] == [1, 2] and back["vocabularies"] == ck["vocabularies"]
    assert json.loads(meta.read_text())["format"] == "nsvqa-checkpoint"
    assert checkpoint_sha256(tmp_path / "run" / "m.pt") == sha256_file(tmp_path / "run" / "m.pt")
    with pytest.raises(CheckpointError, match=r"field 'state_dict': the shipped form holds names to tensors"):
        save_shipped(tmp_path / "bad" / "m.pt", {**ck, "state_dict": {"w": [1.0]}})
    with pytest.raises(CheckpointError, match=r"field 'vocabularies.ids': key 3 is not a string"):
        save_shipped(tmp_path / "bad" / "m.pt", {**ck, "vocabularies": {"ids": {3: "x"}}})
    assert not (tmp_path / "bad").exists()
    # a set of the older form converts; each file is then checked against the manifest
    old = tmp_path / "sets" / "old"
    (old / "m").mkdir(parents=True)
    shutil.copyfile(tmp_path / "run" / "m.pt", old / "m" / "baseline.pt")
    (old / "manifest.json").write_text(json.dumps({"name": "old", "sha256": {"m/baseline.pt": sha256_file(
        old / "m" / "baseline.pt")}}))
    assert convert_set(old) == old and not (old / "m" / "baseline.pt").exists()
    assert sorted(json.loads((old / "manifest.json").read_text())["sha256"]) == ["m/baseline.json",
                                                                                 "m/baseline.safetensors"]
    assert load_checkpoint(old / "m" / "baseline.pt")["vocabularies"] == ck["vocabularies"]
    raw = bytearray((old / "m" / "baseline.safetensors").read_bytes())
    raw[-1] ^= 0xFF
    (old / "m" / "baseline.safetensors").write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"baseline\.safetensors: sha256 \w+ differs from the \w+ recorded in"):
        load_checkpoint(old / "m" / "baseline.pt")


def test_the_shipped_set_is_in_the_shipped_form_with_its_card():
    from nsvqa.pretrained import CARD_FIELDS, model_card, read_manifest

    manifest = read_manifest("mid-mini")
    assert set(model_card(manifest)) == set(CARD_FIELDS)
    assert not [rel for rel in manifest["sha256"] if rel.endswith(".pt")]
    assert not list(SHIPPED.rglob("*.pt"))
    assert {"scene_parser/detector.safetensors", "scene_parser/detector.json",
            "question_parser/question_parser.safetensors"} <= set(manifest["sha256"])
