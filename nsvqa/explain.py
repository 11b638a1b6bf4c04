"""Seeing why an answer came out: one question of a variant run, step by step.

:func:`explain` gathers, for one question of one test image of a variant run
(:class:`nsvqa.experiment.VariantRun`):

* the parsed objects (and parts) of the image with their most likely attributes and probabilities;
* the question, its ground-truth answer and the program (the question parser's from
  ``parsed/<test>/programs.json``, or the ground-truth one);
* per program step, what P-NSVQA's probabilistic executor computed (a probability per object or
  per part, or a distribution over values) and what NS-VQA's deterministic executor computed on the
  most likely scene (object indices mapped back to the parsed detections);
* the final answers of both against the ground truth. Execution errors are part of the result,
  with the step that failed.

:func:`render_png` draws it (matplotlib, Agg) and :func:`render_html` wraps the PNG (base64) and
the same text in one self-contained page; ``scripts/explain.py`` is the command line.
"""
from __future__ import annotations

import base64
import html
import io
import math
import os
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from executors import (DeterministicExecutor, ExecutionError, InvalidProgram, ProbabilisticExecutor, Program,
                       SceneLikelihoods, load_ontology)
from executors.dsl import OBJECT, OBJECT_SET, PART, PART_SET, VALUE_TYPES
from executors.errors import FormatError
from executors.io import load_questions, normalize_answer
from executors.scene import argmax_scene, check_image_filename

from nsvqa.fileio import write_atomic

#: Probabilistic models :func:`explain` runs (name -> executor mode).
MODELS = {"pnsvqa": "threshold", "pnsvqa-exact": "exact"}
#: Entries shown per step in the figure.
TOP = 4
_ATTR_ORDER = ("size", "color", "material", "texture", "shape")
_TYPE_ATTR = {t: a for a, t in VALUE_TYPES.items()}


class ExplainError(ValueError):
    """Bad input for an explanation (a missing file, an image or question that is not there); the
    message names the file and the item."""


