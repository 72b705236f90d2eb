"""The estimator contract, checked for every registered estimator (scikit-learn's
``parametrize_with_checks`` in spirit): a new estimator is checked by adding its registry line.

Every name in ``ESTIMATORS`` (each pattern family through its registered default member) must:

* say its kind and what its number is relative to the truth without being built;
* give, on a few hundred pairs, a finite float in nats, the same one for the same seed, with
  ``n_parameters`` an int after the call (> 0 for trained estimators);
* refuse mismatched rows and NaN rows with a one-line ``MibenchError``, through ``mibench.estimate``
  and (sample estimators) through its own ``estimate``;
* give a finite estimate when x has a constant column, and the documented 0
  (``no_dependence_detected``) when y is constant;
* take ``device=`` through ``mibench.estimate`` (recorded as used), an unavailable device being the same
  one line for every kind;
* trained sample estimators: typed settings (``parameters()``, JSON-able; a wrong type is one line);
* critic heads: a finite loss and gradient on a score matrix.

The fast suite trains at a tiny budget (``TINY``); ``-m slow`` repeats the estimate at the defaults.
"""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import torch

import mibench
from mibench.errors import MibenchError
from mibench.estimation.estimate import DependenceWarning
from mibench.estimators import ESTIMATORS, make_estimator
from mibench.estimators.kinds import BOUND_KINDS, CRITIC, KINDS
from mibench.estimators.trained import HeldOutEstimator

NAMES = ESTIMATORS.names()
N = 400
#: a tiny budget: trained sample estimators (their settings) and critic estimators (mibench.estimate's)
TINY = {"steps": 30, "eval_every": 10}
CRITIC_TINY = {"steps": 30, "eval_every": 10, "min_steps": 10, "batch_size": 64}


def kind(name: str) -> str:
    return ESTIMATORS.get(name).obj.kind


def pairs(name: str, n: int = N, seed: int = 0):
    """A Gaussian pair (about 0.5 nats): 2 x 2, or 1 x 1 for an estimator limited to one dimension a side."""
    side = getattr(ESTIMATORS.get(name).obj.cls(), "max_side_dims", None) or 2
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, side))
    y = 0.7 * x + 0.7 * rng.standard_normal((n, side))
    return x, y


def build(name: str):
    """The registered estimator object at the tiny budget (trained sample estimators)."""
    obj = ESTIMATORS.get(name).obj()
    return obj.with_settings(**TINY) if isinstance(obj, HeldOutEstimator) else obj


def estimate(name: str, x, y, **kw):
    """``mibench.estimate`` in nats at the tiny budget."""
    trained = isinstance(ESTIMATORS.get(name).obj(), HeldOutEstimator)
    budget = CRITIC_TINY if kind(name) == CRITIC else TINY if trained else {}
    return mibench.estimate(x, y, estimator=name, units="nats", **{**budget, **kw})


def assert_one_line(err: pytest.ExceptionInfo) -> None:
    text = str(err.value)
    assert text and "\n" not in text, f"not one line: {text!r}"


#: each pattern family's documented default member (registered, so the suite checks it) and one member
#: the pattern builds; a new family must be added here
FAMILIES = {"smile-<tau>": ("smile-5", "smile-2.5"),
            "alpha-infonce-<alpha>": ("alpha-infonce-0.5", "alpha-infonce-0.3"),
            "ksg-<k>": ("ksg", "ksg-5"), "histogram-<bins>": ("histogram", "histogram-10")}


def test_every_pattern_family_is_checked_through_its_registered_default_member():
    families = {h.split(" ")[0] for h in ESTIMATORS.patterns_help()}
    assert families == set(FAMILIES), families ^ set(FAMILIES)
    for default, member in FAMILIES.values():
        assert default in NAMES
        assert ESTIMATORS.get(member).obj.cls() is ESTIMATORS.get(default).obj.cls()


@pytest.mark.parametrize("name", NAMES)
def test_kind_and_bound_are_known_without_building(name, monkeypatch):
    entry = ESTIMATORS.get(name)
    cls = entry.obj.cls()

    def refuse(*args, **kwargs):
        raise AssertionError("built")

    monkeypatch.setattr(cls, "__init__", refuse)
    assert entry.obj.kind in KINDS
    assert entry.obj.bound_kind in BOUND_KINDS


