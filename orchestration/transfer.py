"""Transfer to the official Super-CLEVR renders: trained parsers answer an imported official split.

A scene parser trained on this project's renders meets the official release's Blender renders
(imported by :func:`nsvqa.generation.official.import_release`) in :func:`transfer_report`:

1. :func:`orchestration.experiment.train_variant` with the trained parsers (``pretrained:<name>`` or a
   folder with ``scene_parser/`` and ``question_parser/``) parses the split's images and questions
   and runs each model of ``models`` (parsed programs, and ground-truth ones for ``+gtprog``);
2. :func:`nsvqa.evaluation.scene_parser.evaluate_parsed` scores the parse: detection recall and
   per-attribute accuracy of the matched objects (by mask IoU, or by box centre where the scenes
   have no masks: the release's sample scenes have no ``obj_mask_box``), and the executors on the
   ground-truth programs;
3. the question parser reads the release's question texts: exact programs and answers on the
   ground-truth scenes (:func:`nsvqa.evaluation.question_parser.score_parses`);
4. every accuracy is split by question kind: ``object`` (no part function: the CLEVR 1.0
   templates of the paper's study) and ``part`` (the part templates).

``scripts/evaluate_transfer.py`` imports a release and writes the report (JSON and Markdown).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from executors import load_ontology
from executors.io import load_questions, load_scenes, parse_program
from nsvqa.artifacts.predictions import read_predictions
from nsvqa.evaluation.question_parser import read_question_items, score_parses
from nsvqa.evaluation.report import pct
from nsvqa.evaluation.scene_parser import evaluate_parsed
from orchestration import models as registry
from orchestration.experiment import VariantRun, train_variant
from orchestration.train_spec import TrainSpec
from nsvqa.pretrained import parsers_dir
from nsvqa.training.loading import load_question_parser

#: The models a transfer report runs: those that execute programs on parsed scenes, which take the
#: parsers as they are, on parsed and on ground-truth programs (as their classes declare them).
TRANSFER_MODELS = registry.executors()
KINDS = ("object", "part")


def question_kinds(questions: Sequence[Mapping[str, Any]]) -> list[str]:
    """``"part"`` for a question whose program uses a part function, else ``"object"``, in file order."""
    onto = load_ontology("superclevr")
    return ["part" if any("part" in node.function for node in parse_program(q, onto, where=f"question {k}").nodes)
            else "object" for k, q in enumerate(questions)]


def accuracy_by_kind(predictions: Sequence[Any], kinds: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Accuracy and question count per kind (and ``all``) of predictions whose ``question_index``
    is a position in ``kinds``."""
    hits = {k: 0 for k in ("all", *KINDS)}
    n = dict(hits)
    for p in predictions:
        kind = kinds[p.question_index]
        ok = p.prediction is not None and p.prediction == p.answer
        for k in ("all", kind):
            n[k] += 1
            hits[k] += ok
    return {k: {"accuracy": hits[k] / n[k] if n[k] else None, "n": n[k]} for k in n}


