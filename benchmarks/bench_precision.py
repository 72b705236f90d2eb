#!/usr/bin/env python
"""Opt-in reduced precision: its speed and its effect on the estimates, in one run.

For each domain, all 8 paper estimators train on the stepwise schedule (joint critic 2x256, batch
64) three times: fp32 seed 0 (the reference), bf16 seed 0 (same initialisation and batches) and
fp32 seed 1.  Reported per estimator: the mean over levels of |bf16 - fp32| in the per-level mean
estimate, next to the same quantity between the two fp32 seeds — the run-to-run spread that any
precision effect should be compared with — and the wall-time ratio.  On CUDA, tf32 is measured too.

    MIBENCH_DATA=/path/to/data python benchmarks/bench_precision.py [--steps 1000] [--domains gaussian,vision]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
from common import header

from mibench.estimators import PAPER_ESTIMATORS
from mibench.protocols.stream.run import RunConfig, run

PARAMS = {"gaussian": {"dim": 10}, "vision": {}, "text": {}}


def level_means(res) -> np.ndarray:
    """(n_estimators, n_levels) mean estimate per level, bits."""
    levels = np.unique(res.true_mi)
    return np.array([[np.nanmean(res.estimates[e, res.true_mi == v]) for v in levels]
                     for e in range(len(res.names))])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--domains", default="gaussian,vision")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    header(f"precision: fp32 vs opt-in reduced precision, 8 estimators, {args.steps} steps stepwise")
    cuda = args.device.startswith("cuda") or (args.device == "auto" and torch.cuda.is_available())
    reduced = ["bf16", "tf32"] if cuda else ["bf16"]
    for d in [x for x in args.domains.split(",") if x]:
        base = {"task": d, "task_params": PARAMS[d], "estimators": PAPER_ESTIMATORS, "steps": args.steps,
                "device": args.device, "log_every": max(1, args.steps // 4)}
        ref = run(RunConfig(seed=0, **base), plot=False)
        other_seed = run(RunConfig(seed=1, **base), plot=False)
        m_ref, m_seed = level_means(ref), level_means(other_seed)
        seed_gap = np.nanmean(np.abs(m_seed - m_ref), axis=1)
        print(f"\n## {d} ({ref.config['environment']['device_name']}): fp32 {ref.config['wall_seconds']:.1f} s")
        for prec in reduced:
            r = run(RunConfig(seed=0, precision=prec, **base), plot=False)
            gap = np.nanmean(np.abs(level_means(r) - m_ref), axis=1)
            speed = ref.config["wall_seconds"] / r.config["wall_seconds"]
            print(f"{prec}: {r.config['wall_seconds']:.1f} s -> {speed:.2f}x fp32's speed; "
                  f"diverged: {r.diverged or 'none'}")
            print(f"  {'estimator':<10} {'|' + prec + ' - fp32| bits':>20} {'|seed1 - seed0| bits':>21}")
            for i, name in enumerate(ref.names):
                print(f"  {name:<10} {gap[i]:20.3f} {seed_gap[i]:21.3f}")
            print(f"  {'mean':<10} {np.nanmean(gap):20.3f} {np.nanmean(seed_gap):21.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
