"""Question engine: instantiates question templates on a scene, answers with the deterministic executor.

Templates (``data/templates/*.json``, written for this project) give the program structures of the
90 CLEVR question families (zero/one/two/three hop, single and/or, same-relate, comparison,
compare-integer) and the 9 Super-CLEVR part families, over the Super-CLEVR ontology. A question
record follows the release schema (docs/formats.md) and adds ``question_hash``, ``obj_map`` and
``redundancy``.

Template files
--------------
``{"group", "about", "templates": [...]}``; the template's position in its file is its
``question_family_index``, the file name its ``template_filename``. A template holds:

* ``nodes``: the program as *macro* nodes ``{"type", "inputs", "ref"?, "relation"?}`` in topological
  order. Macros expand to executor functions: ``filter[_unique|_count|_exist]`` (a reference ``ref``:
  a chain of ``filter_<attr>`` nodes, then ``unique``/``count``/``exist``), ``relate_filter[...]``
  (``relate[relation]`` then the same), ``relate`` (a raw relation), ``partfilter_unique`` (a chain of
  ``partfilter_<attr>`` then ``unique``). Every other function of :mod:`executors.dsl` that takes no
  value (``scene``, ``same_color``, ``union``, ``query_shape``, ``object2part``, ...) is itself.
* ``refs``: per reference name, ``{"kind": "object"|"part", "exclude": [attr...], "attrs": [attr...],
  "required": bool, "joint": part ref, "extra_relation": bool}``. ``exclude`` lists attributes the
  description must never say (the queried or compared attribute); ``attrs`` restricts it to these
  attributes (``required``: it must say them); ``joint`` marks an object set that is described
  together with the part that identifies its object ("the red thing that has a blue wheel");
  ``extra_relation`` (default true) lets rd+ add a spatial relation to a top-level unique object.
* ``distinct``: pairs of macro-node indices whose outputs must differ.
* ``text``: variants of the question; ``<A>`` is the noun phrase of reference A (its attribute
  words and its noun), ``<A+>`` its plural, ``<a A>`` it with "a"/"an", ``<R>`` the phrase of relation
  R; ``[...]`` is an optional segment, ``(x|y)`` a choice. Every reference and relation appears in
  every variant, never inside ``[...]``.

:func:`load_templates` checks all of this and expands every template into a program that
:meth:`executors.Program.validate` accepts; errors name the file, the template and the node.

Instantiation (:class:`QuestionGenerator`)
-------------------------------------------
For each image the generator tries templates (least used family first), each instantiation a
randomised walk over the macro nodes that chooses grounded objects/parts, relations and
descriptions, with rules after those of the official generator:

* a ``unique`` reference is unambiguous: its filters keep exactly one object (part). Part
  descriptions must also be unambiguous *in the image*: every part of the object's shape counts,
  those not listed in the scene's ``parts`` looking like their object, and a part name phrase
  ("front wheel") matches every part whose spoken name contains its words ("front left wheel");
* no degenerate relation: a reference reached through ``relate`` (or ``same_<attr>``, or "on the
  same object as") must not be described so that it would be identified without the relation
  (its filters applied to the whole scene give a different output); for raw ``relate`` nodes
  (single-and), as in the official engine, replacing the node by ``scene`` must change the answer
  (or make the program fail). rd+ (below) adds redundant relations on purpose and skips this;
* no degenerate set: every filter of a set description changes the set (so "how many red cars" is
  never asked when "how many cars" is the same set); a set over the whole scene has at least one
  filter ("things" alone only after a relation); each side of a union adds objects the other lacks;
* answer balancing per family (:meth:`QuestionGenerator.is_balanced`): the generator counts the
  answers it has produced per family, over all images it generated; a candidate answer ``a`` is
  rejected when ``count[a] + 1 > balance_slack + balance_ratio * max(count[b], b != a)``, so no
  answer runs ahead of the runner-up (with the defaults 2 and 1.5 a yes/no family stays within
  about 60/40);
* bounded search: at most ``max_tries`` instantiations per image and question kind (object,
  part), and ``fruitless_passes`` full passes over the templates without a new question end the
  search early. When
  fewer questions than asked for are found, what was found is returned and the reason is in
  :attr:`QuestionGenerator.last_report`; nothing is raised for a hard scene.

The answer of every question is the deterministic executor's answer on the scene's
:class:`executors.SymbolicScene` (``executors.DeterministicExecutor``), and every emitted program
validates.

Determinism: :meth:`QuestionGenerator.generate` draws one integer from its ``rng``; with the same
integer, scene and generator state it returns the same questions. The state (answer counts and
family usage, which balancing and family order read) carries over from image to image, so an
image's questions also depend on the images the same instance made before; generate a split's
questions in one pass in image order, and :meth:`QuestionGenerator.state` /
:meth:`~QuestionGenerator.load_state` resume such a pass exactly.

Redundancy levels
-----------------
One instantiation (the grounded objects and parts, relations, set descriptions and answer: the
question's intent) is found with a search that does not depend on the level; then it is described
at the level asked for:

* ``rd-``: minimal descriptions: every filter is needed (removing any filter node changes the output
  of its reference or, for a part, lets the description fit another part of the image), no
  relation a reference could do without;
* ``rd``: each further attribute the referenced object (or every member of a referenced set) has is
  added with probability 0.5 (it may be redundant); relations are never redundant (a sample that
  would make one redundant is drawn again, and falls back to rd-);
* ``rd+``: every attribute the template has a slot for, with the most specific shape and part name;
  top-level unique objects also get a spatial relation that holds to another object, itself fully
  described ("the large red metal suv that is left of the small blue rubber school bus").

Calls with the same ``rng`` seed and scene at the three levels ask about the same grounded objects
and share ``question_hash``; the chosen sentence variant, optional segments and synonyms are the
same too, so the texts differ only by the added words.

Texture filters are used only with ``use_texture=True`` (and never for texture ``none``): off by
default, so that the questions of a layout are the same at every visual-complexity level.

``obj_map``: for each grounded object (``"<index>"``) and part (``"<object>_<part index>"``, the
executor's part id) the character spans ``[start, end)`` of the words of the question that
describe it (its attribute words and its noun; for a counted or tested set, every member).

``question_hash``: ``"<image_index>_<template file stem>_<family index>_<16 hex>"``, the hex digits
a SHA-1 of the family, each reference's grounded object/part (or, for a set, its rd-
description) and the relations: the same at every redundancy level.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from executors import (DeterministicExecutor, ExecutionError, Node, Ontology, Program, SymbolicScene,
                       load_ontology)
from executors.deterministic import mask_bits
from executors.program import partname_shapes
from executors.dsl import SIGNATURES
from executors.scene import PART_BITS

LEVELS = ("rd-", "rd", "rd+")
DEFAULT_TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "data" / "templates"
_INSTALLED_TEMPLATE_DIR = Path(sys.prefix) / "share" / "nsvqa" / "templates"


def template_dir() -> Path:
    """``$NSVQA_TEMPLATE_DIR``, else the repository's ``data/templates``, else an installed copy
    under ``<prefix>/share/nsvqa/templates``."""
    if "NSVQA_TEMPLATE_DIR" in os.environ:
        return Path(os.environ["NSVQA_TEMPLATE_DIR"])
    return DEFAULT_TEMPLATE_DIR if DEFAULT_TEMPLATE_DIR.is_dir() else _INSTALLED_TEMPLATE_DIR

# ---------------------------------------------------------------------- words (this project's)
SIZE_WORDS = {"large": ("large", "big"), "small": ("small", "tiny")}
MATERIAL_WORDS = {"metal": ("metal", "metallic", "shiny"), "rubber": ("rubber", "matte")}
TEXTURE_WORDS = {"checkered": ("checkered",), "dotted": ("dotted",), "stripped": ("striped",),
                 "vstripped": ("vertically striped",)}
CATEGORY_NOUNS = {"car": ("car",), "bus": ("bus",), "motorbike": ("motorbike", "motorcycle"),
                  "aeroplane": ("aeroplane", "airplane", "plane"), "bicycle": ("bicycle",)}
GENERIC_NOUNS = ("thing", "object", "vehicle")
PART_NOUNS = ("part",)
RELATION_PHRASES = {"left": ("left of", "to the left of", "on the left side of"),
                    "right": ("right of", "to the right of", "on the right side of"),
                    "front": ("in front of",), "behind": ("behind",)}

OBJECT_ATTRS = ("size", "color", "material", "texture", "shape")  # filter order in programs
PART_ATTRS = ("color", "material", "texture", "partname")
_OBJ_ORDER = {a: i for i, a in enumerate(OBJECT_ATTRS)}
_PART_ORDER = {a: i for i, a in enumerate(PART_ATTRS)}
# word order in a noun phrase (the noun itself comes last)
_OBJ_WORD_ORDER = {"size": 0, "texture": 1, "color": 2, "material": 3, "shape": 9}
_PART_WORD_ORDER = {"texture": 0, "color": 1, "material": 2, "partname": 9}

#: macro -> (prefix relation?, suffix function or None, reference kind)
_REF_MACROS = {
    "filter": (False, None, "object"), "filter_unique": (False, "unique", "object"),
    "filter_count": (False, "count", "object"), "filter_exist": (False, "exist", "object"),
    "relate_filter": (True, None, "object"), "relate_filter_unique": (True, "unique", "object"),
    "relate_filter_count": (True, "count", "object"), "relate_filter_exist": (True, "exist", "object"),
    "partfilter_unique": (False, "unique", "part"),
}
_PART_FUNCTIONS = ("object2part", "part2object", "partfilter_unique")
_SPEC_KEYS = {"kind", "exclude", "attrs", "required", "joint", "extra_relation"}


class TemplateError(ValueError):
    """A malformed template file; the message names the file, the template and the node."""


# ====================================================================== templates
@dataclass(frozen=True)
class RefSpec:
    """What a template allows for one reference (see the module docstring)."""

    name: str
    kind: str = "object"
    exclude: tuple[str, ...] = ()
    attrs: tuple[str, ...] | None = None
    required: bool = False
    joint: str | None = None
    extra_relation: bool = True

    def allows(self, attr: str) -> bool:
        return attr not in self.exclude and (self.attrs is None or attr in self.attrs)


@dataclass(frozen=True)
class MacroNode:
    """One template node: a macro or a plain function, its inputs, reference and relation names."""

    type: str
    inputs: tuple[int, ...] = ()
    ref: str | None = None
    relation: str | None = None


@dataclass(frozen=True, eq=False)
class Template:
    """One question family.

    Attributes:
        filename: the template file's name (``template_filename`` of its questions).
        index: position in the file (``question_family_index``).
        name: a short name, unique in the file.
        nodes: macro nodes in topological order.
        refs: reference name -> :class:`RefSpec`.
        relations: relation parameter names, in node order.
        distinct: pairs of node indices whose outputs must differ.
        texts: the text variants as written.
        parsed: the text variants parsed (items of :func:`parse_text`).
        kind: ``"object"`` or ``"part"`` (it uses part functions).
    """

    filename: str
    index: int
    name: str
    nodes: tuple[MacroNode, ...]
    refs: Mapping[str, RefSpec]
    relations: tuple[str, ...]
    distinct: tuple[tuple[int, int], ...]
    texts: tuple[str, ...]
    parsed: tuple[tuple, ...]
    kind: str

    @property
    def family(self) -> str:
        """``"<file>:<index>"``, the key of per-family counts."""
        return f"{self.filename}:{self.index}"


_PLACEHOLDER = re.compile(r"<(a )?([A-Za-z][A-Za-z0-9_]*)(\+?)>")


def parse_text(text: str) -> tuple:
    """Parse a template text into items: ``("lit", s)``, ``("ph", name, form)`` (form ``sg``, ``pl``
    or ``a``), ``("opt", items)`` and ``("alt", (items, ...))``.

    Raises:
        ValueError: unbalanced brackets, a nested choice, or a stray ``|``.
    """
    pos = 0

    def parse(until: str | None, in_alt: bool):
        nonlocal pos
        items: list = []
        branches: list = []
        buf = ""
        while pos < len(text):
            c = text[pos]
            if c == "<":
                m = _PLACEHOLDER.match(text, pos)
                if not m:
                    raise ValueError(f"malformed placeholder at character {pos}: {text[pos:pos + 12]!r}")
                if buf:
                    items.append(("lit", buf))
                    buf = ""
                form = "a" if m.group(1) else ("pl" if m.group(3) else "sg")
                items.append(("ph", m.group(2), form))
                pos = m.end()
            elif c in "[(":
                if buf:
                    items.append(("lit", buf))
                    buf = ""
                pos += 1
                if c == "[":
                    items.append(("opt", tuple(parse("]", False))))
                else:
                    if in_alt:
                        raise ValueError(f"nested '(' at character {pos - 1}")
                    items.append(("alt", tuple(parse(")", True))))
            elif c in "])":
                if c != until:
                    raise ValueError(f"unexpected {c!r} at character {pos}")
                pos += 1
                if buf:
                    items.append(("lit", buf))
                if in_alt:
                    branches.append(tuple(items))
                    return branches
                return items
            elif c == "|":
                if not in_alt:
                    raise ValueError(f"'|' outside a '(...)' choice at character {pos}")
                if buf:
                    items.append(("lit", buf))
                    buf = ""
                branches.append(tuple(items))
                items = []
                pos += 1
            else:
                buf += c
                pos += 1
        if until is not None:
            raise ValueError(f"missing {until!r}")
        if buf:
            items.append(("lit", buf))
        return items

    return tuple(parse(None, False))


def _placeholders(items, in_opt=False, out=None) -> list[tuple[str, bool]]:
    """(name, inside an optional segment) for every placeholder (first branch of choices)."""
    out = [] if out is None else out
    for it in items:
        if it[0] == "ph":
            out.append((it[1], in_opt))
        elif it[0] == "opt":
            _placeholders(it[1], True, out)
        elif it[0] == "alt":
            names = [sorted(n for n, _ in _placeholders(b, in_opt)) for b in it[1]]
            if any(n != names[0] for n in names):
                raise ValueError("the branches of a '(...)' choice must hold the same placeholders")
            _placeholders(it[1][0], in_opt, out)
    return out


def load_templates(directory: Path | str | None = None, ontology: Ontology | None = None) -> list[Template]:
    """Read and validate every ``*.json`` template file of ``directory`` (default :func:`template_dir`).

    Files are read in name order; each template is checked (macro types, inputs, references,
    relations, texts) and expanded into a program that :meth:`executors.Program.validate` accepts
    for ``ontology`` (default Super-CLEVR).

    Raises:
        TemplateError: naming the file, the template index and name and the node at fault.
        FileNotFoundError: the directory does not exist or holds no template file.
    """
    d = Path(directory) if directory is not None else template_dir()
    if not d.is_dir():
        raise FileNotFoundError(f"template directory {d} does not exist")
    files = sorted(d.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no template files (*.json) in {d}")
    onto = ontology if ontology is not None else load_ontology("superclevr")
    out: list[Template] = []
    for f in files:
        try:
            doc = json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise TemplateError(f"{f.name}: not valid JSON ({e})") from None
        if not isinstance(doc, Mapping) or not isinstance(doc.get("templates"), list):
            raise TemplateError(f"{f.name}: expected an object with a list 'templates'")
        names = set()
        for i, t in enumerate(doc["templates"]):
            tpl = _parse_template(t, f.name, i, onto)
            if tpl.name in names:
                raise TemplateError(f"{f.name}, template {i}: duplicate name {tpl.name!r}")
            names.add(tpl.name)
            out.append(tpl)
    return out


def _parse_template(t: Any, fname: str, index: int, onto: Ontology) -> Template:
    where = f"{fname}, template {index}"
    if not isinstance(t, Mapping):
        raise TemplateError(f"{where}: expected an object")
    name = t.get("name")
    if not isinstance(name, str) or not name:
        raise TemplateError(f"{where}: missing field 'name'")
    where = f"{where} ({name})"
    for key in ("nodes", "refs", "text"):
        if key not in t:
            raise TemplateError(f"{where}: missing field {key!r}")
    if not isinstance(t["refs"], Mapping):
        raise TemplateError(f"{where}, field 'refs': expected an object")
    specs: dict[str, RefSpec] = {}
    for rname, s in t["refs"].items():
        specs[rname] = _parse_spec(rname, s, where, onto)
    if not isinstance(t["nodes"], list) or not t["nodes"]:
        raise TemplateError(f"{where}, field 'nodes': expected a non-empty list")
    nodes: list[MacroNode] = []
    used_refs: dict[str, int] = {}
    relations: list[str] = []
    for j, n in enumerate(t["nodes"]):
        nw = f"{where}, node {j}"
        if not isinstance(n, Mapping) or not isinstance(n.get("type"), str):
            raise TemplateError(f"{nw}: expected an object with a string 'type'")
        typ = n["type"]
        inputs = n.get("inputs", [])
        if not isinstance(inputs, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in inputs):
            raise TemplateError(f"{nw} ({typ}): 'inputs' must be a list of node indices")
        for x in inputs:
            if not 0 <= x < j:
                raise TemplateError(f"{nw} ({typ}): input {x} is not an earlier node")
        ref, rel = n.get("ref"), n.get("relation")
        if typ in _REF_MACROS:
            has_rel, _, kind = _REF_MACROS[typ]
            if len(inputs) != 1:
                raise TemplateError(f"{nw} ({typ}): takes 1 input, got {len(inputs)}")
            if ref not in specs:
                raise TemplateError(f"{nw} ({typ}): reference {ref!r} is not declared in 'refs' "
                                    f"(declared: {sorted(specs)})")
            if ref in used_refs:
                raise TemplateError(f"{nw} ({typ}): reference {ref!r} already used by node {used_refs[ref]}")
            used_refs[ref] = j
            if specs[ref].kind != kind:
                raise TemplateError(f"{nw} ({typ}): reference {ref!r} is a {specs[ref].kind} reference, "
                                    f"{typ} needs a {kind} reference")
            if has_rel != (rel is not None):
                raise TemplateError(f"{nw} ({typ}): " + ("missing 'relation'" if has_rel else "takes no 'relation'"))
        elif typ == "relate":
            if len(inputs) != 1 or ref is not None or not isinstance(rel, str):
                raise TemplateError(f"{nw} (relate): takes 1 input and a 'relation', no 'ref'")
        else:
            sig = SIGNATURES.get(typ)
            if sig is None:
                valid = set(_REF_MACROS) | {"relate"} | {k for k, s in SIGNATURES.items() if s.value is None}
                raise TemplateError(f"{nw}: unknown node type {typ!r}; valid: {sorted(valid)}")
            if sig.value is not None:
                raise TemplateError(f"{nw} ({typ}): a function that takes a value must be written as a "
                                    f"macro ({sorted(_REF_MACROS)} or relate)")
            if len(inputs) != sig.arity:
                raise TemplateError(f"{nw} ({typ}): takes {sig.arity} input(s), got {len(inputs)}")
            if ref is not None or rel is not None:
                raise TemplateError(f"{nw} ({typ}): takes no 'ref' or 'relation'")
        if rel is not None:
            if not isinstance(rel, str) or rel in relations or rel in specs:
                raise TemplateError(f"{nw} ({typ}): relation name {rel!r} must be a new name")
            relations.append(rel)
        nodes.append(MacroNode(typ, tuple(inputs), ref, rel))
    for rname in specs:
        if rname not in used_refs:
            raise TemplateError(f"{where}, field 'refs': reference {rname!r} is used by no node")
    # joint references: filter -> object2part -> partfilter_unique(part ref)
    for rname, s in specs.items():
        if s.joint is None:
            continue
        j = used_refs[rname]
        ok = nodes[j].type == "filter" and s.joint in used_refs
        if ok:
            k = used_refs[s.joint]
            ok = (nodes[k].type == "partfilter_unique" and nodes[nodes[k].inputs[0]].type == "object2part"
                  and nodes[nodes[k].inputs[0]].inputs[0] == j)
        if not ok:
            raise TemplateError(f"{where}, node {j}: reference {rname!r} is 'joint' with {s.joint!r}, which "
                                "needs filter -> object2part -> partfilter_unique of that part reference")
    distinct = []
    for p in t.get("distinct", []):
        if (not isinstance(p, list) or len(p) != 2
                or not all(isinstance(x, int) and 0 <= x < len(nodes) for x in p)):
            raise TemplateError(f"{where}, field 'distinct': {p!r} is not a pair of node indices")
        distinct.append((p[0], p[1]))
    texts = t["text"]
    if not isinstance(texts, list) or not texts or not all(isinstance(x, str) for x in texts):
        raise TemplateError(f"{where}, field 'text': expected a non-empty list of strings")
    parsed = []
    needed = set(specs) | set(relations)
    for k, s in enumerate(texts):
        try:
            items = parse_text(s)
            phs = _placeholders(items)
        except ValueError as e:
            raise TemplateError(f"{where}, text {k}: {e}: {s!r}") from None
        for ph, in_opt in phs:
            if ph not in needed:
                raise TemplateError(f"{where}, text {k}: unknown placeholder <{ph}> (references "
                                    f"{sorted(specs)}, relations {relations}): {s!r}")
            if in_opt:
                raise TemplateError(f"{where}, text {k}: placeholder <{ph}> inside an optional '[...]'")
        missing = needed - {p for p, _ in phs}
        if missing:
            raise TemplateError(f"{where}, text {k}: does not mention {sorted(missing)}: {s!r}")
        parsed.append(items)
    kind = "part" if any(n.type in _PART_FUNCTIONS or n.type.startswith("partquery_") for n in nodes) else "object"
    tpl = Template(fname, index, name, tuple(nodes), specs, tuple(relations), tuple(distinct), tuple(texts),
                   tuple(parsed), kind)
    _check_program(tpl, onto, where)
    return tpl


def _parse_spec(rname: str, s: Any, where: str, onto: Ontology) -> RefSpec:
    sw = f"{where}, reference {rname!r}"
    if not isinstance(s, Mapping):
        raise TemplateError(f"{sw}: expected an object")
    bad = set(s) - _SPEC_KEYS
    if bad:
        raise TemplateError(f"{sw}: unknown field(s) {sorted(bad)}; valid: {sorted(_SPEC_KEYS)}")
    kind = s.get("kind", "object")
    if kind not in ("object", "part"):
        raise TemplateError(f"{sw}: kind {kind!r} must be 'object' or 'part'")
    valid = OBJECT_ATTRS if kind == "object" else PART_ATTRS
    lists = {}
    for key in ("exclude", "attrs"):
        v = s.get(key)
        if v is None:
            lists[key] = None
            continue
        if not isinstance(v, list) or not all(a in valid for a in v):
            raise TemplateError(f"{sw}, field {key!r}: {v!r} must list attributes of a {kind}: {list(valid)}")
        lists[key] = tuple(v)
    if s.get("required") and not lists["attrs"]:
        raise TemplateError(f"{sw}: 'required' needs 'attrs'")
    joint = s.get("joint")
    if joint is not None and kind != "object":
        raise TemplateError(f"{sw}: only an object reference can be 'joint'")
    return RefSpec(rname, kind, lists["exclude"] or (), lists["attrs"], bool(s.get("required", False)), joint,
                   bool(s.get("extra_relation", True)))


def _check_program(tpl: Template, onto: Ontology, where: str) -> None:
    """Expand with one sample value per reference and validate with the executors' table."""
    descs = {}
    for name, s in tpl.refs.items():
        attrs = [a for a in (OBJECT_ATTRS if s.kind == "object" else PART_ATTRS) if s.allows(a) and a != "texture"]
        a = attrs[0] if attrs else None
        if a is None:
            descs[name] = ()
        elif a == "partname":
            descs[name] = (("partname", "wheel"),)
        else:
            descs[name] = ((a, onto.values(a)[0]),)
    relations = {r: onto.relations[0] for r in tpl.relations}
    nodes, macro_of = _expand(tpl, descs, relations, {}, None)
    try:
        Program(tuple(nodes)).validate(onto)
    except ExecutionError as e:
        j = macro_of[e.node] if e.node is not None and e.node < len(macro_of) else None
        at = f", node {j} ({tpl.nodes[j].type})" if j is not None else ""
        raise TemplateError(f"{where}{at}: the program does not validate: {e.reason}") from None


