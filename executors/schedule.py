"""The batched probabilistic executor's schedule: which nodes of which questions run together.

Every node of every question gets a storage slot, and nodes of one rule at the same height below
their answer node (``scene`` nodes first) form one group, run as a few array operations over all
its questions. What depends only on a program's structure (slots, heights, fused filter chains,
rules) is a :class:`Template`, built once per (structure, fuse) and kept in the ontology's cache;
a batch then only fills in the rows of each question and the parameters of its value nodes.
A batch with fused filter chains is scheduled per :class:`Skeleton` instead (a structure with
each filter chain as one position): its rows are made with array operations per skeleton.
One question on numpy is scheduled node by node (:func:`schedule_single`), with neither.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .dsl import OBJECT, OBJECT_SET, PART, PART_SET, SIGNATURES
from .ontology import Ontology
from .program import Program

# Storage kinds of node outputs.
_OBJ, _PART, _VAL = 0, 1, 2
_KIND_OF_TYPE = {OBJECT_SET: _OBJ, OBJECT: _OBJ, PART_SET: _PART, PART: _PART}

# Rules (op codes).
(SCENE, FILTER, UNIQUE_O, UNIQUE_P, RELATE, UNION, INTERSECT, COUNT, EXIST, QUERY, SAME,
 EQUAL_VALUE, EQUAL_INT, LESS, GREATER, EQUAL_OBJECT, OBJ2PART, PART2OBJ_SET, PART2OBJ_ONE,
 PARTFILTER, PARTNAME, PARTQUERY, PARTQUERY_NAME) = range(23)
RULE_NAMES = ("scene", "filter", "unique", "unique_part", "relate", "union", "intersect", "count",
              "exist", "query", "same", "equal_value", "equal_integer", "less_than", "greater_than",
              "equal_object", "object2part", "part2object_set", "part2object_one", "partfilter",
              "partfilter_partname", "partquery", "partquery_partname")
_SIMPLE = {"scene": SCENE, "filter": FILTER, "relate": RELATE, "union": UNION, "intersect": INTERSECT,
           "count": COUNT, "exist": EXIST, "query": QUERY, "same": SAME, "equal_value": EQUAL_VALUE,
           "equal_object": EQUAL_OBJECT, "object2part": OBJ2PART, "partfilter": PARTFILTER,
           "partfilter_partname": PARTNAME, "partquery": PARTQUERY, "partquery_partname": PARTQUERY_NAME}
_COMPARE = {"equal_integer": EQUAL_INT, "less_than": LESS, "greater_than": GREATER}
#: value-node kinds whose rule parameter depends on the node's value
_VALUED = ("filter", "relate", "partfilter", "partfilter_partname")


@dataclass
class Group:
    """Nodes of one rule run together: flat store rows of inputs and output, and parameters."""

    op: int
    s: Any            # scene index per node
    a: Any            # store row of input 0
    b: Any            # store row of input 1
    out: Any          # store row of the output
    param: Any        # rule parameter; flat (scene * n + parameter) for per-scene tables;
    #                   for a filter chain, one such array per filter
    node: np.ndarray  # node index per row (error reports, confidences)
    qn: np.ndarray    # question per row


@dataclass(frozen=True)
class Template:
    """What the schedule of one program structure is, whatever its values.

    Attributes:
        node_slots: per node, (storage kind, slot).
        counters: slots used per storage kind.
        has_part: whether any node yields parts (the question gets a row of the part store).
        entries: per scheduled node, (node, op, level, input-0 slot or None, input-1 slot or
            None, output slot, the nodes whose parameters it uses (a fused filter chain: the
            consumer first)).
        params: per node, its fixed parameter, or None when it depends on the node's value.
        valued: per node, (kind, attribute) of a value node, else None.
    """

    node_slots: tuple
    counters: tuple
    has_part: bool
    entries: tuple
    params: tuple
    valued: tuple


def template(program: Program, types: Sequence[str], ontology: Ontology, attr_index: dict,
             fuse: bool) -> Template:
    """The :class:`Template` of ``program``'s structure (cached in the ontology)."""
    cache = ontology.cache("schedule.templates")
    key = (program.structure(), fuse)
    t = cache.get(key)
    if t is None:
        t = cache[key] = _build_template(program, types, ontology, attr_index, fuse)
    return t


