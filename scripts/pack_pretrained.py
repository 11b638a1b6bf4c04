"""Pack a variant run's trained parsers as a shipped set ``pretrained/<name>/`` (nsvqa.pretrained).

    python scripts/pack_pretrained.py --run runs/study/mid --name mid-mini --data data/generated/study/mid \
        --piece results/study/pieces/mid-seed0-modular/piece.json

Writes the scene parser and question parser without training state, in float16, with NS-VQA's cuts
(the run's ``baselines/nsvqa/tuned.json``), and a manifest: the run's configs, the study piece it
came from, the val metrics of the float32 run and of the float16 copy on the same val split (the
scene parser's object metrics and the executors on ground-truth programs, the question parser's
exact programs), and the sha256 of every file. Replace a set only when the study's models change.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

from nsvqa.artifacts import LikelihoodsHeader, ParsedSceneRecord, questions_path, write_likelihoods
from nsvqa.artifacts.likelihoods import PARSE_MIN_SCORE
from nsvqa.config import HelpFormatter, parse_checked
from nsvqa.evaluation.question_parser import read_question_items, score_parses
from nsvqa.evaluation.scene_parser import evaluate_parsed
from nsvqa.fileio import write_json_atomic
from nsvqa.pretrained import pack_pretrained, pretrained_dir
from nsvqa.training.checkpoint import load_checkpoint
from nsvqa.training.loading import load_question_parser, load_scene_parser, parse_split


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--run", required=True, type=Path, help="the variant run folder (scene_parser/, question_parser/)")
    p.add_argument("--name", required=True, help="the set's name (pretrained:<name>)")
    p.add_argument("--data", required=True, type=Path, help="the training variant's folder (its val split is measured)")
    p.add_argument("--piece", type=Path, default=None, help="the study piece's piece.json the run belongs to")
    p.add_argument("--out", type=Path, default=None, help="folder of shipped sets (default: the repository's pretrained/)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    return p


def _val_metrics(scene_dir: Path, question_dir: Path, data: Path, work: Path) -> dict:
    """Object metrics of the scene parser on ``data``'s val split (parsed as the study parses), the
    executors on its ground-truth programs, and the question parser's exact programs on its val
    questions."""
    parser = load_scene_parser(scene_dir, PARSE_MIN_SCORE)
    out = work / "val_likelihoods.json"
    records = [ParsedSceneRecord.from_parsed(p, i, n) for i, n, p in parse_split(parser, data, "val", progress=False)]
    write_likelihoods(out, LikelihoodsHeader.from_parser(parser, scene_dir, data, "val"), records)
    metrics = evaluate_parsed(out, data, "val")
    qp = load_question_parser(question_dir)
    items = read_question_items(questions_path(data, "val"), qp.ontology, require_program=True)
    scores, _ = score_parses(items, qp.parse([it.question for it in items]), qp.ontology)
    return {"scene_parser": {k: metrics[k] for k in ("images", "coco_objects", "attributes", "executors")},
            "question_parser": scores.summary()}


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    if args.threads:
        torch.set_num_threads(args.threads)
    piece = json.loads(args.piece.read_text()) if args.piece else None
    info = {"description": "the study's default-variant parsers (object questions): scene parser and question "
                           "parser of the run, float16 weights; NS-VQA's cuts chosen on its val split",
            "scene_parser_config": load_checkpoint(args.run / "scene_parser" / "attributes.pt", kind="attributes")["config"],
            "question_parser_config": load_checkpoint(args.run / "question_parser" / "question_parser.pt",
                                                      kind="question_parser")["config"],
            "study_piece": None if piece is None else {"piece": piece["piece"], "commit": piece["commit"],
                                                       "study": piece["study"]}}
    with tempfile.TemporaryDirectory() as tmp:
        full = _val_metrics(args.run / "scene_parser", args.run / "question_parser", args.data, Path(tmp))
        folder = pack_pretrained(args.run, args.name, info | {"val_float32": full}, out=args.out)
        half = _val_metrics(folder / "scene_parser", folder / "question_parser", args.data, Path(tmp))
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["val_float16"] = half
    write_json_atomic(manifest_path, manifest, indent=1)  # the sha256 cover the checkpoints, not the manifest
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder}: {size / 2**20:.1f} MB; val P-NSVQA-exact (ground-truth programs) float32 "
          f"{full['scene_parser']['executors']['pnsvqa-exact']['all']:.4f}, float16 "
          f"{half['scene_parser']['executors']['pnsvqa-exact']['all']:.4f}; question parser exact "
          f"{half['question_parser']['exact']:.4f} (sets in {pretrained_dir() if args.out is None else args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
