"""Pytest helpers for estimator developers: keep your estimator from regressing.

Example (in your own test suite)::

    from mibench.testing import assert_no_regression

    def test_my_estimator_did_not_get_worse(tmp_path):
        # run your sweep (or a stored one) and compare with a committed baseline leaderboard
        assert_no_regression(tmp_path / "sweep", "tests/baseline/leaderboard.csv", tolerance=0.25)

``new`` and ``baseline`` may each be a leaderboard CSV, a pandas DataFrame, or run / sweep
directories (aggregated on the fly).  The rules are those of ``mibench compare`` (see
:mod:`mibench.analysis.gate`).
"""
from __future__ import annotations

from mibench.analysis.gate import CompareReport, compare

__all__ = ["assert_no_regression", "compare"]


def assert_no_regression(new, baseline, tolerance: float = 0.25, mse_floor: float = 0.05, bias_floor: float = 0.1,
                         metrics=("mse", "bias"), allow_missing: bool = False) -> CompareReport:
    """Raise ``AssertionError`` listing what got worse; return the report when nothing did."""
    __tracebackhide__ = True   # pytest: show the failure at the caller
    report = compare(new, baseline, tolerance=tolerance, mse_floor=mse_floor, bias_floor=bias_floor,
                     metrics=metrics, allow_missing=allow_missing)
    if not report.ok:
        raise AssertionError("MI estimator regression:\n" + report.format())
    return report
