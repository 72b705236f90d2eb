"""Pytest helpers for estimator developers: keep your estimator from regressing.

Example (in your own test suite)::

    from mibench.testing import assert_no_regression

    def test_my_estimator_did_not_get_worse(tmp_path):
        # run your sweep (or a stored one) and compare with a committed baseline leaderboard
        assert_no_regression(tmp_path / "sweep", "tests/baseline/leaderboard.csv", tolerance=0.25)

``new`` and ``baseline`` may each be a leaderboard CSV, a pandas DataFrame, or run / sweep
directories (aggregated on the fly).  The rules are those of ``mibench compare`` (see
:mod:`mibench.gate`).
"""
from __future__ import annotations

from .gate import CompareReport, compare

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


def write_fake_run(run_dir, rows: list[dict], *, task: str = "gaussian", task_params: dict | None = None,
                   critic: str = "joint", seed: int = 0, steps: int = 100, levels=(2.0, 4.0),
                   diverged: dict | None = None, status: str = "complete", hidden: int = 16, layers: int = 1,
                   batch_size: int = 64, ds: int | None = None, dr: int | None = None, device: str = "cpu",
                   nuisance: float | None = None, precision: str = "fp32"):
    """Write a synthetic run directory with known numbers (for tests of leaderboards, gates and
    plots): ``rows`` are summary rows ``{"estimator", "true_mi", "bias", "variance", "mse"}``
    (``mean_estimate`` defaults to true_mi + bias).  ``estimates.csv`` holds a flat line at each
    estimator's mean estimate per level.  Returns the directory."""
    import dataclasses
    from pathlib import Path

    import numpy as np

    from .protocols.stream_run import RunConfig
    from .records import write_estimates, write_json, write_summary

    run_dir = Path(run_dir)
    levels = [float(v) for v in levels]
    names = list(dict.fromkeys(r["estimator"] for r in rows))
    mi = levels[0] if len(levels) == 1 else ",".join(f"{v:g}" for v in levels)
    cfg = RunConfig(task=task, task_params=dict(task_params or {}), estimators=names, critic=critic, hidden=hidden,
                    layers=layers, mi=mi, steps=steps, batch_size=batch_size, seed=seed, device=device,
                    precision=precision)
    bounds = np.round(np.arange(len(levels) + 1) * steps / len(levels)).astype(int)
    info = {"task": task, "ds": ds if ds is not None else (task_params or {}).get("dim", 10),
            "dr": dr if dr is not None else (task_params or {}).get("dim", 10)}
    if nuisance is not None:
        info["nuisance"] = nuisance
    summary = []
    for r in rows:
        full = {"task": task, "critic": critic, "steps": int(bounds[1] - bounds[0]), **r}
        full.setdefault("mean_estimate", float(r["true_mi"]) + float(r["bias"]))
        summary.append(full)
    true_mi = np.repeat(levels, np.diff(bounds))
    est = np.zeros((len(names), steps))
    for i, n in enumerate(names):
        for j, lv in enumerate(levels):
            m = [s["mean_estimate"] for s in summary if s["estimator"] == n and float(s["true_mi"]) == lv]
            est[i, bounds[j]:bounds[j + 1]] = m[0] if m else np.nan
    write_summary(run_dir / "summary.csv", summary)
    write_estimates(run_dir / "estimates.csv", names, critic, true_mi, est)
    write_json(run_dir / "config.json", {
        "status": status, "config": dataclasses.asdict(cfg),
        "schedule": {"levels_bits": levels, "description": "synthetic", "boundaries": bounds.tolist()},
        "task_info": info, "environment": {"device": device, "device_name": "test", "torch": "x", "torch_threads": 1},
        "ceilings_bits": {}, "notes": [], "diverged": dict(diverged or {}), "wall_seconds": 1.0})
    return run_dir
