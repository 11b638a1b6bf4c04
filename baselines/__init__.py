"""Baselines: one model per file, each a :class:`nsvqa.models.Model`, named in :data:`MODELS`.

    >>> import baselines
    >>> {"random", "majority", "lstm", "cnn_lstm", "film", "mdetr", "nscl"} <= set(baselines.MODELS)
    True
    >>> from orchestration import models                     # the registry, one floor above
    >>> model = models.get("lstm")
    >>> cfg = model.config("data/generated/mini/mid", "mini", seed=0)
    >>> model.train(cfg, "runs/lstm/mid", resume=True)          # doctest: +SKIP
    >>> preds = model.predict("runs/lstm/mid", "data/generated/mini", "hard", "test")  # doctest: +SKIP

:data:`MODELS` is this package's table of models, one line per model: the registry of the
orchestration (:mod:`orchestration.models`, the floor above, the one place that finds a model by
name) reads it beside NS-VQA's and P-NSVQA's (:data:`nsvqa.models.pipeline.MODELS`). Code of this
package that needs a baseline by name reads :data:`MODELS` itself (it cannot import the floor
above); none does today.
Every baseline is a :class:`~baselines.base.Baseline`: ``config`` resolves its frozen config
dataclass from a profile (``tiny`` | ``demo`` | ``mini`` | ``full``) and overrides, ``train`` fills a
run directory (``config.json``, ``train.log``, ``tb/``, the checkpoint ``baseline.pt``; resumable),
and ``predict`` reads that run directory (and, for a model that
:attr:`~nsvqa.models.Model.uses_parses`, the run's parses in its ``inputs``) and returns one
:class:`nsvqa.artifacts.predictions.Prediction` per question of any variant's split.
``scripts/train_baseline.py`` is the command line; ``scripts/train_variant.py --models`` accepts every
registered name.

A new model is a module of this package whose :class:`~baselines.base.Baseline` subclass declares
its family and needs on the class, plus its line in :data:`MODELS`.
"""
from __future__ import annotations

from nsvqa.models import PROFILE_NAMES

from .base import Baseline
from .cnn_lstm import CNNLSTMBaseline
from .film import FiLMBaseline
from .film_dense import FiLMDenseBaseline
from .film_trace import FiLMTraceBaseline
from .lstm import LSTMBaseline
from .mdetr import MDETRBaseline
from .nscl import NSCLBaseline
from .objtf import ObjMACBaseline, ObjMACTraceBaseline, ObjTFBaseline
from .random_majority import MajorityBaseline, RandomBaseline
from .regionmac import RegionMACTraceBaseline

#: Every baseline by name, one line each (the name is its label in predictions files and reports).
MODELS: dict[str, type[Baseline]] = {
    "cnn_lstm": CNNLSTMBaseline,
    "film": FiLMBaseline,
    "film-dense": FiLMDenseBaseline,
    "film-trace": FiLMTraceBaseline,
    "lstm": LSTMBaseline,
    "majority": MajorityBaseline,
    "mdetr": MDETRBaseline,
    "nscl": NSCLBaseline,
    "objmac": ObjMACBaseline,
    "objmac-trace": ObjMACTraceBaseline,
    "objtf": ObjTFBaseline,
    "random": RandomBaseline,
    "regionmac-trace": RegionMACTraceBaseline,
}


__all__ = ["MODELS", "Baseline", "PROFILE_NAMES"]
