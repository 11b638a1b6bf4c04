"""Evaluate parsed scenes (likelihoods.json) against a generated split: COCO AP (pycocotools),
per-attribute accuracy of matched objects and parts, and NS-VQA / P-NSVQA accuracy on the split's
ground-truth programs with the parsed scenes.

    python scripts/evaluate_scene_parser.py --parsed runs/scene/mid/parsed_val.json \
        --data data/generated/mini/mid --split val --out runs/scene/mid/metrics_val.json
    python scripts/evaluate_scene_parser.py --detector runs/scene/mid/detector.pt \
        --data data/generated/mini/mid --split val --out det_val.json      # the detector alone

``--detector`` scores a detector checkpoint on its own (class-agnostic COCO AP of the objects and,
for a detector that finds parts, of the parts the scenes list), before any attribute head exists.

Writes the metrics as JSON (atomically) and prints them as a table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import parse_checked
from nsvqa.evaluation.inputs import probability_cut
from nsvqa.fileio import OutputFile, write_json_atomic


PROG = "nsvqa-evaluate-scene-parser"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--parsed", help="likelihoods.json of parse_scenes.py")
    src.add_argument("--detector", help="a detector.pt (or its run directory): class-agnostic COCO AP alone")
    p.add_argument("--limit", type=int, default=None, help="with --detector: the first N images only")
    p.add_argument("--threads", type=int, default=None, help="with --detector: torch CPU threads")
    p.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT holding the ground truth")
    p.add_argument("--split", default="val", help="the split whose scenes were parsed")
    p.add_argument("--out", type=OutputFile, required=True, help="metrics JSON to write")
    p.add_argument("--min-iou", type=float, default=0.5, help="mask IoU for a detection to match ground truth")
    p.add_argument("--threshold", type=probability_cut, default=0.7, help="P-NSVQA count/exist threshold, in (0, 1]")
    p.add_argument("--no-questions", action="store_true", help="skip the executor accuracy")
    p.add_argument("--true-attributes", default="", metavar="A,B",
                   help="also run the executors with each of these object attributes (comma-separated, e.g. "
                        "material,shape) set to its true value on the matched detections, one at a time: what "
                        "that attribute's errors cost end to end")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    data = Path(args.data)
    if args.detector:
        return detector_only(args, data)
    with needs_extra(PROG):
        from nsvqa.evaluation.scene_parser import evaluate_parsed, format_table  # heavy (pycocotools, scipy): after parsing
    metrics = evaluate_parsed(args.parsed, data, args.split, min_iou=args.min_iou, threshold=args.threshold,
                              questions=not args.no_questions,
                              true_attributes=[a for a in args.true_attributes.split(",") if a])
    write_json_atomic(args.out, metrics)
    print(format_table(metrics))
    return 0


def detector_only(args: argparse.Namespace, data: Path) -> int:
    """``--detector``: the checkpoint's own detections scored against the split's objects."""
    with needs_extra(PROG):
        import torch  # heavy, as are the three below: after parsing

        from nsvqa.evaluation.scene_parser import detector_ap, format_table
        from nsvqa.training.checkpoint import load_checkpoint
        from nsvqa.training.loading import detector_from_checkpoint
    if args.threads:
        torch.set_num_threads(args.threads)
    path = Path(args.detector)
    path = path / "detector.pt" if path.is_dir() else path
    ck = load_checkpoint(path, kind="detector")
    ap = detector_ap(detector_from_checkpoint(ck, str(path)), data, args.split, limit=args.limit,
                     part_class_ids=ck["vocabularies"].get("part_class_ids", ()))
    parts = ap.pop("parts", None)
    metrics = {"detector": str(path), "data": str(data), "split": args.split, "coco_objects_agnostic": ap}
    if parts is not None:
        metrics["coco_listed_parts_agnostic"] = parts
    write_json_atomic(args.out, metrics)
    print(format_table(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
