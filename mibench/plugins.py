"""Estimators registered at run time: :func:`register_estimator` (Python API, notebooks).  In-process
registrations reach sweep and estimate workers (:func:`registrations` / :func:`install_registrations`,
sent by :mod:`mibench.workers`).  The other two plug-in routes -- ``package.module:Name`` and the
``mibench.estimators`` entry-point group -- are resolved by name in
:mod:`mibench.estimators.plugins`.
"""
from __future__ import annotations

from .errors import MibenchError
from .estimators.plugins import entry_for
from .estimators.registry import ESTIMATORS

#: estimators added by register_estimator in this process: name -> (description, obj)
_REGISTERED: dict[str, tuple[str, object]] = {}


def register_estimator(name: str, obj, description: str | None = None, *, replace: bool = False) -> str:
    """Register an estimator under ``name`` for this process (and the sweep workers it starts).

    ``obj``: a sample estimator class or object (``kind``, ``estimate(x, y, *, seed=0) -> nats``,
    ``n_parameters``), a function ``f(x, y) -> nats``, a zero-argument factory, or a critic-head
    class (:class:`mibench.estimators.Estimator` subclass).  Returns the registered name.
    """
    name = str(name).strip()
    if not name or "," in name:
        raise MibenchError(f"estimator name {name!r} must be non-empty and contain no comma")
    entry = entry_for(name, obj, description, "register_estimator")
    if ESTIMATORS.is_alias(name):
        raise MibenchError(f"{name!r} is an alias of a built-in estimator; choose another name")
    if ESTIMATORS.has_entry(name) and not (replace or name.lower() in {k.lower() for k in _REGISTERED}):
        raise MibenchError(f"estimator {name!r} is already registered (pass replace=True to replace it)")
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
