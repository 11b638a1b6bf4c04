"""NS-VQA and P-NSVQA end to end: parsed scenes and programs in, predictions out.

Three reasoners share the parsers and differ in how they execute a program:

* ``nsvqa``: the most likely scene (:func:`executors.scene.argmax_scene`) run by the
  deterministic executor (Yi et al., 2018);
* ``pnsvqa``: the likelihoods run by the probabilistic executor in threshold mode, as in the
  Super-CLEVR paper (count and exist select objects with probability >= 0.7);
* ``pnsvqa-exact``: the probabilistic executor with exact inference (Poisson-binomial count,
  exist = 1 - prod(1 - p)).

Each runs on programs from the question parser (the real system) or on the ground-truth programs
(the ``gt_programs`` option of a :class:`~nsvqa.models.ModelSpec`, labelled ``<model>+gtprog``,
which isolates the scene parser and the executor). The three are models of the registry
(:class:`PipelineModel`, one line each in :data:`MODELS`): they train nothing of their own, and
answer from the variant run's parses. Each model's class declares the reasoner it runs
(:attr:`PipelineModel.reasoner_cls`, and :attr:`PipelineModel.mode` for P-NSVQA's executor) and
builds it (:meth:`PipelineModel.make_reasoner`); nothing chooses a reasoner by its name. A new
program-executing reasoner is this file alone: a :class:`Reasoner` subclass (or a new mode of one),
a :class:`PipelineModel` subclass declaring it, and its line in :data:`MODELS`; the orchestration
reads the rest from the class (:func:`orchestration.models.executors`). When a program is invalid or
its execution fails, NS-VQA's habit is a random guess: :func:`predict` draws one among the answers
of the program's answer type (all answers when the program is invalid), seeded per question, and
flags it (``guessed`` with ``invalid_program`` or ``execution_error``), so that the evaluator reports
accuracy with and without guesses.

The reasoners need only numpy and the executors; the parsers' outputs come as
:class:`~executors.SceneLikelihoods` and :class:`~executors.Program` objects.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from executors import (DeterministicExecutor, ExecutionError, ExecutionResult, Ontology, ProbabilisticExecutor, Program,
                       SceneLikelihoods, load_ontology)
from executors.probabilistic import ValueSpace
from executors.scene import argmax_scene

from nsvqa.artifacts import (LikelihoodsFormatError, questions_path, read_likelihoods, read_programs,
                             read_questions)
from nsvqa.artifacts.predictions import Prediction, QuestionMeta, load_question_meta
from nsvqa.artifacts.records import index_by_image
from nsvqa.fileio import sha256_file, write_json_atomic
from nsvqa.models import TUNED, Model, ModelSpec, PredictInputs, read_tuned

#: Largest count a guess may draw (scenes hold at most 10 objects).
MAX_COUNT = 10


@dataclass(frozen=True)
class Answer:
    """A reasoner's output for one question.

    Attributes:
        answer: the answer, or None when there is none (invalid program, failed execution).
        probability: the reasoner's probability of ``answer`` (None for NS-VQA).
        invalid_program: the program was missing or failed validation.
        execution_error: execution failed (a ``unique`` on a set that is not one object, a scene
            that was not parsed, ...).
        error: the error's message, for logs.
    """

    answer: Any = None
    probability: float | None = None
    invalid_program: bool = False
    execution_error: bool = False
    error: str | None = None


class Reasoner(ABC):
    """Executes programs on parsed scenes. Subclasses: :class:`NSVQA`, :class:`PNSVQA`."""

    name = "reasoner"

    def __init__(self, ontology: Ontology):
        self.ontology = ontology

    def answer(self, programs: Sequence[Program | None], scenes: Sequence[SceneLikelihoods | None]) -> list[Answer]:
        """One :class:`Answer` per question: ``programs[i]`` (None: invalid) on ``scenes[i]``
        (None: the image was not parsed)."""
        out: list[Answer | None] = [None] * len(programs)
        todo = []
        for i, (p, s) in enumerate(zip(programs, scenes)):
            if p is None:
                out[i] = Answer(invalid_program=True, error="no valid program")
                continue
            try:
                p.validate(self.ontology)
            except ExecutionError as e:
                out[i] = Answer(invalid_program=True, error=str(e))
                continue
            if s is None:
                out[i] = Answer(execution_error=True, error="the question's image has no parsed scene")
                continue
            todo.append(i)
        for i, a in zip(todo, self._run([programs[i] for i in todo], [scenes[i] for i in todo])):
            out[i] = a
        return out  # type: ignore[return-value]

    @classmethod
    @abstractmethod
    def build(cls, ontology: Ontology, mode: str | None = None, *, threshold: float = 0.7, device: Any = None,
              min_exist: float = 0.5, min_part: float = 0.5) -> "Reasoner":
        """This reasoner in ``mode`` (what a :class:`PipelineModel` declares), taking the settings it
        reads of the others (P-NSVQA's ``threshold`` and ``device``, NS-VQA's ``min_exist`` and
        ``min_part``).

        Raises:
            ValueError: a mode this reasoner does not have.
        """

    @abstractmethod
    def _run(self, programs: list[Program], scenes: list[SceneLikelihoods]) -> list[Answer]:
        """Answers of valid programs on parsed scenes (one per question, in order)."""

    @abstractmethod
    def trace(self, program: Program, scene: SceneLikelihoods) -> ExecutionResult:
        """One valid program on one parsed scene as this reasoner executes it, with the output of
        every step (:attr:`executors.ExecutionResult.trace`; the answer agrees with :meth:`answer`'s).

        Raises:
            executors.ExecutionError: the execution failed (its ``trace`` holds the steps before).
        """


class NSVQA(Reasoner):
    """The deterministic executor on the most likely scene.

    Args:
        min_exist: detections below this existence probability are left out of the scene.
        min_part: parts below this ``part_exist`` are left out.
    """

    name = "nsvqa"

    def __init__(self, ontology: Ontology, min_exist: float = 0.5, min_part: float = 0.5):
        super().__init__(ontology)
        self.executor = DeterministicExecutor(ontology)
        self.min_exist, self.min_part = float(min_exist), float(min_part)

    @classmethod
    def build(cls, ontology, mode=None, *, threshold=0.7, device=None, min_exist=0.5, min_part=0.5):
        if mode is not None:
            raise ValueError(f"NS-VQA has one mode, not {mode!r}")
        return cls(ontology, min_exist, min_part)

    def _run(self, programs, scenes):
        out = []
        symbolic: dict[int, Any] = {}  # one argmax scene per parsed scene (id of a live object)
        for p, s in zip(programs, scenes):
            sym = symbolic.get(id(s))
            if sym is None:
                sym = symbolic[id(s)] = argmax_scene(s, self.min_part, self.min_exist)
            try:
                out.append(Answer(self.executor.run(p, sym, trace=False).answer))
            except ExecutionError as e:
                out.append(Answer(execution_error=True, error=str(e)))
        return out

    def trace(self, program, scene):
        """The deterministic executor's trace on the most likely scene (object indices of the
        detections it kept)."""
        return self.executor.run(program, argmax_scene(scene, self.min_part, self.min_exist), trace=True)


class PNSVQA(Reasoner):
    """The probabilistic executor on the likelihoods.

    Args:
        mode: ``"threshold"`` (``pnsvqa``) or ``"exact"`` (``pnsvqa-exact``).
        threshold: selection threshold of threshold mode (0.7 in the paper).
        device: None for numpy, or a torch device for the executor's torch backend.
    """

    def __init__(self, ontology: Ontology, mode: str = "threshold", threshold: float = 0.7, device: Any = None):
        super().__init__(ontology)
        self.executor = ProbabilisticExecutor(ontology, mode=mode, threshold=threshold, device=device)
        self.name = "pnsvqa" if mode == "threshold" else f"pnsvqa-{mode}"

    @classmethod
    def build(cls, ontology, mode=None, *, threshold=0.7, device=None, min_exist=0.5, min_part=0.5):
        if mode is None:
            raise ValueError("P-NSVQA needs its executor's mode (threshold, exact)")
        return cls(ontology, mode, threshold, device)

    def _run(self, programs, scenes):
        if not programs:
            return []
        uniq: dict[int, int] = {}
        liks: list[SceneLikelihoods] = []
        index = []
        for s in scenes:
            if id(s) not in uniq:
                uniq[id(s)] = len(liks)
                liks.append(s)
            index.append(uniq[id(s)])
        out = []
        for ans, dist in self.executor.run_batch_distributions(programs, liks, index):
            if isinstance(ans, ExecutionError):
                out.append(Answer(execution_error=True, error=str(ans)))
            else:
                p = None if dist is None else min(1.0, max(0.0, float(dist.get(ans, 0.0))))
                out.append(Answer(ans, p))
        return out

    def trace(self, program, scene):
        """The probabilistic executor's trace: per step a probability per detected object (or part)
        or a distribution over values (computed in float64, :meth:`ProbabilisticExecutor.run`)."""
        return self.executor.run(program, scene, trace=True)


def unanswerable(ontology: Ontology) -> frozenset:
    """Answers no scene can give: the spoken names of values no object takes (Super-CLEVR's
    unplaced shape ``addi``, "regular car")."""
    return frozenset(ontology.spoken_value(a, v) for a, vs in ontology.unplaced.items() for v in vs)


def answer_pool(program: Program | None, ontology: Ontology, space: ValueSpace | None = None,
                never: frozenset | None = None) -> list:
    """The answers a guess draws from: those of the program's answer type, or every answer
    when the program is missing or invalid; never one of ``never`` (default :func:`unanswerable`;
    a caller drawing many guesses passes it, with ``space``, once)."""
    space = space or ValueSpace.build(ontology, MAX_COUNT)
    never = unanswerable(ontology) if never is None else never
    values: Sequence = space.values
    if program is not None:
        try:
            a, b = space.slice_of(program.validate(ontology)[-1])
            values = space.values[a:b]
        except (ExecutionError, KeyError):
            pass
    return [v for v in values if v not in never]


def predict(reasoner: Reasoner, metas: Sequence[QuestionMeta], programs: Sequence[Program | None],
            scenes: Mapping[int, SceneLikelihoods], *, seed: int = 0, guess: bool = True) -> list[Prediction]:
    """Predictions of ``reasoner`` for the questions ``metas``.

    Args:
        programs: per question, its program (None: the parser produced no valid one).
        scenes: image index -> parsed scene; a question whose image is missing fails to execute.
        seed: seeds the guesses (each question's guess depends on (seed, question index) only).
        guess: after a failure, answer at random (flagged ``guessed``) instead of not at all.
    """
    if len(programs) != len(metas):
        raise ValueError(f"{len(metas)} questions but {len(programs)} programs")
    answers = reasoner.answer(programs, [scenes.get(m.image_index) for m in metas])
    space = ValueSpace.build(reasoner.ontology, MAX_COUNT)
    never = unanswerable(reasoner.ontology)
    out = []
    for m, p, a in zip(metas, programs, answers):
        if a.answer is not None:
            out.append(m.prediction(a.answer, a.probability))
            continue
        pred = None
        if guess:
            pool = answer_pool(None if a.invalid_program else p, reasoner.ontology, space, never)
            rng = np.random.default_rng([seed, m.question_index])
            pred = pool[int(rng.integers(len(pool)))]
        out.append(m.prediction(pred, None, invalid_program=a.invalid_program, execution_error=a.execution_error,
                                guessed=guess))
    return out


# ---------------------------------------------------------------------------- registered models
class PipelineModel(Model):
    """A :class:`Reasoner` as a registered model: nothing of its own to train; it answers from the
    variant run's scene parses and (unless ``gt_programs``) question parses. A subclass declares its
    reasoner, and the model builds it (:meth:`make_reasoner`).

    Attributes:
        reasoner_cls: the :class:`Reasoner` subclass the model runs.
        mode: the reasoner's mode (P-NSVQA's executor: ``threshold`` or ``exact``); None for a
            reasoner with one way to run (NS-VQA).
        threshold: P-NSVQA's selection threshold in threshold mode (0.7, the paper's).
    """

    family = "modular"
    uses_parses = True
    reads_attribute_head = True  # it executes on the attribute head's distributions
    supports_gt_programs = True
    executes_programs = True
    reasoner_cls: ClassVar[type[Reasoner]]
    mode: ClassVar[str | None] = None
    threshold: float = 0.7

    @classmethod
    def make_reasoner(cls, ontology: Ontology, **settings: Any) -> Reasoner:
        """The class's :attr:`reasoner_cls` in its :attr:`mode` (:meth:`Reasoner.build`; ``settings``:
        ``threshold`` (default :attr:`threshold`), ``device``, ``min_exist``, ``min_part``)."""
        return cls.reasoner_cls.build(ontology, cls.mode, **({"threshold": cls.threshold} | settings))

    def reasoner(self, ontology: Ontology, run_dir: str | Path | None = None) -> Reasoner:
        """The model's :class:`Reasoner` (NS-VQA keeps detections with existence >= 0.5, or the cuts
        its :meth:`tune` chose on val, kept in ``run_dir``)."""
        return self.make_reasoner(ontology)

    def _read_inputs(self, root, variant: str, split: str, spec: ModelSpec | None,
                     inputs: PredictInputs) -> tuple[Ontology, list[QuestionMeta], list, dict]:
        """(ontology, question metas, programs, image index -> parsed scene) of a split, each file
        read once."""
        gt = spec is not None and spec.gt_programs
        if inputs.likelihoods is None or (inputs.programs is None and not gt):
            raise ValueError(f"model {self.name!r} answers from the run's parses: PredictInputs needs likelihoods"
                             f"{'' if gt else ' and programs'}")
        onto = load_ontology("superclevr")
        questions = read_questions(questions_path(Path(root) / variant, split), onto, require_program=True,
                                   require_answer=True, require_valid=False)  # read once
        metas = load_question_meta(root, variant, split, ontology=onto, questions=questions)
        parsed = index_by_image(read_likelihoods(inputs.likelihoods, onto).scenes, inputs.likelihoods,
                                "parsed scene", questions, LikelihoodsFormatError)
        scenes = {i: r.likelihoods for i, r in parsed.items()}
        if gt:
            programs = [q.program for q in questions]
        else:
            programs = read_programs(inputs.programs, questions=questions).program_list()
        return onto, metas, programs, scenes

    def predict(self, run_dir, root, variant, split="test", *, spec: ModelSpec | None = None,
                inputs: PredictInputs = PredictInputs(), device: str = "cpu", progress: bool = False) -> list[Prediction]:
        """Predictions on ``ROOT/VARIANT``'s split from ``inputs.likelihoods`` and either the
        ground-truth programs (``spec.gt_programs``) or ``inputs.programs``; failures are guessed,
        seeded by ``inputs.seed`` (see :func:`predict`).

        Raises:
            ValueError: a parse output the model needs is missing from ``inputs``;
            FormatError: a malformed questions, likelihoods or programs file.
        """
        onto, metas, programs, scenes = self._read_inputs(root, variant, split, spec, inputs)
        return predict(self.reasoner(onto, run_dir), metas, programs, scenes, seed=inputs.seed)


#: The cuts NS-VQA's :meth:`NSVQAModel.tune` chooses from on val: the detection existence an
#: object needs to enter its scene, and the part existence a part needs.
MIN_EXIST_CANDIDATES = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
MIN_PART_CANDIDATES = (0.01, 0.1, 0.3, 0.5)


class NSVQAModel(PipelineModel):
    """NS-VQA: the deterministic executor on the most likely parsed scene (Yi et al., 2018). Its
    two cuts (``min_exist``, ``min_part``: which detections and parts the scene keeps) are
    hyper-parameters: :meth:`tune` chooses them on the training variant's val split."""

    reasoner_cls = NSVQA

    def reasoner(self, ontology: Ontology, run_dir: str | Path | None = None) -> Reasoner:
        tuned = read_tuned(run_dir, ("min_exist", "min_part"))
        if tuned is None:
            return self.make_reasoner(ontology)
        return self.make_reasoner(ontology, min_exist=tuned["min_exist"], min_part=tuned["min_part"])

    def tune(self, run_dir, root, variant, split="val", *, spec: ModelSpec | None = None,
             inputs: PredictInputs = PredictInputs(), device: str = "cpu") -> dict:
        """Choose ``min_exist`` and ``min_part`` on ``ROOT/VARIANT``'s ``split`` (the val split,
        never a test split) from :data:`MIN_EXIST_CANDIDATES` x :data:`MIN_PART_CANDIDATES`, given
        ``inputs`` (the run's parses of that split): the pair with the best accuracy (the higher
        cuts on a tie), saved in ``RUN_DIR/tuned.json`` with every pair's accuracy for
        :meth:`predict`. Reused while the parses and the questions are the same."""
        def accuracy(preds: list[Prediction]) -> float:  # a hit guess counts, as the study's accuracy
            return sum(p.correct for p in preds) / len(preds) if preds else 0.0

        key = {"likelihoods": sha256_file(inputs.likelihoods) if inputs.likelihoods else None,
               "programs": sha256_file(inputs.programs) if inputs.programs is not None else None,
               "questions": sha256_file(questions_path(Path(root) / variant, split)),
               "variant": variant, "split": split,
               "candidates": [list(MIN_EXIST_CANDIDATES), list(MIN_PART_CANDIDATES)]}
        old = read_tuned(run_dir, ("min_exist", "min_part"))
        if old is not None and old.get("key") == key:
            return old
        onto, metas, programs, scenes = self._read_inputs(root, variant, split, spec, inputs)
        acc = {(e, p): accuracy(predict(self.make_reasoner(onto, min_exist=e, min_part=p), metas, programs,
                                        scenes, seed=inputs.seed))
               for e in MIN_EXIST_CANDIDATES for p in MIN_PART_CANDIDATES}
        best = max(acc, key=lambda c: (acc[c], c))
        result = {"min_exist": best[0], "min_part": best[1],
                  "accuracy": {f"{e},{p}": a for (e, p), a in acc.items()}, "key": key}
        write_json_atomic(Path(run_dir) / TUNED, result, indent=1)
        return result


