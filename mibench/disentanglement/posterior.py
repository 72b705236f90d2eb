"""Gaussian encoder posteriors p(z|x) and Tokui & Sato's exact log-marginal MI estimator (§3.5, eq. 8).

A :class:`GaussianPosterior` describes, for each of the n data points, the encoder's Gaussian
p(z|x_i) = N(mean_i, cov_i) together with one draw z_i ~ p(z|x_i).  Sample-based MI back-ends use
the draws; the ``posterior`` back-end uses the densities:

    I(y_k; z_S) = E[log p(z_S | y_k)] - E[log p(z_S)]                       (Tokui eq. 8)

with p(z_S | x) the Gaussian marginal of p(z|x) on the dimensions S (mean_S, cov_SS, §3.5) and

* **discrete factors** (Tokui's setting): p(z_S|y_k) = mean over D(y_k) of p(z_S|x) and
  p(z_S) = mean over D of p(z_S|x), both sums computed exactly over the data set; the outer
  expectation uses the one draw per data point (so every stratum D(y_k) is sampled in proportion);
* **linear-Gaussian encoders of standard-normal factors** (the analytic toy model of Tokui §5.1 and
  its attacked versions, eqs. 9-10): mean_i = A y_i with y ~ N(0, I_K) and a shared covariance C.
  The sums over D become Gaussian integrals, so the log-marginals are exact:
  p(z_S) = N(0, A_S A_Sᵀ + C_SS) and p(z_S | y_J) = N(A_SJ y_J, A_S A_Sᵀ + C_SS - A_SJ A_SJᵀ).
  The estimate then differs from the true MI only by Monte Carlo error over the n draws.

A continuous factor without the linear-Gaussian structure has D(y_k) = {one point}: eq. 8 does not
apply and the back-end says so (:class:`~mibench.disentanglement.backends.BackendUnsupported`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mibench.errors import MibenchError
from mibench.utils.checks import as_2d, check_same_rows

LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class GaussianPosterior:
    """Encoder posteriors p(z|x_i) = N(mean_i, cov_i), i = 1..n, and one draw from each.

    ``cov_kind`` says how ``cov`` reads: "shared" (L, L), "diag" (n, L) variances per data point, or
    "full" (n, L, L) per data point.
    ``A`` and ``factors`` are set only for a linear-Gaussian encoder of standard-normal factors:
    mean = factors @ A.T, factors ~ N(0, I_K) (see the module docstring).
    """

    samples: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    cov_kind: str = "shared"
    A: np.ndarray | None = None
    factors: np.ndarray | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        n, L = self.mean.shape
        if self.samples.shape != (n, L):
            raise MibenchError(f"posterior samples must have shape {(n, L)} like the means, got {self.samples.shape}")
        expected = {"shared": (L, L), "diag": (n, L), "full": (n, L, L)}
        if self.cov_kind not in expected:
            raise MibenchError(f"cov_kind must be one of {sorted(expected)}, got {self.cov_kind!r}")
        if self.cov.shape != expected[self.cov_kind]:
            raise MibenchError(f"a {self.cov_kind!r} posterior cov must have shape {expected[self.cov_kind]}, "
                               f"got {self.cov.shape}")
        if self.A is not None:
            if self.cov_kind != "shared":
                raise MibenchError("a linear-Gaussian posterior needs one shared (L, L) covariance")
            if self.factors is None or self.A.shape != (L, self.factors.shape[1]):
                raise MibenchError("a linear-Gaussian posterior needs factors (n, K) and A (L, K)")

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_mean_std(cls, mean, std, seed: int = 0) -> "GaussianPosterior":
        """Mean-field encoder: p(z|x_i) = N(mean_i, diag(std_i²)); draws one z_i per point."""
        mean = as_2d(mean, "mean")
        std = as_2d(std, "std")
        if std.shape != mean.shape:
            raise MibenchError(f"std must have the same shape as mean {mean.shape}, got {std.shape}")
        if np.any(std <= 0):
            raise MibenchError("std must be > 0 everywhere")
        rng = np.random.default_rng(seed)
        samples = mean + std * rng.standard_normal(mean.shape)
        return cls(samples=samples, mean=mean, cov=std**2, cov_kind="diag")

    @classmethod
    def linear(cls, factors, A, cov, seed: int = 0, noise: np.ndarray | None = None) -> "GaussianPosterior":
        """Linear-Gaussian encoder z | y ~ N(A y, cov) of standard-normal factors y (n, K)."""
        y = as_2d(factors, "factors")
        A = np.atleast_2d(np.asarray(A, dtype=float))
        cov = np.atleast_2d(np.asarray(cov, dtype=float))
        L = A.shape[0]
        if A.shape[1] != y.shape[1] or cov.shape != (L, L):
            raise MibenchError(f"A must be (L, K={y.shape[1]}) and cov (L, L); got A {A.shape}, cov {cov.shape}")
        mean = y @ A.T
        if noise is None:
            noise = np.random.default_rng(seed).standard_normal(mean.shape)
        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            raise MibenchError("cov must be symmetric positive definite") from None
        return cls(samples=mean + noise @ chol.T, mean=mean, cov=cov, cov_kind="shared", A=A, factors=y)

    # -- views ----------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.mean.shape[0]

    @property
    def dim(self) -> int:
        return self.mean.shape[1]

    def subset(self, dims) -> "GaussianPosterior":
        """The marginal posterior of the code dimensions ``dims`` (Tokui §3.5: mean_S, cov_SS)."""
        S = np.asarray(dims, dtype=int)
        if self.cov_kind == "shared":
            cov = self.cov[np.ix_(S, S)]
        elif self.cov_kind == "diag":
            cov = self.cov[:, S]
        else:
            cov = self.cov[:, S][:, :, S]
        A = None if self.A is None else self.A[S]
        return GaussianPosterior(self.samples[:, S], self.mean[:, S], cov, self.cov_kind, A, self.factors)


# ---------------------------------------------------------------------------------------------
# Gaussian log-densities, vectorised
# ---------------------------------------------------------------------------------------------

def log_normal(x: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """log N(x_i; mean_i, cov) row-wise, with one shared (m, m) covariance."""
    m = x.shape[1]
    chol = np.linalg.cholesky(cov)
    w = np.linalg.solve(chol, (x - mean).T)
    logdet = 2.0 * np.log(np.diag(chol)).sum()
    return -0.5 * (np.einsum("ij,ij->j", w, w) + logdet + m * LOG_2PI)


def log_density_matrix(post: GaussianPosterior, chunk: int = 256) -> np.ndarray:
    """M[i, j] = log p(z_i | x_j) for the posterior's draws z_i and every data point x_j (n x n).

    Cached on the posterior object, so the factors of one code subset share one matrix.
    """
    if "M" not in post._cache:
        post._cache["M"] = _log_density_matrix(post, chunk)
    return post._cache["M"]


def _log_density_matrix(post: GaussianPosterior, chunk: int) -> np.ndarray:
    z, mu, cov = post.samples, post.mean, post.cov
    n, m = z.shape
    if post.cov_kind == "shared":
        chol = np.linalg.cholesky(cov)
        wz = np.linalg.solve(chol, z.T).T
        wm = np.linalg.solve(chol, mu.T).T
        d2 = (wz**2).sum(1)[:, None] + (wm**2).sum(1)[None, :] - 2.0 * wz @ wm.T
        logdet = 2.0 * np.log(np.diag(chol)).sum()
        return -0.5 * (np.maximum(d2, 0.0) + logdet + m * LOG_2PI)
    out = np.empty((n, n))
    if post.cov_kind == "diag":
        logdet = np.log(cov).sum(1)
        for j0 in range(0, n, chunk):
            j1 = min(n, j0 + chunk)
            diff = z[:, None, :] - mu[None, j0:j1, :]
            out[:, j0:j1] = -0.5 * ((diff**2 / cov[None, j0:j1, :]).sum(-1) + logdet[None, j0:j1] + m * LOG_2PI)
        return out
    chol = np.linalg.cholesky(cov)  # (n, m, m)
    logdet = 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1)
    for j0 in range(0, n, chunk):
        j1 = min(n, j0 + chunk)
        diff = z[None, :, :] - mu[j0:j1, None, :]  # (c, n, m)
        w = np.linalg.solve(chol[j0:j1], np.swapaxes(diff, 1, 2))  # (c, m, n)
        out[:, j0:j1] = (-0.5 * ((w**2).sum(1) + logdet[j0:j1, None] + m * LOG_2PI)).T
    return out


def _logmeanexp_rows(M: np.ndarray) -> np.ndarray:
    top = M.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(M - top).mean(axis=1, keepdims=True))).ravel()


def tokui_eq8_discrete(labels: np.ndarray, M: np.ndarray) -> float:
    """Tokui eq. 8 with exact sums: mean_i [log mean_{j in D(y_i)} p(z_i|x_j) - log mean_j p(z_i|x_j)]."""
    log_marg = _logmeanexp_rows(M)
    log_cond = np.empty_like(log_marg)
    for c in np.unique(labels):  # loop over strata D(y_k = c), not over samples
        idx = np.flatnonzero(labels == c)
        log_cond[idx] = _logmeanexp_rows(M[np.ix_(idx, idx)])
    return float(np.mean(log_cond - log_marg))


def linear_gaussian_mi(post: GaussianPosterior, cols: np.ndarray) -> float:
    """Eq. 8 with exact Gaussian log-marginals for a linear-Gaussian encoder (module docstring)."""
    A, C, y = post.A, post.cov, post.factors
    sigma = A @ A.T + C
    a = A[:, cols]
    cond_cov = sigma - a @ a.T
    z = post.samples
    log_cond = log_normal(z, y[:, cols] @ a.T, cond_cov)
    log_marg = log_normal(z, np.zeros_like(z), sigma)
    return float(np.mean(log_cond - log_marg))


def match_factor_columns(post: GaussianPosterior, y: np.ndarray) -> np.ndarray | None:
    """Indices of the posterior's factor columns equal to the columns of ``y``; None if any is missing."""
    if post.factors is None or post.factors.shape[0] != y.shape[0]:
        return None
    cols = []
    for c in range(y.shape[1]):
        hits = np.flatnonzero(np.all(post.factors == y[:, [c]], axis=0))
        if hits.size == 0:
            return None
        cols.append(int(hits[0]))
    return np.asarray(cols)


def check_posterior_rows(y: np.ndarray, post: GaussianPosterior) -> None:
    check_same_rows(y=y, z=post.samples)
