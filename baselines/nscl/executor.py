"""NSCL's quasi-symbolic executor: programs run softly over the network's concept scores (:class:`SoftExecutor`)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch

from executors.dsl import OBJECT, PART, PART_SET, SIGNATURES
from executors.errors import ExecutionError
from executors.io import normalize_answer
from executors.ontology import Ontology
from executors.program import Program

from baselines.nscl.config import EPS, MAX_COUNT, _VALUE_TO_ATTRIBUTE


# ---------------------------------------------------------------------------- the executor
def _logit(p: torch.Tensor) -> torch.Tensor:
    p = p.clamp(EPS, 1 - EPS)
    return torch.log(p) - torch.log1p(-p)


class SoftExecutor:
    """Runs programs on the outputs of :class:`NSCLNet` with soft masks (see the module docstring).

    ``run(program, types, scene)`` returns the answer's distribution as (answer strings, (K,)
    probabilities tensor), with ``log=True`` log-probabilities (a count's from a log-softmax,
    others smoothed by ``EPS`` so that a near-impossible answer keeps a gradient);
    :meth:`log_prob` the log-probability of one answer.
    """

    def __init__(self, onto: Ontology, count_sigma: float):
        self.onto, self.sigma = onto, count_sigma
        self.relations = tuple(onto.relations)
        # concept column -> its answer string, per attribute (the values a scene can hold:
        # Ontology.scene_values); a spoken answer may cover several values
        self.spoken = {a: [normalize_answer(onto.spoken_value(a, v)) for v in onto.scene_values(a)]
                       for a in onto.attribute_names}
        self.counts = [str(k) for k in range(MAX_COUNT + 1)]
        if onto.has_parts:
            names = onto.part_names
            self.part_index = {p: k for k, p in enumerate(names)}
            self.spoken["partname"] = [normalize_answer(onto.spoken_value("partname", p)) for p in names]
            shapes = onto.scene_values("shape")
            allowed = torch.zeros(len(shapes), len(names))
            for s, shape in enumerate(shapes):
                for p in onto.parts_of(shape):
                    allowed[s, self.part_index[p]] = 1.0
            self.allowed = allowed
        self._columns: dict[tuple[str, str], list[int]] = {}

    def columns(self, attribute: str, value: str) -> list[int]:
        """Value columns a filter value keeps (a shape category keeps its shapes; ``partname``:
        the part names the value matches). A value no scene holds (Super-CLEVR's ``addi``) keeps
        no column: its filter gives the empty set, as in the official engine."""
        key = (attribute, value)
        if key not in self._columns:
            if attribute == "partname":
                keys = self.onto.partname_matching(value) or ((value,) if value in self.part_index else ())
                cols = [self.part_index[k] for k in keys if k in self.part_index]
            else:
                vals = self.onto.scene_values(attribute)
                keep = self.onto.matching(attribute, value)
                cols = [vals.index(v) for v in keep if v in vals]
                if keep and not cols:  # only unplaced values: nothing can match
                    self._columns[key] = cols
                    return cols
            if not cols:
                raise ExecutionError(f"value {value!r} matches nothing of {attribute!r}")
            self._columns[key] = cols
        return self._columns[key]

    def run(self, program: Program, types: Sequence[str], scene: Mapping[str, Any], *,
            log: bool = False) -> tuple[list[str], torch.Tensor]:
        outs: list[Any] = []
        for node, typ in zip(program.nodes, types):
            sig = SIGNATURES[node.function]
            args = [outs[i] for i in node.inputs]
            in_types = [types[i] for i in node.inputs]
            outs.append(self._step(sig, node, args, in_types, scene))
        return self._answer(outs[-1], types[-1], log)

    def log_prob(self, program: Program, types: Sequence[str], scene: Mapping[str, Any], answer: str) -> torch.Tensor:
        """log P(answer) (log ``EPS`` when the answer is none the program can give)."""
        labels, logp = self.run(program, types, scene, log=True)
        hit = [k for k, a in enumerate(labels) if a == answer]
        return torch.logsumexp(logp[hit], 0) if hit else logp.sum() * 0.0 + float(np.log(EPS))

    # -- one step
    def _step(self, sig, node, args, in_types, scene):
        kind, n = sig.kind, scene["n"]
        attrs = scene["attributes"]
        if kind == "scene":
            return attrs[self.onto.attribute_names[0]].new_ones(n)
        if kind == "filter":
            cols = self.columns(sig.attribute, node.value_inputs[0])
            if not cols:  # a value no scene holds: the empty set
                return args[0] * 0.0
            memb = torch.sigmoid(attrs[sig.attribute][:, cols]).amax(-1)
            return torch.minimum(args[0], memb)
        if kind == "unique":
            x = args[0]
            if in_types[0] == PART_SET:
                return torch.softmax(_logit(x).flatten(), 0).view_as(x)
            return torch.softmax(_logit(x), 0)
        if kind == "relate":
            r = torch.sigmoid(scene["relations"][:, :, self.relations.index(node.value_inputs[0])])
            r = r * (1.0 - torch.eye(n, dtype=r.dtype, device=r.device))
            return (args[0] @ r).clamp(0.0, 1.0)
        if kind == "union":
            return torch.maximum(args[0], args[1])
        if kind == "intersect":
            return torch.minimum(args[0], args[1])
        if kind == "count":
            return args[0].sum()
        if kind == "exist":
            return args[0].amax() if n else args[0].sum()
        if kind == "query":
            return args[0] @ torch.softmax(attrs[sig.attribute], -1)
        if kind == "same":
            p = torch.softmax(attrs[sig.attribute], -1)
            s = (p @ p.T) * (1.0 - torch.eye(n, dtype=p.dtype, device=p.device))
            return (args[0] @ s).clamp(0.0, 1.0)
        if kind == "equal_value":
            return (args[0] * args[1]).sum().clamp(0.0, 1.0)
        if kind == "equal_object":
            return (args[0] * args[1]).sum().clamp(0.0, 1.0)
        if kind == "compare":
            a, b = args
            d = {"equal_integer": 0.5 - (a - b).abs(), "less_than": b - a - 0.5, "greater_than": a - b - 0.5}[sig.name]
            return torch.sigmoid(d / 0.25)
        if kind == "object2part":
            shape = torch.softmax(attrs["shape"], -1) @ self.allowed.to(args[0])  # (n, P)
            pe = torch.sigmoid(scene["part_exist"]) * shape
            if in_types[0] == OBJECT:
                return args[0][:, None] * pe
            return torch.minimum(args[0][:, None], pe)
        if kind == "part2object":
            return args[0].sum(-1).clamp(0.0, 1.0) if in_types[0] == PART else args[0].amax(-1)
        if kind == "partfilter":
            cols = self.columns(sig.attribute, node.value_inputs[0])
            if not cols:
                return args[0] * 0.0
            lg = scene["part_attributes"][sig.attribute][:, :, cols]
            return torch.minimum(args[0], torch.sigmoid(lg).amax(-1))
        if kind == "partfilter_partname":
            mask = args[0].new_zeros(args[0].shape[-1])
            mask[self.columns("partname", node.value_inputs[0])] = 1.0
            return args[0] * mask
        if kind == "partquery":
            return torch.einsum("np,npv->v", args[0], torch.softmax(scene["part_attributes"][sig.attribute], -1))
        if kind == "partquery_partname":
            return args[0].sum(0)
        raise ExecutionError(f"function {node.function!r} (kind {kind!r}) has no soft rule")

    def _answer(self, value: torch.Tensor, typ: str, log: bool) -> tuple[list[str], torch.Tensor]:
        if typ == "Bool":
            p = value.clamp(0.0, 1.0)
            probs = torch.stack([p, 1.0 - p])
            return ["yes", "no"], torch.log(probs * (1.0 - 2 * EPS) + EPS) if log else probs
        if typ == "Integer":
            k = torch.arange(MAX_COUNT + 1, dtype=value.dtype, device=value.device)
            z = -(value - k) ** 2 / (2 * self.sigma ** 2)
            return self.counts, torch.log_softmax(z, 0) if log else torch.softmax(z, 0)
        attribute = _VALUE_TO_ATTRIBUTE[typ]
        p = value / value.sum().clamp_min(EPS)
        return self.spoken[attribute], torch.log(p * (1.0 - 2 * EPS) + EPS) if log else p
