"""Dependence a variational bound cannot put a number on, found before any training:

* **none at all**: ``x`` or ``y`` is constant (every column has one value), so I(X;Y) = 0
  (:func:`constant_input`);
* **deterministic**: a continuous coordinate of Y is a one-to-one function of X's coordinates, so
  I(X;Y) is infinite (the joint distribution has no density; a bound trained on n pairs would report a
  large but finite number: docs/estimators.md, "Statuses") (:func:`deterministic_dependence`).

A sample can only show that a relation holds to some precision, and y = x + 1e-6 noise has finite MI
(log 1e6 = 13.8 nats): noise that small keeps the ranks, and the canonical correlation is 1 - 5e-13.
Neither is evidence by itself.  The relation must be *exact*, its residual explained by the rounding
of the stored values or (for a smooth map read through a local fit) by a millionth of the gap between
neighbouring values: two tests, :func:`_monotone_relation` and :func:`_linear_relation`.  "Rounding of
the values": each column's unit roundoff u is that of the narrowest float type that holds all its
values exactly (2^-11, 2^-24 or 2^-53), so float32 data computed as y = x ** 3 stay deterministic.
"Continuous" means at least :data:`CONTINUOUS_DISTINCT_FRACTION` of the training values of the column
are distinct: a deterministic relation between discrete variables (class labels, one-hot codes, a finite
pool of embeddings) has finite MI, which the estimators can measure.  A deterministic nonlinear map that
mixes several coordinates, or a monotone map that is not smooth at the sample's spacing, is not detected.
"""
from __future__ import annotations

import hashlib

import numpy as np

CONTINUOUS_DISTINCT_FRACTION = 0.9
CCA_MAX_DIM = 256
SCREEN_CORRELATION = 1 - 1e-6   # covariance screen; the linear test proper is LINEAR_RESIDUAL on the data
LINEAR_RESIDUAL = 1e-10         # sin(theta) at most this (float64 maps leave ~1e-16 x offset / scale x conditioning)
SMOOTH_RESIDUAL = 1e-6          # monotone test: median quintic residual at most this x the neighbour gap ...
ROUNDING_UNITS = 4.0            # ... or this many unit roundoffs of the values, x (1 + the fit's weight sum)
NEIGHBOURS = 3                  # the quintic through 3 neighbours a side


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


def unit_roundoff(col: np.ndarray) -> float:
    """The unit roundoff of the narrowest float type (float16, float32, float64) that holds every
    value of ``col`` exactly: the precision the values were (at best) computed in."""
    for dtype, u in ((np.float16, 2.0 ** -11), (np.float32, 2.0 ** -24)):
        with np.errstate(over="ignore"):
            if np.array_equal(col.astype(dtype).astype(np.float64), col):
                return u
    return 2.0 ** -53


def _column_keys(a: np.ndarray) -> list[bytes]:
    rounded = np.round(a, 9) + 0.0          # + 0.0 turns -0.0 into 0.0
    return [hashlib.sha256(np.ascontiguousarray(rounded[:, j]).tobytes()).digest() for j in range(a.shape[1])]


