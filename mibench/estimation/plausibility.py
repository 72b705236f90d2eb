"""The plausibility rule: when an estimator's number cannot stand as a result, whatever the estimator.

Two checks on the value (nats), the held-out pairs it was read on and its standard error where known:

* ``failed_fit`` -- the value is below zero by more than max(:data:`NEGATIVE_MARGIN_NATS`, 3 standard
  errors), and in any case by more than :data:`NEGATIVE_LIMIT_NATS`.  MI is never negative; a held-out
  readout that far below zero is a model that fits the held-out pairs worse than no dependence at all
  (overfit flows at small n read hundreds of bits below zero), not an estimate of 0, however large its
  own standard error.  A readout that sits a known offset below the MI at its critic's optimum
  (``js-paper``: 1/e nats, :attr:`~mibench.estimators.heads.Estimator.offset_nats`) is held to zero minus
  that offset.
* ``above_sample_limit`` -- the value exceeds log m nats, m the pairs it was read on.  No
  distribution-free estimate from m pairs can confirm more (McAllester & Stratos 2020, "Formal
  limitations on the measurement of mutual information", AISTATS, Thm. 1 for lower bounds): a number
  above it rests on the model's assumptions alone (overfit generative models at small n, or wide data,
  read tens of bits on independent pairs).  Where the truth is that high, pass more pairs.

``mibench.estimate`` reports either as its ``status`` (``mi`` is NaN for ``failed_fit``); the sample
protocol records such an estimate as failed (``implausible``): counted, never averaged into a summary
or leaderboard, and ``mibench run`` exits 3.  docs/estimators.md ("Statuses") documents the rule.
"""
from __future__ import annotations

import math

#: a held-out value below zero by more than this (or 3 standard errors) is a failed fit ...
NEGATIVE_MARGIN_NATS = 0.1
#: ... and below minus this, whatever its standard error
NEGATIVE_LIMIT_NATS = 1.0
#: the statuses of this rule (both mean: not a result)
IMPLAUSIBLE = ("failed_fit", "above_sample_limit")


def implausible(value_nats: float, pairs: int, stderr_nats: float = float("nan"),
                offset_nats: float = 0.0) -> tuple[str, str] | None:
    """``(status, one-line reason)`` when ``value_nats``, read on ``pairs`` pairs, cannot be a result
    (module docstring); None when it can.  ``offset_nats``: how far below the MI the readout sits by design
    at its optimum (0 for every estimator but ``js-paper``)."""
    if not math.isfinite(value_nats):
        return None
    se = stderr_nats if math.isfinite(stderr_nats) else 0.0
    margin = min(max(NEGATIVE_MARGIN_NATS, 3 * se), NEGATIVE_LIMIT_NATS)
    if value_nats < -(margin + offset_nats):
        below = (f"zero minus the readout's offset {offset_nats:.3g} by more than" if offset_nats
                 else "zero by more than")
        return ("failed_fit", f"{value_nats:.4g} nats is below {below} {margin:.3g}: an MI cannot be negative, "
                              "so the estimate reads its pairs worse than independence")
    if pairs >= 2 and value_nats > math.log(pairs):
        return ("above_sample_limit", f"{value_nats:.4g} nats is above log {pairs} = {math.log(pairs):.3g}, more than "
                                      f"{pairs} pairs can confirm; pass more pairs")
    return None


def pairs_read(obj, n: int) -> int:
    """The pairs a sample estimator's last value was read on: a trained estimator's held-out pairs
    (``last["n_test"]``), else all ``n``."""
    last = getattr(obj, "last", None)
    if isinstance(last, dict) and isinstance(last.get("n_test"), int) and last["n_test"] > 0:
        return last["n_test"]
    return n


def stderr_of(obj) -> float:
    """A sample estimator's own standard error of its last value (nats), NaN when it gives none."""
    last = getattr(obj, "last", None)
    value = last.get("stderr") if isinstance(last, dict) else None
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")