# ---------------------------------------------------------------------------- data
def explain(run_dir: str | os.PathLike, data: str | os.PathLike, split: str, image_index: int,
            question_index: int | None = None, model: str = "pnsvqa", gt_programs: bool = False, *,
            threshold: float = 0.7, min_exist: float = 0.5, min_part: float = 0.5) -> dict[str, Any]:
    """Everything needed to show why one question of ``data``'s split was answered as it was.

    Args:
        run_dir: a variant run folder holding ``parsed/<variant>/likelihoods.json`` (and
            ``programs.json`` unless ``gt_programs``), ``<variant>`` = the folder name of ``data``.
        data: ``ROOT/VARIANT``, the test variant's dataset folder.
        split: the split that was parsed (``test``).
        image_index: the image (``image_index`` of the parsed scenes).
        question_index: position of the question in ``questions/<split>_questions.json``; None
            takes the first question about ``image_index``.
        model: ``pnsvqa`` (threshold count/exist) or ``pnsvqa-exact``.
        gt_programs: run the question's ground-truth program instead of the parsed one.
        threshold: P-NSVQA's selection threshold; min_exist, min_part: NS-VQA's argmax-scene cuts.

    Returns:
        A JSON-able dict: ``variant``, ``split``, ``image_index``, ``question_index``,
        ``image_path``, ``question``, ``ground_truth``, ``program_source``, ``program_error``,
        ``objects`` (per detection: ``index``, ``exist``, ``attributes`` {attr: {value, p,
        alternatives}}, ``label``, ``box`` xyxy, ``mask`` RLE, ``kept`` by NS-VQA, ``nsvqa_index``),
        ``parts`` (per part detection: ``object``, ``name``, ``score``, ``label``, ``box``, ``mask``),
        ``steps`` (per node: ``index``, ``function``, ``value``, ``inputs``, ``token``, ``type``,
        ``pnsvqa`` and ``nsvqa``: see :func:`_prob_step`, :func:`_det_step`; None = not reached)
        and ``answers`` {``ground_truth``, ``pnsvqa``: {model, mode, answer, probability,
        distribution, error, error_node, correct}, ``nsvqa``: {answer, error, error_node, correct}}.

    Raises:
        ExplainError: a missing file, an image not in the parsed scenes, a question index out of
            range or about another image, a bad model name.
    """
    from nsvqa.experiment import VariantRun
    from nsvqa.evaluation.scene_parser import load_parsed

    if model not in MODELS:
        raise ExplainError(f"unknown model {model!r}; valid: {', '.join(MODELS)}")
    run_dir, data = Path(run_dir), Path(data)
    variant = data.name
    here = run_dir.resolve()
    run = VariantRun(here.parent, here.name)
    lik_path, prog_path = run.parsed(variant, "likelihoods"), run.parsed(variant, "programs")
    if not lik_path.exists():
        raise ExplainError(f"{lik_path}: missing; run scripts/train_variant.py first (it parses the test "
                           f"variant {variant!r})")
    qpath = data / "questions" / f"{split}_questions.json"
    if not qpath.exists():
        raise ExplainError(f"{qpath}: missing (no questions for split {split!r} of {data})")
    onto = load_ontology("superclevr")
    doc, liks = load_parsed(lik_path, onto)
    where = [k for k, s in enumerate(doc["scenes"]) if s.get("image_index") == image_index]
    if not where:
        have = sorted(s["image_index"] for s in doc["scenes"] if isinstance(s.get("image_index"), int))
        shown = ", ".join(map(str, have[:10])) + (", ..." if len(have) > 10 else "")
        raise ExplainError(f"{lik_path}: no parsed scene with image_index {image_index} "
                           f"({len(have)} scenes: {shown or 'none'})")
    rec, lik = doc["scenes"][where[0]], liks[where[0]]

    fname = rec.get("image_filename")
    questions = load_questions(qpath)

    def about(q: Mapping) -> bool:  # a question names its image by index, else by file name
        if q.get("image_index") is not None:
            return q["image_index"] == image_index
        return fname is not None and q.get("image_filename") == fname

    if question_index is None:
        first = [i for i, q in enumerate(questions) if about(q)]
        if not first:
            raise ExplainError(f"{qpath}: no question about image {image_index}")
        question_index = first[0]
    elif not 0 <= question_index < len(questions):
        raise ExplainError(f"{qpath}: question index {question_index} out of range "
                           f"(the file has {len(questions)} questions, 0..{len(questions) - 1})")
    q = questions[question_index]
    if not about(q):
        other = q.get("image_index", q.get("image_filename"))
        raise ExplainError(f"{qpath}, question {question_index}: is about image {other}, not image {image_index}")

    fname = fname or q.get("image_filename")
    if not fname:
        raise ExplainError(f"{lik_path}, scene of image {image_index}: no 'image_filename'")
    try:
        check_image_filename(fname, f"{lik_path}, scene of image {image_index}")
    except FormatError as e:
        raise ExplainError(str(e)) from None
    image_path = data / "images" / split / fname
    if not image_path.exists():
        raise ExplainError(f"{image_path}: missing (the image of scene {image_index})")

    program, source, program_error = _program(q, question_index, qpath, prog_path, len(questions), gt_programs)
    types: Sequence[str] | None = None
    if program is not None:
        try:
            types = program.validate(onto)
        except ExecutionError as e:
            program_error = f"invalid program: {e}"

    keep = [i for i in range(len(lik)) if lik.exist[i] >= min_exist]
    mode = MODELS[model]
    steps: list[dict] = []
    p_ans: dict[str, Any] = {"model": model, "mode": mode, "answer": None, "probability": None,
                             "distribution": None, "error": program_error, "error_node": None, "correct": None}
    d_ans: dict[str, Any] = {"answer": None, "error": program_error, "error_node": None, "correct": None}
    if program is not None and types is not None:
        p_trace, p_conf, p_res, p_err = _run_probabilistic(ProbabilisticExecutor(onto, mode=mode, threshold=threshold),
                                                           program, lik)
        scene = argmax_scene(lik, min_part=min_part, min_exist=min_exist)
        d_trace, d_res, d_err = _run_deterministic(DeterministicExecutor(onto), program, scene)
        gt = normalize_answer(q.get("answer"))
        if p_err is None:
            prob = float(p_res.distribution.get(p_res.answer, 0.0)) if p_res.distribution else None
            p_ans.update(answer=p_res.answer, probability=prob, correct=normalize_answer(p_res.answer) == gt,
                         distribution=_top_values(p_res.distribution or {}, len(p_res.distribution or {})))
        else:
            p_ans.update(error=f"{type(p_err).__name__}: {p_err}", error_node=p_err.node)
        if d_err is None:
            d_ans.update(answer=d_res.answer, correct=normalize_answer(d_res.answer) == gt)
        else:
            d_ans.update(error=f"{type(d_err).__name__}: {d_err}", error_node=d_err.node)
        for i, n in enumerate(program.nodes):
            steps.append({
                "index": i, "function": n.function, "value": n.value, "inputs": list(n.inputs), "token": n.token(),
                "type": types[i],
                "pnsvqa": _prob_step(p_trace, p_conf, i, types[i], p_err, onto),
                "nsvqa": _det_step(d_trace, i, types[i], d_err, keep, scene, onto),
            })
    elif program is not None:  # present but invalid: list its nodes without results
        steps = [{"index": i, "function": n.function, "value": n.value, "inputs": list(n.inputs),
                  "token": n.token(), "type": None, "pnsvqa": None, "nsvqa": None}
                 for i, n in enumerate(program.nodes)]

    classes = {str(k): v for k, v in (doc.get("detector_classes") or {}).items()}
    return {
        "variant": variant, "split": split, "run": str(run_dir), "model": model,
        "image_index": int(image_index), "question_index": int(question_index),
        "image_filename": fname, "image_path": str(image_path),
        "question": q.get("question", ""), "ground_truth": normalize_answer(q.get("answer")),
        "program_source": source, "program_error": program_error,
        "objects": _objects(lik, rec, keep, onto),
        "parts": _parts(lik, rec, classes, onto),
        "steps": steps,
        "answers": {"ground_truth": normalize_answer(q.get("answer")), "pnsvqa": p_ans, "nsvqa": d_ans},
        "settings": {"threshold": threshold, "min_exist": min_exist, "min_part": min_part},
    }


