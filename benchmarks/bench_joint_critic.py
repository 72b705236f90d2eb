#!/usr/bin/env python
"""Training steps/s of the joint critic (batch 64, 2 hidden layers of 256, SMILE objective,
Adam), at d = 10 and d = 784: naive concatenation of all K^2 pairs vs. the split first layer,
each with aten (MKL) GEMMs and with mibench's oneDNN kernels.  Variants alternate within each
round, so the ratios hold even on a loaded machine.

    python benchmarks/bench_joint_critic.py [--rounds 3] [--reps 10] [--threads 2]
"""
from __future__ import annotations

import argparse

import torch
from common import header, interleaved, joint_train_flops

from mibench.critics import kernels, make_critic
from mibench.estimators import make_estimator


def step_fn(dim: int, split: bool, onednn: bool, batch: int = 64):
    torch.manual_seed(0)
    critic = make_critic("joint", dim, dim)
    head = make_estimator("smile")
    opt = kernels.make_adam(critic.parameters(), lr=5e-4)   # the harness's optimizer, for every variant
    x, y = torch.randn(batch, dim), torch.randn(batch, dim)
    forward = critic if split else critic.forward_naive

    def step():
        kernels.ONEDNN = onednn and kernels._onednn_available()
        loss, _ = head(forward(x, y))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    kernels.tune_cpu_allocator()      # as the harness does for every CPU run (all variants alike)
    header("joint critic training step, batch 64, hidden 2x256")
    print(f"{'d':>5} {'variant':<26} {'ms/step':>9} {'steps/s':>9} {'GFLOP/s':>8} {'vs naive':>9}")
    for dim in (10, 784):
        cases = {
            "naive concat (aten)": step_fn(dim, split=False, onednn=False),
            "split first layer (aten)": step_fn(dim, split=True, onednn=False),
            "split + oneDNN (mibench)": step_fn(dim, split=True, onednn=True),
        }
        t = interleaved(cases, args.rounds, args.reps)
        flops = joint_train_flops(64, dim, dim)
        base = t["naive concat (aten)"]
        for name, sec in t.items():
            print(f"{dim:>5} {name:<26} {sec * 1e3:9.2f} {1 / sec:9.1f} {flops / sec / 1e9:8.1f} {base / sec:8.2f}x")
    kernels.ONEDNN = kernels._onednn_available()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
