"""The robustness study's plan: its pieces and its budget (data and arithmetic; running a piece is
:mod:`nsvqa.study.run`, the floor above, and the report :mod:`nsvqa.study.report`).

The study trains every model on every training variant of the four domain-shift factors (and the
systematic splits), tests each on its factor's variants, and reports accuracy matrices (the paper's
Table 1) and Relative Degrade (Table 2). It is far too long for one process on a CPU, so it is a
list of *pieces*: one (training variant, seed, group of models) each, run by
:func:`nsvqa.study.run.run_piece`
through :func:`nsvqa.experiment.train_variant`. A finished piece leaves, under ``RESULTS/pieces/<piece>/``:

    predictions/<model>__train-<variant>__test-<variant>.jsonl.gz   every prediction, gzipped
    perception.json  the scene parser on each test variant (pieces whose models use one:
                   :func:`nsvqa.study.run.write_perception`)
    piece.json     what ran (the study config, the piece, the commit, the machine, the variant
                   whose run trained the scene parser), per-step and total seconds (a shared scene
                   parser's are its first piece's), accuracy per (model, test variant); written
                   last: its presence is what "done" means

:func:`pending_pieces` skips the pieces whose ``piece.json`` exists, so rerunning the one command
resumes the study where the committed results stop; an interrupted piece resumes from the
checkpoints in its run folder (outside git) when they are still there, else it starts again.
:func:`nsvqa.study.report.build_study_report` rebuilds every table from the committed predictions alone.

Every size and schedule of the study is in :data:`STUDY` (one :class:`StudyConfig`); nothing is
in shell scripts. Variants whose data are the same bytes are trained once: ``co-0`` is ``mid`` and
``bal`` is ``hard`` (:attr:`StudyConfig.aliases`, checked against the catalogue by
:func:`check_aliases`); the report reads ``mid``'s predictions as ``co-0``'s in the compositionality
table, and ``hard``'s as ``bal``'s in the distribution table. Training variants whose images are
the same bytes but whose questions differ (``rd-`` and ``rd+`` are ``mid``'s images) share the
scene parser of the first of them in plan order (:func:`scene_source`), and a test split is parsed
once per scene parser (:func:`nsvqa.experiment.parse_scenes`).

The part-question extension (:attr:`StudyConfig.part_factor`: pieces of group :data:`PART_GROUP`)
asks object and part questions about the same images, with a part-aware scene parser and a
question parser trained on both kinds; its data and runs live under ``parts/`` of the data and
runs roots, and the report scores part and object questions apart.
"""
from __future__ import annotations

import json
import os
import statistics
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsvqa.fileio import read_json_record
from nsvqa.generation.suite import SuiteProfile
from nsvqa.generation.variants import FACTORS, SCENE_KEYS, load_variant

#: Format version of ``piece.json``.
PIECE_FORMAT = 1


class StudyError(RuntimeError):
    """A study that cannot go on as asked (the message says what and where)."""


