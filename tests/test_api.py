import numpy as np
import pytest
import torch

import mibench
from mibench.errors import MibenchError


def test_estimate_on_user_arrays_tracks_truth():
    rng = np.random.default_rng(0)
    n, rho = 6000, 0.8
    x = rng.standard_normal((n, 2))
    y = rho * x + np.sqrt(1 - rho**2) * rng.standard_normal((n, 2))
    truth = -np.log2(1 - rho**2)  # 2 dims -> 2 * (-1/2) log2(1 - rho^2) = 1.47 bits
    res = mibench.estimate(x, y, estimator="smile", steps=600, hidden=64, layers=1, device="cpu")
    # measured over seeds 0-4 at these settings: held-out |error| <= 0.2 bits
    assert abs(res.mi - truth) < 0.35, res.mi
    assert res.curve.shape == (600,) and res.n_test == 1200 and res.units == "bits"
    nats = mibench.estimate(x, y, estimator="smile", steps=600, hidden=64, layers=1, device="cpu", units="nats")
    assert nats.mi == pytest.approx(res.mi * np.log(2), rel=1e-5)


def test_independent_arrays_give_small_estimate():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((3000, 3)), rng.standard_normal((3000, 3))
    res = mibench.estimate(torch.tensor(x), y, estimator="mine", steps=300, hidden=32, layers=1, device="cpu")
    assert abs(res.mi) < 0.3


@pytest.mark.parametrize("x,y,kw,match", [
    (np.zeros((10, 2)), np.zeros((11, 2)), {}, "same number of samples"),
    (np.full((500, 2), np.nan), np.zeros((500, 2)), {}, "NaN"),
    (np.zeros((50, 2)), np.zeros((50, 2)), {}, "too few"),
    (np.zeros((500, 2)), np.zeros((500, 2)), {"units": "hartleys"}, "units"),
    (np.zeros((500, 2)), np.zeros((500, 2)), {"estimator": "foo"}, "unknown estimator"),
    ([["a"]], [["b"]], {}, "numeric"),
])
def test_input_validation(x, y, kw, match):
    with pytest.raises(MibenchError, match=match):
        mibench.estimate(x, y, steps=5, **kw)


# ---------------------------------------------------------------------------------------------
# issue 13: held-out early stopping, status, no negative MI, uncertainty, data-sized defaults
# ---------------------------------------------------------------------------------------------

from mibench.api import STATUSES, default_settings  # noqa: E402
from mibench.tasks.distributions import draw  # noqa: E402


def test_default_estimate_on_a_1d_gaussian_is_within_a_tenth_of_a_nat():
    """10,000 pairs of gauss-dense-1x1 at 1 nat, all defaults.  Measured (benchmarks/bench_estimate.py,
    results/estimate.txt and seeds 0-1 during development): 0.967-0.973 nats, stderr ~0.02; the band
    0.1 nats is the issue's target and > 4 stderr from the measured values."""
    x, y, truth = draw("gauss-dense-1x1", 10_000, mi_nats=1.0, seed=0)
    r = mibench.estimate(x, y, estimator="smile", critic="joint", seed=0, units="nats", device="cpu")
    assert abs(r.mi - truth) < 0.1, r
    assert r.status in ("converged", "overfit", "still_increasing")
    assert isinstance(r.mi, float) and isinstance(r.seconds, float) and isinstance(r.n_parameters, int)
    assert 0 < r.mi_stderr < 0.06 and r.seconds > 0 and not r.clipped and r.mi_raw == pytest.approx(r.mi)
    # hidden 32, layers 1 for d = 2: (2*32 + 32) + (32*32 + 32) + (32 + 1) parameters, plus the
    # Gaussian part (M_xx, M_xy, M_yy: 1 each, the constant c) and the gate alpha
    assert r.settings["gaussian_critic"] and r.settings["preprocess"] == "normal-scores"
    assert r.n_parameters == 96 + 1056 + 33 + 4 + 1
    assert r.settings["hidden"] == 32 and r.settings["batch_size"] == 256
    assert 0 <= r.best_step <= r.steps_run <= 3000 and r.held_out_curve.shape[1] == 2


def test_transformed_margin_case_within_a_tenth_of_a_nat():
    """cdf-1x1 (uniform margins), 10,000 pairs at 1 nat: measured 0.945-0.953 during development."""
    x, y, truth = draw("cdf-1x1", 10_000, mi_nats=1.0, seed=0)
    r = mibench.estimate(x, y, seed=0, units="nats", device="cpu")
    assert abs(r.mi - truth) < 0.1, r


def test_independent_data_is_never_negative_and_flagged():
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((4000, 2)), rng.standard_normal((4000, 2))
    r = mibench.estimate(x, y, seed=0, units="nats", device="cpu")
    assert r.mi >= 0 and r.mi < 0.05
    assert r.mi == max(r.mi_raw, 0.0) and r.clipped == (r.mi_raw < 0)
    assert r.status == "no_dependence_detected" or r.mi > 2 * r.mi_stderr


def test_status_values_budget_and_threads_restored():
    import torch

    rng = np.random.default_rng(2)
    x = rng.standard_normal((3000, 1))
    y = x + 0.5 * rng.standard_normal((3000, 1))
    before = torch.get_num_threads()
    r = mibench.estimate(x, y, steps=60, eval_every=20, patience=0, seed=0, device="cpu")
    assert torch.get_num_threads() == before
    # held-out evaluations at steps 0 (the Gaussian starting critic), 20, 40, 60
    assert r.steps_run == 60 and r.status in STATUSES and r.held_out_curve.shape == (4, 2)
    assert list(r.held_out_curve[:, 0]) == [0, 20, 40, 60]
    t = mibench.estimate(x, y, steps=40, test_fraction=0.0, device="cpu")
    assert t.status == "train_only" and t.n_test == 0


def test_default_settings_rule():
    assert default_settings(8000, 1, 1)["hidden"] == 32
    assert default_settings(8000, 25, 25)["hidden"] == 64
    assert default_settings(8000, 5, 5)["batch_size"] == 256
    assert default_settings(800, 5, 5)["batch_size"] == 96     # n_train / 8 rounded down to a multiple of 32
    assert default_settings(100, 5, 5)["batch_size"] == 32


@pytest.mark.slow
def test_sparse_25x25_is_never_negative_and_close():
    """The case that collapsed to -0.97 / -1.27 nats before issue 13.  Measured 0.897 / 0.898 nats
    (truth 1.0) at hidden 64 during development; band 0.15 nats."""
    x, y, truth = draw("gauss-sparse-25x25", 10_000, mi_nats=1.0, seed=0)
    r = mibench.estimate(x, y, seed=0, units="nats", device="cpu")
    assert r.mi > -0.05 and abs(r.mi - truth) < 0.15, r