class PNSVQAModel(PipelineModel):
    """P-NSVQA: the probabilistic executor on the likelihoods, the paper's 0.7 threshold mode."""

    reasoner_cls = PNSVQA
    mode = "threshold"


class PNSVQAExactModel(PipelineModel):
    """P-NSVQA with exact inference (Poisson-binomial count, exist = 1 - prod(1 - p))."""

    reasoner_cls = PNSVQA
    mode = "exact"


#: The pipeline's models by name, one line each: the table the registry (:mod:`orchestration.models`)
#: reads beside ``baselines.MODELS``.
MODELS: dict[str, type[PipelineModel]] = {
    "nsvqa": NSVQAModel,
    "pnsvqa": PNSVQAModel,
    "pnsvqa-exact": PNSVQAExactModel,
}
#: Reasoner names (the models of :data:`MODELS`; the ``<model>`` of predictions files).
REASONERS = tuple(MODELS)


def make_reasoner(name: str, ontology: Ontology, **settings: Any) -> Reasoner:
    """The reasoner of the model ``name`` of :data:`MODELS`, as its class declares it
    (:meth:`PipelineModel.make_reasoner`, ``settings`` as there): for a caller that runs every
    reasoner on ground-truth programs by name (:func:`nsvqa.evaluation.scene_parser.executor_accuracy`).

    Raises:
        ValueError: no model of that name in :data:`MODELS` (the valid ones listed).
    """
    cls = MODELS.get(name)
    if cls is None:
        raise ValueError(f"unknown reasoner {name!r}; valid: {', '.join(REASONERS)}")
    return cls.make_reasoner(ontology, **settings)


__all__ = ["REASONERS", "MODELS", "MIN_EXIST_CANDIDATES", "MIN_PART_CANDIDATES", "PipelineModel", "NSVQAModel",
           "PNSVQAModel", "PNSVQAExactModel", "Answer", "Reasoner", "NSVQA", "PNSVQA", "make_reasoner", "unanswerable",
           "answer_pool", "predict"]
