"""A synthetic run directory with known numbers, for the tests of leaderboards, gates and plots."""
from __future__ import annotations


def write_fake_run(run_dir, rows: list[dict], *, task: str = "gaussian", task_params: dict | None = None,
                   critic: str = "joint", seed: int = 0, steps: int = 100, levels=(2.0, 4.0),
                   diverged: dict | None = None, status: str = "complete", hidden: int = 16, layers: int = 1,
                   batch_size: int = 64, ds: int | None = None, dr: int | None = None, device: str = "cpu",
                   nuisance: float | None = None, precision: str = "fp32", truth_check: str | None = None):
    """Write a synthetic run directory with known numbers (for tests of leaderboards, gates and
    plots): ``rows`` are summary rows ``{"estimator", "true_mi", "bias", "variance", "mse"}``
    (``mean_estimate`` defaults to true_mi + bias).  ``estimates.csv`` holds a flat line at each
    estimator's mean estimate per level.  Returns the directory."""
    import dataclasses
    from pathlib import Path

    import numpy as np

    from mibench.protocols.stream.config import StreamConfig
    from mibench.records import RunHeader, write_estimates, write_json, write_summary

    run_dir = Path(run_dir)
    levels = [float(v) for v in levels]
    names = list(dict.fromkeys(r["estimator"] for r in rows))
    mi = levels[0] if len(levels) == 1 else ",".join(f"{v:g}" for v in levels)
    cfg = StreamConfig(task=task, task_params=dict(task_params or {}), estimators=names, critic=critic, hidden=hidden,
                    layers=layers, mi=mi, steps=steps, batch_size=batch_size, seed=seed, device=device,
                    precision=precision)
    bounds = np.round(np.arange(len(levels) + 1) * steps / len(levels)).astype(int)
    info = {"task": task, "ds": ds if ds is not None else (task_params or {}).get("dim", 10),
            "dr": dr if dr is not None else (task_params or {}).get("dim", 10)}
    if nuisance is not None:
        info["nuisance"] = nuisance
    if truth_check is not None:
        info["truth_check"] = {"status": truth_check, "reason": "synthetic"}
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
    header = RunHeader("stream", None, dataclasses.asdict(cfg),
                       {"levels_bits": levels, "description": "synthetic", "boundaries": bounds.tolist()}, info,
                       {"device": device, "device_name": "test", "torch": "x", "torch_threads": 1},
                       {"ceilings_bits": {}, "notes": []})
    write_json(run_dir / "config.json", {**header.as_config(), "status": status, "diverged": dict(diverged or {}),
                                         "wall_seconds": 1.0})
    return run_dir
