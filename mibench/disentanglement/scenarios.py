"""Synthetic settings of the papers, so their metrics can be run where the papers ran them.

* :func:`cosine_scenario` — Almudévar et al. (NeurIPS) §5, Table 1 (Cos0 … Cos3D) and Appendix C,
  Table 9 (CosNuis2I … CosNuis3D): y_1, y_2 ~ U[0, π), y_3 independent (…I) or (y_1 + y_2)/2 (…D),
  z_j cosines of combinations in [0, π) (injective), z_4 ~ U[0, 1] (absent in Cos0), nuisance
  n ~ U[0, π).
* :func:`iclr_minimality_scenario`, :func:`iclr_sufficiency_scenario`,
  :func:`iclr_dependent_scenario` — Almudévar et al. (ICLR) §5.1: A(α) of eq. 9, nuisance β,
  non-injectivity γ, dependence δ.  :func:`iclr_linear_mixing` — §5.2's z = A y, a_ii = 1 − α,
  a_ij ~ U[0, α).
* ``sepliarskaia_*`` — the worked examples of Sepliarskaia et al. §3.

Every generator returns ``(y, z)`` as float arrays (n × K, n × L) and takes a ``seed``.
"""
from __future__ import annotations

import math

import numpy as np

from mibench.errors import MibenchError
from mibench.utils.checks import check_positive_int

PI = math.pi

# Table 1 and Table 9 of Almudévar et al. (NeurIPS).  Each entry: (y3 rule, [z_1, z_2, z_3] as
# functions of (y1, y2, y3, n)).  Table 9 is partly garbled in the text we have: its "Cos1D" column
# prints z_3 = cos(y_2) and "CosNuis2D" prints z_1 = cos((y_1 + y_2)/2), z_2 = cos((y_1 + y_3)/2).
# Their Table 10/11 rows (z_1, z_2 fully modular and minimal, z_3 partly) match Cos1D of Table 1 and
# CosNuis2D = CosNuis2I with dependent y_3, which is what we implement.
_COS = {
    "cos0": ("indep", [lambda a, b, c, n: a, lambda a, b, c, n: b, lambda a, b, c, n: c]),
    "cos1i": ("indep", [lambda a, b, c, n: a, lambda a, b, c, n: b, lambda a, b, c, n: c]),
    "cos2i": ("indep", [lambda a, b, c, n: a, lambda a, b, c, n: b, lambda a, b, c, n: (3 * a + b) / 4]),
    "cos3i": ("indep", [lambda a, b, c, n: (a + b) / 2, lambda a, b, c, n: (a + c) / 2,
                        lambda a, b, c, n: (b + c) / 2]),
    "cos1d": ("dep", [lambda a, b, c, n: a, lambda a, b, c, n: b, lambda a, b, c, n: c]),
    "cos2d": ("dep", [lambda a, b, c, n: a, lambda a, b, c, n: b, lambda a, b, c, n: (3 * a + b) / 4]),
    "cos3d": ("dep", [lambda a, b, c, n: (a + b) / 2, lambda a, b, c, n: (a + c) / 2, lambda a, b, c, n: (b + c) / 2]),
    "cosnuis2i": ("indep", [lambda a, b, c, n: a, lambda a, b, c, n: b, lambda a, b, c, n: (c + n) / 2]),
    "cosnuis3i": ("indep", [lambda a, b, c, n: (a + b) / 2, lambda a, b, c, n: (a + c) / 2,
                            lambda a, b, c, n: (b + c + 2 * n) / 4]),
    "cosnuis2d": ("dep", [lambda a, b, c, n: a, lambda a, b, c, n: b, lambda a, b, c, n: (c + n) / 2]),
    "cosnuis3d": ("dep", [lambda a, b, c, n: (a + b) / 2, lambda a, b, c, n: (a + c) / 2,
                          lambda a, b, c, n: (b + c + 2 * n) / 4]),
}
COSINE_SCENARIOS = ("Cos0", "Cos1I", "Cos2I", "Cos3I", "Cos1D", "Cos2D", "Cos3D",
                    "CosNuis2I", "CosNuis3I", "CosNuis2D", "CosNuis3D")