@dataclass(frozen=True)
class StudyConfig:
    """Everything the study's numbers depend on besides the code.

    Attributes:
        sizes: images per split of every variant (train / val / test); 10 questions per image.
        image_profile: image size (``mini``: 320x240).
        questions: the question set (:data:`nsvqa.generation.dataset.QUESTION_SETS`): ``object``,
            the paper's (the CLEVR 1.0 templates, 10 per image as the official release).
        data_seed: seed of every generated variant (variants of one factor share layouts).
        profile: the profile of the parsers and of every model.
        scene_overrides: scene-parser fields over the profile's: object questions use no part
            function, so the parser detects and describes objects only (``agnostic``, no part
            crops), without the stride-4 level the parts need (objects are 16-120 px at 320x240)
            and on a shorter detector schedule (measured on a CPU without native bf16: ~3 s per
            mini iteration with the stride-4 level by step 100, against ~1.5 s at step 0; the mini
            parser's object box AP50 was 0.96 after 45% of its 1,300 iterations).
        question_overrides, model_overrides: as :class:`nsvqa.experiment.TrainSpec`'s. The question
            parser stops at 1,600 steps: on object questions alone it parsed 99.5% of mid's val
            questions exactly there (96.5% at 800), where the mini profile's 4,800 are sized for
            object and part questions. (The mid piece's parser ran those 1,600 steps on the 4,800-step
            schedule, whose learning rate had not decayed yet: it was cut there.)
        parse_min_score: detections kept when parsing test images (P-NSVQA weighs them by score).
        default_variant: the in-domain variant of Fig. 3 and of the seed study.
        seeds: seeds of the default variant's modular models (the in-domain NS-VQA vs P-NSVQA
            comparison); every other piece runs seed 0 only, as the paper does.
        groups: group name -> the models trained and tested together in one piece. ``modular``
            shares the run's scene and question parsers; the others (the question-only LSTM
            with FiLM, mDETR with CNN+LSTM) train alone, in groups sized to finish within a
            working session on two cores. ``seeing``: the non-modular model that sees (image
            margin >= +15 and image dependence >= 10 points on the default variant,
            ``results/seeing_models/``), trained on the piece's own scene parser's tokens.
        default_only: models run on the default variant only (the simple baselines of Fig. 3).
        aliases: variant -> the variant whose data are the same bytes (its runs are reused).
        share_scene_parsers: a training variant with the images of one earlier in the plan uses
            that one's scene parser (:func:`scene_source`) instead of training the same parser on
            the same images again. Pieces that ran before this field existed (``mid-seed0-modular``)
            trained their own, as every piece whose images are its own still does.
        factors: the factors of Tables 1-2 (the systematic splits come after them).
        executor_models: the models of the default variant's further seeds and of the systematic
            splits, whose questions are NS-VQA against P-NSVQA: the modular group without NSCL
            (its ~30 minutes a piece are spent on Tables 1-2 instead).
        part_factor: the factor of the part-question extension (None: no extension). Part
            attributes are what its variants change.
        part_questions: the extension's question set: its question parser learns object and part
            questions (10 + 10 per image), and its models are scored on each kind apart.
        part_models: the models of the extension (modular: the others cannot run a part program
            through a scene).
        late_groups: groups whose pieces on training variants other than the default run after
            every other piece (the seeds, the extension and the systematic splits included): the
            study's 24-hour budget does not hold every piece on two cores, and mDETR's rows tell
            least (its image margin over the question-only LSTM was +2.9 points on the default
            variant, inside the two models' intervals), so they are what is left out if the
            budget ends first. Its redundancy rows run in plan order regardless (``--only``).
        systematic_first: the systematic splits that run before the default variant's further
            seeds (the others run after the seeds, before the part extension): the two the
            report's systematic finding reads (the colour fallback of held-out pairs, the count
            error on held-out counts).
        part_scene_overrides, part_question_overrides: the extension's parsers over the profile's.
            Its scene parser is the profile's part-aware one (``agnostic+parts``, part crops, the
            stride-4 level) on the object parsers' 600-iteration detector schedule; its question
            parser keeps the profile's 4,800 steps, sized for object and part questions.
        shuffle_groups, shuffle_seed: groups whose default-variant pieces were committed before
            every piece scored the image-shuffle test; they run once more on the default variant
            at ``shuffle_seed`` (a seed the default variant's modular models already ran), so that
            every model of the in-domain table has an image dependence (a name that is not a group of
            ``groups`` adds nothing). Their accuracy at that seed
            enters no table: Tables 1-2 read seed 0.
        budget_hours: the study's compute cap (hours of the machine it runs on), against which
            :func:`budget` projects the pending pieces.
        dropped: pieces of the plan that are not run (:func:`study_pieces` leaves them out).
    """

    sizes: SuiteProfile = SuiteProfile(2000, 150, 300)
    image_profile: str = "mini"
    questions: str = "object"
    data_seed: int = 0
    profile: str = "mini"
    scene_overrides: Mapping[str, Any] = field(default_factory=lambda: {
        "mode": "agnostic", "attr_parts": False, "det_iterations": 600, "det_eval_every": 300,
        "det_min_stride": 8, "det_anchor_sizes": (16, 32, 64, 128)})
    question_overrides: Mapping[str, Any] = field(default_factory=lambda: {"steps": 1600})
    model_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    parse_min_score: float = 0.05
    default_variant: str = "mid"
    seeds: tuple[int, ...] = (0, 1, 2)
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {
        "modular": ("nsvqa", "pnsvqa", "pnsvqa-exact", "nscl", "nsvqa+gtprog", "pnsvqa+gtprog",
                    "pnsvqa-exact+gtprog"),
        "film": ("lstm", "film", "random", "majority"),
        "mdetr": ("mdetr", "cnn_lstm"),
        "seeing": ("objmac-trace",)})
    default_only: tuple[str, ...] = ("cnn_lstm", "random", "majority")
    aliases: Mapping[str, str] = field(default_factory=lambda: {"co-0": "mid", "bal": "hard"})
    share_scene_parsers: bool = True
    factors: tuple[str, ...] = ("visual", "redundancy", "distribution", "compositionality")
    executor_models: tuple[str, ...] = ("nsvqa", "pnsvqa", "pnsvqa-exact", "nsvqa+gtprog", "pnsvqa+gtprog",
                                        "pnsvqa-exact+gtprog")
    part_factor: str | None = "visual"
    part_questions: str = "object+part"
    part_models: tuple[str, ...] = ("nsvqa", "pnsvqa", "pnsvqa-exact", "nsvqa+gtprog", "pnsvqa+gtprog",
                                    "pnsvqa-exact+gtprog")
    part_scene_overrides: Mapping[str, Any] = field(default_factory=lambda: {
        "det_iterations": 600, "det_eval_every": 300})
    part_question_overrides: Mapping[str, Any] = field(default_factory=dict)
    late_groups: tuple[str, ...] = ("mdetr",)
    systematic_first: tuple[str, ...] = ("sys-composition", "sys-extrapolation")
    shuffle_groups: tuple[str, ...] = ("film", "mdetr")
    shuffle_seed: int = 2
    budget_hours: float = 44.0
    dropped: tuple[str, ...] = ("easy-seed0-mdetr", "hard-seed0-mdetr", "slt-seed0-mdetr", "long-seed0-mdetr",
                                "co-1-seed0-mdetr", "co-2-seed0-mdetr")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["sizes"] = asdict(self.sizes)
        return json.loads(json.dumps(out))  # tuples as lists, mappings as dicts

    @classmethod
    def from_json(cls, d: Mapping[str, Any], source: str = "study config") -> "StudyConfig":
        """The config ``d`` gives (:meth:`to_json`'s form): its fields over the defaults', so a
        file may hold only what it changes (``{"sizes": {...}, "profile": "full"}``). Lists are
        read as tuples, as the defaults hold them.

        Raises:
            StudyError: ``d`` is not an object, names a field the config does not have, or gives
                one a value of another kind (``source`` and the field named).
        """
        if not isinstance(d, Mapping):
            raise StudyError(f"{source}: a study config is a JSON object, not {type(d).__name__}")
        default = cls()
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise StudyError(f"{source}: unknown field(s) {unknown}; a study config has {', '.join(names)}")
        kw: dict[str, Any] = {}
        for name, value in d.items():
            was = getattr(default, name)
            if name == "sizes":
                try:
                    kw[name] = SuiteProfile(**{k: int(value[k]) for k in ("train", "val", "test")})
                except (TypeError, KeyError, ValueError) as e:
                    raise StudyError(f"{source}: field 'sizes' must be {{\"train\": N, \"val\": N, \"test\": N}}, "
                                     f"not {value!r}") from e
                continue
            ok = {tuple: isinstance(value, list), bool: isinstance(value, bool),
                  float: isinstance(value, (int, float)) and not isinstance(value, bool),
                  int: isinstance(value, int) and not isinstance(value, bool),
                  str: isinstance(value, str) or (value is None and name == "part_factor")}.get(
                      type(was), isinstance(value, Mapping))
            if not ok:
                raise StudyError(f"{source}: field {name!r} must be like its default {json.dumps(was, default=list)}, "
                                 f"not {value!r}")
            kw[name] = _tuples(value)
        return replace(default, **kw)


