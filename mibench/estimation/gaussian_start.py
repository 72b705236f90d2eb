"""The Gaussian start of :func:`mibench.estimate`'s critic: the log density ratio of the Gaussian (or,
for heavy-tailed pairs, the Student-t) fitted to the training pairs, plus a gated network residual."""
from __future__ import annotations

import math

import numpy as np
import torch

from mibench.critics.mlp import Critic

GAUSSIAN_MAX_DIM = 256        # d = dim_x + dim_y at most this for the Gaussian part of the critic ...
GAUSSIAN_PAIRS_PER_DIM = 20   # ... and at least this many training pairs per dimension
GAUSSIAN_LR_SCALE = 0.1       # the Gaussian part trains at this fraction of the critic's lr
MAX_CANONICAL_CORRELATION = 1 - 1e-6   # keeps the Gaussian critic finite when a column is copied
DOF_GRID = (1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0)  # Student-t dofs tried by fit_start
DOF_MIN_GAIN_NATS = 5.0       # the t replaces the Gaussian only if its log-likelihood is this much higher
POOL_CHECK_PAIRS = 2000       # held-back training pairs that score the pooled vs the unpooled start
EIGEN_FLOOR = 1e-9            # a scale matrix's eigenvalues are floored at this fraction of the largest


def _canonical_svd(cov: np.ndarray, dim_x: int):
    """(u, r, vt, wx, wy): the SVD u diag(r) vt of the cross-covariance of X and Y whitened
    separately by wx, wy (directions with variance < 1e-9 of the largest dropped); r are the
    canonical correlations, unclipped."""
    s = np.asarray(cov, dtype=np.float64)

    def whitener(block):
        lam, u = np.linalg.eigh(block)
        keep = lam > 1e-9 * max(lam.max(), 1e-300)
        return (u[:, keep] / np.sqrt(lam[keep])).T            # (rank, dim)

    wx, wy = whitener(s[:dim_x, :dim_x]), whitener(s[dim_x:, dim_x:])
    u, r, vt = np.linalg.svd(wx @ s[:dim_x, dim_x:] @ wy.T, full_matrices=False)
    return u, r, vt, wx, wy


def canonical_correlations(cov: np.ndarray, dim_x: int) -> np.ndarray:
    """The canonical correlations of X (the first ``dim_x`` coordinates) and Y under ``cov``, unclipped."""
    return _canonical_svd(cov, dim_x)[1]


def gaussian_log_ratio(cov: np.ndarray, dim_x: int, n_pairs: int | None = None, pool: bool = False):
    """(M_xx, M_xy, M_yy, c) of log N(x, y) / (N(x) N(y)) = c - x'M_xx x / 2 - y'M_yy y / 2 - x'M_xy y
    for zero-mean pairs with covariance ``cov``, built through canonical correlation analysis so
    that rank-deficient blocks (one-hot columns, duplicates) stay finite: whiten X and Y
    separately (dropping directions with variance < 1e-9 of the largest), canonical pairs (a_i, b_i)
    with correlations r_i from the SVD of the whitened cross-covariance; then the ratio is
    sum_i [-log(1 - r_i^2) / 2 - (r_i^2 (a_i^2 + b_i^2) - 2 r_i a_i b_i) / (2 (1 - r_i^2))]
    (bivariate normal density ratio per canonical pair), and c = -sum_i log(1 - r_i^2) / 2 is the
    Gaussian MI of ``cov``.

    With ``n_pairs`` (the pairs ``cov`` was estimated from) each squared canonical correlation is
    debiased first, r_i^2 -> max(0, r_i^2 - k / n_pairs), k = the larger side's rank: under
    independence the k squared sample canonical correlations of a side average about k / n (the
    whitened cross-covariance has k_x * k_y entries of variance 1 / n), so directions that carry only
    sampling noise get weight ~0 instead of fitting it (a plug-in critic on p cross entries loses
    ~p / 2n nats on held-out pairs).  It helps where many directions carry only noise and costs
    nothing where there is nothing to drop (docs/estimators.md, "Why the defaults are what they are").

    ``pool=True`` (with ``n_pairs``) then shrinks the positive debiased correlations towards their
    mean, James-Stein fashion: r_i -> mean + lam (r_i - mean), lam = max(0, 1 - v0 / var(r)), where
    v0 = m / (2 n) (m canonical pairs) is the spread that sampling alone gives m equal correlations
    (the eigenvalues of the symmetric part of an m x m noise matrix with entries of variance 1 / n
    spread with variance m / (2 n), Wigner's semicircle).  Where the true correlations are all equal
    (the cross-covariance a multiple of an orthogonal matrix) this removes the half of the sampling
    noise that spreads them and leaves the half that rotates the directions.  Where they are not equal it
    can cost (docs/estimators.md, "Procedure"), so :func:`fit_start` decides on held-back training pairs."""
    return _log_ratio_and_whiteners(cov, dim_x, n_pairs, pool)[:4]