def _rule(function: str, ta: str | None, attr_index: dict) -> tuple:
    """(op, fixed parameter or None, (kind, attribute) of a value node or None) of a node of
    ``function`` whose first input is of type ``ta``."""
    sig = SIGNATURES[function]
    kind, param = sig.kind, 0
    if kind == "unique":
        op = UNIQUE_P if ta == PART_SET else UNIQUE_O
    elif kind == "compare":
        op = _COMPARE[sig.name]
    elif kind == "part2object":
        op = PART2OBJ_ONE if ta == PART else PART2OBJ_SET
    else:
        op = _SIMPLE[kind]
        if kind in ("query", "same", "partquery"):
            param = attr_index[sig.attribute]
    if kind in _VALUED:
        return op, None, (kind, sig.attribute)
    return op, param, None


def _build_template(p: Program, types, ontology: Ontology, attr_index: dict, fuse: bool) -> Template:
    nodes = p.nodes
    n = len(nodes)
    height = [0] * n
    for i in range(n - 1, -1, -1):
        h = height[i] + 1
        for j in nodes[i].inputs:
            if height[j] < h:
                height[j] = h
    rules = ontology.cache("schedule.rules")  # (function, type of input 0) -> _rule(...)
    users = [0] * n
    ops, params, valued = [], [], []
    for nd in nodes:
        ins = nd.inputs
        for j in ins:
            users[j] += 1
        key = (nd.function, types[ins[0]] if ins else None)
        r = rules.get(key)
        if r is None:
            r = rules[key] = _rule(*key, attr_index)
        ops.append(r[0])
        params.append(r[1])
        valued.append(r[2])
    # filters whose output goes to a filter (and nowhere else): absorbed into that filter's chain
    absorbed = [False] * n
    if fuse:
        for i, nd in enumerate(nodes):
            if ops[i] == FILTER and users[nd.inputs[0]] == 1 and ops[nd.inputs[0]] == FILTER:
                absorbed[nd.inputs[0]] = True
    counters = [0, 0, 0]
    slots = []
    entries = []
    for i, nd in enumerate(nodes):
        kind = _KIND_OF_TYPE.get(types[i], _VAL)
        slots.append((kind, counters[kind]))
        counters[kind] += 1
        if absorbed[i]:
            continue
        op, head, chain = ops[i], i, (i,)
        if op == FILTER and fuse:
            chain = [i]
            while absorbed[nodes[head].inputs[0]]:
                head = nodes[head].inputs[0]
                chain.append(head)
            chain = tuple(chain)
        a = nodes[head].inputs[0] if nodes[head].inputs else None
        b = nd.inputs[1] if len(nd.inputs) > 1 else None
        entries.append((i, op, -10 ** 6 if op == SCENE else -height[i], a, b, chain))
    entries = tuple((i, op, level, None if a is None else slots[a], None if b is None else slots[b],
                     slots[i], chain) for i, op, level, a, b, chain in entries)
    return Template(tuple(slots), tuple(counters), any(k == _PART for k, _ in slots), entries,
                    tuple(params), tuple(valued))


