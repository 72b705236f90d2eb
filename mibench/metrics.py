"""Bias / variance / MSE of estimates against the true MI, per true-MI level (Lee & Rhee 2024, §5).

Window: for every level, all steps at that level except the first ``burn_in`` steps of the level
(default 0, i.e. the whole segment, as the paper averages over training).  Steps with a
non-finite estimate (a diverged estimator) are excluded and counted in ``diverged_steps``.
``variance`` is the population variance over the window, so ``mse = bias^2 + variance``.
"""
from __future__ import annotations

import math

import numpy as np


def level_windows(true_mi: np.ndarray, burn_in: int = 0):
    """Yield (level, index array) for each constant segment of ``true_mi`` after burn-in."""
    true_mi = np.asarray(true_mi, dtype=float)
    change = np.flatnonzero(np.diff(true_mi)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [len(true_mi)]])
    for s, e in zip(starts, ends):
        yield float(true_mi[s]), np.arange(min(s + burn_in, e), e)


def summarize(task: str, critic: str, names: list[str], true_mi: np.ndarray, estimates: np.ndarray,
              burn_in: int = 0) -> list[dict]:
    """``estimates``: (n_estimators, steps) in bits.  Returns one row per estimator and level."""
    rows = []
    for level, idx in level_windows(true_mi, burn_in):
        for name, est in zip(names, estimates):
            window = est[idx]
            finite = window[np.isfinite(window)]
            if finite.size:
                mean = float(finite.mean())
                var = float(finite.var())
                mse = float(np.mean((finite - level) ** 2))
            else:
                mean = var = mse = float("nan")
            rows.append({"task": task, "estimator": name, "critic": critic, "true_mi": level,
                         "mean_estimate": mean, "bias": mean - level, "variance": var, "mse": mse,
                         "steps": int(finite.size)})
    return rows


def t_halfwidth(values, confidence: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of the mean (NaN for fewer than 2 values)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if v.size < 2:
        return float("nan")
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def t_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """(low, high) of the t interval of the mean; used as seaborn's ``errorbar`` callable."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    m = float(v.mean())
    h = t_halfwidth(v, confidence)
    return (m, m) if not np.isfinite(h) else (m - h, m + h)


def status_counts(statuses) -> str:
    """``["converged", "overfit", "converged"]`` -> ``"converged:2;overfit:1"`` (empty ones left out)."""
    from collections import Counter

    return ";".join(f"{k}:{v}" for k, v in Counter(s for s in statuses if s).items())
