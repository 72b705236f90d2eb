"""``mibench.estimate`` on inputs a bound cannot put a number on (a constant input: MI 0; a
deterministic relation: MI infinite) and with every kind of registered estimator."""
from __future__ import annotations

import math

import numpy as np
import pytest

import mibench
from mibench.estimation import DependenceWarning


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 2))
    return x, x + 0.7 * rng.standard_normal((2000, 2))


@pytest.mark.parametrize("make_y,what", [
    (lambda x: x, "x == y"),
    (lambda x: x[:, :1], "a column of x"),
    (lambda x: np.exp(x[:, 1]), "a monotone map"),
    (lambda x: -x[:, :1] ** 3, "a decreasing map"),
    (lambda x: x @ np.array([[1.0, 2.0], [3.0, 1.0]]) + 5, "a linear map"),
])
@pytest.mark.parametrize("estimator", ["smile", "ksg"])
def test_deterministic_dependence_is_flagged_not_measured(pairs, make_y, what, estimator):
    x = pairs[0]
    with pytest.warns(DependenceWarning, match="infinite"):
        res = mibench.estimate(x, make_y(x), estimator=estimator, **({"steps": 50} if estimator == "smile" else {}))
    assert math.isinf(res.mi) and res.status == "deterministic", what
    assert res.n_parameters == 0 and res.settings["reason"]


def test_one_dimensional_x_equal_y_is_infinite():
    x = np.random.default_rng(1).standard_normal(2000)
    with pytest.warns(DependenceWarning):
        assert mibench.estimate(x, x.copy()).status == "deterministic"


def test_constant_input_is_no_dependence(pairs):
    x, y = pairs
    with pytest.warns(DependenceWarning, match="x is constant"):
        res = mibench.estimate(np.ones_like(x), y)
    assert res.mi == 0.0 and res.status == "no_dependence_detected"
    with pytest.warns(DependenceWarning, match="y is constant"):
        assert mibench.estimate(x, np.zeros(len(x)), estimator="ksg").mi == 0.0


def test_dependent_but_not_deterministic_data_is_estimated(pairs):
    x, y = pairs
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("error", DependenceWarning)
        res = mibench.estimate(x, y, steps=200)
    assert res.status != "deterministic" and 0.5 < res.mi < 3.0
    labels = np.random.default_rng(2).integers(0, 4, 2000)     # discrete: a deterministic map has finite MI
    assert math.isfinite(mibench.estimate(labels, labels, estimator="ksg").mi)


@pytest.mark.parametrize("estimator", ["ksg", "ksg-5", "gaussian", "histogram"])
def test_black_box_estimators_run_through_estimate(pairs, estimator):
    x, y = pairs
    xs, ys = (x[:, :1], y[:, :1]) if estimator == "histogram" else (x, y)
    truth = -0.5 * np.log(1 - np.corrcoef(xs[:, 0], ys[:, 0])[0, 1] ** 2) if estimator == "histogram" else None
    res = mibench.estimate(xs, ys, estimator=estimator, units="nats")
    # histogram at n = 2,000: its plug-in bias (19^2 / 4,000 = 0.09 nats) is above 0.05, and it says so
    expected = "few_pairs_per_bin" if estimator == "histogram" else "not_assessed"
    assert res.status == expected and res.critic == "" and math.isfinite(res.mi) and res.mi > 0.3
    assert res.seconds > 0 and res.n_parameters == 0
    if truth is not None:
        assert abs(res.mi - truth) < 0.1        # plug-in bias of 20 x 20 bins at n = 2000


def test_generative_estimator_runs_through_estimate(pairs):
    x, y = pairs
    res = mibench.estimate(x, y, estimator="doe-flow", units="nats")
    # a trained estimator assesses itself (estimators.trained.assess)
    assert res.status in ("converged", "still_improving", "overfit") and math.isfinite(res.mi) and res.n_parameters > 0
    # its own split, not the whole sample as training pairs and none held out (as before)
    assert res.n_test > 0 and res.n_train + res.n_test < len(x)