def schedule(programs: Sequence[Program], templates: Sequence[Template], si: np.ndarray, scenes,
             ontology: Ontology, be) -> dict:
    """Rows, parameters and groups of a batch; see :class:`executors.probabilistic.PreparedBatch`.

    Args:
        programs: B validated programs; ``templates``: the template of each.
        si: (B,) scene index of each question; ``scenes``: the batch's SceneBatch.
        be: the executor's array backend.
    Returns:
        dict with ``groups``, ``slots``, ``n_part_rows``, ``final_rows``, ``node_slots``,
        ``part_row``.
    """
    B = len(programs)
    part_row = np.full(B, -1, dtype=np.intp)
    n_part_rows = 0
    n_slots = [0, 0, 0]
    for qi, t in enumerate(templates):
        if t.has_part:
            part_row[qi] = n_part_rows
            n_part_rows += 1
    for t in {id(t): t for t in templates}.values():
        for k in range(3):
            n_slots[k] = max(n_slots[k], t.counters[k])
    rows_per = (B, n_part_rows, B)
    per_scene = _per_scene(scenes, ontology)
    pcache = ontology.cache("schedule.params")
    final_rows = []
    grouped: dict[tuple[int, int, int], list] = {}
    prow_list = part_row.tolist()
    si_list = si.tolist()
    for qi, t in enumerate(templates):
        nodes = programs[qi].nodes
        s, prow = si_list[qi], prow_list[qi]
        kind, slot = t.node_slots[-1]
        final_rows.append(slot * rows_per[kind] + (prow if kind == _PART else qi))
        params, valued = t.params, t.valued
        for i, op, level, a, b, out, chain in t.entries:
            ra = 0 if a is None else a[1] * rows_per[a[0]] + (prow if a[0] == _PART else qi)
            rb = 0 if b is None else b[1] * rows_per[b[0]] + (prow if b[0] == _PART else qi)
            ro = out[1] * rows_per[out[0]] + (prow if out[0] == _PART else qi)
            row = [qi, s, ra, rb, ro, i]
            off = s * per_scene[op] if op in per_scene else 0
            row += _chain_params(chain, params, valued, nodes, pcache, scenes, ontology, off)
            key = (level, op, len(chain))
            g = grouped.get(key)
            if g is None:
                grouped[key] = [row]
            else:
                g.append(row)
    groups = []
    for (_, op, width), rows in sorted(grouped.items(), key=lambda kv: kv[0]):
        arr = np.array(rows, dtype=np.intp)
        param = [be.index(arr[:, 6 + k]) for k in range(width)] if op == FILTER else be.index(arr[:, 6])
        groups.append(Group(op, be.index(arr[:, 1]), be.index(arr[:, 2]), be.index(arr[:, 3]),
                            be.index(arr[:, 4]), param, arr[:, 5], arr[:, 0]))
    return {"groups": groups, "slots": tuple(n_slots), "n_part_rows": n_part_rows,
            "final_rows": be.index(final_rows), "node_slots": [t.node_slots for t in templates],
            "part_row": part_row}


def _per_scene(scenes, ontology: Ontology) -> dict:
    """op -> width of its per-scene parameter table (rows scene * width + parameter)."""
    return {FILTER: scenes.n_filter_cols, RELATE: len(ontology.relations),
            SAME: len(scenes.attr_index), PARTFILTER: getattr(scenes, "Kp", 0)}


def schedule_single(program: Program, types: Sequence[str], s: int, scenes, ontology: Ontology) -> dict:
    """:func:`schedule` of one question on numpy, unfused: one group per node in node order (a
    node's inputs come before it), a node's store row its slot, and every row and parameter a
    one-row slice, so that the rules read their stores and tables without gathers. Nothing is
    made per structure (most questions of a stream have a structure of their own); per node
    object and type of its first input, its rule, parameter and parameter slice are kept."""
    known = ontology.cache("schedule.single")  # id(node) -> (node, {type of input 0: _single_entry})
    ss = _SLICES[s] if s < 256 else slice(s, s + 1)
    counters = [0, 0, 0]
    slots: list = []
    groups = []
    i = 0
    for nd in program.nodes:
        ins = nd.inputs
        ta = types[ins[0]] if ins else None
        h = known.get(id(nd))
        if h is None or h[0] is not nd:  # the entry keeps the node: a reused id is never mistaken for it
            if len(known) >= 100_000:
                known.clear()
            h = known[id(nd)] = (nd, {})
        e = h[1].get(ta)
        if e is None:
            e = h[1][ta] = _single_entry(nd, ta, scenes, ontology)
        op, p, width, param = e
        kind = _KIND_OF_TYPE.get(types[i], _VAL)
        slot = counters[kind]
        counters[kind] = slot + 1
        slots.append((kind, slot))
        if s and width:
            p += s * width
            param = _SLICES[p] if p < 256 else slice(p, p + 1)
            if op == FILTER:
                param = (param,)
        a = slots[ins[0]][1] if ins else 0
        b = slots[ins[1]][1] if len(ins) > 1 else 0
        if i < 256:  # then every slot is below 256 too
            groups.append(Group(op, _one_row(s) if op == PARTQUERY else ss, _SLICES[a], _SLICES[b],
                                _SLICES[slot], param, _ROWS[i], _ROWS[0]))
        else:
            groups.append(Group(op, _one_row(s) if op == PARTQUERY else ss, slice(a, a + 1),
                                slice(b, b + 1), slice(slot, slot + 1), param, _one_row(i), _ROWS[0]))
        i += 1
    kind, slot = slots[-1]
    return {"groups": groups, "slots": tuple(counters), "n_part_rows": int(counters[_PART] > 0),
            "final_rows": slice(slot, slot + 1), "node_slots": [slots],
            "part_row": _ROWS[0] if counters[_PART] else _NO_ROW}


