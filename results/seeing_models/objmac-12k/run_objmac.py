"""objmac at 2x the mini schedule (12,000 steps) on mid, seed 2, with the scene parser (and parses) of
runs/study/mid-seed2 (TrainSpec.scene_runs), image-shuffle scored. Run from a frozen worktree."""
import logging, sys, torch
from orchestration.experiment import train_variant
from orchestration.study.settings.config import STUDY
from orchestration.study.settings.pieces import study_spec
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
spec = study_spec(STUDY, model_overrides={"objmac": {"steps": int(sys.argv[1]), "eval_every": 2000}},
                  scene_runs="runs/study", image_shuffle=True, progress=False)  # the study's parsers
print(train_variant("data/generated/study", "mid", "runs/seeing", models=["objmac"], spec=spec, seed=2, tests=["mid"]))
