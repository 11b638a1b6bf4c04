"""The study's report written out, and every document that prints its numbers kept to it.

:func:`write_study_report` writes the report's files (:func:`~orchestration.study.report.build.build_study_report`)
and the generated blocks of the documents that quote it: the README's results table, and the
blocks of ``docs/study.md`` and ``results/study/README.md`` (:data:`DOC_BLOCKS`), each between
``<!-- generated:NAME:begin -->`` and ``<!-- generated:NAME:end -->`` lines. :func:`check_study_report`
rebuilds all of it in memory and names what differs; it also names a document whose prose, outside
its generated blocks and code, carries a number (:func:`stray_numbers`): a number in those documents
comes from the report or is not there.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from nsvqa.evaluation.report import pct
from nsvqa.fileio import write_atomic
from orchestration.study.settings.config import STUDY, StudyConfig
from orchestration.study.settings.budget import pending_rows
from orchestration.study.report.findings import (correction_line, findings_markdown, seeing_cell, seeing_header,
                                                 seeing_sentence)
from orchestration.study.report.build import TEXT_SUFFIXES, build_study_report, dependence_seeds, seeds_table

#: The lines between which the README holds the generated results table (:func:`readme_results`).
README_BEGIN, README_END = "<!-- results-table:begin -->", "<!-- results-table:end -->"


def _points(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}"


def findings_table(report: Mapping[str, Any]) -> list[str]:
    """One line per finding: the paper's claim, ours with its interval (the headline), the verdict
    with its qualifiers, the non-modular side it is judged against and the verdict against each
    group of models that see (a column each); then the multiple-comparison line and which
    non-modular models see, with whose perception (Markdown lines)."""
    sides = report.get("seeing", ())
    lines = ["| " + " | ".join(["finding (paper)", "ours", "verdict", "judged against",
                                *(seeing_header(s) for s in sides)]) + " |",
             "|" + "---|" * (4 + len(sides))]
    for f in report.get("findings", []):
        verdict_ = f"**{f['status']}**" + (f" ({f['qualifier']})" if f.get("qualifier") else "")
        lines.append("| " + " | ".join([f["paper"], f.get("headline", f["ours"]), verdict_, f.get("rests_on", "—"),
                                        *(seeing_cell(f, s["group"], False) for s in sides)]) + " |")
    line = " ".join(x for x in (correction_line(report.get("findings", [])), seeing_sentence(sides)) if x)
    return lines + (["", line.strip()] if line.strip() else [])


def in_domain_table(report: Mapping[str, Any]) -> list[str]:
    """One line per model in domain, image margin first (the measure that compares models of every
    kind), accuracy, image dependence where scored, and what a model sees the image through where
    its class declares it (Markdown lines, with the sentence that defines the columns)."""
    d = report["study"]["default_variant"]
    lines = [f"In domain (train and test `{d}`, seed 0): image margin = accuracy − the question-only "
             f"`{report['question_only']}`'s, the measure that compares models of every kind; image dependence "
             "= accuracy − accuracy with each question paired with another test image, the check that a model "
             "looks (— where not scored yet; for the program executors it partly counts programs that fail "
             "on the other image). A model near 0 on both does not use the image.",
             "", "| model | kind | image margin (points) | accuracy % [95% CI] | image dependence (points) |",
             "|---|---|---|---|---|"]
    for r in report.get("in_domain", []):
        seen = f" (sees through {r['perception']})" if r.get("perception") else ""
        lines.append(f"| {r['model']}{seen} | {r['kind']} | {_points(r.get('image_margin'))} | {pct(r['accuracy'])} "
                     f"[{pct(r['ci95'][0])}, {pct(r['ci95'][1])}] | {_points(r.get('image_dependence'))}"
                     f"{dependence_seeds(r)} |")
    return lines


def readme_results(report: Mapping[str, Any]) -> str:
    """The README's results (:func:`findings_table`; the in-domain table is the demo's, above it, and
    docs/study.md's), from the study's report JSON alone."""
    lines = [f"Generated from `results/study/report.json` (`scripts/run_study.py --report`; `--check` fails when "
             f"this table differs). Object questions, {report['study']['sizes']['train']:,} training images per "
             f"variant; a verdict names the training seeds its cells pool (the fewest, where they differ); 95% "
             f"intervals over the seeds, where a cell pools several, then the test images. "
             f"Details: [results/study/report.md](results/study/report.md). {plan_sentence(report)} "
             f"{_design_brief(report)}".rstrip(), ""]
    return "\n".join(lines + findings_table(report) + ["", "Every model in domain, with its image dependence "
                                                        "(the check that a model looks): docs/study.md, \"In domain\"."])


def _design_brief(report: Mapping[str, Any]) -> str:
    """The README's short form of :func:`~orchestration.study.report.build.design_sentence` (report.md has it whole)."""
    d = report.get("design")
    if not d:
        return ""
    return ("Every verdict is final: the declared design is complete." if d["complete"] else
            "Every verdict is provisional until the declared design is complete (how its pieces were chosen: "
            "report.md, \"Findings\").")


