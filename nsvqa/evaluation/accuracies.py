"""Accuracy of a set of predictions: overall (with and without guesses), per question type, on
head vs tail concepts of the long-tailed concept distribution (:class:`ConceptSplit`) and on seen
(ID) vs held-out (OOD) concepts of a systematic split; :data:`METRICS` names the accuracies a matrix
and RD can be computed on.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, NamedTuple, Sequence

from executors import load_ontology
from nsvqa.artifacts.predictions import QUESTION_TYPES, Prediction
from nsvqa.generation.variants import load_variant

#: Metrics a matrix and RD can be computed on (see :class:`Accuracy`).
METRICS = ("accuracy", "accuracy_no_guess")
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


def wilson_interval(k: int, n: int) -> list[float]:
    """The 95% Wilson score interval of a proportion, ``k`` of ``n`` (scipy's ``binomtest``)."""
    from scipy.stats import binomtest  # heavy: scipy.stats takes seconds to import, only for this interval

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [float(ci.low), float(ci.high)]


def count_errors(predictions: Iterable[Prediction]) -> list[int]:
    """The signed error (predicted minus true number) of each count question among
    ``predictions`` whose prediction is a number."""
    return [int(p.prediction) - int(p.answer) for p in predictions
            if p.question_type == "count" and p.prediction is not None and p.prediction.isdigit()
            and p.answer.isdigit()]


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
        """The split of the variant catalogue (its ``head`` and ``tail`` variants)."""
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


#: The attributes :func:`head_fallback` reads. Material has two values: a wrong material answer is
#: always the other one, whatever pulls it.
FALLBACK_ATTRIBUTES = ("shape", "color")


class FallbackFlags(NamedTuple):
    """One question read by :func:`head_fallback`."""

    wrong: bool  # the model's own prediction names another value of the asked attribute
    head: bool  # ... and that value is a head one
    uniform: float  # the share of head values among the attribute's other values
    guessed: bool  # the prediction names another value, drawn by a random guess


def head_fallback(predictions: Iterable[Prediction], split: ConceptSplit, values: Mapping[str, Iterable[str]],
                  attributes: Sequence[str] = FALLBACK_ATTRIBUTES) -> dict[int, FallbackFlags]:
    """Where the wrong answers to attribute queries land, against the head / tail split.

    Reads the query questions whose answer is a head or tail value of one of ``attributes``
    (``values``: attribute -> every value a scene can hold). Returns, by question index, its
    :class:`FallbackFlags`: the model's own prediction names another value of that attribute
    (``wrong``); that value is a head one (``head``); the share of head values among the
    attribute's other values (``uniform``: what a wrong answer drawn uniformly from them would
    give); and the prediction is such a value drawn by a random guess after a failed program
    (``guessed``, :attr:`Prediction.guessed`). A guess is
    not ``wrong`` here, nor is a prediction that names no value of the attribute: neither says which
    value pulled the model.
    """
    sets = {a: frozenset(values[a]) for a in attributes}
    out: dict[int, FallbackFlags] = {}
    for p in predictions:
        if p.question_type != "query":
            continue
        attr = next((a for a in attributes if p.answer in split.head.get(a, ()) or p.answer in split.tail.get(a, ())),
                    None)
        if attr is None:
            continue
        others = sets[attr] - {p.answer}
        heads = others & split.head.get(attr, frozenset())
        named = p.prediction in others
        wrong = named and not p.guessed
        out[p.question_index] = FallbackFlags(wrong, wrong and p.prediction in heads,
                                              len(heads) / len(others) if others else 0.0, named and p.guessed)
    return out


def fallback_share(flags: Mapping[int, FallbackFlags]) -> dict[str, float | int | None]:
    """Summary of :func:`head_fallback`: ``{"questions", "wrong", "guessed", "share", "uniform"}``:
    how many questions it read, how many of the model's own wrong answers name another value, how
    many guesses did (left out), the share of the wrong answers that name a head value, and the mean
    share a uniform wrong answer would give on the same questions (None without a wrong answer)."""
    wrong = [f for f in flags.values() if f.wrong]
    return {"questions": len(flags), "wrong": len(wrong), "guessed": sum(f.guessed for f in flags.values()),
            "share": sum(f.head for f in wrong) / len(wrong) if wrong else None,
            "uniform": sum(f.uniform for f in wrong) / len(wrong) if wrong else None}


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
