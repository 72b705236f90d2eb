"""Estimators registered at run time: :func:`register_estimator` (Python API, notebooks).  In-process
registrations reach sweep and estimate workers (:func:`registrations` / :func:`install_registrations`,
sent by :mod:`mibench.protocols.workers`).  The other two plug-in routes -- ``package.module:Name`` and the
``mibench.estimators`` entry-point group -- are resolved by name in
:mod:`mibench.estimators.lookup`; :func:`installed_plugins` lists the installed ones (``mibench list``).
"""
from __future__ import annotations

from mibench.errors import MibenchError
from mibench.estimators.lookup import ENTRY_POINT_GROUP, entry_for, entry_points_installed, load_entry_point
from mibench.estimators.registry import ALL, ESTIMATORS

#: estimators added by register_estimator in this process: name -> (description, obj)
_REGISTERED: dict[str, tuple[str, object]] = {}


def _source(ep) -> str:
    """``distribution version`` of the package that declares an entry point."""
    dist = getattr(ep, "dist", None)
    try:
        return f"{dist.name} {dist.version}" if dist is not None else "unknown package"
    except Exception:  # unreadable metadata
        return "unknown package"


def _builtin(name: str) -> bool:
    """``name`` is a built-in estimator's name, alias or family member (not one registered here), or
    ``all`` (``--estimator all``: the paper's estimators)."""
    return (name.strip().lower() == ALL or ESTIMATORS.is_alias(name) or ESTIMATORS.matches_pattern(name)
            or (ESTIMATORS.has_entry(name) and name.strip().lower() not in {k.lower() for k in _REGISTERED}))


def installed_plugins() -> list[dict]:
    """The installed ``mibench.estimators`` entry points, each loaded: one dict per entry point
    with ``name``, ``value`` (``module:attr``), ``source`` (distribution and version), ``kind``
    (``critic`` / ``black-box`` / ``generative``; None when it failed to load), ``error`` (one line,
    or None) and ``shadowed`` (a built-in estimator has the same name, so ``--estimator NAME`` runs
    the built-in: run the plug-in by its ``value``).  One that fails to load does not stop the rest."""
    rows = []
    for ep in sorted(entry_points_installed(), key=lambda e: (e.name.lower(), e.value)):
        row = {"name": ep.name, "value": ep.value, "source": _source(ep), "kind": None, "error": None,
               "shadowed": _builtin(ep.name)}
        try:
            row["kind"] = load_entry_point(ep).obj.kind
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
        where = f'[project.entry-points."{ENTRY_POINT_GROUP}"]'
        return lines + [f"  none installed (a package declares one under {where})"]
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
    if not isinstance(name, str):                    # str(None) would register an estimator called 'None'
        raise MibenchError(f"estimator name must be a string, got {type(name).__name__} {name!r}")
    name = name.strip()
    if not name or "," in name:
        raise MibenchError(f"estimator name {name!r} must be non-empty and contain no comma")
    entry = entry_for(name, obj, description, "register_estimator")
    key = name.lower()
    if key == ALL:                                  # --estimator all runs the paper's estimators, never this
        raise MibenchError("'all' names the paper's estimators (--estimator all); choose another name")
    if ESTIMATORS.is_alias(name):
        raise MibenchError(f"{name!r} is an alias of a built-in estimator; choose another name "
                           f"(e.g. a qualified one: 'my_pkg.{name}')")
    family = ESTIMATORS.matches_pattern(name)
    if family is not None:
        raise MibenchError(f"{name!r} is a built-in estimator ({family}); choose another name "
                           f"(e.g. a qualified one: 'my_pkg.{name}')")
    if ESTIMATORS.has_entry(name):
        # a built-in is never replaced; a name registered here before is (a notebook cell run twice)
        if key not in {k.lower() for k in _REGISTERED}:
            raise MibenchError(f"{name!r} is a built-in estimator; choose another name (e.g. 'my_pkg.{name}')")
        for k in [k for k in _REGISTERED if k.lower() == key]:
            del _REGISTERED[k]
    ESTIMATORS.replace(name, entry.description, entry.obj)
    _REGISTERED[name] = (description, obj)
    return name


def registrations() -> dict:
    """This process's :func:`register_estimator` calls, to re-play in a worker process."""
    return dict(_REGISTERED)


def install_registrations(regs: dict | None) -> None:
    """Re-play registrations in a worker (idempotent)."""
    for name, (description, obj) in (regs or {}).items():
        register_estimator(name, obj, description, replace=True)