def question_parser_by_kind(parsers: str, data: Path, split: str, kinds: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The question parser of ``parsers`` on ``data``'s ``split`` questions, per kind: the share of
    exact programs and of right answers on the ground-truth scenes."""

    parser = load_question_parser(parsers_dir(parsers) / "question_parser")
    path = data / "questions" / f"{split}_questions.json"
    items = read_question_items(path, parser.ontology, require_program=True)
    scenes = load_scenes(data / "scenes" / f"{split}_scenes.json", parser.ontology)[0]
    _, rows = score_parses(items, parser.parse([it.question for it in items]), parser.ontology, scenes,
                           where=str(path))
    out = {}
    for kind in ("all", *KINDS):
        mine = [r for r, k in zip(rows, kinds) if kind in ("all", k)]
        out[kind] = {"n": len(mine), "exact": sum(bool(r["exact"]) for r in mine) / len(mine) if mine else None,
                     "answer_on_true_scenes": sum(bool(r["correct"]) for r in mine) / len(mine) if mine else None}
    return out


def transfer_report(root: str | os.PathLike, variant: str, runs: str | os.PathLike, parsers: str, *,
                    split: str = "test", trained_on: str = "mid", models: Sequence[str] = TRANSFER_MODELS,
                    threshold: float = 0.7, progress: bool = False,
                    echo: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """The parsers ``parsers`` (trained on variant ``trained_on``) on ``root/variant``'s ``split``:
    detection and attributes of the matched objects, and each model's accuracy per question kind
    with parsed and with ground-truth programs. The run's files go under ``runs``."""
    root = Path(root)
    spec = TrainSpec(pretrained=parsers, progress=progress)
    summary = train_variant(root, trained_on, runs, models=models, spec=spec, tests=[variant], split=split, echo=echo)
    run = VariantRun(Path(runs), trained_on)
    kinds = question_kinds(load_questions(root / variant / "questions" / f"{split}_questions.json"))
    scene = evaluate_parsed(run.parsed(variant, "likelihoods"), root / variant, split, threshold=threshold)
    qparse = question_parser_by_kind(parsers, root / variant, split, kinds)
    return {"format_version": 1, "data": str(root / variant), "split": split, "parsers": parsers,
            "trained_on": trained_on, "images": scene["images"],
            "questions": {k: kinds.count(k) for k in KINDS},
            "detection": {k: v for k, v in scene["attributes"].items() if not k.startswith("part")},
            "gt_programs_executors": scene["executors"], "question_parser": qparse,
            "models": {label: accuracy_by_kind(read_predictions(run.predictions(label, variant)), kinds)
                       for label in summary["models"]},
            "seconds": summary["seconds"]}


def transfer_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: detection and attributes, then accuracy per model and question kind."""
    d = report["detection"]
    q = report["questions"]
    lines = [f"# Transfer: `{report['parsers']}` (trained on `{report['trained_on']}`) on `{report['data']}`",
             "", f"{report['images']} images, {q['object']} object and {q['part']} part questions "
             f"(split `{report['split']}`).", "",
             "## Detection and attributes of the matched objects", "",
             f"Objects matched to detections by: {d['matched_by']}.", "",
             "| objects | detections | matched | recall % | " + " | ".join(
                 k.split(".", 1)[1] + " %" for k in d if k.startswith("object.") and k != "object.position_rmse")
             + " |",
             "|" + "---|" * (4 + sum(k.startswith("object.") and k != "object.position_rmse" for k in d))]
    lines.append(f"| {d['objects_gt']} | {d['detections']} | {d['matched']} | {pct(d['recall'])} | " + " | ".join(
        pct(v) for k, v in d.items() if k.startswith("object.") and k != "object.position_rmse") + " |")
    qp = report["question_parser"]
    lines += ["", "## The question parser on the release's questions", "",
              "Exact: the parsed program equals the release's; answer: the parsed program run on the "
              "ground-truth scene.", "", "| kind | questions | exact % | answer on true scenes % |",
              "|---|---|---|---|"]
    lines += [f"| {k} | {qp[k]['n']} | {pct(qp[k]['exact'])} | {pct(qp[k]['answer_on_true_scenes'])} |"
              for k in ("object", "part", "all")]
    lines += ["", "## Accuracy % by question kind", "",
              "`+gtprog`: ground-truth programs (the question parser left out); a failed execution of a "
              "parsed program is a guess, as in the study.", "",
              "| model | object | part | all |", "|---|---|---|---|"]
    for label, acc in report["models"].items():
        lines.append(f"| {label} | " + " | ".join(
            f"{pct(acc[k]['accuracy'])} ({acc[k]['n']})" for k in ("object", "part", "all")) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["TRANSFER_MODELS", "KINDS", "question_kinds", "accuracy_by_kind", "question_parser_by_kind",
           "transfer_report", "transfer_markdown"]