def _lagrange_weights(t: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """(N, k) weights w with p(t_i) = sum_k w_ik f(nodes_ik) for the polynomial p through the k nodes."""
    w = np.ones_like(nodes)
    for a in range(nodes.shape[1]):
        for b in range(nodes.shape[1]):
            if a != b:
                w[:, a] *= (t - nodes[:, b]) / (nodes[:, a] - nodes[:, b])
    return w


def _smooth_function(xc: np.ndarray, yc: np.ndarray) -> bool:
    """True when ``yc`` (with the same ranks as ``xc`` or their reverse) is a smooth function of ``xc``
    to the precision of the data (module docstring, test 1): the median over the sorted distinct x
    of |y_i - quintic through its 3 + 3 neighbours at x_i| / allowance_i is at most 1, the allowance
    max(SMOOTH_RESIDUAL x the neighbour gap, ROUNDING_UNITS (1 + sum |w|) (u_y |y| + u_x |slope x|))."""
    order = np.argsort(xc, kind="stable")
    xs, ys = xc[order], yc[order]
    keep = np.r_[True, np.diff(xs) != 0]          # tie groups of x share one y (identical ranks)
    xs, ys = xs[keep], ys[keep]
    m = NEIGHBOURS
    if len(xs) < 4 * m:
        return False
    i = np.arange(m, len(xs) - m)
    off = np.r_[-m:0, 1:m + 1]
    w = _lagrange_weights(xs[i], xs[i[:, None] + off])
    resid = np.abs(ys[i] - (w * ys[i[:, None] + off]).sum(1))
    gap = np.abs(ys[i + 1] - ys[i - 1]) / 2
    slope = gap * 2 / (xs[i + 1] - xs[i - 1])
    y_mag = np.maximum(np.abs(ys[i - m]), np.abs(ys[i + m]))      # monotone: the window's extremes
    x_mag = np.maximum(np.abs(xs[i - m]), np.abs(xs[i + m]))
    rounding = ROUNDING_UNITS * (1 + np.abs(w).sum(1)) * (unit_roundoff(yc) * y_mag + unit_roundoff(xc) * slope * x_mag)
    allowance = np.maximum(SMOOTH_RESIDUAL * gap, rounding)
    return bool(np.median(resid / np.maximum(allowance, np.finfo(float).tiny)) <= 1.0)


def _monotone_relation(raw_x: np.ndarray, raw_y: np.ndarray, cx: np.ndarray, cy: np.ndarray) -> str | None:
    """Test 1, **a monotone map of one column**, on the continuous columns ``raw_x`` (indices ``cx``),
    ``raw_y``.

    A continuous column of Y whose normal scores (ranks,
    :mod:`mibench.estimation.preprocess`) equal +-1 times those of a continuous column of X is a
    candidate (tied values share their mid-rank, so tie groups must coincide).  It is confirmed
    only when y is a *smooth* function of x at the precision of the data (:func:`_smooth_function`):
    with the distinct x sorted, each y_i is predicted by the quintic through its six neighbours
    (three on each side); for a smooth g the residual is ~ h^5 g^(6) (h the spacing), for noise of
    standard deviation s it is ~ s.  The median residual must be within max(1e-6 x the gap
    |y_(i+1) - y_(i-1)| / 2, a few units of rounding of the values): y = x, exp(x), -x^3, 2x + 1
    pass (the quintic leaves far less than that on exp(x)), y = x + s noise fails for
    s >= 1e-6 * gap / 2 (for standardised x and n <= 10^5 pairs, any s >= 1e-10).
    """
    from mibench.estimators.preprocess import normal_scores

    xs, ys = raw_x.copy(), raw_y.copy()
    every = np.arange(len(xs))
    normal_scores(xs, every)
    normal_scores(ys, every)
    keys: dict[bytes, list[int]] = {}
    for cols in (_column_keys(xs), _column_keys(-xs)):
        for k, key in enumerate(cols):
            keys.setdefault(key, []).append(k)
    for jy, key in enumerate(_column_keys(ys)):
        for kx in keys.get(key, ()):
            if _smooth_function(raw_x[:, kx], raw_y[:, jy]):
                return (f"y[:, {cy[jy]}] is a smooth strictly monotone function of x[:, {cx[kx]}] to the "
                        "precision of the data (identical ranks, exact local fit): I(X;Y) is infinite")
    return None


def _linear_residual(xs: np.ndarray, ys: np.ndarray) -> float:
    """The smallest sine of the principal angles between the spans of the centred columns of ``xs``
    and of ``ys``: |Y b - X a| / |Y b| minimised over b (the best a for each), on the data (QR and
    least squares, no covariance)."""
    xc, yc = xs - xs.mean(0), ys - ys.mean(0)
    u, s, _ = np.linalg.svd(yc, full_matrices=False)
    u = u[:, s > 1e-9 * s.max()]                                 # orthonormal basis of Y's span
    beta = np.linalg.lstsq(xc, u, rcond=None)[0]
    r = np.linalg.qr(u - xc @ beta, mode="r")
    return float(np.linalg.svd(r, compute_uv=False).min())


def _linear_relation(raw_x: np.ndarray, raw_y: np.ndarray) -> str | None:
    """Test 2, **a linear map**, on the continuous columns ``raw_x``, ``raw_y`` (each column scaled to unit
    variance first, which leaves canonical correlations unchanged).

    Where there are more pairs than continuous columns plus one (with fewer, n
    centred pairs span at most n - 1 dimensions and a canonical correlation of 1 is forced: no
    evidence), the continuous columns number at most :data:`CCA_MAX_DIM` and their
    largest canonical correlation (from the covariance) exceeds :data:`SCREEN_CORRELATION`, the
    relation is confirmed on the data themselves (:func:`_linear_residual`): the smallest sine of
    the principal angles between the centred column spans, sin(theta) = |residual| / |y| of the best
    linear prediction of a combination of Y's columns from X, computed without forming a
    covariance (which squares it: 1 - r = sin^2 / 2 vanishes below 1e-8 in float64).  It must be
    within :data:`LINEAR_RESIDUAL` or the rounding of the values (y = A x + b, rotations, sums of
    columns); y = x + s noise gives sin(theta) = s / sd(y).
    """
    from mibench.estimation.gaussian_start import canonical_correlations

    if raw_x.shape[0] <= raw_x.shape[1] + raw_y.shape[1] + 1:
        return None     # n centred pairs span at most n - 1 dimensions: a canonical correlation of 1 is forced
    from mibench.estimators.preprocess import zscore

    # each column over its largest deviation first, so values near 1e200 or 1e-200 neither overflow
    # nor underflow in the moments below (the relation and its rounding do not depend on the scale)
    sx, sy = (a / np.where(s > 0, s, 1.0) for a in (raw_x, raw_y)
              for s in [np.max(np.abs(a - np.median(a, axis=0)), axis=0)])
    xs, ys = zscore(sx)[0], zscore(sy)[0]
    z = np.concatenate([xs, ys], axis=1)
    d = z.shape[1]
    r = canonical_correlations(np.cov(z, rowvar=False).reshape(d, d), xs.shape[1])
    if not (r.size and r.max() > SCREEN_CORRELATION):
        return None
    sine = _linear_residual(xs, ys)
    # rounding: the values' relative precision, times their magnitude over their spread (an offset)
    scale = max(unit_roundoff(a[:, j]) * float(np.sqrt(np.mean(s[:, j] ** 2)) / s[:, j].std())
                for a, s in ((raw_x, sx), (raw_y, sy)) for j in range(a.shape[1]))
    if sine <= max(LINEAR_RESIDUAL, 8 * np.sqrt(d) * scale):
        return (f"a linear combination of y's columns equals one of x's (residual {sine:.1e} of its spread, "
                f"canonical correlation {r.max():.12f}): I(X;Y) is infinite")
    return None


def deterministic_dependence(x: np.ndarray, y: np.ndarray, rows: np.ndarray) -> str | None:
    """A one-line description of a deterministic relation between X and Y found on ``rows`` of the
    arrays ``x`` and ``y`` as given (see the module docstring), else None."""
    cx, cy = continuous_columns(x, rows), continuous_columns(y, rows)
    if not (cx.size and cy.size):
        return None
    raw_x, raw_y = x[rows][:, cx], y[rows][:, cy]
    found = _monotone_relation(raw_x, raw_y, cx, cy)
    if found is None and cx.size + cy.size <= CCA_MAX_DIM:
        found = _linear_relation(raw_x, raw_y)
    return found
