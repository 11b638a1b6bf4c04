"""The one model interface: what every reasoner the orchestration trains and runs is, declares and
answers, and the checks a model class passes before anything asks for it by name.

    >>> from nsvqa.models import ModelSpec
    >>> from nsvqa.models.pipeline import NSVQAModel
    >>> spec = ModelSpec.from_label("nsvqa+gtprog")         # the command line's spelling
    >>> spec.name, spec.gt_programs, spec.label
    ('nsvqa', True, 'nsvqa+gtprog')
    >>> NSVQAModel("nsvqa").needs(spec)
    Needs(scene_parser=True, question_parser=False, train_parses=False, images=True)

Every model is a :class:`Model`: its class declares what it is and what it needs from the variant
run (:attr:`Model.family`, :attr:`Model.uses_parses`, :attr:`Model.trains_on_parses`, ...;
:meth:`Model.needs` reads them: the run's scene parser and its parses, the run's question parser
and its parses, the variant's images), it trains into its own run directory when it has something
to train (:meth:`Model.config`, :meth:`Model.train`), and answers one split of any variant
(:meth:`Model.predict` → one :class:`nsvqa.artifacts.predictions.Prediction` per question).

Models are found by name in the registry of the orchestration (:mod:`orchestration.models`), one
floor above every model: it builds itself from the explicit tables of the packages that hold them,
``nsvqa.models.pipeline.MODELS`` (NS-VQA, P-NSVQA) and ``baselines.MODELS``, and checks each entry
with :func:`check_model`. Nothing registers itself on import. A new model is one module with a
:class:`Model` subclass plus one line in its package's ``MODELS``.

Options of a model are fields of a :class:`ModelSpec`, not parts of its name: ``gt_programs``
answers from the ground-truth programs instead of the question parser's (for the models that
declare :attr:`Model.supports_gt_programs`). :meth:`ModelSpec.from_label` and
:attr:`ModelSpec.label` convert between a spec and the one string form used on the command line and
in predictions file names (``<name>+gtprog``); nothing else reads or writes that suffix.
"""
from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from executors.errors import FormatError
from executors.io import read_json
from nsvqa.artifacts.predictions import predictions_path
from nsvqa.config import Config

#: Profile names every trainable model defines (tests, demo, the 2-core profile, paper scale).
PROFILE_NAMES = ("tiny", "demo", "mini", "full")
#: What a model is, declared on its class (:attr:`Model.family`): it reasons over a symbolic or
#: soft program (``modular``), answers from one network that reads the image (``holistic``), or reads
#: the question alone (``question-only``).
FAMILIES = ("modular", "holistic", "question-only")
#: The label suffix of a model run on ground-truth programs (see :meth:`ModelSpec.from_label`).
GT_PROGRAMS_SUFFIX = "+gtprog"

