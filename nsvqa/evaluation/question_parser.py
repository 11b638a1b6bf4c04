"""Scoring of parsed programs: exact program match, validity, and answers on ground-truth scenes.

* exact: the decoded prefix tokens equal the ground-truth program's (:meth:`Program.to_prefix`).
* valid: the decode passed validation (:mod:`parsers.question.decode`).
* exact up to part-name synonyms: the same, after writing every ``partfilter_partname`` value as
  its spoken name. Super-CLEVR names one part differently on different shapes (``wheel_front_right``
  on buses, ``front_right_wheel`` on cars, both "front right wheel"), so when a question does not
  name the shape its text does not determine the program's part key; this counts such parses.
* answer accuracy: the parsed program, executed by the deterministic executor on the question's
  ground-truth scene, gives the ground-truth answer (compared with
  :func:`executors.io.normalize_answer`). An invalid decode or a failed execution counts as wrong.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from executors.deterministic import DeterministicExecutor
from executors.errors import ExecutionError
from executors.io import normalize_answer, question_scene, scene_lookup
from executors.ontology import Ontology
from executors.scene import SymbolicScene
from parsers.question.decode import ParsedProgram

from nsvqa.artifacts.questions import Question, read_questions


#: One question of a file (its text, record and ground-truth program): the questions artifact's
#: typed item; ``gold_tokens`` are the prefix tokens of its program (None without one).
QuestionItem = Question


def read_question_items(path: str | Path, ontology: Ontology, *, require_program: bool,
                        limit: int | None = None) -> list[QuestionItem]:
    """Questions of a file (``{"questions": [...]}`` or a list) for the question parser: each
    with a string ``question`` and, when present, a valid program (:func:`read_questions`).

    Args:
        require_program: every record must carry a valid ``program`` (training data); otherwise a
            program is read when present.

    Raises:
        FormatError: a record without a string ``question``, without ``program`` when required,
            or with an invalid program — the message names the file, the question and the field.
    """
    return list(read_questions(path, ontology, require_text=True, require_program=require_program, limit=limit))


@dataclass
class ParseScores:
    """Counts over ``n`` questions; ``answer_n`` of them were executed against a scene."""

    n: int = 0
    exact: int = 0
    gold_n: int = 0          # questions with a ground-truth program
    exact_synonyms: int = 0  # exact up to part-name synonyms
    valid: int = 0
    answer_correct: int = 0
    answer_n: int = 0        # questions with a scene and a ground-truth answer
    execution_errors: int = 0

    def summary(self) -> dict[str, Any]:
        def frac(a: int, b: int) -> float | None:
            return a / b if b else None
        return {"n": self.n, "exact": frac(self.exact, self.gold_n),
                "exact_up_to_part_synonyms": frac(self.exact_synonyms, self.gold_n), "valid": frac(self.valid, self.n),
                "answer_accuracy": frac(self.answer_correct, self.answer_n), "exact_count": self.exact,
                "valid_count": self.valid, "answer_correct": self.answer_correct, "answer_n": self.answer_n,
                "execution_errors": self.execution_errors}


def spoken_part_names(tokens: Sequence[str], ontology: Ontology) -> tuple[str, ...]:
    """``tokens`` with each ``partfilter_partname[key]`` written ``partfilter_partname[spoken name]``."""
    head = "partfilter_partname["
    return tuple(f"{head}{ontology.spoken_value('partname', t[len(head):-1])}]" if t.startswith(head) and t.endswith("]")
                 else t for t in tokens)


def score_parses(items: Sequence[QuestionItem], parsed: Sequence[ParsedProgram], ontology: Ontology,
                 scenes: Sequence[SymbolicScene] | None = None,
                 where: str = "questions") -> tuple[ParseScores, list[dict[str, Any]]]:
    """Score parses against the items' programs and, with ``scenes``, their answers.

    Returns the counts and one row per question: ``{"question_index", "exact", "valid", "answer",
    "correct", "error"}`` (answer fields None when not executed).
    """
    if len(items) != len(parsed):
        raise ValueError(f"{len(items)} questions but {len(parsed)} parses")
    executor = DeterministicExecutor(ontology)
    lookup = scene_lookup(scenes) if scenes is not None else None
    sc, rows = ParseScores(n=len(items)), []
    for it, p in zip(items, parsed):
        row: dict[str, Any] = {"question_index": it.index, "exact": None, "valid": p.valid, "answer": None,
                               "correct": None, "error": p.error}
        sc.valid += p.valid
        if it.gold_tokens is not None:
            sc.gold_n += 1
            row["exact"] = p.tokens == it.gold_tokens
            sc.exact += row["exact"]
            sc.exact_synonyms += row["exact"] or (spoken_part_names(p.tokens, ontology)
                                                  == spoken_part_names(it.gold_tokens, ontology))
        gold_answer = it.record.get("answer")
        if lookup is not None and gold_answer is not None:
            k = question_scene(it.record, lookup, f"{where}, question {it.index}")
            sc.answer_n += 1
            ok = False
            if p.program is not None:
                try:
                    ans = executor.run(p.program, scenes[k], trace=False).answer
                    row["answer"] = ans
                    ok = normalize_answer(ans) == normalize_answer(gold_answer)
                except ExecutionError as e:
                    sc.execution_errors += 1
                    row["error"] = f"{type(e).__name__}: {e}"
            row["correct"] = ok
            sc.answer_correct += ok
        rows.append(row)
    return sc, rows


__all__ = ["QuestionItem", "read_question_items", "ParseScores", "score_parses", "spoken_part_names"]
