"""The robustness study's plan: its pieces, in the order they run (data and arithmetic over
:data:`~orchestration.study.settings.config.STUDY`; running a piece is :mod:`orchestration.study.running.piece`, the floor
above, its budget :mod:`orchestration.study.settings.budget`, and the report :mod:`orchestration.study.report.build`).
What a piece needs follows from its models, as the registry (:mod:`orchestration.models`) answers for
them (:func:`uses_scene_parser`, :func:`trains_scene_parser`), never from the name of its group.

The study trains every model on every training variant of the four domain-shift factors (and the
systematic splits), tests each on its factor's variants, and reports accuracy matrices (the paper's
Table 1) and Relative Degrade (Table 2). It is far too long for one process on a CPU, so it is a
list of *pieces*: one (training variant, seed, group of models) each, run by
:func:`orchestration.study.running.piece.run_piece`
through :func:`orchestration.experiment.train_variant`. A finished piece leaves, under ``RESULTS/pieces/<piece>/``:

    predictions/<model>__train-<variant>__test-<variant>.jsonl.gz   every prediction, gzipped
    perception.json  the scene parser on each test variant (pieces whose models use one:
                   :func:`orchestration.study.running.piece.write_perception`)
    piece.json     what ran (the study config, the piece, the commit, the machine, the variant
                   whose run trained the scene parser), per-step and total seconds (a shared scene
                   parser's are its first piece's), accuracy per (model, test variant); written
                   last: its presence is what "done" means

:func:`pending_pieces` skips the pieces whose ``piece.json`` exists, so rerunning the one command
resumes the study where the committed results stop; an interrupted piece resumes from the
checkpoints in its run folder (outside git) when they are still there, else it starts again. A
piece committed with fewer models or tests than the plan now gives it (a seed piece widened by
:attr:`StudyConfig.seed_pieces`: :func:`is_reduced`) is never run into the same folder: its
widened run goes to a results folder of its own and is promoted in its place (docs/study.md).
:func:`orchestration.study.report.build.build_study_report` rebuilds every table from the committed predictions alone.

Every size and schedule of the study is in :data:`~orchestration.study.settings.config.STUDY` (one
:class:`~orchestration.study.settings.config.StudyConfig`); nothing is in shell scripts. Variants whose data
are the same bytes are trained once: ``co-0`` is ``mid`` and ``bal`` is ``hard`` (the catalogue's
aliases, :attr:`StudyConfig.aliases`, checked against the catalogue by :func:`check_aliases`); the report reads ``mid``'s predictions as ``co-0``'s in the compositionality
table, and ``hard``'s as ``bal``'s in the distribution table. Training variants whose images are
the same bytes but whose questions differ (``rd-`` and ``rd+`` are ``mid``'s images) share the
scene parser of the first of them in plan order (:func:`scene_source`), and a test split is parsed
once per scene parser (:func:`orchestration.experiment.parse_scenes`).

The part-question extension (:attr:`StudyConfig.part_factor`: pieces of group :data:`PART_GROUP`)
asks object and part questions about the same images, with a part-aware scene parser and a
question parser trained on both kinds; its data and runs live under ``parts/`` of the data and
runs roots, and the report scores part and object questions apart.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from executors.io import read_json
from nsvqa.generation.variants import FACTORS, SCENE_KEYS, load_variant
from orchestration import models as registry
from orchestration.study.settings.config import STUDY, StudyConfig, StudyError
from orchestration.train_spec import TrainSpec


#: Group of the part-question extension's pieces. Their data and runs live under ``<root>/parts/``
#: (other questions about the same images: a dataset of its own).
PART_GROUP = "parts"


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


def check_aliases(cfg: StudyConfig = STUDY) -> None:
    """Raise StudyError unless every alias has the same scene parameters, split overrides and
    question redundancy as its target (so that, generated with one seed, their bytes agree). The
    default aliases are the catalogue's (:func:`nsvqa.generation.variants.aliases`), which its
    builder checks the same way; this guards a config that gives its own."""
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
    :attr:`StudyConfig.shuffle_seed`, the pieces of :attr:`StudyConfig.late_groups` on the other
    training variants, then the pieces of :attr:`StudyConfig.seed_pieces` the rest does not hold,
    in their order (:func:`seed_pieces`), and last those only :attr:`StudyConfig.design` adds
    (:func:`design_names`). A name of either the rest holds
    with fewer models or tests than its seed-0 piece (``mid-seed1-modular``: the executors, tested
    on ``mid`` alone) stays in its place, widened to the seed-0 piece's models and tests.

    Raises:
        StudyError: an alias whose variants differ (:func:`check_aliases`), or a name of
            :attr:`StudyConfig.seed_pieces` that is neither a seed-0 piece at another seed nor a
            piece to widen (:func:`seed_pieces`).
    """
    base = _base_pieces(cfg)
    declared = seed_pieces(base, cfg, (*cfg.seed_pieces, *design_names(base, cfg)))
    widened = {p.name: p for p in declared}
    names = {p.name for p in base}
    return [widened.get(p.name, p) for p in base] + [p for p in declared if p.name not in names]


