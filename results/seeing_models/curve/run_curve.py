"""One point of the learning curve over questions per training image (issue 46): objmac at the mini
schedule on mid, seed 2, with ``10 + EXTRA`` questions per training image, the scene parser (and
parses) of runs/study/mid-seed2 (TrainSpec.scene_runs), image-shuffle scored. Run from a frozen worktree:
``PYTHONPATH=<checkout> python results/seeing_models/curve/run_curve.py MODEL EXTRA`` writes
runs/seeing-curve/q<10+EXTRA>/mid-seed2."""
import logging, sys, torch
from orchestration.experiment import train_variant
from orchestration.study.settings.config import STUDY
from orchestration.study.settings.pieces import study_spec
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
model, extra = sys.argv[1], int(sys.argv[2])
spec = study_spec(STUDY, model_overrides={model: {"extra_questions_per_image": extra}}, scene_runs="runs/study",
                  image_shuffle=True, progress=False)  # the study's parsers
print(train_variant("data/generated/study", "mid", f"runs/seeing-curve/q{10 + extra}", models=[model], spec=spec,
                    seed=2, tests=["mid"]))
