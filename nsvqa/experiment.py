"""Train on one domain variant, predict on every variant of its factor (the Super-CLEVR protocol).

A *variant run* is one folder per (training variant, seed) under a runs root::

    RUNS/<variant>[-seed<S>]/
        config.json, train.log     what was asked, every command that touched the run
        scene_parser/              train_scene_parser.py run (detector.pt, attributes.pt)
        question_parser/           train_question_parser.py run (question_parser.pt)
        baselines/<name>/          train_baseline.py run of each baseline asked for (baseline.pt)
        parsed/<test variant>/likelihoods.json   the scene parser on the test split
        parsed/<test variant>/programs.json      the question parser on the test questions
        predictions/<model>__train-<variant>__test-<test variant>.jsonl
        summary.json               accuracy per (model, test variant), kept across calls

Every step is resumable: the parsers and baselines resume from their checkpoints, and a parse output
is reused when it records the fingerprints (SHA-256) of the checkpoints and inputs it came from.
Predictions are recomputed each time (seconds). The parsers are trained only for the NS-VQA /
P-NSVQA models and for the baselines that answer from the run's parses (NSCL: detected boxes,
parsed programs); another baseline (:mod:`baselines`, imported lazily: the package sits above
``nsvqa``) needs nothing but its own run. :func:`train_variant` is what ``scripts/train_variant.py``
runs; ``scripts/run_factor.py`` calls it for every training variant of a factor.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from executors import Program, load_ontology
from executors.errors import FormatError
from executors.io import load_questions

from .fileio import write_json_atomic
from .generation.variants import FACTORS, load_variant
from .pipeline import GT_PROGRAMS, REASONERS, make_reasoner, predict
from .predictions import load_question_meta, predictions_path, write_predictions

REPO = Path(__file__).resolve().parents[1]
#: The models run through the scene and question parsers (:mod:`nsvqa.pipeline`).
PIPELINE_MODELS = tuple(REASONERS) + tuple(m + GT_PROGRAMS for m in REASONERS)
DEFAULT_MODELS = ("nsvqa", "pnsvqa", "pnsvqa-exact")
log = logging.getLogger("nsvqa.experiment")


def baseline_models() -> tuple[str, ...]:
    """The names registered in :mod:`baselines` (imported here, on first use)."""
    import baselines

    return baselines.names()


def __getattr__(name: str) -> Any:
    """``MODELS``: every model this module trains and runs, :data:`PIPELINE_MODELS` then the
    baselines (computed on access, so importing this module does not import :mod:`baselines`;
    hence not in ``__all__``)."""
    if name == "MODELS":
        return PIPELINE_MODELS + baseline_models()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ExperimentError(RuntimeError):
    """A run that cannot go on (missing data, a failed training job); the message says what."""


# ---------------------------------------------------------------------------- layout
@dataclass(frozen=True)
class VariantRun:
    """The folders of one (training variant, seed) run under ``runs``."""

    runs: Path
    variant: str
    seed: int = 0

    @property
    def path(self) -> Path:
        return Path(self.runs) / (self.variant if self.seed == 0 else f"{self.variant}-seed{self.seed}")

    @property
    def scene_dir(self) -> Path:
        return self.path / "scene_parser"

    @property
    def question_dir(self) -> Path:
        return self.path / "question_parser"

    def baseline_dir(self, name: str) -> Path:
        return self.path / "baselines" / name

    def parsed(self, test: str, what: str) -> Path:
        return self.path / "parsed" / test / f"{what}.json"

    def predictions(self, model: str, test: str) -> Path:
        return predictions_path(self.path, model, self.variant, test)


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
    if factors == ["systematic"]:  # each systematic split is its own experiment (ID vs OOD questions)
        return [variant]
    return list(dict.fromkeys(v for f in factors for v in FACTORS[f]))


def parsing_baselines(models: Sequence[str]) -> list[str]:
    """The baselines of ``models`` that answer from the run's parses
    (:attr:`baselines.Baseline.uses_parses`, such as NSCL: detected boxes and parsed programs at
    test time)."""
    import baselines

    known = set(baseline_models())
    return [m for m in models if m in known and baselines.get(m).uses_parses]


def needs(models: Sequence[str]) -> tuple[bool, bool]:
    """(scene parser needed, question parser needed) for ``models``: the pipeline models use the
    parsers, and so do the baselines that answer from the run's parses
    (:func:`parsing_baselines`); the other baselines train alone.

    Raises:
        ExperimentError: a name that is no model (the valid ones listed).
    """
    valid = PIPELINE_MODELS + baseline_models()
    unknown = [m for m in models if m not in valid]
    if unknown:
        raise ExperimentError(f"unknown model(s) {unknown}; valid: {', '.join(valid)}")
    pipeline = [m for m in models if m in PIPELINE_MODELS]
    parsing = bool(parsing_baselines(models))
    return bool(pipeline) or parsing, any(not m.endswith(GT_PROGRAMS) for m in pipeline) or parsing


def fingerprint(*paths: str | os.PathLike) -> str:
    """SHA-256 over the bytes of ``paths`` (in order)."""
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _fresh(path: Path, key: Mapping[str, Any]) -> bool:
    """``path`` exists and records ``key`` in its ``provenance``."""
    if not path.exists():
        return False
    try:
        with open(path) as f:
            return json.load(f).get("provenance") == dict(key)
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------------------- training
@dataclass
class TrainSpec:
    """How to train the parsers of a variant run.

    Attributes:
        profile: scene- and question-parser profile (``tiny``, ``demo``, ``mini``, ``full``).
        scene_overrides, question_overrides: config fields over the profile's.
        baseline_overrides: baseline name -> config fields over its profile's.
        parse_min_score: detection score above which the scene parser keeps a detection when
            parsing the test splits (None: the scene-parser config's, 0.5). The default 0.05 keeps
            uncertain detections: P-NSVQA weighs them by their scores, NS-VQA drops those < 0.5.
            On the visual factor (mini, a detector of 600 iterations) this raised P-NSVQA from
            28.2% to 31.2% in-domain and left NS-VQA at 27.9%.
        jobs: 2 or more trains the question parser in a subprocess (1 thread) beside the scene
            parser (the other threads), which halves the wall time on a 2-core machine.
        device: torch device of the parsers and the baselines.
    """

    profile: str = "mini"
    scene_overrides: dict = field(default_factory=dict)
    question_overrides: dict = field(default_factory=dict)
    baseline_overrides: dict = field(default_factory=dict)
    jobs: int = 1
    device: str = "cpu"
    progress: bool = True
    parse_min_score: float | None = 0.05


def _question_command(data: Path, run: VariantRun, spec: TrainSpec) -> list[str]:
    cmd = [sys.executable, str(REPO / "scripts" / "train_question_parser.py"), "--data", str(data),
           "--profile", spec.profile, "--out", str(run.question_dir), "--seed", str(run.seed),
           "--device", spec.device, "--threads", "1", "--resume", "--no-progress"]
    for k, v in spec.question_overrides.items():
        cmd += ["--" + k.replace("_", "-"), str(v)]
    return cmd


def train_parsers(data: Path, run: VariantRun, spec: TrainSpec, scene: bool, question: bool) -> dict[str, float]:
    """Train (or resume, or find finished) the parsers a run needs; returns seconds per parser."""
    import torch

    from .question_training import QuestionParserConfig, train_question_parser
    from .scene_training import SceneParserConfig, train_scene_parser

    seconds: dict[str, float] = {}
    child = None
    if question and spec.jobs >= 2 and scene:
        run.question_dir.mkdir(parents=True, exist_ok=True)
        qlog = open(run.path / "question_parser.log", "ab")
        child = subprocess.Popen(_question_command(data, run, spec), stdout=qlog, stderr=subprocess.STDOUT)
        t_child = time.perf_counter()
        log.info("question parser: training in a subprocess (pid %d, log %s)", child.pid, qlog.name)
        torch.set_num_threads(max(1, spec.jobs - 1))
    try:
        if scene:
            t0 = time.perf_counter()
            cfg = SceneParserConfig.resolve(str(data), spec.profile, seed=run.seed, device=spec.device,
                                            **spec.scene_overrides)
            train_scene_parser(cfg, run.scene_dir, resume=True, progress=spec.progress)
            seconds["scene_parser"] = time.perf_counter() - t0
        if question and child is None:
            t0 = time.perf_counter()
            cfg = QuestionParserConfig.resolve(str(data), spec.profile, seed=run.seed, device=spec.device,
                                               **spec.question_overrides)
            train_question_parser(cfg, run.question_dir, resume=True, progress=spec.progress)
            seconds["question_parser"] = time.perf_counter() - t0
    except BaseException:
        if child is not None:
            child.terminate()
            child.wait()
        raise
    if child is not None:
        rc = child.wait()
        qlog.close()
        if rc != 0:
            raise ExperimentError(f"question-parser training failed (exit {rc}); see {run.path / 'question_parser.log'}")
        seconds["question_parser"] = time.perf_counter() - t_child
    return seconds


def train_baselines(data: Path, run: VariantRun, spec: TrainSpec, names: Sequence[str]) -> dict[str, float]:
    """Train (or resume, or find finished) each baseline of ``names`` on ``data`` into
    ``RUN/baselines/<name>/`` at ``spec.profile``; returns seconds per baseline."""
    import baselines

    seconds = {}
    for name in names:
        t0 = time.perf_counter()
        model = baselines.get(name)
        cfg = model.config(str(data), spec.profile, seed=run.seed, device=spec.device,
                           **spec.baseline_overrides.get(name, {}))
        model.train(cfg, run.baseline_dir(name), resume=True, progress=spec.progress)
        seconds[f"baseline_{name}"] = time.perf_counter() - t0
    return seconds


# ---------------------------------------------------------------------------- parsing
def parse_scenes(run: VariantRun, data: Path, split: str, *, progress: bool = True, batch: int = 4,
                 min_score: float | None = None) -> Path:
    """``parsed/<test>/likelihoods.json`` of the run's scene parser on ``data``'s split (reused
    when its provenance matches). ``min_score``: detections kept (default: the run's config);
    their scores are the existence probabilities P-NSVQA uses, NS-VQA keeps those >= 0.5."""
    from .scene_eval import likelihoods_document, parse_split, scene_record
    from .scene_training import load_scene_parser

    out = run.parsed(data.name, "likelihoods")
    parser = load_scene_parser(run.scene_dir, min_score)
    key = {"detector": fingerprint(parser.detector_path), "attributes": fingerprint(run.scene_dir / "attributes.pt"),
           "split": split, "images": str(data / "images" / split), "min_score": parser.min_score}
    if _fresh(out, key):
        return out
    records = [scene_record(p, idx, name) for idx, name, p in parse_split(parser, data, split, batch=batch,
                                                                           progress=progress)]
    write_json_atomic(out, likelihoods_document(parser, run.scene_dir, data, split, records, provenance=key))
    return out


def parse_questions(run: VariantRun, data: Path, split: str, *, beam: int = 1) -> Path:
    """``parsed/<test>/programs.json``: the run's question parser on ``data``'s questions of
    ``split``, one record per question, in file order (reused when its provenance matches)."""
    from .question_eval import read_question_items
    from .question_training import CHECKPOINT, parser_from_checkpoint

    out = run.parsed(data.name, "programs")
    qpath = data / "questions" / f"{split}_questions.json"
    key = {"checkpoint": fingerprint(run.question_dir / CHECKPOINT), "questions": fingerprint(qpath), "beam": beam}
    if _fresh(out, key):
        return out
    parser = parser_from_checkpoint(run.question_dir)
    items = read_question_items(qpath, parser.ontology, require_program=False)
    parsed = parser.parse([it.question for it in items], beam_size=beam)
    programs = [{"program": p.program.to_json() if p.program is not None else None, "valid": p.valid,
                 "error": p.error} for p in parsed]
    write_json_atomic(out, {"provenance": key, "questions_file": str(qpath), "programs": programs})
    return out


# ---------------------------------------------------------------------------- predictions
def write_model_predictions(run: VariantRun, data: Path, split: str, models: Sequence[str], *, seed: int = 0,
                            threshold: float = 0.7, device: str = "cpu") -> dict[str, Path]:
    """Predictions files of ``models`` on ``data``'s split; returns model -> path. Pipeline models
    read the run's parse outputs, baselines their run in ``RUN/baselines/<name>/``."""
    out = {}
    base = [m for m in models if m not in PIPELINE_MODELS]
    if base:
        import baselines

        parsing = set(parsing_baselines(base))
        for model in base:
            inputs = ({"likelihoods": run.parsed(data.name, "likelihoods"), "programs": run.parsed(data.name, "programs")}
                      if model in parsing else {})
            preds = baselines.get(model).predict(run.baseline_dir(model), data.parent, data.name, split, device=device,
                                                 **inputs)
            out[model] = run.predictions(model, data.name)
            write_predictions(out[model], preds)
    order = list(models)
    models = [m for m in models if m in PIPELINE_MODELS]
    if not models:
        return {m: out[m] for m in order}
    from .scene_eval import load_parsed

    onto = load_ontology("superclevr")
    qpath = data / "questions" / f"{split}_questions.json"
    metas = load_question_meta(data.parent, data.name, split, ontology=onto)
    records = load_questions(qpath)
    _, liks = load_parsed(run.parsed(data.name, "likelihoods"), onto)
    scenes = {lik.image_index: lik for lik in liks}
    parsed_programs = None
    if any(not m.endswith(GT_PROGRAMS) for m in models):
        path = run.parsed(data.name, "programs")
        with open(path) as f:
            rows = json.load(f)["programs"]
        if len(rows) != len(records):
            raise FormatError(f"{path}: {len(rows)} programs for the {len(records)} questions of {qpath}")
        parsed_programs = [Program.from_json(r["program"]) if r["program"] is not None else None for r in rows]
    gt = [Program.from_json(q["program"]) for q in records]
    for model in models:
        programs = gt if model.endswith(GT_PROGRAMS) else parsed_programs
        preds = predict(make_reasoner(model, onto, threshold=threshold), metas, programs, scenes, seed=seed)
        out[model] = run.predictions(model, data.name)
        write_predictions(out[model], preds)
    return {m: out[m] for m in order}  # in the order asked


# ---------------------------------------------------------------------------- one variant
def check_variant_data(root: Path, variant: str, splits: Sequence[str]) -> None:
    """Raise ExperimentError naming the first missing file of ``root/variant`` for ``splits``."""
    for split in splits:
        for rel in (f"questions/{split}_questions.json", f"scenes/{split}_scenes.json",
                    f"annotations/{split}_coco.json"):
            if not (root / variant / rel).exists():
                raise ExperimentError(f"{root / variant / rel}: missing (generate it with scripts/generate_suite.py "
                                      f"or scripts/generate_dataset.py --variant {variant} --split {split})")


def train_variant(root: str | os.PathLike, variant: str, runs: str | os.PathLike, *,
                  models: Sequence[str] = DEFAULT_MODELS, spec: TrainSpec | None = None, seed: int = 0,
                  factor: str | None = None, tests: Sequence[str] | None = None, split: str = "test",
                  skip_missing: bool = False, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Train what ``models`` need on ``root/variant`` (the parsers for the pipeline models, each
    baseline in ``RUN/baselines/<name>/``) and write their predictions on every test variant
    (``tests``, default :func:`variants_to_test`). Returns the run's summary (also written
    to ``summary.json``): accuracy per model and test variant, and the seconds each step took.

    Raises:
        ExperimentError: missing training data, or a missing test variant without ``skip_missing``.
    """
    from .evaluation import accuracy

    spec = spec or TrainSpec()
    root = Path(root)
    scene, question = needs(models)
    if load_variant(variant).test_only:
        raise ExperimentError(f"variant {variant!r} has only a test split: models are trained on its factor's "
                              f"other variants")
    tests = list(tests) if tests else variants_to_test(variant, factor)
    check_variant_data(root, variant, ["train", "val"])
    present = []
    for t in tests:
        try:
            check_variant_data(root, t, [split])
            present.append(t)
        except ExperimentError as e:
            if not skip_missing:
                raise
            echo(f"skipping test variant {t}: {e}")
    run = VariantRun(Path(runs), variant, seed)
    run.path.mkdir(parents=True, exist_ok=True)
    from .training import RunDir

    rd = RunDir(run.path, {"data": str(root), "variant": variant, "seed": seed, "models": list(models),
                           "profile": spec.profile, "tests": present, "split": split,
                           "scene_overrides": spec.scene_overrides, "question_overrides": spec.question_overrides,
                           "baseline_overrides": spec.baseline_overrides},
                resume=True, must_match=("data", "variant", "seed", "profile"))
    timing: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        if scene or question:
            rd.log(f"training parsers on {root / variant} (profile {spec.profile}, seed {seed})")
            timing |= train_parsers(root / variant, run, spec, scene, question)
        base = [m for m in models if m not in PIPELINE_MODELS]
        if base:
            rd.log(f"training baselines {', '.join(base)} on {root / variant} (profile {spec.profile}, seed {seed})")
            timing |= train_baselines(root / variant, run, spec, base)
        results: dict[str, dict[str, Any]] = {}
        for t in present:
            t1 = time.perf_counter()
            if scene:
                parse_scenes(run, root / t, split, progress=spec.progress, min_score=spec.parse_min_score)
            if question:
                parse_questions(run, root / t, split)
            paths = write_model_predictions(run, root / t, split, models, seed=seed, device=spec.device)
            timing[f"test_{t}"] = time.perf_counter() - t1
            for m, p in paths.items():
                from .predictions import read_predictions

                acc = accuracy(read_predictions(p))
                results.setdefault(m, {})[t] = acc.to_json()
                rd.log(f"{m} on {t}: accuracy {acc.accuracy:.4f} ({acc.n} questions)")
        timing["total"] = time.perf_counter() - t0
    finally:
        rd.close()
    summary = merged_summary(run.path / "summary.json", {
        "variant": variant, "seed": seed, "profile": spec.profile, "split": split, "tests": present,
        "models": list(models), "accuracy": results, "seconds": timing})
    write_json_atomic(run.path / "summary.json", summary, indent=1)
    echo(summary_table(summary))
    return summary


def merged_summary(path: Path, new: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` (one :func:`train_variant` call's summary) over the run's earlier ``summary.json``:
    a call that trains some models keeps what earlier calls measured of the others (their
    accuracies and seconds; this call's figures win). An earlier summary of another profile or
    split, or an unreadable one, is replaced."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return dict(new)
    if not isinstance(old, dict) or any(old.get(k) != new[k] for k in ("variant", "seed", "profile", "split")):
        return dict(new)
    accuracy = {m: dict(row) for m, row in (old.get("accuracy") or {}).items()}
    for m, row in new["accuracy"].items():
        accuracy[m] = {**accuracy.get(m, {}), **row}
    return {**new, "tests": list(dict.fromkeys([*(old.get("tests") or []), *new["tests"]])),
            "models": list(dict.fromkeys([*(old.get("models") or []), *new["models"]])),
            "accuracy": accuracy, "seconds": {**(old.get("seconds") or {}), **new["seconds"]}}


def summary_table(summary: Mapping[str, Any]) -> str:
    """A plain-text accuracy table (models x test variants) of :func:`train_variant`'s summary."""
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
    return "\n".join(lines)


__all__ = ["PIPELINE_MODELS", "DEFAULT_MODELS", "baseline_models", "ExperimentError", "VariantRun",
           "TrainSpec", "factors_of", "variants_to_test", "parsing_baselines", "needs", "fingerprint", "train_parsers",
           "train_baselines", "parse_scenes", "parse_questions", "write_model_predictions", "check_variant_data", "train_variant",
           "summary_table"]
