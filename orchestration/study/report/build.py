"""The study's report, rebuilt from the committed predictions alone (``results/study/pieces``).

:func:`build_study_report` reads every ``pieces/<piece>/predictions/*.jsonl.gz`` (and each piece's
``piece.json`` for its seed, commit and seconds) and returns every file of the report as bytes:

    report.json, report.md, report.tex   Table 1 (accuracy matrices), Table 2 (RD, image margins), the in-domain
                                         accuracies of Fig. 3 with each model's image margin, the
                                         seeds of the default variant, exact inference beside the
                                         0.7 threshold (accuracy and ECE), the part-question
                                         extension, the systematic splits' ID / OOD accuracies,
                                         the fallback toward training frequencies on the
                                         distribution factor's tail / oppo tests,
                                         the pieces' wall times
    in_domain.png                        Fig. 3: in-domain accuracy per model with 95% intervals
    distribution/fallback.png            where wrong attribute answers land on the tail and oppo
                                         tests, per training variant (the fallback section)
    reliability/<model>.png              its reliability diagram in domain (models that give a
                                         probability)
    <factor>/report.{json,md,tex}        the factor's full evaluation (nsvqa.evaluation.evaluate)
    <factor>/heatmaps/<model>.png        its train x test matrix per model
    parts/{part,object}/report.{json,md} the extension's full evaluation on each question kind
    parts/heatmaps/<model>.png           its part-question matrix per model

The systematic splits' and the fallback's sections (JSON, Markdown, plot) and the comparison with
the in-domain generalization paper come from :mod:`orchestration.study.report.systematic`.

Tables 1-2 use seed 0 of every model, as the paper does, except where a model ran further
training seeds on every training variant of a factor (:attr:`StudyConfig.seed_pieces`): that
factor reads it over those seeds (:func:`seeded_factor_cells`). The default variant's in-domain
seeds are reported apart. An alias of the study (``co-0`` is ``mid``, ``bal`` is ``hard``) reads
its target's predictions under its own name in its factor's table. :func:`write_study_report` writes
the files; :func:`check_study_report` rebuilds them in memory and lists the text files (JSON,
Markdown, LaTeX) whose bytes differ from those on disk: the shipped tables are reproducible from
the committed predictions without retraining.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from executors.io import loads_json, read_json
from nsvqa.artifacts.predictions import CellKey, Prediction, parse_predictions_name, read_predictions
from nsvqa.evaluation import (N_BOOT, ConceptSplit, accuracy, calibration, default_comparisons, evaluate, factor_layout,
                              wilson_interval)
from nsvqa.evaluation.image_dependence import runs_image_dependence
from nsvqa.evaluation.perception import MIN_EXIST
from nsvqa.evaluation.report import (pct, plot_heatmap, pyplot, plot_reliability, tex_escape, to_latex,
                                    to_markdown, variant_label)
from nsvqa.generation.questions.templates import load_templates
from nsvqa.generation.variants import FACTORS, get_factor, load_variant
from nsvqa.models import ModelSpec
from orchestration.models import get as get_model
from orchestration.study.settings.budget import budget, budget_markdown, machine_label, pending_rows
from orchestration.study.settings.pieces import (PARSES, PART_GROUP, canonical, design_only, lenders, piece_dir,
                                                 reads_detector_only, scene_parser_folder, scene_parser_trainers,
                                                 study_pieces)
from orchestration.study.settings.config import STUDY, StudyConfig, StudyError
from orchestration.study.report.seeds import more_seeds, more_seeds_markdown
from orchestration.study.report.perception import perception_check, perception_markdown
from orchestration.study.report.findings import (decide_all, findings, findings_markdown, perception_of, scale_cells,
                                                 seeing_sentence, seeing_sides)
from orchestration.study.report.systematic import (fallback_figure, fallback_markdown, fallback_section,
                                                   generalization_markdown, generalization_points, systematic_markdown,
                                                   systematic_section)

TEXT_SUFFIXES = (".json", ".md", ".tex")


def done_pieces(results: str | os.PathLike) -> list[tuple[Path, dict[str, Any]]]:
    """Each finished piece's folder and its ``piece.json``, in piece-name order."""
    return [(pj.parent, read_json(pj, allow_nan=True)) for pj in sorted(Path(results).glob("pieces/*/piece.json"))]


def _parsed_scenes(path: Path) -> list:
    """The ``scenes`` of a committed, gzipped ``likelihoods.json`` as stored: what two runs of one
    scene parser write alike (the header names the checkpoint files, whose bytes differ)."""
    return loads_json(gzip.decompress(path.read_bytes()), str(path), allow_nan=True)["scenes"]


def check_shared_scene_parsers(results: str | os.PathLike, cfg: StudyConfig = STUDY) -> int:
    """That the committed pieces reading one run folder's scene parser read one perception: every
    borrower (:func:`~orchestration.study.settings.pieces.lenders`) parsed each test split exactly as its
    committed lender did (their ``parses/<test>/likelihoods.json.gz``' scenes), and every two pieces
    that read the same folder (:func:`~orchestration.study.settings.pieces.scene_parser_folder`: a lender and
    its borrowers, the groups of one variant and seed) and whose ``piece.json`` records the weights
    of that scene parser (``scene_parser_weights``, written since 2026-12-06) record the same
    weights. A factor's RD reads a borrower's and its lender's rows as one perception; the seeing
    model is compared with the modular models of its own run folder as sharing theirs. A piece
    that reads the detector alone and trained it again (its ``detector_read``) is left out: its
    record says its perception is its own. Returns how
    many splits and pairs of records were compared.

    Raises:
        StudyError: a split whose parses differ, or two records whose weights differ, naming both
            files.
    """
    compared, lent, first = 0, {}, {}  # a lender's parses, read once; the first record of each folder
    trainers = scene_parser_trainers(cfg)
    for piece in study_pieces(cfg):
        record = piece_dir(results, piece) / "piece.json"
        rec = read_json(record, allow_nan=True) if record.is_file() else {}
        weights = rec.get("scene_parser_weights")
        if (rec.get("detector_read") or {}).get("trained_here") and reads_detector_only(piece):
            weights = None  # it trained the detector it read again, and its record says so (issue 76)
        if weights is not None:
            folder = scene_parser_folder(piece, ".", cfg)
            if folder in first and first[folder][1] != weights:
                raise StudyError(f"{record}: {piece.name} read the scene parser of {folder.name} with other weights than "
                                 f"{first[folder][0]} records: it trained that scene parser again elsewhere "
                                 f"(run_study.py --retrain-lender), so the two pieces do not share a perception")
            compared += folder in first
            first.setdefault(folder, (record, weights))
        mine = piece_dir(results, piece) / PARSES
        for lender in lenders(piece, cfg, trainers) if mine.is_dir() else ():
            theirs = piece_dir(results, lender) / PARSES
            for split in sorted(p.parent.name for p in mine.glob("*/likelihoods.json.gz")):
                a, b = mine / split / "likelihoods.json.gz", theirs / split / "likelihoods.json.gz"
                if not b.is_file():
                    continue
                if b not in lent:
                    lent[b] = _parsed_scenes(b)
                if _parsed_scenes(a) != lent[b]:
                    raise StudyError(f"{a}: {piece.name} borrows the scene parser of {lender.name}, but its parses of "
                                     f"{split} differ from {b}: it trained that scene parser again elsewhere "
                                     f"(run_study.py --retrain-lender), so the two pieces do not share a perception")
                compared += 1
    return compared


