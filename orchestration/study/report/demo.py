"""The demo's table: each model of a run on the fresh test splits beside the study's committed
predictions on the same questions.

``make demo`` generates the first test images of the study's variants (the generator's images and
questions depend on seed, split and index only), so every demo question is one the study asked. For
each model, training variant and test variant, :func:`demo_comparison` reads the run's predictions
(the files its ``report.json`` records) and the study's committed seed-0 predictions of the same
cell restricted to the same questions (matched by ``question_hash``), and gives both accuracies, the
study's 95% Wilson interval on those questions, the image margin of each (accuracy minus the most
accurate question-only model's, on the training variant) and the factor's RD over the training
variant's row with the run's 95% interval beside the study's value on the same questions.
:func:`demo_table` prints it; a cell outside the study's interval is marked and counted.
"""
from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any, Mapping

from PIL import Image

from executors.io import read_json
from executors import Program
from nsvqa.artifacts.predictions import Prediction, parse_predictions_name, read_predictions
from nsvqa.evaluation.accuracies import accuracy, wilson_interval
from nsvqa.evaluation.degrade import factor_relative_degrade
from nsvqa.evaluation.report import md_table, pyplot
from nsvqa.models import ModelSpec
from orchestration.models import get as get_model
from orchestration.study.settings.pieces import PART_GROUP
from orchestration.study.report.publish import splice


def _committed(results: Path, train: str, seed: int = 0) -> dict[tuple[str, str], Path]:
    """(model, test) -> the committed predictions file of the study's pieces trained on ``train``
    with ``seed`` (the part-question pieces left out: their questions are others)."""
    out: dict[tuple[str, str], Path] = {}
    for pj in sorted(results.glob("pieces/*/piece.json")):
        rec = read_json(pj, allow_nan=True)["piece"]
        if rec["variant"] != train or int(rec["seed"]) != seed or rec["group"] == PART_GROUP:
            continue
        for f in sorted((pj.parent / "predictions").glob("*.jsonl.gz")):
            key = parse_predictions_name(f)
            if key.train == train:
                out[(key.model, key.test)] = f
    return out


def _run_predictions(report: Mapping[str, Any], model: str, train: str, test: str) -> list[Prediction]:
    """The predictions of a report's cell, read from the one file it records."""
    for c in report["cells"]:
        if (c["model"], c["train"], c["test"]) == (model, train, test):
            if len(c["files"]) != 1:
                raise ValueError(f"cell {model} trained on {train}, tested on {test}: expected the predictions "
                                 f"of one run, the report records {len(c['files'])} files")
            return read_predictions(c["files"][0])
    raise KeyError(f"the report has no cell {model} trained on {train}, tested on {test}")


def _run_folder(report: Mapping[str, Any], train: str, test: str) -> Path:
    """The run folder (``RUN/predictions/<file>``'s ``RUN``) of the report's cells trained on ``train``."""
    cell = next(c for c in report["cells"] if c["train"] == train and c["test"] == test)
    return Path(cell["files"][0]).parent.parent


def _score(preds: list[Prediction]) -> tuple[float, int, int]:
    a = accuracy(preds)
    return a.accuracy, a.n_correct, a.n


