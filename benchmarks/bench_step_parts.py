#!/usr/bin/env python
"""What each CPU step optimisation buys, one at a time, in one run (joint critic 2x256, batch 64,
SMILE, 1 thread unless --threads):

1. optimizer: fused Adam (the harness's) vs the per-parameter loop, at d = 10 / 784 / 3840;
2. weight-gradient GEMM: oneDNN matmul reading the transposed operands in place vs oneDNN linear
   on copies (``mibench.critics.kernels._grad_weight``), in the whole training step;
3. allocator: freed activation buffers kept in the heap (``kernels.tune_cpu_allocator``) vs
   glibc's default (each variant in its own subprocess, since the setting is per process);
4. ``torch.compile`` (Inductor) of the same critic written in plain torch ops vs mibench's step.

    python benchmarks/bench_step_parts.py [--threads 1]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import torch
from common import header, interleaved

from mibench.critics import kernels, make_critic
from mibench.estimators import make_estimator


def train_step(dim: int, fused: bool = True, batch: int = 64):
    torch.manual_seed(0)
    critic, head = make_critic("joint", dim, dim), make_estimator("smile")
    opt = kernels.make_adam(critic.parameters(), 5e-4) if fused else torch.optim.Adam(critic.parameters(), lr=5e-4)
    x, y = torch.randn(batch, dim), torch.randn(batch, dim)

    def step():
        opt.zero_grad(set_to_none=True)
        loss, _ = head(critic(x, y))
        loss.backward()
        opt.step()

    return step, critic, opt


def optimizer_only(dim: int, fused: bool):
    _, critic, opt = train_step(dim, fused)
    for p in critic.parameters():
        p.grad = torch.randn_like(p)
    return opt.step


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.child:                                  # section 3's subprocess: one allocator setting
        if args.child == "tuned":
            kernels.tune_cpu_allocator()
        t = interleaved({"step": train_step(784)[0]}, rounds=3, reps=30)
        print(f"{t['step'] * 1e3:.2f}")
        return 0

    kernels.tune_cpu_allocator()
    header("CPU step optimisations one at a time: joint critic 2x256, batch 64, SMILE")
    print("\n## 1. optimizer step (Adam), ms")
    for dim in (10, 784, 3840):
        t = interleaved({"fused": optimizer_only(dim, True), "loop": optimizer_only(dim, False)}, rounds=3, reps=20)
        print(f"d = {dim:<5} fused {t['fused'] * 1e3:6.2f}   per-parameter loop {t['loop'] * 1e3:6.2f}   "
              f"-> {t['loop'] / t['fused']:.1f}x")

    print("\n## 2. weight-gradient GEMM route, whole training step at d = 784, ms/step")
    if kernels.ONEDNN and kernels.strided_mm_is_fp32():
        step = train_step(784)[0]

        def with_route(strided):
            def f():
                kernels._STRIDED_MM = strided
                step()
            return f

        t = interleaved({"in place": with_route(True), "copies": with_route(False)}, rounds=3, reps=20)
        kernels._STRIDED_MM = True
        print(f"transposed operands read in place {t['in place'] * 1e3:6.2f}   oneDNN linear on copies "
              f"{t['copies'] * 1e3:6.2f}   -> {t['copies'] / t['in place']:.2f}x")
    else:
        print("not available here (the probe found no fp32 in-place route): steps use the copies")

    print("\n## 3. allocator, whole training step at d = 784, ms/step (one subprocess per setting)")
    res = {}
    for setting in ("default", "tuned", "default", "tuned"):
        env = dict(os.environ, MIBENCH_ALLOCATOR=setting)
        out = subprocess.run([sys.executable, __file__, "--threads", str(args.threads), "--child", setting],
                             env=env, capture_output=True, text=True, check=True).stdout
        res.setdefault(setting, []).append(float(out.strip().splitlines()[-1]))
    d, t = min(res["default"]), min(res["tuned"])
    print(f"glibc default {d:6.2f}   freed buffers kept in the heap {t:6.2f}   -> {d / t:.2f}x (best of 2 each)")

    print("\n## 4. torch.compile (Inductor) of the critic in plain torch ops vs mibench, d = 10, ms/step")
    try:
        print(compile_vs_mibench())
    except Exception as exc:   # no C++ compiler, unsupported platform, ...
        print(f"torch.compile unavailable here: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
    return 0


def compile_vs_mibench(dim: int = 10, batch: int = 64) -> str:
    import time

    ours, critic, opt = train_step(dim)
    head = make_estimator("smile")
    x, y = torch.randn(batch, dim), torch.randn(batch, dim)

    def plain(x, y):
        first = critic.net[0]
        h = torch.relu(torch.nn.functional.linear(x, first.weight_x, first.bias)[:, None]
                       + torch.nn.functional.linear(y, first.weight_y)[None]).reshape(batch * batch, -1)
        for m in list(critic.net)[2:]:
            h = m(h)
        return h.reshape(batch, batch)

    compiled = torch.compile(plain)

    def comp_step():
        opt.zero_grad(set_to_none=True)
        loss, _ = head(compiled(x, y))
        loss.backward()
        opt.step()

    t0 = time.perf_counter()
    comp_step()
    build = time.perf_counter() - t0
    t = interleaved({"compiled": comp_step, "mibench": ours}, rounds=3, reps=10)
    return (f"compiled {t['compiled'] * 1e3:6.2f}   mibench {t['mibench'] * 1e3:6.2f}   -> mibench "
            f"{t['compiled'] / t['mibench']:.2f}x faster (compilation took {build:.0f} s)")


if __name__ == "__main__":
    raise SystemExit(main())