#: a committed cell's key: (model, training variant, test variant, training seed)
Cell = tuple[str, str, str, int]


def collect(results: str | os.PathLike, *, parts: bool = False,
            done: Sequence[tuple[Path, Mapping[str, Any]]] | None = None
            ) -> tuple[dict[tuple[str, str, str, int], list[Prediction]], list[dict]]:
    """Every committed prediction, keyed (model, train, test, seed), and each piece's record
    (``piece.json`` without its study config), in piece-name order. The predictions are those of
    the part-question extension's pieces (group :data:`~orchestration.study.settings.pieces.PART_GROUP`) when ``parts``,
    of every other piece otherwise; the records are every piece's. ``done``: :func:`done_pieces`
    of ``results`` already read."""
    cells: dict[tuple[str, str, str, int], list[Prediction]] = {}
    pieces = []
    for folder, rec in done_pieces(results) if done is None else done:
        seed = int(rec["piece"]["seed"])
        pieces.append({"name": folder.name, "commit": rec.get("commit"), "machine": rec.get("machine"),
                       "minutes": round(rec["seconds"]["total"] / 60, 1), "models": rec["piece"]["models"],
                       "tests": rec["piece"]["tests"]})
        if (rec["piece"]["group"] == PART_GROUP) == parts:
            cells.update(_piece_cells(folder, seed, "predictions"))
    return cells, pieces


def _piece_cells(folder: Path, seed: int, kind: str) -> dict[tuple[str, str, str, int], list[Prediction]]:
    """A piece folder's gzipped predictions under ``kind`` (``predictions`` or ``shuffled``), keyed
    (model, train, test, seed)."""
    out = {}
    for f in sorted((folder / kind).glob("*.jsonl.gz")):
        k = parse_predictions_name(f)
        out[(k.model, k.train, k.test, seed)] = read_predictions(f)
    return out


def dependence_seeds(row: Mapping[str, Any]) -> str:
    """What an in-domain row's image dependence pools, as a table cell says it: nothing for seed 0
    alone, else `` (seed 2)`` or `` (mean of seeds 0, 1, 2)``."""
    seeds = row.get("image_dependence_seeds") or [0]
    if seeds == [0]:
        return ""
    return f" (seed {seeds[0]})" if len(seeds) == 1 else f" (mean of seeds {', '.join(map(str, seeds))})"


def collect_shuffled(done: Sequence[tuple[Path, Mapping[str, Any]]]) -> dict[tuple[str, str, str, int], list[Prediction]]:
    """The image-shuffle test's committed predictions (``pieces/<piece>/shuffled/``, pieces run
    since the test exists; not the part extension's), keyed as :func:`collect`'s."""
    out: dict[tuple[str, str, str, int], list[Prediction]] = {}
    for folder, rec in done:
        if rec["piece"]["group"] != PART_GROUP:
            out.update(_piece_cells(folder, int(rec["piece"]["seed"]), "shuffled"))
    return out


def factor_cells(cells: Mapping[tuple[str, str, str, int], list[Prediction]], factor: str,
                 cfg: StudyConfig = STUDY, seed: int = 0) -> dict[CellKey, list[list[Prediction]]]:
    """The cells of ``factor``'s table at ``seed``, under the factor's own variant names (an alias
    reads its target's predictions)."""
    variants = FACTORS[factor]
    out: dict[CellKey, list[list[Prediction]]] = {}
    for (model, train, test, s), preds in cells.items():
        if s != seed:
            continue
        for vt in variants:
            if canonical(vt, cfg) != train or load_variant(vt).test_only:
                continue
            for vs in variants:
                if canonical(vs, cfg) == test:
                    out[CellKey(model, vt, vs)] = [preds]
    return out


def seeded_factor_cells(cells: Mapping[tuple[str, str, str, int], list[Prediction]], factor: str,
                        cfg: StudyConfig = STUDY) -> tuple[dict[CellKey, list[list[Prediction]]], dict[str, list[int]]]:
    """The cells of ``factor``'s table (as :func:`factor_cells`'s) over every training seed each model
    has on the whole factor, and model -> those seeds. A seed counts for a model when its cells at
    that seed cover every cell it has at seed 0: every training variant of the factor ran it, tested
    on the same variants. Each cell holds one run per such seed, in seed order (seed 0 first), so
    that :func:`~nsvqa.evaluation.comparison.rd_bootstrap` draws seeds, then images, and the matrix
    is the mean over them (:func:`~nsvqa.evaluation.evaluate`). A model with a training variant at
    seed 0 only has seed 0 alone: its cells are :func:`factor_cells`' at seed 0."""
    at = {s: factor_cells(cells, factor, cfg, s) for s in sorted({k[3] for k in cells})}
    base = at.get(0, {})
    seeds: dict[str, list[int]] = {}
    for model in dict.fromkeys(k.model for k in base):
        mine = [k for k in base if k.model == model]
        seeds[model] = [s for s in at if all(k in at[s] for k in mine)]
    return {k: [at[s][k][0] for s in seeds[k.model]] for k in base}, seeds


