"""NSCL's answers and scores: answering a split, QA accuracy, concept accuracy."""
from __future__ import annotations

from typing import Any, Mapping

import torch
from tqdm import tqdm

from executors.ontology import Ontology

from baselines.nscl.data import NSCLImages, NSCLSplit, collate_nscl_images
from baselines.nscl.executor import SoftExecutor
from baselines.nscl.network import NSCLNet
from nsvqa.training.data import StepLoader
from nsvqa.training.engine import evaluating
from nsvqa.training.sampling import SequentialBatches


def answer_all(net: NSCLNet, executor: SoftExecutor, data: NSCLSplit, device: torch.device, *,
               images_per_batch: int = 32, progress: bool = False, desc: str = "nscl") -> list[tuple[str, float] | None]:
    """Per question: (most probable answer, its probability), or None when the question has no
    usable program or its image no box."""
    by_image: dict[int, list[int]] = {}
    for k, q in enumerate(data.questions):
        by_image.setdefault(q.image_row, []).append(k)
    out: list[tuple[str, float] | None] = [None] * len(data.questions)
    batches = StepLoader(NSCLImages(data), collate_nscl_images, SequentialBatches(sorted(by_image), images_per_batch),
                         device=device)
    with evaluating(net):
        for b in tqdm(batches, desc=desc, disable=not progress):
            for row, scene in zip(b.indices, net(b.data["images"], b.data["boxes"])):
                for k in by_image[row]:
                    q = data.questions[k]
                    if q.program is None or scene["n"] == 0:
                        continue
                    labels, probs = executor.run(q.program, q.types, scene)
                    # several values may share an answer string: sum them
                    agg: dict[str, float] = {}
                    for a, p in zip(labels, probs.tolist()):
                        agg[a] = agg.get(a, 0.0) + p
                    best = max(agg, key=agg.get)
                    out[k] = (best, min(1.0, max(0.0, agg[best])))
    return out


def accuracy(net: NSCLNet, executor: SoftExecutor, data: NSCLSplit, device: torch.device) -> float:
    """Share of questions answered right (no usable program or no box counts wrong)."""
    if not data.questions:
        return float("nan")
    got = answer_all(net, executor, data, device)
    return sum(1 for g, q in zip(got, data.questions) if g is not None and g[0] == q.answer) / len(got)


def concept_accuracy(net: NSCLNet, data: NSCLSplit, scenes: Mapping[str, Any], onto: Ontology,
                     device: torch.device, images_per_batch: int = 32) -> dict[str, float]:
    """Per attribute, the share of objects whose most similar concept is their true value.

    ``data`` must hold the ground-truth boxes (:func:`load_split` without ``boxes``), so that box
    ``i`` of an image is object ``i`` of ``scenes[image file]`` (a
    :class:`executors.scene.SymbolicScene`). NSCL learns its concepts from answers alone; this is
    how well they name the objects (the NSCL paper's concept classification accuracy).
    """
    hits = {a: 0 for a in net.attributes}
    total = 0
    with evaluating(net):
        for b in StepLoader(NSCLImages(data), collate_nscl_images, SequentialBatches(len(data.files), images_per_batch),
                            device=device):
            for row, scene in zip(b.indices, net(b.data["images"], b.data["boxes"])):
                objects = scenes[data.files[row]].objects
                if len(objects) != scene["n"]:
                    raise ValueError(f"image {data.files[row]!r}: {scene['n']} boxes but {len(objects)} objects")
                total += len(objects)
                for a in net.attributes:
                    values = onto.scene_values(a)
                    for o, k in zip(objects, scene["attributes"][a].argmax(-1).tolist()):
                        hits[a] += values[k] == o[a]
    return {a: h / total if total else float("nan") for a, h in hits.items()}
