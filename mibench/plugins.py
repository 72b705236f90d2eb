"""Estimator plug-ins without editing mibench (issue 12).  Three routes, one registry:

* ``--estimator package.module:Name`` (run, sweep, ``mibench.estimate``-free sample protocol):
  ``Name`` is imported from ``package.module`` (dotted attributes allowed, ``pkg.mod:Class.attr``).
  It may be a sample-estimator class or object (``kind``, ``estimate(x, y, *, seed=0) -> nats``,
  ``n_parameters``), a plain function ``f(x, y) -> nats``, a zero-argument factory, or a
  :class:`mibench.estimators.Estimator` critic head (class).  The spec itself is the estimator's
  name in results, so a sweep worker (local process or Dask) resolves it again by import.
* the ``mibench.estimators`` **entry-point group** (``importlib.metadata``): an installed package
  declares ``[project.entry-points."mibench.estimators"] my-est = "my_pkg.module:MyEstimator"``
  and ``--estimator my-est`` finds it (entry points are read on the first unknown name, not on import).
* :func:`register_estimator` ``(name, obj, description=...)`` at run time (Python API / notebooks).
  In-process registrations reach sweep workers as pickled specs (see :func:`registrations` and
  :func:`install_registrations`, called by the sweep's worker entry points).

Errors are one line (:class:`mibench.errors.MibenchError`): unknown module, missing attribute, an
object that is not an estimator.
"""
from __future__ import annotations

import importlib
import re
from functools import lru_cache

from .errors import MibenchError
from .registry import Entry

ENTRY_POINT_GROUP = "mibench.estimators"

_SPEC = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)")

#: estimators added by register_estimator in this process: name -> (description, obj)
_REGISTERED: dict[str, tuple[str, object]] = {}


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
        raise MibenchError(f"plug-in {spec!r}: module {missing!r} not found (is it installed or on PYTHONPATH?)") from None
    except MibenchError:
        raise
    except Exception as e:  # the plug-in's own import failed
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


def _entry(name: str, obj, description: str | None, origin: str) -> Entry:
    from .estimators.protocols import factory_for, kind_of

    factory = factory_for(obj, name)
    try:
        kind = kind_of(factory())
    except MibenchError:
        raise
    except Exception as e:  # the plug-in's constructor failed
        raise MibenchError(f"plug-in {name!r} could not be built: {type(e).__name__}: {e}") from None
    desc = description or _describe(obj, "plug-in estimator")
    return Entry(name, f"{kind} plug-in ({origin}): {desc}", factory)


@lru_cache(maxsize=None)
def module_entry(spec: str) -> Entry:
    """Registry entry for ``package.module:Name`` (cached per process)."""
    spec = str(spec).strip()
    return _entry(spec, load_object(spec), None, spec)


def _entry_points():
    from importlib.metadata import entry_points

    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # a broken distribution's metadata must not break mibench
        return []


def entry_point_names() -> list[str]:
    return sorted({ep.name for ep in _entry_points()})


_EP_CACHE: dict[str, Entry] = {}


def _load_entry_point(ep) -> Entry:
    """Import one entry point and build its registry entry (one-line errors)."""
    try:
        obj = ep.load()
    except ModuleNotFoundError as e:
        raise MibenchError(f"plug-in {ep.name!r} (entry point {ep.value!r}): module {e.name!r} not found") from None
    except AttributeError as e:
        raise MibenchError(f"plug-in {ep.name!r} (entry point {ep.value!r}): {e}") from None
    except Exception as e:
        raise MibenchError(f"plug-in {ep.name!r} (entry point {ep.value!r}) failed to load: "
                           f"{type(e).__name__}: {e}") from None
    return _entry(ep.name, obj, None, f"entry point {ep.value}")


def _entry_point_entry_cached(name: str) -> Entry | None:
    """Entry points are re-read on every miss (a package installed meanwhile is found); a found
    entry is cached for the process."""
    if name.lower() in _EP_CACHE:
        return _EP_CACHE[name.lower()]
    for ep in _entry_points():
        if ep.name.lower() == name.lower():
            entry = _load_entry_point(ep)
            _EP_CACHE[name.lower()] = entry
            return entry
    return None


def entry_point_entry(name: str) -> Entry | None:
    """Registry entry for an installed ``mibench.estimators`` entry point named ``name``, or None."""
    return _entry_point_entry_cached(str(name).strip())


def _source(ep) -> str:
    """``distribution version`` of the package that declares an entry point."""
    dist = getattr(ep, "dist", None)
    try:
        return f"{dist.name} {dist.version}" if dist is not None else "unknown package"
    except Exception:  # unreadable metadata
        return "unknown package"


