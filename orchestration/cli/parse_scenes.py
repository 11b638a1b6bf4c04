"""Parse the images of a split with a trained scene parser -> likelihoods.json.

    python scripts/parse_scenes.py --checkpoint runs/scene/mid --data data/generated/mini/hard \
        --split val --out runs/scene/mid/parsed_hard_val.json

Any variant works (a parser trained on one variant is tested on the others). The output holds per
image the SceneLikelihoods (what P-NSVQA executes; its argmax is NS-VQA's scene), and every
detection with box, score, class and mask RLE (format: nsvqa/evaluation/scene_parser.py). Written atomically.
"""
from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np

from nsvqa.artifacts import LikelihoodsHeader, ParsedSceneRecord, write_likelihoods
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import parse_checked
from executors.errors import FormatError
from nsvqa.fileio import EmptyOutput, OutputFile, keep_unless_filled, write_atomic, write_json_atomic
from nsvqa.pretrained import PretrainedError, resolve_checkpoint
from nsvqa.training.checkpoint import CheckpointError


PROG = "nsvqa-parse-scenes"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    p.add_argument("--checkpoint", required=True,
                   help="run directory of train_scene_parser.py, or a shipped set: pretrained:NAME (e.g. pretrained:mid-mini)")
    p.add_argument("--data", required=True, help="the variant folder ROOT/VARIANT")
    p.add_argument("--split", default="val", help="the split whose images are parsed")
    p.add_argument("--out", type=OutputFile, required=True, help="likelihoods.json to write (an existing one is never "
                   "replaced by an empty parse)")
    p.add_argument("--min-score", type=float, default=None, help="detection score cut (default: the run's)")
    p.add_argument("--batch", type=int, default=4, help="images per forward pass")
    p.add_argument("--npz", type=OutputFile, default=None, help="also write the likelihoods as padded batched arrays (.npz)")
    p.add_argument("--scenes-out", type=OutputFile, default=None,
                   help="also write the argmax scenes of the detections kept at --min-score, in the scene-file "
                        "schema (NS-VQA's scene when --min-score is its cut; the experiment parses at 0.05 and "
                        "NS-VQA keeps the detections above the cut it chose on val)")
    p.add_argument("--limit", type=int, default=None, help="parse only the first N images")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out", "scenes_out", "npz")
    with needs_extra(PROG):
        import torch  # heavy, as are the two below: after parsing

        from nsvqa.evaluation.scene_parser import stack_likelihoods
        from nsvqa.training.loading import load_scene_parser, parse_split
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        args.checkpoint = resolve_checkpoint(args.checkpoint, "scene_parser")
        parser = load_scene_parser(args.checkpoint, args.min_score)
    except (PretrainedError, CheckpointError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    data = Path(args.data)
    records, symbolic = [], []
    try:  # the scenes file and every image are checked before the first image is parsed
        for idx, name, parsed in parse_split(parser, data, args.split, batch=args.batch, limit=args.limit,
                                             progress=not args.no_progress):
            records.append(ParsedSceneRecord.from_parsed(parsed, idx, name))
            if args.scenes_out:
                scene = parsed.symbolic()
                scene.image_filename = name
                symbolic.append(dict(scene.to_json(), split=args.split))
        for out in (args.out, args.scenes_out, args.npz):
            if out is not None:
                keep_unless_filled(out, len(records), "parsed images")
    except (FormatError, FileNotFoundError, EmptyOutput) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    write_likelihoods(args.out, LikelihoodsHeader.from_parser(parser, args.checkpoint, data, args.split), records)
    if args.scenes_out:
        write_json_atomic(args.scenes_out, {"info": {"source": "parse_scenes.py argmax", "checkpoint": str(args.checkpoint),
                                                     "split": args.split}, "scenes": symbolic})
    if args.npz:
        buf = io.BytesIO()
        np.savez_compressed(buf, **stack_likelihoods([r.likelihoods for r in records]))
        write_atomic(args.npz, buf.getvalue())
    n = sum(len(r.detections) for r in records)
    print(f"{args.out}: {len(records)} images, {n} object detections, "
          f"{sum(len(r.parts) for r in records)} part detections")
    return 0


if __name__ == "__main__":
    sys.exit(main())
