"""NS-VQA's deterministic executor with the official engines' semantics.

Semantics (those of the CLEVR / Super-CLEVR question engines that produced the ground truth):
``filter_shape`` accepts a shape or a category; ``unique`` requires exactly one element and raises
:class:`UniquenessError` otherwise (the public NS-VQA code took the first element instead);
``relate`` uses the scene's relations (see :meth:`SymbolicScene.relation_lists`); ``same_<attr>``
excludes the object itself; ``object2part`` yields the parts whose attributes differ from the
object's, ids ``"<object>_<index in the shape's part list>"``; a generic part name keeps every part
whose name contains it.

Sets are Python integers used as bit sets (object i is bit i, part k of object i is bit
``i * 32 + k``), so filters, set operations and counts are single integer operations. A scene is
compiled once into these masks; a program once into a list of steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .dsl import BOOL, INTEGER, OBJECT, OBJECT_SET, PART, PART_SET, SIGNATURES
from .errors import ExecutionError, UniquenessError
from .ontology import Ontology
from .program import _MAX_CACHED, Node, Program
from .scene import PART_BITS, SymbolicScene

_PART_FIELD = (1 << PART_BITS) - 1


@dataclass
class ExecutionResult:
    """Outcome of one program.

    Attributes:
        answer: spoken answer ("yes", 3, "articulated bus", "front left wheel").
        answer_type: the answer's type (``Bool``, ``Integer``, ``Color``, ...).
        trace: per node, its output in the release ``_output`` form (object index lists, part ids
            ``"3_12"``, values); None when the trace was not requested.
        distribution: answer -> probability (probabilistic executor only).
        confidence: per node, the probability of the step's result (probabilistic only).
    """

    answer: Any
    answer_type: str
    trace: list | None = None
    distribution: dict | None = None
    confidence: list | None = None


class CompiledScene:
    """Bit-set view of a :class:`SymbolicScene` for fast execution."""

    __slots__ = ("n", "all", "attrs", "masks", "_rel", "_scene", "obj_parts", "part_attrs",
                 "part_names", "_partname", "onto")

    def __init__(self, scene: SymbolicScene):
        onto = scene.ontology
        self.onto = onto
        self.n = n = len(scene)
        self.all = (1 << n) - 1
        self.attrs = scene.objects
        held: dict[tuple[str, str], int] = {}  # (attribute, value) -> objects holding it
        attrs = onto.attributes
        for i, o in enumerate(scene.objects):
            bit = 1 << i
            for a in attrs:
                k = (a, o[a])
                held[k] = held.get(k, 0) | bit
        masks: dict[tuple[str, str], int] = {}
        for key, kept in _filter_values(onto):
            m = 0
            for k in kept:
                m |= held.get(k, 0)
            masks[key] = m
        self.masks = masks
        self._scene, self._rel = scene, None
        self.obj_parts = [0] * n
        self.part_attrs: dict[int, dict[str, str]] = {}
        self.part_names: dict[int, str] = {}
        for i, parts in enumerate(scene.parts):
            names = onto.parts_of(scene.objects[i]["shape"])
            for name, pa in parts.items():
                bit = i * PART_BITS + names.index(name)
                self.obj_parts[i] |= 1 << bit
                self.part_attrs[bit] = pa
                self.part_names[bit] = name
        self._partname: dict[str, int] = {}

    @property
    def rel(self) -> dict[str, list[int]]:
        """relation -> per object, the mask of objects in that relation (computed on first use)."""
        if self._rel is None:
            self._rel = {r: [_mask(js) for js in lists] for r, lists in self._scene.relation_lists().items()}
        return self._rel

    def part_mask(self, attr: str, value: str) -> int:
        m = 0
        for bit, pa in self.part_attrs.items():
            if pa[attr] == value:
                m |= 1 << bit
        return m

    def partname_mask(self, value: str) -> int:
        m = self._partname.get(value)
        if m is None:
            keep = set(self.onto.partname_matching(value))
            m = 0
            for bit, name in self.part_names.items():
                if name in keep:
                    m |= 1 << bit
            self._partname[value] = m
        return m


def _filter_values(onto: Ontology) -> tuple:
    """Per filter key (attribute, filter value), the (attribute, value) pairs it keeps."""
    cache = onto.cache("deterministic.filters")
    out = cache.get("filters")
    if out is None:
        out = cache["filters"] = tuple(((a, v), tuple((a, m) for m in onto.matching(a, v)))
                                       for a in onto.attributes for v in onto.filter_values(a))
    return out


def _mask(idx) -> int:
    m = 0
    for j in idx:
        m |= 1 << j
    return m


def _bit_table(width: int) -> tuple[tuple[int, ...], ...]:
    """Per m < 2**width, the positions of its set bits, ascending."""
    table: list[tuple[int, ...]] = [()]
    for k in range(width):  # m = 2**k + r with r < 2**k: the bits of r, then k
        table += [t + (k,) for t in table]
    return tuple(table)


#: the set bits of every object set of up to 10 objects (CLEVR's most), looked up instead of scanned
_BITS = _bit_table(10)


def mask_bits(m: int) -> list[int]:
    """Positions of the set bits of ``m``, ascending (the elements of a bit-set)."""
    if 0 <= m < 1024:
        return list(_BITS[m])
    out = []
    while m:
        low = m & -m
        out.append(low.bit_length() - 1)
        m ^= low
    return out


def _single(m: int, node: int, fn: str) -> int:
    if m == 0 or m & (m - 1):
        n = m.bit_count()
        raise UniquenessError(f"expects exactly one element, the set has {n}", size=n, node=node, function=fn)
    return m.bit_length() - 1


# ---------------------------------------------------------------------- step implementations
# Each step is f(outputs, a, b, key, scene, node) -> output. a, b: input node indices.
def _scene(o, a, b, k, s, i): return s.all
def _filter(o, a, b, k, s, i): return o[a] & s.masks[k]
def _unique(o, a, b, k, s, i): return _single(o[a], i, k)
def _relate(o, a, b, k, s, i): return s.rel[k][o[a]]
def _union(o, a, b, k, s, i): return o[a] | o[b]
def _intersect(o, a, b, k, s, i): return o[a] & o[b]
def _count(o, a, b, k, s, i): return o[a].bit_count()
def _exist(o, a, b, k, s, i): return o[a] != 0
def _query(o, a, b, k, s, i): return s.attrs[o[a]][k]
def _same(o, a, b, k, s, i): return s.masks[(k, s.attrs[o[a]][k])] & ~(1 << o[a])
def _equal(o, a, b, k, s, i): return o[a] == o[b]
def _less(o, a, b, k, s, i): return o[a] < o[b]
def _greater(o, a, b, k, s, i): return o[a] > o[b]
def _obj2part(o, a, b, k, s, i): return s.obj_parts[o[a]]
def _set2part(o, a, b, k, s, i):
    m = 0
    for j in mask_bits(o[a]):
        m |= s.obj_parts[j]
    return m
def _part2obj(o, a, b, k, s, i):
    m, p = 0, o[a]
    for j in range(s.n):
        if (p >> (j * PART_BITS)) & _PART_FIELD:
            m |= 1 << j
    return m
def _part2obj_single(o, a, b, k, s, i): return 1 << (o[a] // PART_BITS)
def _partfilter(o, a, b, k, s, i): return o[a] & s.part_mask(*k)
def _partname(o, a, b, k, s, i): return o[a] & s.partname_mask(k)
def _partquery(o, a, b, k, s, i): return s.part_attrs[o[a]][k]
def _partquery_name(o, a, b, k, s, i): return s.part_names[o[a]]


_STEPS: dict[str, Callable] = {
    "scene": _scene, "filter": _filter, "unique": _unique, "relate": _relate, "union": _union,
    "intersect": _intersect, "count": _count, "exist": _exist, "query": _query, "same": _same,
    "equal_value": _equal, "equal_object": _equal, "part2object": _part2obj,
    "partfilter": _partfilter, "partfilter_partname": _partname, "partquery": _partquery,
    "partquery_partname": _partquery_name,
}
_COMPARE = {"equal_integer": _equal, "less_than": _less, "greater_than": _greater}


@dataclass(frozen=True)
class CompiledProgram:
    """A validated program as a list of steps, with each node's output type."""

    program: Program
    steps: tuple[tuple[Callable, int, int, Any], ...]
    types: tuple[str, ...]