def _single_entry(nd, ta, scenes, ontology: Ontology) -> tuple:
    """(op, parameter on scene 0, width of the op's per-scene table or 0, the parameter's
    one-row slice on scene 0: a one-element tuple of it for a filter, a chain of one) of a
    node whose first input is of type ``ta``, for :func:`schedule_single`."""
    rules = ontology.cache("schedule.rules")
    op, rk, p = _node_rule(nd, ta, rules, scenes.attr_index, ontology.cache("schedule.params"), scenes, ontology)
    if p is None:
        p = rules[rk][1]
    width = _per_scene(scenes, ontology).get(op, 0)
    param = _SLICES[p] if p < 256 else slice(p, p + 1)
    return op, p, width, (param,) if op == FILTER else param


def _one_row(i: int) -> np.ndarray:
    """A read-only one-element index array holding ``i`` (shared for small ``i``)."""
    if i < len(_ROWS):
        return _ROWS[i]
    a = np.array([i], dtype=np.intp)
    a.flags.writeable = False
    return a


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


_ROWS = tuple(_read_only(np.array([i], dtype=np.intp)) for i in range(256))
_NO_ROW = _read_only(np.array([-1], dtype=np.intp))
_SLICES = tuple(slice(i, i + 1) for i in range(256))


def _chain_params(chain, params, valued, nodes, pcache: dict, scenes, onto: Ontology, off: int) -> list[int]:
    """The parameter rows of a filter chain's nodes, ``off`` added: a template's fixed parameter
    where it has one, else the node's value looked up (once per kind, attribute and value, in
    ``pcache``)."""
    out = []
    for c in chain:
        p = params[c]
        if p is None:
            kv = valued[c]
            key = (kv[0], kv[1], nodes[c].value_inputs[0])
            p = pcache.get(key)
            if p is None:
                p = pcache[key] = _param(scenes, onto, *key)
        out.append(off + p)
    return out


def _param(scenes, onto: Ontology, kind: str, attr: str | None, v: str) -> int:
    """The rule parameter of a (validated) value node: its column in the scene tables."""
    if kind == "filter":
        return scenes.filter_col[(attr, v if v in onto.filter_values(attr) else onto.canonical(attr, v))]
    if kind == "relate":
        return onto.relations.index(v)
    if kind == "partfilter":
        return scenes.part_col[(attr, onto.canonical(attr, v))]
    return scenes.partname_row[v]  # partfilter_partname



# ====================================================================== skeletons (batches)
@dataclass(frozen=True)
class Skeleton:
    """A program structure with each filter chain (filters in a row, each the only user of the
    one before) as one position, whatever its length and its filters: the 5,000 CLEVR val
    questions have 3,209 structures but 78 skeletons. A position sits where the last node of its
    chain is. A batch makes each group's rows with array operations per skeleton.

    Attributes:
        slots: per position, (storage kind, slot) of its output.
        counters: slots used per storage kind.
        has_part: whether any position yields parts.
        entries: per position, (op, level, input-0 (kind, slot) or None, input-1 (kind, slot)
            or None, output (kind, slot), fixed parameter or None, column of the position's
            parameter among the question's valued positions (chains and single value nodes
            counted apart) or None).
        n_valued: positions of single value nodes (not chains).
    """

    slots: tuple
    counters: tuple
    has_part: bool
    entries: tuple
    n_valued: int


