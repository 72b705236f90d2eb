#!/usr/bin/env python
"""The convolutional critics against the paper's joint MLP critic on vision 64 x 64 (issue 33).

Streaming protocol (the paper's), the same steps for every critic: the vision task at its defaults
(ds = 10 MNIST 0/1 digits, layout 1x2x5, 64 x 64 pixels) on the staircase 2, 4, 6 bits (``--mi
2,4,6``: steps / 3 per level), batch 64, Adam 5e-4, critics ``joint`` (2 hidden layers of 256),
``conv`` (CNN encoders, f(x)^T g(y) in 32 dimensions) and ``conv-joint`` (CNN encoders, joint head
2 x 256); the
estimators smile-5 and js (one JS-trained critic) and infonce (its own critic); seeds 0-2.  Per
critic, estimator and level: bias, variance over the level's steps after the burn-in (the paper's
metrics, :mod:`mibench.metrics`) and MSE, each the mean over seeds (± the standard deviation of the
bias over seeds), and seconds per training step of the run (both critics, sampling included).

CPU-sized: a few hundred steps per level, far below the paper's 4,000, so the numbers compare the
critics early in training.  The critics run one after another (interleaved by seed, so load on a
shared machine hits them alike).

    MIBENCH_DATA=/path/to/data python benchmarks/bench_conv_critic.py [--steps 900] [--burn-in 150]
        [--seeds 0,1,2] [--threads 1] [--out benchmarks/results/conv_vs_mlp_vision.txt]
"""
from __future__ import annotations

import argparse
import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import torch
from common import header

from mibench.protocols.stream.run import RunConfig, run

CRITICS = ("joint", "conv", "conv-joint")
ESTIMATORS = ["smile-5", "js", "infonce"]
LEVELS = (2.0, 4.0, 6.0)


def one_run(critic: str, seed: int, steps: int, burn_in: int, device: str) -> dict:
    """{(estimator, level): summary row} and the run's seconds per step."""
    cfg = RunConfig(task="vision", estimators=ESTIMATORS, critic=critic, mi=",".join(f"{v:g}" for v in LEVELS),
                    steps=steps, burn_in=burn_in, seed=seed, device=device, log_every=max(1, steps // 6))
    res = run(cfg, plot=False)
    rows = {(r["estimator"], float(r["true_mi"])): r for r in res.summary}
    return {"rows": rows, "s_per_step": float(res.config["wall_seconds"]) / steps, "diverged": res.diverged}


def critic_parameters(critic: str) -> int:
    from mibench.critics import make_critic

    c = make_critic(critic, 4096, 4096, shapes=((1, 64, 64), (1, 64, 64)))
    return sum(p.numel() for p in c.parameters())


def table(results: dict, seeds: list[int]) -> list[str]:
    lines = [f"{'critic':<15} {'estimator':<9} {'true':>4} {'mean':>7} {'bias':>7} {'± sd':>6} {'var':>7} "
             f"{'mse':>7} {'s/step':>7}"]
    lines.append("-" * len(lines[0]))
    for critic in CRITICS:
        runs = [results[(critic, s)] for s in seeds]
        sps = np.mean([r["s_per_step"] for r in runs])
        for est in ESTIMATORS:
            for level in LEVELS:
                rs = [r["rows"][(est, level)] for r in runs]
                bias = np.array([r["bias"] for r in rs], dtype=float)
                mean = np.nanmean([r["mean_estimate"] for r in rs])
                var = np.nanmean([r["variance"] for r in rs])
                mse = np.nanmean([r["mse"] for r in rs])
                lines.append(f"{critic:<15} {est:<9} {level:>4g} {mean:>7.3f} {np.nanmean(bias):>7.3f} "
                             f"{np.nanstd(bias):>6.3f} {var:>7.3f} {mse:>7.3f} {sps:>7.3f}")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=900, help="steps of each run (a third per level)")
    p.add_argument("--burn-in", type=int, default=150, help="steps left out at the start of each level")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default=None, help="also write the report here")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    buf = io.StringIO()
    with redirect_stdout(buf):
        header(f"conv vs joint MLP critic: vision 64x64 (ds 10, 1x2x5), streaming, mi 2,4,6 bits, {args.steps} steps "
               f"({args.steps // 3} per level, burn-in {args.burn_in}), batch 64, lr 5e-4, seeds {args.seeds}, "
               f"{args.threads} thread(s); CPU-sized: the paper trains 4,000 steps per level")
    print(buf.getvalue(), end="")
    results = {}
    for seed in seeds:                      # interleaved: load on the machine hits every critic alike
        for critic in CRITICS:
            results[(critic, seed)] = r = one_run(critic, seed, args.steps, args.burn_in, args.device)
            print(f"# done: {critic} seed {seed}: {r['s_per_step']:.3f} s/step, diverged {r['diverged'] or 'none'}",
                  file=sys.stderr, flush=True)
    lines = [buf.getvalue().rstrip("\n"), ""]
    lines.append("parameters (64x64 inputs): " + ", ".join(f"{c} {critic_parameters(c):,}" for c in CRITICS))
    lines.append("bias, var, mse in bits (bits^2): per level after the burn-in, mean over seeds; ± sd: the bias's "
                 "standard deviation over seeds; s/step: the run's wall seconds per step (2 critics + sampling)")
    lines.append("")
    lines += table(results, seeds)
    diverged = {f"{c} seed {s}": r["diverged"] for (c, s), r in results.items() if r["diverged"]}
    lines.append("")
    lines.append(f"diverged: {diverged or 'none'}")
    text = "\n".join(lines) + "\n"
    print(text[len(buf.getvalue()):], end="")
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