@dataclass
class PreparedBatch:
    """Programs and scenes compiled for :meth:`DeterministicExecutor.execute`."""

    programs: list[CompiledProgram]
    scenes: list[CompiledScene]
    scene_index: list[int]


class DeterministicExecutor:
    """Runs programs on :class:`SymbolicScene` objects with the official engines' semantics.

    Args:
        ontology: the dataset's vocabularies (values, shape hierarchy, parts).
    """

    def __init__(self, ontology: Ontology):
        self.ontology = ontology

    def compile(self, program: Program) -> CompiledProgram:
        """Validate and compile; raises :class:`InvalidProgram` / :class:`TypeMismatch`.

        A node's step depends only on the node and the type of its first input, so it is built
        once per ontology and shared by every program holding that node (equal nodes read by
        :meth:`Program.from_json` with an ontology are one object).
        """
        onto = self.ontology
        types = program.validate(onto)
        cache = onto.cache("deterministic.steps")  # id(node) -> (node, {type of input 0: step})
        steps = []
        for n in program.nodes:
            hit = cache.get(id(n))
            if hit is None or hit[0] is not n:  # the node is kept in the entry: its id stays its own
                if len(cache) >= _MAX_CACHED:
                    cache.clear()
                hit = cache[id(n)] = (n, {})
            ta = types[n.inputs[0]] if n.inputs else None
            step = hit[1].get(ta)
            if step is None:
                step = hit[1][ta] = self._step(n, ta)
            steps.append(step)
        return CompiledProgram(program, tuple(steps), types)

    def _step(self, n: Node, ta: str | None) -> tuple:
        """The step (function, input 0, input 1, key) of a validated node whose first input is
        of type ``ta``."""
        sig = SIGNATURES[n.function]
        a = n.inputs[0] if n.inputs else -1
        b = n.inputs[1] if len(n.inputs) > 1 else -1
        kind, key = sig.kind, None
        if kind in ("filter", "partfilter", "relate", "partfilter_partname"):
            key = self._value_key(kind, sig.attribute, n.value_inputs[0])
        elif kind in ("query", "same", "partquery"):
            key = sig.attribute
        elif kind == "unique":
            key = n.function  # named in the error
        if kind == "compare":
            fn = _COMPARE[n.function]
        elif kind == "object2part":
            fn = _obj2part if ta == OBJECT else _set2part
        elif kind == "part2object" and ta == PART:
            fn = _part2obj_single
        else:
            fn = _STEPS[kind]
        return fn, a, b, key

    def _value_key(self, kind: str, attr: str | None, v: str) -> Any:
        """The step key of a value node (a validated value)."""
        onto = self.ontology
        if kind == "filter":
            return (attr, v if v in onto.filter_values(attr) else onto.canonical(attr, v))
        if kind == "partfilter":
            return (attr, onto.canonical(attr, v))
        return v  # relate, partfilter_partname

    def compile_scene(self, scene: SymbolicScene) -> CompiledScene:
        if scene._compiled is None:
            scene._compiled = CompiledScene(scene)
        return scene._compiled

    def run(self, program: Program | CompiledProgram, scene: SymbolicScene | CompiledScene,
            trace: bool = True) -> ExecutionResult:
        """Execute one program on one scene.

        Raises:
            InvalidProgram, TypeMismatch: the program is malformed (before any execution).
            UniquenessError: ``unique`` on a set without exactly one element; with ``trace``
                its ``trace`` holds the outputs of the steps before it (None from it on).
        """
        cp = program if isinstance(program, CompiledProgram) else self.compile(program)
        cs = scene if isinstance(scene, CompiledScene) else self.compile_scene(scene)
        if trace:
            out: list = [None] * len(cp.steps)
            try:
                for i, (fn, a, b, key) in enumerate(cp.steps):
                    out[i] = fn(out, a, b, key, cs, i)
            except ExecutionError as e:
                done = self.decode_trace(cp, cs, out[:i])
                e.trace = done + [None] * (len(cp.steps) - len(done))
                raise
        else:
            out = self._execute(cp, cs)
        ans = self.answer(cp, out[-1])
        return ExecutionResult(ans, cp.types[-1], self.decode_trace(cp, cs, out) if trace else None)

    @staticmethod
    def _execute(cp: CompiledProgram, cs: CompiledScene) -> list:
        out: list = [None] * len(cp.steps)
        for i, (fn, a, b, key) in enumerate(cp.steps):
            out[i] = fn(out, a, b, key, cs, i)
        return out

    def answer(self, cp: CompiledProgram, value: Any) -> Any:
        """Spoken answer of the last node's raw output."""
        t = cp.types[-1]
        if t == BOOL:
            return "yes" if value else "no"
        if t == INTEGER:
            return int(value)
        attr = "partname" if t == "Partname" else t.lower()
        return self.ontology.spoken_value(attr, value)

    def prepare(self, programs: Sequence[Program], scenes: Sequence[SymbolicScene],
                scene_index: Sequence[int]) -> "PreparedBatch":
        """Compile programs and scenes once for :meth:`execute` (validation happens here).

        Raises:
            InvalidProgram, TypeMismatch: a malformed program; the message names the question.
        """
        compiled = []
        for i, p in enumerate(programs):
            try:
                compiled.append(self.compile(p))
            except ExecutionError as e:
                raise e.with_context(f"question {i}")
        return PreparedBatch(compiled,
                             [self.compile_scene(s) for s in scenes], list(scene_index))

    def execute(self, batch: "PreparedBatch") -> list[Any]:
        """Answers of a prepared batch; an :class:`ExecutionError` stands in place of the answer
        of a question that fails, so one bad question does not stop the batch."""
        answers: list[Any] = []
        ex, ans, scenes = self._execute, self.answer, batch.scenes
        for cp, si in zip(batch.programs, batch.scene_index):
            try:
                answers.append(ans(cp, ex(cp, scenes[si])[-1]))
            except ExecutionError as e:
                answers.append(e)
        return answers

    def run_batch(self, programs: Sequence[Program], scenes: Sequence[SymbolicScene],
                  scene_index: Sequence[int]) -> list[Any]:
        """:meth:`prepare` then :meth:`execute`."""
        return self.execute(self.prepare(programs, scenes, scene_index))

    @staticmethod
    def decode_trace(cp: CompiledProgram, cs: CompiledScene, out: list) -> list:
        """Node outputs in the release ``_output`` form."""
        res = []
        for t, v in zip(cp.types, out):
            if t == OBJECT_SET:
                res.append(mask_bits(v))
            elif t == PART_SET:
                res.append([_part_id(b) for b in mask_bits(v)])
            elif t == PART:
                res.append(_part_id(v))
            else:
                res.append(v)
        return res


def _part_id(bit: int) -> str:
    return f"{bit // PART_BITS}_{bit % PART_BITS}"
