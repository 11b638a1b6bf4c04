"""The one signature table of the program language.

Every function of CLEVR and Super-CLEVR programs is described once here: the types of its inputs,
the kind of value it carries in ``value_inputs`` and the type of its output. The validator, both
executors and the question parser read this table; nothing else lists functions.

Types: ``ObjectSet``, ``Object``, ``PartSet``, ``Part``, ``Integer``, ``Bool`` and one value type
per attribute (``Shape``, ``Color``, ``Material``, ``Size``, ``Texture``, ``Partname``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

OBJECT_SET, OBJECT, PART_SET, PART = "ObjectSet", "Object", "PartSet", "Part"
INTEGER, BOOL = "Integer", "Bool"

#: Attribute -> value type name.
VALUE_TYPES = {"shape": "Shape", "color": "Color", "material": "Material", "size": "Size",
               "texture": "Texture", "partname": "Partname"}
ATTRIBUTES = ("shape", "color", "material", "size", "texture")
PART_ATTRIBUTES = ("color", "material", "size", "texture")
#: Types a program may end in (the answer).
ANSWER_TYPES = frozenset({INTEGER, BOOL, *VALUE_TYPES.values()})


@dataclass(frozen=True)
class Signature:
    """One function of the language.

    Args:
        name: function name as written in programs.
        kind: the executor rule it uses (functions of one kind differ only by ``attribute``).
        inputs: for each input, the tuple of accepted types.
        output: the output type, or a mapping from the first input's type to the output type
            (``unique`` turns an ObjectSet into an Object and a PartSet into a Part).
        value: what ``value_inputs`` holds: an attribute name, ``"partname"``, ``"relation"``,
            or None when the function takes no value.
        attribute: the attribute a filter/query/same/equal function works on, or None.
    """

    name: str
    kind: str
    inputs: tuple[tuple[str, ...], ...]
    output: str | Mapping[str, str]
    value: str | None = None
    attribute: str | None = None

    @property
    def arity(self) -> int:
        return len(self.inputs)

    def output_type(self, input_types: tuple[str, ...]) -> str:
        if isinstance(self.output, str):
            return self.output
        return self.output[input_types[0]]


def _table() -> dict[str, Signature]:
    t: dict[str, Signature] = {}

    def add(*a, **k):
        s = Signature(*a, **k)
        t[s.name] = s

    add("scene", "scene", (), OBJECT_SET)
    for a in ATTRIBUTES:
        vt = VALUE_TYPES[a]
        add(f"filter_{a}", "filter", ((OBJECT_SET,),), OBJECT_SET, value=a, attribute=a)
        add(f"query_{a}", "query", ((OBJECT,),), vt, attribute=a)
        add(f"same_{a}", "same", ((OBJECT,),), OBJECT_SET, attribute=a)
        add(f"equal_{a}", "equal_value", ((vt,), (vt,)), BOOL, attribute=a)
    for a in PART_ATTRIBUTES:
        add(f"partfilter_{a}", "partfilter", ((PART_SET,),), PART_SET, value=a, attribute=a)
        add(f"partquery_{a}", "partquery", ((PART,),), VALUE_TYPES[a], attribute=a)
    add("partfilter_partname", "partfilter_partname", ((PART_SET,),), PART_SET, value="partname")
    add("partquery_partname", "partquery_partname", ((PART,),), "Partname")
    add("unique", "unique", ((OBJECT_SET, PART_SET),), {OBJECT_SET: OBJECT, PART_SET: PART})
    add("uniquepart", "unique", ((PART_SET,),), {PART_SET: PART})
    add("relate", "relate", ((OBJECT,),), OBJECT_SET, value="relation")
    add("union", "union", ((OBJECT_SET,), (OBJECT_SET,)), OBJECT_SET)
    add("intersect", "intersect", ((OBJECT_SET,), (OBJECT_SET,)), OBJECT_SET)
    add("count", "count", ((OBJECT_SET,),), INTEGER)
    add("exist", "exist", ((OBJECT_SET,),), BOOL)
    add("equal_integer", "compare", ((INTEGER,), (INTEGER,)), BOOL)
    add("less_than", "compare", ((INTEGER,), (INTEGER,)), BOOL)
    add("greater_than", "compare", ((INTEGER,), (INTEGER,)), BOOL)
    add("equal_object", "equal_object", ((OBJECT,), (OBJECT,)), BOOL)
    # The official engine applies object2part to an Object (the output of unique) as well as to
    # an ObjectSet, and part2object to a Part as well as to a PartSet: both yield sets.
    add("object2part", "object2part", ((OBJECT, OBJECT_SET),), PART_SET)
    add("part2object", "part2object", ((PART, PART_SET),), OBJECT_SET)
    return t


#: function name -> Signature, for every function of CLEVR and Super-CLEVR programs.
SIGNATURES: Mapping[str, Signature] = _table()
FUNCTIONS: tuple[str, ...] = tuple(sorted(SIGNATURES))


def signature(name: str) -> Signature:
    """Signature of ``name``; KeyError lists the valid function names."""
    try:
        return SIGNATURES[name]
    except KeyError:
        raise KeyError(f"unknown function {name!r}; valid: {', '.join(FUNCTIONS)}") from None