def _tuples(v: Any) -> Any:
    """``v`` with every JSON list a tuple, inside mappings too (the defaults' form)."""
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    if isinstance(v, Mapping):
        return {k: _tuples(x) for k, x in v.items()}
    return v


#: The study as shipped in ``results/study`` (its ``study.json``).
STUDY = StudyConfig()

#: The file of a results folder that holds the config its pieces were run under.
STUDY_FILE = "study.json"


def results_config(results: str | os.PathLike, cfg: StudyConfig | None = None) -> StudyConfig:
    """The study config of the results folder ``results``: the one its ``study.json`` records
    (written by the first piece run into it), else ``cfg``, else :data:`STUDY`. Given ``cfg`` and a
    folder that records another, it refuses: one folder's pieces make one study's tables.

    Raises:
        StudyError: ``study.json`` unreadable or not a study config, or other than ``cfg`` (the
            fields that differ named).
    """
    path = Path(results) / STUDY_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return cfg if cfg is not None else STUDY
    try:
        recorded = StudyConfig.from_json(json.loads(text), source=str(path))
    except ValueError as e:
        raise StudyError(f"{path}: not JSON ({e})") from e
    a, b = (cfg or recorded).to_json(), recorded.to_json()
    if a != b:
        diff = sorted(k for k in a if a[k] != b.get(k))
        raise StudyError(f"{path}: this folder's pieces ran under another study config (fields {', '.join(diff)} "
                         f"differ from the one given); give another results folder, or no config to use its own")
    return recorded


#: Group of the part-question extension's pieces. Their data and runs live under ``<root>/parts/``
#: (other questions about the same images: a dataset of its own).
PART_GROUP = "parts"

#: Groups whose models answer from a scene parser's parse (the piece's ``perception.json``).
SCENE_GROUPS = ("modular", PART_GROUP, "seeing")


@dataclass(frozen=True)
class Piece:
    """One unit of the study: ``models`` trained on ``variant`` with ``seed``, tested on ``tests``."""

    variant: str
    seed: int
    group: str
    models: tuple[str, ...]
    tests: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.variant}-seed{self.seed}-{self.group}"


# ---------------------------------------------------------------------------- the plan
def check_aliases(cfg: StudyConfig = STUDY) -> None:
    """Raise StudyError unless every alias has the same scene parameters, split overrides and
    question redundancy as its target (so that, generated with one seed, their bytes agree)."""
    for alias, target in cfg.aliases.items():
        a, b = load_variant(alias).spec(), load_variant(target).spec()
        for key in (*SCENE_KEYS, "questions"):
            if a.get(key) != b.get(key):
                raise StudyError(f"alias {alias!r} -> {target!r}: the variants differ in {key!r} "
                                 f"({a.get(key)!r} vs {b.get(key)!r}); they cannot share runs")


