#!/usr/bin/env python
"""KSG (mibench.estimators.classical.ksg_mi_continuous, k = 3): the two neighbour searches at
n = 10,000 — seconds per estimate and agreement — and the brute-force path on the vision task.

1. Gaussian X ~ N(0, I_d), Y = rho X + sqrt(1 - rho^2) N(0, I_d), truth -(d/2) log(1 - rho^2) nats:
   ``kdtree`` (max-norm) and ``brute`` (Euclidean marginals, joint max) on the same datasets, for
   the joint dimensions around the ``auto`` threshold (KSG_BRUTE_ABOVE).
2. vision (default 64 x 64 images, 4096 dimensions per side) at n = 10,000 and MI 4 bits, the
   sample protocol's dataset of seed 0: ``auto`` (= brute) with the given torch threads.

    python benchmarks/bench_ksg.py [--n 10000] [--dims 1,4,8,12] [--seeds 0,1,2] [--threads 1]
        [--vision-seeds 0] [--skip-gaussian]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
from common import header

from mibench.estimators.classical import (
    KSG_BRUTE_ABOVE,
    ksg_describe,
    ksg_mi_continuous,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--dims", default="1,4,8,12")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rho", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--vision-seeds", default="0")
    ap.add_argument("--skip-gaussian", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    header(__doc__.splitlines()[0])
    print(f"# torch threads {torch.get_num_threads()}, n = {args.n}, auto threshold: brute above {KSG_BRUTE_ABOVE} "
          "joint dimensions")
    if not args.skip_gaussian:
        print(f"{'case':<8}{'seed':>5}  {'method':<8}{'estimate':>10}{'truth':>9}{'error':>9}{'seconds':>9}")
        for d in map(int, args.dims.split(",")):
            truth = -0.5 * d * math.log(1 - args.rho ** 2)
            vals = {"kdtree": [], "brute": []}
            for seed in map(int, args.seeds.split(",")):
                rng = np.random.default_rng(seed)
                x = rng.standard_normal((args.n, d))
                y = args.rho * x + math.sqrt(1 - args.rho ** 2) * rng.standard_normal((args.n, d))
                for m in ("kdtree", "brute"):
                    t0 = time.perf_counter()
                    v = ksg_mi_continuous(x, y, k=3, seed=seed, method=m)
                    dt = time.perf_counter() - t0
                    vals[m].append(v)
                    print(f"d={d:<6}{seed:>5}  {m:<8}{v:>10.4f}{truth:>9.4f}{v - truth:>+9.4f}{dt:>9.2f}", flush=True)
            for m, v in vals.items():
                v = np.array(v)
                sd = v.std(ddof=1) if v.size > 1 else 0
                print(f"d={d:<6}{'all':>5}  {m:<8} mean error {v.mean() - truth:+.4f}, sd {sd:.4f} nats", flush=True)
            diff = np.array(vals["brute"]) - np.array(vals["kdtree"])
            per_seed = ", ".join(f"{x:+.4f}" for x in diff)
            print(f"d={d:<6}{'all':>5}  brute - kdtree per seed: {per_seed} nats", flush=True)
    from mibench.protocols.sample.run import draw_dataset
    from mibench.tasks import make_task

    task = make_task("vision", device="cpu")
    for seed in map(int, args.vision_seeds.split(",")) if args.vision_seeds else []:
        x, y = draw_dataset(task, args.n, 4.0, seed)
        print(f"# vision {task.info()['side']}x{task.info()['side']}: x {x.shape}, y {y.shape}; "
              f"{ksg_describe(x.shape[1], y.shape[1])}", flush=True)
        t0 = time.perf_counter()
        v = ksg_mi_continuous(x, y, k=3, seed=seed)
        dt = time.perf_counter() - t0
        print(f"vision seed {seed}: ksg {v / math.log(2):.4f} bits (truth 4), {dt:.1f} s per estimate", flush=True)


if __name__ == "__main__":
    main()
