#!/bin/bash
# Issue 16 probe: class-agnostic Mask R-CNN on the pretrained Lite0-FPN vs the from-scratch Lite0, 300 iterations at batch 2.
# Run from the repository root: DATA is the mid variant of the visual mini suite, RUNS a folder for the two runs.
#   DATA=data/generated/vis15/mid RUNS=runs/probe16 bash results/backbone_probe/probe.sh
set -e
cd "$(dirname "$0")/../.."
DATA=${DATA:?set DATA to the mid variant folder (e.g. data/generated/vis15/mid)}
RUNS=${RUNS:-runs/probe16}
PYTHON=${PYTHON:-.venv/bin/python}
for bb in lite0 lite0_scratch; do
  /usr/bin/time -f "%e s wall" env PYTHONPATH=. "$PYTHON" scripts/train_scene_parser.py --data "$DATA" \
    --out "$RUNS/$bb" --profile mini --stage detector --mode agnostic --det-backbone $bb \
    --det-iterations 300 --det-batch 2 --det-anchor-sizes 16,32,64,128 --det-trainable-layers 6 --threads 2 --no-progress
done