def _builtin(name: str) -> bool:
    from .estimators import ESTIMATORS

    key = name.strip().lower()
    return (key in ESTIMATORS._aliases or (key in ESTIMATORS._entries and key not in {k.lower() for k in _REGISTERED})
            or any(rx.fullmatch(name.strip()) for rx, _, _ in ESTIMATORS._patterns))


def installed_plugins() -> list[dict]:
    """The installed ``mibench.estimators`` entry points, each loaded: one dict per entry point
    with ``name``, ``value`` (``module:attr``), ``source`` (distribution and version), ``kind``
    (``critic`` / ``black-box`` / ``generative``; None when it failed to load), ``error`` (one line,
    or None) and ``shadowed`` (a built-in estimator has the same name, so ``--estimator NAME`` runs
    the built-in: run the plug-in by its ``value``).  One that fails to load does not stop the rest."""
    from .estimators.protocols import kind_of

    rows = []
    for ep in sorted(_entry_points(), key=lambda e: (e.name.lower(), e.value)):
        row = {"name": ep.name, "value": ep.value, "source": _source(ep), "kind": None, "error": None,
               "shadowed": _builtin(ep.name)}
        try:
            row["kind"] = kind_of(_load_entry_point(ep).obj())
        except (Exception, SystemExit) as e:   # a broken plug-in is one line, never the end of the list
            msg = str(e) if isinstance(e, MibenchError) else f"{type(e).__name__}: {e}"
            row["error"] = " ".join(msg.split()) or type(e).__name__
        rows.append(row)
    return rows


def plugin_lines() -> list[str]:
    """``mibench list``'s plug-ins section (lines)."""
    rows = installed_plugins()
    lines = [f"plug-ins (installed packages, entry-point group {ENTRY_POINT_GROUP}):"]
    if not rows:
        return lines + [f"  none installed (a package declares one under [project.entry-points.\"{ENTRY_POINT_GROUP}\"])"]
    width = max(12, *(len(r["name"]) for r in rows))
    for r in rows:
        where = f"from {r['source']} ({r['value']})"
        if r["error"]:
            lines.append(f"  {r['name']:<{width}} failed to load: {r['error']} [{where}]")
            continue
        note = f"; shadowed by the built-in {r['name']!r}: run it as --estimator {r['value']}" if r["shadowed"] else ""
        lines.append(f"  {r['name']:<{width}} {r['kind']:<10} {where}{note}")
    return lines


def register_estimator(name: str, obj, description: str | None = None, *, replace: bool = False) -> str:
    """Register an estimator under ``name`` for this process (and the sweep workers it starts).

    ``obj``: a sample estimator class or object (``kind``, ``estimate(x, y, *, seed=0) -> nats``,
    ``n_parameters``), a function ``f(x, y) -> nats``, a zero-argument factory, or a critic-head
    class (:class:`mibench.estimators.Estimator` subclass).  Returns the registered name.

    ``name`` must not be a built-in estimator, alias or family member (``cca``, ``smile-3``): a
    one-line error says so (qualify it: ``my_pkg.CCA``).  A name registered earlier in this process
    is replaced (re-running a notebook cell); ``replace`` is accepted for compatibility.
    """
    from .estimators import ESTIMATORS

    name = str(name).strip()
    if not name or "," in name:
        raise MibenchError(f"estimator name {name!r} must be non-empty and contain no comma")
    entry = _entry(name, obj, description, "register_estimator")
    key = name.lower()
    if key in ESTIMATORS._aliases:
        raise MibenchError(f"{name!r} is an alias of a built-in estimator; choose another name "
                           f"(e.g. a qualified one: 'my_pkg.{name}')")
    family = next((h for rx, h, _ in ESTIMATORS._patterns if rx.fullmatch(name)), None)
    if family is not None:
        raise MibenchError(f"{name!r} is a built-in estimator ({family}); choose another name "
                           f"(e.g. a qualified one: 'my_pkg.{name}')")
    if key in ESTIMATORS._entries:
        # a built-in is never replaced; a name registered here before is (a notebook cell run twice)
        if key not in {k.lower() for k in _REGISTERED}:
            raise MibenchError(f"{name!r} is a built-in estimator; choose another name (e.g. 'my_pkg.{name}')")
        del ESTIMATORS._entries[key]
        for k in [k for k in _REGISTERED if k.lower() == key]:
            del _REGISTERED[k]
    ESTIMATORS.add(name, entry.description, entry.obj)
    _REGISTERED[name] = (description, obj)
    return name


def registrations() -> dict:
    """This process's :func:`register_estimator` calls, to re-play in a worker process."""
    return dict(_REGISTERED)


def install_registrations(regs: dict | None) -> None:
    """Re-play registrations in a worker (idempotent)."""
    for name, (description, obj) in (regs or {}).items():
        register_estimator(name, obj, description, replace=True)