def canonical(variant: str, cfg: StudyConfig = STUDY) -> str:
    """The variant whose runs and data serve ``variant`` (itself unless it is an alias)."""
    return cfg.aliases.get(variant, variant)


def training_variants(cfg: StudyConfig = STUDY) -> list[str]:
    """The variants models are trained on for Tables 1-2, aliases resolved, the default first."""
    out = [cfg.default_variant]
    for f in cfg.factors:
        out += [canonical(v, cfg) for v in FACTORS[f] if not load_variant(v).test_only]
    return list(dict.fromkeys(out))


def variants_tested(variant: str, cfg: StudyConfig = STUDY) -> tuple[str, ...]:
    """Every variant a model trained on ``variant`` is tested on: the variants of each factor that
    trains on it or on one of its aliases, aliases resolved (``mid``: visual, redundancy and
    compositionality; ``hard``: visual and distribution, head / tail / oppo included)."""
    if variant in FACTORS["systematic"]:  # each systematic split is its own experiment (ID vs OOD)
        return (variant,)
    names = {variant} | {a for a, t in cfg.aliases.items() if t == variant}
    out = [variant]
    for f in cfg.factors:
        if names & set(FACTORS[f]):
            out += [canonical(v, cfg) for v in FACTORS[f]]
    return tuple(dict.fromkeys(out))


def scene_source(variant: str, cfg: StudyConfig = STUDY) -> str:
    """The training variant whose scene parser serves ``variant``: the first in plan order
    (:func:`training_variants`) with the same scenes and images
    (:meth:`~nsvqa.generation.variants.Variant.same_scenes`; ``mid`` for ``rd-`` and ``rd+``),
    ``variant`` itself when there is none or ``cfg.share_scene_parsers`` is off."""
    if not cfg.share_scene_parsers:
        return variant
    mine = load_variant(variant)
    return next((v for v in training_variants(cfg) if load_variant(v).same_scenes(mine)), variant)


def study_pieces(cfg: StudyConfig = STUDY) -> list[Piece]:
    """Every piece of the study, in the order they run: the default variant's groups first
    (the demo's checkpoints, Fig. 3), then each factor's other training variants, then the
    systematic splits of :attr:`StudyConfig.systematic_first`, the default variant's further seeds
    (modular models: the in-domain comparison), the other systematic splits (modular models), the
    part-question extension, the default variant's :attr:`StudyConfig.shuffle_groups` at
    :attr:`StudyConfig.shuffle_seed`, and last the pieces of :attr:`StudyConfig.late_groups` on the
    other training variants."""
    check_aliases(cfg)
    out, late = [], []
    for v in training_variants(cfg):
        for group, models in cfg.groups.items():
            ms = tuple(m for m in models if v == cfg.default_variant or m not in cfg.default_only)
            (late if group in cfg.late_groups and v != cfg.default_variant else out).append(
                Piece(v, 0, group, ms, variants_tested(v, cfg)))
    lite = tuple(cfg.executor_models)
    splits = [v for v in FACTORS["systematic"] if v in cfg.systematic_first]
    out += [Piece(v, 0, "modular", lite, (v,)) for v in splits]
    for s in cfg.seeds:
        if s != 0:
            out.append(Piece(cfg.default_variant, s, "modular", lite, (cfg.default_variant,)))
    out += [Piece(v, 0, "modular", lite, (v,)) for v in FACTORS["systematic"] if v not in splits]
    if cfg.part_factor is not None:
        vs = tuple(dict.fromkeys(canonical(v, cfg) for v in FACTORS[cfg.part_factor]))
        for v in vs:
            if not load_variant(v).test_only:
                out.append(Piece(v, 0, PART_GROUP, tuple(cfg.part_models), (v, *(t for t in vs if t != v))))
    d = cfg.default_variant
    out += [Piece(d, cfg.shuffle_seed, g, tuple(cfg.groups[g]), (d,)) for g in cfg.shuffle_groups if g in cfg.groups]
    return [p for p in out + late if p.name not in cfg.dropped]


@dataclass(frozen=True)
class PieceSetup:
    """Where a piece's data and runs live and how its parsers are trained."""

    data: Path
    runs: Path
    questions: str
    scene_overrides: dict[str, Any]
    question_overrides: dict[str, Any]
    scene_variant: str


def piece_setup(piece: Piece, data: str | os.PathLike, runs: str | os.PathLike,
                cfg: StudyConfig = STUDY) -> PieceSetup:
    """The piece's data root, runs root, question set, parser overrides and the variant whose
    scene parser it uses. A part-extension piece (:data:`PART_GROUP`) has its own dataset (object
    and part questions) and runs under ``parts/``, and trains its own part-aware scene parser."""
    if piece.group == PART_GROUP:
        return PieceSetup(Path(data) / PART_GROUP, Path(runs) / PART_GROUP, cfg.part_questions,
                          dict(cfg.part_scene_overrides), dict(cfg.part_question_overrides), piece.variant)
    return PieceSetup(Path(data), Path(runs), cfg.questions, dict(cfg.scene_overrides),
                      dict(cfg.question_overrides), scene_source(piece.variant, cfg))


