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

from nsvqa.evaluation.accuracies import (FALLBACK_ATTRIBUTES, HEAD_TAIL_ATTRIBUTES, METRICS, Accuracy, ConceptSplit,
                                         FallbackFlags, accuracy, accuracy_by_type, fallback_share, head_fallback,
                                         head_tail_accuracy, id_ood_accuracy, wilson_interval)
from nsvqa.evaluation.comparison import default_comparisons, paired_comparison, paired_fallback, rd_bootstrap
from nsvqa.evaluation.degrade import (DISTRIBUTION_RD_VARIANTS, RelativeDegrade, accuracy_matrix,
                                      distribution_relative_degrade, factor_layout, factor_relative_degrade,
                                      relative_degrade)
from nsvqa.evaluation.evaluator import evaluate, evaluate_cell, shared_questions
from nsvqa.evaluation.resampling import N_BOOT, bound_precision, percentile_interval, widen
from nsvqa.evaluation.reliability import (Calibration, ReliabilityBin, calibration, expected_calibration_error,
                                          fit_temperature, reliability_bins, top_label_ece)

__all__ = [
    # accuracies
    "METRICS", "HEAD_TAIL_ATTRIBUTES", "Accuracy", "accuracy", "accuracy_by_type", "ConceptSplit",
    "head_tail_accuracy", "id_ood_accuracy", "wilson_interval", "FALLBACK_ATTRIBUTES", "FallbackFlags", "head_fallback",
    "fallback_share",
    # reliability
    "ReliabilityBin", "reliability_bins", "expected_calibration_error", "Calibration", "calibration",
    "top_label_ece", "fit_temperature",
    # degrade
    "DISTRIBUTION_RD_VARIANTS", "accuracy_matrix", "RelativeDegrade", "relative_degrade",
    "distribution_relative_degrade", "factor_relative_degrade", "factor_layout",
    # comparison
    "paired_comparison", "default_comparisons", "rd_bootstrap", "paired_fallback",
    # resampling
    "N_BOOT", "bound_precision", "percentile_interval", "widen",
    # evaluator
    "evaluate_cell", "shared_questions", "evaluate",
]
