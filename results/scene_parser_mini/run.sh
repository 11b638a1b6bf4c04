#!/bin/bash
# The mini scene-parser run of issue 16 and its from-scratch ablation, on 2 CPU threads.
#   results/scene_parser_mini/run.sh DATA_ROOT RUNS [pretrained|scratch|both]
# DATA_ROOT/mid: 2,000 train / 150 val / 150 test images of mid at 320x240 (seed 0):
#   for s in "train 2000" "val 150" "test 150"; do set -- $s
#     .venv/bin/python scripts/generate_dataset.py --out DATA_ROOT --variant mid --split $1 --num-images $2 \
#         --seed 0 --profile mini --workers 2; done
# Each run resumes (--resume) where a stopped one left off.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${1:?DATA_ROOT}/mid
RUNS=${2:?RUNS}
WHICH=${3:-both}
PY=.venv/bin/python
run() {  # name, extra training arguments
  local name=$1; shift
  local out=$RUNS/$name
  /usr/bin/time -f "%e" -o "$RUNS/$name.seconds" \
    $PY scripts/train_scene_parser.py --data "$DATA" --profile mini --out "$out" --threads 2 --resume --no-progress "$@"
  # every detection scoring >= 0.05, as the study parses (orchestration.experiment's parse_min_score): P-NSVQA
  # weighs them by their existence, NS-VQA keeps those >= 0.5
  $PY scripts/parse_scenes.py --checkpoint "$out" --data "$DATA" --split val --out "$out/parsed_val.json" --threads 2 \
      --no-progress --min-score 0.05
  $PY scripts/evaluate_scene_parser.py --parsed "$out/parsed_val.json" --data "$DATA" --split val \
      --out "$out/metrics_val.json"
}
mkdir -p "$RUNS"
if [[ $WHICH == pretrained || $WHICH == both ]]; then run lite0; fi
if [[ $WHICH == scratch || $WHICH == both ]]; then
  run lite0_scratch --det-backbone lite0_scratch --head-backbone lite0_scratch
fi
