"""Train on one domain variant, predict on every variant of its factor (the Super-CLEVR protocol).

A *variant run* is one folder per (training variant, seed) under a runs root::

    RUNS/<variant>[-seed<S>]/
        config.json, train.log     what was asked, every command that touched the run
        scene_parser/              the run's scene parser (detector.pt, attributes.pt); a run whose
                                   training images are another variant's (``TrainSpec.scene_variant``:
                                   ``rd-`` / ``rd+`` and ``mid``) uses that variant's run's instead,
                                   under this runs root or another (``TrainSpec.scene_runs``)
        question_parser/           the run's question parser (question_parser.pt)
        question_parser.log        its output when it trained in a second process (``jobs`` >= 2)
        baselines/<name>/          the run directory of each model that trains one of its own
        parsed/<test variant>/likelihoods.json   the scene parser on the test split
        parsed/<test variant>/programs.json      the question parser on the test questions
        parsed/<variant>/val_likelihoods.json, val_programs.json   the same on the training variant's
                                   val split, where models that tune (:meth:`~nsvqa.models.Model.tune`)
                                   choose their cuts
        predictions/<label>__train-<variant>__test-<test variant>.jsonl
        summary.json               accuracy per (model, test variant), kept across calls

The experiment drives the model registry (:mod:`orchestration.models`) alone: each model says what
it needs from the run (:meth:`~nsvqa.models.Model.needs`, declared on its class: the scene parser,
the question parser, the images), the run trains those once for all models, trains every model that
has something of its own to train, lets each model that :attr:`~nsvqa.models.Model.tunes_on_val`
choose its cuts on the training variant's val split (never on a test split), parses each test split
once, and hands each model its :class:`~nsvqa.models.PredictInputs`. It never tells one kind of
model from another by its name.

Every step is resumable: the parsers and models resume from their checkpoints, and a parse output
is reused when it records the fingerprints (SHA-256) of the checkpoints and inputs it came from. A
scene parse keys its images by their bytes, so the same images parsed by the same parser are parsed
once: a test variant with another's images (``rd-`` and ``mid``) takes a copy of that parse, from
this run or from the run whose scene parser it uses.
Predictions are recomputed each time (seconds). :func:`train_variant` is what
``scripts/train_variant.py`` runs; ``scripts/run_factor.py`` calls it for every training variant of a
factor.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import time
from dataclasses import dataclass

import torch
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from executors.io import read_json
from nsvqa.fileio import check_outside_data, check_writable, sha256_file, sha256_folder, temporary_folder
from nsvqa.generation.suite import SUITE_PROFILES
from nsvqa.generation.variants import FACTORS, get_factor, load_variant
from nsvqa.models import ModelSpec, Needs, PredictInputs, UnknownModel
from nsvqa.artifacts import (LikelihoodsHeader, ParsedPrograms, ParsedSceneRecord, read_likelihoods, read_scenes,
                             scenes_path, write_likelihoods, write_programs)
from nsvqa.artifacts.images import check_images
from nsvqa.artifacts.predictions import SHUFFLED, Prediction, predictions_path, read_predictions, write_predictions
from nsvqa.artifacts.questions import QuestionsFile, questions_path, read_questions, write_questions
from nsvqa.artifacts.summary import merged_summary, read_summary, summary_path, write_summary
from nsvqa.evaluation import accuracy
from nsvqa.evaluation.image_dependence import image_dependence, shuffled_questions
from nsvqa.evaluation.report import failures_per_model, invalid_program_warning
from nsvqa.pretrained import parsers_dir, shipped_models
from nsvqa.training import RunDir
from nsvqa.training.checkpoint import checkpoint_sha256
from nsvqa.training.engine import more_threads_when
from nsvqa.training.loading import QUESTION_CHECKPOINT, load_question_parser, load_scene_parser, parse_split
from nsvqa.training.scene_config import SceneParserConfig
from nsvqa.training.question_config import QuestionParserConfig
from orchestration import models as registry
from orchestration.train_spec import TrainSpec

#: The models :func:`train_variant` runs when none are named.
DEFAULT_MODELS = registry.executors(gt_programs=False)  # every model that executes programs on parsed scenes
#: What the summary of a ``tiny`` run says under its table (measured: docs/perception.md).
SMOKE_NOTE = ("note: --profile tiny is a smoke profile: it checks that every step runs end to end and does not learn "
              "(accuracies near 0 are expected). The smallest profile that learns is demo: make demo-train, about "
              "12 minutes on 2 cores, P-NSVQA 48% in domain (docs/perception.md)")
log = logging.getLogger("orchestration.experiment")


class ExperimentError(RuntimeError):
    """A run that cannot go on (missing data, a failed training job); the message says what."""


# ---------------------------------------------------------------------------- layout
@dataclass(frozen=True)
class VariantRun:
    """The folders of one (training variant, seed) run under ``runs``."""

    runs: Path
    variant: str
    seed: int = 0
    parsers: Path | None = None  # a folder of trained parsers to use instead of training them (a shipped set)
    scene_variant: str | None = None  # the variant whose run (same seed) holds this run's scene parser
    scene_runs: Path | None = None  # the runs root of that run (default: ``runs``)

    @property
    def path(self) -> Path:
        return Path(self.runs) / (self.variant if self.seed == 0 else f"{self.variant}-seed{self.seed}")

    @property
    def scene_run(self) -> "VariantRun":
        """The run that holds this run's scene parser: the run of ``scene_variant`` (default this
        run's variant) with the same seed under ``scene_runs`` (default ``runs``); itself when neither
        names another."""
        if self.scene_runs is None and self.scene_variant in (None, self.variant):
            return self
        return VariantRun(Path(self.scene_runs or self.runs), self.scene_variant or self.variant, self.seed)

    @property
    def scene_dir(self) -> Path:
        return (self.parsers or self.scene_run.path) / "scene_parser"

    @property
    def question_dir(self) -> Path:
        return (self.parsers or self.path) / "question_parser"

    def model_dir(self, name: str) -> Path:
        """The run directory of model ``name`` (``baselines/<name>``, the layout of earlier runs; with
        ``parsers``, its folder there when it has one, ``<name>/`` in a shipped set or
        ``baselines/<name>/`` in a run folder: the cuts NS-VQA chose with those parsers)."""
        if self.parsers is not None:
            for mine in (self.parsers / name, self.parsers / "baselines" / name):
                if mine.is_dir():
                    return mine
        return self.path / "baselines" / name

    def parsed(self, test: str, what: str, split: str | None = None) -> Path:
        """``parsed/<test>/<what>.json``: a parser's output on the test split of variant ``test``;
        with ``split`` (the training variant's val split, where models choose their cuts)
        ``parsed/<test>/<split>_<what>.json``."""
        return self.path / "parsed" / test / (f"{split}_{what}.json" if split else f"{what}.json")

    def predictions(self, label: str, test: str) -> Path:
        return predictions_path(self.path, label, self.variant, test)

    def shuffled_predictions(self, label: str, test: str) -> Path:
        """``shuffled/predictions/<label>__train-<variant>__test-<test>.jsonl``: the model's
        predictions with every test question asked of another image of its split (the image-shuffle
        test, :func:`write_shuffled_predictions`)."""
        return predictions_path(self.path / SHUFFLED, label, self.variant, test)

    def inputs(self, test: str, spec: ModelSpec, split: str | None = None) -> PredictInputs:
        """What model ``spec`` takes from this run on test variant ``test`` (per its needs; ``split``
        as in :meth:`parsed`)."""
        need = registry.get(spec.name).needs(spec)
        return PredictInputs(likelihoods=self.parsed(test, "likelihoods", split) if need.scene_parser else None,
                             programs=self.parsed(test, "programs", split) if need.question_parser else None,
                             seed=self.seed)


def factors_of(variant: str) -> list[str]:
    """The domain-shift factors whose variants include ``variant`` (``mid`` is in two)."""
    return [f for f, vs in FACTORS.items() if variant in vs]


def variants_to_test(variant: str, factor: str | None = None) -> list[str]:
    """Variants a model trained on ``variant`` is tested on: those of ``factor``, or of every
    factor that includes ``variant``, in catalogue order; a systematic split only on itself.

    Raises:
        ExperimentError: ``variant`` is not a variant of ``factor`` (or of any factor).
    """
    factors = [factor] if factor else factors_of(variant)
    if not factors or (factor and variant not in FACTORS.get(factor, ())):
        where = f"factor {factor!r} ({', '.join(FACTORS.get(factor, ()))})" if factor else "any factor"
        raise ExperimentError(f"variant {variant!r} is not a variant of {where}")
    if all(get_factor(f).tested_on_itself for f in factors):  # a systematic split: its own experiment
        return [variant]
    return list(dict.fromkeys(v for f in factors for v in FACTORS[f]))


def model_specs(labels: Sequence[str | ModelSpec]) -> list[ModelSpec]:
    """The :class:`~nsvqa.models.ModelSpec` of each label (``"pnsvqa"``, ``"nsvqa+gtprog"``).

    Raises:
        ExperimentError: an unknown model (the valid ones listed) or option.
    """
    try:
        return registry.parse_specs([x.label if isinstance(x, ModelSpec) else x for x in labels])
    except (UnknownModel, ValueError) as e:
        raise ExperimentError(str(e)) from None


def _fresh(path: Path, key: Mapping[str, Any]) -> bool:
    """``path`` exists and records ``key`` in its ``provenance``."""
    if not path.exists():
        return False
    try:
        return read_json(path, allow_nan=True).get("provenance") == dict(key)
    except (OSError, ValueError, AttributeError):  # unreadable or not an object: not fresh, made again
        return False


# ---------------------------------------------------------------------------- training
def _train_question_parser(data: Path, run: VariantRun, spec: TrainSpec, progress: bool) -> float:
    """Train (or resume, or find finished) the run's question parser; returns its seconds."""
    from nsvqa.training.question_parser import train_question_parser  # the question parser's training stack, only to train

    t0 = time.perf_counter()
    cfg = QuestionParserConfig.from_profile(str(data), spec.profile, seed=run.seed, device=spec.device,
                                       **spec.question_overrides)
    train_question_parser(cfg, run.question_dir, resume=True, progress=progress)
    return time.perf_counter() - t0


def _question_parser_job(data: Path, run: VariantRun, spec: TrainSpec, log_path: Path) -> None:
    """The second process of :func:`train_parsers`: one torch thread, its output to ``log_path``."""
    with open(log_path, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
    torch.set_num_threads(1)
    _train_question_parser(data, run, spec, progress=False)


def train_parsers(data: Path, run: VariantRun, spec: TrainSpec, scene: bool, question: bool, *,
                  scene_data: Path | None = None) -> dict[str, float]:
    """Train (or resume, or find finished) the parsers a run needs; returns seconds per parser. The
    scene parser trains on ``scene_data`` (default ``data``) into :attr:`VariantRun.scene_dir`.

    With ``spec.jobs`` >= 2 and both parsers asked, the question parser trains in a second process
    (:mod:`multiprocessing`, spawned; one thread, its output in ``RUN/question_parser.log``) while
    this one trains the scene parser on the other threads, and on every thread from the first step
    after that process ends (:func:`nsvqa.training.engine.more_threads_when`).
    """
    from nsvqa.training.scene_parser import train_scene_parser  # the detector's training stack, only to train

    seconds: dict[str, float] = {}
    child = None
    threads = torch.get_num_threads()
    if question and spec.jobs >= 2 and scene:
        run.question_dir.mkdir(parents=True, exist_ok=True)
        qlog = run.path / "question_parser.log"
        child = multiprocessing.get_context("spawn").Process(
            target=_question_parser_job, args=(data, run, spec, qlog), name="question-parser")
        child.start()
        t_child = time.perf_counter()
        log.info("question parser: training in a second process (pid %d, log %s)", child.pid, qlog)
        torch.set_num_threads(max(1, spec.jobs - 1))
    try:
        if scene:
            t0 = time.perf_counter()
            cfg = SceneParserConfig.from_profile(str(scene_data or data), spec.profile, seed=run.seed,
                                                 device=spec.device, **spec.scene_overrides)
            # every thread back, mid-stage, once the question parser's process has ended
            with more_threads_when(lambda: child is None or not child.is_alive(), threads):
                train_scene_parser(cfg, run.scene_dir, resume=True, progress=spec.progress)
            seconds["scene_parser"] = time.perf_counter() - t0
        if question and child is None:
            seconds["question_parser"] = _train_question_parser(data, run, spec, spec.progress)
        if child is not None:
            child.join()
    except BaseException:  # a failure or a signal, also while waiting: the second process stops too
        if child is not None:
            child.terminate()  # SIGTERM: it checkpoints at the end of its step
            child.join()
            torch.set_num_threads(threads)
        raise
    if child is not None:
        torch.set_num_threads(threads)  # what follows (models, parsing) has every thread again
        if child.exitcode != 0:
            raise ExperimentError(f"question-parser training failed (exit {child.exitcode}); see {qlog}")
        seconds["question_parser"] = time.perf_counter() - t_child
    return seconds


def train_models(data: Path, run: VariantRun, spec: TrainSpec, specs: Sequence[ModelSpec]) -> dict[str, float]:
    """Train (or resume, or find finished) each model of ``specs`` that has something of its own to
    train, once per name, into :meth:`VariantRun.model_dir` at ``spec.profile``; returns seconds per
    model (``model_<name>``). A model that :class:`~nsvqa.models.Needs` ``train_parses`` gets the
    run's scene parses of ``data``'s train and val splits first (made once, reused)."""
    seconds = {}
    for name in dict.fromkeys(s.name for s in specs):
        model = registry.get(name)
        if not model.trainable:
            continue
        t0 = time.perf_counter()
        overrides = dict(spec.model_overrides.get(name, {}))
        if model.needs(next(s for s in specs if s.name == name)).train_parses:
            for split in ("train", "val"):
                parse_scenes(run, data, split, progress=spec.progress, min_score=spec.parse_min_score, tuning=True)
            overrides.setdefault("parses", str(run.parsed(data.name, "likelihoods", "train").parent))
        cfg = model.config(str(data), spec.profile, seed=run.seed, device=spec.device, **overrides)
        model.train(cfg, run.model_dir(name), resume=True, progress=spec.progress)
        seconds[f"model_{name}"] = time.perf_counter() - t0
    return seconds


def tune_models(data: Path, run: VariantRun, spec: TrainSpec, specs: Sequence[ModelSpec]) -> dict[str, float]:
    """Let each model of ``specs`` that :attr:`~nsvqa.models.Model.tunes_on_val` choose its cuts
    on the training variant's val split, given the run's parses of that split (as at test time:
    the first spec of the model names what it is given); returns seconds per model (``tune_<name>``)."""
    seconds: dict[str, float] = {}
    for name in dict.fromkeys(s.name for s in specs):
        model = registry.get(name)
        if not model.tunes_on_val:
            continue
        first = next(s for s in specs if s.name == name)
        need = model.needs(first)
        t0 = time.perf_counter()
        run.model_dir(name).mkdir(parents=True, exist_ok=True)
        if need.scene_parser:
            parse_scenes(run, data, "val", progress=spec.progress, min_score=spec.parse_min_score, tuning=True)
        if need.question_parser:
            parse_questions(run, data, "val", tuning=True)
        model.tune(run.model_dir(name), data.parent, data.name, "val", spec=first,
                   inputs=run.inputs(data.name, first, "val"), device=spec.device)
        seconds[f"tune_{name}"] = time.perf_counter() - t0
    return seconds


# ---------------------------------------------------------------------------- parsing
def parse_scenes(run: VariantRun, data: Path, split: str, *, progress: bool = True, batch: int = 4,
                 min_score: float | None = None, tuning: bool = False) -> Path:
    """``parsed/<test>/likelihoods.json`` of the run's scene parser on ``data``'s split (with
    ``tuning``, ``parsed/<test>/<split>_likelihoods.json``, see :meth:`VariantRun.parsed`).
    ``min_score``: detections kept (default: the run's config); their scores are the existence
    probabilities P-NSVQA uses, NS-VQA keeps those >= 0.5.

    The parse is reused when its provenance matches (the parser's checkpoints, the split, the
    digest of its images' bytes, ``min_score``); a parse with that provenance of another variant's
    images, in this run or in :attr:`VariantRun.scene_run`, is copied under this variant's name
    (the same images: ``rd-`` / ``rd+`` / ``mid``)."""
    out = run.parsed(data.name, "likelihoods", split if tuning else None)
    parser = load_scene_parser(run.scene_dir, min_score)
    key = {"detector": checkpoint_sha256(parser.detector_path),
           "attributes": checkpoint_sha256(run.scene_dir / "attributes.pt"),
           "split": split, "images": sha256_folder(data / "images" / split), "min_score": parser.min_score}
    if _fresh(out, key):
        return out
    header = LikelihoodsHeader.from_parser(parser, run.scene_dir, data, split, provenance=key)
    for other in dict.fromkeys((*run.path.glob("parsed/*/*likelihoods.json"),
                                *run.scene_run.path.glob("parsed/*/*likelihoods.json"))):
        if other != out and _fresh(other, key):
            log.info("%s: the parse of the same images in %s", out, other)
            write_likelihoods(out, header, read_likelihoods(other, parser.ontology).scenes)
            return out
    scenes = [ParsedSceneRecord.from_parsed(p, idx, name)
              for idx, name, p in parse_split(parser, data, split, batch=batch, progress=progress)]
    write_likelihoods(out, header, scenes)
    return out


def parse_questions(run: VariantRun, data: Path, split: str, *, beam: int = 1, tuning: bool = False) -> Path:
    """``parsed/<test>/programs.json``: the run's question parser on ``data``'s questions of
    ``split``, one record per question, in file order (reused when its provenance matches;
    ``tuning`` as in :func:`parse_scenes`)."""
    out = run.parsed(data.name, "programs", split if tuning else None)
    qpath = questions_path(data, split)
    key = {"checkpoint": checkpoint_sha256(run.question_dir / QUESTION_CHECKPOINT), "questions": sha256_file(qpath),
           "beam": beam}
    if _fresh(out, key):
        return out
    parser = load_question_parser(run.question_dir)
    items = read_questions(qpath, parser.ontology, require_text=True)
    parsed = parser.parse([q.question for q in items], beam_size=beam)
    write_programs(out, ParsedPrograms.from_parses(parsed, provenance=key, questions_file=qpath))
    return out


# ---------------------------------------------------------------------------- predictions
def write_model_predictions(run: VariantRun, data: Path, split: str, specs: Sequence[ModelSpec], *,
                            device: str = "cpu") -> dict[str, Path]:
    """Predictions files of ``specs`` on ``data``'s split, each model given its run directory and
    the run's parses it needs (:meth:`VariantRun.inputs`); returns label -> path, in the order of
    ``specs``."""
    out = {}
    for spec in specs:
        preds = _predict(run, spec, data, split, data.name, device)
        out[spec.label] = run.predictions(spec.label, data.name)
        write_predictions(out[spec.label], preds)
    return out


def _predict(run: VariantRun, spec: ModelSpec, folder: Path, split: str, variant: str, device: str) -> list[Prediction]:
    """``spec``'s predictions on the variant folder ``folder``'s split, the model given its run
    directory (when it has one) and the run's parses of ``variant`` it needs."""
    model = registry.get(spec.name)
    has_dir = model.trainable or model.tunes_on_val
    return model.predict(run.model_dir(spec.name) if has_dir else None, folder.parent, folder.name, split,
                         spec=spec, inputs=run.inputs(variant, spec), device=device)


def shuffled_view(data: Path, split: str, into: Path, seed: int = 0, *,
                  questions: QuestionsFile | None = None) -> tuple[Path, dict[int, int]]:
    """A view of the variant folder ``data`` under ``INTO/<variant>/`` whose ``split`` questions are
    :func:`nsvqa.evaluation.image_dependence.shuffled_questions` of ``data``'s (every other entry a
    symbolic link to ``data``'s: images, scenes, cached features, manifest, the other questions
    files); returns (the view's folder, image -> image it is paired with). ``questions``: the
    split's questions already read (else read here).

    Raises:
        ValueError: a split with fewer than two images, or a question without ``image_index``.
    """
    data = Path(data).resolve()
    view = Path(into) / data.name
    view.mkdir(parents=True)
    for entry in data.iterdir():
        if entry.name != "questions":
            (view / entry.name).symlink_to(entry)
    (view / "questions").mkdir()
    for entry in (data / "questions").iterdir():
        if entry != questions_path(data, split):
            (view / "questions" / entry.name).symlink_to(entry)
    if questions is None:
        questions = read_questions(questions_path(data, split))
    shuffled, pairing = shuffled_questions(questions, seed)
    write_questions(questions_path(view, split), shuffled)
    return view, pairing


def write_shuffled_predictions(run: VariantRun, data: Path, split: str, specs: Sequence[ModelSpec], *,
                               device: str = "cpu", seed: int = 0) -> dict[str, Path]:
    """The image-shuffle test's predictions files of ``specs`` on ``data``'s split
    (:meth:`VariantRun.shuffled_predictions`): each model, given the same run directory and parses
    as :func:`write_model_predictions` (parses are keyed by image, so a question reads the parse of
    the image it is paired with), answers every question of a :func:`shuffled_view` of ``data``
    (derangement seed ``seed``). The view lives in a temporary folder of the run and is removed.
    Returns label -> path; empty when the split has fewer than two images (nothing to pair a
    question with). Score them with :func:`nsvqa.evaluation.image_dependence.image_dependence`
    against :func:`write_model_predictions`' files."""
    questions = read_questions(questions_path(data, split))
    if len({q.image_index for q in questions}) < 2:
        return {}
    out = {}
    tmp = temporary_folder(run.path, "shuffle")  # swept by the next run if this one is killed
    try:
        view, _ = shuffled_view(data, split, tmp, seed, questions=questions)
        for spec in specs:
            preds = _predict(run, spec, view, split, data.name, device)
            out[spec.label] = run.shuffled_predictions(spec.label, data.name)
            out[spec.label].parent.mkdir(parents=True, exist_ok=True)
            write_predictions(out[spec.label], preds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# ---------------------------------------------------------------------------- one variant
def check_variant_data(root: Path, variant: str, splits: Sequence[str], *, annotations: bool = True,
                       images: bool = True, profile: str = "tiny") -> None:
    """Validate the inputs a run reads from ``root/variant`` for ``splits``, before its first step:
    every file exists (``annotations``: the COCO masks too, which training needs and testing does
    not: an evaluation-only import of the official release has none); the questions file reads
    whole (every record with a program and an answer, each ``question_index`` once) and is not
    empty; the scenes file reads whole and pairs with the questions by ``image_index`` and
    ``image_filename``, every question with a scene (:meth:`nsvqa.artifacts.ScenesFile.by_image_index`);
    with ``images``, every scene's image is there, whole and of the split's size, and the bytes the
    manifest recorded (:func:`nsvqa.artifacts.images.check_images`).

    Raises:
        ExperimentError: the first missing file, named, with the command that makes it (the split
            size of ``profile``'s suite), or an empty questions list.
        FormatError: a malformed file or image (naming the file, the item and the field).
    """
    for split in splits:
        for rel in (f"questions/{split}_questions.json", f"scenes/{split}_scenes.json",
                    *([f"annotations/{split}_coco.json"] if annotations else [])):
            if not (root / variant / rel).exists():
                n = getattr(SUITE_PROFILES.get(profile, SUITE_PROFILES["tiny"]), split, 3)
                raise ExperimentError(f"{root / variant / rel}: missing (generate it with python scripts/generate_dataset.py "
                                      f"--out {root} --variant {variant} --split {split} --num-images {n} "
                                      f"--profile {profile}; or scripts/generate_suite.py --profile {profile})")
        qpath = questions_path(root / variant, split)
        questions = read_questions(qpath, require_program=True, require_answer=True, require_valid=False)
        if len(questions) == 0:
            raise ExperimentError(f"{qpath}, field 'questions': empty: no question to "
                                  f"{'test on' if split == 'test' else 'train on'}")
        scenes = read_scenes(scenes_path(root / variant, split))
        scenes.by_image_index(questions, every_question=True)
        if images:
            check_images(root / variant, split, [s.image_filename for s in scenes], where=str(scenes.path))


def _variant_run(root: Path, variant: str, runs: Path, seed: int, spec: TrainSpec, specs: Sequence[ModelSpec],
                 need: Needs) -> VariantRun:
    """The :class:`VariantRun` of ``variant`` under ``runs`` with the parsers ``spec`` names (a
    shipped set, or the scene parser of another variant or of a run under another root), once they
    are checked to serve ``specs``; without a shipped set, the training data of ``variant`` (and of
    the scene parser's variant when this run trains that parser) is validated first
    (:func:`check_variant_data`).

    Raises:
        ExperimentError: a shipped set with a model that would train, two sources of the scene
            parser, the scene parser of a variant whose scenes differ, a ``scene_runs`` run with no
            trained scene parser, or missing or empty training data.
    """
    parsers = None
    if spec.pretrained:
        parsers = parsers_dir(spec.pretrained)
        shipped = set(shipped_models(parsers))
        own = [s.label for s in specs if registry.get(s.name).trainable and s.name not in shipped]
        if own:
            raise ExperimentError(f"with pretrained parsers ({spec.pretrained}) only the models the set holds "
                                  f"({', '.join(sorted(shipped)) or 'none'}) or that need no training; "
                                  f"{', '.join(own)} would train")
    else:
        check_variant_data(root, variant, ["train", "val"], images=need.images, profile=spec.profile)
    scene_variant = spec.scene_variant if spec.scene_variant != variant else None
    scene_runs = Path(spec.scene_runs) if spec.scene_runs is not None else None
    if scene_runs is not None and parsers is not None:
        raise ExperimentError(f"pretrained parsers ({spec.pretrained}) and the scene parser of a run under "
                              f"{scene_runs}: choose one")
    if scene_variant is not None:
        if parsers is not None:
            raise ExperimentError(f"pretrained parsers ({spec.pretrained}) and the scene parser of {scene_variant!r}: "
                                  f"choose one")
        if not load_variant(variant).same_scenes(load_variant(scene_variant)):
            raise ExperimentError(f"variant {variant!r} cannot use the scene parser of {scene_variant!r}: their scene "
                                  f"settings differ (scene, splits or held-out values), so their images do")
        if need.scene_parser and scene_runs is None:
            check_variant_data(root, scene_variant, ["train", "val"], profile=spec.profile)
    run = VariantRun(runs, variant, seed, parsers, scene_variant, scene_runs)
    if scene_runs is not None and need.scene_parser:
        have = [run.scene_dir / f for f in ("detector.pt", "attributes.pt")]
        if not all(p.is_file() for p in have):
            raise ExperimentError(f"{run.scene_dir}: no trained scene parser ({', '.join(p.name for p in have)}); "
                                  f"TrainSpec.scene_runs takes a run that trained one")
    return run


def _present_tests(root: Path, tests: Sequence[str], split: str, spec: TrainSpec, need: Needs, skip_missing: bool,
                   echo: Callable[[str], None]) -> list[str]:
    """The variants of ``tests``, in order, whose ``split`` data validates
    (:func:`check_variant_data` without annotations); with ``skip_missing`` one that does not is
    left out and said through ``echo``.

    Raises:
        ExperimentError: a missing or empty test variant, without ``skip_missing``.
        FormatError: a malformed test file.
    """
    present = []
    for t in tests:
        try:
            check_variant_data(root, t, [split], annotations=False, images=need.images, profile=spec.profile)
            present.append(t)
        except ExperimentError as e:
            if not skip_missing:
                raise
            echo(f"skipping test variant {t}: {e}")
    return present


def _train_all(rd: RunDir, root: Path, run: VariantRun, spec: TrainSpec, specs: Sequence[ModelSpec],
               need: Needs) -> dict[str, float]:
    """Train what ``specs`` need on ``root/run.variant``: the run's parsers (none with a shipped
    set), each trainable model, then the models' cuts on val (none with a shipped set, which comes
    with its own), each step logged to ``rd``. Returns the seconds each step took."""
    data = root / run.variant
    timing: dict[str, float] = {}
    if (need.scene_parser or need.question_parser) and run.parsers is not None:
        rd.log(f"parsers of {spec.pretrained} ({run.parsers}), not trained")
    elif need.scene_parser or need.question_parser:
        rd.log(f"training parsers on {data} (profile {spec.profile}, seed {run.seed})"
               + (f"; the scene parser of {run.scene_variant or run.variant} ({run.scene_dir})"
                  if (run.scene_variant or run.scene_runs) and need.scene_parser else ""))
        timing |= train_parsers(data, run, spec, need.scene_parser and run.scene_runs is None,
                                need.question_parser, scene_data=root / (run.scene_variant or run.variant))
    trained = [s.name for s in specs if registry.get(s.name).trainable and run.parsers is None]
    if trained:
        rd.log(f"training models {', '.join(dict.fromkeys(trained))} on {data} "
               f"(profile {spec.profile}, seed {run.seed})")
        timing |= train_models(data, run, spec, specs)
    if run.parsers is None:
        timing |= tune_models(data, run, spec, specs)
    return timing


def _predict_on(rd: RunDir, run: VariantRun, root: Path, test: str, split: str, spec: TrainSpec,
                specs: Sequence[ModelSpec], need: Needs) -> tuple[dict[str, Path], dict[str, Path]]:
    """Parse ``root/test``'s ``split`` with the run's parsers (as ``specs`` need) and write every
    model's predictions there. Returns the predictions file per model label, and per label the
    image-shuffled predictions file (:func:`write_shuffled_predictions`; empty without
    ``spec.image_shuffle``, or when the split has fewer than two images to pair, logged to ``rd``)."""
    if need.scene_parser:
        parse_scenes(run, root / test, split, progress=spec.progress, min_score=spec.parse_min_score)
    if need.question_parser:
        parse_questions(run, root / test, split)
    paths = write_model_predictions(run, root / test, split, specs, device=spec.device)
    shuffled = (write_shuffled_predictions(run, root / test, split, specs, device=spec.device,
                                           seed=spec.shuffle_seed) if spec.image_shuffle else {})
    if spec.image_shuffle and not shuffled:
        rd.log(f"image shuffle on {test}: skipped, its {split} split has fewer than two images to pair")
    return paths, shuffled


def _score(rd: RunDir, test: str, paths: Mapping[str, Path], shuffled: Mapping[str, Path]
           ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per model label of ``paths`` its accuracy on ``test`` (``Accuracy.to_json()``), and per label
    of ``shuffled`` its image dependence (:func:`~nsvqa.evaluation.image_dependence.image_dependence`,
    ``None`` when undefined); each logged to ``rd``."""
    accuracies: dict[str, dict[str, Any]] = {}
    dependence: dict[str, Any] = {}
    for m, p in paths.items():
        preds = read_predictions(p)
        acc = accuracy(preds)
        accuracies[m] = acc.to_json()
        rd.log(f"{m} on {test}: accuracy {acc.accuracy:.4f} ({acc.n} questions)")
        if m in shuffled:
            dep = image_dependence(preds, read_predictions(shuffled[m]))
            dependence[m] = dep
            if dep is not None:
                rd.log(f"{m} on {test}: image dependence {100 * dep['dependence']:+.1f} points (shuffled "
                       f"accuracy {dep['shuffled_accuracy']:.4f})")
    return accuracies, dependence


def train_variant(root: str | os.PathLike, variant: str, runs: str | os.PathLike, *,
                  models: Sequence[str | ModelSpec] = DEFAULT_MODELS, spec: TrainSpec | None = None, seed: int = 0,
                  factor: str | None = None, tests: Sequence[str] | None = None, split: str = "test",
                  skip_missing: bool = False, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Train what ``models`` need on ``root/variant`` (the run's parsers when a model needs them,
    then each model with something of its own to train) and write their predictions on every test
    variant (``tests``, default :func:`variants_to_test`). Returns the run's summary (also written
    to ``summary.json``): accuracy per model label and test variant, and the seconds each step took.

    Args:
        models: labels (``"pnsvqa"``, ``"nsvqa+gtprog"``) or :class:`~nsvqa.models.ModelSpec`.

    Raises:
        ExperimentError: an unknown model, missing or empty training data, or a missing test variant
        without ``skip_missing``.
        FormatError: a malformed input file (every input is read before the first step).
        OutputNotWritable: ``runs`` cannot be written, or is in the data (a variant folder, a data
            root, inside ``root``: :func:`nsvqa.fileio.check_outside_data`), before any work.
    """
    spec = spec or TrainSpec()
    root = Path(root)
    check_writable(Path(runs))
    check_outside_data(runs, root)  # a runs root inside the data: refused before any work
    specs = model_specs(models)
    need = registry.needs(specs)
    if load_variant(variant).test_only:
        raise ExperimentError(f"variant {variant!r} has only a test split: models are trained on its factor's "
                              f"other variants")
    tests = list(tests) if tests else variants_to_test(variant, factor)
    run = _variant_run(root, variant, Path(runs), seed, spec, specs, need)
    present = _present_tests(root, tests, split, spec, need, skip_missing, echo)
    read_summary(summary_path(run.path))  # an unreadable one is refused now, not replaced after the work
    run.path.mkdir(parents=True, exist_ok=True)
    labels = [s.label for s in specs]
    rd = RunDir(run.path, {"data": str(root), "variant": variant, "seed": seed, "models": labels,
                           "profile": spec.profile, "tests": present, "split": split,
                           "pretrained": spec.pretrained, "scene_variant": run.scene_variant,
                           "scene_runs": None if run.scene_runs is None else str(run.scene_runs),
                           "scene_overrides": spec.scene_overrides, "question_overrides": spec.question_overrides,
                           "model_overrides": spec.model_overrides},
                resume=True, must_match=("data", "variant", "seed", "profile"))
    try:
        t0 = time.perf_counter()
        timing = _train_all(rd, root, run, spec, specs, need)
        results: dict[str, dict[str, Any]] = {}
        dependence: dict[str, dict[str, Any]] = {}
        for t in present:
            t1 = time.perf_counter()
            paths, shuffled = _predict_on(rd, run, root, t, split, spec, specs, need)
            timing[f"test_{t}"] = time.perf_counter() - t1
            accuracies, dependences = _score(rd, t, paths, shuffled)
            for m, acc in accuracies.items():
                results.setdefault(m, {})[t] = acc
            for m, dep in dependences.items():
                dependence.setdefault(m, {})[t] = dep
        timing["total"] = time.perf_counter() - t0
    finally:
        rd.close()
    summary = merged_summary(summary_path(run.path), {
        "variant": variant, "seed": seed, "profile": spec.profile, "split": split, "tests": present,
        "models": labels, "accuracy": results, "seconds": timing,
        **({"image_dependence": dependence} if spec.image_shuffle else {})})
    write_summary(summary_path(run.path), summary)
    echo(summary_table(summary))
    return summary


def summary_table(summary: Mapping[str, Any]) -> str:
    """A plain-text accuracy table (models x test variants) of :func:`train_variant`'s summary,
    then per model its invalid programs and guessed answers over every test variant, and one
    warning line when most of a model's programs are invalid or its answers guessed
    (:func:`nsvqa.evaluation.report.invalid_program_warning`); a ``tiny`` run ends with
    :data:`SMOKE_NOTE`."""
    tests = summary["tests"]
    head = f"trained on {summary['variant']} (seed {summary['seed']}, {summary['profile']}), " \
           f"accuracy % on the {summary['split']} split"
    width = max([len(m) for m in summary["accuracy"]] + [5])
    lines = [head, " " * width + "".join(f"{t:>9}" for t in tests)]
    for m, row in summary["accuracy"].items():
        cells = []
        for t in tests:
            a = row.get(t, {}).get("accuracy")
            cells.append(f"{100 * a:9.1f}" if a is not None else f"{'-':>9}")
        lines.append(f"{m:<{width}}" + "".join(cells))
    failures = failures_per_model((m, acc) for m, row in summary["accuracy"].items()
                                  for t, acc in row.items() if t in tests)
    lines.append("invalid programs, guessed answers (of the questions):")
    lines += [f"{m:<{width}}  {c['n_invalid_program']}, {c['n_guessed']} (of {c['n']})" for m, c in failures.items()]
    warning = invalid_program_warning(failures)
    return "\n".join(lines + ([warning] if warning else []) + ([SMOKE_NOTE] if summary["profile"] == "tiny" else []))


__all__ = ["DEFAULT_MODELS", "ExperimentError", "VariantRun", "factors_of", "variants_to_test",
           "model_specs", "train_parsers", "train_models", "parse_scenes", "parse_questions",
           "write_model_predictions", "shuffled_view", "write_shuffled_predictions", "check_variant_data", "train_variant",
           "summary_table"]
