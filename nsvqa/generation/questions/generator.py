"""The question generator (:class:`QuestionGenerator`): the search that instantiates templates on
a scene, answer balancing, the redundancy levels (:data:`LEVELS`) and the question records.

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
One instantiation is described at the level asked for (``rd-``, ``rd``, ``rd+``):
:mod:`nsvqa.generation.questions.levels`.

Texture filters are used only with ``use_texture=True`` (and never for texture ``none``): off by
default, so that the questions of a layout are the same at every visual-complexity level.

``question_hash``: ``"<image_index>_<template file stem>_<family index>_<16 hex>"``, the hex digits
a SHA-1 of the family, each reference's grounded object/part (or, for a set, its rd-
description) and the relations: the same at every redundancy level.
"""
from __future__ import annotations

import hashlib
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from executors import DeterministicExecutor, ExecutionError, Node, Ontology, Program, SymbolicScene, load_ontology
from executors.deterministic import mask_bits
from executors.program import partname_shapes
from executors.dsl import SIGNATURES
from executors.scene import PART_BITS

from .bindings import _Core, _Ref
from .scene_index import _SceneIndex
from .templates import OBJECT_ATTRS, RefSpec, Template, _expand, load_templates
from .levels import LEVELS, _LevelsMixin
from .text import _name_words, _TextMixin



# ====================================================================== instantiation
class _Fail(Exception):
    pass


def _allowed(attrs: frozenset, spec: RefSpec) -> bool:
    for a in attrs:
        if not spec.allows(a):
            return False
    return True


def _shortest(rows: Iterable[tuple[tuple, bool, bool]]) -> list[tuple]:
    """The shortest descriptions ``d`` among ``rows`` (``(d, fits, too_unique)``, shortest first)
    that fit and are not too unique (for a reference reached through a relation: unique in the
    whole scene); no row after the first one longer than those is read."""
    best = -1
    out = []
    for d, fits, too_unique in rows:
        if best >= 0 and len(d) > best:
            break
        if not fits or too_unique:
            continue
        best = len(d)
        out.append(d)
    return out


def _pick_described(cands: list, describe, rnd) -> tuple | None:
    """The first candidate (in a random order) that has a description, with one of its
    descriptions drawn at random; None when no candidate can be described."""
    rnd.shuffle(cands)
    for c in cands:
        descs = describe(c)
        if descs:
            return c, descs[rnd.randrange(len(descs))]
    return None


@dataclass
class QuestionGenerator(_LevelsMixin, _TextMixin):
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
        """The Super-CLEVR ontology with the built-in templates (:func:`template_dir`)."""
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
        return _shortest((d, m & dom == tb and _allowed(attrs, spec), relational and m == tb)
                         for d, attrs, m in idx.obj_descs(t))

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
        return _shortest((d, vis & rng_mask == pb and prog & rng_mask == pb and _allowed(attrs, spec),
                          relational and prog == pb) for d, attrs, prog, vis in idx.part_descs(p))

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