def _config_block(report: Mapping[str, Any]) -> list[str]:
    st = report["study"]
    sizes = st["sizes"]
    scene = ", ".join(f"`{k}={v}`" for k, v in st["scene_overrides"].items())
    question = ", ".join(f"`{k}={v}`" for k, v in st["question_overrides"].items())
    return [f"- {sizes['train']:,} train / {sizes['val']:,} val / {sizes['test']:,} test images per variant "
            f"(image profile `{st['image_profile']}`), `{st['questions']}` questions, data seed {st['data_seed']}.",
            f"- Every model at the `{st['profile']}` profile; the scene parser with {scene}; the question parser "
            f"with {question}; detections parsed at score ≥ {st['parse_min_score']}.",
            f"- Training seeds {', '.join(map(str, st['seeds']))} declared; the cap {st.get('budget_hours', '—')} "
            f"hours of 2-core compute.",
            *factor_seeds_lines(report), f"- {plan_sentence(report)}"]


def _seeds_text(seeds: Sequence[int]) -> str:
    s = sorted(seeds)
    return f"seeds {s[0]}–{s[-1]}" if len(s) > 2 and s == list(range(s[0], s[-1] + 1)) else \
        ("seed " if len(s) == 1 else "seeds ") + ", ".join(map(str, s))


def factor_seeds_lines(report: Mapping[str, Any]) -> list[str]:
    """One line per factor: the training seeds each model's RD pools there (a model pools a seed
    only where every training variant of the factor ran it; a row without ``seeds`` holds seed 0
    alone), from the report's factors."""
    out = []
    for name, f in report.get("factors", {}).items():
        by_seeds: dict[tuple[int, ...], list[str]] = {}
        for m, row in f.get("models", {}).items():
            if row.get("rd") is not None:
                by_seeds.setdefault(tuple(row.get("seeds") or (0,)), []).append(m)
        if by_seeds:
            parts = [f"{', '.join(ms)} {_seeds_text(seeds)}" for seeds, ms in
                     sorted(by_seeds.items(), key=lambda kv: (-len(kv[0]), kv[0]))]
            out.append(f"- The {name} factor's RDs pool: {'; '.join(parts)}.")
    return out


def plan_sentence(report: Mapping[str, Any]) -> str:
    """Whether every declared piece is committed, and how many are not (from the report's budget:
    the study's, the reruns' and each heading's pending pieces; named where they are few)."""
    pending = [r["piece"] for r in pending_rows(report.get("budget") or {"pending": []})]
    done = len(report.get("pieces", ()))
    if not pending:
        return f"Every declared piece of the plan is committed ({done} piece{'s' if done != 1 else ''})."
    named = (": " + ", ".join(f"`{x}`" for x in pending)) if len(pending) <= 6 else \
        " (report.md, \"Budget\", lists them)"
    return f"{done} pieces committed; {len(pending)} declared piece{'s' if len(pending) > 1 else ''} not run yet{named}."


def _findings_block(report: Mapping[str, Any]) -> list[str]:
    return findings_markdown(report.get("findings", []), report.get("seeing", ()))


#: The generated blocks of each document that quotes the report: path (relative to the repository
#: root for ``docs/``, to the results folder for ``README.md`` there) -> block name -> its writer.
DOC_BLOCKS: dict[str, dict[str, Callable[[Mapping[str, Any]], list[str]]]] = {
    "docs/study.md": {"config": _config_block, "findings": _findings_block, "in-domain": in_domain_table,
                      "seeds": seeds_table},
    "RESULTS/README.md": {"config": _config_block},
}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- generated:{name}:begin -->", f"<!-- generated:{name}:end -->"


def splice(text: str, begin: str, end: str, block: str, source: str) -> str:
    """``text`` with what lies between the lines ``begin`` and ``end`` replaced by ``block``.

    Raises:
        ValueError: ``text`` lacks either marker line (``source`` named).
    """
    try:
        head, rest = text.split(begin + "\n", 1)
        _, tail = rest.split(end, 1)
    except ValueError:
        raise ValueError(f"{source}: no lines {begin!r} ... {end!r} around a generated block") from None
    return f"{head}{begin}\n{block}\n{end}{tail}"


def splice_readme(text: str, block: str, source: str = "README.md") -> str:
    """``text`` with its results table (between :data:`README_BEGIN` and :data:`README_END`) replaced."""
    return splice(text, README_BEGIN, README_END, block, source)


def render_doc(text: str, blocks: Mapping[str, Callable[[Mapping[str, Any]], list[str]]],
               report: Mapping[str, Any], source: str) -> str:
    """``text`` with each generated block rewritten from ``report``."""
    for name, make in blocks.items():
        text = splice(text, *_markers(name), "\n".join(make(report)), source)
    return text