class UnknownModel(KeyError):
    """A name no model is registered under (:mod:`orchestration.models`); the message lists the
    valid names."""

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
        images: the variant's images (every split the model reads), checked before the first
            step; every family but ``question-only`` reads them.
    """

    scene_parser: bool = False
    question_parser: bool = False
    train_parses: bool = False
    images: bool = False

    def __post_init__(self) -> None:
        if self.train_parses and not self.scene_parser:
            raise ValueError("Needs(train_parses=True) needs the scene parser: set scene_parser=True")

    def __or__(self, other: "Needs") -> "Needs":
        return Needs(self.scene_parser or other.scene_parser, self.question_parser or other.question_parser,
                     self.train_parses or other.train_parses, self.images or other.images)


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
        that may not be registered any more); :func:`orchestration.models.parse_spec` also checks
        that the name is registered and takes the option.

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
    deriving from it (:func:`check_model` checks), adding its own fields with defaults. ``model`` has no
    default: :meth:`Model.config` passes the registered name, and a baseline's config states its
    own as its default."""

    data: str
    profile: str = "mini"
    model: str = field(kw_only=True)
    seed: int = 0
    device: str = "auto"  # CUDA when present, else the CPU (nsvqa.config.resolve_device)


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
        d = read_json(path, allow_nan=True)  # strict: a key twice, a number past a float (FormatError)
    except OSError as e:
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

    A model is built with the name it is registered under (``cls(name)``: the registry,
    :mod:`orchestration.models`, builds it). What it is and what it needs are declared on its class,
    and the orchestration reads them there (:meth:`needs`, the study's plan and report); nothing
    decides a model's behaviour from its name.

    Attributes:
        name: the registered name (given at construction).
        family: one of :data:`FAMILIES`, declared by every model (:func:`check_model` checks).
        config_class: the frozen config dataclass of a trainable model (None: nothing to train):
            its defaults are the model's ``mini`` profile and its ``PROFILES`` the fields each other
            profile changes (every name of :data:`PROFILE_NAMES`; :mod:`nsvqa.config`).
        uses_parses: ``predict`` answers from the run's scene parses and (unless ground-truth
            programs) its question parses of the test split.
        trains_on_parses: the run's scene parses are the model's input on every split, the
            training variant's train and val splits included (:attr:`Needs.train_parses`); it
            reads no question parse.
        supports_gt_programs: a :class:`ModelSpec` with ``gt_programs`` is valid for this model.
        perception: what the model sees the image through, where a table must say it beside the
            model's name (e.g. another model's scene parser); empty when nothing needs saying.
        shares_modular_perception: it reads the modular pipeline's own scene parser, so comparing
            it with the modular models does not separate reasoning from perception.
        reads_attribute_head: its answers read the scene parser's attribute head (its
            distributions), not only the detector's boxes: a check that changes the head alone
            changes what it sees (the study's perception schedule check); False for a model that
            learns its concepts from the detections (NSCL), whose answers with two heads differ
            by retraining alone.
        executes_programs: it answers by executing the program (the question parser's, or the
            ground truth) on the run's parsed scenes with a reasoner its class declares, and trains
            nothing of its own: it runs on any trained parsers (a transfer report, a pretrained set)
            and on part programs (the study's executor and part models,
            :func:`orchestration.models.executors`).
    """

    family: ClassVar[str | None] = None
    perception: ClassVar[str] = ""
    shares_modular_perception: ClassVar[bool] = False
    reads_attribute_head: ClassVar[bool] = False
    config_class: ClassVar[type | None] = None
    uses_parses: ClassVar[bool] = False
    trains_on_parses: ClassVar[bool] = False
    supports_gt_programs: ClassVar[bool] = False
    executes_programs: ClassVar[bool] = False

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

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
        """What the model takes from the run under ``spec`` (default: no options), as its class
        declares it: the scene parser and its parses when it :attr:`uses_parses` or
        :attr:`trains_on_parses` (those of the training splits too with the latter), the question
        parser and its parses when it :attr:`uses_parses` without ground-truth programs, the images
        unless its family is ``question-only``."""
        gt = spec is not None and spec.gt_programs
        return Needs(scene_parser=self.uses_parses or self.trains_on_parses,
                     question_parser=self.uses_parses and not gt, train_parses=self.trains_on_parses,
                     images=self.family != "question-only")

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


def check_model(name: str, cls: Any) -> None:
    """Check that the class ``cls`` can be registered under ``name`` (the registry,
    :mod:`orchestration.models`, checks every entry of its tables with it).

    Raises:
        ValueError: ``cls`` is not a concrete :class:`Model` subclass, ``name`` is not a valid model
            name (letters, digits, ``_ . -``; it must fit a predictions file name and carry no ``+``,
            which spells options), the family is not one of :data:`FAMILIES` (or is not declared),
            a trainable model's config does not derive from :class:`ModelConfig`, or its
            ``PROFILES`` lack a profile of :data:`PROFILE_NAMES`, or a model that
            :attr:`~Model.executes_programs` trains or reads no parses.
    """
    if not (isinstance(cls, type) and issubclass(cls, Model)) or inspect.isabstract(cls):
        raise ValueError(f"model {name!r}: {cls!r} is not a concrete subclass of nsvqa.models.Model")
    if "+" in name:
        raise ValueError(f"model name {name!r}: '+' spells options (e.g. {GT_PROGRAMS_SUFFIX!r}), not names")
    predictions_path(".", name, "train", "test")  # the name must fit a predictions file name
    if cls.config_class is not None:
        if not (isinstance(cls.config_class, type) and issubclass(cls.config_class, ModelConfig)):
            raise ValueError(f"model {name!r}: config_class {cls.config_class!r} must be a frozen dataclass "
                             f"deriving from nsvqa.models.ModelConfig (it carries data, profile, model, seed "
                             f"and device, which the experiment passes)")
        missing = [p for p in PROFILE_NAMES if p not in cls.config_class.PROFILES]
        if missing:
            raise ValueError(f"model {name!r}: no profile {missing}; every trainable model has "
                             f"{list(PROFILE_NAMES)}")
    if cls.executes_programs and (cls.config_class is not None or not cls.uses_parses):
        raise ValueError(f"model {name!r}: a model that executes programs trains nothing and answers from the "
                         f"run's parses (config_class None, uses_parses True)")
    if cls.family not in FAMILIES:
        raise ValueError(f"model {name!r}: family {cls.family!r}; valid: {', '.join(FAMILIES)} (a model declares "
                         f"its family on its class)")


__all__ = ["PROFILE_NAMES", "FAMILIES", "GT_PROGRAMS_SUFFIX", "ModelConfig", "TUNED", "read_tuned", "UnknownModel",
           "Needs", "ModelSpec", "PredictInputs", "Model", "check_model"]