def design_only(cfg: StudyConfig = STUDY) -> list[str]:
    """The pieces only :attr:`StudyConfig.design` adds to the plan (:func:`design_names`), in plan order."""
    return design_names(_base_pieces(cfg), cfg)


def _base_pieces(cfg: StudyConfig) -> list[Piece]:
    """The plan of :func:`study_pieces` before its declared seed and design pieces."""
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


def design_names(base: Sequence[Piece], cfg: StudyConfig = STUDY) -> list[str]:
    """The pieces :attr:`StudyConfig.design` adds to ``base`` (the plan before its seed pieces)
    beyond :attr:`StudyConfig.seed_pieces`: for each seed of the design in increasing order, each
    group in the design's order, each of its variants (default :func:`training_variants`), the piece
    ``<variant>-seed<N>-<group>`` unless ``base`` holds it with its seed-0 piece's models and tests
    or the seed pieces name it. Seed 0 adds nothing: the plan holds those pieces already.

    Raises:
        StudyError: a design entry that is not ``{"seeds": [...], "variants": [...]}``, or names a
            (group, variant) whose seed-0 piece the plan lacks (dropped, or not a group).
    """
    plan = {p.name: p for p in base}
    entries = []
    for group, d in cfg.design.items():
        where = f"StudyConfig.design[{group!r}]"
        if not isinstance(d, Mapping) or set(d) - {"seeds", "variants"} or "seeds" not in d:
            raise StudyError(f"{where} must be {{\"seeds\": [...], \"variants\": [...]}} (variants optional), "
                             f"not {d!r}")
        variants = [canonical(v, cfg) for v in d.get("variants") or training_variants(cfg)]
        missing = [v for v in variants if f"{v}-seed0-{group}" not in plan]
        if missing:
            raise StudyError(f"{where}: the plan has no seed-0 piece of group {group!r} on {', '.join(missing)}")
        entries.append((group, [int(s) for s in d["seeds"]], variants))
    out = []
    for seed in sorted({s for _, seeds, _ in entries for s in seeds if s != 0}):
        for group, seeds, variants in entries:
            for v in variants if seed in seeds else ():
                name = f"{v}-seed{seed}-{group}"
                have = plan.get(name)
                if name in cfg.seed_pieces or name in out or (have is not None and
                                                              covers(have, plan[f"{v}-seed0-{group}"])):
                    continue
                out.append(name)
    return out


def covers(have: Piece, want: Piece) -> bool:
    """Whether ``have`` holds every model and test of ``want`` (in any order, maybe more)."""
    return set(want.models) <= set(have.models) and set(want.tests) <= set(have.tests)


def seed_pieces(base: Sequence[Piece], cfg: StudyConfig = STUDY,
                names: Sequence[str] | None = None) -> list[Piece]:
    """The pieces ``names`` (default :attr:`StudyConfig.seed_pieces`) names, in its order: each ``<variant>-seed<N>-<group>``
    (N not 0, written without leading zeros) is the piece ``<variant>-seed0-<group>`` of ``base``
    (the rest of the plan) at seed N, with its models and tests. A name ``base`` already holds at
    seed N with fewer models or tests than its seed-0 piece (the default variant's further seeds,
    :attr:`StudyConfig.shuffle_groups`', tested on it alone) is that piece widened: the same name,
    the seed-0 piece's models and tests (:func:`study_pieces` puts it in its place).

    Raises:
        StudyError: a name that is not so, that ``base`` holds at seed 0 or already with its seed-0
            piece's models and tests, or that is given twice (the field and the name said).
    """
    plan = {p.name: p for p in base}
    out: list[Piece] = []
    for name in cfg.seed_pieces if names is None else names:
        where = f"StudyConfig.seed_pieces: {name!r}"
        if name in [p.name for p in out]:
            raise StudyError(f"{where} is named twice")
        m = re.fullmatch(r"(.+)-seed([0-9]+)-(.+)", name)
        zero = plan.get(f"{m[1]}-seed0-{m[3]}") if m else None
        have = plan.get(name)
        if have is not None and (have.seed == 0 or zero is None or covers(have, zero)):
            raise StudyError(f"{where} is already a piece of the plan" +
                             ("" if have.seed == 0 or zero is None else " with its seed-0 piece's models and tests"))
        if zero is None or int(m[2]) == 0 or name != f"{m[1]}-seed{int(m[2])}-{m[3]}":
            seeded = sorted(p.name for p in base if p.seed == 0)
            raise StudyError(f"{where} is not <variant>-seed<N>-<group> with N other than 0 of a seed-0 piece of the "
                             f"plan; its seed-0 pieces: {', '.join(seeded)}")
        out.append(replace(zero, seed=int(m[2])))
    return out