def _log_ratio_and_whiteners(cov: np.ndarray, dim_x: int, n_pairs: int | None, pool: bool):
    """:func:`gaussian_log_ratio`'s (M_xx, M_xy, M_yy, c), then the whiteners (wx, wy) of its CCA."""
    u, r, vt, wx, wy = _canonical_svd(cov, dim_x)
    if n_pairs:
        r = np.sqrt(np.maximum(r ** 2 - max(wx.shape[0], wy.shape[0]) / n_pairs, 0.0))
        pos = r > 0
        if pool and pos.sum() >= 3:
            rp = r[pos]
            lam = max(0.0, 1.0 - len(r) / (2.0 * n_pairs) / rp.var()) if rp.var() > 0 else 0.0
            r = r.copy()
            r[pos] = rp.mean() + lam * (rp - rp.mean())
    r = np.clip(r, 0.0, MAX_CANONICAL_CORRELATION)
    a, b = u.T @ wx, vt @ wy                                     # canonical directions (k, dx), (k, dy)
    g = 1.0 - r ** 2
    m_xx = a.T @ ((r ** 2 / g)[:, None] * a)
    m_yy = b.T @ ((r ** 2 / g)[:, None] * b)
    m_xy = -a.T @ ((r / g)[:, None] * b)
    return m_xx, m_xy, m_yy, float(-0.5 * np.log(g).sum()), wx, wy


def _inverse_and_logdet(s: np.ndarray) -> tuple[np.ndarray, float]:
    """The inverse and log-determinant of the symmetric positive semi-definite ``s`` with its
    eigenvalues floored at ``EIGEN_FLOOR`` x the largest: finite for a (near-)singular matrix.  A
    nearly deterministic pair (y = x + 1e-3 noise; the pairs held back by :func:`fit_start` can
    leave the rest exactly collinear) makes the fitted scale singular to working precision, where
    ``np.linalg.inv`` raised ``LinAlgError``.  The floor is the one below which :func:`_canonical_svd`
    drops a direction; a direction the data do not vary in gets a large inverse eigenvalue and
    contributes ~0 to the Mahalanobis forms z' S^-1 z, as in the exact pseudo-inverse."""
    lam, u = np.linalg.eigh(np.asarray(s, dtype=np.float64))
    lam = np.maximum(lam, EIGEN_FLOOR * max(float(lam.max()), 1e-300))
    return (u / lam) @ u.T, float(np.log(lam).sum())


def _t_dof(z: np.ndarray, cov: np.ndarray) -> float:
    """The dof of the multivariate t that fits the zero-mean rows ``z`` (covariance ``cov``) best, or
    ``inf`` (Gaussian).

    Profile likelihood over ``DOF_GRID`` with the scale c * S (S the covariance, the scalar c by
    its EM fixed point c = mean(w_i q_i) / d, w_i = (dof + d) / (dof + q_i / c)): for elliptical
    pairs the t's scale matrix is proportional to S, so this costs one pass over the Mahalanobis
    forms q_i instead of an EM fit of the whole matrix per dof."""
    n, d = z.shape
    inverse, logdet = _inverse_and_logdet(cov)
    q = np.einsum("ij,ij->i", z @ inverse, z)
    gaussian = -0.5 * (n * (d * math.log(2 * math.pi) + logdet) + q.sum())
    best = (gaussian + DOF_MIN_GAIN_NATS, math.inf)
    for nu in DOF_GRID:
        c = 1.0
        for _ in range(50):
            c = float(np.mean((nu + d) / (nu + q / c) * q)) / d
        log_norm = math.lgamma((nu + d) / 2) - math.lgamma(nu / 2) - d / 2 * math.log(nu * math.pi)
        ll = n * (log_norm - (logdet + d * math.log(c)) / 2) - (nu + d) / 2 * float(np.log1p(q / (c * nu)).sum())
        best = max(best, (ll, nu))
    return best[1]


