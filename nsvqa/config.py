"""One base for every run config, and the one dataclass -> command-line path of every training script.

A run config is a frozen dataclass that subclasses :class:`Config`; its first fields are ``data``
(the training variant's folder) and ``profile``, and every other field has a real default: its
value in the ``mini`` profile (the 2-core CPU profile), so the class reads as the component's
defaults. A base that several configs derive from gives a default only to a field whose value is
everyone's; a field that is each config's own is ``field(kw_only=True)`` without a default there,
so a derived config that does not state it cannot be built. A profile is data: a mapping of the
fields it changes, by name, relative to those defaults (``mini``: none)::

    @dataclass(frozen=True)
    class MyConfig(Config):
        data: str
        profile: str = "mini"
        steps: int = 1000
        lr: float = 1e-3

        PROFILES = {"tiny": {"steps": 10, "lr": 1e-2}, "mini": {}, "full": {"steps": 30000}}
        MUST_MATCH = ("data", "profile")

    cfg = MyConfig.from_profile("data/mid", "tiny", steps=20)    # defaults, the profile's, then overrides
    MyConfig.from_dict(cfg.to_dict()) == cfg                      # checkpoint round trip

The profiles live on the config class, beside its defaults. On the command line every script takes
the same override syntax, ``NAME=VALUE`` typed by the field (:func:`parse_overrides`; a script that
configures several components prefixes the component: ``--model-set film.steps=500``)::

    parser = argparse.ArgumentParser()
    add_config_args(parser, MyConfig)        # --steps INT, --lr FLOAT, ..., --set NAME=VALUE
    args = parser.parse_args(argv)
    cfg = MyConfig.from_profile(args.data, args.profile, **config_overrides(args, MyConfig))

Every value is parsed with the type of its field's annotation (``int``, ``float``, ``bool``,
``str``, ``X | None``, ``tuple[X, ...]``), never guessed from the string.
"""
from __future__ import annotations

import argparse
import types
import typing
from dataclasses import MISSING, fields
from typing import Any, ClassVar, Iterable, Mapping, Sequence, TypeVar

from nsvqa.fileio import OutputNotWritable, check_outside_data, check_writable

C = TypeVar("C", bound="Config")

#: fields every config has, given by their own arguments rather than as overrides
IDENTITY = ("data", "profile")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_NONE = ("none", "null")

#: The device that every ``--device`` and config ``device`` field defaults to: this machine's own.
AUTO_DEVICE = "auto"


def resolve_device(device: str = AUTO_DEVICE) -> str:
    """The torch device string to use for ``device``: ``"auto"`` is ``"cuda"`` where torch sees a
    CUDA device and ``"cpu"`` elsewhere (also where torch is not installed); any other value
    (``"cpu"``, ``"cuda:1"``, ...) is returned as it is. The one place where "auto" is resolved:
    :class:`Config` does it for its ``device`` field, and the commands for their ``--device``."""
    if device != AUTO_DEVICE:
        return device
    try:
        import torch  # heavy, and only in the [full] extra: asked only when "auto" must be resolved
    except ModuleNotFoundError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


# ---------------------------------------------------------------------------- field types

