"""One question about one image, answered by a model of a pretrained set (:func:`load_pretrained`).

    >>> import nsvqa
    >>> model = nsvqa.load_pretrained("mid-mini")                          # doctest: +SKIP
    >>> answer, program, trace = model.answer("scene.png", "How many cars are there?")  # doctest: +SKIP

A set (:mod:`nsvqa.pretrained`: a name, resolved as it says, or a folder) holds a scene parser, a
question parser and trained models. A *modular* model (NS-VQA, P-NSVQA, P-NSVQA exact:
:data:`nsvqa.models.pipeline.MODELS`) answers as the study does: the scene parser turns the image
into per-object likelihoods (detections kept from the study's score cut, the manifest's
``parse_min_score``), the question parser turns the question into a program, and the model's
reasoner executes it (NS-VQA with the cuts the set chose on val, ``nsvqa/tuned.json``).
:meth:`ModularModel.answer` returns ``(answer, program, trace)``: the answer (None when the program
is invalid or its execution failed: no guess is drawn), the :class:`executors.Program` (None when the
question parser produced no valid one) and the executor's per-step trace (None when there is none).

Any other model a set holds (``manifest["models"]``: FiLM, the LSTMs, mDETR, NSCL, the priors, ...)
answers through its own :meth:`nsvqa.models.Model.predict`, on a one-question folder written for the
call (the image, the question with the question parser's program, and for a model that reads them
the set's parses of both): :meth:`SetModel.answer` returns ``(answer, program, None)``, the program
being the one the model read (None for a model that reads none). Such models are registered a floor
above ``nsvqa`` (``baselines``); :func:`load_pretrained` is given their table by the caller, which
:func:`orchestration.pretrained.load_pretrained` does with the whole registry.

``image`` is a file path, a PIL image or a uint8 array (H, W, 3; an alpha channel is dropped, a
grey (H, W) image repeated). The sets are trained on one image size (``mid-mini``: 320x240); the
detector takes other sizes (torchvision rescales them), but accuracy is measured at that size only.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import numpy as np

from executors import ExecutionError, Program
from executors.io import normalize_answer, read_json
from nsvqa.artifacts import LikelihoodsHeader, ParsedPrograms, ParsedSceneRecord, write_likelihoods, write_programs
from nsvqa.artifacts.likelihoods import PARSE_MIN_SCORE
from nsvqa.config import resolve_device
from nsvqa.models import Model, ModelSpec, PredictInputs, UnknownModel
from nsvqa.models.pipeline import MODELS as PIPELINE_MODELS
from nsvqa.pretrained import MANIFEST, PretrainedError, verified

#: The model :func:`load_pretrained` answers with unless told: P-NSVQA, the paper's reasoner.
DEFAULT_MODEL = "pnsvqa"
#: The variant and split names of the one-question folder a :class:`SetModel` answers on.
_VARIANT, _SPLIT = "question", "test"


class Reply(NamedTuple):
    """What :meth:`ModularModel.answer` and :meth:`SetModel.answer` return (a 3-tuple).

    Attributes:
        answer: the answer as predictions files write it (:func:`executors.io.normalize_answer`:
            lower case, ``"yes"``/``"no"``, digits for a count), or None when the model found none
            (an invalid program, a failed execution).
        program: the program the answer was computed from (:class:`executors.Program`), or None.
        trace: per program step, what the executor computed (:attr:`executors.ExecutionResult.trace`),
            or None (a model without one, a failure before execution).
    """

    answer: Any
    program: Program | None
    trace: list | None


@dataclass(frozen=True)
class Detail:
    """Everything one answer came with (:meth:`ModularModel.ask`, :meth:`SetModel.ask`).

    Attributes:
        reply: ``(answer, program, trace)``.
        probability: the model's probability of the answer (None where it gives none).
        error: why there is no answer (None when there is one).
        tokens: the question parser's program tokens (prefix form), valid or not.
    """

    reply: Reply
    probability: float | None = None
    error: str | None = None
    tokens: tuple[str, ...] = ()


def image_array(image: Any) -> np.ndarray:
    """``image`` (a path, a PIL image or an array) as (H, W, 3) uint8 pixels.

    Raises:
        FileNotFoundError: no such file; TypeError: another kind of object; ValueError: an array
            of another dtype or shape (both named).
    """
    if isinstance(image, (str, os.PathLike)):
        path = Path(image)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such image")
        from PIL import Image  # heavy, and only in the [full] extra: only to decode an image file

        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8).copy()
    if hasattr(image, "convert") and hasattr(image, "size") and not isinstance(image, np.ndarray):  # a PIL image
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()
    if not isinstance(image, np.ndarray):
        raise TypeError(f"image: a file path, a PIL image or a uint8 array expected, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise ValueError(f"image: a uint8 array expected (0-255), got dtype {image.dtype}")
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] not in (3, 4) or min(image.shape[:2]) < 1:
        raise ValueError(f"image: shape (H, W, 3) or (H, W, 4) expected, got {tuple(image.shape)}")
    return np.ascontiguousarray(image[:, :, :3])


def _tensor(pixels: np.ndarray):
    """(3, H, W) float32 in [0, 1], as :func:`nsvqa.artifacts.images.read_image` gives a file."""
    import torch  # heavy (seconds): only when an image is parsed

    return torch.from_numpy(pixels.copy()).permute(2, 0, 1).float().div_(255.0)


class _Parsers:
    """The set's scene parser and question parser, loaded once for every answer."""

    def __init__(self, folder: Path, min_score: float, device: str):
        from nsvqa.training.loading import load_question_parser, load_scene_parser  # heavy: torch and the parsers

        self.scene = load_scene_parser(folder / "scene_parser", min_score)
        self.scene.to(device)
        self.question = load_question_parser(folder / "question_parser", device=device)
        self.device = device
        self._last: tuple[bytes, Any] | None = None  # (digest of the pixels, their parse): questions about one image

    def parse_image(self, pixels: np.ndarray):
        """The parsed scene of one image (:class:`parsers.scene.scene_parser.ParsedScene`); the
        image asked about last is parsed once for all its questions."""
        import torch  # heavy (seconds): only when an image is parsed

        key = hashlib.sha256(repr(pixels.shape).encode() + pixels.tobytes()).digest()
        if self._last is None or self._last[0] != key:
            with torch.no_grad():
                self._last = (key, self.scene.parse([_tensor(pixels).to(self.device)])[0])
        return self._last[1]

    def parse_question(self, question: str):
        """The question parser's :class:`parsers.question.decode.ParsedProgram` of ``question``."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"question: a non-empty string expected, got {question!r}")
        return self.question.parse([question])[0]


class PretrainedModel(ABC):
    """A model of a pretrained set, ready to answer (:func:`load_pretrained` builds one).

    Attributes:
        name: the model's registered name (``pnsvqa``, ``film``, ...).
        folder: the set's folder (verified: every file checked against its manifest).
        manifest: the set's manifest (its ``card``: intended use, training data, accuracy, limits).
        device: the torch device the networks run on.
    """

    def __init__(self, name: str, folder: Path, manifest: Mapping[str, Any], parsers: _Parsers, device: str):
        self.name, self.folder, self.manifest, self.device = name, folder, dict(manifest), device
        self._parsers = parsers

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, set {self.manifest.get('name')!r} at {self.folder})"

    @property
    def card(self) -> dict[str, Any]:
        """The set's model card (``manifest["card"]``; {} for a set packed before cards)."""
        return dict(self.manifest.get("card") or {})

    def answer(self, image: Any, question: str) -> Reply:
        """``(answer, program, trace)`` for ``question`` about ``image`` (:class:`Reply`).

        Args:
            image: a file path, a PIL image or a uint8 array (H, W, 3).
            question: the question, in English as the set's questions are worded.
        """
        return self.ask(image, question).reply

    @abstractmethod
    def ask(self, image: Any, question: str) -> Detail:
        """:meth:`answer` with the probability, the error and the parser's tokens (:class:`Detail`)."""


