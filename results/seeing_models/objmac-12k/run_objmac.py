"""objmac at 2x the mini schedule (12,000 steps) on mid, seed 2, with the scene parser (and parses) of
runs/study/mid-seed2 (TrainSpec.scene_runs), image-shuffle scored. Run from a frozen worktree."""
import logging, sys, torch
from nsvqa.experiment import TrainSpec, train_variant
import baselines  # noqa: F401  (registers the baseline models)
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
scene = dict(mode="agnostic", attr_parts=False, det_iterations=600, det_eval_every=300, det_min_stride=8,
             det_anchor_sizes=(16, 32, 64, 128))
spec = TrainSpec(profile="mini", scene_overrides=scene, question_overrides={"steps": 1600},
                 model_overrides={"objmac": {"steps": int(sys.argv[1]), "eval_every": 2000}}, jobs=1, progress=False,
                 parse_min_score=0.05, scene_runs="runs/study", image_shuffle=True)
print(train_variant("data/generated/study", "mid", "runs/seeing", models=["objmac"], spec=spec, seed=2, tests=["mid"]))
