"""The robustness study's settings: :class:`StudyConfig` (everything its numbers depend on besides
the code), :data:`STUDY` (the study as shipped in ``results/study``), the results folder's record
of it (``study.json``: :func:`results_config`) and :class:`StudyError`. Data only: it imports the
variant catalogue (the aliases' default), the suite's sizes and the registry (:mod:`orchestration.models`:
which models execute programs), nothing of training or evaluation. The plan built from it is :mod:`orchestration.study.settings.pieces`.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from executors.io import loads_json
from nsvqa.generation.suite import SuiteProfile
from nsvqa.generation.variants import aliases as catalogue_aliases
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.training.scene_config import SceneParserConfig
from orchestration import models as registry
from orchestration.study.settings.errors import StudyError


#: The fields of :attr:`StudyConfig.scene_overrides` that set how long its detector trains (sized for
#: the study's data and profile); the others say which parser it is (:meth:`StudyConfig.object_scene_parser`).
SCENE_SCHEDULE = ("det_iterations", "det_eval_every")


#: Fields added after ``results/study`` was first written: :meth:`StudyConfig.to_json` leaves each out
#: while it is empty, so the records written before it (``study.json``, ``report.json``) stay those of
#: the same config; :meth:`StudyConfig.from_json` reads a missing one as its default.
LATER_FIELDS = ("seed_pieces", "design", "headings")


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
            The fields other than :data:`SCENE_SCHEDULE` say which parser object questions get, and
            a run at another profile takes those alone (:meth:`object_scene_parser`).
        question_overrides, model_overrides: as :class:`orchestration.train_spec.TrainSpec`'s. The question
            parser stops at 1,600 steps: on object questions alone it parsed 99.5% of mid's val
            questions exactly there (96.5% at 800), where the mini profile's schedule
            (``QuestionParserConfig.steps``, its one home) is sized for object and part questions.
        parse_min_score: detections kept when parsing test images (P-NSVQA weighs them by score).
        default_variant: the in-domain variant of Fig. 3 and of the seed study.
        seeds: seeds of the default variant's modular models (the in-domain NS-VQA vs P-NSVQA
            comparison); every other piece runs seed 0 only, as the paper does, but those of
            :attr:`seed_pieces` (and :attr:`shuffle_groups`'s).
        groups: group name -> the models trained and tested together in one piece. ``modular``
            shares the run's scene and question parsers; the others (the question-only LSTM
            with FiLM, mDETR with CNN+LSTM) train alone, in groups sized to finish within a
            working session on two cores. ``seeing``: the non-modular model that sees (image
            margin >= +15 and image dependence >= 10 points on the default variant,
            ``results/seeing_models/``), trained on the piece's own scene parser's tokens.
        default_only: models run on the default variant only (the simple baselines of Fig. 3).
        aliases: variant -> the variant whose data are the same bytes (its runs are reused); the
            default is the catalogue's (:func:`nsvqa.generation.variants.aliases`); a config that
            gives its own is checked by :func:`orchestration.study.settings.pieces.check_aliases`.
        share_scene_parsers: a training variant with the images of one earlier in the plan uses
            that one's scene parser (:func:`scene_source`) instead of training the same parser on
            the same images again. Pieces that ran before this field existed (``mid-seed0-modular``)
            trained their own, as every piece whose images are its own still does.
        factors: the factors of Tables 1-2 (the systematic splits come after them).
        executor_models: the models of the default variant's further seeds and of the systematic
            splits, whose questions are NS-VQA against P-NSVQA: the default modular group's models
            that execute programs on parsed scenes, as their classes declare
            (:func:`orchestration.models.executing`), so without NSCL, which trains (its ~30
            minutes a piece are spent on Tables 1-2 instead).
        part_factor: the factor of the part-question extension (None: no extension). Part
            attributes are what its variants change.
        part_questions: the extension's question set: its question parser learns object and part
            questions (10 + 10 per image), and its models are scored on each kind apart.
        part_models: the models of the extension: the default modular group's models that execute
            programs on parsed scenes (:func:`orchestration.models.executing`; the others cannot run
            a part program through a scene).
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
            stride-4 level) on the object parsers' detector schedule; its question parser keeps the
            profile's steps, sized for object and part questions.
        shuffle_groups, shuffle_seed: groups whose default-variant pieces were committed before
            every piece scored the image-shuffle test; they run once more on the default variant
            at ``shuffle_seed`` (a seed the default variant's modular models already ran), so that
            every model of the in-domain table has an image dependence (a name that is not a group of
            ``groups`` adds nothing). Their accuracy at that seed
            enters no table: Tables 1-2 read seed 0.
        budget_hours: the study's compute cap (hours of the machine it runs on), against which
            :func:`budget` projects the pending pieces.
        dropped: pieces of the plan that are not run (:func:`study_pieces` leaves them out).
        seed_pieces: pieces at a training seed other than 0 beyond the default variant's
            :attr:`seeds`, each a seed-0 piece of the plan at another seed (``<variant>-seed<N>-<group>``:
            the same variant, group, models and tests; its own parsers trained at seed N, a borrowed
            scene parser the same seed's). :func:`~orchestration.study.settings.pieces.study_pieces` appends them
            last, in this order; their hours count under issue 64's reruns' cap
            (:func:`~orchestration.study.settings.budget.rerun_hours`), not :attr:`budget_hours`. A name the
            plan already holds with fewer models or tests than its seed-0 piece (the default
            variant's further seeds, tested on it alone) widens that piece in its place to the
            seed-0 piece's models and tests. Left out of :meth:`to_json` while empty.
        design: the declared final design (docs/study.md, "The declared design"): group ->
            ``{"seeds": [...], "variants": [...]}`` (without ``variants``: every training variant of
            :attr:`factors`, :func:`~orchestration.study.settings.pieces.training_variants`). Every (group, variant, seed) it names is a piece of the plan; those the
            rest lacks (or holds with fewer models or tests than their seed-0 piece) come after
            :attr:`seed_pieces`, seed by seed, then in the design's group order, then in the
            training variants' order (:func:`~orchestration.study.settings.pieces.design_names`). Set by a
            rule before its pieces run, never from an interval. Left out of :meth:`to_json` while empty.
        headings: later issues' compute caps, each a heading of ``--budget``: name -> ``{"cap_hours":
            H, "groups": [...]}`` (the pieces of those groups) or ``{"cap_hours": H, "design": true}``
            (the pieces only :attr:`design` adds). A piece counts under the first heading that claims
            it (:func:`~orchestration.study.settings.budget.heading_of`), else under issue 64's reruns (a name of
            :attr:`seed_pieces`), else under :attr:`budget_hours`. Left out of :meth:`to_json` while empty.
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
    aliases: Mapping[str, str] = field(default_factory=catalogue_aliases)
    share_scene_parsers: bool = True
    factors: tuple[str, ...] = ("visual", "redundancy", "distribution", "compositionality")
    # (the default modular group's models that execute programs: ``groups`` is still its field here)
    executor_models: tuple[str, ...] = registry.executing(groups.default_factory()["modular"])
    part_factor: str | None = "visual"
    part_questions: str = "object+part"
    part_models: tuple[str, ...] = registry.executing(groups.default_factory()["modular"])
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
    seed_pieces: tuple[str, ...] = ()
    design: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    headings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def object_scene_parser(self) -> dict[str, Any]:
        """The study's scene parser for object questions without its schedule: :attr:`scene_overrides`
        less the fields of :data:`SCENE_SCHEDULE`, in their order (objects only, no part crops, no
        stride-4 level). What a run at another profile takes over (``run_factor.py
        --study-scene-parser``; ``make demo-train``), its detector schedule the profile's."""
        return {k: v for k, v in self.scene_overrides.items() if k not in SCENE_SCHEDULE}

    def to_json(self) -> dict[str, Any]:
        """The config as JSON (tuples as lists, mappings as objects), without the fields of
        :data:`LATER_FIELDS` that hold their empty default."""
        out = asdict(self)
        out["sizes"] = asdict(self.sizes)
        for name in LATER_FIELDS:
            if not out[name]:
                del out[name]
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
        cfg = replace(default, **kw)
        check_settings(cfg, source)
        return cfg


