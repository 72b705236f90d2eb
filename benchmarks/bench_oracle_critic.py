"""How far mibench.estimate's held-out readout can go on the high-dimensional Gaussians of the
``distributions`` family: the DV bound on the same held-out 2,000 pairs (the split mibench.estimate
uses for a seed) of (a) the log-density-ratio critic of the *true* distribution (an oracle: the
Gaussian of the true covariance, or for ``student-t`` cases the t of the true scale and dof), (b) the
Gaussian critic fitted on the 8,000 training pairs (mibench.estimate's plain start, with and without
its debiasing of the canonical correlations) and (c) the start mibench.estimate fits
(:func:`mibench.estimation.gaussian_start.fit_start`: Student-t tails and pooled correlations where
chosen; ``pooled``: the Gaussian with pooled correlations whether chosen or not).  The gap between (a)
and (b) is what estimating the cross-covariance from 8,000 pairs costs any held-out bound built on it;
(c) - (b) is what the fitted start recovers.

    python benchmarks/bench_oracle_critic.py [--cases gauss-dense-50x50,...] [--seeds 0,1,2] [--out FILE]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from peers.comparison import table_writer  # noqa: E402

from mibench.estimation.gaussian_start import GaussianResidualCritic, fit_start  # noqa: E402
from mibench.estimators.bounds import dv_bound  # noqa: E402
from mibench.tasks import make_task  # noqa: E402
from mibench.tasks.distributions import draw  # noqa: E402


def held_out_dv(z: np.ndarray, te: np.ndarray, dim_x: int, cov: np.ndarray, n_pairs: int | None = None,
                dof: float = float("inf"), pool: bool = False) -> float:
    """DV bound (nats) of the start critic of ``cov`` (mibench.estimate's start, in float64) on the
    held-out rows ``te`` of ``z``, every pair scored."""
    critic = GaussianResidualCritic(torch.nn.Identity(), cov, dim_x, n_pairs, dof, pool).double()
    with torch.no_grad():
        scores = critic.start_scores(torch.as_tensor(z[te, :dim_x]), torch.as_tensor(z[te, dim_x:]))
    return float(dv_bound(scores))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="gauss-dense-25x25,gauss-dense-50x50,gauss-sparse-50x50,"
                                       "student-t-dof3-1x1,student-t-dof5-5x5")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    emit = table_writer(Path(args.out), []) if args.out else print
    emit(f"# bench_oracle_critic: n = {args.n} (80 % training, 20 % held out as in mibench.estimate), truth 1 nat; "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    emit(f"{'case':20s} {'seed':>4s} {'oracle':>7s} {'fitted':>7s} {'fitted_raw':>10s} {'pooled':>7s} {'start':>7s}  "
         "start chosen   (DV on the held-out pairs, nats)")
    for case in args.cases.split(","):
        task = make_task(case)
        cov_true = task.covariance(task.rho(1.0 / np.log(2)))
        for seed in (int(s) for s in args.seeds.split(",")):
            x, y, _ = draw(case, args.n, mi_nats=1.0, seed=seed)
            perm = np.random.default_rng(seed).permutation(args.n)
            n_test = int(round(0.2 * args.n))
            tr, te = perm[:args.n - n_test], perm[args.n - n_test:]
            z = np.concatenate([x, y], 1).astype(np.float64)
            z -= z[tr].mean(0)
            fit = np.cov(z[tr], rowvar=False)
            dx = x.shape[1]
            start = fit_start(z[tr], dx)
            true_dof = float(task.dof) if task.kind == "student-t" else float("inf")
            emit(f"{case:20s} {seed:4d} {held_out_dv(z, te, dx, cov_true, dof=true_dof):7.3f} "
                 f"{held_out_dv(z, te, dx, fit, len(tr)):7.3f} {held_out_dv(z, te, dx, fit):10.3f} "
                 f"{held_out_dv(z, te, dx, fit, len(tr), pool=True):7.3f} "
                 f"{held_out_dv(z, te, dx, start.scale, len(tr), start.dof, start.pool):7.3f}  {start.info()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
