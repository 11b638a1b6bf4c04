"""NS-VQA's accuracy on one parse as its part cut (``min_part``) varies: the sweep quoted in README.md.

    .venv/bin/python results/scene_parser_mini/min_part_sweep.py RUNS/lite0/parsed_val.json DATA_ROOT/mid/questions/val_questions.json
"""
import sys

import torch

from executors import load_ontology
from executors.io import load_questions, parse_program
from nsvqa.artifacts.predictions import question_meta
from nsvqa.evaluation.scene_parser import _uses_parts, load_parsed
from nsvqa.models.pipeline import make_reasoner, predict

torch.set_num_threads(1)
onto = load_ontology("superclevr")
doc, liks = load_parsed(sys.argv[1], onto)
by_index = {lik.image_index: lik for lik in liks}
metas, programs, groups = [], [], []
for k, q in enumerate(load_questions(sys.argv[2])):
    if q.get("image_index") not in by_index:
        continue
    program = parse_program(q, onto, where=f"question {k}")
    metas.append(question_meta(q, f"question {k}", position=k, ontology=onto))
    programs.append(program)
    groups.append("parts" if _uses_parts(program) else "objects")
for min_part in (0.5, 0.35, 0.25, 0.15, 0.08, 0.05, 0.03, 0.01):
    preds = predict(make_reasoner("nsvqa", onto, min_part=min_part), metas, programs, by_index, guess=False)
    hits, counts = {"all": 0, "parts": 0, "objects": 0}, {"all": 0, "parts": 0, "objects": 0}
    for p, g in zip(preds, groups):
        ok = p.prediction is not None and p.prediction == p.answer
        for key in ("all", g):
            hits[key] += ok
            counts[key] += 1
    print(f"min_part {min_part}: " + "  ".join(f"{g} {hits[g] / counts[g]:.3f}" for g in hits), flush=True)
