#!/usr/bin/env python
"""Training speed of the paper's protocol (joint critic 2x256, batch 64), in one process:

1. ms/step for one estimator (SMILE) on Gaussian (d 10), vision (ds 10, 28x28) and text (ds 10,
   10 x 384): mibench's step (vectorised on-device sampler, split first layer, oneDNN GEMMs)
   vs. a naive implementation of the same step (per-sample sampler loop with per-image resize,
   all K^2 concatenations through the MLP, default aten GEMMs), and the fraction of the GEMM
   peak measured in the same run.
2. All 8 paper estimators on the same batch stream, through the harness: one critic per
   estimator (8, the straightforward way) vs one critic per training objective (5: JS and
   SMILE-1/5/inf share one JS-trained critic), and the 5 critics sequential vs stacked (batched)
   (the Table-3 grid's wall time is benchmarks/bench_grid.py's job).
3. Resident memory at the start and end of a longer run (does it grow?).

    MIBENCH_DATA=/path/to/data python benchmarks/bench_training.py [--steps 20] [--rounds 3]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np
import torch
from common import gemm_peak_gflops, header, interleaved, joint_train_flops

from mibench.critics import kernels, make_critic
from mibench.estimators import PAPER_ESTIMATORS, make_estimator
from mibench.protocols.stream import training as stream_training
from mibench.protocols.stream.run import RunConfig, run
from mibench.tasks import make_task

DOMAINS = {"gaussian": {"dim": 10}, "vision": {}, "text": {}}


class NaiveSampler:
    """Per-sample Python loop over the task's construction (vision: bench_vision_sampler's loop +
    per-image resize; text: a loop of per-review gathers and concatenations; gaussian: per-sample
    draws)."""

    def __init__(self, task):
        self.task = task
        self.rng = np.random.default_rng(0)
        if task.name == "vision":
            from bench_vision_sampler import PerSampleSampler

            self.impl = PerSampleSampler(task)
        elif task.name == "text":
            items = task.pool.items.cpu().numpy()
            off = int(task.pool.offsets[1])
            self.by_class = [items[:off], items[off:]]

    def sample(self, k, mi_bits):
        t = self.task
        if t.name == "vision":
            return self.impl.sample(k, mi_bits)
        if t.name == "text":
            from bench_vision_sampler import draw_sources

            beta = t.crossover(mi_bits)
            xs, ys = [], []
            for _ in range(k):
                bx, by = draw_sources(self.rng, self.by_class, t.ds, beta)
                xs.append(np.concatenate(bx))
                ys.append(np.concatenate(by))
            return torch.from_numpy(np.stack(xs)).float(), torch.from_numpy(np.stack(ys)).float()
        rho = t.rho(mi_bits)
        xs, ys = [], []
        for _ in range(k):
            x = self.rng.standard_normal(t.dim)
            xs.append(x)
            ys.append(rho * x + np.sqrt(1 - rho * rho) * self.rng.standard_normal(t.dim))
        return torch.tensor(np.array(xs), dtype=torch.float32), torch.tensor(np.array(ys), dtype=torch.float32)


def step_fns(task, k=64, mi=2.0):
    """(mibench step, naive step) for one SMILE estimator on ``task``."""
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    ours_c, naive_c = make_critic("joint", task.dim_x, task.dim_y), make_critic("joint", task.dim_x, task.dim_y)
    head = make_estimator("smile")
    opt_o, opt_n = kernels.make_adam(ours_c.parameters(), 5e-4), torch.optim.Adam(naive_c.parameters(), 5e-4)
    naive = NaiveSampler(task)

    def ours():
        kernels.ONEDNN = kernels._onednn_available()
        x, y = task.sample(k, mi, gen)
        loss, _ = head(ours_c(x, y))
        opt_o.zero_grad(set_to_none=True)
        loss.backward()
        opt_o.step()

    def naive_step():
        kernels.ONEDNN = False
        x, y = naive.sample(k, mi)
        loss, _ = head(naive_c.forward_naive(x, y))
        opt_n.zero_grad(set_to_none=True)
        loss.backward()
        opt_n.step()

    return ours, naive_step


def engine_ms_per_step(task_name, engine, steps, shared=True):
    """ms per step of all 8 paper estimators through the harness itself (``mibench.protocols.stream.run.run``),
    one engine: sequential oneDNN critics or stacked (batched) critics.  ``shared=False`` trains
    one critic per estimator (the harness's grouping, ``mibench.protocols.stream.training.training_groups``,
    replaced by singletons for this call)."""
    cfg = RunConfig(task=task_name, task_params=DOMAINS[task_name], estimators=PAPER_ESTIMATORS, steps=steps,
                    mi="2", device="cpu", engine=engine, log_every=steps)
    kernels.ONEDNN = kernels._onednn_available()                # section 1's naive step switches it off
    grouping = stream_training.training_groups
    if not shared:
        stream_training.training_groups = lambda names: {str(i): [i] for i in range(len(names))}
    try:
        run(dataclasses.replace(cfg, steps=5), plot=False)      # warm-up (pools, caches, allocator)
        res = run(cfg, plot=False)
    finally:
        stream_training.training_groups = grouping
    assert res.config["critics_trained"] == (5 if shared else 8)
    return res.config["wall_seconds"] / steps


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5, help="steps per timing")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--domains", default="gaussian,vision,text")
    p.add_argument("--memory-steps", type=int, default=600)
    p.add_argument("--engine-steps", type=int, default=40, help="steps per engine in section 2")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    header("training step benchmark: joint critic 2x256, batch 64")
    kernels.tune_cpu_allocator()      # as the harness does for every CPU run
    peak = gemm_peak_gflops()
    print(f"GEMM 4096x256x256: aten {peak['aten']:.0f} GFLOP/s, oneDNN {peak.get('onednn', float('nan')):.0f} GFLOP/s")
    best_peak = max(peak.values())
    domains = [d for d in args.domains.split(",") if d]
    tasks = {d: make_task(d, **DOMAINS[d]) for d in domains}

    print("\n## 1. one estimator (SMILE): mibench vs naive, ms/step")
    print(f"{'domain':<9} {'dr':>6} {'mibench':>9} {'naive':>9} {'speed-up':>9} {'GFLOP/step':>11} {'% of peak':>9}")
    single = {}
    for d, task in tasks.items():
        ours, naive = step_fns(task)
        t = interleaved({"ours": ours, "naive": naive}, args.rounds, args.reps)
        single[d] = t
        fl = joint_train_flops(64, task.dim_x, task.dim_y)
        print(f"{d:<9} {task.dim_x:>6} {t['ours'] * 1e3:9.1f} {t['naive'] * 1e3:9.1f} {t['naive'] / t['ours']:8.1f}x "
              f"{fl / 1e9:11.2f} {100 * fl / t['ours'] / 1e9 / best_peak:8.0f}%")

    print("\n## 2. all 8 estimators on one batch stream (the harness), ms/step: one critic per estimator (8) vs "
          "one per training objective (5), sequential vs stacked")
    for d in tasks:
        t = {"8 critics": engine_ms_per_step(d, "sequential", args.engine_steps, shared=False),
             **{e: engine_ms_per_step(d, e, args.engine_steps) for e in ("sequential", "stacked")}}
        print(f"{d:<9} 8 critics {t['8 critics'] * 1e3:7.1f}   5 shared, sequential {t['sequential'] * 1e3:7.1f} "
              f"({t['8 critics'] / t['sequential']:.2f}x faster)   5 shared, stacked {t['stacked'] * 1e3:7.1f} "
              f"(stacked runs at {t['sequential'] / t['stacked']:.2f}x sequential's speed)")
    print("\n(the Table-3 grid's wall time: benchmarks/bench_grid.py)")

    print(f"\n## 3. memory: resident set over a {args.memory_steps}-step 8-estimator Gaussian run")
    kernels.ONEDNN = kernels._onednn_available()
    m0 = rss_mb()
    cfg = RunConfig(task="gaussian", estimators=PAPER_ESTIMATORS, steps=args.memory_steps, device="cpu", log_every=100)
    t0 = time.perf_counter()
    res = run(cfg)
    print(f"RSS before {m0:.0f} MB, after {rss_mb():.0f} MB; wall {time.perf_counter() - t0:.1f} s "
          f"({res.config['steps_per_second']} steps/s for all 8)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