#: A number in prose: digits not part of a name (``co-1``, ``mid-seed0``, ``sys-*.json``).
_NUMBER = re.compile(r"(?<![\w.\-/+])[+−-]?\d[\d,.]*%?(?![\w\-/])")
#: Numbers prose may hold: references into the papers and the documents, not measurements.
_REFERENCE = re.compile(r"\b(?:Tables?|Fig\.|Figs\.|Sec\.|section|Section|CVPR|ICLR|issue|exit status|CLEVR)\s+"
                        r"[\d.,–\- ]+|\bpoint\s+\d|\b(?:19|20)\d\d\b|\b95%")


def stray_numbers(text: str) -> list[str]:
    """The lines of ``text`` whose prose carries a number: outside generated blocks, fenced and
    inline code, link targets and references (:data:`_REFERENCE`)."""
    text = re.sub(r"<!-- generated:([\w-]+):begin -->.*?<!-- generated:\1:end -->", "", text, flags=re.S)
    text = re.sub(re.escape(README_BEGIN) + ".*?" + re.escape(README_END), "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", lambda m: "\n" * m.group().count("\n"), text)  # inline code, over lines too
    out = []
    for line in text.splitlines():
        prose = re.sub(r"\]\([^)]*\)", "]", line)
        prose = _REFERENCE.sub("", prose)
        if _NUMBER.search(prose):
            out.append(line.strip())
    return out


def doc_paths(results: str | os.PathLike, docs_root: str | os.PathLike | None) -> dict[Path, str]:
    """The documents :data:`DOC_BLOCKS` names, as paths (``docs/`` ones only with ``docs_root``,
    the repository the results belong to), each with its key."""
    out = {}
    for key in DOC_BLOCKS:
        if key.startswith("RESULTS/"):
            out[Path(results) / key.removeprefix("RESULTS/")] = key
        elif docs_root is not None:
            out[Path(docs_root) / key] = key
    return out


def write_study_report(results: str | os.PathLike, cfg: StudyConfig = STUDY, *,
                       readme: str | os.PathLike | None = None,
                       docs_root: str | os.PathLike | None = None) -> list[Path]:
    """Build the report and write its files under ``results`` (atomically), the results table into
    ``readme`` when given, and the generated blocks of the documents (:func:`doc_paths`; a document
    that is not there is skipped); returns the paths written."""
    out = []
    files = build_study_report(results, cfg)
    for rel, data in files.items():
        write_atomic(Path(results) / rel, data)
        out.append(Path(results) / rel)
    report = json.loads(files["report.json"])
    targets: list[tuple[Path, Callable[[str], str]]] = []
    if readme is not None:
        targets.append((Path(readme), lambda t: splice_readme(t, readme_results(report), str(readme))))
    for path, key in doc_paths(results, docs_root).items():
        if path.is_file():
            targets.append((path, lambda t, k=key, p=path: render_doc(t, DOC_BLOCKS[k], report, str(p))))
    for path, render in targets:
        text = path.read_text()
        new = render(text)
        if new != text:
            write_atomic(path, new.encode())
            out.append(path)
    return out


def check_study_report(results: str | os.PathLike, cfg: StudyConfig = STUDY, *,
                       readme: str | os.PathLike | None = None,
                       docs_root: str | os.PathLike | None = None) -> list[str]:
    """What does not reproduce: the report's text files (JSON, Markdown, LaTeX) whose committed
    bytes differ from a rebuild from the committed predictions (a missing file counts), ``readme``
    when its results table differs, and each document of :func:`doc_paths` whose generated blocks
    differ or whose prose carries a number (``<path>: <line>``). Empty when everything reproduces."""
    bad = []
    files = build_study_report(results, cfg, plots=False)
    for rel, data in files.items():
        if not rel.endswith(TEXT_SUFFIXES):
            continue
        p = Path(results) / rel
        if not p.is_file() or p.read_bytes() != data:
            bad.append(rel)
    report = json.loads(files["report.json"])

    def rel(path: Path) -> str:
        return str(Path(os.path.relpath(path.resolve(), Path(results).resolve())))

    if readme is not None:
        text = Path(readme).read_text()
        try:
            same = splice_readme(text, readme_results(report), str(readme)) == text
        except ValueError:
            same = False
        if not same:
            bad.append(rel(Path(readme)))
    for path, key in doc_paths(results, docs_root).items():
        if not path.is_file():
            continue
        text = path.read_text()
        try:
            same = render_doc(text, DOC_BLOCKS[key], report, str(path)) == text
        except ValueError:
            same = False
        if not same:
            bad.append(rel(path))
        bad += [f"{rel(path)}: a number outside the generated blocks: {line[:80]}" for line in stray_numbers(text)]
    return bad


__all__ = ["DOC_BLOCKS", "README_BEGIN", "README_END", "check_study_report", "doc_paths", "findings_table",
           "in_domain_table", "readme_results", "render_doc", "splice", "splice_readme", "stray_numbers",
           "write_study_report"]
