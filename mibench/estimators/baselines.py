"""Classical black-box MI estimators for the sample-based protocol: ``ksg``, ``gaussian``, ``histogram``.

Each is a thin wrapper over the one implementation in :mod:`mibench.disentanglement.backends` (the
disentanglement metrics use the same functions), exposing the sample-estimator interface:
``kind = "black-box"``, ``n_parameters = 0`` and ``estimate(x (n, dx), y (n, dy), *, seed=0) -> nats``.
Unlike the back-ends' ``MIBackend.mi`` the values are **not** clipped at 0, so a benchmark sees each
estimator's real bias and variance.

* ``ksg`` (``ksg-<k>``): Kraskov, Stögbauer & Grassberger (2004), *Estimating mutual information*,
  Phys. Rev. E 69, 066138 — estimator 1 (eq. 8), k = 3, on standardised columns with 1e-10 jitter
  (§II) seeded by ``seed``; no Python loop over samples.  Up to
  :data:`~mibench.disentanglement.backends.KSG_BRUTE_ABOVE` joint dimensions: max-norm, k-d trees
  (``scipy.spatial.cKDTree``); above (k-d trees degrade towards brute force with dimension):
  Euclidean norms in x and y with the joint max of the two — valid for estimator 1, KSG 2004 §II —
  by exact blocked GEMM in torch (vision at 64 x 64, 8,192 joint dimensions, n = 10,000: see
  benchmarks/results/ksg.txt).  The search used is in ``last_info`` and in the sample run's
  ``config.json`` (``estimator_info``).
* ``gaussian``: the Gaussian closed form ½ (log det Σ_x + log det Σ_y − log det Σ_xy) on sample
  covariances, i.e. −½ Σ_i log(1 − ρ_i²) over the canonical correlations ρ_i (Hotelling 1936;
  Cover & Thomas eq. 8.56 for the Gaussian entropies).  Exact for jointly Gaussian data (up to
  sampling bias ~ dx·dy/(2n)), the linear part of the dependence otherwise.  Degenerate directions
  (constant pixels) are dropped; a deterministic linear relation gives ``inf``.
* ``histogram`` (``histogram-<bins>``): plug-in MI on equal-width bins (20 per variable, as
  disentanglement_lib); **one-dimensional x and y only** — anything else is refused with one line.
"""
from __future__ import annotations

import numpy as np

from ..errors import MibenchError


def _pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    from ..disentanglement.checks import as_2d, check_same_rows

    x2, y2 = as_2d(x, "x"), as_2d(y, "y")
    check_same_rows(x=x2, y=y2)
    return np.asarray(x2, dtype=np.float64), np.asarray(y2, dtype=np.float64)


class KSG:
    """Kraskov et al. (2004) estimator 1 (see module docstring)."""

    kind = "black-box"
    n_parameters = 0

    def __init__(self, k: int = 3):
        if int(k) != k or k < 1:
            raise MibenchError(f"ksg needs an integer k >= 1, got {k}")
        self.k = int(k)
        self.name = "ksg" if self.k == 3 else f"ksg-{self.k}"
        self.last_info = ""

    def estimate(self, x, y, *, seed: int = 0) -> float:
        from ..disentanglement.backends import ksg_describe, ksg_mi_continuous

        x, y = _pair(x, y)
        self.last_info = ksg_describe(x.shape[1], y.shape[1], k=self.k)
        return float(ksg_mi_continuous(x, y, k=self.k, seed=seed))


class GaussianCCA:
    """Gaussian / canonical-correlation closed form on sample covariances (see module docstring)."""

    kind = "black-box"
    n_parameters = 0
    name = "gaussian"

    def estimate(self, x, y, *, seed: int = 0) -> float:
        from ..disentanglement.backends import gaussian_mi_samples

        x, y = _pair(x, y)
        return float(gaussian_mi_samples(x, y))


class Histogram:
    """Plug-in MI on equal-width bins, one-dimensional x and y (see module docstring)."""

    kind = "black-box"
    n_parameters = 0

    def __init__(self, bins: int = 20):
        if int(bins) != bins or bins < 2:
            raise MibenchError(f"histogram needs an integer number of bins >= 2, got {bins}")
        self.bins = int(bins)
        self.name = "histogram" if self.bins == 20 else f"histogram-{self.bins}"

    def estimate(self, x, y, *, seed: int = 0) -> float:
        from ..disentanglement.backends import equal_width_bins, plugin_mi

        x, y = _pair(x, y)
        if x.shape[1] != 1 or y.shape[1] != 1:
            raise MibenchError(f"{self.name} bins one variable against one: x has {x.shape[1]} and y "
                               f"{y.shape[1]} dimensions (use ksg, gaussian or a neural estimator)")
        return float(plugin_mi(equal_width_bins(x[:, 0], self.bins), equal_width_bins(y[:, 0], self.bins)))
