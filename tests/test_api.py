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
