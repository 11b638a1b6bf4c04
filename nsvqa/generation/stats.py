"""Statistics of a generated variant: concepts vs the variant's target, and question statistics."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from executors.io import read_json
from executors import DeterministicExecutor, Program, SymbolicScene, load_ontology
from executors.dsl import SIGNATURES

from nsvqa.generation.sampler import ConceptWeights
from nsvqa.generation.variants import Variant


def target_frequencies(weights: ConceptWeights, onto) -> dict[str, np.ndarray]:
    """Expected frequency of each shape, color and material (color marginalised over shapes
    when a shape -> color matrix is given)."""
    w = weights.validated(onto)
    color = w.shape @ w.shape_color if w.shape_color is not None else w.color
    return {"shape": w.shape, "color": color, "material": w.material}


def concept_stats(scenes: list[dict], weights: ConceptWeights, onto) -> dict[str, Any]:
    """Observed counts per concept, the target shares and a chi-square goodness-of-fit p-value."""
    out: dict[str, Any] = {}
    target = target_frequencies(weights, onto)
    objs = [o for s in scenes for o in s["objects"]]
    for attr in ("shape", "color", "material", "size"):
        vals = onto.scene_values(attr)  # what the weights range over
        counts = np.array([sum(o[attr] == v for o in objs) for v in vals], dtype=float)
        t = target.get(attr, np.full(len(vals), 1.0 / len(vals)))
        keep = t > 0
        p = None
        if counts.sum() > 0 and keep.sum() > 1:
            p = float(stats.chisquare(counts[keep], t[keep] / t[keep].sum() * counts[keep].sum()).pvalue)
        out[attr] = {"counts": dict(zip(vals, counts.astype(int).tolist())),
                     "target": dict(zip(vals, np.round(t, 6).tolist())),
                     "outside_target": int(counts[~keep].sum()), "chi2_p": p}
    out["objects_per_scene"] = dict(sorted(Counter(len(s["objects"]) for s in scenes).items()))
    return out


def redundant_filters(program: Program, scene: SymbolicScene, ex: DeterministicExecutor) -> tuple[int, int]:
    """(object, part) filter nodes whose output equals their input on this scene.

    Part filters are counted apart: the executor sees only a scene's listed (recoloured) parts,
    so a part filter that picks one part out of the image can look redundant to it.
    """
    trace = ex.run(program, scene).trace
    obj = part = 0
    for i, node in enumerate(program.nodes):
        kind = SIGNATURES[node.function].kind
        if kind in ("filter", "partfilter", "partfilter_partname") and trace[i] == trace[node.inputs[0]]:
            if kind == "filter":
                obj += 1
            else:
                part += 1
    return obj, part


def question_stats(questions: list[dict], scenes: list[dict], onto) -> dict[str, Any]:
    """Questions per family, largest answer share per question type, program length, redundancy."""
    ex = DeterministicExecutor(onto)
    sym = {s["image_index"]: SymbolicScene.from_json(s, onto) for s in scenes}
    fam = Counter(f"{q.get('template_filename', '?')}:{q.get('question_family_index')}" for q in questions)
    by_type: dict[str, Counter] = {}
    lengths, red = [], []
    for q in questions:
        prog = Program.from_json(q["program"], onto)
        by_type.setdefault(prog.nodes[-1].function, Counter())[str(q["answer"])] += 1
        lengths.append(len(prog))
        red.append(redundant_filters(prog, sym[q["image_index"]], ex))
    kinds = Counter("part" if str(q.get("template_filename", "")).startswith("part") else "object" for q in questions)
    n_images = max(1, len(scenes))
    return {
        "n": len(questions), "per_family": dict(sorted(fam.items())),
        "per_image": {k: round(kinds[k] / n_images, 3) for k in ("object", "part")},
        "largest_answer_share": {t: round(max(c.values()) / sum(c.values()), 4) for t, c in sorted(by_type.items())},
        "program_length_mean": float(np.mean(lengths)) if lengths else None,
        "redundant_filters_per_question": float(np.mean([a for a, _ in red])) if red else None,
        "redundant_part_filters_per_question": float(np.mean([b for _, b in red])) if red else None,
    }


def variant_stats(folder: Path, variant: Variant) -> dict[str, Any]:
    """Statistics of every generated split of ``folder`` (``ROOT/VARIANT``)."""
    onto = load_ontology("superclevr")
    out: dict[str, Any] = {}
    for split in variant.available_splits:
        sf = folder / "scenes" / f"{split}_scenes.json"
        if not sf.exists():
            continue
        scenes = read_json(sf)["scenes"]
        entry = {"images": len(scenes),
                 "concepts": concept_stats(scenes, variant.scene_params(split, onto).weights, onto)}
        qf = folder / "questions" / f"{split}_questions.json"
        if qf.exists():
            entry["questions"] = question_stats(read_json(qf)["questions"], scenes, onto)
        out[split] = entry
    return out


def question_triples(questions: list[dict]) -> list[tuple]:
    """(image index, question text, program) of each question, in file order."""
    return [(q.get("image_index"), q.get("question"), json.dumps(q.get("program"), sort_keys=True)) for q in questions]


def shared_question_sets(folders: list[Path], split: str) -> dict[str, Any]:
    """How far the ``split`` questions of several variant folders (the visual levels of one seed:
    ``easy``, ``mid``, ``hard``) are one question set: the count per folder, how many (image,
    question, program) triples every folder holds at the same position, whether the files are that
    set exactly, and how many answers differ from the first folder's."""
    qs = [read_json((f / "questions" / f"{split}_questions.json"))["questions"] for f in folders]
    triples = [question_triples(q) for q in qs]
    shared = sum(1 for row in zip(*triples) if all(t == row[0] for t in row))
    answers = [sum(1 for a, b in zip(qs[0], q) if str(a.get("answer")) != str(b.get("answer"))) for q in qs[1:]]
    return {"folders": [f.name for f in folders], "questions": [len(q) for q in qs], "shared": shared,
            "identical": all(t == triples[0] for t in triples), "answers_differing_from_first": answers}
