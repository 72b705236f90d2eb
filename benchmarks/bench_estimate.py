"""mibench.estimate on the ``distributions`` family at n pairs (default 10,000): per case the truth,
the default estimate, its error, status, standard error and wall time, next to the KSG estimator
(mibench.disentanglement.backends.ksg_mi_continuous, k = 3) as the peer; plus the speed of a 1-d
10,000-pair call with the new defaults vs the old ones (SMILE-5, joint 2 x 256, 2,000 steps,
batch 64, whole-batch scoring), measured in the same run.

    flock /tmp/mibench-measure.lock nice -n 5 python benchmarks/bench_estimate.py \
        [--cases a,b,...] [--mi 1.0] [--n 10000] [--seeds 0] [--speed] [--out benchmarks/results/estimate.txt]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import mibench  # noqa: E402
from mibench.disentanglement.backends import ksg_mi_continuous  # noqa: E402
from mibench.tasks.distributions import SUITE, draw  # noqa: E402


def old_defaults(x, y, seed=0):
    """The pre-issue-13 estimate defaults, reproduced with the harness's training loop."""
    from mibench.api import ArrayTask
    from mibench.harness import RunConfig, _train, build_models
    from mibench.schedule import parse_schedule

    rng = np.random.default_rng(seed)
    perm = rng.permutation(x.shape[0])
    tr = perm[: int(0.8 * x.shape[0])]
    xt, yt = torch.as_tensor(x[tr]), torch.as_tensor(y[tr])
    task = ArrayTask((xt - xt.mean(0)) / xt.std(0), (yt - yt.mean(0)) / yt.std(0))
    cfg = RunConfig(task="arrays", estimators=["smile"], critic="joint", hidden=256, layers=2, mi=0.0, steps=2000,
                    batch_size=64, lr=5e-4, seed=seed, device="cpu").resolved()
    critics, heads, groups = build_models(cfg, task.dim_x, task.dim_y, torch.device("cpu"))
    _train(cfg, task, parse_schedule(0.0, 2000), critics, heads, groups, torch.device("cpu"), False)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(SUITE))
    ap.add_argument("--mi", type=float, default=1.0, help="true MI in nats")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--speed", action="store_true", help="also time old vs new defaults on 1-d data")
    ap.add_argument("--no-ksg", action="store_true")
    ap.add_argument("--ksg-max-dim", type=int, default=20,
                    help="skip KSG above this dx + dy (it took 133 s at 25x25 on the busy 2-core machine)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines: list[str] = []

    def emit(s=""):
        print(s, flush=True)
        lines.append(s)

    import platform
    emit(f"# bench_estimate: n = {args.n} pairs, true MI = {args.mi} nats, seeds {args.seeds}; "
         f"torch {torch.__version__}, {platform.processor() or platform.machine()}, "
         f"{torch.get_num_threads()} torch threads available; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    emit(f"# load average at start: {', '.join(f'{v:.2f}' for v in __import__('os').getloadavg())} (shared 2-core machine)")
    emit(f"{'case':22s} {'seed':>4s} {'truth':>6s} {'estimate':>8s} {'stderr':>6s} {'error':>7s} {'status':22s} "
         f"{'seconds':>7s} {'steps':>5s} {'params':>6s} {'ksg':>6s} {'ksg_err':>7s} {'ksg_s':>6s}")
    for name in args.cases.split(","):
        for seed in [int(s) for s in args.seeds.split(",")]:
            x, y, truth = draw(name, args.n, mi_nats=args.mi, seed=seed)
            r = mibench.estimate(x, y, units="nats", seed=seed, device="cpu")
            if args.no_ksg or x.shape[1] + y.shape[1] > args.ksg_max_dim:
                k, ks = float("nan"), float("nan")
            else:
                t0 = time.perf_counter()
                k = ksg_mi_continuous(x.astype(np.float64), y.astype(np.float64), k=3, seed=seed)
                ks = time.perf_counter() - t0
            emit(f"{name:22s} {seed:4d} {truth:6.3f} {r.mi:8.3f} {r.mi_stderr:6.3f} {r.mi - truth:+7.3f} "
                 f"{r.status:22s} {r.seconds:7.1f} {r.steps_run:5d} {r.n_parameters:6d} {k:6.3f} {k - truth:+7.3f} {ks:6.1f}")
    if args.speed:
        x, y, _ = draw("gauss-dense-1x1", 10_000, mi_nats=1.0, seed=0)
        t0 = time.perf_counter()
        r = mibench.estimate(x, y, units="nats", device="cpu")
        new = time.perf_counter() - t0
        t0 = time.perf_counter()
        old_defaults(x, y)
        old = time.perf_counter() - t0
        emit(f"# speed, 1-d 10,000 pairs: new defaults {new:.1f} s ({r.steps_run} steps, status {r.status}); "
             f"old defaults (2000 steps, batch 64, joint 2x256, torch's threads) {old:.1f} s; ratio old/new {old / new:.1f}x")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a") as fh:
            fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
