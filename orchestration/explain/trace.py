"""Tracing one question of a variant run through both executors: :func:`explain` loads the parsed
scene of one test image and the question's program (parsed or ground truth), runs P-NSVQA's
probabilistic executor on the likelihoods and NS-VQA's deterministic one on the most likely scene,
and returns per step what each computed, the parsed objects and parts, and both answers against the
ground truth, as a JSON-able dict (:mod:`orchestration.explain.render` draws it).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from executors import (DeterministicExecutor, ExecutionError, InvalidProgram, ProbabilisticExecutor, Program,
                       SceneLikelihoods, load_ontology)
from executors.dsl import OBJECT, OBJECT_SET, PART, PART_SET, VALUE_TYPES
from executors.errors import FormatError
from executors.io import load_questions, normalize_answer
from executors.scene import argmax_scene, check_image_filename
from nsvqa.artifacts.programs import read_programs
from nsvqa.models import pipeline

#: Probabilistic models :func:`explain` runs (name -> executor mode): the models whose class declares
#: P-NSVQA's reasoner, in their table's order. Read from the table of the models with a reasoner
#: (:data:`nsvqa.models.pipeline.MODELS`), not through :mod:`orchestration.models`, which loads every
#: baseline (torch): ``nsvqa-explain``'s parser reads MODELS at once, and runs without the [full] extra.
MODELS = {name: cls.mode for name, cls in pipeline.MODELS.items() if issubclass(cls.reasoner_cls, pipeline.PNSVQA)}
#: Entries shown per step in the figure.
TOP = 4
#: The order in which an object's attributes are said ("large red metal car").
ATTR_ORDER = ("size", "color", "material", "texture", "shape")
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
    if model not in MODELS:
        raise ExplainError(f"unknown model {model!r}; valid: {', '.join(MODELS)}")
    from orchestration.experiment import VariantRun  # heavy (torch): nsvqa-explain's parser reads MODELS at once

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
    doc, rec, lik = _parsed_scene(lik_path, image_index, onto)
    questions = load_questions(qpath)
    question_index = _question_index(questions, qpath, image_index, question_index, rec.get("image_filename"))
    q = questions[question_index]
    fname = _image_filename(rec, q, lik_path, image_index)
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
    p_ans: dict[str, Any] = {"model": model, "mode": MODELS[model], "answer": None, "probability": None,
                             "distribution": None, "error": program_error, "error_node": None, "correct": None}
    d_ans: dict[str, Any] = {"answer": None, "error": program_error, "error_node": None, "correct": None}
    steps: list[dict] = []
    if program is not None and types is not None:
        steps = _execute(program, types, q, lik, keep, onto, model, p_ans, d_ans, threshold=threshold,
                         min_exist=min_exist, min_part=min_part)
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


def _parsed_scene(lik_path: Path, image_index: int, onto) -> tuple[dict, dict, SceneLikelihoods]:
    """(the parsed-scenes document of ``lik_path``, the record of the scene of ``image_index`` in it,
    that scene's likelihoods).

    Raises:
        ExplainError: no parsed scene of ``image_index`` (the file's indices named).
    """
    # heavy (pycocotools): nsvqa-explain's parser reads MODELS at once
    from nsvqa.evaluation.scene_parser import load_parsed

    doc, liks = load_parsed(lik_path, onto)
    where = [k for k, s in enumerate(doc["scenes"]) if s.get("image_index") == image_index]
    if not where:
        have = sorted(s["image_index"] for s in doc["scenes"] if isinstance(s.get("image_index"), int))
        shown = ", ".join(map(str, have[:10])) + (", ..." if len(have) > 10 else "")
        raise ExplainError(f"{lik_path}: no parsed scene with image_index {image_index} "
                           f"({len(have)} scenes: {shown or 'none'})")
    return doc, doc["scenes"][where[0]], liks[where[0]]


def _question_index(questions: Sequence[Mapping], qpath: Path, image_index: int, question_index: int | None,
                    fname: str | None) -> int:
    """``question_index``, checked to be a question of ``qpath`` about image ``image_index`` (named
    by its index, else by its file name ``fname``); None: the first question about it.

    Raises:
        ExplainError: no question about the image, an index out of range or about another image.
    """
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
    return question_index


def _image_filename(rec: Mapping, q: Mapping, lik_path: Path, image_index: int) -> str:
    """The image file name of scene ``rec`` (else of question ``q``), checked to be a plain name.

    Raises:
        ExplainError: neither names one, or the name is not a plain file name.
    """
    fname = rec.get("image_filename") or q.get("image_filename")
    if not fname:
        raise ExplainError(f"{lik_path}, scene of image {image_index}: no 'image_filename'")
    try:
        check_image_filename(fname, f"{lik_path}, scene of image {image_index}")
    except FormatError as e:
        raise ExplainError(str(e)) from None
    return fname


def _execute(program: Program, types: Sequence[str], q: Mapping, lik: SceneLikelihoods, keep: Sequence[int], onto,
             model: str, p_ans: dict[str, Any], d_ans: dict[str, Any], *, threshold: float, min_exist: float,
             min_part: float) -> list[dict]:
    """Run the valid ``program`` with ``model``'s P-NSVQA reasoner on ``lik`` and with NS-VQA's
    deterministic executor on its most likely scene; fill ``p_ans`` and ``d_ans`` (the answer,
    whether it matches ``q``'s, or the error and its node) and return the steps (see
    :func:`explain`)."""
    reasoner = pipeline.MODELS[model].make_reasoner(onto, threshold=threshold)  # the model's own (a PNSVQA)
    p_trace, p_conf, p_res, p_err = _run_probabilistic(reasoner.executor, program, lik)
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
    return [{"index": i, "function": n.function, "value": n.value, "inputs": list(n.inputs), "token": n.token(),
             "type": types[i],
             "pnsvqa": _prob_step(p_trace, p_conf, i, types[i], p_err, onto),
             "nsvqa": _det_step(d_trace, i, types[i], d_err, keep, scene, onto)}
            for i, n in enumerate(program.nodes)]


def _program(q: Mapping, qi: int, qpath: Path, prog_path: Path, n_questions: int,
             gt_programs: bool) -> tuple[Program | None, str, str | None]:
    """(program or None, where it came from, why there is none / it is malformed)."""
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
        words = [attrs[a]["value"] for a in ATTR_ORDER if a in attrs and not (a == "texture" and
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



def _top_values(dist: Mapping[Any, float], k: int) -> list[list]:
    items = sorted(((str(v), float(p)) for v, p in dist.items()), key=lambda x: (-x[1], x[0]))
    return [list(x) for x in items[:k]]


def _f(x) -> float | None:
    return None if x is None else float(x)
