#!/bin/bash
# Issue 16 probe: class-agnostic Mask R-CNN on the pretrained Lite0-FPN vs the from-scratch Lite0, 300 iterations at batch 2
set -e
cd /work/main
for bb in lite0 lite0_scratch; do
  /usr/bin/time -f "%e s wall" env PYTHONPATH=. .venv/bin/python scripts/train_scene_parser.py --data /work/data/vis15/mid \
    --out /work/runs/probe16/$bb --profile mini --stage detector --mode agnostic --det-backbone $bb \
    --det-iterations 300 --det-batch 2 --det-anchor-sizes 16,32,64,128 --det-trainable-layers 6 --threads 2 --no-progress
done
