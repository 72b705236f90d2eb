"""The threads a trained sample estimator trains on (``TrainedSettings.threads``): one by default, so its
numbers do not depend on the caller's thread count (a run's follows the cores free when it starts); 0
keeps the caller's count, N takes N; the caller's count is restored afterwards, and a cell's stacked
members follow the same setting."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.estimators import ESTIMATORS

SMALL = {"steps": 40, "eval_every": 20, "batch_size": 64, "device": "cpu", "hidden": 32, "readout_times": 4}


def _data(seed, n=300):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    return x, 0.6 * x + 0.8 * rng.standard_normal((n, 3))


def _threads_seen(est, monkeypatch, run) -> set:
    seen = set()
    loss = type(est).loss
    monkeypatch.setattr(type(est), "loss", lambda self, *a: seen.add(torch.get_num_threads()) or loss(self, *a))
    run()
    return seen


@pytest.mark.parametrize("setting,caller,expected", [(None, 2, 1), (0, 2, 2), (0, 1, 1), (3, 1, 3)])
def test_the_estimator_trains_on_the_threads_its_setting_names(monkeypatch, setting, caller, expected):
    est = ESTIMATORS.get("minde-c").obj().with_settings(**SMALL, **({} if setting is None else {"threads": setting}))
    old = torch.get_num_threads()
    torch.set_num_threads(caller)
    try:
        x, y = _data(0)
        assert _threads_seen(est, monkeypatch, lambda: est.estimate(x, y, seed=0)) == {expected}
        assert torch.get_num_threads() == caller                     # restored
        data = [_data(1), _data(2)]
        assert _threads_seen(est, monkeypatch, lambda: est.estimate_members(data, [1, 2], stacked=True)) == {expected}
        assert torch.get_num_threads() == caller
    finally:
        torch.set_num_threads(old)


def test_by_default_the_caller_thread_count_changes_no_number():
    """At this size two threads split ba's parallel sums: with ``threads=0`` its value at 1 and 2 caller
    threads differed by 5e-8 nats on the project's CPU (0.91262867 vs 0.91262861)."""
    est = ESTIMATORS.get("ba").obj().with_settings(steps=60, eval_every=30, device="cpu")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2000, 5))
    y = 0.6 * x + 0.8 * rng.standard_normal((2000, 5))
    old = torch.get_num_threads()
    values = []
    try:
        for caller in (1, 2, 4):
            torch.set_num_threads(caller)
            values.append(est.estimate(x, y, seed=0))
    finally:
        torch.set_num_threads(old)
    assert values[0] == values[1] == values[2]


def test_a_negative_thread_count_is_a_one_line_error():
    with pytest.raises(MibenchError, match="threads must be >= 0"):
        ESTIMATORS.get("ba").obj().with_settings(threads=-1)
