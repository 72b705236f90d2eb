"""Input validation shared by the disentanglement metrics (scikit-learn style, one-line errors).

Every user mistake raises :class:`~mibench.errors.MibenchError` with a single clear line.
"""
from __future__ import annotations

import numpy as np

from ..errors import MibenchError

#: A factor column counts as discrete under ``discrete=None`` ("auto") when its values are all
#: integers and it takes at most this many distinct values.
AUTO_DISCRETE_MAX_VALUES = 50


def as_2d(a, name: str, *, min_rows: int = 2) -> np.ndarray:
    """``a`` as a finite float64 array of shape (n, d); a 1-D input becomes one column."""
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise MibenchError(f"{name} must be a numeric array, got {type(a).__name__}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise MibenchError(f"{name} must be 1-D or 2-D (samples x dims), got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise MibenchError(f"{name} needs at least {min_rows} samples, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise MibenchError(f"{name} has no columns")
    if not np.all(np.isfinite(arr)):
        raise MibenchError(f"{name} contains NaN or infinite values")
    return arr


def check_same_rows(**arrays) -> int:
    """All arrays have the same number of rows; returns it."""
    rows = {k: len(v) for k, v in arrays.items()}
    if len(set(rows.values())) > 1:
        desc = ", ".join(f"{k}: {n}" for k, n in rows.items())
        raise MibenchError(f"inputs must have the same number of samples; got {desc}")
    return next(iter(rows.values()))


def is_discrete_column(col: np.ndarray) -> bool:
    """The "auto" rule: integer-valued with at most ``AUTO_DISCRETE_MAX_VALUES`` distinct values."""
    if not np.all(np.equal(np.mod(col, 1.0), 0.0)):
        return False
    return np.unique(col).size <= AUTO_DISCRETE_MAX_VALUES


def resolve_discrete(y: np.ndarray, discrete) -> np.ndarray:
    """Per-factor discreteness flags (bool array of length K).

    ``discrete`` is ``None`` (auto, see :func:`is_discrete_column`), one bool for all factors, or a
    sequence of K bools.
    """
    K = y.shape[1]
    if discrete is None:
        return np.array([is_discrete_column(y[:, k]) for k in range(K)], dtype=bool)
    if isinstance(discrete, (bool, np.bool_)):
        return np.full(K, bool(discrete))
    flags = np.asarray(discrete)
    if flags.shape != (K,):
        raise MibenchError(f"discrete must be None, a bool or {K} bools (one per factor), got shape {flags.shape}")
    return flags.astype(bool)


def discrete_entropy(col: np.ndarray) -> float:
    """Plug-in entropy H(y) in nats of a discrete column."""
    _, counts = np.unique(col, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def as_labels(col: np.ndarray) -> np.ndarray:
    """Integer labels 0..C-1 of a discrete column."""
    return np.unique(col, return_inverse=True)[1].ravel()


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise MibenchError(f"{name} must be an integer, got {value!r}") from None
    if v != value or v < minimum:
        raise MibenchError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return v
