"""Pack a variant run's trained parsers as a shipped set ``pretrained/<name>/`` (nsvqa.pretrained).

    python scripts/pack_pretrained.py --run runs/study/mid --name mid-mini --data data/generated/study/mid \
        --piece results/study/reruns/pieces/mid-seed0-modular/piece.json \
        --models nscl,objmac-trace,film,lstm,random,majority,mdetr,cnn_lstm --model-run runs/front63/mid \
        --model-piece results/study/reruns/pieces/mid-seed0-seeing/piece.json ...

Writes the scene parser and question parser without training state, in float16, with NS-VQA's cuts
(the run's ``baselines/nsvqa/tuned.json``), each model of ``--models`` from
``baselines/<model>/`` of the run or of a ``--model-run`` (its checkpoint likewise, its cuts), and a manifest: the run's configs, the
study piece the parsers came from, the val metrics of the float32 run and of the float16 copy on the
same val split (the scene parser's object metrics and the executors on ground-truth programs, the
question parser's exact programs), per model the piece that trained it (the ``piece.json`` of
``--piece`` or ``--model-piece`` that lists it) with its test accuracy on the training variant beside
the study's committed one and its 95% interval (``results/study/report.json``'s in-domain table),
and the sha256 of every file. Each checkpoint is written in its shipped form (``X.safetensors`` with its
config and vocabularies in ``X.json``, read back identical before the set is written on;
nsvqa.training.checkpoint.save_shipped), and the manifest carries the model card (``card``: intended
use, training data and profile, measured accuracy, limits; docs/models.md). ``--convert NAME``
rewrites a set of the older form (``.pt`` checkpoints) in the shipped form instead, each checkpoint
read back identical, and adds the card when it has none. Replace a set only when the study's models
change.
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
from nsvqa.pretrained import add_models, convert_set, pack_pretrained, pretrained_dir
from nsvqa.training.checkpoint import load_checkpoint
from nsvqa.training.loading import load_question_parser, load_scene_parser, parse_split
from orchestration import models as registry


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description=__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, default=None,
                   help="the variant run folder (scene_parser/, question_parser/); needed unless --convert")
    p.add_argument("--name", required=True, help="the set's name (pretrained:<name>)")
    p.add_argument("--data", type=Path, default=None,
                   help="the training variant's folder (its val split is measured); needed unless --convert")
    p.add_argument("--convert", action="store_true",
                   help="rewrite the existing set NAME (in --out, else where pretrained:NAME resolves) in the shipped "
                        "form (.safetensors + .json per checkpoint, each read back identical) and add its card")
    p.add_argument("--intended-use", default=INTENDED_USE, help="the card's intended use")
    p.add_argument("--limits", default=LIMITS, help="the card's limits")
    p.add_argument("--piece", type=Path, default=None, help="the study piece's piece.json the run belongs to")
    p.add_argument("--models", default="", help="comma-separated models to ship from RUN/baselines/<model>/")
    p.add_argument("--model-run", type=Path, action="append", default=[], metavar="RUN",
                   help="another variant run folder holding models of --models in baselines/<model>/ (repeatable; "
                        "--run is looked in first)")
    p.add_argument("--model-piece", type=Path, action="append", default=[], metavar="PIECE_JSON",
                   help="the piece.json of a piece that trained models of --models (repeatable)")
    p.add_argument("--study", type=Path, default=Path("results/study/report.json"),
                   help="the study's committed report (each shipped model's in-domain accuracy and interval)")
    p.add_argument("--add", action="store_true",
                   help="add the --models to the existing set NAME (its parsers and other models kept, not measured again)")
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


#: the models that run on the shipped parsers alone (their accuracy recorded beside the shipped models'):
#: those that execute programs on parsed scenes, as their classes declare
EXECUTORS = registry.executors(gt_programs=False)
#: the card's defaults (--intended-use, --limits)
INTENDED_USE = ("research: answering questions about rendered Super-CLEVR-style scenes (vehicles and their parts) "
                "and measuring robustness across the study's domain variants without training first; "
                "nsvqa.load_pretrained(NAME).answer(image, question), --pretrained pretrained:NAME")
LIMITS = ("trained on one synthetic training variant at one profile and seed: expect lower accuracy on other "
          "variants (the study's RD) and much lower on real photographs, other object categories or wordings the "
          "question templates do not produce; object questions only (part questions untrained); images of the "
          "training size (320x240 at the mini profile); float16 storage (its accuracy beside float32's in "
          "val_float16 / val_float32); not for any decision about people or safety")


def _card(manifest: dict, intended_use: str, limits: str) -> dict:
    """The manifest's model card (nsvqa.pretrained.CARD_FIELDS) from what the manifest records."""
    scene = manifest.get("scene_parser_config") or {}
    study = (manifest.get("study_piece") or {}).get("study") or {}
    piece = (manifest.get("study_piece") or {}).get("piece") or {}
    tested = {m: {"test_accuracy": r.get("test_accuracy"), "n": r.get("n"),
                  "study_ci95": (r.get("study") or {}).get("ci95")}
              for m, r in ({**(manifest.get("executors") or {}), **(manifest.get("models") or {})}).items()
              if r.get("test_accuracy") is not None}
    val = manifest.get("val_float16") or {}
    return {"intended_use": intended_use,
            "training_data": {"variant": piece.get("variant", Path(str(scene.get("data", ""))).name),
                              "data": scene.get("data"), "seed": piece.get("seed", scene.get("seed")),
                              "sizes": study.get("sizes"), "questions": study.get("questions"),
                              "image_profile": study.get("image_profile"), "data_seed": study.get("data_seed"),
                              "generator": "nsvqa.generation (the study's generator; the images depend on seed, "
                                           "split and index only)"},
            "profile": scene.get("profile"),
            "accuracy": {"test_on_training_variant": tested,
                         "val_float16": {"pnsvqa-exact_gt_programs": (((val.get("scene_parser") or {}).get("executors")
                                                                      or {}).get("pnsvqa-exact") or {}).get("all"),
                                         "question_parser_exact": (val.get("question_parser") or {}).get("exact")}},
            "limits": limits}


