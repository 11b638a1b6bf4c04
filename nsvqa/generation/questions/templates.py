"""The template language: reading and checking template files (:func:`load_templates`), what a
template allows for a reference (:class:`RefSpec`), the parsed template (:class:`Template`), its
text syntax (:func:`parse_text`) and the macros' expansion into executor programs (``_expand``).

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
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from executors.errors import FormatError
from executors.io import read_json
from executors import ExecutionError, Node, Ontology, Program, load_ontology
from executors.dsl import SIGNATURES

#: The built-in question templates: ``nsvqa/generation/data/question_templates/*.json``, shipped
#: inside the package and found through :mod:`importlib.resources` (after any install).
DEFAULT_TEMPLATE_DIR = Path(resources.files("nsvqa.generation") / "data" / "question_templates")


def template_dir() -> Path:
    """``$NSVQA_TEMPLATE_DIR``, else the built-in templates (:data:`DEFAULT_TEMPLATE_DIR`)."""
    if "NSVQA_TEMPLATE_DIR" in os.environ:
        return Path(os.environ["NSVQA_TEMPLATE_DIR"])
    return DEFAULT_TEMPLATE_DIR


OBJECT_ATTRS = ("size", "color", "material", "texture", "shape")  # filter order in programs
PART_ATTRS = ("color", "material", "texture", "partname")
_OBJ_ORDER = {a: i for i, a in enumerate(OBJECT_ATTRS)}
_PART_ORDER = {a: i for i, a in enumerate(PART_ATTRS)}

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
            doc = read_json(f)
        except FormatError as e:  # strict JSON (executors.io.read_json): the file and the record named
            raise TemplateError(str(e)) from None
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
