"""The one model interface and the registry of every reasoner the experiment trains and runs.

    >>> from nsvqa import models
    >>> {"nsvqa", "pnsvqa", "pnsvqa-exact"} <= set(models.names())
    True
    >>> spec = models.parse_spec("nsvqa+gtprog")           # the command line's spelling
    >>> spec.name, spec.gt_programs, spec.label
    ('nsvqa', True, 'nsvqa+gtprog')
    >>> models.get("nsvqa").needs(spec)
    Needs(scene_parser=True, question_parser=False)

Every model is a :class:`Model`: it declares what it needs from the variant run (:meth:`Model.needs`:
the run's scene parser and its parses of the test images, the run's question parser and its parses
of the test questions), trains into its own run directory when it has something to train
(:meth:`Model.config`, :meth:`Model.train`), and answers one split of any variant
(:meth:`Model.predict` → one :class:`nsvqa.artifacts.predictions.Prediction` per question). The experiment
(:mod:`nsvqa.experiment`) drives this registry alone; it never tells one kind of model from another.

NS-VQA and P-NSVQA (:mod:`nsvqa.models.pipeline`) register here on import; the baselines (FiLM,
mDETR, NSCL, the simple ones) register when the :mod:`baselines` package is imported (it sits
above ``nsvqa``, so nothing here imports it: the scripts do). A new model is one module whose
:class:`Model` subclass carries ``@register("name")``, plus the import that runs the decorator.

Options of a model are fields of a :class:`ModelSpec`, not parts of its name: ``gt_programs``
answers from the ground-truth programs instead of the question parser's (for the models that
declare :attr:`Model.supports_gt_programs`). :func:`parse_spec` and :attr:`ModelSpec.label` convert
between a spec and the one string form used on the command line and in predictions file names
(``<name>+gtprog``); nothing else reads or writes that suffix.
"""
from __future__ import annotations

import json
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence, TypeVar

from executors.errors import FormatError
from nsvqa.artifacts.predictions import predictions_path
from nsvqa.config import Config

#: Profile names every trainable model defines (tests, demo, the 2-core profile, paper scale).
PROFILE_NAMES = ("tiny", "demo", "mini", "full")
#: What a model is, declared at registration (:attr:`Model.family`): it reasons over a symbolic or
#: soft program (``modular``), answers from one network that reads the image (``holistic``), or reads
#: the question alone (``question-only``).
FAMILIES = ("modular", "holistic", "question-only")
#: The label suffix of a model run on ground-truth programs (see :func:`parse_spec`).
GT_PROGRAMS_SUFFIX = "+gtprog"

_REGISTRY: dict[str, type["Model"]] = {}


class UnknownModel(KeyError):
    """A name no model is registered under; the message lists the valid names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Needs:
    """What a model takes from its variant run besides its own training.

    Attributes:
        scene_parser: the run's scene parser (trained once per run) and its parses of every test
            split (``likelihoods``, :class:`PredictInputs`).
        question_parser: the run's question parser and its parses of the test questions
            (``programs``).
        train_parses: the run's scene parser's parses of the training variant's train and val
            splits too (``parsed/<variant>/{train,val}_likelihoods.json``), made before the model
            trains; their folder is given to the model's config as ``parses``. Implies
            ``scene_parser``.
    """

    scene_parser: bool = False
    question_parser: bool = False
    train_parses: bool = False

    def __post_init__(self) -> None:
        if self.train_parses and not self.scene_parser:
            raise ValueError("Needs(train_parses=True) needs the scene parser: set scene_parser=True")

    def __or__(self, other: "Needs") -> "Needs":
        return Needs(self.scene_parser or other.scene_parser, self.question_parser or other.question_parser,
                     self.train_parses or other.train_parses)


@dataclass(frozen=True)
class ModelSpec:
    """One model as asked for: the registered ``name`` and its options.

    Attributes:
        name: a registered model name.
        gt_programs: answer from the ground-truth programs of the questions file instead of the
            question parser's (isolates perception and execution).
    """

    name: str
    gt_programs: bool = False

    @property
    def label(self) -> str:
        """The model's name in predictions files, reports and on the command line."""
        return self.name + (GT_PROGRAMS_SUFFIX if self.gt_programs else "")

    @classmethod
    def from_label(cls, label: str) -> "ModelSpec":
        """The spec a label spells, without asking the registry (reports read labels of models
        that may not be registered in this process); :func:`parse_spec` also checks it.

        Raises:
            ValueError: an option other than ``+gtprog``.
        """
        name, plus, option = label.strip().partition("+")
        if plus and plus + option != GT_PROGRAMS_SUFFIX:
            raise ValueError(f"model {label!r}: unknown option {plus + option!r}; valid: {GT_PROGRAMS_SUFFIX!r}")
        return cls(name, gt_programs=bool(plus))


