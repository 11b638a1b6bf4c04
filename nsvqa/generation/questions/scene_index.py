"""The per-scene index of the search: what objects, parts and descriptions a scene offers, as
bit-set tables (:class:`_SceneIndex`)."""
from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any, Mapping, Sequence

from executors import SymbolicScene
from executors.deterministic import mask_bits
from executors.scene import PART_BITS

from .templates import OBJECT_ATTRS, PART_ATTRS, RefSpec


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