def _expand(tpl: Template, descs: Mapping[str, tuple], relations: Mapping[str, str],
            anchors: Mapping[str, tuple], replace: int | None) -> tuple[list[Node], list[int]]:
    """Executor nodes of a template with descriptions; ``macro_of[k]`` is the macro node of node k.

    Args:
        descs: reference -> ((attribute, filter value), ...) in program order.
        relations: relation name -> relation.
        anchors: reference -> (relation, anchor description) for rd+'s added relations.
        replace: a macro node (relate or relate_filter*) whose relate becomes ``scene``.
    """
    nodes: list[Node] = []
    macro_of: list[int] = []
    out: list[int | None] = [None] * len(tpl.nodes)
    cur_macro = 0

    def emit(fn, inputs=(), values=()):
        nodes.append(Node(fn, tuple(inputs), tuple(values)))
        macro_of.append(cur_macro)
        return len(nodes) - 1

    def get(j):  # scene nodes are emitted where they are first used
        if out[j] is None:
            out[j] = emit("scene")
        return out[j]

    for i, nd in enumerate(tpl.nodes):
        cur_macro = i
        t = nd.type
        if t == "scene":
            continue
        if t in _REF_MACROS:
            has_rel, suffix, kind = _REF_MACROS[t]
            if has_rel:
                cur = emit("scene") if replace == i else emit("relate", (get(nd.inputs[0]),), (relations[nd.relation],))
            elif nd.ref in anchors:
                rel, adesc = anchors[nd.ref]
                c = emit("scene")
                for a, v in adesc:
                    c = emit(f"filter_{a}", (c,), (v,))
                c = emit("unique", (c,))
                cur = emit("relate", (c,), (rel,))
            else:
                cur = get(nd.inputs[0])
            prefix = "filter_" if kind == "object" else "partfilter_"
            for a, v in descs[nd.ref]:
                cur = emit(prefix + a, (cur,), (v,))
            if suffix is not None:
                cur = emit(suffix, (cur,))
            out[i] = cur
        elif t == "relate":
            out[i] = emit("scene") if replace == i else emit("relate", (get(nd.inputs[0]),), (relations[nd.relation],))
        else:
            out[i] = emit(t, tuple(get(j) for j in nd.inputs))
    return nodes, macro_of


