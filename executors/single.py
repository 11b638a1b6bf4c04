"""One probabilistic question on plain Python floats.

:meth:`ProbabilisticExecutor.run` on numpy executes a program without parts here: the rules of
:mod:`executors.probabilistic` applied node by node to lists of N floats (N = the scene's
objects), read from the scene's :class:`~executors.probabilistic.SceneBatch` tables. A question
touches ten-element vectors, on which a numpy call costs more than the arithmetic; Python floats
are float64, so a question run this way computes in float64 whatever the executor's ``dtype``
(its answers, distributions and trace are those of the batch path up to float32 rounding; on
one-hot likelihoods they are equal). Programs with part functions take the batch path.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dsl import SIGNATURES
from .errors import UniquenessError

# rule codes of a planned node
(SCENE, FILTER, UNIQUE, RELATE, SAME_, UNION, INTERSECT, COUNT, EXIST, QUERY, EQUAL_VALUE, EQUAL_OBJECT,
 EQUAL_INT, LESS, GREATER) = range(15)
_CODES = {"scene": SCENE, "filter": FILTER, "unique": UNIQUE, "relate": RELATE, "same": SAME_,
          "union": UNION, "intersect": INTERSECT, "count": COUNT, "exist": EXIST, "query": QUERY,
          "equal_value": EQUAL_VALUE, "equal_object": EQUAL_OBJECT}
_COMPARE = {"equal_integer": EQUAL_INT, "less_than": LESS, "greater_than": GREATER}


def plan(program, onto) -> list | None:
    """Per node (rule code, inputs, parameter), or None when a node is not an object rule (a part
    function, or an unknown function: the caller's full path reports it). The entry of a node
    object is made once per ontology. Parameters: a filter's (attribute, canonical filter value),
    a relation's index, a query's or same's attribute, else None."""
    known = onto.cache("single.nodes")  # id(node) -> (node, entry)
    out = []
    for nd in program.nodes:
        h = known.get(id(nd))
        if h is None or h[0] is not nd:
            e = _entry(nd, onto)
            if len(known) >= 100_000:
                known.clear()
            h = known[id(nd)] = (nd, e)
        if h[1] is None:
            return None
        out.append(h[1])
    return out


def _entry(nd, onto) -> tuple | None:
    sig = SIGNATURES.get(nd.function)
    if sig is None or (sig.kind not in _CODES and sig.kind != "compare"):
        return None
    code = _COMPARE[sig.name] if sig.kind == "compare" else _CODES[sig.kind]
    param = None
    if code == FILTER:
        a = sig.attribute
        if not nd.value_inputs or a not in onto.attributes:
            return None
        v = nd.value_inputs[0]
        param = (a, v if v in onto.filter_values(a) else onto.canonical(a, v))
    elif code == RELATE:
        if not nd.value_inputs or nd.value_inputs[0] not in onto.relations:
            return None
        param = onto.relations.index(nd.value_inputs[0])
    elif code in (QUERY, SAME_):
        param = sig.attribute
    return code, nd.inputs, param


def tables(sb) -> tuple:
    """The scene tables of a one-scene :class:`SceneBatch` as lists, made once per batch:
    (objects n, existence (N,), filter rows (C, N), relations (4, N, N), same-attribute
    (n_attr, N, N), attributes (N, K), filter column of each (attribute, value), attribute index)."""
    t = sb.__dict__.get("_lists")
    if t is None:
        tolist = sb.be.to_numpy
        t = sb.__dict__["_lists"] = (sb.n_objects[0], tolist(sb.E)[0].tolist(), tolist(sb.Ft).tolist(),
                                     tolist(sb.Rf).tolist(), tolist(sb.SAMEf).tolist(), tolist(sb.A)[0].tolist(),
                                     sb.filter_col, sb.attr_index)
    return t


def symbolic_tables(scene, filter_tables: dict) -> tuple:
    """:func:`tables` of the one-hot likelihoods of a :class:`SymbolicScene` (the same numbers
    as ``tables(SceneBatch.from_symbolic([scene], ...))``), made from the scene directly, once per
    scene. ``filter_tables``: :func:`executors.probabilistic._filter_tables` of its ontology."""
    t = scene._derived.get("single")
    if t is not None:
        return t
    onto = scene.ontology
    objs = scene.objects
    n = len(objs)
    N = max(1, n)
    pad = (0.0,) * (N - n)
    zero_row = (0.0,) * N
    E = (1.0,) * n + pad
    match = filter_tables["matching_columns"]  # (attribute, value) -> (value column, filter columns)
    C = filter_tables["ones_col"]
    Ft = [[0.0] * N for _ in range(C)]
    K = filter_tables["columns"].shape[0]
    A = [[0.0] * K for _ in range(N)]
    SAME = []
    for a in onto.attributes:
        vals = [o[a] for o in objs]
        for i, v in enumerate(vals):
            kv, cs = match[(a, v)]
            A[i][kv] = 1.0
            for c in cs:
                Ft[c][i] = 1.0
        SAME.append(tuple([tuple([1.0 if w == v and j != i else 0.0 for j, w in enumerate(vals)]) + pad
                           for i, v in enumerate(vals)]) + (zero_row,) * (N - n))
    lists = scene.relation_lists()
    R = []
    for r in onto.relations:
        rows = []
        for js in lists[r]:
            row = [0.0] * N
            for j in js:
                row[j] = 1.0
            rows.append(tuple(row))
        R.append(tuple(rows) + (zero_row,) * (N - n))
    # kept as tuples of floats: the garbage collector stops tracking them, so a stream of scenes
    # does not make the collector's full passes (over every object of the process) more frequent
    t = scene._derived["single"] = (n, E, tuple(map(tuple, Ft)) + ((1.0,) * N,), tuple(R), tuple(SAME),
                                    tuple(map(tuple, A)), filter_tables["filter_col"], filter_tables["attr_index"])
    return t


def exactly_one(p: list) -> tuple[list, float] | None:
    """(q, Z) of :func:`executors.kernels.exactly_one` for one set, or None when Z is exactly 0
    (no element, or two certain ones: the deterministic failure)."""
    n = len(p)
    # the elements with p = 0 contribute factors 1 (exact no-ops): the products run over the others
    nz = [j for j in range(n) if p[j] != 0.0]
    if len(nz) == 1:  # w = p_j, Z = p_j, q = 1 at j
        j = nz[0]
        q = [0.0] * n
        q[j] = p[j] / p[j]
        return q, p[j]
    w = list(p)
    acc = 1.0
    for j in nz:  # prod_{k < j} (1 - p_k)
        w[j] *= acc
        acc *= 1.0 - p[j]
    acc = 1.0
    for j in reversed(nz):  # prod_{k > j} (1 - p_k)
        w[j] *= acc
        acc *= 1.0 - p[j]
    z = sum(w)
    if z > 0.0:
        return [x / z for x in w], z
    certain = sum(1 for x in p if x >= 1.0)
    if certain >= 2 or not any(x > 0.0 for x in p):
        return None
    # Z underflowed although it is not 0: log space (as the kernel does)
    logs = [0.0 if x >= 1.0 else math.log1p(-x) for x in p]
    total = math.fsum(logs)
    lw = [(math.log(x) + total - lr) if x > 0.0 and (x >= 1.0 or certain == 0) else -math.inf
          for x, lr in zip(p, logs)]
    m = max(lw)
    e = [math.exp(v - m) for v in lw]
    s = math.fsum(e)
    return [v / s for v in e], math.exp(m) * s


def poisson_binomial(p: list) -> list:
    """Distribution of the number of elements (N + 1 entries) of independent memberships ``p``."""
    d = [1.0] + [0.0] * len(p)
    m = 0  # elements taken so far that may be members: d[k] = 0 for k > m
    for pj in p:
        if pj == 0.0:  # d unchanged (d[k] * 1 + d[k-1] * 0 is d[k] exactly)
            continue
        m += 1
        if pj == 1.0:  # d shifted by one (d[k] * 0 + d[k-1] * 1 is d[k-1] exactly)
            d[1:m + 1] = d[:m]
            d[0] = 0.0
            continue
        qj = 1.0 - pj
        for k in range(m, 0, -1):
            d[k] = d[k] * qj + d[k - 1] * pj
        d[0] *= qj
    return d


def run(ex, program, steps: list, tabs: tuple, space, trace: bool) -> tuple[Any, dict | None, list | None, list | None]:
    """Execute ``program`` (validated; ``steps``: its :func:`plan`) on one scene's tables ``tabs``
    (:func:`tables` or :func:`symbolic_tables`).

    Returns (answer or the :class:`UniquenessError` that stopped it, answer distribution or None,
    per-node trace or None, per-node confidence or None), in the forms of
    :meth:`ProbabilisticExecutor.run`.
    """
    n, E, Ft, R, SAME, A, filter_col, attr_index = tabs
    exact = ex.mode == "exact"
    tau = ex.threshold
    out: list = []   # per node: ("o", list) object vector, ("v", lo, list) value slice
    conf: list = []
    failure = None
    for i, (code, ins, param) in enumerate(steps):
        z = None
        if code == FILTER:
            r = ("o", [x * y for x, y in zip(out[ins[0]][1], Ft[filter_col[param]])])  # one scene: row = column
        elif code == SCENE:
            r = ("o", E)
        elif code == UNIQUE:
            res = exactly_one(out[ins[0]][1])
            if res is None:
                nd = program.nodes[i]
                failure = UniquenessError("the set holds exactly one element with probability 0",
                                          node=i, function=nd.function)
                break
            q, z = res
            r = ("o", q)
        elif code == RELATE:
            r = ("o", _vec_mat(out[ins[0]][1], R[param]))
        elif code == SAME_:
            r = ("o", _vec_mat(out[ins[0]][1], SAME[attr_index[param]]))
        elif code == UNION:
            r = ("o", [max(x, y) for x, y in zip(out[ins[0]][1], out[ins[1]][1])])
        elif code == INTERSECT:
            r = ("o", [min(x, y) for x, y in zip(out[ins[0]][1], out[ins[1]][1])])
        elif code == COUNT:
            p = out[ins[0]][1]
            if exact:
                d = poisson_binomial(p)
            else:
                d = [0.0] * (len(p) + 1)
                d[sum(1 for x in p if x >= tau)] = 1.0
            r = ("v", space.int_start, d)
        elif code == EXIST:
            p = out[ins[0]][1]
            if exact:
                y = 1.0
                for x in p:
                    y *= 1.0 - x
                y = 1.0 - y
            else:
                y = 1.0 if any(x >= tau for x in p) else 0.0
            r = ("v", space.yes, [y, 1.0 - y])
        elif code == QUERY:
            lo, hi = space.attr_slices[param]
            q = out[ins[0]][1]
            d = None
            for qn, row in zip(q, A):
                if qn:
                    seg = row[lo:hi]
                    d = [qn * x for x in seg] if d is None else [s + qn * x for s, x in zip(d, seg)]
            r = ("v", lo, d if d is not None else [0.0] * (hi - lo))
        elif code == EQUAL_VALUE:
            y = sum([x * y for x, y in zip(out[ins[0]][2], out[ins[1]][2])])
            r = ("v", space.yes, [y, 1.0 - y])
        elif code == EQUAL_OBJECT:
            y = sum([x * y for x, y in zip(out[ins[0]][1], out[ins[1]][1])])
            r = ("v", space.yes, [y, 1.0 - y])
        else:  # EQUAL_INT, LESS, GREATER
            m_, n_ = out[ins[0]][2], out[ins[1]][2]
            if code == EQUAL_INT:
                y = sum([x * y for x, y in zip(m_, n_)])
            else:
                cn, acc = [], 0.0
                for x in n_:  # P(n <= k)
                    acc += x
                    cn.append(acc)
                y = (sum([x * (1.0 - c) for x, c in zip(m_, cn)]) if code == LESS
                     else sum([x * (c - y_) for x, c, y_ in zip(m_, cn, n_)]))
            r = ("v", space.yes, [y, 1.0 - y])
        out.append(r)
        conf.append(z)
    tr = cf = None
    if trace:
        labels = space.labels
        tr = []
        for r in out:
            if r[0] == "o":
                tr.append(np.array(r[1][:n], dtype=float))
            else:
                lo = r[1]
                tr.append({labels[lo + k]: x for k, x in enumerate(r[2]) if x > 0})
        cf = conf + [None] * (len(program.nodes) - len(conf))
        tr += [None] * (len(program.nodes) - len(tr))
    if failure is not None:
        return failure, None, tr, cf
    final = out[-1]
    lo, d = final[1], final[2]
    best = max(range(len(d)), key=d.__getitem__)  # the first most likely value, as argmax
    values = space.values
    dist = {values[lo + k]: x for k, x in enumerate(d) if x > 0}
    return values[lo + best], dist, tr, cf


def _vec_mat(q: list, m: list) -> list:
    """sum_i q_i m[i][j] for every j."""
    s = None
    for qi, row in zip(q, m):
        if qi:
            s = [qi * x for x in row] if s is None else [a + qi * x for a, x in zip(s, row)]
    return s if s is not None else [0.0] * len(m[0])