def _program(q: Mapping, qi: int, qpath: Path, prog_path: Path, n_questions: int,
             gt_programs: bool) -> tuple[Program | None, str, str | None]:
    """(program or None, where it came from, why there is none / it is malformed)."""
    from nsvqa.artifacts.programs import read_programs

    if gt_programs:
        try:
            return Program.from_json(q["program"]), "ground truth", None
        except ExecutionError as e:
            return None, "ground truth", f"invalid ground-truth program: {e}"
    if not prog_path.exists():
        raise ExplainError(f"{prog_path}: missing; run scripts/train_variant.py first (with a model that uses "
                           "the question parser), or pass --gt-programs to use the ground-truth program")
    try:
        rows = read_programs(prog_path)
    except FormatError as e:
        raise ExplainError(f"not a readable programs file: {e}") from None
    if len(rows) != n_questions:
        raise ExplainError(f"{prog_path}: {len(rows)} programs for the {n_questions} questions of {qpath}")
    row = rows[qi]
    source = "question parser"
    if row.program is None:
        return None, source, f"the question parser gave no valid program ({row.error or 'no reason recorded'})"
    return row.program, source, None


def _run_probabilistic(ex: ProbabilisticExecutor, program: Program, lik: SceneLikelihoods):
    """(trace, confidences, result, error). On a failed step the trace still runs up to it."""
    try:
        res = ex.run(program, lik, trace=True)
        return res.trace, res.confidence, res, None
    except InvalidProgram as e:
        return None, None, None, e
    except ExecutionError as e:  # the trace of the steps before the failure comes with the error
        return e.trace, e.confidence, None, e


def _run_deterministic(ex: DeterministicExecutor, program: Program, scene):
    """(trace up to the failing step, result, error)."""
    try:
        res = ex.run(program, scene, trace=True)
    except InvalidProgram as e:
        return None, None, e
    except ExecutionError as e:  # the trace of the steps before the failure comes with the error
        return e.trace, None, e
    return res.trace, res, None


