"""The per-column maps every estimator's data path uses: :func:`normal_scores` and :func:`zscore`.

Both are fitted on training rows and applied unchanged to held-out rows.  Each is a fixed strictly
increasing map of one coordinate, and such a map leaves I(X;Y) unchanged (Kraskov et al. 2004, §II),
so the held-out pairs estimate the same MI as the raw ones.  :func:`mibench.estimate`'s critics and the
trained sample estimators (:mod:`mibench.estimators.trained`) use these two functions and no other
copies (docs/estimators.md, "Data rules").
"""
from __future__ import annotations

import numpy as np

#: how far (in normal-score units) a held-out value beyond the training range may go past the training
#: extreme: the tail continues at the end slope and bends towards this bound (tanh), so the map stays
#: strictly increasing while one far outlier cannot reach a normal score that no density model has seen
TAIL_BOUND = 0.05


def normal_scores(a: np.ndarray, train: np.ndarray) -> None:
    """Map every column of ``a`` in place through a strictly increasing function fitted on the rows
    ``train``.

    Each distinct training value goes to the normal quantile of its mid-rank, Phi^-1((rank - 1/2) / n)
    (ties share one score); values between training values are interpolated linearly; a value beyond
    the training range continues from the extreme at the average slope m of the outer 1% of the
    distinct values, bent so that it stays within :data:`TAIL_BOUND` of the extreme:
    s_max + b tanh(m (v - u_max) / b).  Margins become Gaussian whatever their tails, as in
    Gaussian-copula estimators (Ince et al. 2017, Hum. Brain Mapp. 38, §2.3); the bounded tail keeps a
    heavy-tailed outlier of the held-out rows from dominating a held-out log-likelihood (an unbounded
    linear tail put one Student-t (dof 2) outlier at hundreds of standard deviations)."""
    from scipy.special import ndtri

    n = len(train)
    for j in range(a.shape[1]):
        u, counts = np.unique(a[train, j], return_counts=True)
        if len(u) < 2:
            a[:, j] = 0.0
            continue
        s = ndtri((np.cumsum(counts) - 0.5 * counts) / n)
        col = a[:, j].copy()
        out = np.interp(col, u, s)
        lo, hi = col < u[0], col > u[-1]
        k = max(1, len(u) // 100)     # end slopes over the outer 1% of the distinct values
        slope_lo = (s[k] - s[0]) / (u[k] - u[0])
        slope_hi = (s[-1] - s[-1 - k]) / (u[-1] - u[-1 - k])
        out[lo] = s[0] - TAIL_BOUND * np.tanh((u[0] - col[lo]) * slope_lo / TAIL_BOUND)
        out[hi] = s[-1] + TAIL_BOUND * np.tanh((col[hi] - u[-1]) * slope_hi / TAIL_BOUND)
        a[:, j] = out


def zscore(a: np.ndarray, train: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(z, kept): the columns of ``a`` centred and scaled by the mean and standard deviation of the
    rows ``train`` (every row when None), and which columns vary on those rows (a constant column is
    centred, not scaled).

    The columns are divided by their largest absolute deviation before the moments are taken, so a
    column of values near 1e200 or 1e-200 is scaled like any other (squaring it first would overflow
    to inf or underflow to 0 and read as constant): MI does not depend on a column's scale."""
    a = np.asarray(a, dtype=np.float64)
    fit = a if train is None else a[train]
    centre = np.median(fit, axis=0) if len(fit) else np.zeros(a.shape[1])
    span = np.max(np.abs(fit - centre), axis=0) if len(fit) else np.zeros(a.shape[1])
    span = np.where(np.isfinite(span) & (span > 0), span, 1.0)
    scaled = (a - centre) / span
    part = scaled if train is None else scaled[train]
    mean, sd = part.mean(0), part.std(0)
    kept = sd > 0
    return (scaled - mean) / np.where(kept, sd, 1.0), kept
