"""Render an evaluation (the JSON of :func:`nsvqa.evaluation.evaluate`) as Markdown, LaTeX and PNGs.

Per factor the report shows the train x test accuracy matrix of every model (rows = training
variant, columns = test variant, as the Super-CLEVR paper's Table 1) and the models' Relative
Degrade (its Table 2 gathers them, one column per factor). Missing cells are shown as missing:
"—" in Markdown, "--" in LaTeX, null in JSON, hatched grey in heatmaps; an RD that cannot be computed
is shown with its reason. matplotlib (Agg backend) is imported only when PNGs are drawn.
"""
from __future__ import annotations

import math
import os
from io import BytesIO
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from nsvqa.fileio import write_atomic, write_json_atomic
from nsvqa.artifacts.predictions import QUESTION_TYPE_NAMES, find_prediction_files, read_predictions
from nsvqa.evaluation.accuracies import ConceptSplit
from nsvqa.evaluation.evaluator import evaluate
from nsvqa.evaluation.inputs import check_prediction_files
from nsvqa.evaluation.resampling import N_BOOT
from nsvqa.generation.variants import factors as catalogue

def has_rd(factor: str) -> bool:
    """Whether the catalogue defines an RD for ``factor`` (every factor it does not list has one)."""
    fac = catalogue().get(factor)
    return fac is None or fac.rd is not None


def factor_title(factor: str) -> str:
    """How reports name a factor: its catalogue ``title`` (the factor's key when it has none)."""
    fac = catalogue().get(factor)
    return fac.title if fac is not None else factor


MISSING_MD = "—"
MISSING_TEX = "--"


def variant_label(factor: str, variant: str) -> str:
    """Column/row label of a variant in ``factor``'s tables (the catalogue's ``labels``: ``mid`` is
    ``rd (mid)``, the rd level of question redundancy)."""
    fac = catalogue().get(factor)
    return fac.labels.get(variant, variant) if fac is not None else variant


def pct(x: float | None, digits: int = 1, missing: str = MISSING_MD) -> str:
    """``0.1234`` -> ``"12.3"`` (percent); None -> ``missing``."""
    return missing if x is None else f"{100 * x:.{digits}f}"


def _cell(x: float | None, std: float | None, missing: str, pm: str) -> str:
    if x is None:
        return missing
    return pct(x) + (f" {pm} {100 * std:.1f}" if std is not None else "")


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table as lines: ``header`` (column titles), its rule, one line per row of
    ``rows`` (cells already formatted, as many as ``header``; ``|`` inside a cell is the caller's
    to escape)."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def any_partial_rd(report: Mapping[str, Any]) -> bool:
    """Whether an RD of ``report`` is averaged over only the inputs that exist (``partial``): the
    reports' footnote on ``*`` is printed then only."""
    return any(m["rd"].get("partial") for f, fac in report["factors"].items() if has_rd(f)
               for m in fac["models"].values())


def measured_part(matrix: Sequence[Sequence[float | None]], rows: Sequence[str], cols: Sequence[str]
                  ) -> tuple[list[list[float | None]], list[str], list[str]] | None:
    """The rows and columns of ``matrix`` that hold a measured cell, as (matrix, rows, cols); None
    when fewer than two cells are measured (a heatmap is drawn of that part only, and not at all
    for one number: the table holds it)."""
    keep_r = [i for i, row in enumerate(matrix) if any(x is not None for x in row)]
    keep_c = [j for j in range(len(cols)) if any(matrix[i][j] is not None for i in keep_r)]
    if sum(matrix[i][j] is not None for i in keep_r for j in keep_c) < 2:
        return None
    return ([[matrix[i][j] for j in keep_c] for i in keep_r], [rows[i] for i in keep_r], [cols[j] for j in keep_c])


def _rd_text(rd: Mapping[str, Any], missing: str = MISSING_MD) -> str:
    return missing if rd["value"] is None else pct(rd["value"], 2) + ("*" if rd.get("partial") else "")


# ---------------------------------------------------------------------------- markdown
def _rd_columns(factors: Mapping[str, Any]) -> list[str]:
    """Table 2's columns: the factors with a Relative Degrade that hold a model of the report."""
    return [f for f, fac in factors.items() if has_rd(f) and fac["models"]]