def _t_scale(z: np.ndarray, dof: float, scale: np.ndarray, iterations: int) -> np.ndarray:
    """EM for the scale matrix of a zero-mean multivariate t with known dof (Lange, Little & Taylor
    1989, §3): weights w_i = (dof + d) / (dof + z_i' S^-1 z_i), then S = sum_i w_i z_i z_i' / n."""
    n, d = z.shape
    for _ in range(iterations):
        q = np.einsum("ij,ij->i", z @ _inverse_and_logdet(scale)[0], z)
        scale = (z * ((dof + d) / (dof + q))[:, None]).T @ z / n
    return scale


class Start:
    """The fitted start: the scale matrix, the Student-t dof (``inf``: Gaussian) and whether the
    canonical correlations are pooled (:func:`gaussian_log_ratio`)."""

    def __init__(self, scale: np.ndarray, dof: float, pool: bool):
        self.scale, self.dof, self.pool = scale, dof, pool

    def info(self) -> dict:
        return {"dof": None if math.isinf(self.dof) else self.dof, "pooled": self.pool}


def fit_start(z: np.ndarray, dim_x: int) -> Start:
    """The start of :class:`GaussianResidualCritic` for the (standardised, training) pairs ``z``.

    * Tails: the Student-t with the largest likelihood over ``DOF_GRID`` (:func:`_t_dof`; its scale
      matrix then by EM) replaces the Gaussian where its log-likelihood is higher by more than
      ``DOF_MIN_GAIN_NATS`` (a likelihood-ratio statistic of 10 for the one extra parameter, about
      the 0.2 % level of its chi-square).  The log density ratio of a t is the exact critic for
      t-distributed pairs, whose dependence a Gaussian start misses (the shared scale, Arellano-Valle et
      al. 2013); on Gaussian and mixture data the gain stays under the threshold (docs/estimators.md,
      "Procedure").
    * Pooling: the start is built with and without pooled canonical correlations on the training
      pairs less the last ``POOL_CHECK_PAIRS`` (at most a quarter of them), both are scored (DV) on
      those held-back pairs, and the better is kept.  The held-out pairs of ``mibench.estimate`` are
      not used."""
    z = np.asarray(z, dtype=np.float64)
    n, d = z.shape
    cov = (z.T @ z) / n
    full_rank = np.linalg.eigvalsh(cov)[0] > 1e-6 * np.trace(cov) / d
    dof = _t_dof(z, cov) if full_rank else math.inf                       # a t needs an invertible scale
    if math.isinf(dof):
        scale_of = lambda w: (w.T @ w) / len(w)  # noqa: E731
    else:
        scale_of = lambda w: _t_scale(w, dof, (w.T @ w) / len(w), 30)  # noqa: E731
    n_check = min(POOL_CHECK_PAIRS, n // 4)
    pool = False
    if n_check >= 16:
        fit, check = z[:-n_check], z[-n_check:]
        scale = scale_of(fit)
        xc, yc = torch.as_tensor(check[:, :dim_x]), torch.as_tensor(check[:, dim_x:])
        value = {}
        for p in (False, True):
            start = GaussianResidualCritic(torch.nn.Identity(), scale, dim_x, len(fit), dof, p).double()
            with torch.no_grad():
                scores = start.start_scores(xc, yc)
            # DV with every (x_i, y_j) of the check pairs as the sample of the product of marginals
            log_mean_exp = torch.logsumexp(scores.flatten(), 0) - math.log(scores.numel())
            value[p] = float(scores.diagonal().mean() - log_mean_exp)
        pool = value[True] > value[False]
    return Start(cov if math.isinf(dof) else _t_scale(z, dof, cov, 30), dof, pool)


class GaussianResidualCritic(Critic):
    """T(x, y) = log p(x, y) / (p(x) p(y)) + alpha * critic(x, y), p the fitted start.

    With ``dof = inf`` p is the Gaussian with the training pairs' covariance S (the optimal critic if
    the pairs were jointly Gaussian; its bound is what a CCA / Gaussian estimator would report), from
    :func:`gaussian_log_ratio` with the canonical correlations debiased for the ``n_pairs`` they were
    estimated from (and pooled with ``pool``).  With a finite ``dof`` p is the multivariate t_dof with
    scale S, whose margins are t_dof with the blocks of S: with q, q_x, q_y the Mahalanobis forms of
    the joint and of each side, k_x, k_y the ranks of the blocks,
    log p(x, y) / (p(x) p(y)) = c_t - (dof + k_x + k_y) / 2 log(1 + q / dof)
                                    + (dof + k_x) / 2 log(1 + q_x / dof) + (dof + k_y) / 2 log(1 + q_y / dof),
    c_t = the Gaussian MI of S + lgamma((dof + k_x + k_y) / 2) + lgamma(dof / 2) - lgamma((dof + k_x) / 2)
    - lgamma((dof + k_y) / 2) (Arellano-Valle et al. 2013, the t density), and q - q_x - q_y is the
    Gaussian's quadratic form.  ``alpha`` starts at 0, so training starts from the start's critic and
    the network learns only what it misses; any critic gives a valid variational bound, so the
    held-out readout stays a lower-bound estimate."""

    def __init__(self, base: torch.nn.Module, cov: np.ndarray, dim_x: int, n_pairs: int | None = None,
                 dof: float = math.inf, pool: bool = False):
        super().__init__()
        m_xx, m_xy, m_yy, c, wx, wy = _log_ratio_and_whiteners(cov, dim_x, n_pairs, pool)
        t = lambda a: torch.nn.Parameter(torch.as_tensor(a, dtype=torch.float32))  # noqa: E731
        self.base = base
        self.dof = float(dof)
        self.m_xx, self.m_xy, self.m_yy = t(m_xx), t(m_xy), t(m_yy)
        self.tails: list[torch.nn.Parameter] = []
        if not math.isinf(self.dof):
            self.k_x, self.k_y = wx.shape[0], wy.shape[0]
            nu = self.dof
            c += (math.lgamma((nu + self.k_x + self.k_y) / 2) + math.lgamma(nu / 2) - math.lgamma((nu + self.k_x) / 2)
                  - math.lgamma((nu + self.k_y) / 2))
            self.p_x, self.p_y = t(wx.T @ wx), t(wy.T @ wy)       # (pseudo-)inverses of the blocks of S
            self.tails = [self.p_x, self.p_y]
        self.c = t(c)
        self.alpha = torch.nn.Parameter(torch.zeros(()))

    def start_scores(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(..., B, dx), (..., B, dy) -> (..., B, B) scores of the start alone."""
        gx = ((x @ self.m_xx) * x).sum(-1)
        gy = ((y @ self.m_yy) * y).sum(-1)
        quad = gx.unsqueeze(-1) + gy.unsqueeze(-2) + 2 * (x @ self.m_xy) @ y.transpose(-1, -2)   # q - q_x - q_y
        if math.isinf(self.dof):
            return self.c - 0.5 * quad
        nu = self.dof
        qx = ((x @ self.p_x) * x).sum(-1).clamp_min(0).unsqueeze(-1)
        qy = ((y @ self.p_y) * y).sum(-1).clamp_min(0).unsqueeze(-2)
        q = (qx + qy + quad).clamp_min(0)
        return (self.c - (nu + self.k_x + self.k_y) / 2 * torch.log1p(q / nu)
                + (nu + self.k_x) / 2 * torch.log1p(qx / nu) + (nu + self.k_y) / 2 * torch.log1p(qy / nu))

    def start_parameters(self) -> list[torch.nn.Parameter]:
        return [self.m_xx, self.m_xy, self.m_yy, self.c, *self.tails]

    def forward(self, x, y):
        return self.start_scores(x, y) + self.alpha * self.base(x, y)

    def block_scores(self, xb, yb):
        return self.start_scores(xb, yb) + self.alpha * self.base.block_scores(xb, yb)
