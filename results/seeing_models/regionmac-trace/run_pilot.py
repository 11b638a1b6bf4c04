"""regionmac-trace (issue 64, point 3) on the study's mid at the mini profile, image-shuffle scored:
the scene parser, its detector and its parses of runs/study/mid[-seed<SEED>] (TrainSpec.scene_runs;
the run's train and val parses are made there first when it lacks them), the study's declared
settings (results/study/study.json). ``PYTHONPATH=<checkout> python
results/seeing_models/regionmac-trace/run_pilot.py [SEED]`` (default 0, the point-1 rerun of
mid-seed0-modular) writes runs/seeing-regionmac/mid[-seed<SEED>]."""
import logging, sys, torch
from orchestration.experiment import train_variant
from orchestration.study.settings.config import STUDY
from orchestration.study.settings.pieces import study_spec
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
spec = study_spec(STUDY, scene_runs="runs/study", image_shuffle=True, progress=False)  # the study's parsers
print(train_variant("data/generated/study", "mid", "runs/seeing-regionmac", models=["regionmac-trace"], spec=spec,
                    seed=seed, tests=["mid"]))
