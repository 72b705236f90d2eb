"""The analytic Gaussian toy model (Tokui & Sato §5.1, Table 1, Appendix B) and the attacks."""
import math

import numpy as np
import pytest

from mibench.disentanglement.metrics import MI_METRICS, pid_bounds_from_table
from mibench.disentanglement.toy import (
    analytic_table,
    attack_matrix,
    attack_samples,
    gaussian_subset_mi,
    mixing_matrix,
    sample_toy,
    table1_closed_forms,
    toy_linear_gaussian,
)
from mibench.errors import MibenchError

ALPHAS = [0.0, 0.3, 1.0, 2.5, 10.0]


def metric(name, t):
    return MI_METRICS[name].fn(t)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_redundancy_closed_forms_sigma01_k5(alpha):
    """Tokui §5.1: MIG = ½ log(101 (1+0.65α²)/(1+1.01α²)), UniBound = ½ log(101 (1+0.01α²)/(1+1.01α²))."""
    t = analytic_table(K=5, sigma=0.1, attack="redundancy", alpha=alpha)
    a2 = alpha**2
    assert metric("mig", t) == pytest.approx(0.5 * math.log(101 * (1 + 0.65 * a2) / (1 + 1.01 * a2)), abs=1e-10)
    uni = 0.5 * math.log(101 * (1 + 0.01 * a2) / (1 + 1.01 * a2))
    assert metric("unibound", t) == pytest.approx(uni, abs=1e-10)
    # Table 1: under redundancy the unique upper bound equals the lower bound (tight), both forms.
    assert metric("u_upper_unclipped", t) == pytest.approx(uni, abs=1e-10)
    assert metric("u_upper", t) == pytest.approx(uni, abs=1e-10)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_synergy_closed_forms_sigma01_k5(alpha):
    """Synergy: MIG = UniBound = ½ log(1 + 1/(α²+σ²)); Table 1's upper bound stays ½ log(1 + 1/σ²)."""
    t = analytic_table(K=5, sigma=0.1, attack="synergy", alpha=alpha)
    falling = 0.5 * math.log(1 + 1 / (alpha**2 + 0.01))
    assert metric("mig", t) == pytest.approx(falling, abs=1e-10)
    assert metric("unibound", t) == pytest.approx(falling, abs=1e-10)
    assert metric("u_upper_unclipped", t) == pytest.approx(0.5 * math.log(101), abs=1e-10)
    # eq. 7 as printed, I(y;z_l) - [II]+, falls with alpha (II < 0 under synergy, so it is I(y;z_l)).
    assert metric("u_upper", t) == pytest.approx(falling, abs=1e-10)


@pytest.mark.parametrize("sigma,K", [(0.1, 5), (0.3, 4), (0.05, 7)])
@pytest.mark.parametrize("attack", ["none", "redundancy", "synergy"])
def test_table1_general_sigma_and_k(sigma, K, attack):
    for alpha in (0.5, 2.0):
        t = analytic_table(K=K, sigma=sigma, attack=attack, alpha=alpha)
        cf = table1_closed_forms(attack, alpha, sigma=sigma, K=K)
        b = pid_bounds_from_table(t)
        for key in ("mig", "unibound", "u_upper_unclipped", "u_upper"):
            assert metric(key, t) == pytest.approx(cf[key], abs=1e-10), key
        # Appendix B: exact R and C terms; the eq.-7 bounds pin each down (lower == upper).
        assert b["r_lower"] == pytest.approx(cf["redundancy"], abs=1e-10)
        assert b["r_upper"] == pytest.approx(cf["redundancy"], abs=1e-10)
        assert b["c_lower"] == pytest.approx(cf["synergy"], abs=1e-10)
        assert b["c_upper"] == pytest.approx(cf["synergy"], abs=1e-10)


