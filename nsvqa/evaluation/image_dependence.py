"""The image-shuffle test: how much of a model's accuracy comes from the image it is shown.

Every question of a test split is paired with another image of the same split: the images the
split's questions are about (their ``image_index``) are permuted by a seeded *derangement* (no
image keeps its place, :func:`image_derangement`), and each question is asked of the image its
own image maps to, with its own answer kept (:func:`shuffled_questions`). A model that answers
from the question alone scores the same on both; a model that reads the image falls toward the
question-only level. *Image dependence* is accuracy minus shuffled accuracy on the same questions
(:func:`image_dependence`), with a 95% paired bootstrap interval over the questions. Fractions
here, as everywhere in :mod:`nsvqa.evaluation`; reports show points (x 100).

The experiment writes the shuffled predictions (:func:`orchestration.experiment.write_shuffled_predictions`)
from a view of the test variant whose questions file is :func:`shuffled_questions`' output.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np

from nsvqa.artifacts.predictions import Prediction
from nsvqa.artifacts.questions import QuestionsFile
from nsvqa.evaluation.resampling import N_BOOT, paired_replicates, percentile_interval

#: Seed of the derangement unless one is named (the same pairing for every model of a variant).
SHUFFLE_SEED = 0


def image_derangement(images: Iterable[int], seed: int = SHUFFLE_SEED) -> dict[int, int]:
    """A seeded permutation of the distinct ``images`` (image indices) with no fixed point:
    image -> the image its questions are asked of. Uniform over derangements (a permutation drawn
    by numpy's ``default_rng(seed)`` until it has no fixed point); the same images and seed give
    the same pairing on every machine.

    Raises:
        ValueError: fewer than two distinct images (nothing to pair with).
    """
    ids = sorted(set(int(i) for i in images))
    if len(ids) < 2:
        raise ValueError(f"image shuffle: {len(ids)} distinct image(s); at least 2 are needed to pair a question "
                         f"with another image")
    rng = np.random.default_rng(seed)
    n = len(ids)
    while True:
        perm = rng.permutation(n)
        if not (perm == np.arange(n)).any():
            return {ids[i]: ids[int(perm[i])] for i in range(n)}


def shuffled_questions(questions: QuestionsFile, seed: int = SHUFFLE_SEED) -> tuple[QuestionsFile, dict[int, int]]:
    """``questions`` with each record's ``image_index`` and ``image_filename`` replaced by those of
    the image :func:`image_derangement` maps its image to (every other field, the answer included,
    kept), and that mapping.

    Raises:
        ValueError: a question without an integer ``image_index`` (named by file and position), or
            one image index with two file names; fewer than two images.
    """
    names: dict[int, str | None] = {}
    for q in questions:
        if q.image_index is None:
            raise ValueError(f"{q.where or 'question ' + str(q.index)}, field 'image_index': needed by the image "
                             f"shuffle")
        if names.setdefault(q.image_index, q.image_filename) != q.image_filename:
            raise ValueError(f"{q.where}, field 'image_filename': image {q.image_index} is named both "
                             f"{names[q.image_index]!r} and {q.image_filename!r}")
    pairing = image_derangement(names, seed)
    out = []
    for q in questions:
        j = pairing[q.image_index]
        record = dict(q.record) | {"image_index": j}
        if q.image_filename is not None or "image_filename" in q.record:
            record["image_filename"] = names[j]
        out.append(replace(q, image_index=j, image_filename=names[j], record=record))
    return QuestionsFile(questions.info, tuple(out), questions.path), pairing


def image_dependence(predictions: Sequence[Prediction], shuffled: Sequence[Prediction], *,
                     n_boot: int = N_BOOT, seed: int = 0) -> dict | None:
    """Accuracy on the questions' own images minus accuracy on the shuffled images, over the
    questions both hold (matched by ``question_index``; a guess counts when it hits, as the
    study's accuracy): :func:`runs_image_dependence` of one run.

    Returns ``{"n", "accuracy", "shuffled_accuracy", "dependence", "ci95": [lo, hi], "runs": 1}``
    (fractions; ``ci95`` the 95% percentile interval of the paired bootstrap over the questions'
    images (:mod:`nsvqa.evaluation.resampling`), None when undefined), or None when no question is
    shared.
    """
    return runs_image_dependence([(predictions, shuffled)], n_boot=n_boot, seed=seed)


def runs_image_dependence(runs: Sequence[tuple[Sequence[Prediction], Sequence[Prediction]]], *,
                          n_boot: int = N_BOOT, seed: int = 0) -> dict | None:
    """:func:`image_dependence` over several training runs (seeds) of one model, each given as
    (its predictions, its shuffled predictions) on one test split: the mean over the runs, with
    the study's two-level paired bootstrap (:func:`~nsvqa.evaluation.resampling.paired_replicates`:
    a replicate draws the runs, then the images; run i's shuffled answers are paired with run i's
    and counted at their question's own image, so that one image draw weighs both). Over the
    questions that every run holds in both. Returns as :func:`image_dependence`, ``"runs"`` the
    number of runs; None when no question is shared or ``runs`` is empty.
    """
    own, other = [], []
    for predictions, shuffled in runs:
        by_q = {p.question_index: p for p in shuffled}
        kept = [p for p in predictions if p.question_index in by_q]
        own.append(kept)
        other.append([replace(by_q[p.question_index], image_index=p.image_index, question_hash=p.question_hash)
                      for p in kept])
    got = paired_replicates(own, other, lambda p: p.correct, n_boot=n_boot, seed=seed) if own else None
    if got is None:
        return None
    point, a, b = got
    return {"n": point["n"], "accuracy": point["acc_a"], "shuffled_accuracy": point["acc_b"],
            "dependence": point["acc_a"] - point["acc_b"], "ci95": percentile_interval(a - b), "runs": len(own)}


__all__ = ["SHUFFLE_SEED", "image_derangement", "shuffled_questions", "image_dependence", "runs_image_dependence"]
