"""Every model by name: the one registry the orchestration asks, built from the explicit tables of
the packages that hold the models.

    >>> from orchestration import models
    >>> models.names()[:3]
    ('nsvqa', 'pnsvqa', 'pnsvqa-exact')
    >>> spec = models.parse_spec("nsvqa+gtprog")           # the command line's spelling
    >>> spec.name, spec.gt_programs, spec.label
    ('nsvqa', True, 'nsvqa+gtprog')
    >>> models.get("nsvqa").needs(spec)
    Needs(scene_parser=True, question_parser=False, train_parses=False, images=True)

Two tables name every model, one line per model in the package that holds it:
:data:`nsvqa.models.pipeline.MODELS` (NS-VQA, P-NSVQA and its exact variant) and
:data:`baselines.MODELS` (every other model). This module imports both (it sits above them:
``scripts`` → ``orchestration`` → ``baselines`` → ``nsvqa``), checks each entry
(:func:`nsvqa.models.check_model`) and answers by name: :func:`get` (a model, built with its name),
:func:`names`, :func:`parse_spec` / :func:`parse_specs` (labels with their options) and
:func:`needs` (what a set of models takes from a variant run: the scene parser, the question
parser, parses of the training splits, the images). What a model is (its family, what it sees the
image through) is declared on its class and read from the model :func:`get` returns, and the lists
of models that share a trait are read from those declarations: :func:`executors` (the models that
execute programs on parsed scenes, with both program sources) and :func:`executing` (those of a list
of labels). The tables are read at each call, so a model added to one is known at once.

This is the one front door: callers above ``baselines`` ask it, never ``baselines.MODELS`` or
``nsvqa.models.pipeline.MODELS`` (only what must not load the baselines reads the pipeline's table
itself: ``nsvqa-explain``'s parser, :data:`orchestration.explain.MODELS`).

A new model is one module with a :class:`nsvqa.models.Model` subclass (its family and needs
declared on the class) and one line in its package's ``MODELS``: ``"name": module.Class``.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import baselines
from nsvqa.models import Model, ModelSpec, Needs, UnknownModel, check_model
from nsvqa.models import pipeline

#: Where the models are named: (the table's name, the table), pipeline first.
TABLES: tuple[tuple[str, Mapping[str, type[Model]]], ...] = (
    ("nsvqa.models.pipeline.MODELS", pipeline.MODELS),
    ("baselines.MODELS", baselines.MODELS),
)


def table() -> dict[str, type[Model]]:
    """Name -> class of every model, in :data:`TABLES` order, each entry checked.

    Raises:
        ValueError: a name in two tables (both named), or an entry :func:`nsvqa.models.check_model`
            refuses (the name and why).
    """
    out: dict[str, type[Model]] = {}
    where: dict[str, str] = {}
    for source, models in TABLES:
        for name, cls in models.items():
            if name in out:
                raise ValueError(f"model {name!r} is named twice: in {where[name]} and in {source}")
            check_model(name, cls)
            out[name] = cls
            where[name] = source
    return out


def names() -> tuple[str, ...]:
    """Every model's name: NS-VQA / P-NSVQA first (their table's order), then the others sorted."""
    first = list(pipeline.MODELS)
    return tuple(first + sorted(n for n in table() if n not in first))


def _unknown(what: str) -> UnknownModel:
    return UnknownModel(f"unknown {what}; valid: {', '.join(names())}")


def get(name: str) -> Model:
    """The model registered as ``name``, built with its name.

    Raises:
        UnknownModel: no model of that name (the valid ones listed).
    """
    cls = table().get(name)
    if cls is None:
        raise _unknown(f"model {name!r}")
    return cls(name)


def parse_spec(text: str) -> ModelSpec:
    """A :class:`~nsvqa.models.ModelSpec` from its label (``"pnsvqa"``, ``"nsvqa+gtprog"``).

    Raises:
        UnknownModel: an unknown name (valid ones listed); ValueError: an unknown option, or
        ``+gtprog`` on a model that does not support it.
    """
    return _parse(text, table())


def parse_specs(texts: Sequence[str]) -> list[ModelSpec]:
    """:func:`parse_spec` of each label, checked all at once.

    Raises:
        UnknownModel: the message lists every unknown label and the valid names.
    """
    models = table()
    unknown = [t for t in texts if t.strip().partition("+")[0] not in models]
    if unknown:
        raise _unknown(f"model(s) {unknown}")
    return [_parse(t, models) for t in texts]


def _parse(text: str, models: Mapping[str, type[Model]]) -> ModelSpec:
    name = text.strip().partition("+")[0]
    if name not in models:
        raise _unknown(f"model {name!r}")
    spec = ModelSpec.from_label(text)
    if spec.gt_programs and not models[name].supports_gt_programs:
        raise ValueError(f"model {name!r} does not answer from ground-truth programs ({text!r}); those that do: "
                         f"{', '.join(n for n in names() if models[n].supports_gt_programs)}")
    return spec


def executors(*, gt_programs: bool = True) -> tuple[str, ...]:
    """The labels of every model that executes programs on parsed scenes (its class declares
    :attr:`~nsvqa.models.Model.executes_programs`): each by name, in :func:`names` order, then (with
    ``gt_programs``) each on ground-truth programs (``<name>+gtprog``) where its class supports them."""
    models = table()
    mine = [n for n in names() if models[n].executes_programs]
    gt = [ModelSpec(n, gt_programs=True).label for n in mine if gt_programs and models[n].supports_gt_programs]
    return tuple(mine + gt)


def executing(labels: Sequence[str]) -> tuple[str, ...]:
    """The labels of ``labels`` whose model executes programs on parsed scenes
    (:attr:`~nsvqa.models.Model.executes_programs`), in their order.

    Raises:
        UnknownModel: an unknown name (the valid ones listed); ValueError: a label the model does
            not take (:func:`parse_specs`).
    """
    models = table()
    return tuple(s.label for s in parse_specs(labels) if models[s.name].executes_programs)


def needs(specs: Sequence[ModelSpec]) -> Needs:
    """What the variant run must provide for all of ``specs`` together (each model's
    :meth:`~nsvqa.models.Model.needs`, as its class declares them)."""
    models = table()
    out = Needs()
    for s in specs:
        if s.name not in models:
            raise _unknown(f"model {s.name!r}")
        out = out | models[s.name](s.name).needs(s)
    return out


__all__ = ["TABLES", "table", "names", "get", "parse_spec", "parse_specs", "executors", "executing", "needs"]