@dataclass(frozen=True)
class ModelConfig(Config):
    """The base of every trainable model's config: what the experiment passes to
    :meth:`Model.config` besides the profile's values (``data``: the training variant's folder;
    ``model``: the registered name; ``seed``; ``device``). A model's config is a frozen dataclass
    deriving from it (:func:`register` checks), adding its own fields with defaults. ``model`` has no
    default: :meth:`Model.config` passes the registered name, and a baseline's config states its
    own as its default."""

    data: str
    profile: str = "mini"
    model: str = field(kw_only=True)
    seed: int = 0
    device: str = "cpu"


#: The file in a model's run directory where :meth:`Model.tune` keeps the cuts it chose on val.
TUNED = "tuned.json"


def read_tuned(run_dir: str | Path | None, cuts: Sequence[str] = ("min_score",)) -> dict | None:
    """``RUN_DIR/tuned.json`` (the cuts a model's :meth:`Model.tune` chose on val), or None when
    there is none.

    Raises:
        FormatError: a file that is not JSON, or a field of ``cuts`` that is not a number in
            [0, 1] (the file and the field named).
    """
    if run_dir is None:
        return None
    path = Path(run_dir) / TUNED
    if not path.is_file():
        return None
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise FormatError(f"{path}: not readable JSON ({e})") from None
    for name in cuts:
        cut = d.get(name) if isinstance(d, dict) else None
        if isinstance(cut, bool) or not isinstance(cut, (int, float)) or not 0.0 <= cut <= 1.0:
            raise FormatError(f"{path}, field {name!r}: a number in [0, 1] expected, got {cut!r}")
    return d


@dataclass(frozen=True)
class PredictInputs:
    """The typed hand-off from the variant run to :meth:`Model.predict` (what :class:`Needs` asked).

    Attributes:
        likelihoods: the run's scene parser on the split (a ``likelihoods.json``), or None.
        programs: the run's question parser on the split's questions (a ``programs.json``), or None
            (no question parser asked, or ground-truth programs).
        seed: the run's seed (seeds the guesses of models that guess after a failure).
    """

    likelihoods: Path | None = None
    programs: Path | None = None
    seed: int = 0


