"""MI back-ends on cases with known MI; registry behaviour; refusals.

Tolerances are |bias| + 4 sd over seeds 0-7 of the exact configuration tested (measured; numbers
in the comments), so a correct estimator passes at any seed and a broken one fails.
"""
import math
import sys
import types

import numpy as np
import pytest
from scipy import integrate, stats

from mibench.disentanglement.backends import (
    MI_BACKENDS,
    BackendUnsupported,
    get_backend,
    neural_backend,
    plugin_mi,
)
from mibench.disentanglement.posterior import GaussianPosterior, log_density_matrix
from mibench.errors import MibenchError
from mibench.estimators.classical import discrete_entropy


def correlated_gaussians(n, rho, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    return x, rho * x + math.sqrt(1 - rho**2) * rng.standard_normal((n, d))


def gaussian_mi(rho, d):
    return -0.5 * d * math.log(1 - rho**2)


def mixture_case(n, seed, spacing=1.0, s=0.5):
    """y uniform on {0,1,2,3}; encoder p(z|x) = N(spacing*y, s²): a known Gaussian posterior."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n).astype(float)
    post = GaussianPosterior.from_mean_std(spacing * y[:, None], np.full((n, 1), s), seed=seed + 100)
    return y, post


def mixture_mi(spacing=1.0, s=0.5):
    """I(y; z) for the mixture case by quadrature: H(z) − H(z|y)."""
    means = spacing * np.arange(4)

    def pdf(z):
        return np.mean([stats.norm.pdf(z, m, s) for m in means], axis=0)

    h = -integrate.quad(lambda z: pdf(z) * np.log(pdf(z) + 1e-300), -8, 8 + means[-1], limit=200)[0]
    return h - 0.5 * math.log(2 * math.pi * math.e * s * s)


# -- known-MI cases ----------------------------------------------------------------------------

def test_ksg_correlated_gaussians_1d():
    # n = 2000, rho = 0.9 (true 0.830): seeds 0-7 bias -0.009, sd 0.018 -> tol 0.08
    x, y = correlated_gaussians(2000, 0.9, 1, seed=0)
    assert get_backend("ksg").mi(x, y) == pytest.approx(gaussian_mi(0.9, 1), abs=0.08)


def test_ksg_multivariate():
    # n = 2000, 2 + 2 dims, rho = 0.6 (true 0.446): seeds 0-7 bias +0.010, sd 0.027 -> tol 0.12
    x, y = correlated_gaussians(2000, 0.6, 2, seed=0)
    assert get_backend("ksg").mi(x, y) == pytest.approx(gaussian_mi(0.6, 2), abs=0.12)


def test_ksg_independent_is_near_zero():
    # independent 3 + 3 dims, n = 2000: seeds 0-7 mean +0.002, sd 0.015 -> tol 0.065
    rng = np.random.default_rng(0)
    assert abs(get_backend("ksg").mi(rng.standard_normal((2000, 3)), rng.standard_normal((2000, 3)))) < 0.065


def test_ksg_discrete_factor_ross():
    # Ross (2014) on the 4-component mixture (true 0.845), n = 1000: bias -0.001, sd 0.026 -> tol 0.11
    y, post = mixture_case(1000, seed=0)
    assert get_backend("ksg").mi(y, post, discrete_y=True) == pytest.approx(mixture_mi(), abs=0.11)


def test_histogram_discrete_copy_is_exact_entropy():
    """Distinct values land in distinct equal-width bins: plug-in MI = plug-in H(y) exactly."""
    y = np.random.default_rng(0).integers(0, 4, 500).astype(float)
    assert get_backend("histogram").mi(y, y**2, discrete_y=True) == pytest.approx(discrete_entropy(y), abs=1e-12)
    assert plugin_mi(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])) == pytest.approx(0.0, abs=1e-15)


def test_histogram_continuous_gaussians():
    # n = 5000, 20 bins, rho = 0.9 (true 0.830): seeds 0-7 bias -0.032, sd 0.010 -> tol 0.075
    x, y = correlated_gaussians(5000, 0.9, 1, seed=0)
    assert get_backend("histogram").mi(x, y) == pytest.approx(gaussian_mi(0.9, 1), abs=0.075)


def test_histogram_discrete_factor():
    # mixture case, n = 1000: bias +0.004, sd 0.022 -> tol 0.095
    y, post = mixture_case(1000, seed=0)
    assert get_backend("histogram").mi(y, post, discrete_y=True) == pytest.approx(mixture_mi(), abs=0.095)


def test_histogram_bins_pattern():
    x, y = correlated_gaussians(2000, 0.9, 1, seed=0)
    coarse = get_backend("histogram-5").mi(x, y)
    assert coarse < get_backend("histogram").mi(x, y) and coarse <= math.log(5)


def test_gaussian_backend_exact_for_gaussians():
    # n = 1000, 2 + 2 dims, rho = 0.6: bias -0.014, sd 0.012 -> tol 0.065
    x, y = correlated_gaussians(1000, 0.6, 2, seed=0)
    assert get_backend("gaussian").mi(x, y) == pytest.approx(gaussian_mi(0.6, 2), abs=0.065)


def test_posterior_discrete_eq8():
    # Tokui eq. 8 with exact sums on the mixture case, n = 1000: bias +0.002, sd 0.021 -> tol 0.09
    y, post = mixture_case(1000, seed=0)
    assert get_backend("posterior").mi(y, post, discrete_y=True) == pytest.approx(mixture_mi(), abs=0.09)


def test_posterior_density_matrix_covariance_kinds_agree():
    rng = np.random.default_rng(1)
    mean = rng.standard_normal((40, 3))
    std = rng.uniform(0.5, 1.5, (40, 3))
    diag = GaussianPosterior.from_mean_std(mean, std, seed=2)
    full = GaussianPosterior(diag.samples, mean, np.stack([np.diag(s**2) for s in std]), "full")
    assert np.allclose(log_density_matrix(diag), log_density_matrix(full))
    shared = GaussianPosterior(diag.samples, mean, np.diag(std[0] ** 2), "shared")
    per_point_same = GaussianPosterior(diag.samples, mean, np.tile(std[:1] ** 2, (40, 1)), "diag")
    assert np.allclose(log_density_matrix(shared), log_density_matrix(per_point_same))
    expected = stats.multivariate_normal(mean[5], np.diag(std[0] ** 2)).logpdf(diag.samples[7])
    assert log_density_matrix(shared)[7, 5] == pytest.approx(expected)


# -- refusals and registry ---------------------------------------------------------------------

def test_histogram_refuses_multidimensional_codes():
    x, y = correlated_gaussians(200, 0.5, 2, seed=0)
    with pytest.raises(BackendUnsupported, match="one variable against one variable"):
        get_backend("histogram").mi(x[:, 0], y)


def test_posterior_refuses_plain_samples_and_continuous_without_structure():
    x, y = correlated_gaussians(200, 0.5, 1, seed=0)
    with pytest.raises(BackendUnsupported, match="Gaussian p\\(z\\|x\\)"):
        get_backend("posterior").mi(x, y)
    post = GaussianPosterior.from_mean_std(y, np.ones_like(y))
    with pytest.raises(BackendUnsupported, match="continuous factor"):
        get_backend("posterior").mi(x, post, discrete_y=False)


def test_unknown_backend_is_one_line_error():
    with pytest.raises(MibenchError, match="unknown MI back-end 'ksq'.*did you mean 'ksg'"):
        get_backend("ksq")
    assert "ksg-5" in MI_BACKENDS and "neural:smile" in MI_BACKENDS and "histogram-1" not in MI_BACKENDS
    with pytest.raises(MibenchError, match="at least 2 bins"):
        get_backend("histogram-1")


def test_shape_mismatch_is_one_line_error():
    with pytest.raises(MibenchError, match="same number of samples"):
        get_backend("ksg").mi(np.zeros(10), np.zeros(11))


def test_neural_backend_calls_mibench_estimate(monkeypatch):
    """The neural back-end passes the samples and settings to mibench.estimate and reads .mi (nats)."""
    calls = {}

    def fake_estimate(x, y, **kw):
        calls.update(kw, x=x, y=y)
        return types.SimpleNamespace(mi=1.25)

    monkeypatch.setitem(sys.modules, "mibench.estimation", types.SimpleNamespace(estimate=fake_estimate))
    x, y = correlated_gaussians(100, 0.5, 2, seed=0)
    assert get_backend("neural:smile:separable").mi(x[:, 0], y) == 1.25
    assert calls["estimator"] == "smile" and calls["critic"] == "separable" and calls["units"] == "nats"
    assert calls["x"].shape == (100, 1) and calls["y"].shape == (100, 2) and calls["x"].dtype == np.float32
    assert {"steps", "batch_size", "seed"} <= set(calls)
    neural_backend("infonce", steps=7).mi(x[:, 0], y)
    assert calls["estimator"] == "infonce" and calls["critic"] == "joint" and calls["steps"] == 7


def test_a_neural_back_end_takes_any_estimator_and_refuses_a_black_box_ones_training_settings():
    """neural:ksg was refused ('trains nothing: batch_size, steps do not apply') on every call."""
    from mibench.disentanglement.backends import get_backend

    rng = np.random.default_rng(0)
    y = rng.normal(size=(300, 1))
    assert get_backend("neural:ksg").mi(y, y + 0.3 * rng.normal(size=(300, 1))) > 0.5