def piece_dir(results: str | os.PathLike, piece: Piece) -> Path:
    return Path(results) / "pieces" / piece.name


def is_done(results: str | os.PathLike, piece: Piece) -> bool:
    return (piece_dir(results, piece) / "piece.json").exists()


# ---------------------------------------------------------------------------- the redundancy scale check
#: The factor of the scale check: its training variants' question parsers are trained again on more
#: questions of the same training scenes (:mod:`nsvqa.study.scale`).
SCALE_FACTOR = "redundancy"
#: ``RESULTS/<SCALE_RESULTS>/``: the scale check's gzipped predictions (``predictions/``, labels
#: :func:`scale_label`) and ``scale.json``.
SCALE_RESULTS = "redundancy_scale"
#: ``RUNS/<SCALE_RUNS>/<k>x/``: the scale check's variant runs at ``k`` times the questions.
SCALE_RUNS = "redundancy-scale"


#: ``budget`` row of the scale check's hours.
SCALE_BUDGET_GROUP = "redundancy scale check"


def scale_record_path(results: str | os.PathLike) -> Path:
    """``RESULTS/<SCALE_RESULTS>/scale.json``: the scale check's record (:mod:`nsvqa.study.scale`)."""
    return Path(results) / SCALE_RESULTS / "scale.json"


def read_scale_record(results: str | os.PathLike) -> dict[str, Any]:
    """The scale check's record (:func:`scale_record_path`), ``{}`` when the check has not run.

    Raises:
        StudyError: the file is there but is not a JSON object (the file named).
    """
    return read_json_record(scale_record_path(results), StudyError,
                            "the scale check's finished runs and their seconds") or {}


