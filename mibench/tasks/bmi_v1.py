"""BMI v1: the 40 tasks of Czyż et al., "Beyond Normal: On the Evaluation of Mutual Information
Estimators" (NeurIPS 2023), by BMI's own task ids, re-implemented in torch (vectorised, float64).

Every task is a fixed distribution with a closed-form MI; the transformed tasks keep the MI of their
base distribution because MI is invariant under injective maps applied to X and Y separately (the
paper's §3 and Appendix):

* ``1v1-normal-0.75``: bivariate normal, correlation 0.75; I = -1/2 log(1 - rho^2).
* ``1v1-additive-<eps>``: X ~ U(0, 1), Y = X + N, N ~ U(-eps, eps) (:func:`additive_uniform`).
* ``multinormal-dense-<d>-<d>-0.5`` and ``multinormal-sparse-<d>-<d>-2-2.0`` (the paper's "2-pair",
  :func:`two_pair_cov`): I = 1/2 (log det S_xx + log det S_yy - log det S).
* ``student-identity-<dx>-<dy>-<df>``: multivariate Student-t with identity dispersion, whose MI is
  the dof correction of Arellano-Valle et al. (2013)
  (:func:`mibench.tasks.distributions.student_t_correction_nats`).
* transforms (paper §3, "Transformed distributions"): ``normal_cdf-``, ``half_cube-``, ``asinh-``,
  ``wiggly-``, ``1v1-bimodal-0.75``, ``swissroll_x-`` and ``spiral-`` (the maps below).

BMI also standardises each drawn sample; mibench leaves that to the estimator.
``mibench/tasks/data/bmi_reference.json`` holds BMI's own MI values and sample quantiles
(``benchmarks/peers/bmi_reference.py``), checked by ``tests/tasks/test_bmi_catalogue.py``.  Every
task and map in full: docs/tasks.md, "BMI v1 and v2".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from mibench.tasks.base import FIXED_LEVELS
from mibench.tasks.catalogue import FixedMITask, add_to_catalogue, fixed_mi_bits_text
from mibench.tasks.distributions import chi2_draw, gaussian_mi_from_cov, student_t_correction_nats
from mibench.tasks.registry import TASKS
from mibench.utils.units import LN2

F64 = torch.float64
BIMODAL_LO, BIMODAL_HI = -10.0, 10.0   # bracket of the bimodal inverse CDFs (as BMI's)


@dataclass(frozen=True)
class Dist:
    """A distribution: ``draw(n, generator, device) -> (x, y)`` float64, its dims and MI (nats)."""

    draw: Callable
    dim_x: int
    dim_y: int
    mi_nats: float
    label: str


# ------------------------------------------------------------------------------- base distributions

def multinormal(cov: np.ndarray, dim_x: int, label: str) -> Dist:
    """Zero-mean Gaussian (X, Y) with covariance ``cov``; X the first ``dim_x`` coordinates."""
    cov = np.asarray(cov, dtype=np.float64)
    chol = np.linalg.cholesky(cov)
    dim_y = cov.shape[0] - dim_x

    def draw(n, g, device):
        z = torch.randn(n, cov.shape[0], generator=g, device=device, dtype=F64)
        xy = z @ torch.as_tensor(chol.T, device=device)
        return xy[:, :dim_x], xy[:, dim_x:]

    return Dist(draw, dim_x, dim_y, float(gaussian_mi_from_cov(cov, dim_x)), label)


def binormal(rho: float) -> Dist:
    return multinormal(np.array([[1.0, rho], [rho, 1.0]]), 1, f"bivariate normal, correlation {rho:g}")


def dense_cov(d: int, off_diag: float = 0.5) -> np.ndarray:
    return np.eye(2 * d) * (1.0 - off_diag) + off_diag


def two_pair_cov(dim_x: int, dim_y: int, strength: float = 2.0, pairs: int = 2) -> np.ndarray:
    """The correlation matrix of BMI's sparse latent-variable model (``GaussianLVMParametrization``
    with alpha = beta = 0, lambda = eta = strength, unit noise): every coordinate has variance
    1 + strength^2 and the first ``pairs`` (X_i, Y_i) share strength^2 of it (corr(X_i, Y_i) = 4/5 at
    strength 2), independence elsewhere."""
    cov = np.eye(dim_x + dim_y)
    r = strength ** 2 / (1.0 + strength ** 2)
    for i in range(pairs):
        cov[i, dim_x + i] = cov[dim_x + i, i] = r
    return cov


def additive_uniform(eps: float) -> Dist:
    """X ~ U(0, 1), Y = X + N, N ~ U(-eps, eps): I = eps - log(2 eps) for eps <= 1/2 and 1/(4 eps) above
    (h(Y) of the trapezoidal density minus h(N) = log 2 eps)."""
    mi = eps - math.log(2.0 * eps) if eps <= 0.5 else 0.25 / eps

    def draw(n, g, device):
        u = torch.rand(2, n, 1, generator=g, device=device, dtype=F64)
        return u[0], u[0] + eps * (2.0 * u[1] - 1.0)

    return Dist(draw, 1, 1, mi, f"X ~ U(0,1), Y = X + U(-{eps:g}, {eps:g})")


def student_identity(dim_x: int, dim_y: int, df: int) -> Dist:
    """Multivariate t_df with identity dispersion: Z / sqrt(W / df), W ~ chi^2_df, one W per pair."""

    def draw(n, g, device):
        z = torch.randn(n, dim_x + dim_y, generator=g, device=device, dtype=F64)
        w = chi2_draw(float(df), n, g, device).to(F64)
        xy = z / torch.sqrt(w / df)[:, None]
        return xy[:, :dim_x], xy[:, dim_x:]

    return Dist(draw, dim_x, dim_y, student_t_correction_nats(float(df), dim_x, dim_y),
                f"Student-t dof {df}, identity dispersion")


# ------------------------------------------------------------------------------------ transforms

def mapped(base: Dist, fx=None, fy=None, dim_x: int | None = None, label: str = "") -> Dist:
    """``base`` with injective maps applied to X and / or Y (MI unchanged)."""

    def draw(n, g, device):
        x, y = base.draw(n, g, device)
        return (fx(x) if fx else x), (fy(y) if fy else y)

    return Dist(draw, dim_x or base.dim_x, base.dim_y, base.mi_nats, f"{label} of {base.label}")


def normal_cdf(z):
    return torch.special.ndtr(z)


def half_cube(z):
    return z * torch.sqrt(z.abs())


def wiggly_x(z):
    """Strictly increasing sums of sines: one map for X (:func:`wiggly_y` for Y)."""
    return z + 0.4 * torch.sin(z) + 0.2 * torch.sin(1.7 * z + 1.0) + 0.03 * torch.sin(3.3 * z - 2.5)


def wiggly_y(z):
    return z - 0.4 * torch.sin(0.4 * z) + 0.17 * torch.sin(1.3 * z + 3.5) + 0.02 * torch.sin(4.3 * z - 2.5)


def inverse_cdf(cdf, u: torch.Tensor, lo: float = BIMODAL_LO, hi: float = BIMODAL_HI, iters: int = 64):
    """Vectorised bisection for the inverse of a strictly increasing ``cdf`` on [lo, hi]."""
    a = torch.full_like(u, lo)
    b = torch.full_like(u, hi)
    for _ in range(iters):
        m = 0.5 * (a + b)
        below = cdf(m) < u
        a = torch.where(below, m, a)
        b = torch.where(below, b, m)
    return 0.5 * (a + b)


def bimodal_x_cdf(t):
    return 0.3 * torch.special.ndtr(t) + 0.7 * torch.special.ndtr(t - 5.0)


def bimodal_y_cdf(t):
    return 0.5 * torch.special.ndtr(t + 1.0) + 0.5 * torch.special.ndtr(t - 3.0)


def swissroll(u):
    """(n, 1) values u in (0, 1) -> (n, 2) points (t cos t, t sin t) / 21, t = 3 pi (1 + 2 u) / 2, of the
    Swiss roll (BMI's ``swissroll2d``)."""
    t = 1.5 * math.pi * (1.0 + 2.0 * u[:, 0])
    return torch.stack([t * torch.cos(t), t * torch.sin(t)], dim=1) / 21.0


def spiral(i: int, j: int, speed: float):
    """x -> exp(speed ||x||^2 A) x with A the so(n) generator of plane (i, j) (A[i, j] = -1,
    A[j, i] = 1): a rotation by the angle speed ||x||^2 in that plane."""

    def f(z):
        theta = speed * (z * z).sum(1)
        c, s = torch.cos(theta), torch.sin(theta)
        out = z.clone()
        out[:, i] = c * z[:, i] - s * z[:, j]
        out[:, j] = s * z[:, i] + c * z[:, j]
        return out

    return f


def spiralled(base: Dist) -> Dist:
    return mapped(base, spiral(0, 1, 1.0 / base.dim_x), spiral(1, 2, 1.0 / base.dim_y), label="spiral")


def bimodal(rho: float) -> Dist:
    """The uniform margins of the binormal through the inverse CDFs of two bimodal Gaussian mixtures."""
    uni = mapped(binormal(rho), normal_cdf, normal_cdf, label="normal CDF")
    return mapped(uni, lambda u: inverse_cdf(bimodal_x_cdf, u), lambda u: inverse_cdf(bimodal_y_cdf, u),
                  label="bimodal inverse CDFs")


# ------------------------------------------------------------------------------------ the catalogue

def v1_tasks() -> list[tuple[str, str, Dist]]:
    """(BMI task id, BMI display name, distribution) of the 40 v1 tasks, in BMI's order."""
    rho = 0.75
    base = binormal(rho)
    uniform = mapped(base, normal_cdf, normal_cdf, label="normal CDF")
    t11 = student_identity(1, 1, 1)
    out = [
        ("1v1-normal-0.75", "Bivariate normal 1 × 1", base),
        ("normal_cdf-1v1-normal-0.75", "Normal CDF @ Bivariate normal 1 × 1", uniform),
        ("1v1-additive-0.1", "Uniform 1 × 1 (additive noise=0.1)", additive_uniform(0.1)),
        ("1v1-additive-0.75", "Uniform 1 × 1 (additive noise=0.75)", additive_uniform(0.75)),
        ("1v1-bimodal-0.75", "Bimodal 1 × 1", bimodal(rho)),
        ("wiggly-1v1-normal-0.75", "Wiggly @ Bivariate normal 1 × 1", mapped(base, wiggly_x, wiggly_y, label="wiggly")),
        ("half_cube-1v1-normal-0.75", "Half-cube @ Bivariate normal 1 × 1",
         mapped(base, half_cube, half_cube, label="half-cube")),
        ("student-identity-1-1-1", "Student-t 1 × 1 (dof=1)", t11),
        ("asinh-student-identity-1-1-1", "Asinh @ Student-t 1 × 1 (dof=1)",
         mapped(t11, torch.asinh, torch.asinh, label="asinh")),
        ("swissroll_x-normal_cdf-1v1-normal-0.75", "Swiss roll 2 × 1",
         mapped(uniform, swissroll, dim_x=2, label="Swiss roll")),
    ]
    for d in (2, 3, 5, 25, 50):
        out.append((f"multinormal-dense-{d}-{d}-0.5", f"Multinormal {d} × {d} (dense)",
                    multinormal(dense_cov(d), d, f"dense Gaussian {d} x {d}, off-diagonal 0.5")))
    sparse = {d: multinormal(two_pair_cov(d, d), d, f"2-pair Gaussian {d} x {d}") for d in (2, 3, 5, 25)}
    for d in (2, 3, 5, 25):
        out.append((f"multinormal-sparse-{d}-{d}-2-2.0", f"Multinormal {d} × {d} (2-pair)", sparse[d]))
    for d, df in ((2, 1), (2, 2), (3, 2), (3, 3), (5, 2), (5, 3)):
        out.append((f"student-identity-{d}-{d}-{df}", f"Student-t {d} × {d} (dof={df})", student_identity(d, d, df)))
    tr = (("normal_cdf", "Normal CDF", lambda b: mapped(b, normal_cdf, normal_cdf, label="normal CDF")),
          ("half_cube", "Half-cube", lambda b: mapped(b, half_cube, half_cube, label="half-cube")),
          ("spiral", "Spiral", spiralled),
          ("spiral-normal_cdf", "Spiral @ Normal CDF",
           lambda b: spiralled(mapped(b, normal_cdf, normal_cdf, label="normal CDF"))))
    for prefix, shown, fn in tr:
        for d in (3, 5, 25):
            out.append((f"{prefix}-multinormal-sparse-{d}-{d}-2-2.0", f"{shown} @ Multinormal {d} × {d} (2-pair)",
                        fn(sparse[d])))
    for d, df in ((2, 1), (3, 2), (5, 2)):
        out.append((f"asinh-student-identity-{d}-{d}-{df}", f"Asinh @ Student-t {d} × {d} (dof={df})",
                    mapped(student_identity(d, d, df), torch.asinh, torch.asinh, label="asinh")))
    return out


def make_fixed(task_id: str, shown: str, dist: Dist, catalogue: str, truth: str = "closed form",
               mi_stderr_nats: float | None = None, device="cpu") -> FixedMITask:
    dev = torch.device(device)
    return FixedMITask(task_id, dist.dim_x, dist.dim_y, dist.mi_nats, lambda n, g: dist.draw(n, g, dev),
                       catalogue=catalogue, description=f"{shown}: {dist.label}", truth=truth,
                       mi_stderr_nats=mi_stderr_nats, device=dev)


def register(catalogue: str, tasks, truth: str = "closed form", stderr: dict | None = None) -> None:
    """Register (id, display name, Dist) triples as fixed-MI tasks of ``catalogue``."""
    for task_id, shown, dist in tasks:
        se = (stderr or {}).get(task_id)
        desc = (f"{shown} · {dist.dim_x}x{dist.dim_y} · MI {fixed_mi_bits_text(dist.mi_nats / math.log(2))} bits"
                f" ({truth}{f', stderr {se:.1g} nats' if se else ''})")

        TASKS.add(task_id, desc, _fixed_factory(task_id, shown, dist, catalogue, truth, se))
        FIXED_LEVELS[task_id] = dist.mi_nats / LN2   # run at this level when no MI is given
        add_to_catalogue(catalogue, task_id)


def _fixed_factory(task_id: str, shown: str, dist: Dist, catalogue: str, truth: str, se: float | None):
    """The registry factory of one fixed-MI task: it takes only ``device`` (the task has no parameters,
    and a refusal of a parameter lists none)."""
    def factory(device="cpu"):
        return make_fixed(task_id, shown, dist, catalogue, truth, se, device)

    return factory


V1_TASKS = v1_tasks()
register("bmi-v1", V1_TASKS)
