"""run_factor.py takes the study's scene parser for object questions from its one home
(``orchestration.study.settings.config.STUDY.scene_overrides``), as ``make demo-train`` asks for it."""
from __future__ import annotations

from pathlib import Path

from orchestration.study.settings.config import SCENE_SCHEDULE, STUDY

REPO = Path(__file__).resolve().parents[2]


def test_the_study_scene_parser_is_the_studys_overrides_less_their_schedule(load_script):
    from nsvqa.config import parse_overrides
    from nsvqa.training.scene_config import SceneParserConfig

    parser = STUDY.object_scene_parser()
    assert parser == {k: v for k, v in STUDY.scene_overrides.items() if k not in SCENE_SCHEDULE}
    assert not set(parser) & set(SCENE_SCHEDULE) and set(SCENE_SCHEDULE) <= set(STUDY.scene_overrides)
    # what the Makefile passed by hand before it asked for --study-scene-parser
    by_hand = parse_overrides(["mode=agnostic", "attr_parts=false", "det_min_stride=8",
                               "det_anchor_sizes=16,32,64,128"], SceneParserConfig, "--scene-set")
    assert list(parser.items()) == list(by_hand.items())
    args = load_script("run_factor").get_args_parser().parse_args(
        ["--factor", "visual", "--data", "D", "--runs", "R", "--report", "P", "--study-scene-parser"])
    assert args.study_scene_parser


def test_make_demo_train_asks_for_the_study_scene_parser():
    recipe = (REPO / "Makefile").read_text().split("\ndemo-train:")[1].split("\n\n")[0]
    assert "--study-scene-parser" in recipe and "--scene-set" not in recipe