@dataclass(frozen=True)
class PieceSetup:
    """Everything about how one piece runs, computed once (:func:`piece_setup`): where its data and
    runs live, the data it reads, the run folders it trains into and reads from, and the
    :class:`~orchestration.train_spec.TrainSpec` it trains with. Running (:mod:`orchestration.study.running.piece`),
    the launcher and the one-off checks read it; none builds its own."""

    piece: Piece
    data: Path
    runs: Path
    questions: str
    scene_overrides: dict[str, Any]
    question_overrides: dict[str, Any]
    scene_variant: str
    #: variant -> the splits the piece reads of it, in the catalogue's order: train, val and test of
    #: its own variant and of the one whose scene parser it uses, the test split of each test variant
    splits: dict[str, list[str]]
    #: ``RUNS[/parts]/<variant>[-seed<N>]``: the run folder it trains into, shared with the other
    #: groups of its (variant, seed)
    run: Path
    #: the run folder holding the scene parser it reads (its own or its scene variant's), None for a
    #: piece whose models use none
    scene_parser: Path | None
    #: its models read a scene parser's detections but never its attribute head (:func:`reads_detector_only`)
    detector_only: bool
    spec: TrainSpec

    @property
    def trains_scene_parser(self) -> bool:
        """It trains a scene parser of its own: its models use one, and it is its own variant's."""
        return self.scene_parser is not None and self.scene_variant == self.piece.variant


def study_spec(cfg: StudyConfig = STUDY, *, scene_overrides: Mapping[str, Any] | None = None,
               question_overrides: Mapping[str, Any] | None = None,
               model_overrides: Mapping[str, Mapping[str, Any]] | None = None, scene_variant: str | None = None,
               scene_runs: str | os.PathLike | None = None, image_shuffle: bool = False, jobs: int = 1,
               device: str = "cpu", progress: bool = True) -> TrainSpec:
    """The :class:`~orchestration.train_spec.TrainSpec` of the study's declared settings (profile,
    parser and model overrides, parse score): the one place the study builds one, for a piece
    (:func:`piece_setup`), the one-off checks and the ``results/`` scripts. ``scene_overrides`` and
    ``question_overrides`` replace the study's (a part piece's; a scale's question-parser steps);
    ``model_overrides`` go over the study's, model by model (a lever tried on one model)."""
    return TrainSpec(profile=cfg.profile,
                     scene_overrides=dict(cfg.scene_overrides if scene_overrides is None else scene_overrides),
                     question_overrides=dict(cfg.question_overrides if question_overrides is None
                                             else question_overrides),
                     model_overrides={k: {**cfg.model_overrides.get(k, {}), **(model_overrides or {}).get(k, {})}
                                      for k in {**cfg.model_overrides, **(model_overrides or {})}},
                     jobs=jobs, device=device,
                     progress=progress, parse_min_score=cfg.parse_min_score, scene_variant=scene_variant,
                     scene_runs=scene_runs, image_shuffle=image_shuffle)