def _model_records(models: list[str], pieces: list[Path], study: Path, variant: str) -> dict[str, dict]:
    """Per model: the piece that trained it, its test accuracy on ``variant`` there, and the study's
    committed in-domain accuracy with its 95% interval (``inside``: the piece's lies in it).

    Raises:
        SystemExit: a model no piece lists, or one without a test on ``variant`` (named).
    """
    committed = {r["model"]: r for r in json.loads(study.read_text())["in_domain"]}
    out = {}
    for model in models:
        found = [(path, rec) for path in pieces for rec in [json.loads(path.read_text())]
                 if model in rec["piece"]["models"]]
        if not found:
            raise SystemExit(f"pack_pretrained: --models {model}: no --model-piece lists it")
        path, rec = found[0]
        acc = rec["accuracy"].get(model, {}).get(variant)
        if acc is None:
            raise SystemExit(f"{path}, field 'accuracy': no test of {model} on {variant}")
        ref = committed.get(model)
        out[model] = {"piece": rec["piece"] | {"name": path.parent.name}, "commit": rec["commit"],
                      "test_accuracy": acc["accuracy"], "n": acc["n"],
                      "study": None if ref is None else {"accuracy": ref["accuracy"], "ci95": ref["ci95"]},
                      "inside": None if ref is None else ref["ci95"][0] <= acc["accuracy"] <= ref["ci95"][1]}
    return out