def demo_comparison(report: Mapping[str, Any], results: str | os.PathLike, *, factor: str = "visual",
                    train: str | None = None, default_train: str = "mid") -> dict[str, Any]:
    """Each model of ``report`` (the JSON of :func:`nsvqa.evaluation.evaluate` on a run trained on
    ``train``) beside the study's committed predictions in ``results`` on the same questions.

    Returns:
        ``{"factor", "train", "tests", "reference", "rows": [{"model", "family", "sees", "cells":
        {test: {"ours", "study", "study_ci95", "n", "inside"}}, "margin": {"ours", "study"},
        "rd": {"ours", "ours_ci95", "study"}}], "outside": [(model, test)], "missing": [model]}``;
        accuracies and RDs as fractions, ``study`` None where the study has no such cell.

    Raises:
        KeyError: ``factor`` is not in the report, or ``train`` is not one of its training variants.
    """
    results = Path(results)
    fac = report["factors"][factor]
    train = train or (default_train if default_train in fac["train_variants"] else fac["train_variants"][0])
    tests = list(fac["test_variants"])
    committed = _committed(results, train)
    ours_acc: dict[str, dict[str, float]] = {}
    study_acc: dict[str, dict[str, float | None]] = {}
    rows = []
    outside, missing = [], []
    for model in fac["models"]:
        cells = {}
        for test in tests:
            preds = _run_predictions(report, model, train, test)
            acc, _, n = _score(preds)
            ours_acc.setdefault(model, {})[test] = acc
            cell = {"ours": acc, "n": n, "study": None, "study_ci95": None, "inside": None}
            src = committed.get((model, test))
            if src is not None:
                hashes = {p.question_hash for p in preds}
                same = [p for p in read_predictions(src) if p.question_hash in hashes]
                if len(same) == n:
                    s_acc, k, m = _score(same)
                    lo, hi = wilson_interval(k, m)
                    cell |= {"study": s_acc, "study_ci95": [lo, hi], "inside": lo <= acc <= hi}
                    if not cell["inside"]:
                        outside.append((model, test))
            study_acc.setdefault(model, {})[test] = cell["study"]
            cells[test] = cell
        if all(c["study"] is None for c in cells.values()):
            missing.append(model)
        spec = get_model(ModelSpec.from_label(model).name)
        rows.append({"model": model, "family": spec.family, "sees": spec.family != "question-only",
                     "cells": cells})
    reference = max((r["model"] for r in rows if not r["sees"]), key=lambda m: ours_acc[m][train], default=None)
    for r in rows:
        m = r["model"]
        ref_s = study_acc.get(reference, {}).get(train) if reference else None
        r["margin"] = {"ours": None if reference is None else ours_acc[m][train] - ours_acc[reference][train],
                       "study": None if ref_s is None or study_acc[m][train] is None
                       else study_acc[m][train] - ref_s}
        rd = fac["models"][m]["rd"]
        s_cells = {(train, t): v for t, v in study_acc[m].items()}
        s_rd = factor_relative_degrade(factor, s_cells, [train], tests, allow_partial=True).value \
            if all(v is not None for v in s_cells.values()) else None
        r["rd"] = {"ours": rd["value"], "ours_ci95": rd.get("ci95"), "study": s_rd}
    return {"factor": factor, "train": train, "tests": tests, "reference": reference, "rows": rows,
            "outside": outside, "missing": missing}


def _pct(x: float | None, digits: int = 1, sign: bool = False) -> str:
    return "—" if x is None else f"{100 * x:{'+' if sign else ''}.{digits}f}"


def demo_table(comparison: Mapping[str, Any]) -> str:
    """:func:`demo_comparison` as a plain-text table: per model what it reads, each test variant's
    accuracy with the study's on the same questions in brackets (``*``: outside the study's 95%
    interval), the image margin and the RD, then a line saying how many cells lie outside."""
    c = comparison
    head = ["model", "reads"] + list(c["tests"]) + ["image margin", f"RD {c['factor']} [95%]"]
    rows = []
    for r in c["rows"]:
        cells = [f"{_pct(v['ours'])}{'*' if v['inside'] is False else ' '}({_pct(v['study'])})"
                 for v in (r["cells"][t] for t in c["tests"])]
        ci = r["rd"]["ours_ci95"]
        rd = f"{_pct(r['rd']['ours'])} [{_pct(ci[0])}, {_pct(ci[1])}] ({_pct(r['rd']['study'])})" if ci else \
            f"{_pct(r['rd']['ours'])} ({_pct(r['rd']['study'])})"
        rows.append([r["model"], "image" if r["sees"] else "question only"] + cells +
                    [f"{_pct(r['margin']['ours'], sign=True)} ({_pct(r['margin']['study'], sign=True)})", rd])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda row: "  ".join(f"{x:<{w}}" if i < 2 else f"{x:>{w}}" for i, (x, w) in enumerate(zip(row, widths)))
    n = {v["n"] for r in c["rows"] for v in r["cells"].values()}
    lines = [f"trained on {c['train']} (the shipped checkpoints), accuracy % on each test variant "
             f"({'/'.join(str(x) for x in sorted(n))} questions); in brackets the study's committed predictions on "
             f"the same questions; image margin: accuracy minus {c['reference'] or 'a question-only model'}'s on "
             f"{c['train']}; RD over the {c['train']} row",
             fmt(head)] + [fmt(r) for r in rows]
    total = sum(v["inside"] is not None for r in c["rows"] for v in r["cells"].values())
    out = c["outside"]
    lines.append(f"{total - len(out)} of {total} cells inside the study's 95% interval on the same questions"
                 + (f"; outside (*): {', '.join(f'{m} on {t}' for m, t in out)}" if out else ""))
    if c["missing"]:
        lines.append(f"not in the study's committed predictions: {', '.join(c['missing'])}")
    return "\n".join(lines)




