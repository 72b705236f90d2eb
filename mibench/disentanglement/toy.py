"""The analytic Gaussian toy model of Tokui & Sato (§5.1, Appendix B) and the entanglement attacks.

Model: y ~ N(0, I_K), z | y ~ N(y, σ² I) (L = K code dimensions).  Attacks (Tokui eqs. 9-10), with
ε ~ N(0, I_L) and the mixing matrix U = I − (2/K) 11ᵀ (orthogonal and symmetric, §4.1):

    redundancy   z̃ = [z; αUz + ε]        synergy   z̃ = [z + αUε; ε]

Both keep z̃ | y linear-Gaussian, z̃ | y ~ N(A y, C), so every mutual information between a set of
factors J and a set of code dimensions S is exact covariance algebra (Appendix B):

    I(y_J; z_S) = ½ log det Σ_SS − ½ log det (Σ_SS − A_SJ A_SJᵀ),   Σ = A Aᵀ + C.

The analytic :class:`~mibench.disentanglement.metrics.InfoTable` built from these values gives the
exact value of every MI-based metric (normalisers are 1: the factors are continuous, Tokui §5.1).
Table 1's closed forms are in :func:`table1_closed_forms`.
"""
from __future__ import annotations

import math

import numpy as np

from mibench.disentanglement.metrics import InfoTable
from mibench.disentanglement.posterior import GaussianPosterior
from mibench.errors import MibenchError
from mibench.utils.checks import as_2d, check_positive_int

ATTACKS = ("none", "redundancy", "synergy")


def mixing_matrix(L: int) -> np.ndarray:
    """U = I − (2/L) 11ᵀ (Tokui §4.1), orthogonal: U Uᵀ = I."""
    return np.eye(L) - (2.0 / L) * np.ones((L, L))


#: the strongest attack accepted, relative to sigma: the exact values come from log-determinants of
#: covariances with entries of order alpha^2 next to ones of order sigma^2, which cancel in float64 as
#: (alpha / sigma)^2 nears 1e16; up to this ratio they agree with Table 1's closed forms to 1e-3 nats
#: (tests/disentanglement/test_toy.py)
MAX_ALPHA_OVER_SIGMA = 1e6


def check_toy_args(K: int, sigma: float, attack: str, alpha: float) -> None:
    check_positive_int(K, "K", minimum=2)
    if not (isinstance(sigma, (int, float)) and math.isfinite(sigma) and sigma > 0):
        raise MibenchError(f"sigma must be a finite number > 0 (Tokui §5.1 keeps MI finite), got {sigma!r}")
    if attack not in ATTACKS:
        raise MibenchError(f"unknown attack {attack!r}; choose from: {', '.join(ATTACKS)}")
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha >= 0):
        raise MibenchError(f"alpha must be a finite number >= 0, got {alpha!r}")
    if alpha > MAX_ALPHA_OVER_SIGMA * sigma:
        top = MAX_ALPHA_OVER_SIGMA * sigma
        raise MibenchError(f"alpha must be at most {MAX_ALPHA_OVER_SIGMA:g} x sigma = {top:g}, got {alpha!r}: "
                           "beyond it the attacked covariances lose the precision the exact values need")


def attack_matrix(L: int, attack: str, alpha: float, U: np.ndarray | None = None) -> np.ndarray:
    """T with z̃ = T [z; ε] (Appendix B); identity on z for ``attack="none"`` (returns (L, 2L))."""
    U = mixing_matrix(L) if U is None else np.asarray(U, dtype=float)
    I, O = np.eye(L), np.zeros((L, L))
    if attack == "none":
        return np.hstack([I, O])
    if attack == "redundancy":
        return np.block([[I, O], [alpha * U, I]])
    if attack == "synergy":
        return np.block([[I, alpha * U], [O, I]])
    raise MibenchError(f"unknown attack {attack!r}; choose from: {', '.join(ATTACKS)}")


