"""Estimators that are not built in, found by name: ``package.module:Name`` (imported), and the
``mibench.estimators`` entry-point group of installed packages (:mod:`importlib.metadata`, read on
the first unknown name, not on import).  :class:`PluginRegistry`, the class of
:data:`mibench.estimators.ESTIMATORS`, does the look-up; errors are one line."""
from __future__ import annotations

import importlib
import re
from functools import lru_cache

from mibench.errors import MibenchError
from mibench.estimators.kinds import as_factory, factory_for
from mibench.utils.registry import Entry, Registry

ENTRY_POINT_GROUP = "mibench.estimators"

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_SPEC = re.compile(rf"({_DOTTED}):({_DOTTED})")

def is_module_spec(text: str) -> bool:
    return _SPEC.fullmatch(str(text).strip()) is not None


def load_object(spec: str):
    """Import ``package.module:Name`` and return the object (one-line errors)."""
    m = _SPEC.fullmatch(str(spec).strip())
    if m is None:
        raise MibenchError(f"plug-in {spec!r} is not of the form package.module:Name")
    module_name, attr_path = m.group(1), m.group(2)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or module_name
        raise MibenchError(f"plug-in {spec!r}: module {missing!r} not found (is it installed or on "
                           "PYTHONPATH?)") from None
    except MibenchError:
        raise
    except (Exception, SystemExit) as e:  # the plug-in's own import failed (a sys.exit() in it too)
        raise MibenchError(f"plug-in {spec!r}: importing {module_name!r} failed: {type(e).__name__}: {e}") from None
    obj = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            raise MibenchError(f"plug-in {spec!r}: module {module_name!r} has no attribute {attr_path!r}")
        obj = getattr(obj, part)
    return obj


def _describe(obj, fallback: str) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return doc[0] if doc and doc[0] else fallback


def entry_for(name: str, obj, description: str | None, origin: str) -> Entry:
    """A registry entry for a plug-in object: its factory, with the kind and description in the
    entry's one line (a constructor that fails, or an object that is not an estimator: one line)."""
    try:
        factory = factory_for(obj, name)      # builds one to check it is an estimator
    except MibenchError:
        raise
    except (Exception, SystemExit) as e:  # the plug-in's constructor failed
        raise MibenchError(f"plug-in {name!r} could not be built: {type(e).__name__}: {e}") from None
    desc = description or _describe(obj, "plug-in estimator")
    return Entry(name, f"{factory.kind} plug-in ({origin}): {desc}", factory)


@lru_cache(maxsize=None)
def module_entry(spec: str) -> Entry:
    """Registry entry for ``package.module:Name`` (cached per process)."""
    spec = str(spec).strip()
    return entry_for(spec, load_object(spec), None, spec)


def entry_points_installed():
    from importlib.metadata import entry_points

    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # a broken distribution's metadata must not break mibench
        return []


def entry_point_names() -> list[str]:
    return sorted({ep.name for ep in entry_points_installed()})


_EP_CACHE: dict[str, Entry] = {}


def load_entry_point(ep) -> Entry:
    """Import one entry point and build its registry entry (one-line errors)."""
    try:
        obj = ep.load()
    except ModuleNotFoundError as e:
        raise MibenchError(f"plug-in {ep.name!r} (entry point {ep.value!r}): module {e.name!r} not found") from None
    except AttributeError as e:
        raise MibenchError(f"plug-in {ep.name!r} (entry point {ep.value!r}): {e}") from None
    except (Exception, SystemExit) as e:
        raise MibenchError(f"plug-in {ep.name!r} (entry point {ep.value!r}) failed to load: "
                           f"{type(e).__name__}: {e}") from None
    return entry_for(ep.name, obj, None, f"entry point {ep.value}")


def _entry_point_entry_cached(name: str) -> Entry | None:
    """Entry points are re-read on every miss (a package installed meanwhile is found); a found
    entry is cached for the process."""
    if name.lower() in _EP_CACHE:
        return _EP_CACHE[name.lower()]
    matches = [ep for ep in entry_points_installed() if ep.name.lower() == name.lower()]
    if len({(ep.name, ep.value) for ep in matches}) > 1:
        # names are case-insensitive: two entry points that differ only in case cannot both be meant
        raise MibenchError(f"plug-in {name!r} is ambiguous: entry points "
                           f"{', '.join(f'{ep.name} = {ep.value}' for ep in matches)} differ only in case")
    if matches:
        entry = load_entry_point(matches[0])
        _EP_CACHE[name.lower()] = entry
        return entry
    return None


def entry_point_entry(name: str) -> Entry | None:
    """Registry entry for an installed ``mibench.estimators`` entry point named ``name``, or None."""
    return _entry_point_entry_cached(str(name).strip())


class PluginRegistry(Registry):
    """``Registry`` that also resolves ``package.module:Name`` specs and ``mibench.estimators``
    entry points (loaded lazily, see :mod:`mibench.estimators.plugins`).  Every entry holds a
    factory that says its ``kind`` and ``training_objective``
    (:func:`~mibench.estimators.kinds.as_factory`)."""

    def add(self, name: str, description: str, obj, *, aliases: tuple[str, ...] = ()) -> None:
        super().add(name, description, as_factory(obj), aliases=aliases)

    def get(self, name: str) -> Entry:
        try:
            return super().get(name)
        except MibenchError as unknown:
            text = str(name).strip()
            if is_module_spec(text):
                return module_entry(text)
            entry = entry_point_entry(text)
            if entry is not None:
                return entry
            names = entry_point_names()
            if names:
                raise MibenchError(f"{unknown} (plug-ins installed: {', '.join(names)})") from None
            raise

    def names(self) -> list[str]:
        return super().names()