def piece_setup(piece: Piece, data: str | os.PathLike, runs: str | os.PathLike, cfg: StudyConfig = STUDY, *,
                jobs: int = 1, device: str = "cpu", progress: bool = True) -> PieceSetup:
    """The piece's :class:`PieceSetup`. A part-extension piece (:data:`PART_GROUP`) has its own
    dataset (object and part questions) and runs under ``parts/``, and trains its own part-aware
    scene parser; the others read the scene parser of their :func:`scene_source`. ``jobs``,
    ``device`` and ``progress`` go to its ``spec`` (the image-shuffle test always on).

    Raises:
        UnknownModel: a model of the piece that is not registered (the valid names listed).
    """
    parts = piece.group == PART_GROUP
    root, run_root = (Path(data) / PART_GROUP, Path(runs) / PART_GROUP) if parts else (Path(data), Path(runs))
    scene_variant = piece.variant if parts else scene_source(piece.variant, cfg)
    scene_overrides = dict(cfg.part_scene_overrides if parts else cfg.scene_overrides)
    question_overrides = dict(cfg.part_question_overrides if parts else cfg.question_overrides)
    want = {t: {"test"} for t in piece.tests}
    for v in (scene_variant, piece.variant):
        want[v] = {"train", "val", "test"}
    splits = {v: [s for s in load_variant(v).available_splits if s in got] for v, got in want.items()}
    uses, detector_only = _scene_parser_use(piece)
    return PieceSetup(piece, root, run_root, cfg.part_questions if parts else cfg.questions, scene_overrides,
                      question_overrides, scene_variant, splits, _run_path(run_root, piece.variant, piece.seed),
                      _run_path(run_root, scene_variant, piece.seed) if uses else None, detector_only,
                      study_spec(cfg, scene_overrides=scene_overrides, question_overrides=question_overrides,
                                 scene_variant=scene_variant, image_shuffle=True, jobs=jobs, device=device,
                                 progress=progress))

def uses_scene_parser(piece: Piece) -> bool:
    """Whether a model of the piece answers from a scene parser's parses (what the registry says its
    models need, :func:`orchestration.models.needs`): the piece then has a scene parser, its own or
    an earlier piece's, and a ``perception.json``.

    Raises:
        UnknownModel: a model of the piece that is not registered (the valid names listed).
    """
    return _scene_parser_use(piece)[0]


def _scene_parser_use(piece: Piece) -> tuple[bool, bool]:
    """(:func:`uses_scene_parser`, :func:`reads_detector_only`) of the piece, its models looked up once."""
    specs = registry.parse_specs(list(piece.models))
    uses = registry.needs(specs).scene_parser
    return uses, uses and not any(registry.get(s.name).reads_attribute_head for s in specs)


def reads_detector_only(piece: Piece) -> bool:
    """Whether the piece's models read a scene parser's detections but never its attribute head
    (as each model's class declares, :attr:`nsvqa.models.Model.reads_attribute_head`): such a piece
    trains the detector it reads again where its run folder lacks it, and its record says whose
    detector it read (issue 76, point 4)."""
    return _scene_parser_use(piece)[1]


def trains_scene_parser(piece: Piece, cfg: StudyConfig = STUDY) -> bool:
    """Whether the piece trains a scene parser of its own (:attr:`PieceSetup.trains_scene_parser`)."""
    return piece_setup(piece, ".", ".", cfg).trains_scene_parser


def run_folder(piece: Piece, runs: str | os.PathLike, cfg: StudyConfig = STUDY) -> Path:
    """The run folder the piece trains into (:attr:`PieceSetup.run`)."""
    return piece_setup(piece, ".", runs, cfg).run


def _run_path(runs: Path, variant: str, seed: int) -> Path:
    """``RUNS/<variant>[-seed<N>]``, as :attr:`orchestration.experiment.VariantRun.path` lays it out."""
    return Path(runs) / (variant if seed == 0 else f"{variant}-seed{seed}")


def scene_parser_folder(piece: Piece, runs: str | os.PathLike, cfg: StudyConfig = STUDY) -> Path | None:
    """The run folder holding the scene parser the piece uses (:attr:`PieceSetup.scene_parser`)."""
    return piece_setup(piece, ".", runs, cfg).scene_parser


def scene_parser_trainers(cfg: StudyConfig = STUDY) -> dict[Path, list[Piece]]:
    """The pieces of the plan that train their own scene parser, by the run folder they train it
    into (:func:`scene_parser_folder`, relative to the runs folder), in plan order: one pass over the
    plan, for a caller that asks :func:`sharers` of many pieces."""
    out: dict[Path, list[Piece]] = {}
    for p in study_pieces(cfg):
        setup = piece_setup(p, ".", ".", cfg)
        if setup.trains_scene_parser:
            out.setdefault(setup.scene_parser, []).append(p)
    return out


def sharers(piece: Piece, cfg: StudyConfig = STUDY,
            trainers: Mapping[Path, Sequence[Piece]] | None = None) -> list[Piece]:
    """The other pieces of the plan that train their own scene parser into the run folder ``piece``
    reads its from (:func:`scene_parser_folder`): a borrower's lenders (:func:`lenders`); for a piece
    that trains its own, the other groups of its variant and seed that train it too (``mid-seed1-seeing``
    and ``mid-seed1-modular``: whichever runs first trains it, the other reads it). Empty for a piece
    that uses none. ``trainers``: :func:`scene_parser_trainers`' of ``cfg``, where the caller has it."""
    folder = scene_parser_folder(piece, ".", cfg)
    if folder is None:
        return []
    trainers = scene_parser_trainers(cfg) if trainers is None else trainers
    return [p for p in trainers.get(folder, []) if p != piece]