@pytest.mark.parametrize("name", NAMES)
def test_a_finite_estimate_in_nats_the_same_for_the_same_seed(name):
    x, y = pairs(name)
    if kind(name) == CRITIC:
        a, b = estimate(name, x, y, seed=3), estimate(name, x, y, seed=3)
        values, n_parameters = (a.mi_raw, b.mi_raw), a.n_parameters
        assert a.units == "nats"
    else:
        obj = build(name)
        values = (obj.estimate(x, y, seed=3), build(name).estimate(x, y, seed=3))
        n_parameters = obj.n_parameters
        assert isinstance(values[0], float), type(values[0])
    assert math.isfinite(values[0]) and values[0] == values[1], values
    assert isinstance(n_parameters, int) and n_parameters >= 0
    if kind(name) == CRITIC or isinstance(ESTIMATORS.get(name).obj(), HeldOutEstimator):
        assert n_parameters > 0


@pytest.mark.parametrize("name", NAMES)
def test_mismatched_rows_are_one_line_errors(name):
    x, y = pairs(name)
    with pytest.raises(MibenchError) as err:
        estimate(name, x, y[:-5])
    assert_one_line(err)
    if kind(name) != CRITIC:
        with pytest.raises(MibenchError) as err:
            build(name).estimate(x, y[:-5], seed=0)
        assert_one_line(err)


@pytest.mark.parametrize("name", NAMES)
def test_nan_rows_are_one_line_errors(name):
    x, y = pairs(name)
    x[7, 0] = np.nan
    with pytest.raises(MibenchError) as err:
        estimate(name, x, y)
    assert_one_line(err)
    if kind(name) != CRITIC:
        with pytest.raises(MibenchError) as err:
            build(name).estimate(x, y, seed=0)
        assert_one_line(err)


@pytest.mark.parametrize("name", NAMES)
def test_a_constant_column_and_a_constant_y(name):
    x, y = pairs(name, seed=1)
    if x.shape[1] > 1:
        x[:, 1] = 2.5                  # one constant column among others: still an estimate
        assert math.isfinite(estimate(name, x, y).mi)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DependenceWarning)
        res = estimate(name, x, np.full_like(y, 3.0))
    assert res.mi == 0.0 and res.status == "no_dependence_detected"


@pytest.mark.parametrize("name", NAMES)
def test_the_device_reaches_the_estimator_and_an_unavailable_one_is_one_line(name):
    x, y = pairs(name)
    res = estimate(name, x, y, device="cpu")
    assert res.settings.get("device") == "cpu", res.settings
    if isinstance(ESTIMATORS.get(name).obj(), HeldOutEstimator):
        assert res.settings["parameters"]["device"] == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(MibenchError, match="device .cuda. requested but no CUDA device is available") as err:
            estimate(name, x, y, device="cuda")
        assert_one_line(err)


@pytest.mark.parametrize("name", [n for n in NAMES if isinstance(ESTIMATORS.get(n).obj(), HeldOutEstimator)])
def test_trained_estimators_have_typed_recorded_settings(name):
    obj = ESTIMATORS.get(name).obj()
    record = obj.parameters().to_record()
    assert json.loads(json.dumps(record)) == record and record["steps"] > 0
    assert obj.with_settings(steps=7).parameters().steps == 7
    for bad in ({"steps": "many"}, {"steps": 0}, {"lr": -1.0}, {"no_such_setting": 1}):
        with pytest.raises(MibenchError) as err:
            obj.with_settings(**bad)
        assert_one_line(err)


@pytest.mark.parametrize("name", [n for n in NAMES if kind(n) == CRITIC])
def test_critic_heads_give_a_finite_loss_and_gradient(name):
    head = make_estimator(name)
    scores = torch.randn(8, 8, requires_grad=True)
    loss, value = head(scores)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(value)
    assert scores.grad is not None and torch.isfinite(scores.grad).all()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_default_budget_gives_a_finite_repeatable_estimate(name):
    x, y = pairs(name, n=2000)
    if kind(name) == CRITIC:
        a = mibench.estimate(x, y, estimator=name, units="nats", seed=0)
        b = mibench.estimate(x, y, estimator=name, units="nats", seed=0)
        values = (a.mi_raw, b.mi_raw)
    else:
        values = tuple(ESTIMATORS.get(name).obj().estimate(x, y, seed=0) for _ in range(2))
    assert math.isfinite(values[0]) and values[0] == values[1], values