class ModularModel(PretrainedModel):
    """A modular model of the set (:data:`nsvqa.models.pipeline.MODELS`): scene parser, question
    parser and the model's reasoner, as the study runs them."""

    def __init__(self, name: str, folder: Path, manifest: Mapping[str, Any], parsers: _Parsers, device: str):
        super().__init__(name, folder, manifest, parsers, device)
        self.ontology = parsers.question.ontology
        # NS-VQA's cuts as the set chose them on val (folder/nsvqa/tuned.json); the others have none
        self.reasoner = PIPELINE_MODELS[name](name).reasoner(self.ontology, folder / name)

    def ask(self, image: Any, question: str) -> Detail:
        parsed_q = self._parsers.parse_question(question)
        scene = self._parsers.parse_image(image_array(image)).likelihoods
        program = parsed_q.program
        (got,) = self.reasoner.answer([program], [scene])
        if got.answer is None:
            trace = None
            if got.execution_error and program is not None:
                try:
                    self.reasoner.trace(program, scene)
                except ExecutionError as e:  # its trace: the outputs of the steps before the one that failed
                    trace = getattr(e, "trace", None)
            return Detail(Reply(None, program, trace), None, got.error or "no answer", parsed_q.tokens)
        return Detail(Reply(normalize_answer(got.answer), program, self.reasoner.trace(program, scene).trace),
                      got.probability, None, parsed_q.tokens)