def check_settings(cfg: StudyConfig, source: str = "study config") -> None:
    """Resolve every override map of ``cfg`` into its typed config at the study's profile, as
    training will (the parsers' configs, each model's), so that a misspelt or out-of-range setting
    fails when the config is read, before any data is generated.

    Raises:
        StudyError: a setting no config takes, or a value out of range (``source``, the field, the
            model where it is one, and the config's message).
    """
    parsers = (("scene_overrides", SceneParserConfig), ("part_scene_overrides", SceneParserConfig),
               ("question_overrides", QuestionParserConfig), ("part_question_overrides", QuestionParserConfig))
    for name, config in parsers:
        try:
            config.from_profile(".", cfg.profile, **dict(getattr(cfg, name)))
        except (TypeError, ValueError, KeyError) as e:
            raise StudyError(f"{source}: field {name!r}: {e}") from None
    for model, over in cfg.model_overrides.items():
        try:
            registry.get(model).config(".", cfg.profile, **dict(over))
        except (TypeError, ValueError, KeyError) as e:  # UnknownModel is a KeyError
            raise StudyError(f"{source}: field 'model_overrides', model {model!r}: {e}") from None


def _tuples(v: Any) -> Any:
    """``v`` with every JSON list a tuple, inside mappings too (the defaults' form)."""
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    if isinstance(v, Mapping):
        return {k: _tuples(x) for k, x in v.items()}
    return v