def _prob_step(trace, conf, i: int, typ: str, err, onto) -> dict | None:
    """One step of P-NSVQA: ``kind`` objects | parts | values, ``probabilities`` (objects: a list
    per detection; parts: [[object, part name, p]] for p > 0; values: [[label, p]] by decreasing
    p), ``top`` [[label, p]] (at most :data:`TOP`), ``confidence`` (P(exactly one) for unique),
    ``error`` on the failing step. None: the step was not reached."""
    if trace is None or (err is not None and err.node is not None and i > err.node):
        return None
    if err is not None and err.node == i:
        return {"kind": "error", "probabilities": None, "top": [], "confidence": _f(conf[i]) if conf else None,
                "error": f"error: {err.reason}"}
    t = trace[i]
    c = _f(conf[i]) if conf is not None else None
    if isinstance(t, dict):
        vals = _top_values(t, len(t))
        return {"kind": "values", "probabilities": vals, "top": vals[:TOP], "confidence": c, "error": None}
    arr = np.asarray(t, dtype=float)
    if arr.ndim == 1:
        probs = [float(x) for x in arr]
        order = sorted((j for j in range(len(probs)) if probs[j] > 0), key=lambda j: (-probs[j], j))
        return {"kind": "objects", "probabilities": probs, "top": [[f"#{j}", probs[j]] for j in order[:TOP]],
                "confidence": c, "error": None}
    names = onto.part_names
    entries = [[int(o), names[k], float(arr[o, k])] for o, k in zip(*np.nonzero(arr > 0))]
    entries.sort(key=lambda e: (-e[2], e[0], e[1]))
    top = [[f"#{o}.{onto.spoken_value('partname', n)}", p] for o, n, p in entries[:TOP]]
    return {"kind": "parts", "probabilities": entries, "top": top, "confidence": c, "error": None}


def _det_step(trace, i: int, typ: str, err, keep: Sequence[int], scene, onto) -> dict | None:
    """One step of NS-VQA on the argmax scene, indices mapped back to the parsed detections:
    ``kind`` objects | parts | value | error, ``output`` (a list of detection indices, a detection
    index, [[object, part name]], a part [object, name], or the value), ``text``. None: not reached."""
    if err is not None and err.node is not None and i == err.node:
        return {"kind": "error", "output": None, "text": f"error: {err.reason}"}
    if trace is None or i >= len(trace) or (err is not None and err.node is not None and i > err.node):
        return None
    v = trace[i]

    def part(pid: str) -> list:
        j, k = (int(x) for x in pid.split("_"))
        return [keep[j], onto.parts_of(scene.objects[j]["shape"])[k]]

    if typ == OBJECT_SET:
        out = [keep[j] for j in v]
        return {"kind": "objects", "output": out, "text": "{" + ", ".join(f"#{j}" for j in out) + "}"}
    if typ == OBJECT:
        return {"kind": "object", "output": keep[v], "text": f"#{keep[v]}"}
    if typ == PART_SET:
        out = [part(p) for p in v]
        return {"kind": "parts", "output": out,
                "text": "{" + ", ".join(f"#{o}.{onto.spoken_value('partname', n)}" for o, n in out) + "}"}
    if typ == PART:
        o, n = part(v)
        return {"kind": "part", "output": [o, n], "text": f"#{o}.{onto.spoken_value('partname', n)}"}
    attr = _TYPE_ATTR.get(typ)
    if isinstance(v, bool):
        shown = "yes" if v else "no"
    elif attr is not None and isinstance(v, str):
        shown = onto.spoken_value(attr, v)
    else:
        shown = v
    return {"kind": "value", "output": shown if not isinstance(shown, np.generic) else shown.item(),
            "text": str(shown)}


