"""Dependence a variational bound cannot put a number on, found before any training:

* **none at all**: ``x`` or ``y`` is constant (every column has one value), so I(X;Y) = 0;
* **deterministic**: a continuous coordinate of Y is a one-to-one function of X's coordinates, so
  I(X;Y) is infinite (the joint distribution has no density; a bound trained on n pairs would
  report a large but finite number, e.g. 27.7 bits for x == y in two dimensions).

The test is exact at the stored precision for the maps it covers, and silent otherwise:

1. after the normal-score map (ranks, :mod:`mibench.estimation.preprocess`) a strictly increasing
   or decreasing function of one column has the same (or negated) column of scores, so a
   continuous column of Y whose scores equal +-1 times those of a continuous column of X is such a
   function (x == y, duplicated columns, y = exp(x), y = -x^3, ...);
2. where the continuous columns number at most :data:`CCA_MAX_DIM`, a canonical correlation of
   1 (to :data:`DETERMINISTIC_CORRELATION`) between them is a deterministic linear relation
   (y = A x + b, rotations, sums of columns).

"Continuous" means at least :data:`CONTINUOUS_DISTINCT_FRACTION` of the training values of the column
are distinct: a deterministic relation between discrete variables (class labels, one-hot codes,
a finite pool of embeddings) has finite MI, which the estimators can measure.  A deterministic
nonlinear map that mixes several coordinates is not detected.
"""
from __future__ import annotations

import hashlib

import numpy as np

CONTINUOUS_DISTINCT_FRACTION = 0.9
DETERMINISTIC_CORRELATION = 1 - 1e-9
CCA_MAX_DIM = 256


def constant_input(x: np.ndarray, y: np.ndarray) -> str | None:
    """``"x is constant"`` / ``"y is constant"`` when every column takes one value, else None."""
    for name, a in (("x", x), ("y", y)):
        if np.all(a.max(axis=0) == a.min(axis=0)):
            return f"{name} is constant"
    return None


def _distinct_fraction(a: np.ndarray) -> np.ndarray:
    vals = np.sort(a, axis=0)
    return (1 + (np.diff(vals, axis=0) != 0).sum(axis=0)) / max(1, a.shape[0])


def continuous_columns(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Indices of the columns whose values on ``rows`` are at least 90% distinct (screened on the first
    2,000 rows, so wide arrays of discrete columns cost little)."""
    head = np.flatnonzero(_distinct_fraction(a[rows[:2000]]) >= CONTINUOUS_DISTINCT_FRACTION)
    if head.size == 0 or len(rows) <= 2000:
        return head
    return head[_distinct_fraction(a[rows][:, head]) >= CONTINUOUS_DISTINCT_FRACTION]


def _column_keys(a: np.ndarray) -> list[bytes]:
    rounded = np.round(a, 9) + 0.0          # + 0.0 turns -0.0 into 0.0
    return [hashlib.sha256(np.ascontiguousarray(rounded[:, j]).tobytes()).digest() for j in range(a.shape[1])]


def deterministic_dependence(x: np.ndarray, y: np.ndarray, rows: np.ndarray) -> str | None:
    """A one-line description of a deterministic relation between X and Y found on ``rows`` of the
    arrays ``x`` and ``y`` as given (see the module docstring), else None."""
    from mibench.estimation.preprocess import normal_scores

    cx, cy = continuous_columns(x, rows), continuous_columns(y, rows)
    if not (cx.size and cy.size):
        return None
    raw_x, raw_y = x[rows][:, cx], y[rows][:, cy]
    xs, ys = raw_x.copy(), raw_y.copy()
    every = np.arange(len(rows))
    normal_scores(xs, every)
    normal_scores(ys, every)
    keys = {k: int(j) for j, k in zip(cx, _column_keys(xs))}
    keys.update({k: int(j) for j, k in zip(cx, _column_keys(-xs)) if k not in keys})
    for j, k in zip(cy, _column_keys(ys)):
        if k in keys:
            return (f"y[:, {j}] is a strictly monotone function of x[:, {keys[k]}] (identical ranks): "
                    "I(X;Y) is infinite")
    if cx.size + cy.size <= CCA_MAX_DIM:
        from mibench.estimation.gaussian_start import canonical_correlations

        z = np.concatenate([raw_x, raw_y], axis=1)
        d = z.shape[1]
        r = canonical_correlations(np.cov(z, rowvar=False).reshape(d, d), cx.size)
        if r.size and r.max() > DETERMINISTIC_CORRELATION:
            return (f"a linear combination of y's columns equals one of x's (canonical correlation "
                    f"{r.max():.12f}): I(X;Y) is infinite")
    return None
