"""Example sample-based estimators for mibench's plug-in interface.

``GaussianEstimator`` is the Gaussian (canonical-correlation) closed form
I = -1/2 sum_i log(1 - rho_i^2) over the canonical correlations rho_i of x and y (exact for jointly
Gaussian data; Cover & Thomas eq. 8.56), written with numpy only, so the package needs nothing from
mibench.  The other objects are deliberately broken estimators used by mibench's tests.
"""
from __future__ import annotations

import math
import time

import numpy as np


def _whiten(a: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=0)
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    keep = s > s.max() * 1e-10
    return u[:, keep]


def correlation_mi(x, y) -> float:
    """A plain function f(x, y) -> nats (the Gaussian closed form)."""
    x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
    rho = np.linalg.svd(_whiten(x).T @ _whiten(y), compute_uv=False)
    rho = np.clip(rho, 0.0, 1.0 - 1e-12)
    return float(-0.5 * np.sum(np.log1p(-rho ** 2)))


class GaussianEstimator:
    """Gaussian closed form on canonical correlations (example plug-in)."""

    kind = "black-box"
    n_parameters = 0

    def estimate(self, x, y, *, seed: int = 0) -> float:
        return correlation_mi(x, y)


class Raises:
    """Broken on purpose: raises."""

    kind = "black-box"
    n_parameters = 0

    def estimate(self, x, y, *, seed: int = 0) -> float:
        raise RuntimeError("this estimator always fails")


class ReturnsNaN:
    """Broken on purpose: returns NaN."""

    kind = "black-box"
    n_parameters = 0

    def estimate(self, x, y, *, seed: int = 0) -> float:
        return math.nan


class Hangs:
    """Broken on purpose: never returns."""

    kind = "black-box"
    n_parameters = 0

    def estimate(self, x, y, *, seed: int = 0) -> float:
        while True:
            time.sleep(1.0)
