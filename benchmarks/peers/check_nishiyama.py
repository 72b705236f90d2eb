"""mibench's ``nishiyama`` bound beside torchfd's ``NishiyamaLoss`` (its reference implementation,
github.com/VanessB/pytorch-fd commit 51e7b4a) where the critic is fixed, so that training plays no part:

    python benchmarks/peers/check_nishiyama.py [--torchfd-src $TORCHFD_SRC/source/python] \
        [--out benchmarks/results/nishiyama_checks.txt]

(``--torchfd-src``, default the environment variable ``TORCHFD_SRC_PYTHON``, required: the folder holding
torchfd/ in the fetched pytorch-fd source, as run_mutinfo.py lays it out.)

torchfd needs only torch, so its unchanged source is imported here beside mibench (the trained
comparison, each side in its own environment, is compare_authors.py).  On gauss-dense-5x5 at 1 and 4
bits, with the critic the true log density ratio log p(x,y) / p(x)p(y):

1. the formula: both functions on the same critic values (per batch of 512 held-out pairs, x permuted
   within the batch), max |difference| in nats, with the variances each side takes (mibench's
   ``nishiyama_from_moments`` on torchfd's unbiased variances);
2. the readouts, 100 replicates each: mibench's (1,000 held-out pairs, every i != j pair a negative:
   ``nishiyama_bound`` on the score matrix) and the reference's (mutinfo's MINE readout: 2,500
   held-out pairs in batches of 512, x permuted within each batch, the batch values averaged), against
   the bound's population value (2,000,000 joint and 2,000,000 shuffled pairs).

Both readouts estimating the same population value, and the formula agreeing to rounding, leaves
any difference between the trained estimators to their training (compare_authors.py).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

BITS = 1.0 / math.log(2.0)


def gaussian_log_ratio(task, bits: float):
    """(f, draw): the true log density ratio of gauss-dense at ``bits`` and a sampler of its pairs."""
    s = np.asarray(task.covariance(task.rho(bits)), dtype=float)
    d = task.dim_x
    prec, prec_x, prec_y = np.linalg.inv(s), np.linalg.inv(s[:d, :d]), np.linalg.inv(s[d:, d:])
    const = 0.5 * (np.linalg.slogdet(s[:d, :d])[1] + np.linalg.slogdet(s[d:, d:])[1] - np.linalg.slogdet(s)[1])
    chol = np.linalg.cholesky(s)

    def quad(a, m):
        return np.einsum("...i,ij,...j->...", a, m, a)

    def f(x, y):
        xb, yb = np.broadcast_arrays(x, y)
        return const - 0.5 * quad(np.concatenate([xb, yb], -1), prec) + 0.5 * quad(xb, prec_x) + 0.5 * quad(yb, prec_y)

    def draw(rng, n):
        z = rng.standard_normal((n, 2 * d)) @ chol.T
        return z[:, :d], z[:, d:]

    return f, draw


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--torchfd-src", default=os.environ.get("TORCHFD_SRC_PYTHON"),
                    help="the folder holding torchfd/ (the fetched pytorch-fd's source/python; "
                         "default $TORCHFD_SRC_PYTHON)")
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "nishiyama_checks.txt"))
    args = ap.parse_args()
    if not args.torchfd_src:
        ap.error("--torchfd-src (or $TORCHFD_SRC_PYTHON) is required: the folder holding torchfd/")
    sys.path.insert(0, args.torchfd_src)

    import torch
    from torchfd.loss import NishiyamaLoss

    from mibench.estimators.kl_lower_bounds import nishiyama_bound, nishiyama_from_moments
    from mibench.tasks.registry import make_task

    torch.set_num_threads(1)
    reference = NishiyamaLoss()
    task = make_task("gauss-dense-5x5")
    lines = [f"# check_nishiyama: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; torch {torch.__version__}; "
             f"critic = the true log density ratio of gauss-dense-5x5; {args.replicates} replicates per readout; bits"]
    for bits in (1.0, 4.0):
        f, draw = gaussian_log_ratio(task, bits)
        rng = np.random.default_rng(0)
        x, y = draw(rng, 2_000_000)
        tp, tq = f(x, y), f(x, y[rng.permutation(len(y))])
        moments = (torch.tensor(v) for v in (tp.mean(), tp.var(), tq.mean(), tq.var()))
        population = nishiyama_from_moments(*moments).item()
        ours, theirs, formula = [], [], 0.0
        for _ in range(args.replicates):
            x, y = draw(rng, 1000)
            ours.append(nishiyama_bound(torch.tensor(f(x[None, :, :], y[:, None, :]).T)).item())
            x, y = draw(rng, 2500)
            values, weights = [], []
            for i in range(0, len(x), 512):
                xb, yb = x[i:i + 512], y[i:i + 512]
                p, q = torch.tensor(f(xb, yb)), torch.tensor(f(xb[rng.permutation(len(xb))], yb))
                value = -reference(p, q).item()
                formula = max(formula, abs(value - nishiyama_from_moments(p.mean(), p.var(), q.mean(), q.var()).item()))
                values.append(value)
                weights.append(len(xb))
            theirs.append(np.average(values, weights=weights))
        lines.append(f"gauss-dense-5x5@{bits:g}: population {population * BITS:.3f}; mibench readout (1,000 pairs, "
                     f"full matrix) {np.mean(ours) * BITS:.3f} +- {np.std(ours, ddof=1) * BITS:.3f}; reference readout "
                     f"(2,500 pairs, per-batch permutation) {np.mean(theirs) * BITS:.3f} "
                     f"+- {np.std(theirs, ddof=1) * BITS:.3f}; "
                     f"formula: max |torchfd - mibench| {formula:.1e} nats")
        print(lines[-1], flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
