"""The questions file: ``<variant>/questions/<split>_questions.json``.

Format (docs/formats.md, "Question records"; the generator's and the releases' alike)::

    {"info": {...}, "questions": [{"question", "image_index", "image_filename", "answer", "program",
                                   "question_family_index", "template_filename", "question_index",
                                   "question_hash", "obj_map", ...}, ...]}

or a bare list of records. :func:`read_questions` reads the file once: every record becomes a
:class:`Question` whose program is parsed (and, with an ontology, validated) once, and every
consumer (the question parser's training and scoring, the baselines, the prediction labels, the
pipeline) works from those items. Errors are :class:`~executors.errors.FormatError` naming the
file, the question (its position in the file) and the field.

The numpy-only ``executors`` package keeps its own reader (:func:`executors.io.load_questions`,
raw records); this one builds on its JSON and top-level checks.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from executors.errors import ExecutionError, FormatError
from executors.io import normalize_answer, question_records
from executors.ontology import Ontology
from executors.program import Program
from executors.scene import check_image_filename
from parsers.question.vocab import check_question_length

from nsvqa.artifacts.records import RecordSequence, read_document, write_document


def questions_path(folder: str | os.PathLike, split: str) -> Path:
    """``FOLDER/questions/<split>_questions.json`` of a variant folder."""
    return Path(folder) / "questions" / f"{split}_questions.json"


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@dataclass(frozen=True)
class Question:
    """One question of a questions file.

    Attributes:
        index: position of the record in its file (what error messages and predictions files name).
        question_index: the record's ``question_index``, else ``index``.
        question: the question text, or None when the record has none.
        image_index, image_filename: the image the question is about (None when absent).
        answer: the ground-truth answer normalised (:func:`executors.io.normalize_answer`:
            yes/no, digits, lower case), or None when the record has none.
        program: the record's program read structurally (:meth:`Program.from_json`), or None.
        program_types: each node's output type when the program passed validation against the
            reader's ontology (:meth:`Program.validate`); None without a program, without an
            ontology, or when it is invalid.
        program_error: why the program is invalid under the ontology (``"<ErrorType>: message"``),
            else None. Real releases hold such programs (filters with empty ``value_inputs``).
        family: ``"<template_filename>#<question_family_index>"``, or None without a family.
        question_hash: the generator's ``question_hash`` (the same question intent on the same
            image in every variant of a factor), or None.
        obj_map: the record's ``obj_map`` (grounding spans, read by mDETR), or None.
        record: the record as it is in the file (what :func:`write_questions` writes back).
        where: ``"<file>, question <index>"`` for error messages (not compared).
    """

    index: int
    question_index: int
    question: str | None
    image_index: int | None
    image_filename: str | None
    answer: str | None
    program: Program | None
    program_types: tuple[str, ...] | None
    program_error: str | None
    family: str | None
    question_hash: str | None
    obj_map: Any
    record: Mapping[str, Any]
    where: str = field(default="", compare=False, repr=False)

    @property
    def gold_tokens(self) -> tuple[str, ...] | None:
        """Prefix tokens of the program (:meth:`Program.to_prefix`), or None without one."""
        return None if self.program is None else tuple(self.program.to_prefix())

    def to_json(self) -> dict:
        """The record as read (field order and spellings kept, so a rewrite is byte-stable)."""
        return dict(self.record)

    @classmethod
    def from_json(cls, record: Any, *, index: int, where: str, ontology: Ontology | None = None,
                  require_text: bool = False, require_program: bool = False, require_valid: bool = True,
                  require_answer: bool = False, require_image: bool = False) -> "Question":
        """Read one record; see :func:`read_questions` for the checks and the ``require_*`` flags.

        Raises:
            FormatError: naming ``where`` and the field.
        """
        if not isinstance(record, Mapping):
            raise FormatError(f"{where}: expected an object, got {type(record).__name__}")
        q = record
        text = q.get("question")
        if (text is not None or require_text) and not isinstance(text, str):
            raise FormatError(f"{where}, field 'question': expected a string, got {type(text).__name__}")
        if text is not None:
            check_question_length(text, where)  # bounded work for every model that reads the text
        image_index = q.get("image_index")
        if image_index is not None and not _is_int(image_index):
            raise FormatError(f"{where}, field 'image_index': expected an integer, got {image_index!r}")
        image = q.get("image_filename")
        if image is None and require_image:
            raise FormatError(f"{where}, field 'image_filename': expected a string, got NoneType")
        if image is not None:
            check_image_filename(image, where)
        answer = q.get("answer")
        if answer is None and require_answer:
            raise FormatError(f"{where}: missing field 'answer'")
        if answer is not None and not isinstance(answer, (str, int, float)):
            raise FormatError(f"{where}, field 'answer': expected a string, number or boolean, "
                              f"got {type(answer).__name__}")
        program = types = error = None
        nodes = q.get("program")
        if nodes is None and require_program:
            raise FormatError(f"{where}: missing field 'program'")
        if nodes is not None:
            try:
                program = Program.from_json(nodes)
            except ExecutionError as e:
                raise FormatError(f"{where}, field 'program': {e}") from None
            if ontology is not None:
                try:
                    types = tuple(program.validate(ontology))
                except ExecutionError as e:
                    if require_valid:
                        raise FormatError(f"{where}, field 'program': {e}") from None
                    error = f"{type(e).__name__}: {e}"
        qindex = q.get("question_index")
        if qindex is None:
            qindex = index
        elif not _is_int(qindex) or qindex < 0:
            raise FormatError(f"{where}, field 'question_index': expected an integer >= 0, got {qindex!r}")
        family = None
        if q.get("question_family_index") is not None:
            family = f"{q.get('template_filename', '')}#{q['question_family_index']}"
        qhash = q.get("question_hash")
        if qhash is not None and not isinstance(qhash, str):
            raise FormatError(f"{where}, field 'question_hash': expected a string, got {type(qhash).__name__}")
        return cls(index=index, question_index=qindex, question=text, image_index=image_index,
                   image_filename=image, answer=None if answer is None else normalize_answer(answer),
                   program=program, program_types=types, program_error=error, family=family,
                   question_hash=qhash, obj_map=q.get("obj_map"), record=q, where=where)


@dataclass(frozen=True)
class QuestionsFile(RecordSequence):
    """The questions of one file, in file order (a sequence of :class:`Question`).

    Attributes:
        info: the file's ``info`` object, or None for a bare list of records.
        questions: one :class:`Question` per record (the first ``limit`` when read with one).
        path: where it was read from (not compared).
    """

    info: Mapping[str, Any] | None
    questions: tuple[Question, ...]
    path: Path | None = field(default=None, compare=False)
    RECORDS: ClassVar[str] = "questions"




    def to_json(self) -> Any:
        """``{"info", "questions"}`` (a bare list when ``info`` is None)."""
        records = [q.to_json() for q in self.questions]
        return records if self.info is None else {"info": dict(self.info), "questions": records}


def read_questions(path: str | os.PathLike, ontology: Ontology | None = None, *, require_text: bool = False,
                   require_program: bool = False, require_valid: bool = True, require_answer: bool = False,
                   require_image: bool = False, limit: int | None = None) -> QuestionsFile:
    """Read a questions file (``{"info", "questions": [...]}`` or a bare list).

    Every record is checked once: an object; ``question`` a string, ``image_index`` an integer,
    ``image_filename`` a relative file name, ``answer`` a string, number or boolean,
    ``question_index`` an integer >= 0 and unique in the file, ``question_hash`` a string (each when
    present); a present ``program`` is read structurally and, with ``ontology``, validated.

    Args:
        ontology: validates the programs (:attr:`Question.program_types` / ``program_error``).
        require_text: every record has a string ``question`` (models that read the text).
        require_program: every record has a ``program`` (training data, prediction labels).
        require_valid: a present program must pass validation (else it is kept with its
            ``program_error``: the pipeline answers such questions as invalid programs).
        require_answer: every record has an ``answer``.
        require_image: every record has an ``image_filename`` (models that read the image).
        limit: read only the first ``limit`` records.

    Raises:
        FormatError: no such file, invalid JSON (a truncated file), a bad top level, or a bad
            record; the message names the file, the question (position) and the field.
    """
    path = Path(path)
    data = read_document(path, "questions")
    records = question_records(data, str(path))
    info = data.get("info") if isinstance(data, dict) else None
    if info is not None and not isinstance(info, Mapping):
        raise FormatError(f"{path}, field 'info': expected an object, got {type(info).__name__}")
    if isinstance(data, dict) and info is None:
        info = {}
    if limit is not None:
        records = records[:max(0, limit)]
    flags = dict(require_text=require_text, require_program=require_program, require_valid=require_valid,
                 require_answer=require_answer, require_image=require_image)
    items = tuple(Question.from_json(q, index=i, where=f"{path}, question {i}", ontology=ontology, **flags)
                  for i, q in enumerate(records))
    first: dict[int, int] = {}
    for q in items:  # predictions, pairings and reports key questions by it
        if first.setdefault(q.question_index, q.index) != q.index:
            raise FormatError(f"{q.where}, field 'question_index': {q.question_index} again (already question "
                              f"{first[q.question_index]}); each question has its own")
    return QuestionsFile(info, items, path)


def write_questions(path: str | os.PathLike, questions: QuestionsFile | Sequence[Question],
                    info: Mapping[str, Any] | None = None) -> None:
    """Write a questions file atomically (compact JSON, as the generator writes it): a
    :class:`QuestionsFile`, or ``questions`` with ``info`` (a bare list when ``info`` is None)."""
    write_document(path, questions, QuestionsFile, info)


__all__ = ["Question", "QuestionsFile", "read_questions", "write_questions", "questions_path"]