#: The study as shipped in ``results/study`` (its ``study.json``).
STUDY = StudyConfig(
    # issue 64, point 4: pieces of the report's "Findings more training seeds would decide", run in
    # this order (docs/decisions.md, 2026-12-06); the last four read a scene parser trained on a
    # Xeon and follow those any CPU may run (2026-12-06, midday); on the instance (a record without
    # the field still reads as none: the class default)
    seed_pieces=("mid-seed1-modular", "co-1-seed1-modular", "co-2-seed1-modular", "easy-seed1-modular",
                 "hard-seed1-modular", "rd+-seed1-modular", "rd--seed1-modular", "mid-seed2-modular",
                 "co-1-seed2-modular", "co-2-seed2-modular", "co-1-seed1-film", "co-2-seed1-film",
                 "mid-seed1-film", "easy-seed1-film", "hard-seed1-film", "rd+-seed1-film", "rd--seed1-film",
                 "easy-seed2-modular", "hard-seed2-modular", "mid-seed1-seeing", "mid-seed2-seeing",
                 "rd+-seed2-modular", "rd--seed2-modular"),
    # issue 77, point 1: the final design, by the rule of docs/study.md ("The declared design"), and
    # the caps of the issues whose pieces it and the later groups add
    design={"modular": {"seeds": (0, 1, 2)}, "film": {"seeds": (0, 1, 2)},
            "mdetr": {"seeds": (0, 1), "variants": ("mid", "rd-", "rd+")}},
    headings={"issue 77: the declared design": {"cap_hours": 12.0, "design": True},
              "issue 76: regionmac-trace": {"cap_hours": 18.0, "groups": ("regionmac",)}},
    # issue 76: the non-modular model that sees with a perception of its own, on every training
    # variant at seed 0, with the lever chosen on val (results/seeing_models/choice-regionmac-trace.md)
    groups={**StudyConfig().groups, "regionmac": ("regionmac-trace",)},
    model_overrides={"regionmac-trace": {"roi_size": 7, "steps": 12000}})

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
        recorded = StudyConfig.from_json(loads_json(text, str(path)), source=str(path))  # strict: a key twice
    except ValueError as e:
        raise StudyError(f"{path}: not JSON ({e})") from e
    a, b = (cfg or recorded).to_json(), recorded.to_json()
    if a != b:
        diff = sorted(k for k in a if a[k] != b.get(k))
        raise StudyError(f"{path}: this folder's pieces ran under another study config (fields {', '.join(diff)} "
                         f"differ from the one given); give another results folder, or no config to use its own")
    return recorded


__all__ = ["StudyError", "StudyConfig", "STUDY", "STUDY_FILE", "SCENE_SCHEDULE", "LATER_FIELDS", "results_config", "check_settings"]