def example_question(report: Mapping[str, Any], train: str, test: str) -> int:
    """The index of the first ``test`` question on which the report's models trained on ``train``
    do not all answer alike (the first question when they always agree): the picture's example."""
    return _first_disagreement(_answers(report, train, test))


def _answers(report: Mapping[str, Any], train: str, test: str) -> dict[str, list[str | None]]:
    """Each model's answers to the ``test`` questions, models trained on ``train``, in model order."""
    models = sorted({c["model"] for c in report["cells"] if c["train"] == train and c["test"] == test})
    return {m: [p.prediction for p in _run_predictions(report, m, train, test)] for m in models}


def _first_disagreement(answers: Mapping[str, list[str | None]]) -> int:
    return next((i for i, row in enumerate(zip(*answers.values())) if len(set(row)) > 1), 0)


def demo_figure(path: str | os.PathLike, report: Mapping[str, Any], comparison: Mapping[str, Any], *,
                test: str | None = None, question: int | None = None) -> dict[str, Any]:
    """The demo's picture, written to ``path`` (PNG): a ``test`` image (default: the training
    variant) with one of its questions (default :func:`example_question`), the program the run's
    question parser gave it and every model's answer; beside it each model's accuracy on every test
    variant, the modular models (solid) against the others. The run folder, its data and parsed
    programs are the ones the report's predictions files name. Returns what it shows."""
    c = comparison
    test = test or c["train"]
    given = _answers(report, c["train"], test)  # each predictions file read once
    q = _first_disagreement(given) if question is None else question
    run = _run_folder(report, c["train"], test)
    data = Path(read_json((run / "config.json"), allow_nan=True)["config"]["data"])  # as the run was given it
    if not (data / test).is_dir():
        raise FileNotFoundError(f"{run / 'config.json'}, field 'data': {data / test} is not a folder "
                                f"(run the command from where the run was made)")
    questions = read_json((data / test / "questions" / "test_questions.json"), allow_nan=True)["questions"]
    item = questions[q]
    parsed = read_json((run / "parsed" / test / "programs.json"), allow_nan=True)["programs"][q]
    answers = {r["model"]: given[r["model"]][q] for r in c["rows"]}
    plt = pyplot()
    fig = plt.figure(figsize=(15, 5))
    ax_img = fig.add_axes((0.0, 0.08, 0.3, 0.84))
    ax_txt = fig.add_axes((0.31, 0.0, 0.25, 1.0))
    ax_acc = fig.add_axes((0.6, 0.12, 0.25, 0.78))
    ax_img.imshow(Image.open(data / test / "images" / "test" / item["image_filename"]))
    ax_img.set_axis_off()
    ax_img.set_title(f"{test} test image {item['image_index']}", fontsize=10)
    tokens = Program.from_json(parsed["program"]).to_postfix() if parsed.get("valid") else ["(invalid program)"]
    lines = textwrap.wrap(f"Q: {item['question']}", 52) + ["", "parsed program (postfix):"]
    lines += textwrap.wrap(" ".join(tokens), 52, initial_indent="  ", subsequent_indent="  ")
    lines += ["", f"answer: {item['answer']}", ""]
    lines += [f"{'right' if str(a) == str(item['answer']).lower() else 'wrong'}  {m}: {a}" for m, a in answers.items()]
    ax_txt.text(0, 0.95, "\n".join(lines), va="top", ha="left", family="monospace", fontsize=8.5)
    ax_txt.set_axis_off()
    x = range(len(c["tests"]))
    for r in c["rows"]:
        ys = [100 * r["cells"][t]["ours"] for t in c["tests"]]
        style = "-" if r["family"] == "modular" else ("--" if r["sees"] else ":")
        ax_acc.plot(x, ys, style, marker="o", label=f"{r['model']} ({r['family']})")
    ax_acc.set_xticks(list(x), c["tests"])
    ax_acc.set_ylabel(f"accuracy % (trained on {c['train']})")
    ax_acc.set_title("modular (solid) against non-modular (dashed; dotted: question only)", fontsize=9)
    ax_acc.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax_acc.grid(alpha=0.3)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return {"test": test, "question_index": item["question_index"], "question": item["question"],
            "answer": item["answer"], "program": tokens, "answers": answers}


