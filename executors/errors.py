"""Typed errors of the executors and readers.

``ExecutionError`` is the root of everything an executor raises for a bad program or an
impossible step; readers raise ``FormatError`` (a ``ValueError``) for malformed files. Every
message names where the problem is: file, question or scene index, node index and field.
"""
from __future__ import annotations


class FormatError(ValueError):
    """Malformed input file or record (scene, question, likelihoods, ontology)."""


class ExecutionError(Exception):
    """Base of all errors raised while validating or executing a program.

    Attributes:
        node: index of the offending node in the program, or None.
        function: function name of that node, or None.
    """

    def __init__(self, message: str, *, node: int | None = None, function: str | None = None):
        self.node = node
        self.function = function
        #: with ``trace=True``, what the executor computed before failing (per node, None after)
        self.trace: list | None = None
        self.confidence: list | None = None
        where = ""
        if node is not None:
            where = f"node {node}" + (f" ({function})" if function else "") + ": "
        super().__init__(where + message)
        self.reason = message

    def with_context(self, context: str) -> "ExecutionError":
        """Prefix the message with a location such as ``"questions.json, question 12"``."""
        self.args = (f"{context}: {self.args[0]}",)
        return self


class InvalidProgram(ExecutionError):
    """The program is malformed: unknown function, wrong arity, bad or missing value input,
    an input that points forward, or a final node that yields no answer."""


class TypeMismatch(InvalidProgram):
    """A node receives an input of the wrong type (e.g. ``count`` of an ``Object``)."""


class InvalidObjectReference(ExecutionError):
    """An object or part index that the scene does not have."""


class UniquenessError(ExecutionError):
    """``unique`` on a set that does not hold exactly one element.

    Attributes:
        size: number of elements in the set (deterministic executor), or None.
    """

    def __init__(self, message: str, *, size: int | None = None, **kw):
        super().__init__(message, **kw)
        self.size = size