def _model_dir(model: str, runs: list[Path]) -> Path:
    """``RUN/baselines/<model>`` of the first of ``runs`` holding its checkpoint (else --run's, which
    pack_pretrained then refuses, naming it)."""
    return next((r / "baselines" / model for r in runs if (r / "baselines" / model / "baseline.pt").is_file()),
                runs[0] / "baselines" / model)


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.convert:
        folder = convert_set(args.out / args.name if args.out is not None else args.name)
        manifest_path = folder / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        if "card" not in manifest:
            manifest["card"] = _card(manifest, args.intended_use, args.limits)
            write_json_atomic(manifest_path, manifest, indent=1)  # the sha256 cover the files, not the manifest
        print(f"{folder}: {len(manifest['sha256'])} files in the shipped form, each checkpoint read back identical")
        return 0
    if args.run is None or args.data is None:
        get_args_parser().error("--run and --data are needed (unless --convert)")
    piece = json.loads(args.piece.read_text()) if args.piece else None
    models = [m for m in args.models.split(",") if m]
    pieces = ([args.piece] if args.piece else []) + args.model_piece
    records = _model_records(models, pieces, args.study, args.data.name) if models else {}
    executors = _model_records([m for m in EXECUTORS if piece and m in piece["piece"]["models"]], pieces, args.study,
                               args.data.name)
    if args.add:
        folder = add_models(args.name, {m: _model_dir(m, [args.run, *args.model_run]) for m in models}, records,
                            out=args.out)
        manifest_path = folder / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        manifest["card"] = _card(manifest, manifest.get("card", {}).get("intended_use", args.intended_use),
                                 manifest.get("card", {}).get("limits", args.limits))
        write_json_atomic(manifest_path, manifest, indent=1)
        for m, r in records.items():
            print(_record_line(m, r, args.data.name))
        print(f"{folder}: {sum(p.stat().st_size for p in folder.rglob('*') if p.is_file()) / 2**20:.1f} MB")
        return 0
    info = {"description": "the study's default-variant parsers (object questions): scene parser and question "
                           "parser of the run, float16 weights; NS-VQA's cuts chosen on its val split"
                           + ("; the models trained on the same variant and seed beside them" if models else ""),
            "scene_parser_config": load_checkpoint(args.run / "scene_parser" / "attributes.pt", kind="attributes")["config"],
            "question_parser_config": load_checkpoint(args.run / "question_parser" / "question_parser.pt",
                                                      kind="question_parser")["config"],
            "study_piece": None if piece is None else {"piece": piece["piece"], "commit": piece["commit"],
                                                       "study": piece["study"]},
            "models": records, "executors": executors}
    with tempfile.TemporaryDirectory() as tmp:
        full = _val_metrics(args.run / "scene_parser", args.run / "question_parser", args.data, Path(tmp))
        folder = pack_pretrained(args.run, args.name, info | {"val_float32": full}, out=args.out,
                                 models={m: _model_dir(m, [args.run, *args.model_run]) for m in models})
        half = _val_metrics(folder / "scene_parser", folder / "question_parser", args.data, Path(tmp))
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["val_float16"] = half
    manifest["card"] = _card(manifest, args.intended_use, args.limits)
    write_json_atomic(manifest_path, manifest, indent=1)  # the sha256 cover the checkpoints, not the manifest
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder}: {size / 2**20:.1f} MB; val P-NSVQA-exact (ground-truth programs) float32 "
          f"{full['scene_parser']['executors']['pnsvqa-exact']['all']:.4f}, float16 "
          f"{half['scene_parser']['executors']['pnsvqa-exact']['all']:.4f}; question parser exact "
          f"{half['question_parser']['exact']:.4f} (sets in {pretrained_dir() if args.out is None else args.out})")
    for m, r in (executors | records).items():
        print(_record_line(m, r, args.data.name))
    return 0


def _record_line(model: str, r: dict, variant: str) -> str:
    study = r["study"]
    return (f"  {model}: {100 * r['test_accuracy']:.1f}% on {variant} ({r['piece']['name']}); the study "
            + ("has none" if study is None else f"{100 * study['accuracy']:.1f} [{100 * study['ci95'][0]:.1f}, "
               f"{100 * study['ci95'][1]:.1f}]{'' if r['inside'] else ' (outside)'}"))


if __name__ == "__main__":
    sys.exit(main())