def _objects(lik: SceneLikelihoods, rec: Mapping, keep: Sequence[int], onto) -> list[dict]:
    dets = rec.get("detections") or []
    out = []
    for i in range(len(lik)):
        attrs = {}
        for a in onto.attributes:
            p = lik.attributes[a][i]
            order = np.argsort(-p, kind="stable")
            vals = onto.values(a)
            attrs[a] = {"value": onto.spoken_value(a, vals[order[0]]), "p": float(p[order[0]]),
                        "alternatives": [[onto.spoken_value(a, vals[k]), float(p[k])] for k in order[1:3]
                                         if p[k] >= 0.05]}
        words = [attrs[a]["value"] for a in _ATTR_ORDER if a in attrs and not (a == "texture" and
                                                                                attrs[a]["value"] == "none")]
        e = float(lik.exist[i])
        det = dets[i] if i < len(dets) else {}
        out.append({"index": i, "exist": e, "attributes": attrs, "label": f"{i}: {' '.join(words)} ({e:.2f})",
                    "box": det.get("box"), "mask": det.get("mask"), "kept": i in keep,
                    "nsvqa_index": keep.index(i) if i in keep else None})
    return out


def _parts(lik: SceneLikelihoods, rec: Mapping, classes: Mapping[str, str], onto) -> list[dict]:
    out = []
    names = list(onto.part_names)
    for d in rec.get("parts") or []:
        o = int(d.get("object", -1))
        name = classes.get(str(d.get("label")), f"class {d.get('label')}")
        words = []
        if 0 <= o < len(lik) and name in names and lik.part_attributes:
            k = names.index(name)
            for a in ("color", "material"):
                if a in lik.part_attributes:
                    p = lik.part_attributes[a][o, k]
                    words.append(onto.spoken_value(a, onto.values(a)[int(np.argmax(p))]))
        spoken = onto.spoken_value("partname", name) if name in names else name
        score = float(d.get("score", 0.0))
        owner = f"#{o}" if o >= 0 else "#?"
        out.append({"object": o, "name": name, "score": score, "box": d.get("box"), "mask": d.get("mask"),
                    "label": f"{owner}.{spoken}: {' '.join(words) + ' ' if words else ''}({score:.2f})"})
    return out


def _nonzero(p: Mapping[str, Any]) -> int:
    """Number of entries with probability > 0 of a P-NSVQA step."""
    probs = p["probabilities"] or []
    if p["kind"] == "objects":
        return sum(1 for v in probs if v > 0)
    return sum(1 for e in probs if e[-1] > 0)


def _top_values(dist: Mapping[Any, float], k: int) -> list[list]:
    items = sorted(((str(v), float(p)) for v, p in dist.items()), key=lambda x: (-x[1], x[0]))
    return [list(x) for x in items[:k]]


def _f(x) -> float | None:
    return None if x is None else float(x)


# ---------------------------------------------------------------------------- text
def answer_lines(ex: Mapping[str, Any]) -> list[str]:
    """The answers as text lines: ground truth, P-NSVQA (with probability), NS-VQA."""
    a = ex["answers"]
    p, d = a["pnsvqa"], a["nsvqa"]

    def verdict(r):
        return "" if r["correct"] is None else ("  [right]" if r["correct"] else "  [wrong]")

    lines = [f"ground truth: {a['ground_truth']}"]
    if ex.get("program_error"):
        return lines + [f"P-NSVQA ({p['model']}): no answer (no valid program)", "NS-VQA: no answer (no valid program)"]
    if p["error"]:
        lines.append(f"P-NSVQA ({p['model']}): error: {p['error']}")
    else:
        prob = "" if p["probability"] is None else f" (p={p['probability']:.3f})"
        lines.append(f"P-NSVQA ({p['model']}): {p['answer']}{prob}{verdict(p)}")
    lines.append(f"NS-VQA: error: {d['error']}" if d["error"] else f"NS-VQA: {d['answer']}{verdict(d)}")
    return lines


def step_line(s: Mapping[str, Any]) -> str:
    """``"3 filter_color[red] <- 2"``."""
    ins = ", ".join(map(str, s["inputs"]))
    return f"{s['index']:>2} {s['token']}" + (f" <- {ins}" if ins else "")


