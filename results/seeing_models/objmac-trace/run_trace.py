"""objmac with the grounding loss of the training programs' traces (``trace_weight``) on mid, seed 2,
the mini schedule and 40 extra questions per image (as the 6,000-step objmac of mid.md), the scene
parser (and parses) of runs/study/mid-seed2 (TrainSpec.scene_runs), image-shuffle scored. Run from a
frozen worktree: ``PYTHONPATH=<checkout> python results/seeing_models/objmac-trace/run_trace.py WEIGHT``
writes runs/seeing-trace/w<WEIGHT>/mid-seed2."""
import logging, sys, torch
from nsvqa.experiment import TrainSpec, train_variant
import baselines  # noqa: F401  (registers the baseline models)
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
weight = float(sys.argv[1])
scene = dict(mode="agnostic", attr_parts=False, det_iterations=600, det_eval_every=300, det_min_stride=8,
             det_anchor_sizes=(16, 32, 64, 128))
spec = TrainSpec(profile="mini", scene_overrides=scene, question_overrides={"steps": 1600},
                 model_overrides={"objmac": {"trace_weight": weight}}, jobs=1, progress=False,
                 parse_min_score=0.05, scene_runs="runs/study", image_shuffle=True)
print(train_variant("data/generated/study", "mid", f"runs/seeing-trace/w{weight:g}", models=["objmac"], spec=spec,
                    seed=2, tests=["mid"]))
