"""P-NSVQA: probabilistic execution of programs on per-object likelihoods.

Every intermediate result is a probability, and the answer is the most likely value of the final
distribution (instead of NS-VQA's argmax of every attribute before reasoning). The rules, for a
scene of N detections with existence probabilities e_i and attribute distributions P_i(v):

* ``scene``: the object set s_i = e_i (the probability that detection i is an object).
* ``filter_<a>[v]``: s_i * P_i(a in keep(v)), where keep(v) expands a category to its shapes.
* ``unique``: the distribution over which element is *the* element, conditioned on exactly one
  element being in the set: q_i = s_i * prod_{j != i} (1 - s_j) / Z, with
  Z = P(exactly one) (the step's confidence). Z = 0 (an empty set, or two certain elements) is
  the deterministic failure and raises :class:`UniquenessError`.
* ``relate[r]``: s_j = e_j * sum_i q_i * p_r(i, j); p_r is the scene's relation matrix when given,
  else the spatial likelihood of :func:`executors.scene.spatial_likelihood`. p_r(i, i) = 0.
* ``same_<a>``: s_j = e_j * sum_i q_i * [j != i] * sum_v P_i(v) P_j(v).
* ``union`` / ``intersect``: elementwise max / min (the sets come from the same detections, so
  their memberships are positively dependent; max/min are the Frechet bounds for that case).
* ``count`` / ``exist``: mode ``threshold`` (the paper): the objects with s_i >= 0.7 are counted,
  exist = any s_i >= 0.7; mode ``exact``: the Poisson-binomial distribution of the number of
  elements, exist = 1 - prod_i (1 - s_i).
* ``query_<a>``: sum_i q_i P_i(.) ; ``equal_<a>``: sum_v P(v) P'(v) ; ``equal_object``: sum_i q_i q'_i.
* ``equal_integer`` / ``less_than`` / ``greater_than``: P(m = n), P(m < n), P(m > n) from the two
  count distributions (independent).
* Parts: ``object2part``: s_ik = w_i * pe_ik (pe: probability that part k of object i is a
  distinct part); ``partfilter_<a>[v]``: s_ik * P_ik(v); ``partfilter_partname[v]``: s_ik * [k in
  keep(v)]; ``unique`` on parts as above over (i, k); ``partquery_<a>``: sum_ik q_ik P_ik(.);
  ``partquery_partname``: sum_i q_ik; ``part2object``: s_i = max_k s_ik for a part set and
  sum_k q_ik for one part.

With one-hot likelihoods every rule reduces to the deterministic one, so both executors answer
alike (tested on the reference sets and on random programs).

Execution is batched: the nodes of all questions are grouped by (depth in the program, rule) and
each group runs as a few array operations over all its questions, on numpy or on torch tensors
(CPU or CUDA; ``device=``). Padded objects have e_i = 0. The two backends and the array kernels of
the rules are :mod:`executors.kernels`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .deterministic import ExecutionResult
from .errors import ExecutionError, InvalidObjectReference, UniquenessError
from .kernels import (NumpyBackend, TorchBackend, cumsum, exactly_one, part_marginal, point_count, poisson_binomial,
                      yes_no)
from .ontology import Ontology
from . import single
from .program import Program
from .scene import SceneLikelihoods, SymbolicScene, spatial_likelihood
from .schedule import (_OBJ, _PART, _VAL, COUNT, EQUAL_INT, EQUAL_OBJECT, EQUAL_VALUE, EXIST, FILTER,  # noqa: F401
                       GREATER, INTERSECT, LESS, OBJ2PART, PART2OBJ_ONE, PART2OBJ_SET, PARTFILTER, PARTNAME,
                       PARTQUERY, PARTQUERY_NAME, QUERY, RELATE, RULE_NAMES, SAME, SCENE, UNION, UNIQUE_O,
                       UNIQUE_P, schedule, schedule_single, schedule_skeletons, template)

MODES = ("threshold", "exact")


# ====================================================================== value space
@dataclass(frozen=True)
class ValueSpace:
    """Layout of answer distributions: every value type is a slice of one vector of length V.

    ``[attribute values (shape, color, ...)] [part names] [yes, no] [integers 0..max_objects]``.
    """

    labels: tuple[str, ...]
    values: np.ndarray  # object array: the answer of each entry (int for integers, else label)
    attr_slices: dict
    part_start: int
    yes: int
    int_start: int
    n_int: int
    part_columns: np.ndarray  # (P,) value-space column of each part name (its spoken form)

    @property
    def size(self) -> int:
        return len(self.labels)

    @classmethod
    def build(cls, onto: Ontology, max_objects: int) -> "ValueSpace":
        labels: list[str] = []
        slices = {}
        for a in onto.attributes:
            vals = onto.values(a)
            slices[a] = (len(labels), len(labels) + len(vals))
            labels += [onto.spoken_value(a, v) for v in vals]
        part_start = len(labels)
        # one column per spoken part name: "front_left_wheel" and "wheel_front_left" are one answer
        spoken_parts = sorted({onto.spoken_value("partname", p) for p in onto.part_names})
        labels += spoken_parts
        yes = len(labels)
        labels += ["yes", "no"]
        int_start = len(labels)
        labels += [str(i) for i in range(max_objects + 1)]
        values = np.array(labels[:int_start] + list(range(max_objects + 1)), dtype=object)
        col = {name: part_start + k for k, name in enumerate(spoken_parts)}
        part_columns = np.array([col[onto.spoken_value("partname", p)] for p in onto.part_names], dtype=np.intp)
        return cls(tuple(labels), values, slices, part_start, yes, int_start, max_objects + 1, part_columns)

    def slice_of(self, answer_type: str) -> tuple[int, int]:
        if answer_type == "Bool":
            return self.yes, self.yes + 2
        if answer_type == "Integer":
            return self.int_start, self.int_start + self.n_int
        if answer_type == "Partname":
            return self.part_start, self.yes
        return self.attr_slices[answer_type.lower()]


# ====================================================================== prepared scenes
class SceneBatch:
    """Likelihoods of S scenes stacked and padded to N objects, with derived tensors.

    Attributes (S scenes, N objects, K = all attribute values, C = filter columns, P parts):
        E: (S, N) existence; A: (S, N, K) attribute distributions; F: (S, N, C) filter columns;
        R: (S, 4, N, N) relation likelihoods times e_j; SAME: (S, n_attr, N, N) same-attribute
        likelihoods times e_j; PE: (S, N, P) part existence; PA: (S, N, P, Kp) part attributes.
    """

    def __init__(self, liks: Sequence[SceneLikelihoods], onto: Ontology, be, with_parts: bool):
        self.n_objects = [len(l) for l in liks]
        S, N = len(liks), max([1, *self.n_objects])
        attrs = list(onto.attributes)
        K = sum(len(onto.values(a)) for a in attrs)
        E = np.zeros((S, N))
        A = np.zeros((S, N, K))
        R = np.zeros((S, len(onto.relations), N, N))
        SAME = np.zeros((S, len(attrs), N, N))
        for s, l in enumerate(liks):
            n = len(l)
            E[s, :n] = l.exist
            A[s, :n] = np.concatenate([l.attributes[a] for a in attrs], axis=1) if n else 0
            for r, rel in enumerate(onto.relations):
                # given relations are used as they are; the spatial likelihood has a zero diagonal
                m = l.relations[rel] if l.relations is not None else spatial_likelihood(l, rel)
                R[s, r, :n, :n] = m * l.exist[None, :]
            for k, a in enumerate(attrs):
                p = l.attributes[a]
                m = (p @ p.T) * (1.0 - np.eye(n))
                SAME[s, k, :n, :n] = m * l.exist[None, :]
        self._finish(onto, be, E, A, R, SAME)
        self.has_parts = with_parts and onto.has_parts
        if self.has_parts:
            self._build_parts(liks, onto, attrs, be)

    @classmethod
    def from_symbolic(cls, scenes: Sequence[SymbolicScene], onto: Ontology, be) -> "SceneBatch":
        """The batch of the one-hot likelihoods of ``scenes`` (:meth:`SceneLikelihoods.from_scene`),
        without parts, made at once for all scenes: the same arrays as ``SceneBatch([from_scene(s)
        for s in scenes], onto, be, False)``."""
        self = cls.__new__(cls)
        n_obj = self.n_objects = [len(s) for s in scenes]
        S, N = len(scenes), max([1, *n_obj])
        attrs = list(onto.attributes)
        column = _value_columns(onto)  # attribute -> {value: column in A}
        K = sum(len(onto.values(a)) for a in attrs)
        cols = np.full((len(attrs), S, N), -1, dtype=np.intp)  # value column of each object
        rs, rr, ri, rj = [], [], [], []
        rel_index = {r: k for k, r in enumerate(onto.relations)}
        for s, sc in enumerate(scenes):
            n = n_obj[s]
            if n:
                for k, a in enumerate(attrs):
                    c = column[a]
                    cols[k, s, :n] = [c[o[a]] for o in sc.objects]
                for r, lists in sc.relation_lists().items():
                    for i, js in enumerate(lists):
                        if js:
                            rs += [s] * len(js)
                            rr += [rel_index[r]] * len(js)
                            ri += [i] * len(js)
                            rj += js
        present = np.arange(N)[None, :] < np.asarray(n_obj)[:, None]  # (S, N)
        E = present.astype(float)
        A = np.zeros((S, N, K))
        s_idx, i_idx = np.nonzero(present)
        for k in range(len(attrs)):
            A[s_idx, i_idx, cols[k, s_idx, i_idx]] = 1.0
        R = np.zeros((S, len(onto.relations), N, N))
        R[rs, rr, ri, rj] = 1.0
        same = cols[:, :, :, None] == cols[:, :, None, :]  # (attrs, S, N, N)
        same &= present[None, :, None, :] & present[None, :, :, None]
        same &= ~np.eye(N, dtype=bool)
        SAME = same.transpose(1, 0, 2, 3).astype(float)
        self._finish(onto, be, E, A, R, SAME)
        self.has_parts = False
        return self

    def _finish(self, onto: Ontology, be, E: np.ndarray, A: np.ndarray, R: np.ndarray, SAME: np.ndarray) -> None:
        """The derived tables of (S, N) existence, (S, N, K) attributes, (S, 4, N, N) relations and
        (S, n_attr, N, N) same-attribute likelihoods, both times e_j."""
        self.onto = onto
        S, N, K = A.shape
        self.N, self.K, self.be = N, K, be
        t = _filter_tables(onto)
        self.filter_col, self.ones_col, self.n_filter_cols = t["filter_col"], t["ones_col"], t["n_filter_cols"]
        self.attr_mask, self.attr_index = t["attr_mask"], t["attr_index"]
        # filter columns: value columns mapped to filter values (a category keeps its shapes);
        # the last column is all ones: a filter chain narrower than its group is padded with it
        F = np.concatenate([A @ t["columns"], np.ones((S, N, 1))], axis=2)
        # flat per-(scene, parameter) tables: row scene * n + parameter
        Ft = F.transpose(0, 2, 1).reshape(S * F.shape[2], N)
        self.E, self.A, self.Ft = map(be.asarray, (E, A, Ft))
        self.Rf = be.asarray(R.reshape(-1, N, N))
        self.SAMEf = be.asarray(SAME.reshape(-1, N, N))
        self.attr_mask_t = be.asarray(self.attr_mask)

    def _build_parts(self, liks, onto, attrs, be) -> None:
        names = onto.part_names
        P = len(names)
        pattrs = [a for a in onto.part_attributes if a in onto.attributes]
        Kp = sum(len(onto.values(a)) for a in pattrs)
        S, N = len(liks), self.N
        PE = np.zeros((S, N, P))
        PA = np.zeros((S, N, P, Kp))
        for s, l in enumerate(liks):
            n = len(l)
            if l.part_exist is None or n == 0:
                continue
            PE[s, :n] = l.part_exist
            PA[s, :n] = np.concatenate([l.part_attributes[a] for a in pattrs], axis=-1)
        # part attribute column -> value-space column; masks per attribute; filter columns
        self.part_col, kp2k, pmask = {}, [], np.zeros((len(attrs), Kp))
        off = 0
        for a in pattrs:
            vals = onto.values(a)
            a_off = sum(len(onto.values(b)) for b in attrs[:attrs.index(a)])
            for j, v in enumerate(vals):
                self.part_col[(a, v)] = off + j
                kp2k.append(a_off + j)
            pmask[self.attr_index[a], off:off + len(vals)] = 1.0
            off += len(vals)
        self.partname_row = {v: r for r, v in enumerate(sorted(onto.partname_filters))}
        PF = np.zeros((len(self.partname_row), P))
        index = {p: k for k, p in enumerate(names)}
        for v, r in self.partname_row.items():
            for p in onto.partname_matching(v):
                PF[r, index[p]] = 1.0
        self.P, self.Kp = P, Kp
        space = ValueSpace.build(onto, N)
        to_spoken = np.zeros((P, space.yes - space.part_start))
        to_spoken[np.arange(P), space.part_columns - space.part_start] = 1.0
        self.part_to_spoken = be.asarray(to_spoken)
        self.kp2k = be.index(kp2k)
        PAt = PA.transpose(0, 3, 1, 2).reshape(S * Kp, N, P)  # row scene * Kp + column
        self.PE, self.PA, self.PAt, self.PF, self.pmask = map(be.asarray, (PE, PA, PAt, PF, pmask))


# ====================================================================== compiled programs
@dataclass
class PreparedBatch:
    """Programs, scenes and schedule ready for :meth:`ProbabilisticExecutor.execute`."""

    scenes: SceneBatch
    space: ValueSpace
    groups: list
    n_questions: int
    slots: tuple[int, int, int]
    n_part_rows: int
    final_rows: Any
    answer_types: list[str]
    answer_mask: np.ndarray  # (B, V) bool: the value-space entries of each answer's type
    node_slots: list = field(default_factory=list)  # per question: [(kind, slot)] per node
    part_row: np.ndarray | None = None
    scene_index: np.ndarray | None = None
    programs: Sequence[Program] = ()
    buffers: Any = None  # stores reused across executions (no re-allocation, no page faults)


class ProbabilisticExecutor:
    """P-NSVQA executor over :class:`SceneLikelihoods`.

    Args:
        ontology: the dataset's vocabularies.
        mode: ``"threshold"`` (the paper: count/exist select objects with probability >=
            ``threshold``) or ``"exact"`` (Poisson-binomial count, exist = 1 - prod(1 - p)).
        threshold: the selection threshold of ``threshold`` mode (0.7 in the paper).
        device: None for numpy; ``"cpu"``/``"cuda"``/a torch.device to run on torch tensors.
        dtype: ``"float32"`` (default) or ``"float64"``.
        max_batch: questions per chunk in :meth:`prepare` (bounds memory).
    """

    def __init__(self, ontology: Ontology, mode: str = "threshold", threshold: float = 0.7,
                 device: Any = None, dtype: str = "float32", max_batch: int = 8192):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        self.ontology, self.mode, self.threshold = ontology, mode, float(threshold)
        self.be = NumpyBackend(dtype) if device is None else TorchBackend(dtype, device)
        self.max_batch = int(max_batch)

    # ------------------------------------------------------------------ public API
    def run(self, program: Program, likelihoods: SceneLikelihoods | SymbolicScene,
            trace: bool = True) -> ExecutionResult:
        """Execute one program; returns the answer, its distribution and a per-step trace.

        On numpy a program without part functions runs on Python floats (:mod:`executors.single`):
        in float64 whatever ``dtype``, so its distribution and trace may differ from
        :meth:`execute`'s (float32 by default) by float32 rounding; trace rows are float64 arrays.

        Raises:
            InvalidProgram, TypeMismatch: malformed program.
            UniquenessError: ``unique`` on a set that holds exactly one element with probability 0.
        """
        onto = self.ontology
        steps = single.plan(program, onto) if self.be.name == "numpy" else None
        if steps is not None:
            try:
                types = program.validate(onto)
            except ExecutionError as e:
                raise e.with_context("question 0")  # as prepare names it
            if type(likelihoods) is SymbolicScene and likelihoods.ontology is onto:
                tabs = likelihoods._derived.get("single") or single.symbolic_tables(likelihoods, _filter_tables(onto))
            else:
                tabs = single.tables(self._scene_batch([likelihoods], False))
            out, dist, tr, conf = single.run(self, program, steps, tabs, self._space(len(tabs[1])), trace)
            if isinstance(out, ExecutionError):
                if trace:
                    out.trace, out.confidence = tr, conf
                raise out
            return ExecutionResult(out, types[-1], tr, dist, conf)
        if self.be.name == "numpy":
            batch = self._prepare_one(program, likelihoods)
        else:
            (batch,) = self.prepare([program], [likelihoods], [0], fuse=False)
        res = self._execute(batch, keep=True)
        out = res["answers"][0]
        if isinstance(out, ExecutionError):
            if trace:  # what was computed: the failing step's output and those after it are cut
                tr, conf = self._trace(batch, res, 0)
                cut = out.node if out.node is not None else len(tr)
                out.trace = [t if k < cut else None for k, t in enumerate(tr)]
                out.confidence = [c if k < cut else None for k, c in enumerate(conf)]
            raise out
        tr, conf = self._trace(batch, res, 0) if trace else (None, None)
        return ExecutionResult(out, batch.answer_types[0], tr, res["distributions"][0], conf)

    def prepare(self, programs: Sequence[Program], likelihoods: Sequence[SceneLikelihoods | SymbolicScene],
                scene_index: Sequence[int], fuse: bool = True) -> list[PreparedBatch]:
        """Validate and schedule ``programs`` (question i runs on ``likelihoods[scene_index[i]]``).

        Returns a list of chunks of at most ``max_batch`` questions for :meth:`execute`. With
        ``fuse`` a chain of filters runs as one step (its inner outputs are not kept).

        Raises:
            InvalidProgram, TypeMismatch: a malformed program (message names the question).
            InvalidObjectReference: a scene index outside ``likelihoods``.
        """
        liks = likelihoods
        si = np.asarray(scene_index, dtype=np.intp).reshape(-1)
        if len(si) != len(programs):
            raise ValueError(f"{len(programs)} programs but {len(si)} scene indices")
        if len(si) and (si.min() < 0 or si.max() >= len(liks)):
            bad = int(np.flatnonzero((si < 0) | (si >= len(liks)))[0])
            raise InvalidObjectReference(f"question {bad}: scene index {int(si[bad])} outside the "
                                         f"{len(liks)} scenes given")
        typed = []
        for i, p in enumerate(programs):
            try:
                typed.append(p.validate(self.ontology))
            except ExecutionError as e:
                raise e.with_context(f"question {i}")
        with_parts = any(n.function == "object2part" for p in programs for n in p.nodes)
        scenes = self._scene_batch(likelihoods, with_parts)
        space = self._space(scenes.N)
        chunks = []
        for start in range(0, max(len(programs), 1), self.max_batch):
            stop = min(start + self.max_batch, len(programs))
            chunks.append(self._schedule(programs[start:stop], typed[start:stop], si[start:stop], scenes,
                                         space, fuse))
        return chunks

    def _prepare_one(self, program: Program, likelihoods: SceneLikelihoods | SymbolicScene) -> PreparedBatch:
        """:meth:`prepare` of one question (unfused) on numpy, without the checks and tables a
        batch needs: its answer mask is made once per answer type and value space."""
        try:
            types = program.validate(self.ontology)
        except ExecutionError as e:
            raise e.with_context("question 0")  # as prepare names it
        with_parts = "object2part" in [n.function for n in program.nodes]
        scenes = self._scene_batch([likelihoods], with_parts)
        space = self._space(scenes.N)
        sched = schedule_single(program, types, 0, scenes, self.ontology)
        t = types[-1]
        return PreparedBatch(scenes, space, sched["groups"], 1, sched["slots"], sched["n_part_rows"],
                             sched["final_rows"], [t], self._answer_row(space, t), sched["node_slots"],
                             sched["part_row"], _ZERO_INDEX, (program,))

    def _scene_batch(self, likelihoods: Sequence, with_parts: bool) -> SceneBatch:
        """The :class:`SceneBatch` of ``likelihoods`` (symbolic scenes read as their one-hot
        likelihoods); of one symbolic scene (a question at a time), made once per scene."""
        onto = self.ontology
        symbolic = all(type(l) is SymbolicScene for l in likelihoods)
        if symbolic and not (with_parts and onto.has_parts):
            with_parts = False  # object programs, or no parts in the ontology: the same batch
        if len(likelihoods) == 1 and symbolic:
            derived = likelihoods[0]._derived
            key = (self.be.name, self.be.dtype, getattr(self.be, "device", None), with_parts)
            scenes = derived.get(key)
            if scenes is None:
                scenes = derived[key] = self._new_batch(likelihoods, symbolic, with_parts)
            return scenes
        return self._new_batch(likelihoods, symbolic, with_parts)

    def _new_batch(self, likelihoods: Sequence, symbolic: bool, with_parts: bool) -> SceneBatch:
        if symbolic and not with_parts:
            return SceneBatch.from_symbolic(likelihoods, self.ontology, self.be)
        liks = [_one_hot(l) if isinstance(l, SymbolicScene) else l for l in likelihoods]
        return SceneBatch(liks, self.ontology, self.be, with_parts)

    def _answer_row(self, space: ValueSpace, answer_type: str) -> np.ndarray:
        """The read-only (1, V) mask of ``answer_type``'s values in ``space``, made once per both."""
        rows = self.ontology.cache("probabilistic.answer_masks")
        row = rows.get((space.size, answer_type))
        if row is None:
            row = np.zeros((1, space.size), dtype=bool)
            lo, hi = space.slice_of(answer_type)
            row[0, lo:hi] = True
            row.flags.writeable = False
            rows[(space.size, answer_type)] = row
        return row

    def _space(self, n_objects: int) -> ValueSpace:
        spaces = self.ontology.cache("probabilistic.spaces")
        space = spaces.get(n_objects)
        if space is None:
            space = spaces[n_objects] = ValueSpace.build(self.ontology, n_objects)
        return space

    def execute(self, batches: PreparedBatch | Sequence[PreparedBatch]) -> list[Any]:
        """Answers of prepared questions; an :class:`ExecutionError` stands in place of the answer
        of a question that fails."""
        if isinstance(batches, PreparedBatch):
            batches = [batches]
        out: list[Any] = []
        for b in batches:
            out += self._execute(b, keep=False, distributions=False)["answers"]
        return out

    def run_batch(self, programs: Sequence[Program], likelihoods: Sequence[SceneLikelihoods | SymbolicScene],
                  scene_index: Sequence[int]) -> list[Any]:
        """:meth:`prepare` then :meth:`execute`."""
        return self.execute(self.prepare(programs, likelihoods, scene_index))

    def run_batch_distributions(self, programs: Sequence[Program],
                                likelihoods: Sequence[SceneLikelihoods | SymbolicScene],
                                scene_index: Sequence[int]) -> list[tuple[Any, dict | None]]:
        """Per question, (answer or the :class:`ExecutionError` that stopped it, answer
        distribution or None), from one pass of :meth:`prepare` and execution."""
        out: list[tuple[Any, dict | None]] = []
        for b in self.prepare(programs, likelihoods, scene_index):
            res = self._execute(b, keep=False, distributions=True)
            out += list(zip(res["answers"], res["distributions"]))
        return out

    def distributions(self, batches: PreparedBatch | Sequence[PreparedBatch]) -> list[dict | None]:
        """Answer distributions (answer -> probability) of prepared questions (None on error)."""
        if isinstance(batches, PreparedBatch):
            batches = [batches]
        out: list = []
        for b in batches:
            out += self._execute(b, keep=False, distributions=True)["distributions"]
        return out

    # ------------------------------------------------------------------ scheduling
    def _schedule(self, programs, typed, si, scenes: SceneBatch, space: ValueSpace,
                  fuse: bool = True) -> PreparedBatch:
        """Assign every node a storage slot and group nodes of all questions into steps.

        A node runs as late as its consumers allow (its height below the answer node), so that
        nodes of one rule at the same height across questions form one group; ``scene`` nodes
        all run first. Stores are 2-D (slot * rows + row, ...) so each gather is one take.
        See :mod:`executors.schedule`.
        """
        onto = self.ontology
        if len(programs) == 1 and self.be.name == "numpy":
            sched = schedule_single(programs[0], typed[0], int(si[0]), scenes, onto)
        elif fuse and len(programs) > 1:
            sched = schedule_skeletons(programs, typed, si, scenes, onto, self.be)
        else:
            templates = [template(p, t, onto, scenes.attr_index, fuse) for p, t in zip(programs, typed)]
            sched = schedule(programs, templates, si, scenes, onto, self.be)
        answer_types = [t[-1] for t in typed]
        code = {t: k for k, t in enumerate(dict.fromkeys(answer_types))}
        table = (np.concatenate([self._answer_row(space, t) for t in code]) if code
                 else np.zeros((0, space.size), dtype=bool))
        mask = table[np.array([code[t] for t in answer_types], dtype=np.intp)] if code else table
        return PreparedBatch(scenes, space, sched["groups"], len(programs), sched["slots"],
                             sched["n_part_rows"], sched["final_rows"], answer_types, mask,
                             sched["node_slots"], sched["part_row"], si, programs)

    # ------------------------------------------------------------------ execution
    def _execute(self, b: PreparedBatch, keep: bool, distributions: bool = True,
                 timings: dict | None = None) -> dict:
        be, xp, sc, sp = self.be, self.be.xp, b.scenes, b.space
        B, N, V = b.n_questions, sc.N, sp.size
        if b.buffers is None or keep:
            # Every slice of a store that a rule reads was written before by the rule that made
            # it; the rest of a value row is never read (answers and distributions are masked to
            # the answer type), so buffers are reused without clearing. A kept (traced) run gets
            # fresh zeros so that its trace shows nothing stale.
            b.buffers = (be.empty((b.slots[_OBJ] * B, N)), be.zeros((b.slots[_VAL] * B, V)),
                         be.empty((b.slots[_PART] * b.n_part_rows, N, sc.P)) if b.n_part_rows else None)
        obj, val, part = b.buffers
        uniques: list = []  # (group, ok, Z) of every unique step; read back once at the end
        tau = self.threshold
        exact = self.mode == "exact"
        yes, ints = slice(sp.yes, sp.yes + 2), slice(sp.int_start, sp.int_start + N + 1)
        clock = None
        if timings is not None:
            clock = time.perf_counter
        for g in b.groups:
            op = g.op
            if clock is not None:
                t0 = clock()
            if op == FILTER:
                x = obj[g.a] * sc.Ft[g.param[0]]
                for col in g.param[1:]:
                    x *= sc.Ft[col]
                obj[g.out] = x
            elif op == SCENE:
                obj[g.out] = sc.E[g.s]
            elif op == UNIQUE_O:
                q, ok, z = exactly_one(be, obj[g.a])
                obj[g.out] = q
                uniques.append((g, ok, z))
            elif op == RELATE:
                obj[g.out] = xp.einsum("gi,gij->gj", obj[g.a], sc.Rf[g.param])
            elif op == UNION:
                obj[g.out] = xp.maximum(obj[g.a], obj[g.b])
            elif op == INTERSECT:
                obj[g.out] = xp.minimum(obj[g.a], obj[g.b])
            elif op == SAME:
                obj[g.out] = xp.einsum("gi,gij->gj", obj[g.a], sc.SAMEf[g.param])
            elif op == QUERY:
                val[g.out, :sc.K] = xp.einsum("gn,gnk->gk", obj[g.a], sc.A[g.s]) * sc.attr_mask_t[g.param]
            elif op == COUNT:
                p = obj[g.a]
                val[g.out, ints] = poisson_binomial(be, p) if exact else point_count(be, p >= tau, N)
            elif op == EXIST:
                p = obj[g.a]
                y = (1.0 - xp.prod(1.0 - p, -1)) if exact else be.as_float((p >= tau).any(-1))
                val[g.out, yes] = yes_no(be, y)
            elif op == EQUAL_VALUE:  # attribute values live in the first K columns
                val[g.out, yes] = yes_no(be, (val[g.a, :sc.K] * val[g.b, :sc.K]).sum(-1))
            elif op == EQUAL_OBJECT:
                val[g.out, yes] = yes_no(be, (obj[g.a] * obj[g.b]).sum(-1))
            elif op in (EQUAL_INT, LESS, GREATER):
                m, n = val[g.a, ints], val[g.b, ints]
                if op == EQUAL_INT:
                    y = (m * n).sum(-1)
                else:
                    cn = cumsum(be, n)  # P(n <= k)
                    y = (m * (1.0 - cn)).sum(-1) if op == LESS else (m * (cn - n)).sum(-1)
                val[g.out, yes] = yes_no(be, y)
            elif op == OBJ2PART:
                part[g.out] = obj[g.a][:, :, None] * sc.PE[g.s]
            elif op == PART2OBJ_SET:
                obj[g.out] = xp.amax(part[g.a], -1)
            elif op == PART2OBJ_ONE:
                obj[g.out] = part[g.a].sum(-1)
            elif op == PARTFILTER:
                part[g.out] = part[g.a] * sc.PAt[g.param]
            elif op == PARTNAME:
                part[g.out] = part[g.a] * sc.PF[g.param][:, None, :]
            elif op == UNIQUE_P:
                x = part[g.a]
                q, ok, z = exactly_one(be, x.reshape(x.shape[0], -1))
                part[g.out] = q.reshape(x.shape)
                uniques.append((g, ok, z))
            elif op == PARTQUERY:
                d = part_marginal(be, part[g.a], sc.PA, g.s) * sc.pmask[g.param]
                rows = be.zeros((len(g.qn), sc.K))
                rows[:, sc.kp2k] = d
                val[g.out, :sc.K] = rows
            elif op == PARTQUERY_NAME:
                val[g.out, sp.part_start:sp.yes] = part[g.a].sum(1) @ sc.part_to_spoken
            else:  # pragma: no cover - every rule of the DSL is handled above
                raise AssertionError(f"unhandled rule {op}")
            if clock is not None:
                name = RULE_NAMES[op]
                n_, t_ = timings.get(name, (0, 0.0))
                timings[name] = (n_ + len(g.qn), t_ + clock() - t0)
        final_np = be.to_numpy(val[b.final_rows])
        # the answer is the most likely value of the final node's type
        best = np.where(b.answer_mask, final_np, -1.0).argmax(1)
        answers: list[Any] = sp.values[best].tolist()
        failed: dict[int, int] = {}  # question -> first node whose unique failed
        conf: dict | None = {} if keep else None
        if uniques:
            oks = be.to_numpy(be.cat([ok for _, ok, _ in uniques], 0))
            zs = be.to_numpy(be.cat([z for _, _, z in uniques], 0))
            qs = np.concatenate([g.qn for g, _, _ in uniques])
            nodes = np.concatenate([g.node for g, _, _ in uniques])
            for k in np.flatnonzero(~oks):
                qq, nn = int(qs[k]), int(nodes[k])
                failed[qq] = min(nn, failed.get(qq, nn))
            if conf is not None:
                conf = {(q, n): z for q, n, z in zip(qs.tolist(), nodes.tolist(), zs.tolist())}
        for qq, nn in failed.items():
            answers[qq] = UniquenessError("the set holds exactly one element with probability 0",
                                          node=nn, function=b.programs[qq].nodes[nn].function)
        dists: list[Any] = []
        if distributions:
            for qi in range(B):
                if qi in failed:
                    dists.append(None)
                    continue
                nz = (b.answer_mask[qi] & (final_np[qi] > 0)).nonzero()[0]
                dists.append(dict(zip(sp.values[nz].tolist(), final_np[qi, nz].tolist())))
        out = {"answers": answers, "distributions": dists}
        if keep:
            out.update(obj=obj, val=val, part=part, conf=conf)
        return out

    def _trace(self, b: PreparedBatch, res: dict, qi: int) -> tuple[list, list]:
        """Per node of question ``qi``: its output (probabilities per object / part, or
        answer -> probability) and the step's confidence where one is defined."""
        be, labels, nq = self.be, b.space.labels, b.n_questions
        n = b.scenes.n_objects[int(b.scene_index[qi])]
        slots = b.node_slots[qi]
        # the object rows of every node copied at once: each node's output is one row of the copy
        rows = [slot * nq + qi for kind, slot in slots if kind == _OBJ]
        objs = iter(be.to_numpy(res["obj"])[rows, :n]) if rows else None
        val = be.to_numpy(res["val"])
        trace, conf = [], []
        get = res["conf"].get
        for i, (kind, slot) in enumerate(slots):
            if kind == _OBJ:
                trace.append(next(objs))
            elif kind == _PART:
                trace.append(be.to_numpy(res["part"][slot * b.n_part_rows + b.part_row[qi]])[:n].copy())
            else:
                row = val[slot * nq + qi]
                nz = (row > 0).nonzero()[0]
                trace.append(dict(zip([labels[j] for j in nz.tolist()], row[nz].tolist())))
            conf.append(get((qi, i)))
        return trace, conf


