"""mibench: a benchmark suite for neural mutual-information estimators (Lee & Rhee, NeurIPS 2024 D&B)."""
from __future__ import annotations

from mibench._version import __version__
from mibench.errors import DataNotFoundError, MibenchError
from mibench.utils import moved as _moved

_moved.install()      # the old import paths of moved modules, for one release (CHANGELOG.md)

__all__ = ["MibenchError", "DataNotFoundError", "estimate", "load_runs", "register_estimator", "evaluate",
           "__version__"]


def estimate(x, y, **kwargs):
    """Estimate I(X;Y) on your own paired arrays; see :func:`mibench.estimation.estimate`."""
    from mibench.estimation import estimate as _estimate

    return _estimate(x, y, **kwargs)


def load_runs(path, complete_only: bool = False):
    """Every per-step estimate of every run directory under ``path`` as one pandas DataFrame (one
    row per estimate, with the run's config columns); see :func:`mibench.analysis.frames.load_runs`."""
    from mibench.analysis.frames import load_runs as _load_runs

    return _load_runs(path, complete_only=complete_only)


def register_estimator(name, obj, description=None, *, replace=False):
    """Register your estimator (a sample-estimator class / object, a function ``f(x, y) -> nats``, or
    a critic-head class) under ``name`` for ``mibench`` runs, sweeps and workers; see
    :mod:`mibench.estimators.plugins`."""
    from mibench.estimators.plugins import register_estimator as _register

    return _register(name, obj, description, replace=replace)


def evaluate(my_estimator, suite="quick", **kwargs):
    """Benchmark your estimator on a standard sample-protocol suite and print where it ranks next to
    the committed baselines; see :func:`mibench.analysis.evaluate.evaluate`."""
    from mibench.analysis.evaluate import evaluate as _evaluate

    return _evaluate(my_estimator, suite, **kwargs)
