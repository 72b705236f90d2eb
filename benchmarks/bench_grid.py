#!/usr/bin/env python
"""Wall time of the paper's Table-3 grid (8 estimators x Gaussian / vision / text, joint critic
2x256, batch 64, stepwise 2-10 bits, one seed), run through the product itself: ``mibench sweep
--preset table3`` (the same code path as a user's sweep: data loading, decodable pools, training,
run directories, plots).

The 8 estimators train 5 critics (JS and SMILE-1/5/inf share one JS-trained critic, see
:func:`mibench.estimators.training_groups`); the table shows both ms per estimator-step and ms per
critic-step.

By default it runs the preset's quick form, the full grid at 1/20 of the steps (1,000 instead of
20,000 per cell), and extrapolates the training part to 20,000 steps — stated as such in the
output.  ``--full`` runs the whole grid.

    MIBENCH_DATA=/path/to/data python benchmarks/bench_grid.py [--full] [--workers W --threads T]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import header

from mibench.sweep import run_sweep
from mibench.sweep.presets import load_preset


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="run all 20,000 steps per cell (no extrapolation)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: the sweep's own choice)")
    p.add_argument("--threads", type=int, default=None, help="torch threads per worker")
    p.add_argument("--device", default=None, help="auto | cpu | cuda (default auto)")
    p.add_argument("--precision", default=None, help="fp32 (default) | bf16 | tf32: see mibench run --precision")
    p.add_argument("--out", default=None, help="keep the sweep directory here (default: a temporary one)")
    args = p.parse_args(argv)
    form = "full" if args.full else "quick"
    spec = load_preset("table3", form)
    if args.device:
        spec.scalars["device"] = args.device
    if args.precision:
        spec.scalars["precision"] = args.precision
    full_steps = load_preset("table3", "full").cells()[0].config["steps"]
    header(f"Table-3 grid wall time ({form} form of the table3 preset, precision {args.precision or 'fp32'})")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp) / "table3"
        t0 = time.perf_counter()
        res = run_sweep(spec, out, workers=args.workers, threads=args.threads, plot=True)
        wall = time.perf_counter() - t0
        manifest = json.loads((out / "sweep.json").read_text())
        rows = []
        for name in sorted(p.name for p in out.iterdir() if (p / "config.json").exists()):
            cfg = json.loads((out / name / "config.json").read_text())
            rows.append((name, cfg))
    if not res.ok:
        print(f"FAILED cells: {res.failed}")
        return 1
    ex = manifest          # the manifest records the execution it chose: workers, threads_per_worker
    print(f"execution: {ex.get('workers')} workers x {ex.get('threads_per_worker')} threads, "
          f"device {rows[0][1]['environment'].get('device_name')}")
    print(f"{'cell':<78} {'estimators':>10} {'critics':>7} {'steps':>6} {'train s':>8} {'ms/est-step':>11} "
          f"{'ms/critic-step':>14} {'peak RSS MB':>11}")
    train = 0.0
    steps = rows[0][1]["config"]["steps"]
    for name, cfg in rows:
        n_est, n_crit = len(cfg["config"]["estimators"]), cfg.get("critics_trained", len(cfg["config"]["estimators"]))
        w = cfg["wall_seconds"]
        train += w
        rss = cfg.get("peak_memory", {}).get("process_max_rss_mb", float("nan"))
        print(f"{name:<78} {n_est:>10} {n_crit:>7} {steps:>6} {w:8.1f} {w / steps / n_est * 1e3:11.2f} "
              f"{w / steps / n_crit * 1e3:14.2f} {rss:11.0f}")
    print(f"\nsweep wall time: {wall:.1f} s for {len(rows)} cells x {steps} steps "
          f"(training {train:.1f} s summed over cells, i.e. over workers)")
    if steps != full_steps:
        scale = full_steps / steps
        overhead = max(0.0, wall - train / max(1, ex.get("workers") or 1))
        est = (wall - overhead) * scale + overhead
        print(f"EXTRAPOLATED full grid ({full_steps} steps per cell = {scale:.0f}x this run's steps; "
              f"training scaled, set-up ({overhead:.0f} s) not): {est / 60:.1f} min")
    else:
        print(f"full grid wall time: {wall / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
