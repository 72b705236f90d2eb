"""mibench's own flows (mibench/estimators/generative/flows.py: affine + RealNVP coupling +
sinh-arcsinh layers) against zuko's MAF and NSF (zuko 1.6.0, Rozet et al.; pure PyTorch) as the
density models of the same estimators, with the same data path, training budget and readout.

    pip install zuko==1.6.0            # not a mibench dependency; this script only
    python benchmarks/bench_flows_vs_zuko.py [--n 5000] [--seeds 0,1,2] [--estimators gm-flow,ba]
        [--out benchmarks/results/flows_vs_zuko.txt]

Each family gets 4 transforms with two hidden layers of 128 (mibench's defaults: 4 layers, hidden
128); everything else (split, standardisation, 2,000 Adam steps, batch 256, lr 1e-3, early stopping
on the validation split, held-out readout) is the estimator's own.  The families alternate within
each (task, seed), so background load hits them alike.  gm-flow reads three unconditional flows
(H(X) + H(Y) - H(X, Y)); ba one conditional flow (H_Gauss(Y) - H(Y | X)): together they test both
uses.  Output: per-seed rows (bits, seconds, parameters) and a summary: mean +- sd, |bias|, seconds.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = [("gauss-dense-5x5", 2.0), ("student-t-dof5-5x5", 1.0), ("asinh-5x5", 1.0)]
FAMILIES = ("mibench", "zuko-maf", "zuko-nsf")


class ZukoDensity(nn.Module):
    """log q(y | x) (or log q(y) without a context) from a zuko flow, with the ``log_prob(y, x)``
    signature of mibench's flows."""

    def __init__(self, kind: str, dim: int, context_dim: int, transforms: int, hidden: int):
        super().__init__()
        import zuko

        build = {"zuko-maf": zuko.flows.MAF, "zuko-nsf": zuko.flows.NSF}[kind]
        self.flow = build(dim, context=context_dim, transforms=transforms, hidden_features=[hidden, hidden])

    def log_prob(self, y: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
        return self.flow(x).log_prob(y)


def estimator(name: str, family: str):
    """The registry's estimator ``name`` with its flows replaced by ``family``'s."""
    from mibench.estimators.registry import ESTIMATORS

    est = ESTIMATORS.get(name).obj()
    if family != "mibench":
        def flow(dim: int, context_dim: int = 0, _est=est):
            return ZukoDensity(family, dim, context_dim, _est.layers, _est.hidden)
        est.flow = flow
    return est


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--estimators", default="gm-flow,ba")
    ap.add_argument("--cases", default=",".join(f"{c}@{b:g}" for c, b in CASES))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "flows_vs_zuko.txt"))
    args = ap.parse_args()
    import zuko

    from mibench.tasks.distributions import draw

    torch.set_num_threads(1)
    out, lines, rows = Path(args.out), [], []

    def emit(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)
        out.write_text("\n".join(lines) + "\n")

    emit(f"# bench_flows_vs_zuko: n = {args.n}, seeds {args.seeds}; torch {torch.__version__}, "
         f"zuko {zuko.__version__}, 1 thread; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
         f"load average {os.getloadavg()[0]:.2f}")
    emit("# each family: 4 transforms, hidden [128, 128]; the estimator's own split, 2,000 steps, batch 256, lr 1e-3, "
         "early stopping, held-out readout")
    emit(f"{'case':24s} {'seed':>4s} {'estimator':9s} {'family':9s} {'bits':>7s} {'s':>6s} {'params':>7s}")
    for spec in args.cases.split(","):
        case, bits = spec.split("@")
        for seed in (int(s) for s in args.seeds.split(",")):
            x, y, _ = draw(case, args.n, mi_bits=float(bits), seed=seed)
            for name in args.estimators.split(","):
                for family in FAMILIES:
                    est = estimator(name, family)
                    t0 = time.perf_counter()
                    try:
                        value = est.estimate(x, y, seed=seed) / math.log(2)
                    except Exception as e:  # noqa: BLE001  (a failure is a recorded row)
                        print(f"{name}/{family}: {type(e).__name__}: {e}", file=sys.stderr)
                        value = math.nan
                    secs = time.perf_counter() - t0
                    rows.append({"case": spec, "truth": float(bits), "estimator": name, "family": family,
                                 "bits": value, "seconds": secs})
                    emit(f"{case:24s} {seed:4d} {name:9s} {family:9s} {value:7.3f} {secs:6.1f} {est.n_parameters:7d}")
    emit("# summary: mean +- sd over seeds (bits), |bias| = |mean - truth|, mean seconds per estimate")
    for spec in args.cases.split(","):
        for name in args.estimators.split(","):
            for family in FAMILIES:
                sel = [r for r in rows if r["case"] == spec and r["estimator"] == name and r["family"] == family]
                v = np.array([r["bits"] for r in sel])
                sd = float(np.std(v, ddof=1)) if len(v) > 1 else float("nan")
                mean, truth, secs = np.nanmean(v), sel[0]["truth"], np.mean([r["seconds"] for r in sel])
                emit(f"#   {spec:24s} {name:8s} {family:9s} truth {truth:.2f}  {mean:7.3f} +- {sd:.3f}  "
                     f"|bias| {abs(mean - truth):.3f}  s {secs:6.1f}")
    emit(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
