"""Checks of torch-mist 0.2.17's generative estimators where the answer is known, run in the peer's own
environment (numpy + torch + torch-mist; never imports mibench), to tell a torch-mist property from a
difference of settings in benchmarks/results/generative_vs_torch_mist.txt:

    $TORCH_MIST_PYTHON benchmarks/peers/check_torch_mist.py DATA.npz [DATA.npz ...] [--train-gm]

($TORCH_MIST_PYTHON: the python of torch-mist's environment, set up as run_torch_mist.py says.)

1. Plug-in population values for jointly Gaussian (x, y) (from the sample covariance S of the file's
   pairs): the MI, the total correlations TC(X), TC(Y) (0.5 (sum log S_kk - log det S), the MI a
   diagonal Gaussian misses), and what each torch-mist stock estimator reads at its best fit of its
   stock densities: torch-mist's ``linear`` transform is a diagonal affine map, so its marginal q(x),
   q(y) (doe, gm) and its conditional q(y|x) (``conditional_linear``: ba, doe, club, l1out) are
   Gaussians of diagonal covariance; gm's joint (one affine autoregressive layer) is any Gaussian.
   Then gm = MI + TC(X) + TC(Y), ba = MI - TC(Y|X) (the conditional's total correlation),
   doe = MI - TC(Y|X) + TC(Y), club = sum_k S_yy,kk / S_y|x,kk - d_y.
2. torch-mist's own L1Out and CLUB modules with the conditional fixed to the plug-in Gaussian one
   (no training), read on the file's last 20 % in batches of 64 like ``estimate_mi``'s evaluation,
   beside the leave-one-out bound of Poole et al. 2019 (eq. 13) read from the same matrix of log q(y_i|x_j):
   L1Out_i = log q(y_i|x_i) - log 1/(K-1) sum_(j != i) q(y_i|x_j) (a mean over the x's for each y).
   A 1-d independent pair with the exact conditional N(0, 1) (MI 0, every bound 0 up to noise) is
   added first.
3. ``--train-gm``: torch-mist's stock gm (``estimate_mi``, the settings of run_torch_mist.py) trained
   on the file's pairs with y's rows permuted (MI 0, the marginals kept).
4. ``--train-flo``: torch-mist's stock flo on the file's pairs (first 80 % to train, last 20 % read),
   as run_torch_mist.py runs it (early stopping on, stock patience) and with ``early_stopping=False``,
   with the iterations each trained (from its training log).

One JSON line per file and check; nats.
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np


def total_correlation(cov: np.ndarray) -> float:
    return 0.5 * (float(np.sum(np.log(np.diag(cov)))) - float(np.linalg.slogdet(cov)[1]))


def plug_in(x: np.ndarray, y: np.ndarray) -> dict:
    dx = x.shape[1]
    s = np.cov(np.concatenate([x, y], 1).T)
    sxx, syy, sxy = s[:dx, :dx], s[dx:, dx:], s[:dx, dx:]
    cond = syy - sxy.T @ np.linalg.solve(sxx, sxy)
    mi = 0.5 * (np.linalg.slogdet(sxx)[1] + np.linalg.slogdet(syy)[1] - np.linalg.slogdet(s)[1])
    tcx, tcy, tcc = total_correlation(sxx), total_correlation(syy), total_correlation(cond)
    return {"mi": float(mi), "tc_x": tcx, "tc_y": tcy, "tc_y_given_x": tcc,
            "gm_stock": float(mi) + tcx + tcy, "ba_stock": float(mi) - tcc, "doe_stock": float(mi) - tcc + tcy,
            "club_diag": float(np.sum(np.diag(syy) / np.diag(cond))) - syy.shape[0],
            "club_true": float(np.trace(np.linalg.solve(cond, syy))) - syy.shape[0]}


def fixed_gaussian_conditional(weights: np.ndarray, bias: np.ndarray, scale: np.ndarray):
    """A pyro ConditionalDistribution q(y|x) = N(x W^T + b, diag scale^2) with fixed parameters."""
    import torch
    from pyro.distributions import ConditionalDistribution
    from torch.distributions import Independent, Normal

    w, b, sc = (torch.as_tensor(a, dtype=torch.float32) for a in (weights, bias, scale))

    class Fixed(ConditionalDistribution):
        def condition(self, context):
            return Independent(Normal(context @ w.T + b, sc.expand(*context.shape[:-1], -1)), 1)

    return Fixed()


def read_modules(x: np.ndarray, y: np.ndarray, q, batch: int = 64) -> dict:
    """torch-mist's L1Out and CLUB with conditional q, and the leave-one-out bound read along the other
    axis of the same matrix, averaged over batches of ``batch`` pairs (a short last batch included,
    as torch's DataLoader does)."""
    import torch
    from torch_mist.estimators.generative.implementations import CLUB, L1Out

    l1out, club = L1Out(q_Y_given_X=q), CLUB(q_Y_given_X=q)
    vals = {"torch_mist_l1out": [], "torch_mist_club": [], "l1out_over_x": []}
    for start in range(0, len(x), batch):
        xb = torch.as_tensor(x[start:start + batch])
        yb = torch.as_tensor(y[start:start + batch])
        with torch.no_grad():
            vals["torch_mist_l1out"].append(float(l1out.mutual_information(xb, yb)))
            vals["torch_mist_club"].append(float(club.mutual_information(xb, yb)))
            k = len(xb)
            m = q.condition(xb.unsqueeze(0)).log_prob(yb.unsqueeze(1)).double()   # [i, j] = log q(y_i | x_j)
            pos = torch.diagonal(m)
            off = m.masked_fill(torch.eye(k, dtype=torch.bool), -math.inf)
            vals["l1out_over_x"].append(float((pos - (torch.logsumexp(off, 1) - math.log(k - 1))).mean()))
    return {k: float(np.mean(v)) for k, v in vals.items()}


def gaussian_conditional(x: np.ndarray, y: np.ndarray):
    """Plug-in Gaussian conditional of y given x: (W, b, diag sd) from the sample moments."""
    dx = x.shape[1]
    s = np.cov(np.concatenate([x, y], 1).T)
    sxx, syy, sxy = s[:dx, :dx], s[dx:, dx:], s[:dx, dx:]
    w = np.linalg.solve(sxx, sxy).T
    b = y.mean(0) - x.mean(0) @ w.T
    cond = syy - sxy.T @ np.linalg.solve(sxx, sxy)
    return w, b, np.sqrt(np.diag(cond))


def main() -> int:
    import torch

    torch.set_num_threads(1)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    train_gm = "--train-gm" in sys.argv
    train_flo = "--train-flo" in sys.argv
    rng = np.random.default_rng(0)
    xi = rng.standard_normal((1000, 1)).astype(np.float32)
    yi = rng.standard_normal((1000, 1)).astype(np.float32)
    q = fixed_gaussian_conditional(np.zeros((1, 1)), np.zeros(1), np.ones(1))
    print(json.dumps({"file": "independent 1-d N(0,1) pair, exact conditional N(0, 1)", "check": "modules",
                      "truth": 0.0, **read_modules(xi, yi, q)}), flush=True)
    for path in args:
        d = np.load(path)
        x, y = np.asarray(d["x"], np.float64), np.asarray(d["y"], np.float64)
        print(json.dumps({"file": path, "check": "plug_in", **plug_in(x, y)}), flush=True)
        w, b, sd = gaussian_conditional(x, y)
        te = slice(int(0.8 * len(x)), None)
        q = fixed_gaussian_conditional(w, b, sd)
        print(json.dumps({"file": path, "check": "modules (best diagonal Gaussian q, last 20 %)",
                          **read_modules(x[te].astype(np.float32), y[te].astype(np.float32), q)}), flush=True)
        if train_gm:
            import time

            from torch_mist import estimate_mi

            torch.manual_seed(0)
            yp = y[np.random.default_rng(1).permutation(len(y))]
            n_tr = int(0.8 * len(x))
            t0 = time.perf_counter()
            out = estimate_mi(data=(x[:n_tr].astype(np.float32), yp[:n_tr].astype(np.float32)),
                              test_data=(x[n_tr:].astype(np.float32), yp[n_tr:].astype(np.float32)),
                              estimator="gm", verbose=False, hidden_dims=[256, 256], batch_size=64,
                              max_iterations=5000)
            pi = plug_in(x, yp)
            print(json.dumps({"file": path, "check": "stock gm on y permuted (MI 0)",
                              "gm": float(out[0] if isinstance(out, tuple) else out),
                              "predicted_tc_x_plus_tc_y": pi["tc_x"] + pi["tc_y"],
                              "seconds": time.perf_counter() - t0}), flush=True)
        if train_flo:
            import time

            from torch_mist import estimate_mi

            n_tr = int(0.8 * len(x))
            for early in (True, False):
                torch.manual_seed(0)
                t0 = time.perf_counter()
                value, log = estimate_mi(data=(x[:n_tr].astype(np.float32), y[:n_tr].astype(np.float32)),
                                         test_data=(x[n_tr:].astype(np.float32), y[n_tr:].astype(np.float32)),
                                         estimator="flo", verbose=False, hidden_dims=[256, 256], batch_size=64,
                                         max_iterations=5000, early_stopping=early)
                iters = int(log["iteration"].max()) if "iteration" in log else -1
                print(json.dumps({"file": path, "check": f"stock flo, early_stopping={early}", "flo": float(value),
                                  "iterations_trained": iters, "mi_plug_in": plug_in(x, y)["mi"],
                                  "seconds": time.perf_counter() - t0}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
