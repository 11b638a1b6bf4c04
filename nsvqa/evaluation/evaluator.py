"""The whole evaluation as JSON: everything reported about one (model, train, test) cell over its
runs (:func:`evaluate_cell`), the questions the test variants of a factor share
(:func:`shared_questions`), and :func:`evaluate`, which puts cells, per-factor matrices and RDs and
the default paired comparisons into one report (rendered by :mod:`nsvqa.evaluation.report`).
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from nsvqa.artifacts.predictions import QUESTION_TYPES, CellKey, Prediction
from nsvqa.evaluation.accuracies import (METRICS, ConceptSplit, accuracy, accuracy_by_type, head_tail_accuracy,
                                         id_ood_accuracy)
from nsvqa.evaluation.comparison import default_comparisons, paired_comparison, rd_bootstrap
from nsvqa.evaluation.resampling import N_BOOT, bound_precision, percentile_interval
from nsvqa.evaluation.degrade import accuracy_matrix, factor_layout, factor_relative_degrade
from nsvqa.evaluation.reliability import calibration
from nsvqa.generation.variants import FACTORS, factors as catalogue


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, None
    return m, math.sqrt(sum((x - m) ** 2 for x in values) / (len(values) - 1))


def evaluate_cell(runs: Sequence[Sequence[Prediction]], *, metric: str = "accuracy", n_bins: int = 10,
                  concept_split: ConceptSplit | None = None) -> dict:
    """Everything reported about one (model, train, test) cell, as JSON.

    Args:
        runs: the predictions of each run (seed) of the experiment.
        metric: which accuracy the cell's ``value`` (the matrix entry) is.
        n_bins: bins of the reliability diagram.
        concept_split: head/tail concepts, for cells of the concept-distribution factor.

    ``value`` is the mean over runs of the metric, ``std`` its sample standard deviation (None for
    one run); the other statistics pool the predictions of all runs.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; valid: {list(METRICS)}")
    per_run = [accuracy(r) for r in runs]
    values = [a.metric(metric) for a in per_run if a.n]
    mean, std = _mean_std(values)
    pooled = [p for r in runs for p in r]
    calib = calibration(pooled, n_bins) if pooled else None
    ido = id_ood_accuracy(pooled)
    return {
        "value": mean, "std": std, "n_runs": len(runs),
        "per_run": [a.to_json() for a in per_run],
        "overall": accuracy(pooled).to_json(),
        "by_type": {t: a.to_json() for t, a in accuracy_by_type(pooled).items()},
        "head_tail": ({k: a.to_json() for k, a in head_tail_accuracy(pooled, concept_split).items()}
                      if concept_split is not None else None),
        "id_ood": {k: a.to_json() for k, a in ido.items()} if ido is not None else None,
        "calibration": calib.to_json() if calib is not None else None,
    }


def shared_questions(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]],
                     tests: Sequence[str]) -> tuple[set[str], dict[str, int]] | None:
    """The ``question_hash`` values that every test variant of ``tests`` with predictions asks
    (the same question intents on the same images), and the number of distinct questions of each.

    None when there is nothing to restrict: a prediction without a hash, fewer than two test
    variants with predictions, no question in common, or every variant asking exactly the common
    ones (the visual levels of one seed ask one question set: no restriction there).
    """
    per_test: dict[str, set[str]] = {}
    for key, runs in cells.items():
        if key.test not in tests:
            continue
        for run in runs:
            hashes = {p.question_hash for p in run}
            if None in hashes:
                return None
            per_test.setdefault(key.test, set()).update(hashes)  # type: ignore[arg-type]
    if len(per_test) < 2:
        return None
    common = set.intersection(*per_test.values())
    if not common or all(h == common for h in per_test.values()):
        return None
    return common, {t: len(per_test[t]) for t in tests if t in per_test}


def _factors_of_models(cells: Iterable[CellKey], factors: Mapping[str, tuple[Sequence[str], Sequence[str]]]
                       ) -> dict[str, set[str]]:
    """Per model, the factors it is listed under: those where it has a cell that no other factor's
    matrix holds (a model run on the redundancy factor is not listed under every factor for its
    ``mid`` / ``mid`` cell); a model whose cells are all shared between factors (only ``mid`` /
    ``mid``) is listed under every factor that holds one of them."""
    grid = {f: {(t, s) for t in trains for s in tests} for f, (trains, tests) in factors.items()}
    unique = {f: g - set().union(*(o for h, o in grid.items() if h != f)) for f, g in grid.items()}
    have: dict[str, set[tuple[str, str]]] = {}
    for k in cells:
        have.setdefault(k.model, set()).add((k.train, k.test))
    out = {}
    for model, got in have.items():
        own = {f for f in factors if got & unique[f]}
        out[model] = own or {f for f in factors if got & grid[f]}
    return out