class SetModel(PretrainedModel):
    """Any other model the set holds (``<set>/<model>/``), answering through its own
    :meth:`nsvqa.models.Model.predict` on a one-question folder written for each call."""

    def __init__(self, model: Model, folder: Path, manifest: Mapping[str, Any], parsers: _Parsers, device: str):
        super().__init__(model.name, folder, manifest, parsers, device)
        self.model = model
        self.needs = model.needs(ModelSpec(model.name))

    def ask(self, image: Any, question: str) -> Detail:
        from PIL import Image  # heavy, and only in the [full] extra: the one-question folder's image file

        parsed_q = self._parsers.parse_question(question)
        program = parsed_q.program
        if program is None:  # the one-question folder's format, and the models that read the program, need one
            return Detail(Reply(None, None, None), None, f"the question parser found no valid program: {parsed_q.error}",
                          parsed_q.tokens)
        pixels = image_array(image)
        work = Path(tempfile.mkdtemp(prefix="nsvqa-answer-"))
        try:
            data = work / _VARIANT
            name = f"{_VARIANT}_{_SPLIT}_000000.png"
            (data / "images" / _SPLIT).mkdir(parents=True)
            Image.fromarray(pixels).save(data / "images" / _SPLIT / name)
            record = {"question": question, "image_index": 0, "image_filename": name, "question_index": 0,
                      "split": _SPLIT, "program": program.to_json(),
                      "answer": "yes"}  # the format needs one; nothing of the answer is read back
            (data / "questions").mkdir()
            (data / "questions" / f"{_SPLIT}_questions.json").write_text(json.dumps({"info": {}, "questions": [record]}))
            inputs = PredictInputs()
            if self.needs.scene_parser:
                parsed = self._parsers.parse_image(pixels)
                lik = work / "likelihoods.json"
                header = LikelihoodsHeader.from_parser(self._parsers.scene, self.folder / "scene_parser", data, _SPLIT)
                write_likelihoods(lik, header, [ParsedSceneRecord.from_parsed(parsed, 0, name)])
                inputs = PredictInputs(likelihoods=lik)
            if self.needs.question_parser:
                programs = work / "programs.json"
                write_programs(programs, ParsedPrograms.from_parses([parsed_q], provenance={},
                                                                    questions_file=data / "questions" / f"{_SPLIT}_questions.json"))
                inputs = PredictInputs(likelihoods=inputs.likelihoods, programs=programs)
            (pred,) = self.model.predict(self.folder / self.name, work, _VARIANT, _SPLIT, spec=ModelSpec(self.name),
                                         inputs=inputs, device=self.device)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        read = program if self.needs.question_parser else None
        if pred.guessed:
            return Detail(Reply(None, read, None), None, "the model could not answer (its guess not taken)",
                          parsed_q.tokens)
        return Detail(Reply(pred.prediction, read, None), pred.probability, None, parsed_q.tokens)


def load_pretrained(name_or_path: str | os.PathLike, model: str = DEFAULT_MODEL, *, device: str = "auto",
                    models: Mapping[str, type[Model]] | None = None) -> PretrainedModel:
    """A model of a pretrained set, ready to answer questions about images.

    Args:
        name_or_path: a set's name (``"mid-mini"``, resolved as :func:`nsvqa.pretrained.locate`
            says: ``$NSVQA_PRETRAINED_DIR``, a clone's ``pretrained/``, the user cache) or its folder;
            ``pretrained:<name>`` is taken too.
        model: the model to answer with: a modular one (``nsvqa``, ``pnsvqa``, ``pnsvqa-exact``:
            :class:`ModularModel`), or one of ``manifest["models"]`` (:class:`SetModel`), whose class
            ``models`` names.
        device: ``"auto"`` (CUDA when present, else the CPU), ``"cpu"``, ``"cuda"``, ...
        models: name -> model class for the set's other models (the registry's tables;
            :func:`orchestration.pretrained.load_pretrained` passes every one). The modular models
            need none.

    Raises:
        nsvqa.pretrained.PretrainedError: no such set, or a file that fails its check (named).
        nsvqa.models.UnknownModel: a model the set cannot answer with (the valid ones listed).
    """
    text = os.fspath(name_or_path)
    folder = verified(text.removeprefix("pretrained:"))
    manifest = read_json((folder / MANIFEST))
    held = list((manifest.get("models") or {}))
    valid = [*PIPELINE_MODELS, *held]
    if model not in valid:
        raise UnknownModel(f"model {model!r}: set {manifest.get('name')!r} answers with {', '.join(valid)}")
    if model not in PIPELINE_MODELS and model not in (models or {}):
        raise UnknownModel(f"model {model!r} of set {manifest.get('name')!r} is registered above nsvqa (baselines): "
                           f"`from orchestration.pretrained import load_pretrained` answers with it; "
                           f"nsvqa.load_pretrained answers with {', '.join(PIPELINE_MODELS)}")
    device = resolve_device(device)
    min_score = float(((manifest.get("study_piece") or {}).get("study") or {}).get("parse_min_score", PARSE_MIN_SCORE))
    parsers = _Parsers(folder, min_score, device)
    if model in PIPELINE_MODELS:
        return ModularModel(model, folder, manifest, parsers, device)
    return SetModel(models[model](model), folder, manifest, parsers, device)


__all__ = ["DEFAULT_MODEL", "Reply", "Detail", "image_array", "PretrainedModel", "ModularModel", "SetModel",
           "load_pretrained"]
