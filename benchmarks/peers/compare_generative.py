"""mibench's generative estimators vs their torch-mist 0.2.17 references, on the same .npz datasets,
each side in its own environment (torch-mist through benchmarks/peers/run_torch_mist.py and its
stock settings), per seed, with seconds per estimate.

    flock /tmp/mibench-measure.lock python benchmarks/peers/compare_generative.py \
        --peer /work/peers/torch-mist/bin/python [--n 5000] [--seeds 0,1,2] \
        [--out benchmarks/results/generative_vs_torch_mist.txt]

Pairs (mibench name -> torch-mist name): doe-flow -> doe, ba -> ba (both with H(Y) the Gaussian entropy
of y's covariance), gm-flow -> gm, club -> club, l1out -> l1out, flo -> flo.  ``--summarize FILE``
appends the summary to a table whose run was stopped before its end (from its rows).  Cases: ``distributions`` tasks of
mibench (gauss-dense-5x5 at 1, 2, 4 and 6 bits, student-t-dof5-5x5 and asinh-5x5 at 1 bit), drawn
with ``mibench.tasks.distributions.draw``.  Rows are written as they come (seed-major: every case of
seed 0 first), so a run stopped early still leaves a table; the summary compares, per case and
estimator, the two seed means with their combined spread (the two sample standard deviations added).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

PAIRS = {"doe-flow": "doe", "ba": "ba", "gm-flow": "gm", "club": "club", "l1out": "l1out", "flo": "flo"}
CASES = [("gauss-dense-5x5", 1.0), ("gauss-dense-5x5", 2.0), ("gauss-dense-5x5", 4.0), ("gauss-dense-5x5", 6.0),
         ("student-t-dof5-5x5", 1.0), ("asinh-5x5", 1.0)]


def run_peer(python: str, path: str, names: list[str], timeout: float) -> dict:
    """{torch-mist name: (nats, seconds)} from the peer runner on one .npz (NaN on failure)."""
    script = REPO / "benchmarks" / "peers" / "run_torch_mist.py"
    out = {n: (math.nan, math.nan) for n in names}
    try:
        proc = subprocess.run([python, str(script), ",".join(names), path], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        return out
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            out[r["estimator"]] = (r["mi_nats"], r["seconds"])
    return out


def summarize(rows: list[dict], emit) -> None:
    emit("# summary (bits): per case and estimator, mean +- sd over seeds; agree = |difference of means| <= sd_mibench + sd_ref")
    keys = sorted({(r["case"], r["estimator"]) for r in rows}, key=lambda k: (k[0], list(PAIRS).index(k[1])))
    for case, est in keys:
        sel = [r for r in rows if r["case"] == case and r["estimator"] == est]
        a = np.array([r["mibench"] for r in sel])
        b = np.array([r["reference"] for r in sel])
        sd = lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else float("nan")   # noqa: E731
        diff = abs(np.nanmean(a) - np.nanmean(b))
        spread = sd(a) + sd(b)
        verdict = "agree" if diff <= spread else ("DISAGREE" if np.isfinite(spread) else "one seed")
        emit(f"#   {case:24s} {est:9s} truth {sel[0]['truth']:.2f}  mibench {np.nanmean(a):7.3f} +- {sd(a):.3f}  "
             f"torch-mist {np.nanmean(b):7.3f} +- {sd(b):.3f}  |diff| {diff:.3f}  {verdict}  "
             f"s/estimate {np.mean([r['seconds'] for r in sel]):.1f} vs {np.mean([r['ref_seconds'] for r in sel]):.1f}")


def summarize_file(path: Path) -> int:
    """Parse the rows of a table this script wrote and append its summary."""
    text = path.read_text().splitlines()
    rows = []
    for line in text:
        parts = line.split()
        if len(parts) == 8 and not line.startswith(("#", "case")):
            case, bits, seed, est, mine, secs, ref, ref_secs = parts
            rows.append({"case": f"{case}@{bits}", "truth": float(bits), "seed": int(seed), "estimator": est,
                         "mibench": float(mine), "seconds": float(secs), "reference": float(ref),
                         "ref_seconds": float(ref_secs)})
    lines = list(text)
    summarize(rows, lambda s="": (print(s), lines.append(s)))
    path.write_text("\n".join(lines) + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True, help="the torch-mist environment's python")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--estimators", default=",".join(PAIRS))
    ap.add_argument("--peer-timeout", type=float, default=1800.0)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "generative_vs_torch_mist.txt"))
    ap.add_argument("--summarize", default=None, metavar="FILE", help="append the summary to a stopped run's table")
    args = ap.parse_args()
    if args.summarize:
        return summarize_file(Path(args.summarize))

    import torch

    from mibench.estimators.registry import ESTIMATORS
    from mibench.tasks.distributions import draw

    torch.set_num_threads(1)
    names = args.estimators.split(",")
    lines: list[str] = []
    out = Path(args.out)

    def emit(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)
        out.write_text("\n".join(lines) + "\n")

    emit(f"# compare_generative: n = {args.n}, seeds {args.seeds}; torch {torch.__version__}, 1 thread per side; "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {os.getloadavg()[0]:.2f}")
    emit("# mibench: the registry's defaults (GenerativeTraining: 2,000 steps, batch 256, lr 1e-3, 20 % held out); "
         "torch-mist: run_torch_mist.py stock (5,000 iterations, batch 64, hidden [256, 256], the same held-out 20 %)")
    emit(f"{'case':24s} {'bits':>4s} {'seed':>4s} {'estimator':9s} {'mibench':>8s} {'s':>6s} {'torch-mist':>10s} {'s':>6s}")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (int(s) for s in args.seeds.split(",")):
            for case, bits in CASES:
                x, y, _ = draw(case, args.n, mi_bits=bits, seed=seed)
                path = str(Path(tmp) / f"{case}_{bits:g}_{seed}.npz")
                np.savez(path, x=np.asarray(x, np.float32), y=np.asarray(y, np.float32), seed=seed)
                ref = run_peer(args.peer, path, [PAIRS[n] for n in names], args.peer_timeout)
                for name in names:
                    t0 = time.perf_counter()
                    try:
                        mine = ESTIMATORS.get(name).obj().estimate(x, y, seed=seed)
                    except Exception as e:  # noqa: BLE001  (a failure is a recorded row)
                        print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
                        mine = math.nan
                    secs = time.perf_counter() - t0
                    r_nats, r_secs = ref[PAIRS[name]]
                    row = {"case": f"{case}@{bits:g}", "truth": bits, "seed": seed, "estimator": name,
                           "mibench": mine / math.log(2), "seconds": secs, "reference": r_nats / math.log(2),
                           "ref_seconds": r_secs}
                    rows.append(row)
                    emit(f"{case:24s} {bits:4g} {seed:4d} {name:9s} {row['mibench']:8.3f} {secs:6.1f} "
                         f"{row['reference']:10.3f} {r_secs:6.1f}")
    summarize(rows, emit)
    emit(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