#: The lines around the demo's table in the README (written by :func:`write_demo_block`).
DEMO_BLOCK = ("<!-- generated:demo:begin -->", "<!-- generated:demo:end -->")
#: The committed picture of ``make demo-picture`` (its record beside it, ``.json``).
DEMO_PICTURE = Path("results/demo/demo.png")


def demo_markdown(record: Mapping[str, Any]) -> list[str]:
    """The demo's table in Markdown from its record (``{"comparison": ..., "example": ...}``, the
    JSON ``run_study.py --compare REPORT --picture PNG`` writes beside the picture)."""
    c = record["comparison"]
    head = ["model", "kind"] + [f"{t} %" for t in c["tests"]] + ["image margin", f"RD {c['factor']} % [95%]"]
    rows = []
    for r in c["rows"]:
        cells = [f"{_pct(v['ours'])} ({_pct(v['study'])}){' *' if v['inside'] is False else ''}"
                 for v in (r["cells"][t] for t in c["tests"])]
        ci = r["rd"]["ours_ci95"]
        rd = _pct(r["rd"]["ours"]) + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "") + f" ({_pct(r['rd']['study'])})"
        rows.append([r["model"], r["family"]] + cells +
                     [f"{_pct(r['margin']['ours'], sign=True)} ({_pct(r['margin']['study'], sign=True)})", rd])
    n = sorted({v["n"] for r in c["rows"] for v in r["cells"].values()})
    total = sum(v["inside"] is not None for r in c["rows"] for v in r["cells"].values())
    return [f"`make demo`'s table (written by `make demo-picture` from `{record['source']}`): every model trained on "
            f"`{c['train']}` (the checkpoints in `pretrained/`), accuracy on {'/'.join(map(str, n))} fresh object "
            f"questions per test variant; in brackets the study's committed predictions on the same questions "
            f"(`*`: outside their 95% interval; {total - len(c['outside'])} of {total} cells inside). Image margin: "
            f"accuracy minus `{c['reference']}`'s on `{c['train']}`; RD over the `{c['train']}` row.", ""] + \
        md_table(head, rows)


def demo_block_reproduces(readme: str | os.PathLike, picture: str | os.PathLike) -> bool:
    """Whether ``readme``'s demo block is what the record beside ``picture`` writes (True when the
    README has no demo block; False when it has one and the record is missing)."""
    text = Path(readme).read_text()
    if DEMO_BLOCK[0] not in text:
        return True
    record = Path(picture).with_suffix(".json")
    if not record.is_file():
        return False
    return write_demo_block(text, read_json(record, allow_nan=True), str(readme)) == text


def write_demo_block(text: str, record: Mapping[str, Any], source: str) -> str:
    """``text`` (a README) with its demo block rewritten from ``record``."""
    return splice(text, *DEMO_BLOCK, "\n".join(demo_markdown(record)), source)


__all__ = ["DEMO_BLOCK", "DEMO_PICTURE", "demo_block_reproduces", "demo_comparison", "demo_table", "example_question", "demo_figure", "demo_markdown",
           "write_demo_block"]