def scale_runs(record: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """A scale record's finished runs: scale -> training variant -> the run's entry."""
    return {int(k): dict(e.get("runs") or {}) for k, e in (record.get("scales") or {}).items()}


def scale_seconds(record: Mapping[str, Any], path: str = "scale.json") -> float:
    """The compute a scale record accounts for: every finished run's ``seconds`` and every entry of
    ``other_seconds`` (work the check did outside its runs, such as a scene parser it trained, or
    attempts whose runs were discarded, entered by hand with a ``what``).

    Raises:
        StudyError: a run or an entry without a number in ``seconds`` (``path`` and the item named).
    """
    items = [(f"scales.{k}.runs.{v}", r) for k, runs in scale_runs(record).items() for v, r in runs.items()]
    items += [(f"other_seconds[{i}]", o) for i, o in enumerate(record.get("other_seconds") or [])]
    total = 0.0
    for where, item in items:
        try:
            total += float(item["seconds"])
        except (KeyError, TypeError, ValueError) as e:
            raise StudyError(f"{path}: {where}: no number in field seconds ({type(e).__name__}: {e})") from e
    return total


def scale_label(model: str, scale: int) -> str:
    """The label of ``model``'s predictions at ``scale`` times the training questions (``pnsvqa.10x``)."""
    return f"{model}.{int(scale)}x"


def parse_scale_label(label: str) -> tuple[str, int] | None:
    """(model, scale) of a :func:`scale_label`, None for a label of no scale."""
    model, dot, k = label.rpartition(".")
    if not dot or not model or not k.endswith("x") or not k[:-1].isdigit():
        return None
    return model, int(k[:-1])


def pending_pieces(results: str | os.PathLike, cfg: StudyConfig = STUDY, *,
                   only: Sequence[str] | None = None) -> list[Piece]:
    """The pieces without a ``piece.json`` under ``results`` (``only``: names to keep, in plan
    order).

    Raises:
        StudyError: a name of ``only`` that is not a piece of the study (the valid ones listed).
    """
    plan = study_pieces(cfg)
    if only:
        names = [p.name for p in plan]
        bad = [n for n in only if n not in names]
        if bad:
            raise StudyError(f"unknown piece(s) {bad}; the study's pieces: {', '.join(names)}")
        plan = [p for p in plan if p.name in only]
    return [p for p in plan if not is_done(results, p)]


# ---------------------------------------------------------------------------- running a piece
def attempt_seconds(attempt: Mapping[str, Any]) -> float:
    """The wall seconds of one attempt of a piece's ledger: a finished one's generation and
    training, a stopped one's ``seconds`` (:func:`close_stopped_attempts`)."""
    if attempt.get("stopped"):
        return float(attempt["seconds"])
    return float(attempt["generate"]) + float(attempt["train_variant"])


def stopped_in_training(attempt: Mapping[str, Any]) -> bool:
    """Whether an attempt stopped after its data were generated (a stop during generation cuts no
    training step short)."""
    return bool(attempt.get("stopped")) and "generate" in attempt


def read_ledger(path: str | os.PathLike) -> dict[str, Any]:
    """A piece's ledger of attempts (``RUN/study_<group>.json``: ``{"attempts": [{...}, ...]}``,
    docs/formats.md, "piece.json"); a fresh one where the file is missing.

    Raises:
        StudyError: the file is there but is not JSON, has no list ``attempts``, or an attempt
            whose ``started`` is not a number (the file and the item named) — the ledger holds the
            seconds of earlier attempts, so it is never replaced unread.
    """
    ledger = read_json_record(path, StudyError, "the piece's earlier attempts and their seconds")
    if ledger is None:
        return {"attempts": []}
    if not isinstance(ledger.get("attempts"), list):
        raise StudyError(f"{path}: field 'attempts': expected a list of attempts")
    for i, a in enumerate(ledger["attempts"]):
        if not isinstance(a, dict) or ("started" in a and not isinstance(a["started"], (int, float))):
            raise StudyError(f"{path}: attempts[{i}]: expected an object whose 'started' is a number")
    return ledger


def _attempt_starts(run: Path, skip: Path) -> list[float]:
    """The start times recorded by the other groups' ledgers of the run folder ``run``."""
    return [float(a["started"]) for path in sorted(run.glob("study_*.json")) if path != skip
            for a in read_ledger(path)["attempts"] if "started" in a]


def close_stopped_attempts(ledger: Mapping[str, Any], written: Sequence[str | os.PathLike], *,
                           later: Sequence[float] = ()) -> dict[str, Any]:
    """``ledger`` with each open attempt (one whose call was killed before it ended: a ``started``
    time, no ``train_variant``) closed as ``{"started", "stopped": true, "seconds"}`` (keeping its
    ``generate`` seconds when it had reached training): the seconds from its start to the last
    modification of a file under ``written`` (the run folder and the data folders the piece
    writes), a lower bound of its wall time. Files modified after the next start of any attempt
    (its own ledger's, or one of ``later``: other pieces that used the same folders since) are not
    its own; an attempt that wrote nothing counts 0 seconds."""
    attempts = [dict(a) for a in ledger.get("attempts", [])]
    starts = sorted([float(a["started"]) for a in attempts if "started" in a] + [float(t) for t in later])
    for a in attempts:
        if "started" not in a or a.get("stopped") or "train_variant" in a:
            continue
        start = float(a["started"])
        until = next((t for t in starts if t > start), float("inf"))
        last = start
        for root in written:
            for folder, _, files in os.walk(root):
                for name in files:
                    try:
                        m = os.stat(os.path.join(folder, name)).st_mtime
                    except OSError:
                        continue
                    if start <= m < until:
                        last = max(last, m)
        a.update(stopped=True, seconds=last - start)
    return {**ledger, "attempts": attempts}


# ---------------------------------------------------------------------------- the budget
#: Groups never run yet are projected with the steps of the group named here (the part extension
#: trains a larger parser: its projection is a lower bound).
_BUDGET_ANALOG = {PART_GROUP: "modular", "seeing": "modular"}


_PARSER_STEPS = ("scene_parser", "question_parser")


def _step_kind(key: str, own_parser: bool) -> str | None:
    """A ``piece.json`` step name as :func:`budget` pools it: every test variant alike, the two
    parsers as one phase (:func:`_parser_phase`), a piece training its own scene parser apart from
    one loading an earlier piece's."""
    if key == "total":
        return None
    if key.startswith("test_"):
        return "test (own parser)" if own_parser else "test"
    if key == "parsers":  # :func:`budget` folds the two parser steps into it
        return "parsers" if own_parser else "parsers (shared scene parser)"
    return key


def _parser_phase(steps: Mapping[str, float]) -> float:
    """The wall time of an attempt's parser training. The question parser may train in a second
    process beside the scene parser (``jobs`` 2): both steps then record the same span, and the
    phase is what the attempt's ``total`` leaves after its other steps; trained one after the other
    (or without a ``total``), it is their sum."""
    own = [float(steps[k]) for k in _PARSER_STEPS if k in steps]
    if "total" not in steps:
        return sum(own)
    rest = sum(float(v) for k, v in steps.items() if k not in (*_PARSER_STEPS, "total"))
    return min(sum(own), max(float(steps["total"]) - rest, *own))


def _own_parser(piece: Piece, cfg: StudyConfig) -> bool:
    """Whether ``piece`` trains a scene parser of its own (one that serves it and was not an
    earlier piece's: :func:`piece_setup`'s ``scene_variant``)."""
    return piece.group in SCENE_GROUPS and piece_setup(piece, ".", ".", cfg).scene_variant == piece.variant


def _expected_steps(piece: Piece, cfg: StudyConfig, measured: Sequence[str]) -> list[str]:
    """The steps ``piece`` will run, as :func:`_step_kind` names them: the ``model_`` and ``tune_``
    steps of its models among those ``measured`` (executors train nothing), its parsers, a test per
    test variant."""
    own = _own_parser(piece, cfg)
    keys = [k for k in measured if k.split("_", 1)[0] in ("model", "tune") and k.split("_", 1)[1] in piece.models]
    if piece.group in SCENE_GROUPS:
        keys.append(_step_kind("parsers", own))
    return keys + [_step_kind("test_", own)] * len(piece.tests)


def budget_group(piece: Piece) -> str:
    """The part of the study a piece's hours are counted under: ``parts`` (the extension),
    ``systematic`` (the splits), ``seeds`` (the default variant's further seeds), else its group
    (``modular``, ``film``, ``mdetr``: Tables 1-2)."""
    if piece.group == PART_GROUP:
        return PART_GROUP
    if piece.variant in FACTORS["systematic"]:
        return "systematic"
    return "seeds" if piece.seed != 0 else piece.group


def budget(results: str | os.PathLike, cfg: StudyConfig = STUDY) -> dict[str, Any]:
    """The study's compute: the hours its committed pieces took, and a projection of each pending
    piece in plan order against :attr:`StudyConfig.budget_hours`.

    Spent is the sum of the committed ``piece.json`` totals (every attempt, pauses included) and of
    the redundancy scale check's record (:func:`scale_seconds`, its row ``SCALE_BUDGET_GROUP``). A
    pending piece is projected as the sum of its steps (its models' training and tuning, its
    parsers' phase (:func:`_parser_phase`: the two parsers may train side by side), one
    parse-and-test per test variant), each the median of that step over the committed
    pieces of its group; a record with a ``note`` (attempts whose seconds were not recorded) or an
    attempt stopped in training (:func:`stopped_in_training`) is left out of the medians, unless a
    later attempt marked ``lost`` (entered by hand: its run folder was lost with its machine, so
    the next call trained every step anew) comes after it: only the attempts after the last lost
    one are read for the steps. Data
    generation is not counted. A parser or test step no committed piece of the group has run
    counts 0 and is named under ``unmeasured``; a group never run borrows the steps of its analog
    (:data:`_BUDGET_ANALOG`), named under ``basis``, and its projection is a lower bound.

    Raises:
        StudyError: a committed ``piece.json`` without a readable ``seconds.total``, or a
            ``scale.json`` :func:`scale_seconds` cannot count (the file named).
    """
    plan = study_pieces(cfg)
    spent, done, seen = 0.0, set(), {}
    by_group: dict[str, float] = {}
    for piece in plan:
        path = piece_dir(results, piece) / "piece.json"
        if not path.exists():
            continue
        try:
            rec = json.loads(path.read_text())
            total = float(rec["seconds"]["total"])
        except (ValueError, KeyError, TypeError) as e:
            raise StudyError(f"{path}: no readable field seconds.total ({type(e).__name__}: {e})") from e
        done.add(piece.name)
        spent += total
        group = budget_group(piece)
        by_group[group] = by_group.get(group, 0.0) + total
        attempts = rec["seconds"].get("attempts", [])
        lost = [i for i, a in enumerate(attempts) if a.get("lost")]
        attempts = attempts[lost[-1] + 1:] if lost else attempts  # its run folder gone: the next call began anew
        if rec.get("note") or any(stopped_in_training(a) for a in attempts):
            continue  # a stopped attempt's steps are not known, and the step the next one resumed is partial
        own = piece.group in SCENE_GROUPS and rec.get("scene_parser_of", piece.variant) == piece.variant
        totals: dict[str, float] = {}  # step -> seconds over every attempt
        for attempt in attempts:
            steps = attempt.get("steps", {})
            if any(k in steps for k in _PARSER_STEPS):
                totals["parsers"] = totals.get("parsers", 0.0) + _parser_phase(steps)
            for key, sec in steps.items():
                if key not in _PARSER_STEPS:
                    totals[key] = totals.get(key, 0.0) + float(sec)
        for key, sec in totals.items():
            kind = _step_kind(key, own)
            if kind is not None:  # each test variant one sample of its kind
                seen.setdefault(piece.group, {}).setdefault(kind, []).append(sec)
    scale = scale_seconds(read_scale_record(results), str(scale_record_path(results)))
    if scale:
        spent += scale
        by_group[SCALE_BUDGET_GROUP] = scale
    medians = {g: {k: statistics.median(v) for k, v in sorted(ks.items())} for g, ks in seen.items()}
    pending, cumulative = [], spent
    for piece in plan:
        if piece.name in done:
            continue
        basis = piece.group if piece.group in medians else _BUDGET_ANALOG.get(piece.group)
        steps = medians.get(basis, {}) if basis else {}
        keys = _expected_steps(piece, cfg, list(steps))
        seconds = sum(steps.get(k, 0.0) for k in keys) if steps else None
        if seconds is not None:
            cumulative += seconds
        pending.append({"piece": piece.name, "minutes": None if seconds is None else round(seconds / 60, 1),
                        "basis": basis if steps else None, "lower_bound": bool(steps) and basis != piece.group,
                        "unmeasured": sorted({k for k in keys if k not in steps}) if steps else None,
                        "cumulative_hours": round(cumulative / 3600, 2) if seconds is not None else None,
                        "within_cap": None if seconds is None else cumulative <= cfg.budget_hours * 3600})
    return {"cap_hours": cfg.budget_hours, "done": len(done), "spent_hours": round(spent / 3600, 2),
            "spent_hours_by_group": {g: round(v / 3600, 2) for g, v in sorted(by_group.items())},
            "step_minutes": {g: {k: round(v / 60, 1) for k, v in ks.items()} for g, ks in medians.items()},
            "pending": pending}


def over_cap(results: str | os.PathLike, piece: Piece, cfg: StudyConfig = STUDY,
             b: Mapping[str, Any] | None = None) -> str | None:
    """Why running ``piece`` now would take the study past :attr:`StudyConfig.budget_hours`
    (None when it would not): the committed pieces' hours already reach the cap, or they and the
    piece's own projection (:func:`budget`; pieces before it left pending do not count) pass it.
    A piece no committed piece of its kind projects is let through until the cap is spent."""
    b = budget(results, cfg) if b is None else b  # ``b``: :func:`budget`'s, when the caller has it
    spent, cap = b["spent_hours"], cfg.budget_hours
    if spent >= cap:
        return f"the committed pieces took {spent:.1f} h, the study's {cap:g}-hour cap"
    minutes = _projected_minutes(b, piece)
    if minutes is not None and spent + minutes / 60 > cap:
        return (f"{piece.name} is projected at {minutes:.0f} min: {spent:.1f} h spent + {minutes / 60:.1f} h "
                f"passes the study's {cap:g}-hour cap")
    return None


def _projected_minutes(b: Mapping[str, Any], piece: Piece) -> float | None:
    return next((p["minutes"] for p in b["pending"] if p["piece"] == piece.name), None)


def out_of_time(results: str | os.PathLike, piece: Piece, seconds_left: float, cfg: StudyConfig = STUDY,
                b: Mapping[str, Any] | None = None) -> str | None:
    """Why ``piece`` should not start with ``seconds_left`` of wall time to go (a session's or a
    batch job's end), None when its projection (:func:`budget`; data generation not counted) fits
    or there is none. A piece cut short resumes from its run folder, but a machine that goes with
    the session takes that folder with it."""
    minutes = _projected_minutes(budget(results, cfg) if b is None else b, piece)
    if minutes is not None and minutes * 60 > seconds_left:
        return f"{piece.name} is projected at {minutes:.0f} min and {max(seconds_left, 0) / 60:.0f} min are left"
    return None


def budget_markdown(b: Mapping[str, Any]) -> str:
    """:func:`budget` as a Markdown table (what ``run_study.py --budget`` prints)."""
    extra = " and the redundancy scale check" if SCALE_BUDGET_GROUP in b.get("spent_hours_by_group", {}) else ""
    lines = [f"{b['done']} pieces committed{extra}: {b['spent_hours']:.1f} hours of the {b['cap_hours']:g}-hour cap.",
             ""]
    if b.get("spent_hours_by_group"):
        lines += ["| spent on | hours |", "|---|---|"]
        lines += [f"| {g} | {h:.1f} |" for g, h in b["spent_hours_by_group"].items()]
        lines += [f"| **total** | **{b['spent_hours']:.1f}** of {b['cap_hours']:g} |", ""]
    lines += ["| pending piece | projected min | cumulative hours | within cap | projected from |",
             "|---|---|---|---|---|"]
    for p in b["pending"]:
        if p["minutes"] is None:
            lines.append(f"| {p['piece']} | — | — | — | no committed piece of its group |")
            continue
        basis = p["basis"] + (", a lower bound" if p["lower_bound"] else "") + (
            f" (no {', '.join(p['unmeasured'])})" if p["unmeasured"] else "")
        lines.append(f"| {p['piece']} | {p['minutes']:.0f} | {p['cumulative_hours']:.1f} | "
                     f"{'yes' if p['within_cap'] else 'no'} | {basis} |")
    return "\n".join(lines) + "\n"


__all__ = ["STUDY", "STUDY_FILE", "results_config", "PART_GROUP", "StudyConfig", "StudyError", "Piece", "PieceSetup",
           "piece_setup", "check_aliases", "canonical", "training_variants", "scene_source", "SCENE_GROUPS",
           "variants_tested", "study_pieces", "piece_dir", "is_done", "pending_pieces", "read_ledger", "attempt_seconds",
           "close_stopped_attempts", "stopped_in_training", "budget", "budget_group", "over_cap", "out_of_time",
           "budget_markdown", "SCALE_FACTOR", "SCALE_RESULTS", "SCALE_RUNS", "SCALE_BUDGET_GROUP", "scale_record_path",
           "read_scale_record", "scale_runs", "scale_seconds", "scale_label", "parse_scale_label"]