def test_appendix_b_pairwise_terms():
    """Eq. 14: I(y_k; z̃_{L+l}) under the redundancy attack, k = l and k ≠ l, by covariance algebra."""
    K, s2, alpha = 5, 0.01, 1.7
    a2 = alpha**2
    A, C = toy_linear_gaussian(K, 0.1, "redundancy", alpha)
    same = 0.5 * math.log((1 + a2 * (1 + s2)) / (1 + a2 * (1 + s2 - (1 - 2 / K) ** 2)))
    other = 0.5 * math.log((1 + a2 * (1 + s2)) / (1 + a2 * (1 + s2 - 4 / K**2)))
    assert gaussian_subset_mi(A, C, 2, [K + 2]) == pytest.approx(same, abs=1e-12)
    assert gaussian_subset_mi(A, C, 2, [K + 3]) == pytest.approx(other, abs=1e-12)
    # I(y_k; z̃) is untouched by either attack (the attacked code is an invertible map plus noise).
    for attack in ("redundancy", "synergy"):
        A, C = toy_linear_gaussian(K, 0.1, attack, alpha)
        assert gaussian_subset_mi(A, C, 0, range(2 * K)) == pytest.approx(0.5 * math.log(101), abs=1e-12)


def test_mixing_matrix_is_orthogonal_and_symmetric():
    U = mixing_matrix(5)
    assert np.allclose(U @ U.T, np.eye(5)) and np.allclose(U, U.T)


def test_attacked_samples_match_analytic_covariance():
    """Samples of (y, z̃) have covariance [[I, Aᵀ], [A, AAᵀ + C]] (large n, 5 sd of the entries)."""
    n = 20000
    for attack in ("redundancy", "synergy"):
        y, post = sample_toy(n, K=3, sigma=0.2, attack=attack, alpha=1.5, seed=3)
        A, C = toy_linear_gaussian(3, 0.2, attack, 1.5)
        emp = np.cov(np.hstack([y, post.samples]), rowvar=False)
        expected = np.block([[np.eye(3), A.T], [A, A @ A.T + C]])
        assert np.abs(emp - expected).max() < 5 * math.sqrt(2 * np.diag(expected).max() ** 2 / n)
        # the posterior means are exactly A y
        assert np.allclose(post.mean, y @ A.T)


def test_attack_samples_on_any_representation():
    z = np.random.default_rng(0).standard_normal((100, 4))
    red = attack_samples(z, "redundancy", 2.0, seed=1)
    syn = attack_samples(z, "synergy", 2.0, seed=1)
    assert red.shape == syn.shape == (100, 8)
    assert np.allclose(red[:, :4], z)  # redundancy keeps z and appends αUz + ε
    eps = syn[:, 4:]
    assert np.allclose(syn[:, :4] - 2.0 * eps @ mixing_matrix(4).T, z)  # synergy is invertible given ε
    assert np.allclose(red[:, 4:] - 2.0 * z @ mixing_matrix(4).T, eps)  # the same ε for the same seed
    assert attack_matrix(4, "none", 0.0).shape == (4, 8)


@pytest.mark.parametrize("kwargs,msg", [
    ({"sigma": 0.0}, "sigma"), ({"attack": "swap"}, "unknown attack"), ({"alpha": -1.0}, "alpha"), ({"K": 1}, "K"),
])
def test_bad_toy_arguments_are_one_line_errors(kwargs, msg):
    args = {"K": 5, "sigma": 0.1, "attack": "redundancy", "alpha": 1.0, **kwargs}
    with pytest.raises(MibenchError, match=msg):
        analytic_table(**args)


@pytest.mark.parametrize("sigma", [1.0, 0.1, 1e-3])
@pytest.mark.parametrize("attack", ["redundancy", "synergy"])
def test_exact_values_hold_up_to_the_largest_accepted_alpha(sigma, attack):
    """The exact values are log-determinants of covariances with entries of order alpha^2: at alpha = 1e8
    (sigma 0.1) UniBound's limit 0 read as 0.18, and `mibench validate` failed a correct back-end against
    it.  Up to MAX_ALPHA_OVER_SIGMA * sigma they agree with Table 1 within 1e-3 nats; beyond, refused."""
    from mibench.disentanglement.toy import MAX_ALPHA_OVER_SIGMA

    alpha = MAX_ALPHA_OVER_SIGMA * sigma
    t, closed = analytic_table(K=5, sigma=sigma, attack=attack, alpha=alpha), table1_closed_forms(attack, alpha, sigma)
    for name, value in closed.items():
        if name in MI_METRICS:
            assert metric(name, t) == pytest.approx(value, abs=1e-3), name
    with pytest.raises(MibenchError, match="alpha must be at most"):
        analytic_table(K=5, sigma=sigma, attack=attack, alpha=alpha * 1.01)
