"""NS-VQA's accuracy on one parse as its part cut (``min_part``) varies: the sweep quoted in README.md.

    .venv/bin/python results/scene_parser_mini/min_part_sweep.py RUNS/lite0/parsed_val.json DATA_ROOT/mid/questions/val_questions.json
"""
import sys

import torch

from executors import load_ontology
from executors.io import load_questions
from nsvqa.evaluation.scene_parser import executor_accuracy, load_parsed

torch.set_num_threads(1)
onto = load_ontology("superclevr")
doc, liks = load_parsed(sys.argv[1], onto)
questions = load_questions(sys.argv[2])
for min_part in (0.5, 0.35, 0.25, 0.15, 0.08, 0.05, 0.03, 0.01):
    acc = executor_accuracy(liks, questions, onto, reasoners=("nsvqa",), min_part=min_part)["nsvqa"]
    print(f"min_part {min_part}: " + "  ".join(f"{g} {a:.3f}" for g, a in acc.items() if a is not None), flush=True)