# ====================================================================== words
def plural(noun: str) -> str:
    """English plural of a noun phrase's last word (``bus`` -> ``buses``)."""
    return noun + "es" if noun.endswith(("bus", "s", "x", "ch", "sh")) else noun + "s"


def attribute_words(onto: Ontology, attr: str, value: str) -> tuple[str, ...]:
    """The words that may say ``attr = value`` (a filter value: shape categories and generic part
    names included); for ``shape`` and ``partname`` these are nouns."""
    if attr == "size":
        return SIZE_WORDS.get(value, (value,))
    if attr == "material":
        return MATERIAL_WORDS.get(value, (value,))
    if attr == "texture":
        return TEXTURE_WORDS.get(value, (value,))
    if attr == "shape":
        if value in onto.categories:
            return CATEGORY_NOUNS.get(value, (value,))
        return (onto.spoken_value("shape", value),)
    if attr == "partname":
        return (onto.spoken_value("partname", value),)
    return (value,)


def _name_words(spoken: str) -> frozenset[str]:
    s = spoken.replace("head light", "headlight").replace("tail light", "taillight")
    return frozenset(s.split())


# ====================================================================== per-scene index
class _SceneIndex:
    """Bit-set tables of one scene for the search (objects: bit i; parts: bit i*32+k, every part of
    the shape, so that visual ambiguity can be checked; the executor's parts are the ``listed``)."""

    def __init__(self, gen: "QuestionGenerator", record: Mapping[str, Any],
                 companions: Sequence[SymbolicScene] = ()):
        onto = gen.ontology
        self.gen, self.onto = gen, onto
        self.sym = SymbolicScene.from_json(record, onto, where=f"scene {record.get('image_index')}")
        # other visual levels of the layout: a part is described only by what it shows at every level
        self.companions = tuple(companions)
        self.cs = gen.executor.compile_scene(self.sym)
        self.n, self.all = self.cs.n, self.cs.all
        self.objs = self.sym.objects
        self.masks = self.cs.masks
        self.rel = self.cs.rel if self.n else {r: [] for r in onto.relations}
        self.tex = gen.use_texture and "texture" in onto.attributes
        self._odescs: dict[int, list] = {}
        self._pdescs: dict[int, list] = {}
        self._parts_ready = False
        self._desc_mask: dict[tuple, int] = {}

    # ------------------------------------------------------------------ objects
    def mask(self, desc: tuple) -> int:
        m = self._desc_mask.get(desc)
        if m is None:
            m = self.all
            for av in desc:
                m &= self.masks[av]
            self._desc_mask[desc] = m
        return m

    def obj_descs(self, i: int) -> list[tuple[tuple, frozenset, int]]:
        """Every description of object i: (desc, attributes, mask), shortest first."""
        got = self._odescs.get(i)
        if got is not None:
            return got
        o = self.objs[i]
        base = [("size", o["size"]), ("color", o["color"]), ("material", o["material"])]
        if self.tex and o.get("texture", "none") != "none":
            base.append(("texture", o["texture"]))
        cat = self.onto.category_of(o["shape"])
        shapes = [None, ("shape", o["shape"])] + ([("shape", cat)] if cat else [])
        out = []
        for r in range(len(base) + 1):
            for comb in combinations(base, r):
                for sh in shapes:
                    d = comb + ((sh,) if sh else ())
                    out.append((d, frozenset(a for a, _ in d), self.mask(d)))
        out.sort(key=lambda x: len(x[0]))
        self._odescs[i] = out
        return out

    def full_object_desc(self, i: int, spec: RefSpec | None = None) -> tuple:
        o = self.objs[i]
        d = []
        for a in OBJECT_ATTRS:
            if spec is not None and not spec.allows(a):
                continue
            if a == "texture" and (not self.tex or o.get("texture", "none") == "none"):
                continue
            d.append((a, o[a]))
        return tuple(d)

    # ------------------------------------------------------------------ parts
    def _build_parts(self) -> None:
        onto, P = self.onto, PART_BITS
        self.vmask: dict[tuple[str, str], int] = defaultdict(int)
        self.part_name: dict[int, str] = {}
        self.part_attrs: dict[int, Mapping[str, str]] = {}
        self.obj_range = [0] * self.n
        self.listed = 0
        attrs = ["color", "material"] + (["texture"] if self.tex else [])
        # per companion level: attribute masks over all parts, and its listed parts
        self.level_vmasks: list[dict[tuple[str, str], int]] = [defaultdict(int) for _ in self.companions]
        self.level_listed = [0] * len(self.companions)
        self.stable_attrs: dict[int, Mapping[str, str]] = {}
        for i, o in enumerate(self.objs):
            listed = self.sym.parts[i] if i < len(self.sym.parts) else {}
            for k, name in enumerate(onto.parts_of(o["shape"])):
                bit = i * P + k
                b = 1 << bit
                self.obj_range[i] |= b
                self.part_name[bit] = name
                pa = listed.get(name)
                if pa is None:
                    pa = o
                else:
                    self.listed |= b
                    self.part_attrs[bit] = pa
                for a in attrs:
                    self.vmask[(a, pa[a])] |= b
                stable = {a: pa[a] for a in attrs if a in pa}
                for lv, comp in enumerate(self.companions):
                    lpa = comp.parts[i].get(name) if i < len(comp.parts) else None
                    if lpa is None:
                        lpa = comp.objects[i]
                    elif listed.get(name) is not None:
                        self.level_listed[lv] |= b
                    for a in attrs:
                        self.level_vmasks[lv][(a, lpa[a])] |= b
                    stable = {a: v for a, v in stable.items() if lpa.get(a) == v}
                if listed.get(name) is not None:
                    self.stable_attrs[bit] = stable
        self._range: dict[int, int] = {}
        self._pname: dict[str, tuple[int, int]] = {}
        self._pmask: dict[tuple, tuple[int, int]] = {}
        self._parts_ready = True

    def parts_ready(self) -> None:
        if not self._parts_ready:
            self._build_parts()

    def range(self, objmask: int) -> int:
        """Every part bit of the objects of ``objmask``."""
        r = self._range.get(objmask)
        if r is None:
            r = 0
            for i in mask_bits(objmask):
                r |= self.obj_range[i]
            self._range[objmask] = r
        return r

    def pname(self, key: str) -> tuple[int, int]:
        """(program mask, visual mask) of a part-name filter value over all part bits."""
        got = self._pname.get(key)
        if got is None:
            prog = set(self.onto.partname_matching(key))
            vis = self.gen._visual_names.get(key, prog)
            pm = vm = 0
            for bit, name in self.part_name.items():
                if name in prog:
                    pm |= 1 << bit
                if name in vis:
                    vm |= 1 << bit
            got = self._pname[key] = (pm, vm | pm)
        return got

    def pmask(self, desc: tuple) -> tuple[int, int]:
        """(program mask over listed parts, visual mask over all parts) of a part description; with
        companion levels, the union over the levels (a description unique here and there has the
        one part as its union)."""
        got = self._pmask.get(desc)
        if got is None:
            got = self._level_pmask(desc, self.listed, self.vmask)
            for listed, vmask in zip(self.level_listed, self.level_vmasks):
                prog, vis = self._level_pmask(desc, listed, vmask)
                got = (got[0] | prog, got[1] | vis)
            self._pmask[desc] = got
        return got

    def _level_pmask(self, desc: tuple, listed: int, vmask: Mapping[tuple[str, str], int]) -> tuple[int, int]:
        vis = -1
        prog = listed
        for a, v in desc:
            if a == "partname":
                pm, vm = self.pname(v)
                prog &= pm
                vis &= vm
            else:
                m = vmask.get((a, v), 0)
                prog &= m
                vis &= m
        if vis == -1:
            vis = 0
            for r in self.obj_range:
                vis |= r
        return prog, vis

    def part_descs(self, bit: int) -> list[tuple[tuple, frozenset, int, int]]:
        """Every description of listed part ``bit``: (desc, attributes, program mask, visual mask)."""
        got = self._pdescs.get(bit)
        if got is not None:
            return got
        pa, name = self.stable_attrs[bit], self.part_name[bit]
        base = [(a, pa[a]) for a in ("color", "material") if a in pa]
        if self.tex and pa.get("texture", "none") != "none":
            base.append(("texture", pa["texture"]))
        names = [None] + [("partname", k) for k in self.gen._generic_keys.get(name, ())] + [("partname", name)]
        out = []
        for r in range(len(base) + 1):
            for comb in combinations(base, r):
                for nm in names:
                    d = comb + ((nm,) if nm else ())
                    prog, vis = self.pmask(d)
                    out.append((d, frozenset(a for a, _ in d), prog, vis))
        out.sort(key=lambda x: len(x[0]))
        self._pdescs[bit] = out
        return out

    def full_part_desc(self, bit: int, spec: RefSpec) -> tuple:
        pa, name = self.stable_attrs[bit], self.part_name[bit]
        d = []
        for a in PART_ATTRS:
            if not spec.allows(a):
                continue
            if a == "partname":
                d.append((a, name))
            elif a == "texture":
                if self.tex and pa.get("texture", "none") != "none":
                    d.append((a, pa[a]))
            elif a in pa:
                d.append((a, pa[a]))
        return tuple(d)