def _mean(xs) -> float | None:
    """The mean of the values that exist (None for none)."""
    xs = [x for x in xs if x is not None]
    return statistics.fmean(xs) if xs else None


def _rd_cell(m: Mapping[str, Any], latex: bool = False) -> str:
    """An RD in % with its 95% interval when it has one (Markdown, or LaTeX with a small interval)."""
    ci, value = m.get("rd_ci95"), pct(m.get("rd"), 2)
    if ci is None:
        return value.replace("—", "--") if latex else value
    band = f"[{pct(ci[0], 2)}, {pct(ci[1], 2)}]"
    return f"{value} {{\\scriptsize {band}}}" if latex else f"{value} {band}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
            *("| " + " | ".join(r) + " |" for r in rows)]


def _png(draw) -> bytes:
    plt = pyplot()
    fig = draw(plt)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _plot_bytes(plot, *args) -> bytes:
    """The PNG bytes of one of :mod:`nsvqa.evaluation.report`'s plots (which write to a path)."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "plot.png"
        plot(p, *args)
        return p.read_bytes()


def _heatmap(matrix, rows, cols, title) -> bytes:
    return _plot_bytes(plot_heatmap, matrix, rows, cols, title)


def _reliability(cal: Mapping[str, Any], title: str) -> bytes:
    return _plot_bytes(plot_reliability, cal["bins"], cal["ece"], title)


def _in_domain_plot(rows: Sequence[Mapping[str, Any]]) -> bytes:
    def draw(plt):
        fig, ax = plt.subplots(figsize=(0.75 * len(rows) + 2.0, 3.4))
        xs = range(len(rows))
        acc = [100 * r["accuracy"] for r in rows]
        err = [[100 * (r["accuracy"] - r["ci95"][0]) for r in rows], [100 * (r["ci95"][1] - r["accuracy"]) for r in rows]]
        colors = ["tab:orange" if r["kind"] == "modular" else "tab:blue" for r in rows]
        ax.bar(xs, acc, yerr=err, color=colors, edgecolor="black", capsize=3)
        for x, a in zip(xs, acc):
            ax.text(x, a + 2, f"{a:.1f}", ha="center", fontsize=7)
        ax.set_xticks(list(xs), [r["model"] for r in rows], rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel("accuracy (%)")
        ax.set_title("in-domain accuracy (train and test mid, object questions; 95% Wilson intervals)", fontsize=8)
        fig.tight_layout()
        return fig
    return _png(draw)


def family(label: str) -> str:
    """The declared family of the model a label names (:attr:`nsvqa.models.Model.family`, read
    through the registry, :mod:`orchestration.models`)."""
    return get_model(ModelSpec.from_label(label).name).family


def question_only_reference(in_domain: Sequence[Mapping[str, Any]]) -> str | None:
    """The image margin's reference: the most accurate in-domain model of the question-only
    family (it reads no image), None without one."""
    qo = [r for r in in_domain if r["kind"] == "question-only"]
    return max(qo, key=lambda r: r["accuracy"])["model"] if qo else None


def rd_pairs(cfg: StudyConfig = STUDY) -> list[tuple[str, str]]:
    """The RD differences the study's findings turn on, each as (A, B) for A - B: each P-NSVQA
    model against NS-VQA with the same program source (the default comparisons), each modular model
    with parsed programs against each image-using non-modular model trained on every variant (FiLM,
    mDETR), NS-VQA and P-NSVQA against NSCL (the distribution factor's "NS-VQA best of the prior
    models", "P-NSVQA best on 3 of 4 factors"), and NS-VQA and P-NSVQA with ground-truth programs
    against NSCL and the non-modular models (whether a verdict holds without the question parser)."""
    modular = [m for m in cfg.groups.get("modular", ()) if not ModelSpec.from_label(m).gt_programs]
    gt = [m for m in cfg.groups.get("modular", ())
          if ModelSpec.from_label(m).gt_programs and ModelSpec.from_label(m).name in ("nsvqa", "pnsvqa")]
    holistic = [m for g, ms in cfg.groups.items() if g != "modular" for m in ms
                if m not in cfg.default_only and family(m) == "holistic"]
    pairs = default_comparisons(list(cfg.groups.get("modular", ()))) + [(a, b) for a in modular for b in holistic]
    pairs += ([("nsvqa", "nscl"), ("pnsvqa", "nscl")] if {"nsvqa", "pnsvqa", "nscl"} <= set(modular) else [])
    pairs += [(a, "nscl") for a in gt if "nscl" in modular]
    return pairs + [(a, b) for a in gt for b in holistic]


def build_study_report(results: str | os.PathLike, cfg: StudyConfig = STUDY, *, plots: bool = True) -> dict[str, bytes]:
    """Every file of the study's report (path relative to ``results`` -> bytes), from the
    committed predictions alone.

    Raises:
        FileNotFoundError: no finished piece under ``results``.
        StudyError: a piece that borrows a scene parser parsed otherwise than its lender
            (:func:`check_shared_scene_parsers`).
    """
    results = Path(results)
    done = done_pieces(results)
    check_shared_scene_parsers(results, cfg)
    cells, pieces = collect(results, done=done)
    if not pieces:
        raise FileNotFoundError(f"{results}: no finished piece (pieces/<piece>/piece.json)")
    files: dict[str, bytes] = {}
    factors = _factor_sections(cells, cfg, files, plots)  # Table 1 / Table 2, one evaluation per factor
    parts = _part_section(results, collect(results, parts=True, done=done)[0], cfg, files, plots)
    perception = _perception_section(done)
    systematic = systematic_section(cells, perception)
    fallback = fallback_section(factor_cells(cells, "distribution", cfg))
    if plots and fallback["tests"]:
        files["distribution/fallback.png"] = _png(lambda plt: fallback_figure(plt, fallback))
    in_domain, question_only = _in_domain_section(cells, done, cfg.default_variant, files, plots)
    seeds = _default_seeds(cells, cfg.default_variant, set(cfg.groups.get("modular", ())))
    report = {"format_version": 1, "study": cfg.to_json(), "pieces": pieces, "question_only": question_only,
              "seeing": seeing_sides(cfg.groups),
              "in_domain": in_domain, "seeds": seeds, "factors": factors, "parts": parts,
              "perception": perception, "perception_min_exist": MIN_EXIST, "systematic": systematic,
              "fallback": fallback}
    report["budget"] = budget(results, cfg)
    _decide_findings(report, results, cells, cfg)
    report["generalization"] = generalization_points(report, cells)
    files["report.json"] = (json.dumps(report, indent=1) + "\n").encode()
    files["report.md"] = (study_markdown(report) + "\n").encode()
    files["report.tex"] = (study_latex(report) + "\n").encode()
    return files


def _factor_sections(cells: Mapping[Cell, list[Prediction]], cfg: StudyConfig, files: dict[str, bytes],
                     plots: bool) -> dict[str, Any]:
    """Table 1 / Table 2: per factor of ``cfg`` with cells, its evaluation's files (``<factor>/report.*``,
    and its heatmaps with ``plots``) added to ``files``, and its section of ``report.json``."""
    factors: dict[str, Any] = {}
    for f in cfg.factors:
        fc, seeds_of = seeded_factor_cells(cells, f, cfg)
        if not fc:
            continue
        trains, tests = factor_layout(f)
        rep = evaluate(fc, allow_partial=False, factors={f: (trains, tests)}, rd_pairs=rd_pairs(cfg),
                       concept_split=_concept_split() if get_factor(f).rd == "head_tail" else None)
        for c in rep["cells"]:
            c.pop("files", None)
        files[f"{f}/report.json"] = (json.dumps(rep, indent=1) + "\n").encode()
        files[f"{f}/report.md"] = (to_markdown(rep) + "\n").encode()
        files[f"{f}/report.tex"] = (to_latex(rep) + "\n").encode()
        if plots:
            for model, m in rep["factors"][f]["models"].items():
                files[f"{f}/heatmaps/{model}.png"] = _heatmap(
                    m["matrix"], [variant_label(f, t) for t in trains], [variant_label(f, s) for s in tests],
                    f"{model}: {f} (accuracy, %)")
        ece, ece_all = {}, {}
        for c in rep["cells"]:
            if c["calibration"] is None:
                continue
            ece_all.setdefault(c["model"], []).append(c["calibration"]["ece"])
            if c["train"] == c["test"]:
                ece.setdefault(c["model"], {})[c["train"]] = c["calibration"]["ece"]

        factors[f] = {"train_variants": trains, "test_variants": tests,
                      "rd_comparisons": rep["factors"][f]["rd_comparisons"],
                      "models": {m: {"matrix": v["matrix"], "rd": v["rd"]["value"], "rd_note": v["rd"]["reason"],
                                     "rd_ci95": v["rd"].get("ci95"), "rd_precision": v["rd"].get("precision"),
                                     "ece_in_domain": ece.get(m, {}),
                                     "accuracy_mean": _mean(x for row in v["matrix"] for x in row),
                                     "ece_mean": _mean(ece_all.get(m, [])),
                                     "cells": sum(x is not None for row in v["matrix"] for x in row),
                                     # the training seeds pooled, where more than seed 0
                                     **({"seeds": seeds_of[m]} if len(seeds_of.get(m, [0])) > 1 else {})}
                                 for m, v in rep["factors"][f]["models"].items()}}
    return factors


def _in_domain_section(cells: Mapping[Cell, list[Prediction]], done: Sequence[tuple[Path, Mapping[str, Any]]], d: str,
                       files: dict[str, bytes], plots: bool) -> tuple[list[dict[str, Any]], str | None]:
    """Fig. 3: in domain on the default variant ``d``, seed 0; the image margin against the
    question-only model and the image dependence. Its rows (reliability and in-domain plots added to
    ``files`` with ``plots``) and the question-only model."""
    in_domain = []
    for (model, train, test, seed), preds in sorted(cells.items()):
        if train == test == d and seed == 0:
            a = accuracy(preds)
            cal = calibration(preds)
            in_domain.append({"model": model, "kind": family(model), "perception": perception_of(model), "n": a.n,
                              "accuracy": a.accuracy, "ci95": wilson_interval(a.n_correct, a.n),
                              "guessed": a.n_guessed, "ece": cal.ece if cal is not None else None,
                              "reliability": f"reliability/{model}.png" if cal is not None else None})
            if plots and cal is not None:
                files[f"reliability/{model}.png"] = _reliability(cal.to_json(), f"{model}, train and test {d}")
    question_only = question_only_reference(in_domain)
    ref = next((r["accuracy"] for r in in_domain if r["model"] == question_only), None)
    shuffled = collect_shuffled(done)
    for r in in_domain:
        r["image_margin"] = None if ref is None else r["accuracy"] - ref
        # every training seed whose cell has the shuffle test, pooled (seeds, then images; said in the
        # row unless it is seed 0 alone): a further seed refines the number, never replaces it
        seeds = sorted(k[3] for k in shuffled if k[:3] == (r["model"], d, d) and (r["model"], d, d, k[3]) in cells)
        dep = runs_image_dependence([(cells[(r["model"], d, d, s)], shuffled[(r["model"], d, d, s)]) for s in seeds])
        if dep is not None:
            r["image_dependence"], r["image_dependence_ci95"] = dep["dependence"], dep["ci95"]
            r["image_dependence_seeds"] = seeds
    in_domain.sort(key=lambda r: (r["kind"] == "modular", r["accuracy"]))
    if plots and in_domain:
        files["in_domain.png"] = _in_domain_plot(in_domain)
    return in_domain, question_only


def _default_seeds(cells: Mapping[Cell, list[Prediction]], d: str, modular: set[str]) -> dict[str, dict[str, Any]]:
    """The default variant ``d``'s in-domain accuracy per training seed of each ``modular`` model,
    with their mean and standard deviation."""
    seeds: dict[str, dict[str, Any]] = {}
    for (model, train, test, seed), preds in sorted(cells.items()):
        if train == test == d and model in modular:
            seeds.setdefault(model, {"per_seed": {}})["per_seed"][str(seed)] = accuracy(preds).accuracy
    for model, s in seeds.items():
        v = list(s["per_seed"].values())
        s["mean"] = statistics.fmean(v)
        s["std"] = statistics.stdev(v) if len(v) > 1 else None
    return seeds


def _decide_findings(report: dict[str, Any], results: Path, cells: Mapping[Cell, list[Prediction]],
                     cfg: StudyConfig) -> None:
    """The report's ``findings`` (each against the non-modular side and again against each group that
    sees, the perception check's row with them, decided together), its ``design`` (a verdict is
    provisional until the declared design is complete) and ``more_seeds``."""
    d, factors = cfg.default_variant, report["factors"]
    scale = scale_cells(results)
    rows = perception_check(report, results, cells, findings(report, cells, d, scale=scale))
    seeing = {side["group"]: findings(report, cells, d, scale=None, non_modular=side["models"], label=side["group"])
              for side in report["seeing"]}  # judged again against each group that sees (no scale)
    precision = [m.get("rd_precision") for f in factors.values() for m in f["models"].values()]
    precision += [c.get("precision") for f in factors.values() for c in f["rd_comparisons"]]
    precision += [r["basis"].get("precision") for r in (*rows, *(r for found in seeing.values() for r in found))]
    report["findings"] = decide_all(rows, seeing, n_boot=N_BOOT, precision=max((x for x in precision if x is not None), default=None))
    report["design"] = design_record(report["budget"], cfg)
    if not report["design"]["complete"]:  # a verdict is decided once the declared design is complete
        for r in report["findings"]:
            if r["status"] != "pending":
                r["qualifier"] = "; ".join(x for x in ("provisional", r.get("qualifier")) if x)
    k = max((r.get("correction", {}).get("k", 1) for r in report["findings"]), default=1)
    report["more_seeds"] = more_seeds(rows, seeing, report["pieces"], k)


def design_record(b: Mapping[str, Any], cfg: StudyConfig) -> dict[str, Any]:
    """Whether the declared design (every piece of the plan: :attr:`StudyConfig.design` and the
    pieces declared before it) is complete, from the budget ``b``: ``{"complete", "pending": [piece
    names], "seed_pieces": how many further-seed pieces issue 64 declared by interval distance,
    "design_pieces": how many :attr:`StudyConfig.design` adds by its rule}``."""
    pending = [r["piece"] for r in pending_rows(b)]
    return {"complete": not pending, "pending": pending, "seed_pieces": len(cfg.seed_pieces),
            "design_pieces": len(design_only(cfg)) if cfg.design else 0}


def design_sentence(report: Mapping[str, Any]) -> str:
    """How the pieces were chosen and whether the verdicts are final (one paragraph; empty without
    a design record)."""
    d = report.get("design")
    if not d:
        return ""
    out = []
    if d["seed_pieces"]:
        out.append(f"The {d['seed_pieces']} further-seed pieces declared first (`seed_pieces`, issue 64) were chosen "
                   f"by how near their findings' intervals lay to 0, after the verdicts had been read (the rule of "
                   f"\"Findings more training seeds would decide\", now a diagnostic).")
    if d["design_pieces"]:
        out.append(f"The declared design (`design`, docs/study.md) adds {d['design_pieces']} pieces by a rule that "
                   f"reads no result.")
    out.append("Every verdict is final: the declared design is complete." if d["complete"] else
               "Every verdict is provisional until the declared design is complete.")
    return " ".join(out)


def question_kinds() -> dict[str, str]:
    """Question family (``"<template file>#<index>"``, :attr:`Prediction.family`) -> its template's
    kind: ``"part"`` when its program uses a part function, else ``"object"``."""
    return {f"{t.filename}#{t.index}": t.kind for t in load_templates()}


def _part_section(results: Path, pcells: Mapping[tuple[str, str, str, int], list[Prediction]], cfg: StudyConfig,
                  files: dict[str, bytes], plots: bool) -> dict[str, Any] | None:
    """The part-question extension: the matrix and RD of each model of its pieces on part questions
    and, apart, on the object questions of the same pieces (their full evaluations under
    ``parts/<kind>/``, the part matrices' heatmaps under ``parts/heatmaps/``); None before a piece
    of it is committed."""
    if not pcells or cfg.part_factor is None:
        return None
    f = cfg.part_factor
    trains, tests = factor_layout(f)
    kinds = question_kinds()
    out: dict[str, Any] = {"factor": f, "train_variants": trains, "test_variants": tests, "kinds": {}}
    for kind in ("part", "object"):
        fc = {}
        for key, runs in factor_cells(pcells, f, cfg).items():
            unknown = {p.family for run in runs for p in run if p.family not in kinds}
            if unknown:
                raise ValueError(f"{results}: predictions of {key.model} (train {key.train}, test {key.test}) "
                                 f"name question families with no template: {sorted(unknown, key=str)[:3]}")
            kept = [[p for p in run if kinds[p.family] == kind] for run in runs]
            if any(kept):
                fc[key] = kept
        if not fc:
            continue
        rep = evaluate(fc, allow_partial=False, factors={f: (trains, tests)})
        files[f"parts/{kind}/report.json"] = (json.dumps(rep, indent=1) + "\n").encode()
        files[f"parts/{kind}/report.md"] = (to_markdown(rep) + "\n").encode()
        models = {}
        for model, m in rep["factors"][f]["models"].items():
            n = sum(len(r) for (k, runs) in fc.items() if k.model == model and k.train == k.test for r in runs)
            models[model] = {"matrix": m["matrix"], "rd": m["rd"]["value"], "rd_note": m["rd"]["reason"],
                             "questions_in_domain": n}
            if plots and kind == "part":
                files[f"parts/heatmaps/{model}.png"] = _heatmap(
                    m["matrix"], [variant_label(f, t) for t in trains], [variant_label(f, v) for v in tests],
                    f"{model}: {f}, part questions (accuracy, %)")
        out["kinds"][kind] = models
    return out


def _perception_section(done: Sequence[tuple[Path, Mapping[str, Any]]]) -> dict[str, Any]:
    """The committed ``perception.json`` of every finished piece (``done``: :func:`done_pieces`),
    by scene parser: ``<variant>`` (the object parser trained on it, seed 0), ``<variant>-seed<S>``,
    ``<variant>-parts`` (the extension's), each -> test variant ->
    :func:`nsvqa.evaluation.perception.perception`'s JSON. Pieces that share a scene parser
    (``rd-`` / ``rd+`` use ``mid``'s) give it once."""
    out: dict[str, Any] = {}
    for folder, done_rec in done:
        if not (folder / "perception.json").is_file():
            continue
        rec = read_json((folder / "perception.json"), allow_nan=True)
        piece = done_rec["piece"]
        name = rec["scene_parser_of"] + ("-parts" if piece["group"] == PART_GROUP else "") + (
            f"-seed{piece['seed']}" if int(piece["seed"]) else "")
        for t, m in rec["tests"].items():
            out.setdefault(name, {}).setdefault(t, m)
    return out


def _concept_split():
    return ConceptSplit.from_catalogue()


def _models_in_order(report: Mapping[str, Any]) -> list[str]:
    order = [r["model"] for r in report["in_domain"]]
    rest = sorted({m for f in report["factors"].values() for m in f["models"]} - set(order))
    return order + rest


def _section(title: str, intro: str, body: Sequence[str]) -> list[str]:
    """The Markdown lines of a section: ``## title``, the paragraph ``intro``, the lines of ``body``,
    a blank line after the title, the paragraph and the body."""
    return [f"## {title}", "", intro, "", *body, ""]


def seeds_table(report: Mapping[str, Any]) -> list[str]:
    """The default variant's in-domain accuracy per training seed, with mean ± sd (Markdown lines)."""
    return _table(["model", "per seed", "mean ± sd"],
                  [[m, ", ".join(f"{k}: {pct(v)}" for k, v in s["per_seed"].items()),
                    f"{pct(s['mean'])} ± {pct(s['std'], 2) if s['std'] is not None else '—'}"]
                   for m, s in report["seeds"].items()])


def study_markdown(report: Mapping[str, Any]) -> str:
    """The study's summary tables as Markdown."""
    lines = ["# The Super-CLEVR robustness study (object questions)", "",
             f"Question set `{report['study']['questions']}`; split sizes {report['study']['sizes']}; "
             f"profile `{report['study']['profile']}`; one seed per cell (seed 0) unless said.", ""]
    for section in (_findings_md, _in_domain_md, _factors_md, _exact_md, _parts_md, _perception_md):
        lines += section(report)
    lines += perception_markdown(report)
    if (report.get("fallback") or {}).get("tests"):
        lines += fallback_markdown(report["fallback"])
    if report.get("systematic"):
        lines += systematic_markdown(report["systematic"])
    lines += _closing_md(report)
    return "\n".join(lines)


def _findings_md(report: Mapping[str, Any]) -> list[str]:
    """The findings, the paper's and ours beside them (none before any is decided)."""
    lines: list[str] = []
    if report.get("findings"):
        lines += _section("Findings: the paper's, ours beside them",
                          "Each status follows from the intervals named (docs/evaluation.md, \"Findings\"). A "
                          "comparison (A above B) is reproduced when every interval of A − B lies on the paper's side "
                          "of 0, reversed when every one lies on the other, not reproduced when some do and none on "
                          "the paper's, inconclusive otherwise. A level (a size the paper gives: an RD above 12%, "
                          "about 20%) is reproduced when every interval lies on the paper's side of its figure (or "
                          "holds it, for \"about\"), not reproduced when some lie wholly on the other side and none "
                          "on the paper's, inconclusive otherwise. \"Judged against\" names the non-modular models a "
                          "finding compares with and how much they use the image. Intervals draw the test images, "
                          "and the training seeds where a cell has several (docs/evaluation.md, \"Intervals\"); the "
                          "paper's figures: `data/paper/super_clevr.json`."
                          + (" " + seeing_sentence(report.get("seeing", ())) if report.get("seeing") else "")
                          + (" " + design_sentence(report) if report.get("design") else ""),
                          findings_markdown(report["findings"], report.get("seeing", ())))
    return lines


def _in_domain_md(report: Mapping[str, Any]) -> list[str]:
    """Fig. 3: in domain on the default variant, with the image margin and dependence."""
    lines: list[str] = []
    if report["in_domain"]:
        lines += ["## In domain (Fig. 3): train and test `" + report["study"]["default_variant"] + "`", "",
                  f"Image margin: in-domain accuracy minus the question-only `{report['question_only']}`'s "
                  "(a model that barely sees the image looks robust to visual shifts for the wrong reason).", ""]
        def dependence(r):
            if r.get("image_dependence") is None:
                return "—"
            ci = r.get("image_dependence_ci95")
            return f"{100 * r['image_dependence']:+.1f}" + ("" if ci is None else
                                                              f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]") + \
                dependence_seeds(r)

        lines += [f"Image dependence: accuracy minus accuracy with every question asked of another test image of "
                  f"its split (the image-shuffle test, a seeded derangement; docs/evaluation.md), points with a "
                  f"paired 95% interval; pooled over every training seed whose cell has the test (seeds, then "
                  f"images; named unless seed 0 alone); — for pieces committed before the test existed.", ""]
        lines += _table(["model", "kind", "accuracy % (95% CI)", "image margin (points)", "image dependence (points)",
                         "guessed", "ECE %", "questions"],
                        [[r["model"], r["kind"], f"{pct(r['accuracy'])} [{pct(r['ci95'][0])}, {pct(r['ci95'][1])}]",
                          "—" if r["image_margin"] is None else f"{100 * r['image_margin']:+.1f}", dependence(r),
                          str(r["guessed"]), pct(r["ece"], 2), str(r["n"])] for r in report["in_domain"]])
        lines += ["", "![in-domain accuracy](in_domain.png)", ""]
        rel = [f"[{r['model']}]({r['reliability']})" for r in report["in_domain"] if r.get("reliability")]
        if rel:
            lines += ["Reliability diagrams in domain (accuracy per confidence bin): " + ", ".join(rel) + ".", ""]
    return lines


def _factors_md(report: Mapping[str, Any]) -> list[str]:
    """Table 2 (the RDs, the RD differences the findings turn on) and Table 1 (the matrices)."""
    lines: list[str] = []
    if report["factors"]:
        models = _models_in_order(report)
        seeded = any(m.get("seeds") for fac in report["factors"].values() for m in fac["models"].values())
        lines += ["## Table 2: Relative Degrade (%)", "",
                  "Lower is more robust; — where a cell is missing. In brackets the 95% bootstrap interval over "
                  "the test questions (one draw per replicate for every model; test variants that ask the same "
                  "questions are drawn together, so a question counts on each of them; " +
                  ("it draws the training seeds too, then the images, where a model ran several on every "
                   "training variant of the factor: its RD and matrix are then over the seeds Table 1 names)."
                   if seeded else "it does not cover training seeds)."), ""]
        fs = list(report["factors"])
        margin = _margins(report)
        lines += ["The last column is each model's image margin in domain (its accuracy on "
                  f"`{report['study']['default_variant']}` minus the question-only `{report['question_only']}`'s, "
                  "points): a small RD at a small margin is a model that does not use the image.", ""]
        lines += _table(["model", *fs, "image margin"],
                        [[m, *(_rd_cell(report["factors"][f]["models"].get(m, {})) for f in fs), margin.get(m, "—")]
                         for m in models])
        diff_rows = [[f, f"{c['a']} − {c['b']}", f"{100 * c['diff']:+.2f}",
                      "—" if c["ci95"] is None else f"[{100 * c['ci95'][0]:+.2f}, {100 * c['ci95'][1]:+.2f}]"]
                     for f, fac in report["factors"].items() for c in fac.get("rd_comparisons", [])]
        if diff_rows:
            lines += ["", "RD differences the findings turn on (points; paired: the same replicates for both "
                      "models):", ""]
            lines += _table(["factor", "A − B", "RD difference", "95% CI"], diff_rows)
        lines += ["", "## Table 1: accuracy (%), rows = training variant, columns = test variant", ""]
        for f, fac in report["factors"].items():
            lines += [f"### {f}", ""]
            for m in models:
                if m not in fac["models"]:
                    continue
                over = fac["models"][m].get("seeds")
                lines += [f"`{m}` (RD {_rd_cell(fac['models'][m])}; [heatmap]({f}/heatmaps/{m}.png)"
                          + (f"; mean of seeds {', '.join(map(str, over))}" if over else "") + ")", ""]
                lines += _table(["train \\ test", *fac["test_variants"]],
                                [[t, *(pct(x) for x in row)] for t, row in zip(fac["train_variants"],
                                                                                 fac["models"][m]["matrix"])])
                lines.append("")
            lines += [f"Full evaluation (per question type, calibration, paired tests): [{f}/report.md]({f}/report.md)", ""]
    return lines


def _exact_md(report: Mapping[str, Any]) -> list[str]:
    """P-NSVQA at the paper's threshold beside exact inference, per factor."""
    lines: list[str] = []
    pairs = [(a, b) for a, b in (("pnsvqa", "pnsvqa-exact"), ("pnsvqa+gtprog", "pnsvqa-exact+gtprog"))]
    exact_rows = []
    for f, fac in report["factors"].items():
        for a, b in pairs:
            ma, mb = fac["models"].get(a), fac["models"].get(b)
            if ma is None or mb is None or not ma.get("cells"):
                continue
            exact_rows.append([f, f"{a} / {b}", str(ma["cells"]),
                               f"{pct(ma['accuracy_mean'])} / {pct(mb['accuracy_mean'])}",
                               f"{pct(ma['rd'], 2)} / {pct(mb['rd'], 2)}",
                               f"{pct(ma['ece_mean'], 2)} / {pct(mb['ece_mean'], 2)}"])
    if exact_rows:
        lines += _section("Exact inference beside the 0.7 threshold",
                          "P-NSVQA at the paper's threshold / with exact inference, per factor: mean accuracy and "
                          "mean ECE over the matrix cells that exist, and RD.",
                          _table(["factor", "models", "cells", "mean accuracy %", "RD %", "mean ECE %"], exact_rows))
    return lines


def _parts_md(report: Mapping[str, Any]) -> list[str]:
    """The part-question extension's RDs and matrices, where it ran."""
    lines: list[str] = []
    parts = report.get("parts")
    if parts and parts["kinds"].get("part"):
        f = parts["factor"]
        lines += [f"## Part questions (extension): the {f} factor", "",
                  "Models trained on object and part questions (a part-aware scene parser, a question parser "
                  "trained on both kinds); scored on part questions and, apart, on the object questions of the "
                  f"same runs. Table 2's {f} RD (object questions, object-only parsers) beside them.", ""]
        obj = parts["kinds"].get("object", {})
        table2 = report["factors"].get(f, {}).get("models", {})
        lines += _table(["model", "RD part questions %", "RD object questions, same runs %", "Table 2 RD %",
                         "part questions in domain"],
                        [[m, pct(v["rd"], 2), pct(obj.get(m, {}).get("rd"), 2), pct(table2.get(m, {}).get("rd"), 2),
                          str(v["questions_in_domain"])] for m, v in parts["kinds"]["part"].items()])
        lines.append("")
        for m, v in parts["kinds"]["part"].items():
            lines += [f"`{m}`, part questions ([heatmap](parts/heatmaps/{m}.png))", ""]
            lines += _table(["train \\ test", *parts["test_variants"]],
                            [[t, *(pct(x) for x in row)] for t, row in zip(parts["train_variants"], v["matrix"])])
            lines.append("")
        lines += ["Full evaluations: [part questions](parts/part/report.md), "
                  "[object questions](parts/object/report.md)", ""]
    return lines


def _perception_md(report: Mapping[str, Any]) -> list[str]:
    """Each scene parser's perception on each test variant, and its recall by shape category."""
    lines: list[str] = []
    if report.get("perception"):
        lines += ["## Perception: each scene parser on each test variant", "",
                  "Test split, every ground-truth object: recall (matched one-to-one at mask IoU ≥ 0.5 among "
                  "detections parsed at score ≥ 0.05), argmax attribute accuracy of matched objects, and "
                  f"the object count of the argmax scene (existence ≥ {report['perception_min_exist']}): images "
                  "counted exactly, mean signed error. Rows: the variant the scene parser was trained on.", ""]
        rows = []
        for parser, tests in report["perception"].items():
            for t, m in tests.items():
                a = m["all"]
                rows.append([parser, t, pct(a["recall"]), *(pct(a[f"object.{k}"]) for k in
                                                            ("shape", "color", "material", "size")),
                             pct(a["count_exact"]), f"{a['count_error']:+.2f}"])
        lines += _table(["scene parser", "test", "recall %", "shape %", "color %", "material %", "size %",
                         "count exact %", "count error"], rows)
        lines.append("")
        by_cat = [(parser, t, m["all"]["recall_by_category"]) for parser, tests in report["perception"].items()
                  for t, m in tests.items() if m["all"].get("recall_by_category")]
        if by_cat:
            cats = sorted({c for _, _, r in by_cat for c in r})
            lines += ["Recall % by shape category (mask IoU ≥ 0.5; objects in brackets). Thin shapes fill little "
                      "of their masks: a bicycle found with a loose mask is not matched (docs/evaluation.md, "
                      "\"Perception beside the answers\").", ""]
            lines += _table(["scene parser", "test", *cats],
                            [[parser, t, *("—" if c not in r else f"{pct(r[c]['recall'])} ({r[c]['objects']})"
                                           for c in cats)] for parser, t, r in by_cat])
            lines.append("")
    return lines


def _closing_md(report: Mapping[str, Any]) -> list[str]:
    """The generalization paper's points, the default variant's seeds, the findings more seeds would
    decide, the budget and the pieces."""
    lines: list[str] = []
    if report.get("generalization"):
        lines += _section("The systematic splits against the in-domain generalization paper",
                          "That paper (Schott et al., ICLR 2022) regresses generative factors (R²) rather than "
                          "answering questions; its pattern, point by point, against ours (each verdict by the rule "
                          "in `orchestration/study/report/systematic.py`: 95% intervals, \"cannot say\" with why).",
                          generalization_markdown(report["generalization"]))
    if report["seeds"]:
        lines += ["## Seeds on the default variant", "", *seeds_table(report), ""]
    if report.get("more_seeds"):
        ms = report["more_seeds"]
        lines += _section("Findings more training seeds would decide",
                          f"Listed by one rule (`orchestration/study/report/seeds.py`): a finding that rests on one "
                          f"training seed with a deciding interval whose bound lies within "
                          f"{100 * ms['near_zero']:g} points of 0, or that holds at 95% but not after the "
                          f"correction. Each interval's pieces run again at seeds "
                          f"{', '.join(map(str, ms['seeds']))}, seed by seed (a factor pools a seed only once each of its "
                          f"training variants has it), within a seed the pieces most intervals rest on first.",
                          more_seeds_markdown(ms))
    if report.get("budget"):
        lines += ["## Budget", "", "Hours of 2-core compute the committed pieces took (every attempt), and the "
                  "redundancy scale check (its runs and its `other_seconds`), by part of the study, against the "
                  "cap; each pending piece projected from the committed ones' steps "
                  "(`scripts/run_study.py --budget`; docs/study.md).", "", budget_markdown(report["budget"])]
    lines += ["## Pieces", "",
              "Each piece is rerun (at its commit, resuming what its run folder holds) with "
              "`python scripts/run_study.py --only <piece>`; every table above is rebuilt from the committed "
              "predictions with `python scripts/run_study.py --report` (`--check` compares). Minutes count "
              "every attempt of the piece, stopped ones included (`piece.json`, `seconds.attempts`).", ""]
    lines += _table(["piece", "minutes", "commit", "machine"],
                    [[p["name"], f"{p['minutes']:.1f}", (p["commit"] or "—")[:10],
                      machine_label(p["machine"] or {})]
                     for p in report["pieces"]])
    return lines


def _margins(report: Mapping[str, Any]) -> dict[str, str]:
    """Model -> its in-domain image margin as Table 2 prints it (models without one left out)."""
    return {r["model"]: f"{100 * r['image_margin']:+.1f}" for r in report["in_domain"]
            if r["image_margin"] is not None}


def study_latex(report: Mapping[str, Any]) -> str:
    """Table 2 (RD) and the in-domain accuracies as LaTeX tabulars."""
    fs = list(report["factors"])
    margin = _margins(report)
    out = ["% Relative Degrade (%), the study's Table 2, with its 95% bootstrap interval over the test questions;",
           "% last column: the image margin in domain (points over the question-only model)",
           "\\begin{tabular}{l" + "r" * (len(fs) + 1) + "}", "\\toprule",
           "model & " + " & ".join(tex_escape(f) for f in fs) + " & image margin \\\\", "\\midrule"]
    for m in _models_in_order(report):
        out.append(tex_escape(m) + " & " + " & ".join(
            _rd_cell(report["factors"][f]["models"].get(m, {}), latex=True) for f in fs)
            + f" & {margin.get(m, '--')} \\\\")
    out += ["\\bottomrule", "\\end{tabular}", "", "% in-domain accuracy (%) and image margin (points)",
            "\\begin{tabular}{lrr}", "\\toprule", "model & accuracy & image margin \\\\", "\\midrule"]
    for r in report["in_domain"]:
        out.append(f"{tex_escape(r['model'])} & {pct(r['accuracy'])} & "
                   + ("--" if r["image_margin"] is None else f"{100 * r['image_margin']:+.1f}") + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(out)


__all__ = ["TEXT_SUFFIXES", "family", "question_only_reference", "collect", "dependence_seeds", "done_pieces",
           "question_kinds", "factor_cells", "seeded_factor_cells", "build_study_report", "seeds_table", "study_markdown",
           "study_latex", "design_record", "design_sentence"]