def _top_text(p: Mapping[str, Any] | None) -> str:
    if p is None:
        return "(not reached)"
    if p["kind"] == "error":
        return p["error"]
    txt = "  ".join(f"{lab} {v:.2f}" for lab, v in p["top"]) or "(all 0)"
    if p["confidence"] is not None:
        txt += f"  [P(exactly one)={p['confidence']:.2f}]"
    return txt


def _title(ex: Mapping[str, Any]) -> str:
    return (f"{ex['variant']}/{ex['split']} image {ex['image_index']}, question {ex['question_index']} "
            f"- program: {ex['program_source']}")


# ---------------------------------------------------------------------------- PNG
def render_png(explanation: Mapping[str, Any], image_path: str | os.PathLike | None,
               out_path: str | os.PathLike) -> Path:
    """Draw ``explanation`` (:func:`explain`) to a PNG at ``out_path`` (written atomically).

    Left: the image with every parsed object outlined (mask contour, else box; dashed when NS-VQA
    drops it) and labelled, parts thinner, and the object list below. Right: question, answers and
    one row per program step: the step, P-NSVQA's top objects/values as bars, NS-VQA's output."""
    from matplotlib.patches import Rectangle
    from PIL import Image

    from nsvqa.generation.annotations import rle_to_mask
    from nsvqa.evaluation.report import _pyplot

    plt = _pyplot()
    ex = explanation
    image_path = Path(image_path or ex["image_path"])
    img = np.asarray(Image.open(image_path).convert("RGB"))
    h, w = img.shape[:2]
    steps = ex["steps"]
    objects, parts = ex["objects"], ex["parts"]
    n_rows = max(len(steps), 1) + 1
    head = [_title(ex), *textwrap.wrap("Q: " + ex["question"], 120)]
    if ex["program_error"]:
        head.append(f"program: {ex['program_error']}")
    head += answer_lines(ex)
    head_h = 0.3 + 0.19 * len(head)
    row_h = 0.3
    right_h = head_h + 0.2 + row_h * n_rows + 0.2
    obj_lines = [_object_line(o) for o in objects] + [p["label"] for p in parts[:12]]
    if len(parts) > 12:
        obj_lines.append(f"... and {len(parts) - 12} more parts")
    img_w_in = 6.0
    img_h_in = img_w_in * h / max(w, 1)
    left_h = img_h_in + 0.5 + 0.17 * (len(obj_lines) + 1)
    fig_h = max(right_h, left_h, 4.0)
    fig_w = 17.0
    fig = plt.figure(figsize=(fig_w, fig_h))
    cmap = plt.get_cmap("tab10")

    # image with outlines
    ax = fig.add_axes([0.2 / fig_w, 1 - (0.3 + img_h_in) / fig_h, img_w_in / fig_w, img_h_in / fig_h])
    ax.imshow(img, interpolation="nearest")
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)
    ax.set_axis_off()
    fs = 7
    for o in objects:
        color = cmap(o["index"] % 10)
        ls = "-" if o["kept"] else "--"
        anchor = _outline(ax, o.get("mask"), o.get("box"), color, ls, 1.4, rle_to_mask, Rectangle, (h, w))
        if anchor is not None:
            right = anchor[0] > 0.5 * w  # labels of objects on the right end at their right edge
            ax.text(anchor[1] if right else anchor[0], anchor[2], o["label"], fontsize=fs, color="black",
                    va="bottom", ha="right" if right else "left",
                    bbox=dict(boxstyle="round,pad=0.15", facecolor=color, alpha=0.6, linewidth=0), clip_on=True)
    for p in parts:
        color = cmap(p["object"] % 10) if p["object"] >= 0 else "white"
        anchor = _outline(ax, p.get("mask"), p.get("box"), color, ":", 0.8, rle_to_mask, Rectangle, (h, w))
        if anchor is not None and len(parts) <= 12:
            ax.text(anchor[0], anchor[2] + 1.0, p["label"].split(":")[0], fontsize=fs - 2, color="black", va="top",
                    ha="left", clip_on=True,
                    bbox=dict(boxstyle="round,pad=0.1", facecolor="white", alpha=0.5, linewidth=0))
    ax.set_title(f"{ex['image_filename']}: {len(objects)} parsed objects, {len(parts)} parts "
                 f"(dashed: exist < {ex['settings']['min_exist']}, not in NS-VQA's scene)", fontsize=8)
    # object list
    fig.text(0.2 / fig_w, 1 - (0.55 + img_h_in) / fig_h, "\n".join(obj_lines), fontsize=7, va="top", ha="left",
             family="monospace")

    # question, answers
    x0 = 6.6 / fig_w
    fig.text(x0, 1 - 0.2 / fig_h, "\n".join(head), fontsize=9, va="top", ha="left")

    # steps: one row of row_h inches each, below the header
    steps_h = row_h * n_rows
    axs = fig.add_axes([x0, 1 - (head_h + 0.2 + steps_h) / fig_h, 1 - x0 - 0.15 / fig_w, steps_h / fig_h])
    axs.set_xlim(0, 1)
    axs.set_ylim(-(n_rows - 0.5), 0.6)
    axs.set_axis_off()
    mode = ex["answers"]["pnsvqa"]["mode"]
    cols = (0.0, 0.29, 0.775)
    for x, t in zip(cols, ("step (inputs)", f"P-NSVQA ({mode}): top objects / values", "NS-VQA (argmax scene)")):
        axs.text(x, 0, t, fontsize=8, fontweight="bold", va="center")
    if not steps:
        axs.text(0, -1, "no program to execute", fontsize=8, va="center", color="firebrick")
    cell = 0.11
    for r, s in enumerate(steps, start=1):
        y = -r
        if r % 2 == 0:
            axs.add_patch(Rectangle((0, y - 0.5), 1, 1, facecolor="0.95", edgecolor="none", zorder=0))
        axs.text(0, y, _clip(step_line(s), 38), fontsize=7.5, va="center", family="monospace")
        p = s["pnsvqa"]
        if p is None:
            axs.text(cols[1], y, "(not reached)" if s["type"] else "-", fontsize=7, va="center", color="grey")
        elif p["kind"] == "error":
            axs.text(cols[1], y, _clip(p["error"], 85), fontsize=7, va="center", color="firebrick")
        else:
            for c, (lab, v) in enumerate(p["top"]):
                bx = cols[1] + c * cell
                axs.add_patch(Rectangle((bx, y - 0.38), (cell - 0.006) * min(max(v, 0.0), 1.0), 0.76,
                                        facecolor="tab:blue", alpha=0.3, edgecolor="none"))
                axs.add_patch(Rectangle((bx, y - 0.38), cell - 0.006, 0.76, facecolor="none",
                                        edgecolor="0.7", linewidth=0.4))
                axs.text(bx + 0.003, y, f"{_clip(lab, 13)} {v:.2f}", fontsize=6.5, va="center")
            if not p["top"]:
                axs.text(cols[1], y, "(all 0)", fontsize=7, va="center", color="grey")
            more = _nonzero(p) - len(p["top"])
            note = (f"+{more} " if more > 0 else "") + (f"Z={p['confidence']:.2f}" if p["confidence"] is not None
                                                        else "")
            if note:
                axs.text(cols[1] + TOP * cell, y, note, fontsize=6.5, va="center", color="dimgrey")
        d = s["nsvqa"]
        if d is None:
            axs.text(cols[2], y, "(not reached)" if s["type"] else "-", fontsize=7, va="center", color="grey")
        else:
            axs.text(cols[2], y, _clip(d["text"], 40), fontsize=7, va="center",
                     color="firebrick" if d["kind"] == "error" else "black")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    out_path = Path(out_path)
    write_atomic(out_path, buf.getvalue())
    return out_path


