"""Input preparation for :func:`mibench.estimate`: arrays, train / held-out split, and the strictly
increasing per-column maps (normal scores, z-scores) that leave I(X;Y) unchanged."""
from __future__ import annotations

import numpy as np

PREPROCESS = ("auto", "normal-scores", "zscore", "none")   # auto: mibench.estimate chooses (its docstring)


def normal_scores(a: np.ndarray, train: np.ndarray) -> None:
    """Map every column of ``a`` in place through a strictly increasing function fitted on the rows
    ``train``: each distinct training value goes to the normal quantile of its mid-rank,
    Phi^-1((rank - 1/2) / n); values between training values are interpolated linearly, values
    beyond them extrapolated with the average slope over the outer 1% of the distinct values (so
    one close pair of extremes cannot blow the slope up).  A fixed strictly increasing map per
    coordinate leaves I(X;Y) unchanged (Kraskov et al. 2004, §II); it gives heavy-tailed, skewed or bounded
    margins Gaussian ones, as in Gaussian-copula MI estimators (Ince et al. 2017, Hum. Brain Mapp.
    38, §2.3), so no coordinate dominates the critic through its tails."""
    from scipy.special import ndtri

    n = len(train)
    for j in range(a.shape[1]):
        u, counts = np.unique(a[train, j], return_counts=True)
        if len(u) < 2:
            a[:, j] = 0.0
            continue
        mid = np.cumsum(counts) - 0.5 * counts
        s = ndtri(mid / n)
        col = a[:, j].copy()
        out = np.interp(col, u, s)
        lo, hi = col < u[0], col > u[-1]
        k = max(1, len(u) // 100)     # end slopes over the outer 1% of the distinct values
        out[lo] = s[0] + (col[lo] - u[0]) * (s[k] - s[0]) / (u[k] - u[0])
        out[hi] = s[-1] + (col[hi] - u[-1]) * (s[-1] - s[-1 - k]) / (u[-1] - u[-1 - k])
        a[:, j] = out




def standardise_columns(arrays, train: np.ndarray, preprocess: str) -> None:
    """Apply ``preprocess`` in place to every array, fitted on the rows ``train``: normal scores
    (:func:`normal_scores`) then a z-score, a z-score alone, or nothing (``"none"``)."""
    for arr in arrays:
        if preprocess == "normal-scores":
            normal_scores(arr, train)
        if preprocess != "none":
            mu, sd = arr[train].mean(0), arr[train].std(0)
            arr -= mu
            arr /= np.where(sd > 0, sd, 1.0)
