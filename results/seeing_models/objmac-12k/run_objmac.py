"""objmac at 2x the mini schedule (12,000 steps) on mid, seed 2, with the scene parser (and parses) of
runs/study/mid-seed2 (TrainSpec.scene_runs), image-shuffle scored. Run from a frozen worktree."""
import logging, sys, torch
from orchestration.experiment import TrainSpec, train_variant
from orchestration.study import STUDY
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
spec = TrainSpec(profile=STUDY.profile, scene_overrides=dict(STUDY.scene_overrides),  # the study's parsers
                 question_overrides=dict(STUDY.question_overrides),
                 model_overrides={"objmac": {"steps": int(sys.argv[1]), "eval_every": 2000}}, jobs=1, progress=False,
                 parse_min_score=STUDY.parse_min_score, scene_runs="runs/study", image_shuffle=True)
print(train_variant("data/generated/study", "mid", "runs/seeing", models=["objmac"], spec=spec, seed=2, tests=["mid"]))
