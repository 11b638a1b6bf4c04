"""regionmac-trace's levers on the study's ``mid`` at the mini profile, seed 0 (issue 76, point 1).

    PYTHONPATH=<checkout> python results/seeing_models/regionmac-levers/run_levers.py LEVER [LEVER ...]

First (once) the study's ``mid`` data and the study's scene parser of ``mid``, seed 0, in
``runs/study/mid`` (the class-agnostic detector of the study's settings: boxes and masks only; trained
here when this machine lacks it, through ``nsvqa+gtprog``, the cheapest model that needs it), then each
LEVER (:data:`LEVERS`: config fields over regionmac-trace's mini profile) in
``runs/seeing-regionmac/<LEVER>/mid``, image-shuffle scored; ``summarize.py`` of that folder writes the
lever's table here."""
import logging
import sys
from pathlib import Path

import torch

from nsvqa.generation.suite import generate_suite
from orchestration.experiment import train_variant
from orchestration.study.settings.config import STUDY
from orchestration.study.settings.pieces import study_spec

#: lever name -> regionmac-trace config fields (the pilot: roi_size 4, 6,000 steps)
LEVERS = {
    "r7": dict(roi_size=7),
    "r7-12k": dict(roi_size=7, steps=12000),
    "r4-12k": dict(steps=12000),
    "r7-18k": dict(roi_size=7, steps=18000),  # r7-12k's val still rose over its last 2,000 steps
    "r7-12k-q100": dict(roi_size=7, steps=12000, extra_questions_per_image=100),  # more questions per image
}
DATA, SCENE_RUNS = "data/generated/study", "runs/study"


def main(levers: list[str]) -> None:
    unknown = [x for x in levers if x not in LEVERS]
    if unknown:
        raise SystemExit(f"unknown lever(s) {unknown}; valid: {', '.join(LEVERS)}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(2)
    generate_suite(DATA, "all", STUDY.image_profile, seed=STUDY.data_seed, workers=2, progress=False,
                   variants=["mid"], splits={"mid": ["train", "val", "test"]}, questions=STUDY.questions,
                   sizes=STUDY.sizes)
    if not (Path(SCENE_RUNS) / "mid" / "scene_parser" / "attributes.pt").is_file():  # trained here once
        print(train_variant(DATA, "mid", SCENE_RUNS, models=["nsvqa+gtprog"], spec=study_spec(STUDY, progress=False),
                            seed=0, tests=["mid"]))
    for lever in levers:
        print(lever, train_variant(DATA, "mid", f"runs/seeing-regionmac/{lever}", models=["regionmac-trace"],
                                   spec=study_spec(STUDY, scene_runs=SCENE_RUNS, image_shuffle=True, progress=False,
                                                  model_overrides={"regionmac-trace": LEVERS[lever]}),
                                   seed=0, tests=["mid"]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
