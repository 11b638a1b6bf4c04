"""Metrics over predictions files: accuracy, the train x test matrix, Relative Degrade, calibration.

Relative Degrade (Li et al., CVPR 2023, "Super-CLEVR", Sec. 5.2 and its footnote 1; restated in
docs/evaluation.md, "Relative Degrade"):

* visual complexity, question redundancy, concept compositionality: a model trained on variant
  ``t`` scores ``a = acc(t, t)`` in domain and ``b = acc(t, s)`` on another variant ``s`` of the
  factor; ``RD(t, s) = (a - b) / a``. A trained model's RD is the mean over its shifted test
  variants; the factor's RD is the mean over the trained models (one per training variant).
* concept distribution: ``RD(t) = ((acc(t, head) - acc(t, tail)) + (acc(t, long) - acc(t, oppo))) / 2
  / acc(t, bal)``, averaged over the training variants ``t`` (bal, slt, long). The paper does not
  say which trained models enter this formula; taking every training variant of the factor, as
  for the other factors, is this module's choice (the per-model values are reported too).

Missing inputs are never read as zero: an RD whose inputs are missing is None with the reason.
Lower RD = more robust. Accuracies are fractions in [0, 1]; so are RDs (reports show percent).

Expected calibration error (Naeini et al., AAAI 2015; Guo et al., ICML 2017): predictions with a
probability are put into ``M`` equal-width confidence bins ``[m/M, (m+1)/M)`` (the last one closed);
``ECE = sum_m |B_m| / n * |acc(B_m) - conf(B_m)|``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from nsvqa.artifacts.predictions import QUESTION_TYPES, CellKey, Prediction

#: Metrics a matrix and RD can be computed on (see :class:`Accuracy`).
METRICS = ("accuracy", "accuracy_no_guess")
#: The concept-distribution RD reads these test variants (docs/evaluation.md, "Relative Degrade";
#: the catalogue's ``roles`` of its ``head_tail`` factor, which :func:`factor_relative_degrade` passes).
DISTRIBUTION_RD_VARIANTS = {"head": "head", "tail": "tail", "long": "long", "oppo": "oppo", "bal": "bal"}
#: Attributes whose values are split into head and tail concepts (size stays uniform).
HEAD_TAIL_ATTRIBUTES = ("shape", "color", "material")


# ---------------------------------------------------------------------------- accuracy
@dataclass(frozen=True)
class Accuracy:
    """Counts of one set of predictions.

    Attributes:
        n: predictions.
        n_correct: correct predictions, guesses included.
        n_correct_no_guess: correct predictions that were not guesses.
        n_guessed, n_execution_error, n_invalid_program: flagged predictions.
    """

    n: int
    n_correct: int
    n_correct_no_guess: int
    n_guessed: int = 0
    n_execution_error: int = 0
    n_invalid_program: int = 0

    @property
    def accuracy(self) -> float | None:
        """Fraction correct, a guess that hit counting as correct (None when ``n == 0``)."""
        return self.n_correct / self.n if self.n else None

    @property
    def accuracy_no_guess(self) -> float | None:
        """Fraction correct without guesses: a guess counts as wrong (None when ``n == 0``)."""
        return self.n_correct_no_guess / self.n if self.n else None

    def metric(self, name: str) -> float | None:
        """``accuracy`` or ``accuracy_no_guess`` by name (ValueError lists the valid ones)."""
        if name not in METRICS:
            raise ValueError(f"unknown metric {name!r}; valid: {list(METRICS)}")
        return getattr(self, name)

    def to_json(self) -> dict:
        return {"n": self.n, "accuracy": self.accuracy, "accuracy_no_guess": self.accuracy_no_guess,
                "n_correct": self.n_correct, "n_guessed": self.n_guessed,
                "n_execution_error": self.n_execution_error, "n_invalid_program": self.n_invalid_program}


def accuracy(predictions: Iterable[Prediction]) -> Accuracy:
    """Accuracy with and without guesses, and the error counts, of ``predictions``."""
    n = ok = ok_ng = g = ee = ip = 0
    for p in predictions:
        n += 1
        c = p.correct
        ok += c
        ok_ng += c and not p.guessed
        g += p.guessed
        ee += p.execution_error
        ip += p.invalid_program
    return Accuracy(n, ok, ok_ng, g, ee, ip)


def accuracy_by_type(predictions: Iterable[Prediction]) -> dict[str, Accuracy]:
    """Accuracy per question type, for the types present, in :data:`QUESTION_TYPES` order."""
    groups: dict[str, list[Prediction]] = {}
    for p in predictions:
        groups.setdefault(p.question_type, []).append(p)
    return {t: accuracy(groups[t]) for t in QUESTION_TYPES if t in groups}


# ---------------------------------------------------------------------------- head / tail
@dataclass(frozen=True)
class ConceptSplit:
    """Head (frequent) and tail (rare) values per attribute of the long-tailed distribution.

    Attributes:
        head, tail: attribute -> values; a shape category belongs to a side when all its shapes do.
            A value in neither (a category that mixes sides, a value on both) is unclassified.
    """

    head: Mapping[str, frozenset[str]]
    tail: Mapping[str, frozenset[str]]

    def side(self, concept: str) -> str | None:
        """``"head"``, ``"tail"`` or None (an attribute without a split, or a mixed category) of
        ``"<attribute>=<value>"``; part attributes (``part_color=red``) count as the attribute."""
        attr, _, value = concept.partition("=")
        attr = attr[5:] if attr.startswith("part_") else attr
        if value in self.head.get(attr, ()):
            return "head"
        if value in self.tail.get(attr, ()):
            return "tail"
        return None

    def group(self, concepts: Iterable[str]) -> str | None:
        """A question's group: ``"tail"`` when it mentions a tail concept, ``"head"`` when every
        concept it mentions of a split attribute is a head concept (at least one), else None."""
        sides = [self.side(c) for c in concepts if self._split_attr(c)]
        if "tail" in sides:
            return "tail"
        if sides and all(s == "head" for s in sides):
            return "head"
        return None

    def _split_attr(self, concept: str) -> bool:
        attr = concept.partition("=")[0]
        attr = attr[5:] if attr.startswith("part_") else attr
        return attr in self.head or attr in self.tail

    @classmethod
    def from_weights(cls, head: Mapping[str, Mapping[str, float]], tail: Mapping[str, Mapping[str, float]],
                     categories: Mapping[str, Sequence[str]] | None = None) -> "ConceptSplit":
        """From the concept weights of the head and tail variants: a value is on a side when its
        weight there is > 0 and on the other side is 0. ``categories`` (category -> shapes) adds
        the categories whose shapes are all on one side."""
        def sides(w):
            return {a: {v for v, x in w.get(a, {}).items() if x > 0} for a in HEAD_TAIL_ATTRIBUTES if a in w}

        h, t = sides(head), sides(tail)
        # a value with weight on both sides (the middle shape of 21, ``double``, in the official
        # head/tail weights) is on neither side
        for a in set(h) & set(t):
            both = h[a] & t[a]
            h[a] -= both
            t[a] -= both
        weighed = set(head.get("shape", {})) | set(tail.get("shape", {}))
        for cat, shapes in (categories or {}).items():
            # a shape neither variant weighs (Super-CLEVR's addi, which no scene holds) decides no side
            shapes = {s for s in shapes if s in weighed}
            if not shapes:
                continue
            if "shape" in h and set(shapes) <= h["shape"]:
                h["shape"].add(cat)
            elif "shape" in t and set(shapes) <= t["shape"]:
                t["shape"].add(cat)
        return cls({a: frozenset(v) for a, v in h.items()}, {a: frozenset(v) for a, v in t.items()})

    @classmethod
    def from_catalogue(cls, head: str = "head", tail: str = "tail") -> "ConceptSplit":
        """The split of the variant catalogue (``data/variants/head.json`` and ``tail.json``)."""
        from executors import load_ontology

        from nsvqa.generation.variants import load_variant

        hv, tv = load_variant(head), load_variant(tail)
        return cls.from_weights(hv.scene.get("weights", {}), tv.scene.get("weights", {}),
                                load_ontology("superclevr").categories)


def head_tail_accuracy(predictions: Iterable[Prediction], split: ConceptSplit) -> dict[str, Accuracy]:
    """Accuracy on questions about head concepts and about tail concepts (:meth:`ConceptSplit.group`);
    questions in neither group are counted under ``"other"``."""
    groups: dict[str, list[Prediction]] = {"head": [], "tail": [], "other": []}
    for p in predictions:
        groups[split.group(p.concepts) or "other"].append(p)
    return {k: accuracy(v) for k, v in groups.items()}


def id_ood_accuracy(predictions: Iterable[Prediction]) -> dict[str, Accuracy] | None:
    """Accuracy on questions about seen (``id``) and held-out (``ood``) concepts of a systematic
    split, from the ``ood`` flags; None when no prediction carries one."""
    groups: dict[str, list[Prediction]] = {"id": [], "ood": []}
    for p in predictions:
        if p.ood is not None:
            groups["ood" if p.ood else "id"].append(p)
    if not groups["id"] and not groups["ood"]:
        return None
    return {k: accuracy(v) for k, v in groups.items()}


# ---------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class ReliabilityBin:
    """One confidence bin ``[lower, upper)`` (the last one closed).

    Attributes:
        n: predictions in the bin; ``confidence`` and ``accuracy`` are their means (None if empty).
    """

    lower: float
    upper: float
    n: int
    confidence: float | None
    accuracy: float | None

    def to_json(self) -> dict:
        return {"lower": self.lower, "upper": self.upper, "n": self.n, "confidence": self.confidence,
                "accuracy": self.accuracy}


def reliability_bins(probabilities: Sequence[float], correct: Sequence[bool], n_bins: int = 10) -> list[ReliabilityBin]:
    """Equal-width confidence bins over [0, 1].

    Args:
        probabilities: (N,) the probability of each prediction, in [0, 1].
        correct: (N,) whether each prediction is right.
        n_bins: number of bins M >= 1.

    Raises:
        ValueError: lengths differ, ``n_bins < 1`` or a probability outside [0, 1].
    """
    if len(probabilities) != len(correct):
        raise ValueError(f"{len(probabilities)} probabilities but {len(correct)} correctness flags")
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    conf = [0.0] * n_bins
    hits = [0] * n_bins
    count = [0] * n_bins
    for p, c in zip(probabilities, correct):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probability {p!r} outside [0, 1]")
        b = min(int(p * n_bins), n_bins - 1)
        conf[b] += p
        hits[b] += bool(c)
        count[b] += 1
    return [ReliabilityBin(m / n_bins, (m + 1) / n_bins, count[m],
                           conf[m] / count[m] if count[m] else None,
                           hits[m] / count[m] if count[m] else None) for m in range(n_bins)]


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> float | None:
    """``sum_m |B_m| / n * |acc(B_m) - conf(B_m)|`` over the bins (None when they are empty)."""
    n = sum(b.n for b in bins)
    if n == 0:
        return None
    return sum(b.n / n * abs(b.accuracy - b.confidence) for b in bins if b.n)


@dataclass(frozen=True)
class Calibration:
    """Calibration of the predictions that carry a probability.

    Attributes:
        n: predictions with a probability; ``coverage`` = n / all predictions.
        ece: expected calibration error; ``bins``: the reliability diagram.
    """

    n: int
    coverage: float
    ece: float | None
    bins: tuple[ReliabilityBin, ...]

    def to_json(self) -> dict:
        return {"n": self.n, "coverage": self.coverage, "ece": self.ece, "n_bins": len(self.bins),
                "bins": [b.to_json() for b in self.bins]}


def calibration(predictions: Sequence[Prediction], n_bins: int = 10) -> Calibration | None:
    """ECE and reliability bins over the predictions with a probability; None when none has one
    (a model without probabilities)."""
    with_p = [p for p in predictions if p.probability is not None]
    if not with_p:
        return None
    bins = reliability_bins([p.probability for p in with_p], [p.correct for p in with_p], n_bins)
    return Calibration(len(with_p), len(with_p) / len(predictions), expected_calibration_error(bins), tuple(bins))


# ---------------------------------------------------------------------------- matrix and RD
def accuracy_matrix(acc: Mapping[tuple[str, str], float | None], train_variants: Sequence[str],
                    test_variants: Sequence[str]) -> list[list[float | None]]:
    """Rows = training variants, columns = test variants (the layout of the paper's Table 1);
    a cell absent from ``acc`` (keyed ``(train, test)``) is None."""
    return [[acc.get((t, s)) for s in test_variants] for t in train_variants]


@dataclass(frozen=True)
class RelativeDegrade:
    """An RD value, or None with the reason it could not be computed.

    Attributes:
        value: the RD as a fraction (0.12 = 12 %), or None.
        reason: why ``value`` is None, or a note on a partial average.
        per_train: training variant -> that trained model's RD (empty for a per-model entry).
        partial: averaged over only the inputs that exist (``allow_partial``).
    """

    value: float | None
    reason: str | None = None
    per_train: Mapping[str, "RelativeDegrade"] = field(default_factory=dict)
    partial: bool = False

    def to_json(self) -> dict:
        out: dict[str, Any] = {"value": self.value, "reason": self.reason, "partial": self.partial}
        if self.per_train:
            out["per_train"] = {t: r.to_json() for t, r in self.per_train.items()}
        return out


def _missing(acc: Mapping[tuple[str, str], float | None], cells: Iterable[tuple[str, str]]) -> list[str]:
    return [f"train {t} / test {s}" for t, s in cells if acc.get((t, s)) is None]


def relative_degrade(acc: Mapping[tuple[str, str], float | None], train_variants: Sequence[str],
                     test_variants: Sequence[str], *, allow_partial: bool = False) -> RelativeDegrade:
    """RD of a factor: mean over training variants ``t`` of the mean over shifted test variants
    ``s != t`` of ``(acc(t, t) - acc(t, s)) / acc(t, t)``.

    Args:
        acc: ``(train, test)`` -> accuracy; absent or None = not measured.
        train_variants: the variants models were trained on.
        test_variants: the variants of the factor they are tested on (``t`` included).
        allow_partial: average over what exists instead of answering None when a cell is missing.
    """
    per_train: dict[str, RelativeDegrade] = {}
    for t in train_variants:
        shifted = [s for s in test_variants if s != t]
        a = acc.get((t, t))
        if a is None:
            per_train[t] = RelativeDegrade(None, f"missing in-domain accuracy (train {t} / test {t})")
            continue
        if a == 0:
            per_train[t] = RelativeDegrade(None, f"in-domain accuracy of train {t} is 0 (RD divides by it)")
            continue
        missing = _missing(acc, [(t, s) for s in shifted])
        have = [s for s in shifted if acc.get((t, s)) is not None]
        if not have or (missing and not allow_partial):
            per_train[t] = RelativeDegrade(None, "missing " + ", ".join(missing) if missing
                                           else f"no shifted test variant for train {t}")
            continue
        value = sum((a - acc[(t, s)]) / a for s in have) / len(have)
        per_train[t] = RelativeDegrade(value, ("partial: missing " + ", ".join(missing)) if missing else None,
                                       partial=bool(missing))
    return _average(per_train, allow_partial)


def distribution_relative_degrade(acc: Mapping[tuple[str, str], float | None], train_variants: Sequence[str],
                                  *, allow_partial: bool = False,
                                  names: Mapping[str, str] = DISTRIBUTION_RD_VARIANTS) -> RelativeDegrade:
    """RD of the concept-distribution factor: for each training variant ``t``,
    ``((acc(t, head) - acc(t, tail)) + (acc(t, long) - acc(t, oppo))) / 2 / acc(t, bal)``, then the
    mean over ``t``. ``names`` maps the roles head, tail, long, oppo, bal to variant names."""
    per_train: dict[str, RelativeDegrade] = {}
    for t in train_variants:
        need = {role: (t, names[role]) for role in ("head", "tail", "long", "oppo", "bal")}
        missing = _missing(acc, need.values())
        if missing:
            per_train[t] = RelativeDegrade(None, "missing " + ", ".join(missing))
            continue
        v = {role: acc[cell] for role, cell in need.items()}
        if v["bal"] == 0:
            per_train[t] = RelativeDegrade(None, f"accuracy of train {t} on {names['bal']} is 0 (RD divides by it)")
            continue
        per_train[t] = RelativeDegrade(((v["head"] - v["tail"]) + (v["long"] - v["oppo"])) / 2 / v["bal"])
    return _average(per_train, allow_partial)


def _average(per_train: dict[str, RelativeDegrade], allow_partial: bool) -> RelativeDegrade:
    have = [r.value for r in per_train.values() if r.value is not None]
    bad = [f"train {t}: {r.reason}" for t, r in per_train.items() if r.value is None]
    if not per_train:
        return RelativeDegrade(None, "no training variant")
    if not have or (bad and not allow_partial):
        return RelativeDegrade(None, "; ".join(bad), per_train)
    partial = bool(bad) or any(r.partial for r in per_train.values())
    reason = ("partial: " + "; ".join(bad)) if bad else ("partial: some models miss test variants" if partial else None)
    return RelativeDegrade(sum(have) / len(have), reason, per_train, partial)


def factor_relative_degrade(factor: str, acc: Mapping[tuple[str, str], float | None],
                            train_variants: Sequence[str], test_variants: Sequence[str], *,
                            allow_partial: bool = False) -> RelativeDegrade:
    """RD of ``factor`` by the rule the catalogue gives it (docs/evaluation.md): the
    concept-distribution formula (``head_tail``: the distribution factor), none (the systematic
    splits: the paper defines RD for its four factors only; their ID/OOD accuracies are reported
    instead), or the plain one (also for a factor the catalogue does not list)."""
    from nsvqa.generation.variants import factors

    fac = factors().get(factor)
    if fac is not None and fac.rd == "head_tail":
        return distribution_relative_degrade(acc, train_variants, allow_partial=allow_partial, names=fac.roles)
    if fac is not None and fac.rd is None:
        return RelativeDegrade(None, f"RD is not defined for the {fac.title} (see ID vs OOD accuracy)")
    return relative_degrade(acc, train_variants, test_variants, allow_partial=allow_partial)


# ---------------------------------------------------------------------------- whole evaluation
def factor_layout(factor: str) -> tuple[list[str], list[str]]:
    """(training variants, test variants) of a factor from the variant catalogue: every variant
    is a test variant; the ones that are not test-only are training variants."""
    from nsvqa.generation.variants import FACTORS, load_variant

    try:
        variants = FACTORS[factor]
    except KeyError:
        raise KeyError(f"unknown factor {factor!r}; valid: {list(FACTORS)}") from None
    return [v for v in variants if not load_variant(v).test_only], list(variants)


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


def paired_comparison(a: Sequence[Sequence[Prediction]], b: Sequence[Sequence[Prediction]], *,
                      n_boot: int = 2000, seed: int = 0) -> dict | None:
    """Model A against model B on the same questions (run i of A paired with run i of B, questions
    matched by index; a guess counts when it hits).

    Returns ``{"n", "acc_a", "acc_b", "diff", "ci95": [lo, hi], "a_only", "b_only", "p_mcnemar"}``:
    accuracies, A - B, its 95% percentile bootstrap interval over questions, the questions only one
    model gets right, and the exact McNemar test's two-sided p-value (binomial on the discordant
    pairs, scipy); None when no question is shared.
    """
    import numpy as np
    from scipy.stats import binomtest

    ca, cb = [], []
    for ra, rb in zip(a, b):
        by_q = {p.question_index: p.correct for p in rb}
        for p in ra:
            if p.question_index in by_q:
                ca.append(p.correct)
                cb.append(by_q[p.question_index])
    if not ca:
        return None
    x, y = np.asarray(ca, dtype=float), np.asarray(cb, dtype=float)
    d = x - y
    rng = np.random.default_rng(seed)
    boots = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(1)
    a_only, b_only = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
    p = binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
    return {"n": len(d), "acc_a": float(x.mean()), "acc_b": float(y.mean()), "diff": float(d.mean()),
            "ci95": [float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))],
            "a_only": a_only, "b_only": b_only, "p_mcnemar": float(p)}


def default_comparisons(models: Sequence[str]) -> list[tuple[str, str]]:
    """Each P-NSVQA model against the NS-VQA model with the same program source (the same
    ``gt_programs`` option of its :class:`~nsvqa.models.ModelSpec`)."""
    from nsvqa.models import ModelSpec

    out = []
    for m in models:
        try:
            spec = ModelSpec.from_label(m)
        except ValueError:
            continue
        if spec.name.startswith("pnsvqa"):
            ns = ModelSpec("nsvqa", spec.gt_programs).label
            if ns in models:
                out.append((m, ns))
    return out


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


def evaluate(cells: Mapping[CellKey, Sequence[Sequence[Prediction]]], *, metric: str = "accuracy",
             n_bins: int = 10, allow_partial: bool = False, concept_split: ConceptSplit | None = None,
             files: Mapping[CellKey, Sequence[str]] | None = None,
             factors: Mapping[str, tuple[Sequence[str], Sequence[str]]] | None = None) -> dict:
    """The whole report as JSON: every cell, and per factor the matrix and RD of every model;
    where the factor's test variants ask different questions (:func:`shared_questions`), also the
    matrix and RD of every model on the questions they share (``shared``).

    Args:
        cells: (model, train, test) -> the predictions of each run.
        metric, n_bins: see :func:`evaluate_cell`.
        allow_partial: RD averaged over the inputs that exist (marked ``partial``).
        concept_split: head/tail concepts (cells of the distribution factor get head/tail accuracy).
        files: the predictions files of each cell (recorded in the report).
        factors: factor -> (training variants, test variants); default :func:`factor_layout` of
            every factor of the catalogue.
    """
    if factors is None:
        from nsvqa.generation.variants import FACTORS

        factors = {f: factor_layout(f) for f in FACTORS}
    from nsvqa.generation.variants import factors as catalogue

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
    for factor, (trains, tests) in factors.items():
        fac = catalogue().get(factor)
        shared = shared_questions(cells, tests) if not (fac is not None and fac.tested_on_itself) else None
        per_model = {}
        for model in models:
            acc = {(k.train, k.test): v for k, v in values.items() if k.model == model}
            if not any((t, s) in acc for t in trains for s in tests):
                continue  # the model was not run on this factor at all
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
        factor_out[factor] = {"train_variants": list(trains), "test_variants": list(tests), "models": per_model,
                              "shared_questions": None if shared is None else
                              {"n": len(shared[0]), "per_test": shared[1]}}
    return {"format_version": 1, "metric": metric, "n_bins": n_bins, "allow_partial": allow_partial,
            "question_types": list(QUESTION_TYPES),
            "concept_split": ({"head": {a: sorted(v) for a, v in concept_split.head.items()},
                               "tail": {a: sorted(v) for a, v in concept_split.tail.items()}}
                              if concept_split is not None else None),
            "cells": cell_out, "factors": factor_out, "comparisons": comparisons}