def _outline(ax, mask, box, color, ls, lw, rle_to_mask, Rectangle, shape) -> tuple[float, float, float] | None:
    """Draw a mask contour (else the box); returns (left, right, top) of what was drawn, or None."""
    if mask is not None:
        try:
            m = rle_to_mask(mask)
        except Exception:  # a malformed RLE: fall back to the box
            m = None
        if m is not None and m.shape == shape and m.any():
            ax.contour(m.astype(float), levels=[0.5], colors=[color], linewidths=lw, linestyles=ls)
            ys, xs = np.nonzero(m)
            return float(xs.min()) - 0.5, float(xs.max()) + 0.5, float(ys.min()) - 0.5
    if box is not None and len(box) == 4 and all(math.isfinite(float(v)) for v in box):
        x0, y0, x1, y1 = (float(v) for v in box)
        ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False, edgecolor=color, linestyle=ls,
                               linewidth=lw))
        return x0 - 0.5, x1 - 0.5, y0 - 0.5
    return None


def _object_line(o: Mapping[str, Any]) -> str:
    """``"#0 e=0.99: large 0.99 | red 0.60 / blue 0.40 | metal 0.99 | suv 0.93"`` (a plain texture
    is left out)."""
    cells = []
    for a in _ATTR_ORDER:
        at = o["attributes"].get(a)
        if at is None or (a == "texture" and at["value"] == "none" and not at["alternatives"]):
            continue
        alt = "".join(f" / {v} {p:.2f}" for v, p in at["alternatives"])
        cells.append(f"{at['value']} {at['p']:.2f}{alt}")
    mark = "" if o["kept"] else "  [not in NS-VQA's scene]"
    return f"#{o['index']} e={o['exist']:.2f}: " + " | ".join(cells) + mark


