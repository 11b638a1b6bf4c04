"""The redundancy levels of a question (:data:`LEVELS`): how one instantiation's references are
described at ``rd-``, ``rd`` and ``rd+`` (:class:`_LevelsMixin`, a part of
:class:`nsvqa.generation.questions.generator.QuestionGenerator`).

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
"""
from __future__ import annotations

import random
from typing import Mapping

from executors import ExecutionError
from executors.deterministic import mask_bits

from .bindings import _Core, _Ref
from .scene_index import _SceneIndex
from .templates import OBJECT_ATTRS, PART_ATTRS, _OBJ_ORDER, _PART_ORDER

LEVELS = ("rd-", "rd", "rd+")


class _LevelsMixin:
    """Describes an instantiation's references at a redundancy level. Needs the generator's
    ``ontology``, ``_generic_keys`` and ``_relates_ok``."""

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