class ConfigError(ValueError, TypeError, KeyError):
    """Bad input to a config: an unknown profile or field, a value of the wrong type or out of
    range (the message names the option or field and what is valid). It is a ValueError,
    TypeError and KeyError alike, so callers that caught those before still do."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def field_types(cls: type) -> dict[str, Any]:
    """Field name -> its resolved annotation (``int``, ``str | None``, ...) of dataclass ``cls``."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _split_optional(tp: Any) -> tuple[Any, bool]:
    """(the type without ``None``, whether ``None`` is allowed)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"unsupported config field type {tp!r} (one type, optionally | None)")
        return rest[0], len(rest) < len(args)
    return tp, False


def type_name(tp: Any) -> str:
    """How a field's type reads in messages and ``--help``: ``int``, ``bool``, ``str | None``,
    ``comma-separated int``."""
    base, optional = _split_optional(tp)
    if typing.get_origin(base) is tuple:
        name = f"comma-separated {type_name(typing.get_args(base)[0])}"
    else:
        name = getattr(base, "__name__", str(base))
    return f"{name} | None" if optional else name


def parse_value(tp: Any, text: str) -> Any:
    """``text`` read as a value of type ``tp``.

    ``bool``: true/false (also yes/no, on/off, 1/0); ``X | None``: ``none`` (or ``null``) is None;
    ``tuple[X, ...]``: comma-separated values of X (``""``: the empty tuple).

    Raises:
        ValueError: ``text`` is no value of ``tp`` (the message says what was expected).
        TypeError: ``tp`` is not a type the command line can give.
    """
    base, optional = _split_optional(tp)
    s = text.strip()
    if optional and s.lower() in _NONE:
        return None
    if typing.get_origin(base) is tuple:
        args = typing.get_args(base)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"unsupported config field type {tp!r} (tuples: tuple[X, ...])")
        return tuple(parse_value(args[0], part) for part in s.split(",") if part.strip())
    if base is bool:
        if s.lower() in _TRUE:
            return True
        if s.lower() in _FALSE:
            return False
        raise ConfigError(f"expected true or false, got {text!r}")
    if base in (int, float):
        try:
            return base(s)
        except ValueError:
            raise ConfigError(f"expected {type_name(tp)}, got {text!r}") from None
    if base is str:
        return text
    raise TypeError(f"unsupported config field type {tp!r}")


def _check_value(tp: Any, value: Any) -> Any:
    """``value`` (read from a checkpoint or JSON) as type ``tp``: ints accepted as floats, lists as
    tuples; ValueError naming the expected type otherwise."""
    base, optional = _split_optional(tp)
    if value is None:
        if optional:
            return None
    elif typing.get_origin(base) is tuple and isinstance(value, (list, tuple)):
        return tuple(_check_value(typing.get_args(base)[0], v) for v in value)
    elif base is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    elif base is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    elif base in (bool, str) and isinstance(value, base):
        return value
    elif base not in (bool, int, float, str) and typing.get_origin(base) is not tuple:
        return value  # a type this module does not know: taken as it is
    raise ConfigError(f"expected {type_name(tp)}, got {type(value).__name__} {value!r}")


# ---------------------------------------------------------------------------- resolution
def resolve_fields(cls: type[C], data: Any, profile: str, profiles: Mapping[str, Any],
                   defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> C:
    """``cls(data=str(data), profile=profile, **defaults, **overrides)``, overrides that are None
    left out: what :meth:`Config.from_profile` does, for any dataclass with fields ``data`` and
    ``profile`` (``defaults``: the profile's values).

    Raises:
        KeyError: ``profile`` is not in ``profiles`` (the valid ones listed).
        TypeError: an override that is no field of ``cls`` (the valid ones listed).
    """
    if profile not in profiles:
        raise ConfigError(f"unknown profile {profile!r}; valid: {sorted(profiles)}")
    names = [f.name for f in fields(cls)]
    unknown = set(overrides) - set(names)
    if unknown:
        raise ConfigError(f"unknown config fields {sorted(unknown)}; valid: {sorted(names)}")
    given = sorted(set(overrides) & set(IDENTITY))
    if given:
        raise ConfigError(f"config fields {given} are arguments of their own, not overrides")
    values = dict(defaults)
    values.update({k: v for k, v in overrides.items() if v is not None})
    return cls(data=str(data), profile=profile, **values)


class Config:
    """Mixin of every frozen run-config dataclass (fields ``data`` and ``profile`` first).

    Class attributes a config sets:
        PROFILES: profile name -> the fields that profile changes, by name, relative to the class
            defaults (a mapping; the class defaults are the ``mini`` profile's, so ``"mini": {}``).
        MUST_MATCH: fields a resumed run must agree on with the run it continues.
        CHOICES: field -> its valid values (checked by :meth:`check`, offered by ``--help``).
        HELP: field -> help text of its command-line option.
    """

    PROFILES: ClassVar[Mapping[str, Any]] = {}
    MUST_MATCH: ClassVar[tuple[str, ...]] = IDENTITY
    CHOICES: ClassVar[Mapping[str, Sequence[Any]]] = {}
    HELP: ClassVar[Mapping[str, str]] = {}
    #: the value of a field that a saved config lacks, where it is not the profile's: a field added
    #: together with a new behaviour, whose absence means the old one (e.g. a network trained
    #: before a pretrained trunk existed)
    ABSENT: ClassVar[Mapping[str, Any]] = {}
    #: fields that were removed, with the value that meant the behaviour that stayed: a saved
    #: config holding one with that value loads (the field is dropped); another value cannot
    RETIRED: ClassVar[Mapping[str, Any]] = {}

    def __post_init__(self) -> None:
        """A ``device`` field of ``"auto"`` becomes the device it names on this machine
        (:func:`resolve_device`), so that the run and its saved config name the device it ran on."""
        if getattr(self, "device", None) == AUTO_DEVICE:
            object.__setattr__(self, "device", resolve_device(AUTO_DEVICE))

    # ------------------------------------------------------------------ profiles
    @classmethod
    def profile_names(cls) -> list[str]:
        """The profiles :meth:`from_profile` accepts (:attr:`PROFILES`), sorted."""
        return sorted(cls.PROFILES)

    @classmethod
    def profile_overrides(cls, profile: str) -> dict[str, Any]:
        """The fields ``profile`` sets over the class defaults (a copy of ``PROFILES[profile]``).

        Raises:
            KeyError: unknown profile (the valid ones listed).
        """
        if profile not in cls.PROFILES:
            raise ConfigError(f"unknown profile {profile!r}; valid: {cls.profile_names()}")
        return dict(cls.PROFILES[profile])

    @classmethod
    def from_profile(cls: type[C], data: Any, profile: str = "mini", **overrides: Any) -> C:
        """The resolved, checked config: the class defaults, the profile's values over them, then
        every override that is not None.

        Args:
            data: the training variant's folder (stored as a string).
            profile: a profile of :attr:`PROFILES`.
            overrides: field values; None leaves the profile's value.

        Raises:
            KeyError: unknown profile (valid ones listed); TypeError: an override that is no field
            (valid ones listed); ValueError: a value out of range (:meth:`check`).
        """
        names = cls.profile_names()
        defaults = cls.profile_overrides(profile) if profile in names else {}
        unknown = sorted(set(defaults) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"{cls.__name__} profile {profile!r}: unknown config fields {unknown}")
        cfg = resolve_fields(cls, data, profile, dict.fromkeys(names), defaults, overrides)
        try:
            cfg.check()
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return cfg

    def check(self) -> None:
        """Raise ValueError naming the first field out of range (here: a value outside ``CHOICES``).
        Subclasses extend it and call ``super().check()``."""
        for name, valid in self.CHOICES.items():
            value = getattr(self, name)
            if value not in valid:
                raise ValueError(f"{name} must be one of {tuple(valid)}, got {value!r}")

    # ------------------------------------------------------------------ checkpoints
    def to_dict(self) -> dict[str, Any]:
        """Field -> value (plain types: what a checkpoint's ``config`` and ``config.json`` hold)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[C], d: Mapping[str, Any], where: str = "config") -> C:
        """The config a checkpoint (or ``config.json``) holds.

        A field the saved config lacks (it was written before the field existed) takes its
        :attr:`ABSENT` value, else the saved profile's value (the class default where the profile
        does not set it): this is where old checkpoints get, e.g., the network sizes their profile
        had. A saved profile this code does not know resolves a missing field only where no
        profile sets it (an error otherwise). Lists become tuples for tuple fields, ints floats for
        float fields; :meth:`check` is not run (a config that was trained stays loadable).

        Raises:
            ValueError: ``d`` has a field ``cls`` does not know, lacks a field without a default,
            or holds a value of the wrong type; the message names ``where`` and the field.
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: expected a mapping of config fields, got {type(d).__name__}")
        names = [f.name for f in fields(cls)]
        for name, kept in cls.RETIRED.items():
            if name in d and name not in names:
                if d[name] != kept:
                    raise ValueError(f"{where}, field {name!r}: {d[name]!r}, an option that was removed "
                                     f"(only {kept!r}, the behaviour that stayed, loads)")
                d = {k: v for k, v in d.items() if k != name}
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise ValueError(f"{where}: unknown fields {unknown} for {cls.__name__}; valid: {sorted(names)}")
        profile = d.get("profile")
        fallback: dict[str, Any] = {}
        profiled: set[str] = set()  # fields some profile sets: an unknown profile cannot tell their value
        if set(names) - set(d) and cls.profile_names():
            if isinstance(profile, str) and profile in cls.profile_names():
                fallback = cls.profile_overrides(profile)
            else:
                profiled = set().union(*(cls.profile_overrides(p) for p in cls.profile_names()))
        hints = field_types(cls)
        values = {}
        for f in fields(cls):
            if f.name in d:
                raw = d[f.name]
            elif f.name in cls.ABSENT:
                raw = cls.ABSENT[f.name]
            elif f.name in fallback:
                raw = fallback[f.name]
            elif f.name in profiled:
                raise ValueError(f"{where}, field {f.name!r}: missing, and profile {profile!r} has no value for it "
                                 f"(profiles: {cls.profile_names()})")
            elif f.default is MISSING and f.default_factory is MISSING:
                raise ValueError(f"{where}, field {f.name!r}: missing")
            else:
                continue
            try:
                values[f.name] = _check_value(hints[f.name], raw)
            except ValueError as e:
                raise ValueError(f"{where}, field {f.name!r}: {e}") from None
        return cls(**values)


# ---------------------------------------------------------------------------- the command line
def parse_overrides(items: Iterable[str] | None, target: type | Mapping[str, type | None], what: str = "--set",
                    exclude: Sequence[str] = IDENTITY, *, scope: str = "SCOPE") -> dict[str, Any]:
    """The one reader of command-line config overrides, ``NAME=VALUE`` typed by the field.

    With ``target`` a config dataclass: ``["steps=500", "lr=1e-3", "detector=none"]`` ->
    {field: value}, each value parsed with the type of that field (dashes in a name read as
    underscores). With ``target`` a mapping scope -> config dataclass (None: the scope has no
    config), for a script that configures several components: ``["film.steps=500",
    "lstm.lr=0.5"]`` -> {scope: {field: value}} (``scope`` names the prefix in messages, e.g.
    ``MODEL``).

    Raises:
        ConfigError: an item that is not [SCOPE.]NAME=VALUE, an unknown scope or one without a
            config, a value that is not of the field's type (the option ``what``, the field and
            the expected type named), or a name that is no field (the valid ones listed).
    """
    if isinstance(target, Mapping):
        scoped: dict[str, dict[str, Any]] = {}
        for item in items or []:
            name, sep, rest = item.partition(".")
            if not sep or "=" not in rest or "=" in name:
                raise ConfigError(f"{what} {item!r}: expected {scope}.NAME=VALUE")
            if name not in target:
                raise ConfigError(f"{what} {item!r}: unknown {scope.lower()} {name!r}; valid: {', '.join(target)}")
            cls = target[name]
            if cls is None:
                raise ConfigError(f"{what} {item!r}: {scope.lower()} {name!r} has no config (nothing to train)")
            scoped.setdefault(name, {}).update(parse_overrides([rest], cls, f"{what} {name}.", exclude))
        return scoped
    hints = {k: v for k, v in field_types(target).items() if k not in exclude}
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{what}: expected NAME=VALUE, got {item!r}")
        key = name.strip().replace("-", "_")
        if key not in hints:
            raise ConfigError(f"{what}: unknown config fields {[key]}; valid: {sorted(hints)}")
        try:
            out[key] = parse_value(hints[key], text)
        except ValueError as e:
            raise ConfigError(f"{what} {key}={text!r}: {e}") from None
    return out


def _option_type(name: str, tp: Any):
    """The argparse ``type`` of the option of field ``name``: errors name the field and the type."""
    def convert(text: str) -> Any:
        try:
            return parse_value(tp, text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"config field {name!r} ({type_name(tp)}): {e}") from None

    convert.__name__ = type_name(tp)
    return convert


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The help formatter of every script (descriptions kept as written): each option's help ends
    with its default when it has a meaningful one (not None, not a flag's False) and the text does
    not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (default is None or default is False or default is argparse.SUPPRESS or "default" in text
                or action.option_strings == [] and action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE)
                and default == []):
            return text
        shown = "%(default)s" if not isinstance(default, (tuple, list)) else ", ".join(map(str, default))
        return f"{text} (default: {shown.replace('%', '%%') if shown != '%(default)s' else shown})"


def check_outputs(parser: argparse.ArgumentParser, *paths: Any) -> None:
    """The output preflight of every script, right after parsing its arguments: each output path
    (None: not asked for) can be written (:func:`nsvqa.fileio.check_writable`), else the script
    exits with status 2 and one line naming the path, before any work."""
    try:
        check_writable(*paths)
    except OutputNotWritable as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")


def check_run_outside_data(parser: argparse.ArgumentParser, out: Any, data: Any, *, option: str = "--out",
                           variant_folder: bool = False) -> None:
    """The training scripts' preflight of a runs root or run folder ``out`` against ``--data``
    (:func:`nsvqa.fileio.check_outside_data`): inside a dataset, the script exits with status 2 and
    one line naming both, before any work."""
    try:
        check_outside_data(out, data, option=option, variant_folder=variant_folder)
    except OutputNotWritable as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")


def parse_checked(parser: argparse.ArgumentParser, argv: Sequence[str] | None, *outputs: str) -> argparse.Namespace:
    """``parser.parse_args(argv)``, then :func:`check_outputs` of the options whose ``dest`` is in
    ``outputs`` (e.g. ``"out"``): how a script's ``main`` starts."""
    args = parser.parse_args(argv)
    check_outputs(parser, *(getattr(args, name) for name in outputs))
    return args


def add_config_args(parser: argparse.ArgumentParser, cls: type, *, exclude: Sequence[str] = IDENTITY,
                    title: str = "config fields (default: the profile's value)",
                    set_option: str | None = "--set") -> Any:
    """Add one option per field of config dataclass ``cls`` (but ``exclude``) to ``parser``.

    ``--field-name VALUE`` parsed with the field's type; a bool field is ``--name`` (true),
    ``--no-name`` (false) or ``--name true|false``; an ``X | None`` field takes ``none``. Every
    option defaults to None (the profile's value). ``set_option`` (None: none) adds
    ``--set NAME=VALUE`` (repeatable, dest ``set``) for any field, typed the same way. Read the
    values back with :func:`config_overrides`. Returns the argument group (for aliases).
    """
    group = parser.add_argument_group(title)
    helps: Mapping[str, str] = getattr(cls, "HELP", {})
    choices: Mapping[str, Sequence[Any]] = getattr(cls, "CHOICES", {})
    for name, tp in field_types(cls).items():
        if name in exclude:
            continue
        flag = "--" + name.replace("_", "-")
        base, _ = _split_optional(tp)
        text = helps.get(name, "")
        if base is bool:
            group.add_argument(flag, dest=name, nargs="?", const=True, default=None, type=_option_type(name, tp),
                               metavar="true|false", help=(text + " " if text else "") + f"(bool; --no-{flag[2:]}: false)")
            group.add_argument(f"--no-{flag[2:]}", dest=name, action="store_false", default=None, help=argparse.SUPPRESS)
            continue
        valid = choices.get(name)
        metavar = "X,Y,..." if typing.get_origin(base) is tuple else getattr(base, "__name__", "value").upper()
        group.add_argument(flag, dest=name, type=_option_type(name, tp), default=None, choices=valid,
                           metavar=None if valid else metavar, help=(text + " " if text else "") + f"({type_name(tp)})")
    if set_option:
        group.add_argument(set_option, action="append", dest="set", metavar="NAME=VALUE", default=None,
                           help="any config field, parsed with its type (repeatable)")
    return group


def config_overrides(args: argparse.Namespace, cls: type, *, exclude: Sequence[str] = IDENTITY,
                     what: str = "--set") -> dict[str, Any]:
    """The overrides given by the options of :func:`add_config_args`: every field option that was
    given, then every ``--set`` (which wins)."""
    names = [n for n in field_types(cls) if n not in exclude]
    out = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    out.update(parse_overrides(getattr(args, "set", None), cls, what, exclude))
    return out


__all__ = ["AUTO_DEVICE", "resolve_device", "Config", "ConfigError", "HelpFormatter", "check_outputs", "check_run_outside_data", "parse_checked", "IDENTITY", "resolve_fields", "field_types", "type_name", "parse_value", "parse_overrides",
           "add_config_args", "config_overrides"]