def lenders(piece: Piece, cfg: StudyConfig = STUDY,
            trainers: Mapping[Path, Sequence[Piece]] | None = None) -> list[Piece]:
    """The pieces of the plan that train the scene parser ``piece`` borrows: those that train their
    own into the run folder it reads (:func:`scene_parser_folder`: its :func:`scene_source` at its
    seed; a part-extension piece's lies apart); empty for a piece that trains its own or uses none.
    ``trainers``: as :func:`sharers`'."""
    return [] if trains_scene_parser(piece, cfg) else sharers(piece, cfg, trainers)


#: A piece's committed parses, under its results folder (``orchestration.study.running.parses``).
PARSES = "parses"


def piece_dir(results: str | os.PathLike, piece: Piece) -> Path:
    return Path(results) / "pieces" / piece.name


def is_done(results: str | os.PathLike, piece: Piece) -> bool:
    """Whether ``piece`` has a ``piece.json`` under ``results``: what the runner skips, whatever
    models and tests it holds (:func:`is_reduced`)."""
    return (piece_dir(results, piece) / "piece.json").exists()


def record_holds(record: Mapping[str, Any], piece: Piece) -> bool:
    """Whether a ``piece.json`` record (``{"piece": {"models", "tests"}, ...}``) holds every model
    and test of ``piece``; a record that names neither (written by hand or by a test) is taken to."""
    rec = record.get("piece") or {}
    return covers(Piece(piece.variant, piece.seed, piece.group, tuple(rec.get("models", piece.models)),
                        tuple(rec.get("tests", piece.tests))), piece)


def is_reduced(results: str | os.PathLike, piece: Piece) -> bool:
    """Whether ``piece`` is committed under ``results`` with fewer models or tests than the plan
    gives it (:func:`record_holds`): a seed piece :attr:`StudyConfig.seed_pieces` widens, its
    widened run not promoted in its place yet. The runner skips it (:func:`is_done`); the budget
    projects it (:func:`~orchestration.study.settings.budget.budget`).

    Raises:
        StudyError: its ``piece.json`` is not JSON (the file named).
    """
    path = piece_dir(results, piece) / "piece.json"
    if not path.is_file():
        return False
    try:
        return not record_holds(read_json(path, allow_nan=True), piece)
    except ValueError as e:
        raise StudyError(f"{path}: not JSON ({e})") from e


def pending_pieces(results: str | os.PathLike, cfg: StudyConfig = STUDY, *,
                   only: Sequence[str] | None = None) -> list[Piece]:
    """The pieces without a ``piece.json`` under ``results`` (``only``: names to keep, in plan
    order).

    Raises:
        StudyError: a name of ``only`` that is not a piece of the study (the valid ones listed), or
            one committed under ``results`` with fewer models or tests than the plan's
            (:func:`is_reduced`: nothing replaces a committed piece in place; its widened run goes
            to a results folder of its own, then is promoted).
    """
    plan = study_pieces(cfg)
    if only:
        names = [p.name for p in plan]
        bad = [n for n in only if n not in names]
        if bad:
            raise StudyError(f"unknown piece(s) {bad}; the study's pieces: {', '.join(names)}")
        plan = [p for p in plan if p.name in only]
        reduced = [p.name for p in plan if is_reduced(results, p)]
        if reduced:
            raise StudyError(f"{', '.join(reduced)}: committed under {results} with fewer models or tests than the "
                             f"plan gives (widened by StudyConfig.seed_pieces), and a committed piece is never "
                             f"replaced in place; run it into a results folder of its own (--results, --runs), "
                             f"stage it and promote it (docs/study.md, 'Widening a reduced seed piece')")
    return [p for p in plan if not is_done(results, p)]


__all__ = ["PART_GROUP", "Piece", "PieceSetup", "check_aliases", "canonical", "training_variants", "variants_tested",
           "scene_source", "study_pieces", "covers", "seed_pieces", "study_spec", "piece_setup", "uses_scene_parser", "scene_parser_trainers", "sharers",
           "trains_scene_parser", "run_folder", "scene_parser_folder", "lenders", "PARSES", "piece_dir", "is_done",
           "record_holds", "is_reduced", "pending_pieces", "design_names", "design_only",
           "reads_detector_only"]
