"""MIENF, mutual information through normalising flows to a base with closed-form MI (Butakov,
Tolmachev, Malanchuk, Neopryatnaya & Frolov, "Mutual information estimation via normalizing flows",
NeurIPS 2024).

Two flows, f_X on x and f_Y on y, each a diffeomorphism of its own variable, so
I(X;Y) = I(f_X(X); f_Y(Y)) exactly (MI is invariant under such maps, the paper's §3).  They are trained
jointly by maximum likelihood of (x, y) under a Gaussian base on the latents (xi, eta) =
(f_X(x), f_Y(y)),

    log p(x, y) = log N([xi, eta]; 0, Sigma) + log|det J_fX(x)| + log|det J_fY(y)|,

and when the base fits, the MI is that of the Gaussian (the two bases: :class:`MIENF`).  The flows are
those of :mod:`.flows` (affine, RealNVP couplings, sinh-arcsinh), the data rules, split and early
stopping those of :mod:`mibench.estimators.trained` (x is modelled, so it is jittered like y).  The MI is
read off the base fitted on the training split (best validation state), not the held-out pairs: the
held-out likelihood chooses the state.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from mibench.estimators.generative.base import DensityModelEstimator, FlowSettings, Split
from mibench.estimators.generative.flows import LOG_2PI, ConditionalFlow


def cca_transforms(x: np.ndarray, y: np.ndarray, ridge: float = 1e-6):
    """(A, B, rho): square invertible maps with x A^T, y B^T white within each variable and
    correlated only pairwise (column i of one with column i of the other, correlation rho_i,
    descending) on these rows."""
    def inv_sqrt(c):
        w, v = np.linalg.eigh(c + ridge * np.eye(c.shape[0]))
        return (v / np.sqrt(np.maximum(w, ridge))) @ v.T

    xc, yc = x - x.mean(0), y - y.mean(0)
    n = x.shape[0]
    wx, wy = inv_sqrt(xc.T @ xc / n), inv_sqrt(yc.T @ yc / n)
    u, s, vt = np.linalg.svd(wx @ (xc.T @ yc / n) @ wy)
    return u.T @ wx, vt @ wy, s


class _GaussianBaseFlows(nn.Module):
    """f_X, f_Y and the Gaussian base of their latents (general or tridiagonal)."""

    def __init__(self, flow_x: ConditionalFlow, flow_y: ConditionalFlow, dx: int, dy: int, tridiagonal: bool):
        super().__init__()
        self.flow_x, self.flow_y = flow_x, flow_y
        self.dx, self.dy, self.tridiagonal = dx, dy, tridiagonal
        d = dx + dy
        if tridiagonal:
            self.rho_raw = nn.Parameter(torch.zeros(min(dx, dy)))
        else:
            self.lower = nn.Parameter(torch.zeros(d, d))
            self.log_diag = nn.Parameter(torch.zeros(d))

    def cholesky(self) -> torch.Tensor:
        return torch.tril(self.lower, -1) + torch.diag(torch.exp(self.log_diag))

    def rho(self) -> torch.Tensor:
        return 0.999999 * torch.tanh(self.rho_raw)

    def log_prob(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        xi, ld_x = self.flow_x.transform(x)
        eta, ld_y = self.flow_y.transform(y)
        return self.base_log_prob(xi, eta) + ld_x + ld_y

    def base_log_prob(self, xi: torch.Tensor, eta: torch.Tensor) -> torch.Tensor:
        d = self.dx + self.dy
        if not self.tridiagonal:
            z = torch.cat([xi, eta], dim=1)
            chol = self.cholesky()
            w = torch.linalg.solve_triangular(chol, z.T, upper=False).T
            return -0.5 * (w * w).sum(1) - self.log_diag.sum() - 0.5 * d * LOG_2PI
        k = self.rho().shape[0]
        rho = self.rho()
        a, b = xi[:, :k], eta[:, :k]
        one_m = 1.0 - rho * rho
        paired = -0.5 * ((a * a - 2 * rho * a * b + b * b) / one_m + torch.log(one_m)).sum(1)
        rest = -0.5 * ((xi[:, k:] ** 2).sum(1) + (eta[:, k:] ** 2).sum(1))
        return paired + rest - 0.5 * d * LOG_2PI

    def cross_correlation(self) -> float:
        """The largest absolute correlation of the base between a latent of x and a latent of y: how much
        dependence the flows brought into the base's linear form."""
        if self.tridiagonal:
            return float(self.rho().abs().max()) if self.rho().numel() else 0.0
        chol = self.cholesky().double()
        sigma = chol @ chol.T
        sd = sigma.diagonal().sqrt()
        corr = sigma / (sd[:, None] * sd[None, :])
        return float(corr[:self.dx, self.dx:].abs().max())

    def mutual_information(self) -> float:
        """The base's MI in nats (:class:`MIENF`)."""
        if self.tridiagonal:
            return float(-0.5 * torch.log1p(-self.rho().double() ** 2).sum())
        chol = self.cholesky().double()
        sigma = chol @ chol.T
        logdet = lambda m: float(torch.linalg.slogdet(m)[1])   # noqa: E731
        return 0.5 * (logdet(sigma[:self.dx, :self.dx]) + logdet(sigma[self.dx:, self.dx:]) - logdet(sigma))