def evaluate(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], *, metric: str = "accuracy",
             n_bins: int = 10, allow_partial: bool = False, concept_split: ConceptSplit | None = None,
             files: Mapping[CellKey, Sequence[str]] | None = None,
             factors: Mapping[str, tuple[Sequence[str], Sequence[str]]] | None = None,
             n_boot: int = N_BOOT, rd_pairs: Sequence[tuple[str, str]] | None = None) -> dict:
    """The whole report as JSON: every cell, and per factor the matrix and RD of every model with
    the RD's 95% bootstrap interval over test questions (``rd.ci95``,
    :func:`~nsvqa.evaluation.comparison.rd_bootstrap`) and the RD differences of ``rd_pairs`` with
    theirs (``rd_comparisons``); where the factor's test variants ask different questions
    (:func:`shared_questions`), also the matrix and RD of every model on the questions they share
    (``shared``).

    Args:
        cells: (model, train, test) -> the predictions of each run.
        metric, n_bins: see :func:`evaluate_cell`.
        allow_partial: RD averaged over the inputs that exist (marked ``partial``).
        concept_split: head/tail concepts (cells of the distribution factor get head/tail accuracy).
        files: the predictions files of each cell (recorded in the report).
        factors: factor -> (training variants, test variants); default :func:`factor_layout` of
            every factor of the catalogue.
        n_boot: bootstrap replicates of the RD intervals (0: none).
        rd_pairs: (model A, model B) pairs whose RD difference A - B gets an interval; default
            :func:`~nsvqa.evaluation.comparison.default_comparisons`.
    """
    if factors is None:
        factors = {f: factor_layout(f) for f in FACTORS}
    head_tail = [f for f, fac in catalogue().items() if fac.rd == "head_tail"]
    dist_tests = {v for f in head_tail for v in factors.get(f, ((), ()))[1]}
    dist_trains = {v for f in head_tail for v in factors.get(f, ((), ()))[0]}
    order = {v: i for i, v in enumerate(dict.fromkeys(v for _, tests in factors.values() for v in tests))}

    def rank(key: CellKey) -> tuple:  # model, then variants in factor order (unknown ones last)
        return (key.model, order.get(key.train, len(order)), key.train, order.get(key.test, len(order)), key.test)

    cell_out = []
    values: dict[CellKey, float | None] = {}
    for key in sorted(cells, key=rank):
        in_dist = key.train in dist_trains and key.test in dist_tests
        res = evaluate_cell(cells[key], metric=metric, n_bins=n_bins,
                            concept_split=concept_split if in_dist else None)
        values[key] = res["value"]
        cell_out.append({"model": key.model, "train": key.train, "test": key.test,
                         "files": [str(f) for f in (files or {}).get(key, ())], **res})
    models = sorted({k.model for k in cells})
    comparisons = []
    for ma, mb in default_comparisons(models):
        for key in sorted(cells, key=rank):
            other = CellKey(mb, key.train, key.test)
            if key.model == ma and other in cells:
                res = paired_comparison(cells[key], cells[other])
                if res is not None:
                    comparisons.append({"a": ma, "b": mb, "train": key.train, "test": key.test, **res})
    factor_out = {}
    listed = _factors_of_models(cells, factors)
    for factor, (trains, tests) in factors.items():
        fac = catalogue().get(factor)
        shared = shared_questions(cells, tests) if not (fac is not None and fac.tested_on_itself) else None
        per_model = {}
        for model in models:
            if factor not in listed[model]:
                continue  # not run on this factor, or only on cells it shares with the factors the model ran
            acc = {(k.train, k.test): v for k, v in values.items() if k.model == model}
            per_model[model] = {
                "matrix": accuracy_matrix(acc, trains, tests),
                "std": accuracy_matrix({(c["train"], c["test"]): c["std"] for c in cell_out
                                        if c["model"] == model}, trains, tests),
                "rd": factor_relative_degrade(factor, acc, trains, tests, allow_partial=allow_partial).to_json(),
            }
            if shared is not None:
                common = shared[0]
                sacc = {(k.train, k.test): evaluate_cell([[p for p in run if p.question_hash in common]
                                                          for run in cells[k]], metric=metric, n_bins=n_bins)["value"]
                        for k in cells if k.model == model and k.train in trains and k.test in tests}
                per_model[model]["shared"] = {
                    "matrix": accuracy_matrix(sacc, trains, tests),
                    "rd": factor_relative_degrade(factor, sacc, trains, tests, allow_partial=allow_partial).to_json()}
        rd_comparisons = []
        have_rd = [m for m, v in per_model.items() if v["rd"]["value"] is not None]
        if n_boot and have_rd:
            reps = rd_bootstrap(cells, factor, trains, tests, have_rd, metric=metric, allow_partial=allow_partial,
                                n_boot=n_boot)
            for m in have_rd:
                per_model[m]["rd"]["ci95"] = percentile_interval(reps[m])
                per_model[m]["rd"]["precision"] = bound_precision(reps[m])
            for a, b in (default_comparisons(models) if rd_pairs is None else rd_pairs):
                if a in reps and b in reps:
                    rd_comparisons.append({"a": a, "b": b, "diff": per_model[a]["rd"]["value"] - per_model[b]["rd"]["value"],
                                           "ci95": percentile_interval(reps[a] - reps[b]),
                                           "precision": bound_precision(reps[a] - reps[b])})
        factor_out[factor] = {"train_variants": list(trains), "test_variants": list(tests), "models": per_model,
                              "rd_comparisons": rd_comparisons, "n_boot": n_boot,
                              "shared_questions": None if shared is None else
                              {"n": len(shared[0]), "per_test": shared[1]}}
    return {"format_version": 1, "metric": metric, "n_bins": n_bins, "allow_partial": allow_partial,
            "question_types": list(QUESTION_TYPES),
            "concept_split": ({"head": {a: sorted(v) for a, v in concept_split.head.items()},
                               "tail": {a: sorted(v) for a, v in concept_split.tail.items()}}
                              if concept_split is not None else None),
            "cells": cell_out, "factors": factor_out, "comparisons": comparisons}