def cosine_scenario(name: str, n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Almudévar (NeurIPS) Table 1 / Table 9 scenario ``name``: y (n × 3), z (n × 3 or 4)."""
    key = str(name).strip().lower()
    if key not in _COS:
        raise MibenchError(f"unknown cosine scenario {name!r}; choose from: {', '.join(COSINE_SCENARIOS)}")
    n = check_positive_int(n, "n", minimum=2)
    rng = np.random.default_rng(seed)
    y1, y2, y3, nuis = rng.uniform(0.0, PI, (4, n))
    if _COS[key][0] == "dep":
        y3 = (y1 + y2) / 2
    z = [np.cos(f(y1, y2, y3, nuis)) for f in _COS[key][1]]
    if key != "cos0":
        z.append(rng.uniform(0.0, 1.0, n))
    return np.stack([y1, y2, y3], axis=1), np.stack(z, axis=1)


def mixing_a(alpha: float, size: int = 4) -> np.ndarray:
    """A(α) of Almudévar ICLR eq. 9: 1 − α on the diagonal, α on the cyclic sub-diagonal."""
    if not 0.0 <= alpha <= 0.5:
        raise MibenchError(f"alpha must be in [0, 0.5] (ICLR eq. 9), got {alpha}")
    return (1.0 - alpha) * np.eye(size) + alpha * np.roll(np.eye(size), 1, axis=0)


def iclr_minimality_scenario(alpha: float, beta: float, n: int = 2000, seed: int = 0):
    """ICLR §5.1 "Minimality with independent factors": z = cos((1 − β) A y + β n)."""
    if not 0.0 <= beta <= 1.0:
        raise MibenchError(f"beta must be in [0, 1], got {beta}")
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.0, PI, (n, 4))
    nuis = rng.uniform(0.0, PI, (n, 1))
    return y, np.cos((1.0 - beta) * y @ mixing_a(alpha).T + beta * nuis)


def iclr_sufficiency_scenario(alpha: float, gamma: float, n: int = 2000, seed: int = 0):
    """ICLR §5.1 "Sufficiency with independent factors": z = cos(γ A y), γ ∈ [1, 2)."""
    if not 1.0 <= gamma < 2.0:
        raise MibenchError(f"gamma must be in [1, 2), got {gamma}")
    y = np.random.default_rng(seed).uniform(0.0, PI, (n, 4))
    return y, np.cos(gamma * y @ mixing_a(alpha).T)


def iclr_dependent_scenario(alpha: float, delta: float, n: int = 2000, seed: int = 0):
    """ICLR §5.1 dependent factors: y_3 = (1−δ)y_1 + δy_2, y_4 = (1−δ)y_2 + δy_1, z = cos(A y)."""
    if not 0.0 <= delta <= 0.5:
        raise MibenchError(f"delta must be in [0, 0.5], got {delta}")
    y12 = np.random.default_rng(seed).uniform(0.0, PI, (n, 2))
    y1, y2 = y12[:, 0], y12[:, 1]
    y = np.stack([y1, y2, (1 - delta) * y1 + delta * y2, (1 - delta) * y2 + delta * y1], axis=1)
    return y, np.cos(y @ mixing_a(alpha).T)


def iclr_linear_mixing(y, alpha: float, seed: int = 0) -> np.ndarray:
    """ICLR §5.2: z = A y with a_ii = 1 − α, a_ij ~ U[0, α) (i ≠ j)."""
    y = np.asarray(y, dtype=float)
    K = y.shape[1]
    A = np.random.default_rng(seed).uniform(0.0, alpha, (K, K)) if alpha > 0 else np.zeros((K, K))
    np.fill_diagonal(A, 1.0 - alpha)
    return y @ A.T


# -- Sepliarskaia et al. §3 worked examples ------------------------------------------------------

def sepliarskaia_dci_examples() -> dict[str, tuple[np.ndarray, float]]:
    """The two importance matrices of §3.1.4-3.1.5 (latents × factors) and their stated DCI."""
    p11 = np.full((11, 11), 0.02)
    np.fill_diagonal(p11, 0.8)
    p2 = np.array([[1.0, 0.0], [0.01, 0.09]])
    return {"fact2_property1": (p11, 0.6), "fact5_property2": (p2, 0.957)}


def sepliarskaia_sap_power(n: int = 10000, seed: int = 0):
    """Fact 6: y ~ U([−1, 1]²), c_i = y_i^15 (SAP 0.32 stated)."""
    y = np.random.default_rng(seed).uniform(-1.0, 1.0, (n, 2))
    return y, y**15


def sepliarskaia_sap_mixed(n: int = 10000, seed: int = 0):
    """Fact 8: y ~ U([−1, 1]²), c = (y_1, y_1^25 + y_2^25, y_2) (SAP 0.98 stated)."""
    y = np.random.default_rng(seed).uniform(-1.0, 1.0, (n, 2))
    return y, np.stack([y[:, 0], y[:, 0] ** 25 + y[:, 1] ** 25, y[:, 1]], axis=1)


SEPLIARSKAIA_FACTORVAE_MIX = np.array([[0.5, 0.4, 0.5], [0.4, 0.5, 0.5], [0.4, 0.4, 0.6]])


def sepliarskaia_factorvae_process():
    """Fact 4: three N(0, 1) factors, c = M y (FactorVAE 1.0 stated); (sample_factors, represent)."""
    def sample_factors(n, rng):
        return rng.standard_normal((n, 3))

    def represent(y):
        return np.asarray(y) @ SEPLIARSKAIA_FACTORVAE_MIX.T

    return sample_factors, represent


def sepliarskaia_betavae_process(seed: int = 0):
    """Fact 3: three U(0, 1) factors; latent c_l equals factor k with probability P[l, k]
    (P rows (0.5, 0.5, 0), (0, 0.5, 0.5), (0.5, 0, 0.5)), drawn per sample.  The code is entangled,
    yet BetaVAE is 0.9967 (10,000 training points, batch 128, stated).  Returns (sample_factors, represent);
    ``seed`` seeds the latents' choices."""
    rng = np.random.default_rng(seed)

    def sample_factors(n, rng_):
        return rng_.uniform(0.0, 1.0, (n, 3))

    def represent(y):
        y = np.asarray(y, dtype=float)
        pick = rng.integers(0, 2, (len(y), 3))  # which of the two factors each latent copies
        return np.take_along_axis(y, SEPLIARSKAIA_BETAVAE_SOURCES[np.arange(3), pick], axis=1)

    return sample_factors, represent


#: The two factors latent l copies in Sepliarskaia's Fact 3 (each with probability 1/2).
SEPLIARSKAIA_BETAVAE_SOURCES = np.array([[0, 1], [1, 2], [0, 2]])
