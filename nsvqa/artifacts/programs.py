"""The parsed-programs file: a question parser's programs for the questions of one file.

Written by the experiment (``RUN/parsed/<test variant>/programs.json``) and by
``scripts/parse_questions.py``, read by the pipeline (NS-VQA / P-NSVQA), NSCL and the explainer::

    {"provenance": {...}, "questions_file": "ROOT/VARIANT/questions/test_questions.json",
     "programs": [{"program": [release JSON nodes] | null, "valid": true | false, "error": str | null}]}

one record per question of the questions file, in its order. ``program`` is null when the decode
was invalid (``valid`` false, ``error`` says why); such questions are answered as invalid programs.
``provenance`` is free-form (what produced the parses: checkpoint, beam, ...); the experiment
reuses a file whose provenance matches.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Mapping, Sequence

from executors.errors import ExecutionError, FormatError
from executors.program import Program

from nsvqa.artifacts.records import RecordSequence, read_object
from nsvqa.fileio import write_json_atomic


class ProgramsFormatError(FormatError):
    """A malformed programs file, or one that does not match its questions."""


@dataclass(frozen=True)
class ProgramRecord:
    """The parse of one question: the program (None for an invalid decode) and why it is invalid."""

    program: Program | None
    error: str | None = None

    @property
    def valid(self) -> bool:
        """The decode gave a program (the parser validated it)."""
        return self.program is not None

    def to_json(self) -> dict:
        return {"program": self.program.to_json() if self.program is not None else None, "valid": self.valid,
                "error": self.error}

    @classmethod
    def from_json(cls, row: Any, where: str) -> "ProgramRecord":
        """Read one record; ProgramsFormatError naming ``where`` and the field."""
        if not isinstance(row, Mapping):
            raise ProgramsFormatError(f"{where}: expected an object, got {type(row).__name__}")
        for name in ("program", "valid"):
            if name not in row:
                raise ProgramsFormatError(f"{where}: missing field {name!r}")
        valid, error = row["valid"], row.get("error")
        if not isinstance(valid, bool):
            raise ProgramsFormatError(f"{where}, field 'valid': expected true or false, got {valid!r}")
        if error is not None and not isinstance(error, str):
            raise ProgramsFormatError(f"{where}, field 'error': expected a string or null, got {type(error).__name__}")
        program = None
        if row["program"] is not None:
            try:
                program = Program.from_json(row["program"])
            except ExecutionError as e:
                raise ProgramsFormatError(f"{where}, field 'program': {e}") from None
        if valid != (program is not None):
            raise ProgramsFormatError(f"{where}, field 'valid': {str(valid).lower()} with "
                                      f"{'a' if program is not None else 'no'} program")
        return cls(program, error)


@dataclass(frozen=True)
class ParsedPrograms(RecordSequence):
    """A programs file: one :class:`ProgramRecord` per question, in the questions' order.

    Attributes:
        provenance: what produced the parses (free-form JSON object).
        questions_file: the questions file parsed (as a string), or None.
        programs: one record per question.
        path: where it was read from (not compared).
    """

    provenance: Mapping[str, Any]
    questions_file: str | None
    programs: tuple[ProgramRecord, ...]
    path: Path | None = field(default=None, compare=False)
    RECORDS: ClassVar[str] = "programs"




    def program_list(self) -> list[Program | None]:
        """The programs (None where the parser gave none)."""
        return [r.program for r in self.programs]

    def to_json(self) -> dict:
        return {"provenance": dict(self.provenance), "questions_file": self.questions_file,
                "programs": [r.to_json() for r in self.programs]}

    @classmethod
    def from_parses(cls, parsed: Iterable[Any], *, provenance: Mapping[str, Any],
                    questions_file: str | os.PathLike | None) -> "ParsedPrograms":
        """From a question parser's output (:class:`parsers.question.decode.ParsedProgram`: its
        ``program`` and ``error``), one per question in order."""
        return cls(dict(provenance), None if questions_file is None else str(questions_file),
                   tuple(ProgramRecord(p.program, p.error) for p in parsed))


def write_programs(path: str | os.PathLike, programs: ParsedPrograms) -> None:
    """Write a programs file atomically (compact JSON, newline-terminated)."""
    write_json_atomic(path, programs.to_json())


def read_programs(path: str | os.PathLike, *, questions: Sequence[Any] | int | None = None) -> ParsedPrograms:
    """Read a programs file; with ``questions`` (the :class:`~nsvqa.artifacts.QuestionsFile` parsed,
    or their number) check that there is one program per question.

    ``provenance`` and ``questions_file`` may be absent (then ``{}`` and None); every record needs
    ``program`` (nodes or null) and ``valid`` (true exactly when there is a program), ``error`` is
    a string or null. Programs are read structurally, not validated (the parser validated them).

    Raises:
        ProgramsFormatError: no such file, invalid JSON (a truncated file), a bad record (file,
            program index and field named), or a count other than the questions'.
    """
    path = Path(path)
    data = read_object(path, "programs", "'provenance', 'questions_file', 'programs'", ProgramsFormatError)
    rows = data.get("programs")
    if not isinstance(rows, list):
        raise ProgramsFormatError(f"{path}, field 'programs': expected a list, got {type(rows).__name__}")
    provenance = data.get("provenance", {})
    if not isinstance(provenance, Mapping):
        raise ProgramsFormatError(f"{path}, field 'provenance': expected an object, got {type(provenance).__name__}")
    qfile = data.get("questions_file")
    if qfile is not None and not isinstance(qfile, str):
        raise ProgramsFormatError(f"{path}, field 'questions_file': expected a string, got {type(qfile).__name__}")
    if questions is not None:
        n = questions if isinstance(questions, int) else len(questions)
        of = getattr(questions, "path", None)
        if len(rows) != n:
            raise ProgramsFormatError(f"{path}: {len(rows)} programs for the {n} questions"
                                      + (f" of {of}" if of is not None else ""))
    records = tuple(ProgramRecord.from_json(r, f"{path}, program {i}") for i, r in enumerate(rows))
    return ParsedPrograms(provenance, qfile, records, path)


__all__ = ["ProgramRecord", "ParsedPrograms", "ProgramsFormatError", "read_programs", "write_programs"]