_ZERO_INDEX = np.zeros(1, dtype=np.intp)
_ZERO_INDEX.flags.writeable = False


def _one_hot(scene: SymbolicScene) -> SceneLikelihoods:
    """:meth:`SceneLikelihoods.from_scene`, made once per scene."""
    lik = scene._derived.get("likelihoods")
    if lik is None:
        lik = scene._derived["likelihoods"] = SceneLikelihoods.from_scene(scene)
    return lik


def _value_columns(onto: Ontology) -> dict:
    """attribute -> {value: its column in the stacked attribute table A}, made once per ontology."""
    cache = onto.cache("probabilistic.value_columns")
    out = cache.get("columns")
    if out is None:
        out, off = {}, 0
        for a in onto.attributes:
            vals = onto.values(a)
            out[a] = {v: off + k for k, v in enumerate(vals)}
            off += len(vals)
        cache["columns"] = out
    return out


def _filter_tables(onto: Ontology) -> dict:
    """The tables of :class:`SceneBatch` that depend on the ontology alone, made once per ontology:
    the (K, C) matrix from attribute values to filter columns, each (attribute, filter value)'s
    column, the column of ones, the per-attribute masks of the K value columns."""
    cache = onto.cache("probabilistic.filter_tables")
    t = cache.get("tables")
    if t is None:
        attrs = list(onto.attributes)
        K = sum(len(onto.values(a)) for a in attrs)
        cols, filter_col = [], {}
        off = 0
        for a in attrs:
            vals = onto.values(a)
            for v in onto.filter_values(a):
                col = np.zeros(K)
                for m in onto.matching(a, v):
                    col[off + vals.index(m)] = 1.0
                filter_col[(a, v)] = len(cols)
                cols.append(col)
            off += len(vals)
        attr_mask = np.zeros((len(attrs), K))
        off = 0
        for k, a in enumerate(attrs):
            attr_mask[k, off:off + len(onto.values(a))] = 1.0
            off += len(onto.values(a))
        match = {}  # (attribute, value) -> (its column in A, the filter columns that keep it)
        off = 0
        for a in attrs:
            for k, v in enumerate(onto.values(a)):
                match[(a, v)] = (off + k, tuple(c for (b, f), c in filter_col.items()
                                                if b == a and v in onto.matching(a, f)))
            off += len(onto.values(a))
        t = cache["tables"] = {"columns": np.stack(cols, axis=1), "filter_col": filter_col, "matching_columns": match,
                               "ones_col": len(cols), "n_filter_cols": len(cols) + 1,
                               "attr_mask": attr_mask, "attr_index": {a: k for k, a in enumerate(attrs)}}
    return t
