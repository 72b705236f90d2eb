"""Whether a sample has a density in its coordinates: the TwoNN intrinsic dimension (Facco et al., Sci. Rep.
2017) of each side, beside that of a standard Gaussian sample of the same size and dimension.

Why: the generative estimators read I(X;Y) from densities (h(Y) - h(Y|X), flows, score or velocity fields).
Data on a manifold of lower dimension than their coordinates have no density there -- mutinfo's images (a
2-d latent rendered into 256 pixels), BMI's Swiss roll (a curve in the plane) -- and the MI is a difference
of entropies that diverge; the jitter these estimators add makes the densities exist but leaves them on a
tube whose width, not the dependence, sets the numbers.  There the trained estimators report ``no_density``
in place of ``converged``, ``overfit`` or ``still_improving`` (docs/estimators.md, "Statuses").  The TwoNN
estimate is biased low in many dimensions (a 50-d Gaussian reads about 30 from 2,000 points), hence the
comparison with a Gaussian sample of the same shape rather than with the coordinate count.
"""
from __future__ import annotations

import math

import numpy as np

MAX_ROWS = 2000        # the rows the estimate reads (a seeded subsample): O(rows^2 dim) distances
LOW_RATIO = 0.6        # a side is low-dimensional below this share of the Gaussian sample's estimate
MIN_DISTINCT = 200     # fewer distinct rows (or a column with fewer distinct values) than this: discrete
                       # (:func:`discrete_sides`), no density either


def two_nn_dimension(a: np.ndarray) -> float:
    """TwoNN intrinsic dimension of the rows of ``a``: log(r2 / r1) of the rows' two nearest-neighbour
    distances is exponential with rate d (Facco et al. 2017), read off its median as log 2 / median, which a
    few nearly equal rows (log ratios of 20 and more) do not move as they move the mean.  Distances are
    computed exactly, not through the Gram matrix, whose rounding reads nearly equal rows as equal;
    duplicated rows are read once.  NaN with fewer than :data:`MIN_DISTINCT` distinct rows.  Cost
    O(m^2 d): pass a subsample of large data (:func:`low_dimensional_sides` reads at most :data:`MAX_ROWS`
    rows)."""
    import torch

    t = torch.as_tensor(np.unique(np.asarray(a, dtype=np.float64), axis=0))
    m = t.shape[0]
    if m < MIN_DISTINCT:
        return math.nan
    logs = []
    for i in range(0, m, 500):
        d = torch.cdist(t[i:i + 500], t, compute_mode="donot_use_mm_for_euclid_dist")
        d[torch.arange(d.shape[0]), torch.arange(i, i + d.shape[0])] = math.inf
        r = d.topk(2, largest=False).values
        logs.append(torch.log(r[:, 1] / r[:, 0]))
    median = float(torch.cat(logs).median())
    return math.log(2) / median if median > 0 else math.inf


def low_dimensional_sides(x: np.ndarray | None, y: np.ndarray | None, seed: int) -> dict:
    """{side: [estimate, Gaussian sample's estimate, coordinates]} for each given side of two or more
    continuous coordinates (columns with at least :data:`MIN_DISTINCT` distinct values among the rows read)
    whose TwoNN estimate on at most :data:`MAX_ROWS` rows (seeded) is below :data:`LOW_RATIO` times that of a
    standard Gaussian sample of the same shape; empty where the sides have a density."""
    rng = np.random.default_rng([seed, 0x2AA])
    out = {}
    for side, a in (("x", x), ("y", y)):
        if a is None:
            continue
        a = np.asarray(a, dtype=np.float64).reshape(len(a), -1)
        rows = a[rng.permutation(len(a))[:MAX_ROWS]]
        continuous = [j for j in range(rows.shape[1]) if len(np.unique(rows[:, j])) >= MIN_DISTINCT]
        rows = rows[:, continuous]
        if rows.shape[1] < 2:
            continue
        found = two_nn_dimension(rows)
        ref = two_nn_dimension(rng.standard_normal(rows.shape))
        if math.isfinite(found) and found < LOW_RATIO * ref:
            out[side] = [round(found, 2), round(ref, 2), int(rows.shape[1])]
    return out


def discrete_sides(x: np.ndarray | None, y: np.ndarray | None) -> dict:
    """{side: {"discrete_columns": k, "coordinates": d}} for each given side with k > 0 discrete columns:
    fewer distinct values than :data:`MIN_DISTINCT`, or than half the rows where there are fewer rows
    (class labels, binary or count data).  Such a side has no density either: the jitter the generative
    estimators add turns each value into a narrow bump, and what they read is set by how well they model those
    bumps (a density model of 4 class labels read half their MI, reporting ``converged``)."""
    out = {}
    for side, a in (("x", x), ("y", y)):
        if a is None:
            continue
        a = np.asarray(a, dtype=np.float64).reshape(len(a), -1)
        least = min(MIN_DISTINCT, a.shape[0] // 2)
        k = sum(len(np.unique(col)) < least for col in a.T)
        if k:
            out[side] = {"discrete_columns": int(k), "coordinates": int(a.shape[1])}
    return out


def no_density_reason(sides: dict) -> str:
    """The one-line reason of status ``no_density`` for the result of :func:`low_dimensional_sides` and
    :func:`discrete_sides`."""
    discrete = {side: v for side, v in sides.items() if isinstance(v, dict)}
    if discrete:
        parts = ", ".join(f"{side} has {v['discrete_columns']} of {v['coordinates']}" for side, v in discrete.items())
        return (f"discrete values ({parts} columns with few distinct values): the data have no density, and a "
                "density-based estimate of the jittered values is not reliable (prefer a critic bound, ksg or "
                "histogram there)")
    parts = ", ".join(f"{side} {v[0]:g} of {v[2]} coordinates (a Gaussian sample: {v[1]:g})"
                      for side, v in sides.items())
    return (f"the data lie on a manifold of lower dimension than their coordinates (TwoNN dimension {parts}): "
            "they have no density there, and a density-based estimate is not reliable")
