"""Programs: a list of nodes in topological order whose last node gives the answer.

Readers accept both release spellings: the node key ``type`` (Super-CLEVR, CLEVR questions) or
``function`` (CLEVR v1.0 programs), and ``value_inputs`` or the older ``side_inputs``. The prefix
token form (``count filter_color[red] scene``) is what the question parser reads and writes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .dsl import ANSWER_TYPES, SIGNATURES, FUNCTIONS, Signature
from .errors import InvalidProgram, TypeMismatch
from .ontology import Ontology

#: entries a cache of an ontology holds before it is emptied (bounds memory on endless streams)
_MAX_CACHED = 100_000


@dataclass(frozen=True)
class Node:
    """One program step.

    Args:
        function: function name (a key of :data:`executors.dsl.SIGNATURES`).
        inputs: indices of earlier nodes whose outputs this node consumes.
        value_inputs: literal arguments (``["red"]`` for ``filter_color``).
    """

    function: str
    inputs: tuple[int, ...] = ()
    value_inputs: tuple[str, ...] = ()

    @property
    def value(self) -> str | None:
        return self.value_inputs[0] if self.value_inputs else None

    def token(self) -> str:
        """Prefix token ``function[value]`` (or ``function`` without a value)."""
        return f"{self.function}[{self.value}]" if self.value_inputs else self.function


@dataclass(frozen=True)
class Program:
    """An immutable program; ``nodes[-1]`` is the answer node."""

    nodes: tuple[Node, ...]

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes)

    def __getitem__(self, i: int) -> Node:
        return self.nodes[i]

    # ------------------------------------------------------------------ JSON
    @classmethod
    def from_json(cls, nodes: Sequence[Mapping[str, Any]], ontology: Ontology | None = None) -> "Program":
        """Read release JSON nodes; with ``ontology`` also :meth:`validate`.

        Raises:
            InvalidProgram: a node without ``type``/``function`` or ``inputs``, or with non-integer
                inputs, or a node whose result is an input twice (a program is a tree: shared
                nodes are refused); with an ontology, everything :meth:`validate` rejects.
        """
        if ontology is not None:
            prog = _read_known(cls, nodes, ontology)
            if prog is not None:
                return prog
        if not isinstance(nodes, (list, tuple)) or not nodes:
            raise InvalidProgram("program must be a non-empty list of nodes")
        # With an ontology, equal nodes are shared through its cache (nodes are immutable): a
        # lookup costs less than building a Node, and most nodes recur across questions.
        interned = ontology.cache("program.nodes") if ontology is not None else None
        out = []
        entries = []
        for i, n in enumerate(nodes):
            if type(n) is not dict and not isinstance(n, Mapping):
                raise InvalidProgram(f"node must be an object, got {type(n).__name__}", node=i)
            fn = n["type"] if "type" in n else n.get("function")
            if type(fn) is not str and not isinstance(fn, str):
                raise InvalidProgram("missing field 'type' (or 'function')", node=i)
            if "inputs" not in n:
                raise InvalidProgram("missing field 'inputs'", node=i, function=fn)
            raw_in = n["inputs"]
            values = n["value_inputs"] if "value_inputs" in n else n.get("side_inputs", ())
            if not isinstance(values, (list, tuple)) or not isinstance(raw_in, (list, tuple)):
                field = "inputs" if not isinstance(raw_in, (list, tuple)) else "value_inputs"
                raise InvalidProgram(f"field {field!r} must be a list", node=i, function=fn)
            inputs, vals = tuple(raw_in), tuple(values)
            try:
                for x in inputs:
                    if type(x) is not int:
                        inputs = tuple(_as_index(x) for x in raw_in)
                        break
                for v in vals:
                    if type(v) is not str:
                        vals = tuple(_as_value(v) for v in values)
                        break
            except (TypeError, ValueError) as e:
                raise InvalidProgram(f"bad field: {e}", node=i, function=fn) from None
            if interned is None:
                out.append(Node(fn, inputs, vals))
                continue
            key = (fn, *inputs, None, *vals)  # the key _read_known builds
            hit = interned.get(key)
            if hit is None:
                if len(interned) >= _MAX_CACHED:
                    interned.clear()
                hit = interned[key] = _Known(Node(fn, inputs, vals))
            out.append(hit.node)
            entries.append(hit)
        if ontology is None:
            _check_tree(out)  # with an ontology, validate checks it
        prog = cls(tuple(out))
        if ontology is not None:
            types = prog.validate(ontology)
            for e, t in zip(entries, types):  # what the next program with these nodes skips
                ins = e.node.inputs
                e.types[ins and (types[ins[0]] if len(ins) == 1 else (types[ins[0]], types[ins[1]]))] = t
        return prog

    def to_json(self, key: str = "type") -> list[dict]:
        """Release JSON nodes; ``key="function"`` writes the CLEVR v1.0 spelling."""
        return [{key: n.function, "inputs": list(n.inputs), "value_inputs": list(n.value_inputs)}
                for n in self.nodes]

    # ------------------------------------------------------------------ prefix tokens
    def to_prefix(self) -> list[str]:
        """Tokens of the program tree in prefix order, starting from the answer node.

        Raises:
            InvalidProgram: a node whose result is an input twice (a shared node: the tree walk
                would repeat it, exponentially in the depth).
        """
        _check_tree(self.nodes)
        out: list[str] = []
        stack = [len(self.nodes) - 1]
        while stack:
            i = stack.pop()
            n = self.nodes[i]
            out.append(n.token())
            stack.extend(reversed(n.inputs))
        return out

    def to_postfix(self) -> list[str]:
        """Tokens of the program tree in postfix order: each node after its inputs, the inputs in
        their order, the answer node last (clevr-iep's ``list_to_postfix`` order). A shared node
        is an :class:`InvalidProgram`, as in :meth:`to_prefix`."""
        _check_tree(self.nodes)
        out: list[str] = []
        stack = [(len(self.nodes) - 1, False)]
        while stack:
            i, ready = stack.pop()
            n = self.nodes[i]
            if ready or not n.inputs:
                out.append(n.token())
            else:
                stack.append((i, True))
                stack.extend((j, False) for j in reversed(n.inputs))
        return out

    @classmethod
    def from_postfix(cls, tokens: Iterable[str] | str) -> "Program":
        """Inverse of :meth:`to_postfix`: nodes in post-order (children before parents), the same
        nodes :meth:`from_prefix` makes of the program's prefix tokens. A ``str`` is split on
        whitespace.

        Raises:
            InvalidProgram: an unknown function, a malformed token, a node with fewer earlier
                results than inputs, or tokens left over (more than one tree).
        """
        toks = _token_list(tokens, "from_postfix")
        nodes: list[Node] = []
        stack: list[int] = []  # the nodes no later token has consumed yet
        for pos, tok in enumerate(toks):
            fn, vals = parse_token(tok, pos)
            sig = SIGNATURES.get(fn)
            if sig is None:
                raise InvalidProgram(f"unknown function {fn!r} at token {pos}; valid: {', '.join(FUNCTIONS)}")
            k = sig.arity
            if len(stack) < k:
                raise InvalidProgram(f"token {pos} ({tok!r}) takes {k} input(s), {len(stack)} before it "
                                     "(postfix: every node after its inputs)")
            ins = tuple(stack[len(stack) - k:])
            del stack[len(stack) - k:]
            stack.append(len(nodes))
            nodes.append(Node(fn, ins, vals))
        if len(stack) != 1:
            raise InvalidProgram(f"postfix program of {len(toks)} tokens leaves {len(stack)} results, "
                                 "expected 1 (the answer)" if toks else "empty postfix program")
        return cls(tuple(nodes))

    @classmethod
    def from_token_ids(cls, ids: Iterable[int], vocab: Mapping | Sequence[str], order: str = "prefix") -> "Program":
        """The program of a sequence decoder's output, as NS-VQA's and clevr-iep's question
        parsers emit it: token indices, with start, end and padding tokens.

        Args:
            ids: token indices (a list, a 1-D numpy array or tensor; anything iterable of ints).
            vocab: the decoder's program vocabulary: a ``vocab.json`` dict of those projects (its
                ``program_token_to_idx`` is used), a token -> index mapping, an index -> token
                mapping, or a list of tokens indexed by position.
            order: ``"prefix"`` (both projects' default) or ``"postfix"``.

        Reading rules: ``<NULL>`` (padding) is skipped, a ``<START>`` is dropped, reading stops at
        the first ``<END>``; every other index must name a function token (``<UNK>`` included
        is refused).

        Raises:
            InvalidProgram: an index outside the vocabulary, a special or unknown token, or what
                :meth:`from_prefix` / :meth:`from_postfix` reject.
            ValueError: an ``order`` other than prefix or postfix.
        """
        if order not in ("prefix", "postfix"):
            raise ValueError(f"order must be 'prefix' or 'postfix', got {order!r}")
        if isinstance(vocab, Mapping) and "program_token_to_idx" in vocab:
            vocab = vocab["program_token_to_idx"]
        if isinstance(vocab, Mapping):
            keys = list(vocab)
            lookup = ({int(i): t for t, i in vocab.items()} if keys and all(isinstance(k, str) for k in keys)
                      else {int(i): t for i, t in vocab.items()})
        else:
            lookup = dict(enumerate(vocab))
        toks: list[str] = []
        for pos, raw in enumerate(ids.tolist() if hasattr(ids, "tolist") else ids):
            tok = lookup.get(int(raw))
            if tok is None:
                raise InvalidProgram(f"token index {raw!r} at position {pos} is not in the vocabulary "
                                     f"({len(lookup)} tokens)")
            if tok == "<END>":
                break
            if tok == "<NULL>" or (tok == "<START>" and not toks):
                continue
            if tok.startswith("<"):
                raise InvalidProgram(f"token {tok!r} at position {pos} is not a function token")
            toks.append(tok)
        return cls.from_prefix(toks) if order == "prefix" else cls.from_postfix(toks)

    @classmethod
    def from_prefix(cls, tokens: Iterable[str] | str) -> "Program":
        """Inverse of :meth:`to_prefix`: nodes in post-order (children before parents). A ``str``
        is split on whitespace.

        Raises:
            InvalidProgram: an unknown function, a malformed token, or too few/many tokens.
        """
        toks = _token_list(tokens, "from_prefix")
        nodes: list[Node] = []
        # iterative parse: a stack of [function, values, arity, children so far]
        stack: list[list] = []
        for pos, tok in enumerate(toks):
            if not stack and nodes:
                raise InvalidProgram(f"{len(toks) - pos} tokens left after a complete program: {toks[pos:]}")
            fn, vals = parse_token(tok, pos)
            sig = SIGNATURES.get(fn)
            if sig is None:
                raise InvalidProgram(f"unknown function {fn!r} at token {pos}; valid: {', '.join(FUNCTIONS)}")
            stack.append([fn, vals, sig.arity, []])
            while stack and len(stack[-1][3]) == stack[-1][2]:
                fn, vals, _, kids = stack.pop()
                nodes.append(Node(fn, tuple(kids), vals))
                if stack:
                    stack[-1][3].append(len(nodes) - 1)
        if stack or not nodes:
            raise InvalidProgram(f"prefix program ends early after {len(toks)} tokens")
        return cls(tuple(nodes))

    def canonical(self) -> "Program":
        """The same program with nodes in post-order and unused nodes dropped."""
        return Program.from_prefix(self.to_prefix())

    # ------------------------------------------------------------------ validation
    def structure(self) -> tuple:
        """What validation, types and schedules depend on: per node (function, inputs, number of
        values). Programs of one question template share it; they differ only in their values."""
        st = self.__dict__.get("_structure")
        if st is None:
            st = self.__dict__["_structure"] = tuple((n.function, n.inputs, len(n.value_inputs))
                                                     for n in self.nodes)
        return st

    def validate(self, ontology: Ontology) -> tuple[str, ...]:
        """Check structure, types and values; return each node's output type.

        A program is checked once per ontology (the result is kept on it). The checks that depend
        only on a node's function, input types and number of values run once per ontology for
        every such node (the ontology's cache keeps the output type), so questions of one
        template share them; what is left per node is its input indices and its value.

        Raises:
            InvalidProgram: unknown function, wrong arity, an input that is not an earlier node,
                a value outside the ontology (the message lists the valid ones), an empty or
                extra ``value_inputs``, a node whose result is an input twice (a program is a
                tree), or a final node that yields no answer.
            TypeMismatch: an input of a type the function does not accept.
        """
        done = self.__dict__.get("_checked")
        if done is not None and done[0] is ontology:
            return done[1]
        known = ontology.cache("program.node_types")  # (function, input types, #values) -> (type, value kind)
        accepted = ontology.cache("program.values")   # value kind -> values found valid
        types: list[str] = []
        for i, n in enumerate(self.nodes):
            ins = n.inputs
            for j in ins:
                if not 0 <= j < i:
                    break
            else:
                key = (n.function, tuple([types[j] for j in ins]), len(n.value_inputs))
                hit = known.get(key)
                if hit is not None:
                    if n.value_inputs:
                        ok = accepted.get(hit[1])
                        if ok is None or n.value_inputs[0] not in ok:
                            _check_value(n, SIGNATURES[n.function], ontology, i)
                            accepted[hit[1]] = frozenset((*(ok or ()), n.value_inputs[0]))
                    types.append(hit[0])
                    continue
            # a node of a new kind (or with a bad input): every check, in order; raises on the first
            t = _check_node(i, n, types, ontology)
            if len(known) >= _MAX_CACHED:
                known.clear()
            known[(n.function, tuple(types[j] for j in ins), len(n.value_inputs))] = (t, SIGNATURES[n.function].value)
            types.append(t)
        _check_tree(self.nodes)  # after each node's own checks (an arity error is the more telling)
        if types[-1] not in ANSWER_TYPES:
            raise InvalidProgram(f"the last node yields {types[-1]}, not an answer "
                                 f"({', '.join(sorted(ANSWER_TYPES))})", node=len(types) - 1,
                                 function=self.nodes[-1].function)
        out = tuple(types)
        self.__dict__["_checked"] = (ontology, out)
        return out


class _Known:
    """A node read before (per ontology): its :class:`Node` and its output type per input types
    (``()`` without inputs, one type, or a pair) in programs that validated; ``need``: the least
    position at which its inputs point to earlier nodes. Kept under the key
    ``(function, *inputs, None, *values)``: one tuple made per node read, and with the inputs
    checked to be ints and the values strs, equal keys mean equal fields (``None`` is neither)."""

    __slots__ = ("node", "need", "types")

    def __init__(self, node: Node):
        ins = node.inputs
        self.node, self.types = node, {}
        self.need = 0 if not ins else max(ins) + 1 if min(ins) >= 0 else 1 << 62


def _read_known(cls, nodes: Any, ontology: Ontology) -> "Program | None":
    """The validated program of ``nodes`` when every node is a plain release node read before
    with inputs of the types seen then (nothing left to check); else None (the caller reads
    and checks it in full, so a bad program gets the full checks and their errors)."""
    if type(nodes) is not list:
        return None
    get = ontology.cache("program.nodes").get
    types: list[str] = []
    known: list[Node] = []
    i = 0
    # the release spelling of the first node's keys, for every node (a node spelt otherwise
    # raises KeyError: the full read handles mixed spellings)
    first = nodes[0] if nodes else None
    if type(first) is not dict:
        return None
    fkey = "type" if "type" in first else "function"
    vkey = "value_inputs" if "value_inputs" in first else "side_inputs"
    other = fkey != "type" or vkey != "value_inputs"
    used: set[int] = set()  # the nodes already an input (a program is a tree)
    for n in nodes:
        if type(n) is not dict:
            return None
        try:
            raw_in, values = n["inputs"], n[vkey]
            e = get((n[fkey], *raw_in, None, *values))
        except (KeyError, TypeError):
            return None
        if other and (fkey != "type" and "type" in n or vkey != "value_inputs" and "value_inputs" in n):
            return None  # the full read prefers `type` and `value_inputs`
        if e is None or e.need > i or type(raw_in) is not list or type(values) is not list:
            return None
        for x in raw_in:  # True == 1 and 1.0 == 1: the lookup alone does not tell them apart
            if type(x) is not int or x in used:  # used: a shared node, refused by the full read
                return None
            used.add(x)
        for v in values:
            if type(v) is not str:
                return None
        nd = e.node
        ins = nd.inputs
        t = e.types.get(ins and (types[ins[0]] if len(ins) == 1 else (types[ins[0]], types[ins[1]])))
        if t is None:
            return None
        types.append(t)
        known.append(nd)
        i += 1
    if not types or types[-1] not in ANSWER_TYPES:
        return None
    prog = cls(tuple(known))
    prog.__dict__["_checked"] = (ontology, tuple(types))
    return prog


def _check_tree(nodes: Sequence[Node]) -> None:
    """A program is a tree: no node's result is an input twice (of two nodes, or twice of one), as
    in every CLEVR and Super-CLEVR program (a node may be unused: :meth:`Program.canonical` drops
    it). Shared nodes would make the tree walks (:meth:`Program.to_prefix`) exponential.

    Raises:
        InvalidProgram: naming the node that uses a result again and the node that used it first.
    """
    consumer: dict[int, int] = {}
    for i, n in enumerate(nodes):
        for j in n.inputs:
            if j in consumer:
                raise InvalidProgram(f"input {j} is already an input of node {consumer[j]}: a program is a tree "
                                     f"(each node's result used once); shared nodes are refused", node=i,
                                     function=n.function)
            consumer[j] = i


def _check_node(i: int, n: Node, types: list[str], ontology: Ontology) -> str:
    """Every check of node ``i`` given the types of the nodes before it; returns its type."""
    sig = SIGNATURES.get(n.function)
    if sig is None:
        raise InvalidProgram(f"unknown function {n.function!r}; valid: {', '.join(FUNCTIONS)}", node=i)
    if len(n.inputs) != sig.arity:
        raise InvalidProgram(f"takes {sig.arity} input(s), got {len(n.inputs)}", node=i,
                             function=n.function)
    for j in n.inputs:
        if not 0 <= j < i:
            raise InvalidProgram(f"input {j} does not point to an earlier node", node=i,
                                 function=n.function)
    in_types = tuple(types[j] for j in n.inputs)
    for k, (t, ok) in enumerate(zip(in_types, sig.inputs)):
        if t not in ok:
            raise TypeMismatch(f"input {k} (node {n.inputs[k]}) is {t}, expected {' or '.join(ok)}",
                               node=i, function=n.function)
    if sig.attribute is not None and sig.attribute not in ontology.attributes:
        raise InvalidProgram(f"attribute {sig.attribute!r} is not in ontology {ontology.name!r} "
                             f"(it has {', '.join(ontology.attributes)})", node=i, function=n.function)
    if sig.kind.startswith("part") or sig.kind == "object2part":
        if not ontology.has_parts:
            raise InvalidProgram(f"ontology {ontology.name!r} has no parts", node=i, function=n.function)
    _check_value(n, sig, ontology, i)
    return sig.output_type(in_types)


def partname_shapes(nodes: Sequence[Node], i: int, ontology: Ontology) -> set[str]:
    """The shapes whose parts a ``partfilter_partname`` node ``i`` may filter: those its object
    chain (the filters and ``unique`` steps before ``object2part``) allows by ``filter_shape``;
    every shape when no shape is named or the parts do not come from such a chain."""
    shapes = set(ontology.values("shape"))
    j = nodes[i].inputs[0]
    while nodes[j].function.startswith("partfilter_") or nodes[j].function == "unique":
        j = nodes[j].inputs[0]
    if nodes[j].function != "object2part":
        return shapes
    j = nodes[j].inputs[0]
    while nodes[j].function.startswith("filter_") or nodes[j].function == "unique":
        if nodes[j].function == "filter_shape":
            shapes &= set(ontology.matching("shape", nodes[j].value_inputs[0]))
        j = nodes[j].inputs[0]
    return shapes


def resolve_part_keys(program: Program, ontology: Ontology) -> Program:
    """``program`` with each part-name key replaced by the key spoken alike that the named models
    use (``front_right_wheel`` -> ``wheel_front_right`` on a filtered bus); keys the question's
    words cannot determine are kept. A text-only parser cannot tell the two spellings apart
    otherwise (see :meth:`Ontology.alike_partnames`)."""
    nodes = list(program.nodes)
    for i, n in enumerate(nodes):
        if n.function != "partfilter_partname" or not n.value_inputs:
            continue
        key = n.value_inputs[0]
        if len(ontology.alike_partnames(key)) == 1:
            continue
        better = ontology.partname_key(key, partname_shapes(nodes, i, ontology))
        if better is not None and better != key:
            nodes[i] = Node(n.function, n.inputs, (better,))
    return Program(tuple(nodes))


def _token_list(tokens: Any, where: str) -> list[str]:
    """The tokens of ``tokens``: a ``str`` split on whitespace, else a list of str tokens."""
    if isinstance(tokens, str):
        return tokens.split()
    toks = list(tokens)
    for pos, t in enumerate(toks):
        if not isinstance(t, str):
            raise InvalidProgram(f"{where}: token {pos} is {type(t).__name__} {t!r}, not a str; pass "
                                 "tokens such as ['count', 'filter_color[red]', 'scene'] (or one string "
                                 "of them separated by spaces); for token indices use Program.from_token_ids")
    return toks


def parse_token(tok: str, pos: int = 0) -> tuple[str, tuple[str, ...]]:
    """``"filter_color[red]"`` -> ``("filter_color", ("red",))``."""
    if "[" in tok:
        if not tok.endswith("]") or tok.index("[") == 0:
            raise InvalidProgram(f"malformed token {tok!r} at position {pos}")
        fn, val = tok[:-1].split("[", 1)
        return fn, (val,)
    return tok, ()


def _check_value(n: Node, sig: Signature, onto: Ontology, i: int) -> None:
    if sig.value is None:
        if n.value_inputs:
            raise InvalidProgram(f"takes no value_inputs, got {list(n.value_inputs)}", node=i, function=n.function)
        return
    valid = _valid_values(sig.value, onto)
    if not n.value_inputs:
        raise InvalidProgram(f"empty value_inputs; expected one of {valid}", node=i, function=n.function)
    if len(n.value_inputs) > 1:
        raise InvalidProgram(f"takes one value, got {list(n.value_inputs)}", node=i, function=n.function)
    v = n.value_inputs[0]
    ok = (v in onto.relations if sig.value == "relation"
          else bool(onto.partname_matching(v)) if sig.value == "partname"
          else bool(onto.matching(sig.value, v)))
    if not ok:
        raise InvalidProgram(f"value {v!r} is not a valid {sig.value}; valid: {valid}", node=i,
                             function=n.function)


def _valid_values(kind: str, onto: Ontology) -> list[str]:
    if kind == "relation":
        return list(onto.relations)
    if kind == "partname":
        return sorted(onto.partname_filters)
    if kind not in onto.attributes:
        return []
    return list(onto.filter_values(kind))


def _as_index(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"input {x!r} is not an integer node index")
    return x


def _as_value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (str, int)):
        return str(v)
    raise TypeError(f"value input {v!r} is not a string")