def toy_linear_gaussian(K: int, sigma: float, attack: str = "none", alpha: float = 0.0,
                        U: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(A, C) with z̃ | y ~ N(A y, C) for the (attacked) toy model."""
    check_toy_args(K, sigma, attack, alpha)
    T = attack_matrix(K, attack, alpha, U)
    A0 = np.vstack([np.eye(K), np.zeros((K, K))])  # [z; ε] = A0 y + noise
    C0 = np.diag(np.r_[np.full(K, sigma**2), np.ones(K)])
    return T @ A0, T @ C0 @ T.T


def attack_samples(z, attack: str, alpha: float, seed: int = 0, U: np.ndarray | None = None) -> np.ndarray:
    """Apply an entanglement attack (Tokui eqs. 9-10) to samples of any representation z (n, L)."""
    z = as_2d(z, "z (codes)")
    if attack == "none":
        return z
    check_toy_args(2, 1.0, attack, alpha)
    eps = np.random.default_rng(seed).standard_normal(z.shape)
    return np.hstack([z, eps]) @ attack_matrix(z.shape[1], attack, alpha, U).T


def attack_posterior(post: GaussianPosterior, attack: str, alpha: float, seed: int = 0,
                     U: np.ndarray | None = None) -> GaussianPosterior:
    """The attacked encoder p(z̃|x) (Tokui §4.1: Gaussian with mean T[μ; 0], cov T diag(Σ, I) Tᵀ)."""
    if attack == "none":
        return post
    if post.cov_kind != "shared":
        raise MibenchError("attack_posterior supports encoders with one shared covariance")
    L = post.dim
    T = attack_matrix(L, attack, alpha, U)
    eps = np.random.default_rng(seed).standard_normal(post.samples.shape)
    cov = T @ np.block([[post.cov, np.zeros((L, L))], [np.zeros((L, L)), np.eye(L)]]) @ T.T
    mean = np.hstack([post.mean, np.zeros_like(post.mean)]) @ T.T
    samples = np.hstack([post.samples, eps]) @ T.T
    A = None if post.A is None else T @ np.vstack([post.A, np.zeros_like(post.A)])
    return GaussianPosterior(samples, mean, cov, "shared", A, post.factors)


def sample_toy(n: int, K: int = 5, sigma: float = 0.1, attack: str = "none", alpha: float = 0.0,
               seed: int = 0) -> tuple[np.ndarray, GaussianPosterior]:
    """Factors y (n, K) and the (attacked) toy encoder as a :class:`GaussianPosterior` (with draws).

    The same seed gives the same y, z and ε for every attack and α, so curves over α are smooth.
    """
    n = check_positive_int(n, "n", minimum=10)
    check_toy_args(K, sigma, attack, alpha)
    rng = np.random.default_rng(seed)
    y = rng.standard_normal((n, K))
    noise = rng.standard_normal((n, K))
    base = GaussianPosterior.linear(y, np.eye(K), sigma**2 * np.eye(K), noise=noise)
    return y, attack_posterior(base, attack, alpha, seed=seed + 1)


def toy_process(K: int = 5, sigma: float = 0.1, attack: str = "none", alpha: float = 0.0, seed: int = 0):
    """The toy model as a generative process, for the interventional scores (BetaVAE, FactorVAE).

    Returns ``(sample_factors, represent)``: ``sample_factors(n, rng)`` draws y ~ N(0, I_K) and
    ``represent(y)`` encodes z = y + σ·noise, then applies the attack z̃ = T [z; ε] (Tokui eqs. 9-10)
    with fresh noise on every call (from a generator seeded with ``seed``).
    """
    check_toy_args(K, sigma, attack, alpha)
    T = attack_matrix(K, attack, alpha)
    noise_rng = np.random.default_rng(seed)

    def sample_factors(n, rng):
        return rng.standard_normal((n, K))

    def represent(y):
        y = np.asarray(y, dtype=float)
        if y.ndim != 2 or y.shape[1] != K:
            raise MibenchError(f"toy_process represent(y) needs factors of shape (n, {K}), got {y.shape}")
        z = y + sigma * noise_rng.standard_normal(y.shape)
        return np.hstack([z, noise_rng.standard_normal(y.shape)]) @ T.T

    return sample_factors, represent


# ---------------------------------------------------------------------------------------------
# analytic mutual information and the analytic table
# ---------------------------------------------------------------------------------------------

def gaussian_subset_mi(A: np.ndarray, C: np.ndarray, factors, dims) -> float:
    """I(y_J; z_S) = ½ log det Σ_SS − ½ log det Σ_{SS|J} for z | y ~ N(A y, C), y ~ N(0, I)."""
    J = np.atleast_1d(np.asarray(factors, dtype=int))
    S = np.atleast_1d(np.asarray(dims, dtype=int))
    sigma = (A @ A.T + C)[np.ix_(S, S)]
    a = A[np.ix_(S, J)]
    _, ld = np.linalg.slogdet(sigma)
    _, ld_cond = np.linalg.slogdet(sigma - a @ a.T)
    return float(0.5 * (ld - ld_cond))


def analytic_table(K: int = 5, sigma: float = 0.1, attack: str = "none", alpha: float = 0.0,
                   U: np.ndarray | None = None) -> InfoTable:
    """The exact :class:`InfoTable` (pair, rest, full, code_y) of the (attacked) toy model."""
    A, C = toy_linear_gaussian(K, sigma, attack, alpha, U)
    L = A.shape[0]
    dims = np.arange(L)
    pair = np.array([[gaussian_subset_mi(A, C, k, [l]) for l in range(L)] for k in range(K)])
    rest = np.array([[gaussian_subset_mi(A, C, k, dims[dims != l]) for l in range(L)] for k in range(K)])
    full = np.array([gaussian_subset_mi(A, C, k, dims) for k in range(K)])
    code_y = np.array([gaussian_subset_mi(A, C, np.arange(K), [l]) for l in range(L)])
    return InfoTable(pair=pair, rest=rest, full=full, code_y=code_y, normaliser=np.ones(K),
                     discrete=np.zeros(K, dtype=bool), backend="analytic")


def table1_closed_forms(attack: str, alpha: float, sigma: float = 0.1, K: int = 5) -> dict[str, float]:
    """Tokui & Sato Table 1 (and Appendix B's R / C terms), nats, unnormalised.

    Keys: ``mig``, ``unibound``, ``u_upper_unclipped`` (Table 1's "U upper bound"), ``u_upper``
    (eq. 7's clipped form, derived here: equal to Table 1's under redundancy, equal to UniBound under
    synergy), and ``redundancy`` / ``synergy`` (Appendix B's exact R and C, which the bounds pin down).
    """
    check_toy_args(K, sigma, attack, alpha)
    s2, a2 = sigma**2, alpha**2
    clean = 0.5 * math.log(1.0 + 1.0 / s2)
    if attack == "none":
        return {"mig": clean, "unibound": clean, "u_upper_unclipped": clean, "u_upper": clean,
                "redundancy": 0.0, "synergy": 0.0}
    if attack == "redundancy":
        c = (1.0 - 2.0 / K) ** 2
        uni = 0.5 * math.log((1 + s2) * (1 + a2 * s2) / (s2 * (1 + a2 * (1 + s2))))
        return {
            "mig": 0.5 * math.log((1 + s2) * (1 + a2 * (1 + s2 - c)) / (s2 * (1 + a2 * (1 + s2)))),
            "unibound": uni, "u_upper_unclipped": uni, "u_upper": uni,
            "redundancy": 0.5 * math.log((1 + a2 * (1 + s2)) / (1 + a2 * s2)), "synergy": 0.0,
        }
    syn = 0.5 * math.log(1.0 + 1.0 / (a2 + s2))
    return {
        "mig": syn, "unibound": syn, "u_upper_unclipped": clean, "u_upper": syn,
        "redundancy": 0.0, "synergy": 0.5 * math.log((1 + s2) * (s2 + a2) / (s2 * (1 + s2 + a2))),
    }
