"""regionmac-trace (issue 64, point 3) on the study's mid at the mini profile, image-shuffle scored:
the scene parser, its detector and its parses of runs/study/mid[-seed<SEED>] (TrainSpec.scene_runs;
the run's train and val parses are made there first when it lacks them), the study's declared
settings (results/study/study.json). ``PYTHONPATH=<checkout> python
results/seeing_models/regionmac-trace/run_pilot.py [SEED]`` (default 0, the point-1 rerun of
mid-seed0-modular) writes runs/seeing-regionmac/mid[-seed<SEED>]."""
import logging, sys, torch
from orchestration.experiment import TrainSpec, train_variant
from orchestration.study import STUDY
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
spec = TrainSpec(profile=STUDY.profile, scene_overrides=dict(STUDY.scene_overrides),  # the study's parsers
                 question_overrides=dict(STUDY.question_overrides), jobs=1, progress=False,
                 parse_min_score=STUDY.parse_min_score, scene_runs="runs/study", image_shuffle=True)
print(train_variant("data/generated/study", "mid", "runs/seeing-regionmac", models=["regionmac-trace"], spec=spec,
                    seed=seed, tests=["mid"]))
