"""The predictions format every model writes (P-NSVQA, NS-VQA and the baselines alike).

One JSON Lines file per (model, training variant, test variant)::

    RUN/predictions/<model>__train-<variant>__test-<variant>.jsonl

(or the same name with ``.jsonl.gz``, gzip-compressed: how ``results/study`` ships them) with one line per question::

    {"question_index": 12, "image_index": 1, "family": "part.json#0", "question_type": "part_query",
     "concepts": ["color=gray", "material=rubber", "part_material=metal", "partname=bumper_back"],
     "answer": "brown", "prediction": "red", "probability": 0.61,
     "invalid_program": false, "execution_error": false, "guessed": false, "ood": null,
     "question_hash": "1_part_0_5f0c2a9e61d3b7a4"}

``prediction`` is null when a model gave no answer at all; ``probability`` is the model's
probability of its prediction (null for models without one, and for guesses); ``guessed`` marks an
answer drawn at random after an invalid program or an execution error (NS-VQA's habit), so the
evaluator can score accuracy with and without guesses. ``ood`` is true/false for questions of a
systematic split (about a held-out / a seen concept, see :func:`question_meta`), else null.
``question_hash`` (optional; the generator's) is the same for the same question intent on the same
image in every variant of a factor, so the report can compare variants on the questions they share.

:func:`question_meta` derives the question type, the mentioned concepts and the ID/OOD flag from a
question record (its program in the executors' JSON form), so every writer labels questions alike.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import re
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from executors import Ontology, Program, load_ontology
from executors.dsl import SIGNATURES
from executors.errors import FormatError
from executors.io import loads_json, normalize_answer, read_json

from nsvqa.artifacts.questions import Question, QuestionsFile, questions_path, read_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.fileio import write_atomic
from nsvqa.generation.variants import VariantError, load_variant

#: Question types, by the function of the program's last node.
QUESTION_TYPES = ("count", "exist", "compare_number", "compare_attribute", "query", "part_query")
#: Human-readable names of :data:`QUESTION_TYPES` (reports).
QUESTION_TYPE_NAMES = {"count": "count", "exist": "exist", "compare_number": "compare number",
                       "compare_attribute": "compare attribute", "query": "query",
                       "part_query": "part query"}
_KIND_TO_TYPE = {"count": "count", "exist": "exist", "compare": "compare_number",
                 "equal_value": "compare_attribute", "equal_object": "compare_attribute",
                 "query": "query", "partquery": "part_query", "partquery_partname": "part_query"}

#: The folder of a run that holds its image-shuffle predictions (``RUN/shuffled/predictions/``).
SHUFFLED = "shuffled"
#: File name of a predictions file: ``<model>__train-<variant>__test-<variant>.jsonl``.
_NAME = re.compile(r"^(?P<model>.+?)__train-(?P<train>.+?)__test-(?P<test>.+)\.jsonl(?:\.gz)?$")
_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


class PredictionFormatError(FormatError):
    """A malformed predictions file or record; the message names the file, line and field."""


# ---------------------------------------------------------------------------- the record
@dataclass(frozen=True)
class Prediction:
    """One line of a predictions file: a question, its answer and a model's prediction.

    Attributes:
        question_index: index of the question in its questions file (``question_index`` of the
            record when present, else its position).
        question_type: one of :data:`QUESTION_TYPES`.
        answer: the ground-truth answer (normalised: yes/no, digits, lower case).
        prediction: the model's answer (normalised), or None when it gave none.
        probability: the model's probability of ``prediction`` in [0, 1], or None.
        family: the question family (``"<template file>#<family index>"``), or None.
        concepts: the concepts the question mentions, ``"<attribute>=<value>"`` (sorted, unique).
        image_index: the image the question is about, or None.
        invalid_program: the program was malformed (a parser's or the generator's defect).
        execution_error: executing the program failed.
        guessed: ``prediction`` is a random guess made after such a failure.
        ood: about a held-out (True) or a seen (False) concept of a systematic split; else None.
        question_hash: the generator's ``question_hash`` (the same question intent on the same
            image has the same hash in every variant of a factor), or None.
    """

    question_index: int
    question_type: str
    answer: str
    prediction: str | None
    probability: float | None = None
    family: str | None = None
    concepts: tuple[str, ...] = ()
    image_index: int | None = None
    invalid_program: bool = False
    execution_error: bool = False
    guessed: bool = False
    ood: bool | None = None
    question_hash: str | None = None

    def __post_init__(self) -> None:
        problem = _check_values(self)
        if problem is not None:
            name, msg = problem
            raise ValueError(f"field {name!r}: {msg}")

    @cached_property
    def correct(self) -> bool:
        """The prediction equals the answer (both normalised); False when there is none. Computed
        once: every accuracy, calibration and bootstrap of a report reads it."""
        return self.prediction is not None and normalize_answer(self.prediction) == normalize_answer(self.answer)

    def to_json(self) -> dict:
        """The JSON object of one line (field order as in :data:`FIELDS`)."""
        d = asdict(self)
        d["concepts"] = list(self.concepts)
        return {k: d[k] for k in FIELDS}

    @classmethod
    def from_json(cls, obj: Any, where: str) -> "Prediction":
        """Read one line's object; errors name ``where`` (file and line) and the field.

        Raises:
            PredictionFormatError: not an object, a missing or unknown field, or a bad value.
        """
        if not isinstance(obj, dict):
            raise PredictionFormatError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        unknown = sorted(set(obj) - set(FIELDS))
        if unknown:
            raise PredictionFormatError(f"{where}, field {unknown[0]!r}: unknown field; valid: {list(FIELDS)}")
        for name in REQUIRED:
            if name not in obj:
                raise PredictionFormatError(f"{where}, field {name!r}: missing")
        kw = {k: obj[k] for k in FIELDS if k in obj}
        for name in ("answer", "prediction"):  # yes/no and counts may be written as JSON literals
            if isinstance(kw.get(name), (bool, int)):
                kw[name] = normalize_answer(kw[name])
        if isinstance(kw.get("concepts"), list):
            kw["concepts"] = tuple(kw["concepts"])
        if isinstance(kw.get("probability"), int) and not isinstance(kw["probability"], bool):
            kw["probability"] = float(kw["probability"])
        try:
            return cls(**kw)
        except ValueError as e:
            raise PredictionFormatError(f"{where}, {e}") from None


FIELDS = ("question_index", "image_index", "family", "question_type", "concepts", "answer",
          "prediction", "probability", "invalid_program", "execution_error", "guessed", "ood", "question_hash")
REQUIRED = ("question_index", "question_type", "answer", "prediction")


def _check_values(p: Prediction) -> tuple[str, str] | None:
    """(field, problem) for the first bad field of ``p``, or None."""
    def is_int(x):
        return isinstance(x, int) and not isinstance(x, bool)

    if not is_int(p.question_index) or p.question_index < 0:
        return "question_index", f"expected an integer >= 0, got {p.question_index!r}"
    if p.image_index is not None and not is_int(p.image_index):
        return "image_index", f"expected an integer or null, got {p.image_index!r}"
    if p.question_type not in QUESTION_TYPES:
        return "question_type", f"{p.question_type!r} is not one of {list(QUESTION_TYPES)}"
    if not isinstance(p.answer, str):
        return "answer", f"expected a string, got {p.answer!r}"
    if p.prediction is not None and not isinstance(p.prediction, str):
        return "prediction", f"expected a string or null, got {p.prediction!r}"
    if p.family is not None and not isinstance(p.family, str):
        return "family", f"expected a string or null, got {p.family!r}"
    if not isinstance(p.concepts, tuple) or not all(isinstance(c, str) and "=" in c for c in p.concepts):
        return "concepts", f"expected a list of 'attribute=value' strings, got {p.concepts!r}"
    if p.probability is not None:
        if isinstance(p.probability, bool) or not isinstance(p.probability, float) \
                or not math.isfinite(p.probability) or not 0.0 <= p.probability <= 1.0:
            return "probability", f"expected a number in [0, 1] or null, got {p.probability!r}"
    for name in ("invalid_program", "execution_error", "guessed"):
        if not isinstance(getattr(p, name), bool):
            return name, f"expected true or false, got {getattr(p, name)!r}"
    if p.ood is not None and not isinstance(p.ood, bool):
        return "ood", f"expected true, false or null, got {p.ood!r}"
    if p.question_hash is not None and not isinstance(p.question_hash, str):
        return "question_hash", f"expected a string or null, got {p.question_hash!r}"
    if p.guessed and p.prediction is None:
        return "guessed", "a guess needs a prediction"
    if p.guessed and not (p.invalid_program or p.execution_error):
        return "guessed", "a guess follows a failure: set invalid_program or execution_error too"
    return None


# ---------------------------------------------------------------------------- file names
@dataclass(frozen=True, order=True)
class CellKey:
    """What a predictions file holds: a model trained on one variant, tested on another."""

    model: str
    train: str
    test: str

    def filename(self) -> str:
        """``<model>__train-<train>__test-<test>.jsonl``."""
        return f"{self.model}__train-{self.train}__test-{self.test}.jsonl"


def predictions_path(run: str | os.PathLike, model: str, train: str, test: str) -> Path:
    """``RUN/predictions/<model>__train-<train>__test-<test>.jsonl``.

    Raises:
        ValueError: a name that is empty, holds ``__`` or characters outside ``[A-Za-z0-9_.+-]``.
    """
    for name, value in (("model", model), ("train", train), ("test", test)):
        if not _TOKEN.match(value) or "__" in value:
            raise ValueError(f"{name} {value!r}: expected letters, digits and _ . + - (no '__')")
    return Path(run) / "predictions" / CellKey(model, train, test).filename()


def parse_predictions_name(path: str | os.PathLike) -> CellKey:
    """The (model, train, test) of a predictions file from its name.

    Raises:
        PredictionFormatError: a name not of the form ``<model>__train-<v>__test-<v>.jsonl``.
    """
    m = _NAME.match(Path(path).name)
    if m is None:
        raise PredictionFormatError(f"{path}: file name is not <model>__train-<variant>__test-<variant>.jsonl")
    return CellKey(m["model"], m["train"], m["test"])


# ---------------------------------------------------------------------------- read / write
def write_predictions(path: str | os.PathLike, predictions: Iterable[Prediction]) -> int:
    """Write ``predictions`` as JSON Lines atomically (gzip-compressed when ``path`` ends in
    ``.gz``, with no timestamp in the header: the same predictions give the same bytes); returns
    the number of lines.

    Raises:
        ValueError: two predictions for the same question index.
    """
    seen: set[int] = set()
    lines = []
    for p in predictions:
        if p.question_index in seen:
            raise ValueError(f"{path}: two predictions for question_index {p.question_index}")
        seen.add(p.question_index)
        lines.append(json.dumps(p.to_json(), separators=(",", ":")))
    text = "".join(line + "\n" for line in lines).encode()
    write_atomic(path, gzip.compress(text, mtime=0) if str(path).endswith(".gz") else text)
    return len(lines)


def read_predictions(path: str | os.PathLike) -> list[Prediction]:
    """Read a predictions file (blank lines are skipped; ``.gz``: gzip-compressed).

    Raises:
        PredictionFormatError: invalid JSON, a bad record or a repeated question index; the
            message names the file, the line (1-based) and the field.
    """
    path = Path(path)
    out: list[Prediction] = []
    first_line: dict[int, int] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                where = f"{path}, line {n}"
                try:  # strict: UTF-8, no key twice, finite numbers (the line and the key named)
                    obj = loads_json(line, where)
                except FormatError as e:
                    raise PredictionFormatError(str(e)) from None
                p = Prediction.from_json(obj, where)
                if p.question_index in first_line:
                    raise PredictionFormatError(f"{where}, field 'question_index': {p.question_index} already on "
                                                f"line {first_line[p.question_index]}")
                first_line[p.question_index] = n
                out.append(p)
    except (gzip.BadGzipFile, EOFError) as e:
        raise PredictionFormatError(f"{path}: not a whole gzip file ({e or 'truncated'})") from None
    return out


def find_prediction_files(runs: Sequence[str | os.PathLike]) -> dict[CellKey, list[Path]]:
    """Predictions files under ``runs``, grouped by (model, train, test).

    Each entry of ``runs`` is a run directory (holding ``predictions/``), a folder of run
    directories, or a ``predictions`` folder itself. Several files for one key are several runs
    (seeds) of the same experiment. The image-shuffle predictions under a run's ``shuffled/``
    folder are left out (the same questions asked of other images: not another run).

    Raises:
        FileNotFoundError: an entry that does not exist.
        PredictionFormatError: a ``.jsonl`` file under a ``predictions`` folder with a bad name.
    """
    found: dict[CellKey, list[Path]] = {}
    for run in runs:
        root = Path(run)
        if not root.exists():
            raise FileNotFoundError(f"--runs {root}: no such file or directory")
        if root.name == "predictions" and root.is_dir():
            folders = [root]
        else:  # not a run's image-shuffle predictions (RUN/shuffled/predictions): they are no seed of the cell
            folders = sorted(p for p in root.rglob("predictions")
                             if p.is_dir() and SHUFFLED not in p.relative_to(root).parts)
        for folder in folders:
            for f in sorted([*folder.glob("*.jsonl"), *folder.glob("*.jsonl.gz")]):
                found.setdefault(parse_predictions_name(f), []).append(f)
    return {k: sorted(set(v)) for k, v in sorted(found.items())}


# ---------------------------------------------------------------------------- question labels
@dataclass(frozen=True)
class QuestionMeta:
    """What the evaluator needs to know about a question besides its answer.

    Attributes:
        question_index, image_index, family, answer: from the record (answer normalised).
        question_type: one of :data:`QUESTION_TYPES` (from the last program node).
        concepts: ``"<attribute>=<value>"`` for every value a filter or relate node carries;
            part filters are ``part_<attribute>=<value>`` and ``partname=<value>``, relations
            ``relation=<value>``. Answers are not counted as mentioned.
        ood: see :func:`question_meta`.
        question_hash: the record's ``question_hash`` (None when it has none).
    """

    question_index: int
    image_index: int | None
    family: str | None
    question_type: str
    concepts: tuple[str, ...]
    answer: str
    ood: bool | None = None
    question_hash: str | None = None

    @classmethod
    def from_question(cls, q: Question, *, ontology: Ontology | None = None,
                      ood_spec: Mapping[str, Any] | None = None, scene: Mapping[str, Any] | None = None,
                      where: str | None = None) -> "QuestionMeta":
        """The labels of a question read by :func:`nsvqa.artifacts.read_questions` (see
        :func:`question_meta` for ``ontology``, ``ood_spec`` and ``scene``).

        Raises:
            FormatError: no ``program`` or ``answer``, or a last node with no question type; the
                message names ``where`` (default the question's file and position) and the field.
        """
        where = q.where if where is None else where
        onto = ontology or load_ontology("superclevr")
        for name, value in (("program", q.program), ("answer", q.answer)):
            if value is None:
                raise FormatError(f"{where}, field {name!r}: missing")
        try:
            qtype = question_type(q.program)
        except ValueError as e:
            raise FormatError(f"{where}, field 'program': {e}") from None
        ood = _ood(q.program, q.answer, onto, ood_spec, scene, where) if ood_spec else None
        return cls(q.question_index, q.image_index, q.family, qtype, mentioned_concepts(q.program, onto), q.answer,
                   ood, q.question_hash)

    def prediction(self, prediction: Any, probability: float | None = None, *, invalid_program: bool = False,
                   execution_error: bool = False, guessed: bool = False) -> Prediction:
        """A :class:`Prediction` for this question (``prediction`` normalised like answers)."""
        return Prediction(
            question_index=self.question_index, question_type=self.question_type, answer=self.answer,
            prediction=None if prediction is None else normalize_answer(prediction),
            probability=None if probability is None else float(probability), family=self.family,
            concepts=self.concepts, image_index=self.image_index, invalid_program=invalid_program,
            execution_error=execution_error, guessed=guessed, ood=self.ood, question_hash=self.question_hash)


def question_type(program: Program) -> str:
    """The question type of a program, from the function of its last node.

    Raises:
        ValueError: the last function has no question type (an unknown function, or one such as
            ``filter_color`` that yields no answer).
    """
    fn = program.nodes[-1].function
    sig = SIGNATURES.get(fn)
    qtype = _KIND_TO_TYPE.get(sig.kind) if sig is not None else None
    if qtype is None:
        raise ValueError(f"the last node's function {fn!r} has no question type "
                         f"(types: {', '.join(QUESTION_TYPES)})")
    return qtype


def mentioned_concepts(program: Program, ontology: Ontology | None = None) -> tuple[str, ...]:
    """Sorted unique ``"<attribute>=<value>"`` of the values the program's filters and relations
    carry (canonical spellings with ``ontology``: texture ``None`` -> ``none``). Nodes with empty
    ``value_inputs`` (a known defect of the official generator) contribute nothing."""
    out = set()
    for node in program.nodes:
        sig = SIGNATURES.get(node.function)
        if sig is None or not node.value_inputs:
            continue
        value = node.value_inputs[0]
        if sig.kind == "filter":
            attr = sig.attribute
            out.add(f"{attr}={_canonical(ontology, attr, value)}")
        elif sig.kind == "partfilter":
            attr = sig.attribute
            out.add(f"part_{attr}={_canonical(ontology, attr, value)}")
        elif sig.kind == "partfilter_partname":
            out.add(f"partname={value}")
        elif sig.kind == "relate":
            out.add(f"relation={value}")
    return tuple(sorted(out))


def _canonical(ontology: Ontology | None, attr: str, value: str) -> str:
    if ontology is None:
        return value
    if attr == "shape" and value in ontology.categories:
        return value
    return ontology.canonical(attr, value) or value


def shape_color_pairs(program: Program, ontology: Ontology, answer: str | None = None) -> set[tuple[str, str]]:
    """(shape category, color) combinations a question is about.

    A pair comes from one chain of object filters (``filter_shape[car]`` and ``filter_color[red]``
    applied to the same set); with ``answer``, also from a ``query_color`` of an object filtered by
    shape, or a ``query_shape`` of an object filtered by color. Shape subtypes become their category.
    """
    filters: dict[int, dict[str, set[str]]] = {}
    for i, node in enumerate(program.nodes):
        sig = SIGNATURES.get(node.function)
        if sig is None or sig.kind != "filter":
            continue
        attrs: dict[str, set[str]] = {}
        for j in node.inputs:  # continue the chain of the filter this one refines
            for a, vs in filters.get(j, {}).items():
                attrs.setdefault(a, set()).update(vs)
        if node.value_inputs:
            attrs.setdefault(sig.attribute, set()).add(node.value_inputs[0])
        filters[i] = attrs

    def categories(shapes: Iterable[str]) -> set[str]:
        out = set()
        for s in shapes:
            if s in ontology.categories:
                out.add(s)
            else:
                c = ontology.canonical("shape", s) or _unspoken_shape(ontology, s)
                cat = ontology.category_of(c) if c else None
                if cat:
                    out.add(cat)
        return out

    def colors(values: Iterable[str]) -> set[str]:
        return {ontology.canonical("color", v) or v for v in values}

    pairs = set()
    for attrs in filters.values():
        pairs |= {(c, k) for c in categories(attrs.get("shape", ())) for k in colors(attrs.get("color", ()))}
    last = program.nodes[-1]
    if answer is not None and last.function in ("query_color", "query_shape") and last.inputs:
        src = program.nodes[last.inputs[0]]
        chain = filters.get(src.inputs[0], {}) if src.function == "unique" and src.inputs else {}
        if last.function == "query_color":
            pairs |= {(c, k) for c in categories(chain.get("shape", ())) for k in colors([answer])}
        else:
            pairs |= {(c, k) for c in categories([answer]) for k in colors(chain.get("color", ()))}
    return pairs


def _unspoken_shape(ontology: Ontology, spoken: str) -> str | None:
    for key, name in ontology.spoken.get("shape", {}).items():
        if name == spoken:
            return key
    return None


def question_meta(q: Mapping[str, Any], where: str, *, position: int | None = None,
                  ontology: Ontology | None = None, ood_spec: Mapping[str, Any] | None = None,
                  scene: Mapping[str, Any] | None = None) -> QuestionMeta:
    """Label a question record for the predictions format.

    Args:
        q: a question record (``program`` in the executors' JSON form, ``answer``, optionally
            ``question_index``, ``image_index``, ``question_family_index``, ``template_filename``).
        where: where the record is (``"<file>, question 12"``), for error messages.
        position: the record's position in its file (the index when it has no ``question_index``).
        ontology: canonical concept spellings and shape categories (default: ``superclevr``).
        ood_spec: the ``ood`` entry of a systematic variant's spec (:class:`Variant.ood`).
        scene: the question's scene record; needed for the splits over scene factors.

    ``ood`` (with ``ood_spec``): for a split over shape category x color (``pairs`` of
    ``test_only``), True when the question is about a held-out combination
    (:func:`shape_color_pairs`, the answer included); for splits over the object count and the
    camera scale, True when the question's scene has a value never seen in training
    (``test_only.num_objects`` / ``test_only.camera_scale``), False when every value was seen (if
    perhaps in a new combination), None without a scene that records them.

    Raises:
        FormatError: a missing ``program`` or ``answer``, a malformed program, or a last node with
            no question type; the message names ``where`` and the field.
    """
    for name in ("program", "answer"):
        if name not in q:
            raise FormatError(f"{where}, field {name!r}: missing")
    index = q.get("question_index", position)
    if isinstance(index, bool) or not isinstance(index, int):
        raise FormatError(f"{where}, field 'question_index': expected an integer, got {index!r}")
    item = Question.from_json(q, index=index if position is None else position, where=where)
    return QuestionMeta.from_question(item, ontology=ontology, ood_spec=ood_spec, scene=scene, where=where)


def _ood(program: Program, answer: str, onto: Ontology, spec: Mapping[str, Any],
         scene: Mapping[str, Any] | None, where: str) -> bool | None:
    test_only = spec.get("test_only", {})
    factors = tuple(spec.get("factors", ()))
    if factors == ("shape_category", "color"):
        held = {tuple(p) for p in test_only.get("pairs", ())}
        return bool(shape_color_pairs(program, onto, answer) & held)
    if set(factors) <= {"num_objects", "camera_scale"}:
        return None if scene is None else scene_held_out(scene, spec)
    raise FormatError(f"{where}: the systematic split's factors {list(factors)} are not known to the "
                      f"evaluator (known: ['shape_category', 'color'], ['num_objects', 'camera_scale'])")


def scene_held_out(scene: Mapping[str, Any], spec: Mapping[str, Any]) -> bool | None:
    """Whether a scene of a split over the object count and the camera scale (``spec``: the
    variant's ``ood`` entry) has a value training never saw (``test_only.num_objects`` /
    ``test_only.camera_scale``); None when the split is over the camera scale and the scene
    records none."""
    test_only = spec.get("test_only", {})
    n = len(scene.get("objects", ()))
    scale = (scene.get("camera") or {}).get("distance_scale")
    if "camera_scale" in spec.get("factors", ()) and scale is None:
        return None
    held_n = set(test_only.get("num_objects", ()))
    held_s = {round(float(s), 6) for s in test_only.get("camera_scale", ())}
    return n in held_n or (scale is not None and round(float(scale), 6) in held_s)


def load_question_meta(root: str | os.PathLike, variant: str, split: str = "test", *,
                       ontology: Ontology | None = None,
                       questions: QuestionsFile | None = None) -> list[QuestionMeta]:
    """Labels of every question of ``ROOT/VARIANT/questions/<split>_questions.json``.

    For a systematic variant (its ``manifest.json`` ``variant_spec``, else its catalogue spec, has
    ``ood``) the ID/OOD flag
    is set, reading ``scenes/<split>_scenes.json`` when the split is over scene factors.

    Args:
        questions: that file already read (:func:`nsvqa.artifacts.read_questions`), so that a
            model reading it for its own inputs reads it once; else it is read here (every
            question needs a program, valid or not, and an answer).

    Raises:
        FormatError: a malformed questions or scenes file (naming the file, question and field).
    """
    folder = Path(root) / variant
    onto = ontology or load_ontology("superclevr")
    if questions is None:
        questions = read_questions(questions_path(folder, split), onto, require_program=True, require_answer=True,
                                   require_valid=False)
    spec = _variant_ood(folder, variant)
    scenes: dict[int, Mapping] = {}
    if spec and set(spec.get("factors", ())) & {"num_objects", "camera_scale"}:
        scenes = {i: s.record for i, s in read_scenes(scenes_path(folder, split)).by_image_index(questions).items()}
    return [QuestionMeta.from_question(q, ontology=onto, ood_spec=spec, scene=scenes.get(q.image_index))
            for q in questions]


def _variant_ood(folder: Path, variant: str) -> Mapping[str, Any] | None:
    manifest = folder / "manifest.json"
    if manifest.exists():
        spec = read_json(manifest).get("variant_spec") or {}
        if isinstance(spec, Mapping) and "ood" in spec:
            return spec["ood"]
    try:
        return load_variant(variant).ood
    except VariantError:
        return None
