"""An instantiated template, level-independent: its grounded references (:class:`_Ref`) and
relations and the answer (:class:`_Core`), what the generator describes and the text realises."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .templates import RefSpec, Template


@dataclass
class _Ref:
    """One reference of an instantiated template (level-independent)."""

    spec: RefSpec
    node: int
    unique: bool                 # a single object/part (or the joint object)
    domain: int                  # object mask the reference filters (parts: the objects whose parts)
    relational: bool             # reached through a relation: must not be identifiable without it
    target: int = -1             # object index or part bit
    desc: tuple = ()             # rd- description
    out: int = 0                 # objects: the output set (unique: 1 << target)
    root: bool = False           # a unique object filtered from the whole scene


@dataclass
class _Core:
    tpl: Template
    refs: dict[str, _Ref]
    relations: dict[str, str]
    answer: Any = None
    key: str = ""
