"""The Nishiyama and JSD -> KL lower bounds (mibench.estimators.kl_lower_bounds) as pure functions of
the score matrix: exactness where the papers say they are exact, the lower-bound property on a
Gaussian with its optimal critic, and what the registry says they are."""
import math

import numpy as np
import pytest
import torch

from mibench.estimators.kl_lower_bounds import jsd_kl_bound, jsd_lower_bound, nishiyama_bound, xi_of_jsd
from mibench.estimators.registry import ESTIMATORS, estimator_bound, training_groups


def bernoulli_kl(p, q):
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def bernoulli_js(p, q):
    m = (p + q) / 2
    return 0.5 * bernoulli_kl(p, m) + 0.5 * bernoulli_kl(q, m)


def scores_with_moments(k, diag_values, off_values):
    """A K x K score matrix whose diagonal holds ``diag_values`` and whose off-diagonal cells hold
    ``off_values`` (row-major)."""
    s = torch.empty(k, k, dtype=torch.float64)
    eye = torch.eye(k, dtype=torch.bool)
    s[eye] = torch.as_tensor(diag_values, dtype=torch.float64)
    s[~eye] = torch.as_tensor(off_values, dtype=torch.float64)
    return s


@pytest.mark.parametrize("p,q", [(0.3, 0.6), (0.1, 0.8), (0.5, 0.2)])
def test_nishiyama_is_exact_for_bernoulli_pairs(p, q):
    """Theorem 1's equality case: P = Bern(p), Q = Bern(q), f the identity.  The diagonal holds the
    P sample (a fraction p of ones), the off-diagonal cells the Q sample (a fraction q of ones)."""
    k = 101
    n_off = k * (k - 1)
    diag = np.zeros(k)
    diag[: round(p * k)] = 1.0
    off = np.zeros(n_off)
    off[: round(q * n_off)] = 1.0
    p_hat, q_hat = diag.mean(), off.mean()
    got = float(nishiyama_bound(scores_with_moments(k, diag, off)))
    assert got == pytest.approx(bernoulli_kl(p_hat, q_hat), rel=1e-9)


def test_nishiyama_is_invariant_to_affine_changes_of_the_critic():
    torch.manual_seed(0)
    s = torch.randn(64, 64, dtype=torch.float64) + 2.0 * torch.eye(64, dtype=torch.float64)
    assert float(nishiyama_bound(3.0 * s - 7.0)) == pytest.approx(float(nishiyama_bound(s)), rel=1e-9)
    assert float(nishiyama_bound(torch.zeros(8, 8, dtype=torch.float64))) == pytest.approx(0.0, abs=1e-9)


def test_xi_is_the_smallest_kl_of_bernoulli_pairs_at_each_jsd():
    """Xi(JSD) <= KL for every pair of Bernoulli distributions (a 400 x 400 grid), and in a band of
    JSD around each target some grid pair has a KL within 2 % of Xi at its JSD: the bound is tight."""
    t = np.linspace(-12, 12, 400)
    p = 1 / (1 + np.exp(-t))
    P, Q = np.meshgrid(p, p, indexing="ij")
    M = (P + Q) / 2
    kl = P * np.log(P / Q) + (1 - P) * np.log((1 - P) / (1 - Q))
    js = 0.5 * (P * np.log(P / M) + (1 - P) * np.log((1 - P) / (1 - M))) + \
        0.5 * (Q * np.log(Q / M) + (1 - Q) * np.log((1 - Q) / (1 - M)))
    xi = xi_of_jsd(torch.as_tensor(js)).numpy()
    assert np.all(xi <= kl + 1e-9)
    for target in (0.05, 0.2, 0.4, 0.6):
        band = np.abs(js - target) < 0.01
        assert (kl[band] / xi[band]).min() == pytest.approx(1.0, abs=0.02)