def to_markdown(report: Mapping[str, Any], images: Mapping[str, str] | None = None) -> str:
    """The report as Markdown; ``images`` maps an image key (see :func:`write_report`) to its path."""
    images = images or {}
    metric = report["metric"]
    lines = ["# Relative Degrade report", "",
             f"Matrix entries: {metric} in %" + (" (a random guess after a failed program counts when it "
                                                 "hits)" if metric == "accuracy" else
                                                 " (guesses count as wrong)") +
             "; mean ± sample std when several runs exist. RD in %, lower = more robust"
             " (docs/evaluation.md, Relative Degrade). " + MISSING_MD + " = missing (not measured).", ""]
    factors = report["factors"]
    rd_factors = _rd_columns(factors)
    models = sorted({m for f in factors.values() for m in f["models"]})
    lines += ["## Relative Degrade per factor (Table 2)", ""]
    if rd_factors:  # a column holds a model
        rows = [[_md_escape(m)] + [_rd_text(factors[f]["models"][m]["rd"]) if m in factors[f]["models"]
                                   else MISSING_MD for f in rd_factors] for m in models]
        lines += md_table(["model"] + [factor_title(f) for f in rd_factors], rows)
        if any_partial_rd(report):
            lines += ["", "\\* averaged over the inputs that exist (--allow-partial-rd)."]
    else:
        lines.append("No predictions of the variants of a factor with a Relative Degrade.")
    absent = [factor_title(f) for f, fac in factors.items() if not fac["models"]]
    if absent:
        lines += ["", f"No predictions for: {', '.join(absent)}."]
    lines.append("")

    for factor, fac in factors.items():
        if not fac["models"]:
            continue
        name = factor_title(factor)
        lines += [f"## {name[0].upper() + name[1:]}", ""]
        tests = fac["test_variants"]
        lines += ["### Accuracy (%), train × test (Table 1)", ""]
        rows = []
        for model, m in fac["models"].items():
            for t, row, srow in zip(fac["train_variants"], m["matrix"], m["std"]):
                rows.append([_md_escape(model), variant_label(factor, t)] +
                            [_cell(x, s, MISSING_MD, "±") for x, s in zip(row, srow)])
        lines += md_table(["model", "train \\ test"] + [variant_label(factor, s) for s in tests], rows)
        lines += ["", "### Relative Degrade (%)", ""]
        rows = []
        for model, m in fac["models"].items():
            rd = m["rd"]
            per = ", ".join(f"{variant_label(factor, t)}: {_rd_text(r)}" for t, r in rd.get("per_train", {}).items())
            ci = rd.get("ci95")
            rows.append([_md_escape(model), _rd_text(rd), MISSING_MD if ci is None else f"[{pct(ci[0], 2)}, {pct(ci[1], 2)}]",
                         per or MISSING_MD, _md_escape(rd["reason"] or "")])
        lines += md_table(["model", "RD", "95% CI", "per training variant", "note"], rows)
        if fac.get("rd_comparisons"):
            lines += ["", f"RD differences A − B (points), 95% paired bootstrap interval over the test questions "
                      f"({fac['n_boot']} replicates):", ""]
            lines += md_table(["A", "B", "A − B", "95% CI"],
                              [[_md_escape(c["a"]), _md_escape(c["b"]), f"{100 * c['diff']:+.2f}",
                                MISSING_MD if c["ci95"] is None else
                                f"[{100 * c['ci95'][0]:+.2f}, {100 * c['ci95'][1]:+.2f}]"] for c in fac["rd_comparisons"]])
        sq = fac.get("shared_questions")
        if sq:
            counts = ", ".join(f"{variant_label(factor, t)} {n}" for t, n in sq["per_test"].items())
            lines += ["", f"### On the {sq['n']} questions every test variant asks", "",
                      f"The test variants ask different questions (distinct questions: {counts}); the same "
                      "question intents on the same images, by `question_hash`. Accuracy (%) and RD on those:", ""]
            rows = []
            for model, m in fac["models"].items():
                sh = m["shared"]
                for t, row in zip(fac["train_variants"], sh["matrix"]):
                    rows.append([_md_escape(model), variant_label(factor, t)] + [pct(x) for x in row] +
                                [_rd_text(sh["rd"]) if t == fac["train_variants"][0] else ""])
            lines += md_table(["model", "train \\ test"] + [variant_label(factor, x) for x in tests] + ["RD"], rows)
        for model in fac["models"]:
            key = f"heatmap/{factor}/{model}"
            if key in images:
                lines += ["", f"![{model}, {name}]({images[key]})"]
        lines.append("")

    cells = report["cells"]
    lines += ["## Accuracy and failures per cell", ""]
    rows = [[_md_escape(c["model"]), c["train"], c["test"], str(c["n_runs"]), str(c["overall"]["n"]),
             pct(c["overall"]["accuracy"]), pct(c["overall"]["accuracy_no_guess"]), str(c["overall"]["n_guessed"]),
             str(c["overall"]["n_execution_error"]), str(c["overall"]["n_invalid_program"])] for c in cells]
    lines += md_table(["model", "train", "test", "runs", "questions", "acc.", "acc. without guesses", "guessed",
                       "execution errors", "invalid programs"], rows) + [""]

    qtypes = report["question_types"]
    lines += ["## Accuracy per question type (%)", ""]
    rows = [[_md_escape(c["model"]), c["train"], c["test"]] +
            [pct(c["by_type"][t]["accuracy"]) + f" ({c['by_type'][t]['n']})" if t in c["by_type"] else MISSING_MD
             for t in qtypes] for c in cells]
    lines += md_table(["model", "train", "test"] + [QUESTION_TYPE_NAMES[t] for t in qtypes], rows) + [""]

    ht = [c for c in cells if c["head_tail"] is not None]
    if ht:
        lines += ["## Head vs tail concepts (%)", "",
                  "Tail: the question mentions a tail concept (shape, color, material of the long-tailed "
                  "distribution's rare half); head: every such concept it mentions is frequent.", ""]
        rows = [[_md_escape(c["model"]), c["train"], c["test"]] +
                [pct(c["head_tail"][g]["accuracy"]) + f" ({c['head_tail'][g]['n']})" for g in ("head", "tail")] +
                [str(c["head_tail"]["other"]["n"])] for c in ht]
        lines += md_table(["model", "train", "test", "head (n)", "tail (n)", "neither (n)"], rows) + [""]

    io = [c for c in cells if c["id_ood"] is not None]
    if io:
        lines += ["## Systematic splits: ID vs OOD concepts (%)", ""]
        rows = [[_md_escape(c["model"]), c["train"], c["test"]] +
                [pct(c["id_ood"][g]["accuracy"]) + f" ({c['id_ood'][g]['n']})" for g in ("id", "ood")] for c in io]
        lines += md_table(["model", "train", "test", "ID (n)", "OOD (n)"], rows) + [""]

    comps = report.get("comparisons") or []
    if comps:
        lines += ["## P-NSVQA vs NS-VQA on the same questions", "",
                  "Paired over questions: A − B in points with its 95% bootstrap interval; questions only A / "
                  "only B answers correctly; exact McNemar p-value.", ""]
        rows = [[_md_escape(c["a"]), _md_escape(c["b"]), c["train"], c["test"], str(c["n"]), pct(c["acc_a"]), pct(c["acc_b"]),
                 f"{100 * c['diff']:+.2f} [{100 * c['ci95'][0]:+.2f}, {100 * c['ci95'][1]:+.2f}]",
                 f"{c['a_only']} / {c['b_only']}", f"{c['p_mcnemar']:.2g}"] for c in comps]
        lines += md_table(["A", "B", "train", "test", "n", "A (%)", "B (%)", "A − B (95% CI)", "only A / only B",
                           "p"], rows) + [""]

    cal = [c for c in cells if c["calibration"] is not None]
    if cal:
        lines += ["## Calibration", "", f"Expected calibration error over {report['n_bins']} equal-width "
                  "confidence bins, for the predictions that carry a probability.", ""]
        rows = []
        for c in cal:
            key = f"reliability/{c['model']}/{c['train']}/{c['test']}"
            link = f"[diagram]({images[key]})" if key in images else MISSING_MD
            rows.append([_md_escape(c["model"]), c["train"], c["test"], str(c["calibration"]["n"]),
                         pct(c["calibration"]["coverage"]), pct(c["calibration"]["ece"], 2), link])
        lines += md_table(["model", "train", "test", "n", "coverage (%)", "ECE (%)", "reliability"], rows) + [""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- LaTeX
def tex_escape(s: str) -> str:
    """Escape LaTeX's special characters in ``s``."""
    rep = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
           "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(rep.get(ch, ch) for ch in s)


def to_latex(report: Mapping[str, Any]) -> str:
    """Table 1 (one tabular per factor) and Table 2 (RD per model and factor) as LaTeX
    (needs ``\\usepackage{booktabs}``); missing values are ``--``."""
    factors = report["factors"]
    out = ["% Relative Degrade report (nsvqa.evaluation.report); needs \\usepackage{booktabs}", ""]
    for factor, fac in factors.items():
        if not fac["models"]:
            continue
        tests = fac["test_variants"]
        out += ["\\begin{table}[t]", "\\centering", "\\begin{tabular}{ll" + "r" * len(tests) + "}", "\\toprule",
                "Model & Train & " + " & ".join(tex_escape(variant_label(factor, s)) for s in tests) + " \\\\",
                "\\midrule"]
        for model, m in fac["models"].items():
            for k, (t, row, srow) in enumerate(zip(fac["train_variants"], m["matrix"], m["std"])):
                cells = [_cell(x, s, MISSING_TEX, "$\\pm$") for x, s in zip(row, srow)]
                out.append((tex_escape(model) if k == 0 else "") + " & " + tex_escape(variant_label(factor, t))
                           + " & " + " & ".join(cells) + " \\\\")
            out.append("\\midrule" if model != list(fac["models"])[-1] else "\\bottomrule")
        out += ["\\end{tabular}",
                f"\\caption{{Accuracy (\\%, {tex_escape(report['metric'])}) on {factor_title(factor)}: "
                "rows train, columns test.}", f"\\label{{tab:acc-{factor}}}", "\\end{table}", ""]
    rd_factors = _rd_columns(factors)
    models = sorted({m for f in factors.values() for m in f["models"]})
    if rd_factors:
        out += ["\\begin{table}[t]", "\\centering", "\\begin{tabular}{l" + "r" * len(rd_factors) + "}", "\\toprule",
                "Model & " + " & ".join(tex_escape(factor_title(f)) for f in rd_factors) + " \\\\",
                "\\midrule"]
        for model in models:
            vals = [_rd_text(factors[f]["models"][model]["rd"], MISSING_TEX) if model in factors[f]["models"]
                    else MISSING_TEX for f in rd_factors]
            out.append(tex_escape(model) + " & " + " & ".join(v.replace("*", "$^*$") for v in vals) + " \\\\")
        out += ["\\bottomrule", "\\end{tabular}",
                "\\caption{Relative Degrade (\\%, lower is more robust)."
                + (" $^*$ averaged over the inputs that exist." if any_partial_rd(report) else "") + "}",
                "\\label{tab:rd}", "\\end{table}", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------- PNGs
def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (files, no display): the one place the project's
    figures get it, imported on the first figure drawn."""
    import matplotlib  # heavy: matplotlib, only to draw

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: as above

    return plt


def plot_heatmap(path: str | os.PathLike, matrix: Sequence[Sequence[float | None]], rows: Sequence[str],
                 cols: Sequence[str], title: str) -> None:
    """A train x test accuracy heatmap (percent annotated); missing cells hatched grey."""
    from matplotlib.patches import Rectangle  # heavy: matplotlib, only to draw

    plt = pyplot()
    data = np.array([[np.nan if x is None else 100 * x for x in row] for row in matrix], dtype=float)
    fig, ax = plt.subplots(figsize=(1.1 * len(cols) + 2.2, 0.7 * len(rows) + 1.8))
    im = ax.imshow(np.ma.masked_invalid(data), cmap="viridis", vmin=0, vmax=100)
    for i in range(len(rows)):
        for j in range(len(cols)):
            if math.isnan(data[i, j]):
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="lightgrey", edgecolor="grey",
                                       hatch="//", linewidth=0.5))
                ax.text(j, i, "missing", ha="center", va="center", fontsize=7, color="dimgrey")
            else:
                ax.text(j, i, f"{data[i, j]:.1f}", ha="center", va="center", fontsize=8,
                        color="white" if data[i, j] < 60 else "black")
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("test variant")
    ax.set_ylabel("train variant")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="accuracy (%)")
    fig.tight_layout()
    _save(fig, path)


def plot_reliability(path: str | os.PathLike, bins: Sequence[Mapping[str, Any]], ece: float | None, title: str) -> None:
    """A reliability diagram: accuracy per confidence bin against the diagonal, with the bins'
    mean confidence and their share of predictions."""
    plt = pyplot()
    fig, (ax, axn) = plt.subplots(2, 1, figsize=(4.2, 5.0), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    width = bins[0]["upper"] - bins[0]["lower"] if bins else 0.1
    full = [b for b in bins if b["n"]]
    ax.bar([b["lower"] for b in full], [b["accuracy"] for b in full], width=width, align="edge",
           edgecolor="black", color="tab:blue", label="accuracy")
    ax.scatter([b["confidence"] for b in full], [b["accuracy"] for b in full], color="tab:red", s=12,
               zorder=3, label="mean confidence")
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect calibration")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(title + (f"\nECE = {100 * ece:.2f}%" if ece is not None else ""), fontsize=9)
    total = sum(b["n"] for b in bins) or 1
    axn.bar([b["lower"] for b in bins], [b["n"] / total for b in bins], width=width, align="edge",
            edgecolor="black", color="grey")
    axn.set_xlabel("confidence")
    axn.set_ylabel("share")
    fig.tight_layout()
    _save(fig, path)


def _save(fig, path: str | os.PathLike) -> None:
    buf = BytesIO()
    fig.savefig(buf, format="png", dpi=120, metadata={"Software": None})  # no version stamp: reproducible
    pyplot().close(fig)
    write_atomic(path, buf.getvalue())


# ---------------------------------------------------------------------------- failures
#: more than this share of a model's programs invalid: its accuracy is mostly guessing
MOSTLY_INVALID = 0.5


def failures_per_model(cells: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, int]]:
    """``model -> {"n", "n_invalid_program", "n_guessed", "n_execution_error"}`` summed over
    ``(model, accuracy JSON)`` pairs (:meth:`nsvqa.evaluation.Accuracy.to_json`: one per cell or
    test variant)."""
    out: dict[str, dict[str, int]] = {}
    for model, acc in cells:
        row = out.setdefault(model, {"n": 0, "n_invalid_program": 0, "n_guessed": 0, "n_execution_error": 0})
        for k in row:
            row[k] += int(acc.get(k) or 0)
    return out


def invalid_program_warning(failures: Mapping[str, Mapping[str, int]]) -> str | None:
    """One warning line naming the models (of :func:`failures_per_model`) most of whose programs
    are invalid, or most of whose answers are guessed after an invalid program or a failed
    execution (more than :data:`MOSTLY_INVALID` of the questions), with the counts; None when
    there is none."""
    def most(c: Mapping[str, int], key: str) -> bool:
        return bool(c["n"]) and c.get(key, 0) > MOSTLY_INVALID * c["n"]

    invalid = [f"{m} ({c['n_invalid_program']} of {c['n']})" for m, c in failures.items() if most(c, "n_invalid_program")]
    guessed = [f"{m} ({c['n_guessed']} of {c['n']}: {c['n_invalid_program']} invalid programs, "
               f"{c.get('n_execution_error', 0)} failed executions)" for m, c in failures.items()
               if most(c, "n_guessed") and not most(c, "n_invalid_program")]
    parts = []
    if invalid:
        parts.append(f"most programs are invalid for {', '.join(invalid)}: those answers are random guesses "
                     f"(check the question parser's training)")
    if guessed:
        parts.append(f"most answers are guessed for {', '.join(guessed)}: programs that failed to execute on "
                     f"the parsed scenes (check the scene parser's training)")
    return "warning: " + "; ".join(parts) if parts else None


# ---------------------------------------------------------------------------- all files
def write_report(report: Mapping[str, Any], out_dir: str | os.PathLike, *, plots: bool = True) -> list[Path]:
    """Write ``report.json``, ``report.md``, ``report.tex`` and (with ``plots``) the PNGs:
    ``heatmaps/<factor>__<model>.png`` (the :func:`measured_part` of the matrix, none where it is
    None) and ``reliability/<model>__train-<t>__test-<s>.png``.
    ``report.md`` opens with :func:`invalid_program_warning` when a model's programs are mostly
    invalid (the per-cell counts are in its failures table).

    Returns:
        The paths written.
    """
    out = Path(out_dir)
    written: list[Path] = []
    images: dict[str, str] = {}
    if plots:
        for factor, fac in report["factors"].items():
            for model, m in fac["models"].items():
                part = measured_part(m["matrix"], [variant_label(factor, t) for t in fac["train_variants"]],
                                     [variant_label(factor, s) for s in fac["test_variants"]])
                if part is None:
                    continue
                p = out / "heatmaps" / f"{factor}__{model}.png"
                plot_heatmap(p, *part, f"{model}: {factor_title(factor)} ({report['metric']}, %)")
                images[f"heatmap/{factor}/{model}"] = p.relative_to(out).as_posix()
                written.append(p)
        for c in report["cells"]:
            if c["calibration"] is None:
                continue
            p = out / "reliability" / f"{c['model']}__train-{c['train']}__test-{c['test']}.png"
            plot_reliability(p, c["calibration"]["bins"], c["calibration"]["ece"],
                             f"{c['model']}, train {c['train']}, test {c['test']}")
            images[f"reliability/{c['model']}/{c['train']}/{c['test']}"] = p.relative_to(out).as_posix()
            written.append(p)
    write_json_atomic(out / "report.json", report, indent=2)
    markdown = to_markdown(report, images)
    warning = invalid_program_warning(failures_per_model((c["model"], c["overall"]) for c in report["cells"]))
    if warning:
        title, _, rest = markdown.partition("\n")
        markdown = f"{title}\n\n**{warning}**\n{rest}"
    write_atomic(out / "report.md", markdown + "\n")
    write_atomic(out / "report.tex", to_latex(report) + "\n")
    return [out / "report.json", out / "report.md", out / "report.tex", *written]


def report_from_runs(runs: Sequence[str | os.PathLike], out_dir: str | os.PathLike, *, metric: str = "accuracy",
                     bins: int = 10, allow_partial: bool = False, plots: bool = True,
                     n_boot: int = N_BOOT, data: str | os.PathLike | None = None,
                     split: str | None = None) -> tuple[dict, list[Path]]:
    """Read every predictions file under ``runs``, check them (complete against their test split
    and consistent with each other: :func:`nsvqa.evaluation.inputs.check_prediction_files`, with
    ``data`` and ``split``), evaluate and write the report to ``out_dir`` (``n_boot``: bootstrap
    replicates of the RD intervals, 0 for none).

    Returns:
        (the report, the paths written).

    Raises:
        FileNotFoundError: a run folder that does not exist, or no predictions file at all.
        PredictionFormatError: a malformed, empty, incomplete or inconsistent predictions file
            (naming the file, line and field).
        FormatError: an unreadable questions file of a test split.
    """
    files = find_prediction_files(runs)
    if not files:
        raise FileNotFoundError(f"no predictions/<model>__train-<v>__test-<v>.jsonl under {[str(r) for r in runs]}")
    cells = {key: [read_predictions(f) for f in paths] for key, paths in files.items()}
    check_prediction_files(cells, files, data=data, split=split)
    report = evaluate(cells, metric=metric, n_bins=bins, allow_partial=allow_partial, n_boot=n_boot,
                      concept_split=ConceptSplit.from_catalogue(),
                      files={k: [str(f) for f in v] for k, v in files.items()})
    return report, write_report(report, out_dir, plots=plots)