def _skeleton(nodes, types, known: dict, rules: dict, attr_index: dict, pcache: dict, scenes,
              onto: Ontology) -> tuple:
    """(skeleton key, position of each node, last node of each position, parameters of the
    single value nodes, parameters of each chain (its first filter first, the order in which
    unfused filters multiply)). ``known``: per node object, per type of its first input, its
    (op, rule key, parameter or None)."""
    n = len(nodes)
    users = [0] * n
    for nd in nodes:
        for j in nd.inputs:
            users[j] += 1
    ops = [0] * n
    pos = [0] * n
    key, last, single, chains = [], [], [], []
    for i, nd in enumerate(nodes):
        ins = nd.inputs
        ta = types[ins[0]] if ins else None
        h = known.get(id(nd))  # _known_rule's lookup, inline: the call is most of its cost
        e = h[1].get(ta) if h is not None and h[0] is nd else None
        if e is None:
            e = _known_rule(known, nd, ta, rules, attr_index, pcache, scenes, onto)
        op, rk, p = e
        ops[i] = op
        if op == FILTER:
            j = ins[0]
            if ops[j] == FILTER and users[j] == 1:  # the chain of j goes on with i
                k = pos[i] = pos[j]
                last[k] = i
                chains[key[k][1]].append(p)
                continue
            pos[i] = len(key)
            key.append((FILTER, len(chains), pos[j]))
            chains.append([p])
        else:
            pos[i] = len(key)
            key.append((rk,) if not ins else (rk, pos[ins[0]]) if len(ins) == 1 else (rk, pos[ins[0]], pos[ins[1]]))
            if p is not None:
                single.append(p)
        last.append(i)
    # tuples of ints, which the garbage collector stops tracking: a batch keeps these per question
    # until its rows are made, and as lists they would trigger full collections of the heap
    return tuple(key), tuple(pos), tuple(last), tuple(single), tuple([tuple(c) for c in chains])


def _known_rule(known: dict, nd, ta, rules: dict, attr_index: dict, pcache: dict, scenes, onto: Ontology) -> tuple:
    """:func:`_node_rule` of ``nd`` read through ``known`` (per node object, per type of its first
    input); the entry keeps the node, so a reused id is never mistaken for it."""
    h = known.get(id(nd))
    if h is None or h[0] is not nd:
        if len(known) >= 100_000:
            known.clear()
        h = known[id(nd)] = (nd, {})
    e = h[1].get(ta)
    if e is None:
        e = h[1][ta] = _node_rule(nd, ta, rules, attr_index, pcache, scenes, onto)
    return e


def _node_rule(nd, ta, rules: dict, attr_index: dict, pcache: dict, scenes, onto: Ontology) -> tuple:
    rk = (nd.function, ta)
    r = rules.get(rk)
    if r is None:
        r = rules[rk] = _rule(*rk, attr_index)
    p = None
    if r[2] is not None:
        pk = (r[2][0], r[2][1], nd.value_inputs[0])
        p = pcache.get(pk)
        if p is None:
            p = pcache[pk] = _param(scenes, onto, *pk)
    return r[0], rk, p


def _build_skeleton(key: tuple, last: list, types, attr_index: dict, rules: dict) -> Skeleton:
    m = len(key)
    ins = [((e[2],) if e[0] == FILTER else e[1:]) for e in key]
    height = [0] * m
    for k in range(m - 1, -1, -1):
        h = height[k] + 1
        for j in ins[k]:
            if height[j] < h:
                height[j] = h
    counters = [0, 0, 0]
    slots, entries = [], []
    n_valued = 0
    for k, e in enumerate(key):
        kind = _KIND_OF_TYPE.get(types[last[k]], _VAL)
        slots.append((kind, counters[kind]))
        counters[kind] += 1
        a = slots[ins[k][0]] if ins[k] else None
        b = slots[ins[k][1]] if len(ins[k]) > 1 else None
        if e[0] == FILTER:
            entries.append((FILTER, -height[k], a, b, slots[k], None, e[1]))
            continue
        op, fixed, kv = rules[e[0]]
        col = None
        if kv is not None:
            col, n_valued = n_valued, n_valued + 1
        entries.append((op, -10 ** 6 if op == SCENE else -height[k], a, b, slots[k], fixed, col))
    return Skeleton(tuple(slots), tuple(counters), any(k == _PART for k, _ in slots), tuple(entries), n_valued)


class NodeSlots:
    """Per question, the (storage kind, slot) of each node, made when asked (a trace): a filter
    absorbed into a chain shows its chain's slot."""

    def __init__(self, per_question: list):
        self._q = per_question  # (slots of the skeleton, position of each node)

    def __len__(self) -> int:
        return len(self._q)

    def __getitem__(self, qi: int) -> list:
        slots, pos = self._q[qi]
        return [slots[k] for k in pos]


