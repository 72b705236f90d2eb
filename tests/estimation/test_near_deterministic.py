"""A noisy pair is not a deterministic one (mibench/estimation/dependence.py), and the fitted start
survives near-singular covariances (mibench/estimation/gaussian_start.py).

y = x + s noise has finite MI, 1/2 log(1 + 1 / s^2); only an exact relation (to the precision of the
stored values) has infinite MI."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import mibench
from mibench.estimation import DependenceWarning
from mibench.estimation.dependence import deterministic_dependence

NOISE_LEVELS = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6]


def _noisy(n, s, seed=0, dim=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim))
    return x, x + s * rng.standard_normal((n, dim))


def _strict(**kwargs):
    """mibench.estimate with a DependenceWarning turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DependenceWarning)
        return mibench.estimate(**kwargs)


@pytest.mark.parametrize("n", [100, 200])
def test_issue_example_noise_1e3_is_estimated_not_deterministic(n):
    """x ~ N(0, 1), y = x + 1e-3 noise: was inf / deterministic at n = 100 and LinAlgError at n = 200."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    y = x + 1e-3 * rng.standard_normal(n)
    r = _strict(x=x, y=y, steps=100)
    assert math.isfinite(r.mi) and r.mi > 2.0 and r.status != "deterministic", (r.mi, r.status)


@pytest.mark.parametrize("n", [100, 200, 2000])
@pytest.mark.parametrize("s", NOISE_LEVELS)
def test_noise_down_to_1e6_is_not_deterministic(n, s):
    for seed in range(3):
        x, y = _noisy(n, s, seed)
        assert deterministic_dependence(x, y, np.arange(n)) is None, (n, s, seed)
        x2, y2 = _noisy(n, s, seed, dim=2)
        assert deterministic_dependence(x2, y2 @ np.array([[1.0, 2.0], [3.0, 1.0]]) + 5, np.arange(n)) is None


@pytest.mark.parametrize("s", NOISE_LEVELS)
def test_noisy_pairs_give_finite_estimates(s):
    x, y = _noisy(200, s, seed=1)
    r = _strict(x=x, y=y, steps=60, units="nats")
    assert math.isfinite(r.mi) and r.status != "deterministic"
    assert r.mi <= 0.5 * math.log(1 + 1 / s ** 2) + 0.5        # a held-out bound, not above the truth


EXACT = {
    "y = x": lambda x: x,
    "y = x ** 3": lambda x: x ** 3,
    "y = 2x + 1": lambda x: 2 * x + 1,
    "y = exp(x)": np.exp,
    "y = -x ** 3": lambda x: -x ** 3,
    "y = tanh(x)": np.tanh,
    "duplicated columns": lambda x: np.concatenate([x, x], axis=1),
}


@pytest.mark.parametrize("n", [100, 200, 2000])
@pytest.mark.parametrize("what", list(EXACT))
def test_exact_relations_stay_deterministic(n, what):
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((n, 1))
        assert deterministic_dependence(x, EXACT[what](x), np.arange(n)), (what, n, seed)
    x2 = np.random.default_rng(5).standard_normal((n, 2))
    assert deterministic_dependence(x2, x2 @ np.array([[1.0, 2.0], [3.0, 1.0]]) + 5, np.arange(n))


@pytest.mark.parametrize("what", ["y = x ** 3", "y = exp(x)", "y = 2x + 1"])
def test_exact_relations_in_float32_stay_deterministic(what):
    """Values computed in float32 (torch's default) carry its rounding, which is not noise."""
    x = np.random.default_rng(0).standard_normal((2000, 1)).astype(np.float32)
    y = EXACT[what](x).astype(np.float32)
    assert deterministic_dependence(x.astype(np.float64), y.astype(np.float64), np.arange(2000))


@pytest.mark.parametrize("n", [100, 200])
def test_exact_relation_through_estimate_is_deterministic(n):
    x = np.random.default_rng(0).standard_normal(n)
    with pytest.warns(DependenceWarning, match="infinite"):
        r = mibench.estimate(x, x ** 3, steps=20)
    assert math.isinf(r.mi) and r.status == "deterministic"


def test_fit_start_survives_a_singular_fit_part():
    """n = 200 of the issue's example: the pairs fit_start holds back carried every rank swap, so the
    rest were exactly collinear after normal scores, and np.linalg.inv raised LinAlgError."""
    from mibench.estimation.gaussian_start import GaussianResidualCritic, _inverse_and_logdet, fit_start
    from mibench.estimation.preprocess import standardise_columns

    x, y = _noisy(200, 1e-3)
    tr = np.random.default_rng(0).permutation(200)[:160]
    a, b = x.copy(), y.copy()
    standardise_columns((a, b), tr, "normal-scores")
    z = np.concatenate([a[tr], b[tr]], axis=1)
    start = fit_start(z - z.mean(0), 1)
    critic = GaussianResidualCritic(__import__("torch").nn.Identity(), start.scale, 1, 160, start.dof, start.pool)
    assert all(np.isfinite(p.detach().numpy()).all() for p in critic.start_parameters())
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    inverse, logdet = _inverse_and_logdet(singular)
    assert np.isfinite(inverse).all() and np.isfinite(logdet)
    v = np.array([1.0, 1.0])                       # the direction the matrix varies in: the exact inverse's form
    assert v @ inverse @ v == pytest.approx(v @ np.linalg.pinv(singular) @ v)