def test_xi_is_zero_at_zero_and_increasing():
    j = torch.linspace(-0.1, math.log(2) - 1e-6, 200, dtype=torch.float64)
    xi = xi_of_jsd(j)
    assert float(xi[0]) == pytest.approx(0.0, abs=1e-12)
    assert torch.all(torch.diff(xi) >= -1e-12)
    assert float(xi_of_jsd(torch.tensor(bernoulli_js(0.999, 0.05), dtype=torch.float64))) <= bernoulli_kl(0.999, 0.05)


@pytest.mark.parametrize("bits", [1.0, 2.0, 4.0])
def test_both_bounds_stay_below_the_truth_with_the_optimal_critic(bits):
    """Gaussian rho with the optimal critic log p/(pp) on K = 2,000 pairs: both are lower bounds
    (measured, seed 0: Nishiyama 0.33 / 0.38 / 0.42 nats, JSD -> KL 0.56 / 1.16 / 2.50 nats for
    truths 0.69 / 1.39 / 2.77: 81 / 84 / 90 %), and JSD -> KL is within 25 % of the truth."""
    truth = bits * math.log(2)
    rho = math.sqrt(1 - math.exp(-2 * truth))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2000, generator=g, dtype=torch.float64)
    y = rho * x + math.sqrt(1 - rho ** 2) * torch.randn(2000, generator=g, dtype=torch.float64)
    X, Y = x[:, None], y[None, :]
    s = -0.5 * math.log(1 - rho ** 2) - (rho ** 2 * (X ** 2 + Y ** 2) - 2 * rho * X * Y) / (2 * (1 - rho ** 2))
    nish, jk = float(nishiyama_bound(s)), float(jsd_kl_bound(s))
    assert 0 < nish < truth and 0.75 * truth < jk < truth
    assert float(jsd_lower_bound(s)) < math.log(2)


def test_registry_declares_what_each_number_is():
    assert estimator_bound("nishiyama") == "lower bound" and estimator_bound("jsd-kl") == "lower bound"
    assert estimator_bound("smile-5") == "estimate" and estimator_bound("smile-inf") == "lower bound"
    assert estimator_bound("club") == "upper bound" and estimator_bound("l1out") == "upper bound"
    assert estimator_bound("ba") == "estimate" and estimator_bound("flo") == "lower bound"   # ba: see family.py
    assert estimator_bound("gm-flow") == "estimate" and estimator_bound("doe-flow") == "estimate"
    # jsd-kl reads the critic every JS-trained estimator shares; nishiyama trains its own
    assert training_groups(["js", "jsd-kl", "nishiyama"]) == {"js-fgan": [0, 1], "nishiyama": [2]}
    assert ESTIMATORS.get("jsd-kl").obj().batched


def test_the_new_critic_heads_run_in_a_streaming_run(tmp_path):
    from mibench.cli import main

    assert main(["run", "--task", "gaussian", "--estimator", "nishiyama,jsd-kl", "--steps", "60", "--mi", "2",
                 "--batch-size", "32", "--hidden", "16", "--out", str(tmp_path / "r"), "--no-plot"]) == 0
    import csv

    rows = list(csv.DictReader(open(tmp_path / "r" / "estimates.csv")))
    assert {r["estimator"] for r in rows} >= {"nishiyama", "jsd-kl"}


def test_row_forms_equal_the_bounds_on_the_whole_matrix():
    """The held-out readout reads both through their row forms (tiles of the matrix)."""
    from mibench.estimators.bounds import row_form

    torch.manual_seed(0)
    s = torch.randn(300, 300, dtype=torch.float64) + 3 * torch.eye(300, dtype=torch.float64)
    for bound in (nishiyama_bound, jsd_kl_bound):
        assert float(row_form(bound).value(s)) == pytest.approx(float(bound(s)), rel=1e-9)
    assert ESTIMATORS.get("nishiyama").obj().row_form() is not None
    assert ESTIMATORS.get("jsd-kl").obj().row_form() is not None