def schedule_skeletons(programs: Sequence[Program], types: Sequence[Sequence[str]], si: np.ndarray, scenes,
                       ontology: Ontology, be) -> dict:
    """:func:`schedule` of a batch with fused filter chains, its rows made per skeleton with
    array operations (a chain narrower than its group's widest is padded with the scenes'
    column of ones). Same result keys as :func:`schedule`."""
    B = len(programs)
    rules = ontology.cache("schedule.rules")
    skels = ontology.cache("schedule.skeletons")
    pcache = ontology.cache("schedule.params")
    known = ontology.cache("schedule.nodes")
    attr_index = scenes.attr_index
    members: dict = {}
    per_q = []
    for qi, (p, t) in enumerate(zip(programs, types)):
        key, pos, last, single, chains = _skeleton(p.nodes, t, known, rules, attr_index, pcache, scenes, ontology)
        m = members.get(key)
        if m is None:
            sk = skels.get(key)
            if sk is None:
                if len(skels) >= 100_000:
                    skels.clear()
                sk = skels[key] = _build_skeleton(key, last, t, attr_index, rules)
            m = members[key] = (sk, [], [], [], [])
        m[1].append(qi)
        m[2].append(last)
        m[3].append(single)
        m[4].append(chains)
        per_q.append((m[0].slots, pos))
    has_part = np.zeros(B, dtype=bool)
    n_slots = [0, 0, 0]
    for sk, qs, *_ in members.values():
        if sk.has_part:
            has_part[qs] = True
        for k in range(3):
            n_slots[k] = max(n_slots[k], sk.counters[k])
    part_row = np.where(has_part, np.cumsum(has_part) - 1, -1).astype(np.intp)
    n_part_rows = int(has_part.sum())
    rows_per = (B, n_part_rows, B)
    per_scene = _per_scene(scenes, ontology)
    ones = scenes.ones_col
    final_rows = np.zeros(B, dtype=np.intp)
    grouped: dict = {}
    for sk, qs, lasts, singles, chains in members.values():
        q = np.array(qs, dtype=np.intp)
        s = si[q]
        prow = part_row[q]
        rows = (q, prow, q)
        nodes_at = np.array(lasts, dtype=np.intp)
        vals = np.array(singles, dtype=np.intp).reshape(len(q), sk.n_valued)
        zero = np.zeros(len(q), dtype=np.intp)
        for k, (op, level, a, b, out, fixed, col) in enumerate(sk.entries):
            ra = zero if a is None else a[1] * rows_per[a[0]] + rows[a[0]]
            rb = zero if b is None else b[1] * rows_per[b[0]] + rows[b[0]]
            ro = out[1] * rows_per[out[0]] + rows[out[0]]
            off = s * per_scene[op] if op in per_scene else zero
            if op == FILTER:
                cs = [c[col] for c in chains]
                w = max(map(len, cs))
                param = np.array([c + (ones,) * (w - len(c)) for c in cs], dtype=np.intp) + off[:, None]
            elif col is not None:
                param = vals[:, col] + off
            else:
                param = off + fixed
            grouped.setdefault((level, op), []).append((q, s, ra, rb, ro, param, nodes_at[:, k]))
        kind, slot = sk.slots[-1]
        final_rows[q] = slot * rows_per[kind] + rows[kind]
    groups = []
    for (_, op), parts in sorted(grouped.items(), key=lambda kv: kv[0]):
        cat = [np.concatenate([x[c] for x in parts]) if len(parts) > 1 else parts[0][c] for c in (0, 1, 2, 3, 4, 6)]
        if op == FILTER:
            w = max(x[5].shape[1] for x in parts)
            mats = [x[5] if x[5].shape[1] == w else
                    np.concatenate([x[5], np.repeat((x[1] * per_scene[FILTER] + ones)[:, None], w - x[5].shape[1], 1)], 1)
                    for x in parts]
            mat = np.concatenate(mats) if len(mats) > 1 else mats[0]
            param = [be.index(mat[:, c]) for c in range(w)]
        else:
            param = be.index(np.concatenate([x[5] for x in parts]) if len(parts) > 1 else parts[0][5])
        groups.append(Group(op, be.index(cat[1]), be.index(cat[2]), be.index(cat[3]), be.index(cat[4]), param,
                            cat[5], cat[0]))
    return {"groups": groups, "slots": tuple(n_slots), "n_part_rows": n_part_rows,
            "final_rows": be.index(final_rows), "node_slots": NodeSlots(per_q), "part_row": part_row}
