"""Seeing why an answer came out: one question of a variant run, step by step.

:func:`explain` gathers, for one question of one test image of a variant run
(:class:`orchestration.experiment.VariantRun`):

* the parsed objects (and parts) of the image with their most likely attributes and probabilities;
* the question, its ground-truth answer and the program (the question parser's from
  ``parsed/<test>/programs.json``, or the ground-truth one);
* per program step, what P-NSVQA's probabilistic executor computed (a probability per object or
  per part, or a distribution over values) and what NS-VQA's deterministic executor computed on the
  most likely scene (object indices mapped back to the parsed detections);
* the final answers of both against the ground truth. Execution errors are part of the result,
  with the step that failed.

:func:`render_png` draws it (:func:`draw_explanation`: matplotlib, Agg) and :func:`render_html` wraps the PNG (base64) and
the same text in one self-contained page; ``scripts/explain.py`` is the command line.
"""
from __future__ import annotations

from orchestration.explain.render import (answer_lines, default_paths, draw_explanation, render_html, render_png,
                                  step_line)
from orchestration.explain.trace import MODELS, TOP, ExplainError, explain  # noqa: F401 (TOP: an attribute, not in __all__)

__all__ = ["MODELS", "ExplainError", "explain", "draw_explanation", "render_png", "render_html", "default_paths",
           "answer_lines", "step_line"]
