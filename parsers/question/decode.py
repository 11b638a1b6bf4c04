"""Decoded token ids -> a validated :class:`executors.Program`, or a flagged invalid decode.

A decode is *valid* when it ends with ``<END>`` within the length limit, holds no special token,
parses as a prefix program (:meth:`Program.from_prefix`) and passes :meth:`Program.validate`
against the ontology (function signatures, value types, an answer-typed root). Anything else
yields a :class:`ParsedProgram` with ``program=None`` and the reason in ``error``: the caller
decides how to count it, and nothing downstream can execute it by accident.

A valid decode's part-name keys are then resolved from the models the program names
(:func:`executors.program.resolve_part_keys`): Super-CLEVR spells some spoken part names with two
keys, one per family of models, and the words "front right wheel" alone do not say which.
``tokens`` are those of the resolved program.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from executors.errors import InvalidProgram
from executors.ontology import Ontology
from executors.program import Program, resolve_part_keys

from .vocab import END, END_ID, SPECIALS, Vocabulary


@dataclass(frozen=True)
class ParsedProgram:
    """One decoded program.

    Attributes:
        tokens: the decoded program tokens before ``<END>`` (prefix form, ``function[value]``).
        program: the validated program, or None when the decode is invalid.
        error: why the decode is invalid (None when valid).
    """

    tokens: tuple[str, ...]
    program: Program | None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.program is not None


def program_tokens(program: Program) -> list[str]:
    """The prefix tokens the parser learns to produce (:meth:`Program.to_prefix`)."""
    return program.to_prefix()


def tokens_to_program(tokens: Sequence[str], ontology: Ontology) -> ParsedProgram:
    """Parse and validate prefix tokens; never raises for a bad sequence (see the module doc)."""
    tokens = tuple(tokens)
    bad = [t for t in tokens if t in SPECIALS]
    if bad:
        pos = next(i for i, t in enumerate(tokens) if t in SPECIALS)
        return ParsedProgram(tokens, None, f"special token {bad[0]} at position {pos}")
    if not tokens:
        return ParsedProgram(tokens, None, "empty program")
    try:
        program = Program.from_prefix(tokens)
        program.validate(ontology)
    except InvalidProgram as e:  # TypeMismatch included
        return ParsedProgram(tokens, None, f"{type(e).__name__}: {e}")
    resolved = resolve_part_keys(program, ontology)
    if resolved != program:
        return ParsedProgram(tuple(resolved.to_prefix()), resolved, None)
    return ParsedProgram(tokens, program, None)


def ids_to_program(ids: Iterable[int], vocab: Vocabulary, ontology: Ontology) -> ParsedProgram:
    """Cut decoded ids at the first ``<END>`` and parse them.

    Ids without ``<END>`` (the decoder hit its length limit) are invalid; the ``<NULL>`` padding
    after ``<END>`` is ignored.
    """
    ids = [int(i) for i in ids]
    if END_ID not in ids:
        return ParsedProgram(tuple(vocab.decode(ids)), None, f"no {END} within {len(ids)} decoded tokens")
    return tokens_to_program(vocab.decode(ids[:ids.index(END_ID)]), ontology)


__all__ = ["ParsedProgram", "program_tokens", "tokens_to_program", "ids_to_program"]
