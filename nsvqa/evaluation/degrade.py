"""The train x test accuracy matrix of a factor and its Relative Degrade (Li et al., CVPR 2023,
"Super-CLEVR", Sec. 5.2; the rules are in the package docstring and docs/evaluation.md): the plain
RD, the concept-distribution RD, the rule the variant catalogue gives each factor, and each factor's
training and test variants (:func:`factor_layout`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from nsvqa.generation.variants import FACTORS, factors as catalogue, load_variant

#: The concept-distribution RD reads these test variants (docs/evaluation.md, "Relative Degrade";
#: the catalogue's ``roles`` of its ``head_tail`` factor, which :func:`factor_relative_degrade` passes).
DISTRIBUTION_RD_VARIANTS = {"head": "head", "tail": "tail", "long": "long", "oppo": "oppo", "bal": "bal"}


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
        acc: ``(train, test)`` -> accuracy; absent or None = not measured. A value may be a numpy
            array (bootstrap replicates, one shape for all): the RD is then an array too.
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
        if np.all(np.asarray(a) == 0):  # a number, or an array of bootstrap replicates (rd_bootstrap)
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
        if np.all(np.asarray(v["bal"]) == 0):
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
    fac = catalogue().get(factor)
    if fac is not None and fac.rd == "head_tail":
        return distribution_relative_degrade(acc, train_variants, allow_partial=allow_partial, names=fac.roles)
    if fac is not None and fac.rd is None:
        return RelativeDegrade(None, f"RD is not defined for the {fac.title} (see ID vs OOD accuracy)")
    return relative_degrade(acc, train_variants, test_variants, allow_partial=allow_partial)


# ---------------------------------------------------------------------------- factor layout
def factor_layout(factor: str) -> tuple[list[str], list[str]]:
    """(training variants, test variants) of a factor from the variant catalogue: every variant
    is a test variant; the ones that are not test-only are training variants."""
    try:
        variants = FACTORS[factor]
    except KeyError:
        raise KeyError(f"unknown factor {factor!r}; valid: {list(FACTORS)}") from None
    return [v for v in variants if not load_variant(v).test_only], list(variants)