def _clip(s: str, n: int) -> str:
    s = str(s)
    return s if len(s) <= n else s[:n - 1] + "~"


# ---------------------------------------------------------------------------- HTML
def render_html(explanation: Mapping[str, Any], png_path: str | os.PathLike, out_path: str | os.PathLike) -> Path:
    """One self-contained HTML page: the PNG of :func:`render_png` (embedded as base64) and the
    explanation as text (question, answers, objects, one table row per step)."""
    ex = explanation
    e = html.escape
    png = base64.b64encode(Path(png_path).read_bytes()).decode("ascii")
    rows = []
    for s in ex["steps"]:
        p, d = s["pnsvqa"], s["nsvqa"]
        rows.append(f"<tr><td>{s['index']}</td><td><code>{e(s['token'])}</code></td>"
                    f"<td>{e(', '.join(map(str, s['inputs'])))}</td><td>{e(_top_text(p))}</td>"
                    f"<td>{e(d['text']) if d else '(not reached)'}</td></tr>")
    objs = "".join(f"<li>{e(_object_line(o))}</li>" for o in ex["objects"])
    parts = "".join(f"<li>{e(p['label'])}</li>" for p in ex["parts"])
    program_error = f"<p class=err>program: {e(ex['program_error'])}</p>" if ex["program_error"] else ""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{e(_title(ex))}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse;font-size:90%}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}} .err{{color:#b22}} img{{max-width:100%}}</style>
</head><body>
<h2>{e(_title(ex))}</h2>
<p class="question"><b>Question:</b> {e(ex['question'])}</p>
{program_error}<pre>{e(chr(10).join(answer_lines(ex)))}</pre>
<img alt="explanation of question {ex['question_index']}" src="data:image/png;base64,{png}">
<h3>Program and per-step results</h3>
<table><tr><th>#</th><th>step</th><th>inputs</th><th>P-NSVQA ({e(ex['answers']['pnsvqa']['model'])})</th>
<th>NS-VQA</th></tr>
{chr(10).join(rows)}
</table>
<h3>Parsed objects</h3><ul>{objs}</ul>
{f'<h3>Parsed parts</h3><ul>{parts}</ul>' if parts else ''}
</body></html>
"""
    out_path = Path(out_path)
    write_atomic(out_path, page)
    return out_path


def default_paths(run_dir: str | os.PathLike, explanation: Mapping[str, Any],
                  out_dir: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """``(<out>/<variant>_<split>_img<I>_q<Q>.png, ... .html)``; ``out`` defaults to ``RUN/explain``."""
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "explain"
    ex = explanation
    stem = f"{ex['variant']}_{ex['split']}_img{ex['image_index']}_q{ex['question_index']}"
    return out / f"{stem}.png", out / f"{stem}.html"


__all__ = ["MODELS", "ExplainError", "explain", "render_png", "render_html", "default_paths", "answer_lines",
           "step_line"]
