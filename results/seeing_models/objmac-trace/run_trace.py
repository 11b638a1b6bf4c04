"""objmac with the grounding loss of the training programs' traces (``trace_weight``) on mid, seed 2,
the mini schedule and 40 extra questions per image (as the 6,000-step objmac of mid.md), the scene
parser (and parses) of runs/study/mid-seed2 (TrainSpec.scene_runs), image-shuffle scored. Run from a
frozen worktree: ``PYTHONPATH=<checkout> python results/seeing_models/objmac-trace/run_trace.py WEIGHT``
writes runs/seeing-trace/w<WEIGHT>/mid-seed2."""
import logging, sys, torch
from orchestration.experiment import train_variant
from orchestration.study.settings.config import STUDY
from orchestration.study.settings.pieces import study_spec
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
weight = float(sys.argv[1])
spec = study_spec(STUDY, model_overrides={"objmac": {"trace_weight": weight}}, scene_runs="runs/study",
                  image_shuffle=True, progress=False)  # the study's parsers
print(train_variant("data/generated/study", "mid", f"runs/seeing-trace/w{weight:g}", models=["objmac"], spec=spec,
                    seed=2, tests=["mid"]))
