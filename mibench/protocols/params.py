"""Run parameters declared once: a protocol's config is a dataclass whose fields are made with
:func:`param`, and everything else is derived from those fields -- the types config.json values are
checked against (:func:`field_types`), ``mibench run``'s flags with their defaults and help
(:func:`add_flags`, :func:`values_from_args`) and the grid axes of a sweep (:func:`sweep_axes`).

Compare bmi's pydantic ``*Params`` classes: one declaration per parameter, read by every consumer.
"""
from __future__ import annotations

import dataclasses
from dataclasses import MISSING
from typing import Any, Callable

#: the metadata keys a :func:`param` field carries
_KEYS = ("help", "flag", "axis", "check")


def param(default: Any = MISSING, *, help: str, check=None, flag: str | None = "", axis: str | None = None,
          default_factory: Callable[[], Any] | Any = MISSING):
    """A config field that is a run parameter.

    Parameters
    ----------
    default, default_factory : the field's default (as :func:`dataclasses.field`).
    help : one line for ``--help`` (the default is appended).
    check : the type config.json's value must have (``int``, ``float``, ``str``, ``dict``, a tuple of
        them with ``None`` for "also null"), or ``None`` for values checked by the config's own
        ``resolved()`` (estimator lists, MI schedules).
    flag : the command-line flag: ``""`` derives it from the name (``batch_size`` -> ``--batch-size``),
        ``None`` means no flag.
    axis : the key of the sweep-spec axis that varies this field (``None``: not an axis).
    """
    meta = {"help": help, "flag": flag, "axis": axis, "check": check}
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def default_of(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not MISSING else f.default


def field_types(cls) -> dict:
    """Field name -> the type config.json's value is checked against (``mibench.utils.checks.check_fields``)."""
    return {f.name: f.metadata.get("check") for f in dataclasses.fields(cls)}


def axis_fields(cls) -> list[dataclasses.Field]:
    """The fields a sweep can vary, in field order."""
    return [f for f in dataclasses.fields(cls) if f.metadata.get("axis")]


def sweep_axes(cls) -> list[tuple[str, str]]:
    """``(spec key, field name)`` of every field a sweep can vary, in field order (the order a
    sweep enumerates its cells in)."""
    return [(f.metadata["axis"], f.name) for f in axis_fields(cls)]


def flag_of(f: dataclasses.Field) -> str | None:
    flag = f.metadata.get("flag", None)
    if flag is None:
        return None
    return flag or "--" + f.name.replace("_", "-")


def flag_fields(cls, names=None) -> list[dataclasses.Field]:
    """The fields of ``cls`` that have a command-line flag (only ``names``, in that order, if given)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if flag_of(f)}
    return [fields[n] for n in names] if names is not None else list(fields.values())


def add_flags(parser, cls, names=None, *, unset: bool = False) -> None:
    """Add a flag per parameter field of ``cls`` to ``parser`` (an argparse parser or group), typed by
    the field's ``check`` and defaulting to the field's default (``unset``: to None, for flags whose
    presence matters, e.g. the sample protocol's ``--n``)."""
    for f in flag_fields(cls, names):
        default = None if unset else default_of(f)
        kind = f.metadata.get("check")
        kinds = kind if isinstance(kind, tuple) else (kind,)
        kind = next((k for k in kinds if k in (int, float)), None)
        listed = ",".join(map(str, default)) if isinstance(default, list) else default
        shown = "" if default is None else f" (default {listed})"
        flag = flag_of(f)
        parser.add_argument(flag, dest=f.name, type=kind, default=default, metavar=flag[2:].upper().replace("-", "_"),
                            help=f.metadata["help"] + shown)


def values_from_args(args, cls, names=None) -> dict:
    """The values of ``cls``'s flag fields in parsed arguments (those ``args`` has)."""
    return {f.name: getattr(args, f.name) for f in flag_fields(cls, names) if hasattr(args, f.name)}