class Model(ABC):
    """The interface of every reasoner (stateless: what a model learns lives in its run directory).

    Attributes:
        name: the registered name (set by :func:`register`).
        config_class: the frozen config dataclass of a trainable model (None: nothing to train):
            its defaults are the model's ``mini`` profile and its ``PROFILES`` the fields each other
            profile changes (every name of :data:`PROFILE_NAMES`; :mod:`nsvqa.config`).
        uses_parses: ``predict`` answers from the run's scene and question parses.
        supports_gt_programs: a :class:`ModelSpec` with ``gt_programs`` is valid for this model.
        family: one of :data:`FAMILIES`, declared by every registered model (:func:`register` checks).
        perception: what the model sees the image through, where a table must say it beside the
            model's name (e.g. another model's scene parser); empty when nothing needs saying.
        shares_modular_perception: it reads the modular pipeline's own scene parser, so comparing
            it with the modular models does not separate reasoning from perception.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str | None] = None
    perception: ClassVar[str] = ""
    shares_modular_perception: ClassVar[bool] = False
    config_class: ClassVar[type | None] = None
    uses_parses: ClassVar[bool] = False
    supports_gt_programs: ClassVar[bool] = False

    @property
    def profiles(self) -> Mapping[str, Mapping[str, Any]]:
        """Profile name -> the config fields it changes (``config_class.PROFILES``; {} for a model
        with nothing to train)."""
        return {} if self.config_class is None else self.config_class.PROFILES

    @property
    def trainable(self) -> bool:
        """Whether the model has a run directory of its own to train (a config class)."""
        return self.config_class is not None

    def needs(self, spec: ModelSpec | None = None) -> Needs:
        """What the model takes from the run under ``spec`` (default: no options): the parsers
        when it :attr:`uses_parses`, less the question parser with ground-truth programs."""
        if not self.uses_parses:
            return Needs()
        return Needs(scene_parser=True, question_parser=not (spec is not None and spec.gt_programs))

    def config(self, data: str | Path, profile: str = "mini", **overrides: Any) -> Any:
        """The resolved config (:meth:`nsvqa.config.Config.from_profile` of ``config_class``): the
        class defaults, the profile's fields over them, then every override that is not None, checked.

        Raises:
            TypeError: the model has nothing to train, or an override is no field of its config
            (valid ones listed); KeyError: unknown profile (valid ones listed); ValueError: a value
            out of range.
        """
        if self.config_class is None:
            raise TypeError(f"model {self.name!r} has nothing to train (no config)")
        return self.config_class.from_profile(data, profile, **({"model": self.name} | overrides))

    def train(self, cfg: Any, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path | None:
        """Train into the run directory ``out`` (continue from its checkpoint with ``resume``;
        a finished run is left as it is); returns ``out``. A model with nothing of its own to train
        (NS-VQA, P-NSVQA: the run's parsers are its perception) returns None."""
        return None

    @property
    def tunes_on_val(self) -> bool:
        """Whether the model overrides :meth:`tune`: after training it chooses cuts on the training
        variant's val split (never on a test split), which :meth:`predict` then uses."""
        return type(self).tune is not Model.tune

    def tune(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "val", *,
             spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu") -> dict:
        """Choose the model's cuts on ``ROOT/VARIANT``'s ``split`` (its val split) given ``inputs``
        (the run's parses of that split), save them in ``run_dir`` for :meth:`predict`, and return
        what was measured. The default has nothing to choose: ``{}``."""
        return {}

    @abstractmethod
    def predict(self, run_dir: str | Path | None, root: str | Path, variant: str, split: str = "test", *,
                spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
                progress: bool = False) -> list:
        """One :class:`nsvqa.artifacts.predictions.Prediction` per question of
        ``ROOT/VARIANT/questions/<split>_questions.json``, in file order.

        Args:
            run_dir: the model's trained run directory (None for a model that trains nothing).
            spec: the options asked for (default: none).
            inputs: what :meth:`needs` asked of the variant run.

        Raises:
            nsvqa.training.checkpoint.CheckpointError: no usable checkpoint in ``run_dir``;
            executors.errors.FormatError: a malformed input file (naming file, item, field).
        """


M = TypeVar("M", bound=type[Model])


def register(name: str) -> Callable[[M], M]:
    """Class decorator: register a :class:`Model` subclass under ``name``.

    Raises:
        ValueError: ``name`` is taken by another class, is not a valid model name (letters, digits,
            ``_ . -``; it must fit a predictions file name and carry no ``+``, which spells
            options), its family is not one of :data:`FAMILIES` (or is not declared), a trainable model's config does
            not derive from :class:`ModelConfig`, or its ``PROFILES`` lack a profile of :data:`PROFILE_NAMES`.
    """
    def deco(cls: M) -> M:
        if "+" in name:
            raise ValueError(f"model name {name!r}: '+' spells options (e.g. {GT_PROGRAMS_SUFFIX!r}), not names")
        predictions_path(".", name, "train", "test")  # the name must fit a predictions file name
        old = _REGISTRY.get(name)
        if old is not None and old is not cls:
            raise ValueError(f"model {name!r} is already registered ({old.__module__}.{old.__qualname__})")
        if cls.config_class is not None:
            if not (isinstance(cls.config_class, type) and issubclass(cls.config_class, ModelConfig)):
                raise ValueError(f"model {name!r}: config_class {cls.config_class!r} must be a frozen dataclass "
                                 f"deriving from nsvqa.models.ModelConfig (it carries data, profile, model, seed "
                                 f"and device, which the experiment passes)")
            missing = [p for p in PROFILE_NAMES if p not in cls.config_class.PROFILES]
            if missing:
                raise ValueError(f"model {name!r}: no profile {missing}; every trainable model has "
                                 f"{list(PROFILE_NAMES)}")
        if cls.family not in FAMILIES:
            raise ValueError(f"model {name!r}: family {cls.family!r}; valid: {', '.join(FAMILIES)} (a model declares "
                             f"its family on its class)")
        cls.name = name
        _REGISTRY[name] = cls
        return cls
    return deco


def unregister(name: str) -> None:
    """Remove ``name`` from the registry (tests registering a toy model clean up with it)."""
    _REGISTRY.pop(name, None)


def names() -> tuple[str, ...]:
    """The registered names: NS-VQA / P-NSVQA first, then the others sorted."""
    first = [n for n in ("nsvqa", "pnsvqa", "pnsvqa-exact") if n in _REGISTRY]
    return tuple(first + sorted(n for n in _REGISTRY if n not in first))


def _unknown(name: str) -> UnknownModel:
    hint = "" if "baselines" in sys.modules else " (the baselines register when the `baselines` package is imported)"
    return UnknownModel(f"unknown model {name!r}; valid: {', '.join(names())}{hint}")


def get(name: str) -> Model:
    """A :class:`Model` instance by registered name.

    Raises:
        UnknownModel: no model of that name (the valid ones listed).
    """
    cls = _REGISTRY.get(name)
    if cls is None:
        raise _unknown(name)
    return cls()


def parse_spec(text: str) -> ModelSpec:
    """A :class:`ModelSpec` from its label (``"pnsvqa"``, ``"nsvqa+gtprog"``).

    Raises:
        UnknownModel: an unknown name (valid ones listed); ValueError: an unknown option, or
        ``+gtprog`` on a model that does not support it.
    """
    name = text.strip().partition("+")[0]
    if name not in _REGISTRY:
        raise _unknown(name)
    spec = ModelSpec.from_label(text)
    if spec.gt_programs and not _REGISTRY[name].supports_gt_programs:
        raise ValueError(f"model {name!r} does not answer from ground-truth programs ({text!r}); those that do: "
                         f"{', '.join(n for n in names() if _REGISTRY[n].supports_gt_programs)}")
    return spec


def parse_specs(texts: Sequence[str]) -> list[ModelSpec]:
    """:func:`parse_spec` of each label, checked all at once.

    Raises:
        UnknownModel: the message lists every unknown name and the valid ones.
    """
    unknown = [t for t in texts if t.strip().partition("+")[0] not in _REGISTRY]
    if unknown:
        hint = str(_unknown(unknown[0])).split("; ", 1)[1]
        raise UnknownModel(f"unknown model(s) {unknown}; {hint}")
    return [parse_spec(t) for t in texts]


def needs(specs: Sequence[ModelSpec]) -> Needs:
    """What the variant run must provide for all of ``specs`` together."""
    out = Needs()
    for s in specs:
        out = out | get(s.name).needs(s)
    return out


# NS-VQA and P-NSVQA register themselves on import
from nsvqa.models import pipeline  # noqa: E402,F401

__all__ = ["PROFILE_NAMES", "FAMILIES", "GT_PROGRAMS_SUFFIX", "ModelConfig", "TUNED", "read_tuned", "UnknownModel", "Needs", "ModelSpec", "PredictInputs", "Model",
           "register", "unregister", "names", "get", "parse_spec", "parse_specs", "needs"]