@dataclass(frozen=True)
class MIENFSettings(FlowSettings):
    """``tridiagonal``: the paper's tridiagonal base instead of a general Gaussian one."""

    tridiagonal: bool = False


class MIENF(DensityModelEstimator):
    """``mienf`` / ``mienf-tridiag`` (module docstring); settings: :class:`MIENFSettings`.

    * ``mienf`` -- a general Gaussian base, Sigma = L L^T with a learned Cholesky factor;
      I = 1/2 (log det Sigma_XX + log det Sigma_YY - log det Sigma);
    * ``mienf-tridiag`` -- the paper's tridiagonal base: unit variances and correlations rho_i between
      xi_i and eta_i only (i <= min(dx, dy)), I = -1/2 sum_i log(1 - rho_i^2): the flows must bring the
      dependence into canonical pairs (any Gaussian can be: canonical correlation analysis is linear).

    Elementwise layers and couplings on alternating masks learn that rotation slowly, so the tridiagonal
    variant starts at the linear solution: x and y are first mapped by the training split's CCA transforms
    (one invertible linear map per variable, which leaves the MI unchanged) and rho starts at the canonical
    correlations.  Likewise the general base starts at the training pairs' covariance instead of the
    identity (what either start changes: docs/estimators.md, MIENF).
    """

    name = "mienf"
    models_x = True
    Settings: ClassVar[type] = MIENFSettings

    def __init__(self, **options):
        super().__init__(**options)
        self.tridiagonal = self.settings.tridiagonal
        self._start_rho = self._start_cov = None       # set by prepare() from the training split
        if self.tridiagonal:
            self.name = "mienf-tridiag"
        self.require_flows("realnvp", "maps each side to its Gaussian base with mibench's own flows")

    def prepare(self, split):
        """The base starts at the linear solution (class docstring): the general one at the training
        pairs' covariance (the flows start as the identity), the tridiagonal one at their CCA."""
        self._start_rho = self._start_cov = None
        if not self.tridiagonal:
            self._start_cov = np.cov(np.concatenate([split.x_train, split.y_train], 1).T)
            return split
        a, b, corr = cca_transforms(split.x_train, split.y_train)
        self._start_rho = corr
        return Split(split.x_train @ a.T, split.x_val @ a.T, split.x_test @ a.T,
                     split.y_train @ b.T, split.y_val @ b.T, split.y_test @ b.T)

    def models(self, dx, dy):
        model = _GaussianBaseFlows(self.flow(dx), self.flow(dy), dx, dy, self.tridiagonal)
        start, cov = self._start_rho, self._start_cov    # from the last estimate: used where the shapes match
        with torch.no_grad():
            if self.tridiagonal and start is not None and start.shape == tuple(model.rho_raw.shape):
                model.rho_raw.copy_(torch.atanh(torch.as_tensor(np.clip(start, 0.0, 0.99), dtype=torch.float32)))
            elif cov is not None and cov.shape == (dx + dy, dx + dy):
                chol = np.linalg.cholesky(cov + 1e-6 * np.eye(dx + dy))
                model.lower.copy_(torch.as_tensor(np.tril(chol, -1), dtype=torch.float32))
                model.log_diag.copy_(torch.as_tensor(np.log(np.diag(chol)), dtype=torch.float32))
        return {"mienf": model}

    def loss(self, key, model, x, y):
        return -model.log_prob(x, y)

    def readout(self, models, x, y):
        model = models["mienf"]
        test_nll = float(self.loss("mienf", model, x, y).double().mean())
        value = model.mutual_information()
        if not math.isfinite(value):
            value = math.nan
        return value, {"test_nll": test_nll, "cross_correlation": model.cross_correlation()}
