"""film-trace (film-dense with the grounding loss of the training programs' traces on its FiLMed
blocks' cells, docs/models.md) on mid, seed 2, the mini profile (film-dense's: stride-8 maps, 30
extra questions per image, 6,000 steps of 32), image-shuffle scored: the same data and seed as the
objmac-trace run (results/seeing_models/objmac-trace/run_trace.py). film-trace needs no scene
parser; ``scene_runs`` is the same as objmac-trace's, so that one runs folder can hold both. Run
from a frozen worktree: ``PYTHONPATH=<checkout> python results/seeing_models/film-trace/run_trace.py
WEIGHT [BLOCKS]`` (BLOCKS ``all``, the default, or ``last``) writes
runs/seeing-film-trace/w<WEIGHT>-<BLOCKS>/mid-seed2."""
import logging, sys, torch
from orchestration.experiment import train_variant
from orchestration.train_spec import TrainSpec
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
torch.set_num_threads(2)
weight = float(sys.argv[1])
blocks = sys.argv[2] if len(sys.argv) > 2 else "all"
spec = TrainSpec(profile="mini", model_overrides={"film-trace": {"trace_weight": weight, "trace_blocks": blocks}},
                 jobs=1, progress=False, scene_runs="runs/study", image_shuffle=True)
print(train_variant("data/generated/study", "mid", f"runs/seeing-film-trace/w{weight:g}-{blocks}",
                    models=["film-trace"], spec=spec, seed=2, tests=["mid"]))