# ====================================================================== instantiation
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


class _Fail(Exception):
    pass


def _allowed(attrs: frozenset, spec: RefSpec) -> bool:
    for a in attrs:
        if not spec.allows(a):
            return False
    return True


@dataclass
class QuestionGenerator:
    """Makes object and part questions for scenes (see the module docstring for the rules).

    Args:
        ontology: the Super-CLEVR ontology (shapes, categories, parts).
        templates: from :func:`load_templates`.
        max_tries: instantiation attempts per image and question kind (object, part).
        tries_per_template: attempts of one template in one pass before the next template.
        fruitless_passes: passes over all templates without a new question that end the search.
        use_texture: allow texture filters (never texture ``none``); off by default.
        unambiguous_part_names: reject a question whose program filters a part name that the
            question's words cannot determine. Super-CLEVR spells 17 spoken part names with two
            keys (``front_right_wheel`` on some vehicles, ``wheel_front_right`` on others) and a
            program must use the key of the vehicle's model; when the question does not name the
            model (or a category whose models all use one key), the key is a guess from the text
            alone. On by default; off reproduces the official engine, which asks such questions.
        balance_ratio, balance_slack: the answer-balancing rule (:meth:`is_balanced`).

    Attributes:
        answer_counts: family -> Counter of answers produced (over every image generated).
        usage: family -> number of questions produced.
        rejections: why candidates were rejected, summed over every call.
        last_report: what the last :meth:`generate` call found and why it stopped: ``produced``
            and ``requested`` per kind, ``attempts``, ``rejected`` (reason -> count),
            ``complete`` and, when incomplete, ``reasons``.
    """

    ontology: Ontology
    templates: list[Template]
    max_tries: int = 400
    tries_per_template: int = 3
    fruitless_passes: int = 2
    use_texture: bool = False
    unambiguous_part_names: bool = True
    balance_ratio: float = 1.5
    balance_slack: int = 2
    answer_counts: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter), init=False)
    usage: Counter = field(default_factory=Counter, init=False)
    rejections: Counter = field(default_factory=Counter, init=False)
    last_report: dict | None = field(default=None, init=False)
    _companions: list = field(default_factory=list, init=False, repr=False)
    _answer_cs: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        onto = self.ontology
        if not onto.has_parts:
            raise ValueError(f"ontology {onto.name!r} has no parts; the question engine needs Super-CLEVR's")
        self.executor = DeterministicExecutor(onto)
        self._by_kind = {"object": [t for t in self.templates if t.kind == "object"],
                         "part": [t for t in self.templates if t.kind == "part"]}
        # part-name filter values: specific name -> generic keys that keep it; visual matching by words
        words = {n: _name_words(onto.spoken_value("partname", n)) for n in onto.part_names}
        self._generic_keys: dict[str, tuple[str, ...]] = defaultdict(tuple)
        self._visual_names: dict[str, frozenset[str]] = {}
        for key, names in onto.partname_filters.items():
            for n in names:
                if n != key:
                    self._generic_keys[n] = self._generic_keys[n] + (key,)
            kw = _name_words(onto.spoken_value("partname", key))
            self._visual_names[key] = frozenset({n for n in onto.part_names if kw <= words[n]} | set(names))
        self._generic_keys = {k: tuple(sorted(v)) for k, v in self._generic_keys.items()}

    @classmethod
    def default(cls, **kw) -> "QuestionGenerator":
        """The Super-CLEVR ontology with the templates of ``data/templates``."""
        onto = load_ontology("superclevr")
        return cls(onto, load_templates(ontology=onto), **kw)

    # ------------------------------------------------------------------ balancing
    def state(self) -> dict:
        """The cross-image state (answer counts and family usage) as JSON-able data, to resume a
        split with :meth:`load_state` exactly where it stopped (the questions of an image depend
        on the images generated before it through this state)."""
        return {"answer_counts": {f: [[a, n] for a, n in c.items()] for f, c in self.answer_counts.items()},
                "usage": dict(self.usage)}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state` returned."""
        self.answer_counts = defaultdict(Counter, {f: Counter({a: n for a, n in pairs})
                                                   for f, pairs in state.get("answer_counts", {}).items()})
        self.usage = Counter(state.get("usage", {}))

    def is_balanced(self, family: str, answer: Any) -> bool:
        """Whether one more ``answer`` keeps ``family`` balanced: ``count[answer] + 1 <=
        balance_slack + balance_ratio * max(count of any other answer)``."""
        c = self.answer_counts[family]
        mine = c.get(answer, 0)
        other = max((v for a, v in c.items() if a != answer), default=0)
        return mine + 1 <= self.balance_slack + self.balance_ratio * other

    # ------------------------------------------------------------------ public
    def generate(self, scene: Mapping[str, Any], rng: np.random.Generator, n_object: int = 10,
                 n_part: int = 10, redundancy: str = "rd", *, companions: Sequence[Mapping[str, Any]] = (),
                 answer_scene: Mapping[str, Any] | None = None) -> list[dict]:
        """Questions about one scene.

        Args:
            scene: a scene record (Super-CLEVR schema: ``objects`` with shape, color, material,
                size, optional texture, ``parts``, ``3d_coords``; ``relationships`` or
                ``directions``; ``image_index``, ``image_filename``, ``split``).
            rng: one integer is drawn from it; everything else derives from that integer, so the
                same seed and scene give the same questions, at every redundancy level.
            n_object, n_part: how many object and part questions to make.
            redundancy: ``"rd-"``, ``"rd"`` or ``"rd+"``.
            companions: other forms of the same layout (another visual level: the same objects,
                other part colours) on which a question must be well-posed too: the program of
                every redundancy level runs on each of them without an execution error (a unique
                reference stays unique); else the candidate is rejected (``visual_level``).
            answer_scene: the form of the layout whose answer each record carries (default
                ``scene``); the search, balancing and texts use ``scene`` alone, so every form
                gets the same questions.

        Returns:
            Question records (object questions first), possibly fewer than asked for; see
            :attr:`last_report`.

        Raises:
            ValueError: an unknown redundancy level.
            executors.FormatError: a malformed scene record.
        """
        if redundancy not in LEVELS:
            raise ValueError(f"unknown redundancy {redundancy!r}; valid: {list(LEVELS)}")
        seed = int(rng.integers(0, 2 ** 62))
        rnd = random.Random(seed)
        where = f"scene {scene.get('image_index')}"
        comp_syms = [SymbolicScene.from_json(c, self.ontology, where=where) for c in companions]
        idx = _SceneIndex(self, scene, comp_syms)
        self._companions = [self.executor.compile_scene(c) for c in comp_syms]
        self._answer_cs = (None if answer_scene is None else
                           self.executor.compile_scene(SymbolicScene.from_json(answer_scene, self.ontology, where=where)))
        report: dict[str, Any] = {"image_index": scene.get("image_index"), "redundancy": redundancy,
                                  "requested": {"object": n_object, "part": n_part},
                                  "produced": {"object": 0, "part": 0}, "attempts": {"object": 0, "part": 0},
                                  "rejected": Counter(), "complete": True, "reasons": []}
        questions: list[dict] = []
        seen: set[str] = set()  # question keys: a question is asked once per image
        k = 0
        for kind, want in (("object", n_object), ("part", n_part)):
            templates = self._by_kind[kind]
            made = attempts = fruitless = 0
            if want > 0 and kind == "part":
                idx.parts_ready()
            while made < want and attempts < self.max_tries and templates:
                order = sorted(templates, key=lambda t: (self.usage[t.family], rnd.random()))
                made_in_pass = 0
                for tpl in order:
                    if made >= want or attempts >= self.max_tries:
                        break
                    for _ in range(self.tries_per_template):
                        if attempts >= self.max_tries:
                            break
                        attempts += 1
                        core = self._attempt(tpl, idx, rnd, report["rejected"])
                        if core is None:
                            continue
                        if core.key in seen:
                            report["rejected"]["duplicate"] += 1
                            continue
                        if not self.is_balanced(tpl.family, core.answer):
                            report["rejected"]["balance"] += 1
                            continue
                        rec = self._record(core, idx, scene, redundancy, seed, k)
                        if isinstance(rec, str):
                            report["rejected"][rec] += 1
                            continue
                        seen.add(core.key)
                        self.answer_counts[tpl.family][core.answer] += 1
                        self.usage[tpl.family] += 1
                        questions.append(rec)
                        made += 1
                        made_in_pass += 1
                        k += 1
                        break
                fruitless = 0 if made_in_pass else fruitless + 1
                if fruitless >= self.fruitless_passes:
                    break
            report["produced"][kind] = made
            report["attempts"][kind] = attempts
            if made < want:
                report["complete"] = False
                why = (f"{kind} questions: {made} of {want} after {attempts} attempts")
                if kind == "part" and idx.n and idx._parts_ready and not idx.listed:
                    why += " (no object has a listed part: nothing to ask about parts)"
                elif idx.n < 2:
                    why += f" (the scene has {idx.n} object(s))"
                elif attempts >= self.max_tries:
                    why += " (max_tries reached)"
                else:
                    why += f" ({self.fruitless_passes} passes over the templates found no new question)"
                report["reasons"].append(why)
        self.rejections.update(report["rejected"])
        report["rejected"] = dict(report["rejected"])
        self.last_report = report
        return questions

    # ------------------------------------------------------------------ one attempt
    def _attempt(self, tpl: Template, idx: _SceneIndex, rnd: random.Random, rejected: Counter) -> _Core | None:
        try:
            core = self._instantiate(tpl, idx, rnd)
        except _Fail as e:
            rejected[str(e)] += 1
            return None
        descs = {n: r.desc for n, r in core.refs.items()}
        try:
            core.answer = self._answer(tpl, idx, descs, core.relations)
        except ExecutionError:
            rejected["execution"] += 1  # a bug guard: the search should only build valid programs
            return None
        if not self._relates_ok(tpl, idx, descs, core.relations, core.answer):
            rejected["degenerate relate"] += 1
            return None
        parts = [f"{tpl.filename}:{tpl.index}"]
        for name in sorted(core.refs):
            r = core.refs[name]
            parts.append(f"{name}={r.target}" if r.unique else f"{name}={r.desc}")
        parts += [f"{n}={v}" for n, v in sorted(core.relations.items())]
        core.key = hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]
        return core

    def _answer(self, tpl, idx, descs, relations, anchors=None, replace=None):
        nodes, _ = _expand(tpl, descs, relations, anchors or {}, replace)
        return self.executor.run(Program(tuple(nodes)), idx.cs, trace=False).answer

    def _relates_ok(self, tpl, idx, descs, relations, answer) -> bool:
        """Official rule for raw relate nodes: replacing one by scene changes the answer."""
        for i, nd in enumerate(tpl.nodes):
            if nd.type != "relate":
                continue
            try:
                if self._answer(tpl, idx, descs, relations, None, i) == answer:
                    return False
            except ExecutionError:
                pass
        return True

    def _instantiate(self, tpl: Template, idx: _SceneIndex, rnd: random.Random) -> _Core:
        vals: list[tuple] = [()] * len(tpl.nodes)
        refs: dict[str, _Ref] = {}
        relations: dict[str, str] = {}
        taken_o = 0
        taken_p: set[int] = set()
        onto = self.ontology
        for i, nd in enumerate(tpl.nodes):
            t = nd.type
            ins = [vals[j] for j in nd.inputs]
            if t == "scene":
                vals[i] = ("O", idx.all, False)
            elif t in ("filter", "filter_unique", "filter_count", "filter_exist"):
                _, dom, relational = ins[0]
                spec = tpl.refs[nd.ref]
                if spec.joint:
                    refs[nd.ref] = _Ref(spec, i, True, dom, relational)
                    vals[i] = ("J", nd.ref, dom)
                    continue
                if t == "filter_unique":
                    got = self._unique_object(idx, dom, spec, relational, rnd, taken_o)
                    if got is None:
                        raise _Fail("no unique object")
                    tgt, desc = got
                    taken_o |= 1 << tgt
                    root = (not relational) and dom == idx.all and tpl.nodes[nd.inputs[0]].type == "scene"
                    refs[nd.ref] = _Ref(spec, i, True, dom, relational, tgt, desc, 1 << tgt, root)
                    vals[i] = ("o", tgt)
                else:
                    got = self._set_desc(idx, dom, spec, relational, rnd)
                    if got is None:
                        raise _Fail("no set description")
                    desc, out = got
                    refs[nd.ref] = _Ref(spec, i, False, dom, relational, -1, desc, out)
                    vals[i] = self._set_value(t, out, relational)
            elif t.startswith("relate_filter"):
                a = ins[0][1]
                spec = tpl.refs[nd.ref]
                rels = list(onto.relations)
                rnd.shuffle(rels)
                if t == "relate_filter_unique":
                    cands = [(r, o) for r in rels for o in mask_bits(idx.rel[r][a]) if not taken_o >> o & 1]
                    rnd.shuffle(cands)
                    for r, o in cands:
                        descs = self._min_object_descs(idx, o, idx.rel[r][a], spec, True)
                        if descs:
                            break
                    else:
                        raise _Fail("no related unique object")
                    desc = descs[rnd.randrange(len(descs))]
                    taken_o |= 1 << o
                    relations[nd.relation] = r
                    refs[nd.ref] = _Ref(spec, i, True, idx.rel[r][a], True, o, desc, 1 << o)
                    vals[i] = ("o", o)
                else:
                    for r in rels:
                        dom = idx.rel[r][a]
                        got = self._set_desc(idx, dom, spec, True, rnd)
                        if got is not None:
                            break
                    else:
                        raise _Fail("no related set description")
                    desc, out = got
                    relations[nd.relation] = r
                    refs[nd.ref] = _Ref(spec, i, False, dom, True, -1, desc, out)
                    vals[i] = self._set_value(t, out, True)
            elif t == "relate":
                a = ins[0][1]
                rels = [r for r in onto.relations if idx.rel[r][a]]
                if not rels:
                    raise _Fail("no relation")
                r = rels[rnd.randrange(len(rels))]
                relations[nd.relation] = r
                vals[i] = ("O", idx.rel[r][a], True)
            elif t.startswith("same_"):
                attr = SIGNATURES[t].attribute
                a = ins[0][1]
                vals[i] = ("O", idx.masks[(attr, idx.objs[a][attr])] & ~(1 << a), True)
            elif t in ("union", "intersect"):
                x, y = ins[0][1], ins[1][1]
                if t == "union" and not (x & ~y and y & ~x):
                    raise _Fail("union operand adds nothing")
                vals[i] = ("O", (x | y) if t == "union" else (x & y), ins[0][2] or ins[1][2])
            elif t == "count":
                vals[i] = ("I", ins[0][1].bit_count())
            elif t == "exist":
                vals[i] = ("B", ins[0][1] != 0)
            elif t == "unique":
                m = ins[0][1]
                if ins[0][0] != "O" or m == 0 or m & (m - 1):
                    raise _Fail("unique")
                vals[i] = ("o", m.bit_length() - 1)
            elif t.startswith("query_"):
                vals[i] = ("V", idx.objs[ins[0][1]][SIGNATURES[t].attribute])
            elif t == "object2part":
                if ins[0][0] == "J":
                    vals[i] = ("PJ", ins[0][1], ins[0][2])
                elif ins[0][0] == "o":
                    vals[i] = ("P", 1 << ins[0][1], False)
                else:
                    vals[i] = ("P", ins[0][1], ins[0][2])
            elif t == "partfilter_unique":
                spec = tpl.refs[nd.ref]
                if ins[0][0] == "PJ":
                    aname, dom = ins[0][1], ins[0][2]
                    got = self._joint(idx, dom, refs[aname].spec, spec, rnd, taken_o, taken_p)
                    if got is None:
                        raise _Fail("no joint part description")
                    p, o, odesc, pdesc, objm = got
                    a = refs[aname]
                    a.target, a.desc, a.out = o, odesc, 1 << o
                    a.relational = False
                    taken_o |= 1 << o
                    refs[nd.ref] = _Ref(spec, i, True, objm, False, p, pdesc, 1 << p)
                else:
                    dom, relational = ins[0][1], ins[0][2]
                    got = self._unique_part(idx, dom, spec, relational, rnd, taken_p)
                    if got is None:
                        raise _Fail("no unique part")
                    p, pdesc = got
                    refs[nd.ref] = _Ref(spec, i, True, dom, relational, p, pdesc, 1 << p)
                taken_p.add(p)
                vals[i] = ("p", p)
            elif t == "part2object":
                vals[i] = ("O", 1 << (ins[0][1] // PART_BITS), True)
            elif t.startswith("partquery_"):
                p = ins[0][1]
                attr = SIGNATURES[t].attribute
                vals[i] = ("V", idx.part_name[p] if attr is None else idx.part_attrs[p][attr])
            else:  # equal_*, comparisons: values are not needed for the search
                vals[i] = ("V", None)
        def distinct_key(j: int):  # a reference's own output (its set, object or part), else the value
            nd = tpl.nodes[j]
            return ("ref", refs[nd.ref].out) if nd.ref is not None else vals[j][:2]

        for x, y in tpl.distinct:
            if distinct_key(x) == distinct_key(y):
                raise _Fail("distinct")
        return _Core(tpl, refs, relations)

    @staticmethod
    def _set_value(t: str, out: int, relational: bool) -> tuple:
        if t.endswith("_count"):
            return ("I", out.bit_count())
        if t.endswith("_exist"):
            return ("B", out != 0)
        return ("O", out, relational)

    # ------------------------------------------------------------------ descriptions
    def _unique_object(self, idx, dom, spec, relational, rnd, taken):
        cands = [t for t in mask_bits(dom) if not taken >> t & 1]
        return _pick_described(cands, lambda t: self._min_object_descs(idx, t, dom, spec, relational), rnd)

    @staticmethod
    def _min_object_descs(idx, t, dom, spec, relational) -> list[tuple]:
        """The shortest descriptions of object t unique in ``dom`` (and, for a reference reached
        through a relation, not unique in the whole scene). They are irreducible: a shorter
        unique sub-description would have passed the relation check too."""
        tb = 1 << t
        best = -1
        out = []
        for d, attrs, m in idx.obj_descs(t):
            if best >= 0 and len(d) > best:
                break
            if m & dom != tb or not _allowed(attrs, spec):
                continue
            if relational and m == tb:
                continue
            best = len(d)
            out.append(d)
        return out

    def _set_desc(self, idx, dom, spec, relational, rnd):
        """A set description over ``dom`` in which every filter changes the set."""
        onto = self.ontology
        allowed = [a for a in OBJECT_ATTRS if spec.allows(a) and (a != "texture" or idx.tex)]
        members = mask_bits(dom)
        for _ in range(3):
            if spec.required:
                attrs = list(spec.attrs)
            else:
                # no filter at all ("things") only where a relation already restricts the set
                k = rnd.choices((0, 1, 2, 3), (0.1 if relational else 0.0, 0.4, 0.35, 0.15))[0]
                attrs = rnd.sample(allowed, min(k, len(allowed)))
            if members and rnd.random() < 0.7:
                o = idx.objs[members[rnd.randrange(len(members))]]
                src = {a: o[a] for a in attrs}
            else:
                src = {}
                for a in attrs:
                    vals = onto.values(a)
                    if a == "texture":
                        vals = tuple(v for v in vals if v != "none")
                    src[a] = vals[rnd.randrange(len(vals))]
            desc = []
            for a in OBJECT_ATTRS:
                if a not in src:
                    continue
                v = src[a]
                if a == "texture" and v == "none":
                    continue
                if a == "shape" and rnd.random() < 0.5:
                    v = onto.category_of(v) or v
                desc.append((a, v))
            desc = tuple(desc)
            out = dom & idx.mask(desc)
            changed = True
            while changed and desc:
                changed = False
                order = list(range(len(desc)))
                rnd.shuffle(order)
                for j in order:
                    sub = desc[:j] + desc[j + 1:]
                    if dom & idx.mask(sub) == out:
                        desc, changed = sub, True
                        break
            if spec.required and len(desc) != len(spec.attrs):
                continue
            if not desc and not relational:
                continue  # "things" on their own: the whole scene
            if relational and idx.mask(desc) == out:
                continue
            return desc, out
        return None

    def _unique_part(self, idx, dom, spec, relational, rnd, taken):
        r = idx.range(dom)
        cands = [p for p in mask_bits(r & idx.listed) if p not in taken]
        return _pick_described(cands, lambda p: self._min_part_descs(idx, p, r, spec, relational), rnd)

    @staticmethod
    def _min_part_descs(idx, p, rng_mask, spec, relational) -> list[tuple]:
        """The shortest descriptions of part p unique among the parts of ``rng_mask`` in the image
        (every part of the shapes; the executor's listed parts are among them). As for objects,
        they are irreducible: without any one filter the description fits another part in the
        image (though maybe not another *listed* part: "the front right door of the bus" when the
        door is the bus's only listed part)."""
        pb = 1 << p
        best = -1
        out = []
        for d, attrs, prog, vis in idx.part_descs(p):
            if best >= 0 and len(d) > best:
                break
            if vis & rng_mask != pb or prog & rng_mask != pb or not _allowed(attrs, spec):
                continue
            if relational and prog == pb:
                continue
            best = len(d)
            out.append(d)
        return out

    def _joint(self, idx, dom, ospec, pspec, rnd, taken_o, taken_p):
        """A part p and descriptions of its object (a set filter) and of p, jointly shortest, such
        that of the parts of the matching objects exactly p fits the part description (in the
        image, hence also for the executor)."""
        cands = [p for p in mask_bits(idx.range(dom) & idx.listed) if p not in taken_p]
        rnd.shuffle(cands)
        for p in cands:
            o = p // PART_BITS
            if taken_o >> o & 1:
                continue
            pb = 1 << p
            odescs = [(d, m & dom) for d, attrs, m in idx.obj_descs(o) if _allowed(attrs, ospec)]
            pdescs = [(d, prog, vis) for d, attrs, prog, vis in idx.part_descs(p) if _allowed(attrs, pspec)]
            by_o: dict[int, list] = defaultdict(list)
            for x in odescs:
                by_o[len(x[0])].append(x)
            by_p: dict[int, list] = defaultdict(list)
            for x in pdescs:
                by_p[len(x[0])].append(x)
            found = []
            for s in range(max(by_o, default=0) + max(by_p, default=0) + 1):
                for i in range(s + 1):
                    for od, objm in by_o.get(i, ()):
                        rm = idx.range(objm)
                        for pd, prog, vis in by_p.get(s - i, ()):
                            if vis & rm == pb and prog & rm == pb:
                                found.append((od, pd, objm))
                if found:
                    od, pd, objm = found[rnd.randrange(len(found))]
                    return p, o, od, pd, objm
        return None

    # ------------------------------------------------------------------ levels
    def _level_descs(self, core: _Core, idx: _SceneIndex, level: str, seed: int, k: int):
        """(descriptions, anchors) of the references at a redundancy level."""
        refs = core.refs
        descs = {n: r.desc for n, r in refs.items()}
        if level == "rd-":
            return descs, {}
        if level == "rd+":
            full = {n: self._full_desc(r, idx) for n, r in refs.items()}
            return full, self._anchors(core, idx, full, random.Random(seed * 1_000_003 + k * 7 + 3))
        rnd = random.Random(seed * 1_000_003 + k * 7 + 1)
        out = {}
        for n, r in refs.items():
            extra = self._optional_entries(r, idx)
            desc = r.desc
            for _ in range(4):
                have = {a for a, _ in r.desc}
                add = []
                for a, options in extra:
                    if a not in have and rnd.random() < 0.5:
                        add.append((a, options[rnd.randrange(len(options))]))
                cand = self._ordered(r.desc + tuple(add), r.spec.kind)
                if self._relation_kept(r, idx, cand):
                    desc = cand
                    break
            out[n] = desc
        try:
            if not self._relates_ok(core.tpl, idx, out, core.relations, core.answer):
                return descs, {}
        except ExecutionError:
            return descs, {}
        return out, {}

    @staticmethod
    def _ordered(desc: tuple, kind: str) -> tuple:
        order = _OBJ_ORDER if kind == "object" else _PART_ORDER
        return tuple(sorted(desc, key=lambda av: order[av[0]]))

    def _optional_entries(self, r: _Ref, idx: _SceneIndex) -> list[tuple[str, tuple]]:
        """Attributes that may be added to a reference without changing what it refers to:
        (attribute, possible filter values)."""
        spec, onto = r.spec, self.ontology
        out = []
        if r.spec.kind == "part":
            pa, name = idx.stable_attrs[r.target], idx.part_name[r.target]
            for a in PART_ATTRS:
                if not spec.allows(a):
                    continue
                if a == "partname":
                    out.append((a, self._generic_keys.get(name, ()) + (name,)))
                elif a == "texture":
                    if idx.tex and pa.get("texture", "none") != "none":
                        out.append((a, (pa[a],)))
                elif a in pa:
                    out.append((a, (pa[a],)))
            return out
        members = [r.target] if r.unique else mask_bits(r.out)
        if not members:
            return out
        for a in OBJECT_ATTRS:
            if not spec.allows(a) or (a == "texture" and not idx.tex):
                continue
            vals = {idx.objs[j][a] for j in members}
            if a == "shape":
                cats = {onto.category_of(v) for v in vals}
                opts = (((vals.pop(),) if len(vals) == 1 else ())
                        + (tuple(cats) if len(cats) == 1 and None not in cats else ()))
                if opts:
                    out.append((a, opts))
            elif len(vals) == 1:
                v = vals.pop()
                if not (a == "texture" and v == "none"):
                    out.append((a, (v,)))
        return out

    def _full_desc(self, r: _Ref, idx: _SceneIndex) -> tuple:
        if r.spec.kind == "part":
            return self._ordered(idx.full_part_desc(r.target, r.spec), "part")
        if r.unique:
            return idx.full_object_desc(r.target, r.spec)
        entries = dict(r.desc)
        for a, opts in self._optional_entries(r, idx):
            entries[a] = opts[0]  # the most specific value first (shape before category)
        return self._ordered(tuple(entries.items()), "object")

    def _relation_kept(self, r: _Ref, idx: _SceneIndex, desc: tuple) -> bool:
        """rd: the description must not make the reference's relation redundant."""
        if not r.relational:
            return True
        if r.spec.kind == "part":
            return idx.pmask(desc)[0] != 1 << r.target
        if r.unique:
            return idx.mask(desc) != 1 << r.target
        return idx.mask(desc) != r.out

    def _anchors(self, core: _Core, idx: _SceneIndex, full: Mapping[str, tuple], rnd: random.Random) -> dict:
        """rd+: for each top-level unique object, a relation that holds to another object."""
        grounded = 0
        for r in core.refs.values():
            if r.spec.kind == "object" and r.unique and r.target >= 0:
                grounded |= 1 << r.target
        used = 0
        anchors = {}
        for name in sorted(core.refs):
            r = core.refs[name]
            if not (r.root and r.unique and r.spec.kind == "object" and r.spec.extra_relation):
                continue
            cands = []
            for j in range(idx.n):
                if (grounded | used) >> j & 1:
                    continue
                jd = idx.full_object_desc(j)
                if idx.mask(jd) != 1 << j:
                    continue
                for rel in self.ontology.relations:
                    if idx.rel[rel][j] >> r.target & 1:
                        cands.append((j, rel, jd))
            if cands:
                j, rel, jd = cands[rnd.randrange(len(cands))]
                anchors[name] = (rel, jd, j)
                used |= 1 << j
        return anchors

    # ------------------------------------------------------------------ records
    def ambiguous_part_name(self, nodes: Sequence[Node]) -> str | None:
        """The first part-name filter value of a program that its question's words cannot
        determine, else None (see ``unambiguous_part_names``).

        A key spoken like another key is determined when the shape filters on the chain of
        objects whose parts are filtered leave models that all use one key for that spoken name
        (:func:`executors.program.partname_shapes`, :meth:`Ontology.partname_key`).
        """
        onto = self.ontology
        for i, node in enumerate(nodes):
            if node.function != "partfilter_partname" or len(onto.alike_partnames(node.value_inputs[0])) == 1:
                continue
            if onto.partname_key(node.value_inputs[0], partname_shapes(nodes, i, onto)) is None:
                return node.value_inputs[0]
        return None

    def _record(self, core: _Core, idx: _SceneIndex, scene: Mapping, level: str, seed: int, k: int) -> dict | str:
        """The question record at a redundancy level, or why there is none."""
        tpl = core.tpl
        descs, anchors = self._level_descs(core, idx, level, seed, k)
        prog_anchors = {n: (a[0], a[1]) for n, a in anchors.items()}
        nodes, _ = _expand(tpl, descs, core.relations, prog_anchors, None)
        if self.unambiguous_part_names or self._companions:
            # checked at every redundancy level, so that the three levels keep asking the same
            # questions (and, with companions, the visual levels too)
            for other in LEVELS:
                if other == level:
                    lvl_nodes = nodes
                else:
                    d, a = self._level_descs(core, idx, other, seed, k)
                    lvl_nodes, _ = _expand(tpl, d, core.relations, {n: (v[0], v[1]) for n, v in a.items()}, None)
                if self.unambiguous_part_names and self.ambiguous_part_name(lvl_nodes):
                    return "ambiguous_part_name"
                for cs in self._companions:
                    try:
                        self.executor.run(Program(tuple(lvl_nodes)), cs, trace=False)
                    except ExecutionError:
                        return "visual_level"
        program = Program(tuple(nodes))
        try:
            answer = self.executor.run(program, idx.cs, trace=False).answer
        except ExecutionError:
            return "render"
        if answer != core.answer:
            return "render"
        if self._answer_cs is not None:  # the answer at the level the record is written for
            try:
                answer = self.executor.run(program, self._answer_cs, trace=False).answer
            except ExecutionError:
                return "visual_level"
        text, obj_map = self._text(core, idx, descs, anchors, seed, k)
        stem = tpl.filename[:-5] if tpl.filename.endswith(".json") else tpl.filename
        return {
            "image_index": scene.get("image_index"),
            "image_filename": scene.get("image_filename"),
            "split": scene.get("split"),
            "question": text,
            "program": program.to_json(),
            "answer": answer,
            "question_family_index": tpl.index,
            "template_filename": tpl.filename,
            "question_hash": f"{scene.get('image_index')}_{stem}_{tpl.index}_{core.key}",
            "obj_map": obj_map,
            "redundancy": level,
        }

    @staticmethod
    def _pick(options: Sequence, seed: int, k: int, slot: str):
        if len(options) == 1:
            return options[0]
        return options[zlib.crc32(f"{seed}:{k}:{slot}".encode()) % len(options)]

    def _text(self, core: _Core, idx: _SceneIndex, descs, anchors, seed: int, k: int) -> tuple[str, dict]:
        tpl, pick = core.tpl, self._pick
        items = pick(tpl.parsed, seed, k, "variant")
        toks: list[tuple[str, tuple | None]] = []  # (text, keys): keys None = literal, () = a word
        slot = [0]

        def phrase(name: str, form: str) -> None:
            r = core.refs[name]
            if r.spec.kind == "part":
                keys = (f"{r.target // PART_BITS}_{r.target % PART_BITS}",)
            elif r.unique:
                keys = (str(r.target),)
            else:
                keys = tuple(str(j) for j in mask_bits(r.out))
            words = self._np_words(name, descs[name], r.spec.kind, form, keys, seed, k)
            if form == "a":
                words.insert(0, ("an" if words[0][0][:1] in "aeio" else "a", ()))
            toks.extend(words)
            if name in anchors:
                rel, jd, j = anchors[name]
                toks.append(("that is", ()))
                toks.append((pick(RELATION_PHRASES[rel], seed, k, f"{name}.anchor"), ()))
                toks.append(("the", ()))
                toks.extend(self._np_words(f"{name}.anchor", jd, "object", "sg", (str(j),), seed, k))

        def walk(seq) -> None:
            for it in seq:
                if it[0] == "lit":
                    toks.append((it[1], None))
                elif it[0] == "opt":
                    slot[0] += 1
                    if pick((True, False), seed, k, f"opt{slot[0]}"):
                        walk(it[1])
                elif it[0] == "alt":
                    slot[0] += 1
                    walk(pick(it[1], seed, k, f"alt{slot[0]}"))
                elif it[1] in core.refs:
                    phrase(it[1], it[2])
                else:
                    toks.append((pick(RELATION_PHRASES[core.relations[it[1]]], seed, k, it[1]), ()))

        walk(items)
        buf = ""
        spans: dict[str, list[list[int]]] = defaultdict(list)
        for s, keys in toks:
            if keys is None:
                s = re.sub(r"\s+", " ", s)
                if not buf or buf.endswith(" "):
                    s = s.lstrip(" ")
                if buf.endswith(" ") and s[:1] in "?.,;:!":
                    buf = buf[:-1]
                buf += s
            else:
                if buf and not buf.endswith(" "):
                    buf += " "
                start = len(buf)
                buf += s
                for key in keys:
                    spans[key].append([start, len(buf)])
        buf = buf.rstrip()
        if buf:
            buf = buf[0].upper() + buf[1:]
        return buf, {key: sorted(v) for key, v in spans.items()}

    def _np_words(self, name: str, desc: tuple, kind: str, form: str, keys: tuple, seed: int, k: int) -> list:
        """Words of a noun phrase: attribute words then the noun, each tagged with ``keys``."""
        pick, onto = self._pick, self.ontology
        order = _OBJ_WORD_ORDER if kind == "object" else _PART_WORD_ORDER
        words = []
        noun = None
        for a, v in sorted(desc, key=lambda av: order[av[0]]):
            w = pick(attribute_words(onto, a, v), seed, k, f"{name}.{a}")
            if a in ("shape", "partname"):
                noun = w
            else:
                words.append((w, keys))
        if noun is None:
            noun = pick(GENERIC_NOUNS if kind == "object" else PART_NOUNS, seed, k, f"{name}.noun")
        words.append((plural(noun) if form == "pl" else noun, keys))
        return words


# ====================================================================== synthetic scenes
#: Ground-plane directions of a CLEVR-like camera (those of the reference scenes, rounded).
CLEVR_DIRECTIONS = {"right": [0.6563, 0.7545, 0.0], "left": [-0.6563, -0.7545, 0.0],
                    "behind": [-0.7545, 0.6563, 0.0], "front": [0.7545, -0.6563, 0.0],
                    "above": [0.0, 0.0, 1.0], "below": [0.0, 0.0, -1.0]}


def synthetic_scene(onto: Ontology, rng: np.random.Generator, n_objects: int | None = None, *,
                    image_index: int = 0, max_parts: int = 3, textures: bool = False,
                    split: str = "synthetic") -> dict:
    """A scene record like the generator's, without rendering (for tests and benchmarks).

    Objects get uniform random attributes (shapes: the placed ones, ``onto.scene_values``),
    positions at least 1.0 apart on a 6 x 6 ground,
    up to ``max_parts`` recoloured parts (another color, any material, the object's size), and
    ``relationships`` computed by :meth:`executors.SymbolicScene.relation_lists` (0.2 margin
    along :data:`CLEVR_DIRECTIONS`).
    """
    n = int(rng.integers(3, 11)) if n_objects is None else int(n_objects)
    shapes, colors = onto.scene_values("shape"), onto.values("color")
    tex = [t for t in onto.values("texture") if t != "none"] if "texture" in onto.attributes else []
    pos: list[tuple[float, float]] = []
    objects = []
    for _ in range(n):
        for _ in range(200):
            p = (float(rng.uniform(-3, 3)), float(rng.uniform(-3, 3)))
            if all((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 >= 1.0 for q in pos):
                break
        pos.append(p)
        shape = shapes[int(rng.integers(len(shapes)))]
        size = ("large", "small")[int(rng.integers(2))]
        color = colors[int(rng.integers(len(colors)))]
        o = {"shape": shape, "size": size, "color": color,
             "material": ("rubber", "metal")[int(rng.integers(2))],
             "3d_coords": [p[0], p[1], 0.7 if size == "large" else 0.35], "rotation": float(rng.uniform(0, 360))}
        if textures:
            o["texture"] = ["none", *tex][int(rng.integers(len(tex) + 1))]
        names = onto.parts_of(shape)
        k = int(rng.integers(0, min(max_parts, len(names)) + 1))
        parts = {}
        for j in sorted(rng.choice(len(names), size=k, replace=False).tolist()) if k else []:
            others = [c for c in colors if c != color]
            pa = {"color": others[int(rng.integers(len(others)))],
                  "material": ("rubber", "metal")[int(rng.integers(2))], "size": size}
            if textures:
                pa["texture"] = tex[int(rng.integers(len(tex)))]
            parts[names[j]] = pa
        o["parts"] = parts
        objects.append(o)
    rec = {"image_index": image_index, "image_filename": f"synthetic_{image_index:06d}.png", "split": split,
           "directions": {k: list(v) for k, v in CLEVR_DIRECTIONS.items()}, "objects": objects}
    rec["relationships"] = SymbolicScene.from_json(rec, onto).relation_lists()
    return rec


def _pick_described(cands: list, describe, rnd) -> tuple | None:
    """The first candidate (in a random order) that has a description, with one of its
    descriptions drawn at random; None when no candidate can be described."""
    rnd.shuffle(cands)
    for c in cands:
        descs = describe(c)
        if descs:
            return c, descs[rnd.randrange(len(descs))]
    return None
