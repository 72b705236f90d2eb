#!/usr/bin/env python
"""The 14 estimators of issue 32 against the analytic MI at several levels, short settings.

Cases (mibench.tasks.distributions.draw, n pairs, truth in closed form): gauss-dense-<d>x<d> at 1, 2, 4
and 6 bits, student-t-dof5-<d>x<d> at 2 bits (the truth includes the dof correction) and asinh-<d>x<d>
at 2 bits (a dense Gaussian with invertible asinh margins: same MI).  One dataset per (case, seed), the
same for every estimator; estimator seed = data seed.

Settings are those of tests/estimators/test_generative_family.py: n = 2,000; ba, gm-flow, club, l1out,
hybrid-resampled 300 steps (each stage), the others 400 (eval_every 50, the rest of GenerativeTraining at its defaults); the critic
bounds nishiyama and jsd-kl through mibench.estimate with its defaults.

Writes one row per (case, seed, estimator) with the estimate in bits and seconds, then a summary per
(estimator, case): mean +- sample sd in bits vs the truth; for the lower bounds (ba, flo, nishiyama,
jsd-kl) a violation when mean - truth > sd (on the Gaussian cases; on asinh BA's Gaussian H(Y) is only
an upper bound on H(Y), so BA may exceed the truth there by construction), for club/l1out (upper bounds
only with the true conditional) a note when the mean falls below the truth.

    OMP_NUM_THREADS=1 python benchmarks/bench_new_estimator_accuracy.py [--seeds 0,1,2] [--dim 3]
        [--estimators ...] [--cases ...] [--out benchmarks/results/new_estimator_accuracy.txt]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

import common  # noqa: F401  (puts the repository on sys.path)
import torch

import mibench
from mibench.estimators.registry import ESTIMATORS
from mibench.tasks.distributions import draw

STEPS = {"ba": 300, "gm-flow": 300, "club": 300, "l1out": 300, "flo": 400, "mienf": 400, "mienf-tridiag": 400,
         "minde-c": 400, "minde-j": 400, "fmmi-c": 400, "fmmi-j": 400, "hybrid-resampled": 300}
CRITIC = ("nishiyama", "jsd-kl")
NAMES = list(CRITIC) + list(STEPS)
LOWER = ("ba", "flo", "nishiyama", "jsd-kl")
UPPER = ("club", "l1out")
N = 2000


def cases(d: int) -> list[tuple[str, str, float]]:
    """(label, task, requested bits)."""
    out = [(f"gauss-{b}", f"gauss-dense-{d}x{d}", float(b)) for b in (1, 2, 4, 6)]
    return out + [("student-t-2", f"student-t-dof5-{d}x{d}", 2.0), ("asinh-2", f"asinh-{d}x{d}", 2.0)]


def run_one(name: str, x, y, seed: int) -> float:
    """One estimate in bits."""
    if name in CRITIC:
        return mibench.estimate(x, y, estimator=name, seed=seed, units="bits").mi
    est = ESTIMATORS.get(name).obj()
    steps = STEPS[name]
    est.training = replace(est.training, steps=steps, eval_every=min(50, steps))
    return est.estimate(x, y, seed=seed) / math.log(2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--dim", type=int, default=3)
    ap.add_argument("--estimators", default=",".join(NAMES))
    ap.add_argument("--cases", default="", help="comma-separated labels (default all)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "new_estimator_accuracy.txt"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    names = args.estimators.split(",")
    todo = [c for c in cases(args.dim) if not args.cases or c[0] in args.cases.split(",")]
    with open(args.out, "w") as out:
        report(args, seeds, names, todo, out)


def report(args, seeds, names, todo, out) -> None:
    def emit(line: str = "") -> None:
        print(line, flush=True)
        out.write(line + "\n")
        out.flush()

    emit("# " + __doc__.splitlines()[0])
    emit(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch {torch.__version__}, "
         f"{torch.get_num_threads()} torch thread(s), OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
         f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
         f"{os.getloadavg()[2]:.2f}")
    emit(f"# n = {N}, seeds {seeds}, steps {STEPS} (eval_every 50), {', '.join(CRITIC)} through mibench.estimate "
         "defaults")
    emit("# cases: " + ", ".join(f"{lab} = {task} at {b:g} bits" for lab, task, b in todo))
    emit(f"# command: OMP_NUM_THREADS=1 python benchmarks/bench_new_estimator_accuracy.py --seeds {args.seeds} "
         f"--dim {args.dim}" + (f" --estimators {args.estimators}" if args.estimators != ",".join(NAMES) else "")
         + (f" --cases {args.cases}" if args.cases else ""))
    emit()
    emit(f"{'case':<13}{'seed':>5}  {'estimator':<17}{'bits':>9}{'truth':>9}{'error':>9}{'seconds':>9}{'load1':>7}")
    res: dict = {}
    truths: dict = {}
    for label, task, bits in todo:
        for seed in seeds:
            x, y, truth_nats = draw(task, N, mi_bits=bits, seed=seed)
            truth = truth_nats / math.log(2)
            truths[label] = truth
            for name in names:
                t0 = time.perf_counter()
                v = run_one(name, x, y, seed)
                dt = time.perf_counter() - t0
                res.setdefault((name, label), []).append((v, dt))
                emit(f"{label:<13}{seed:>5}  {name:<17}{v:>9.3f}{truth:>9.3f}{v - truth:>+9.3f}{dt:>9.1f}"
                     f"{os.getloadavg()[0]:>7.2f}")
    emit()
    emit(f"# summary: mean +- sample sd over seeds {seeds}, bits; 'lower > truth' when mean - truth > sd "
         "(a lower bound above the truth beyond its spread); 'upper < truth' when club/l1out's mean is below")
    emit(f"# load average at the end {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    emit(f"{'estimator':<17}{'case':<13}{'mean':>8}{'sd':>8}{'truth':>8}{'error':>9}{'s/est':>8}  note")
    for name in names:
        for label, _task, _bits in todo:
            vals = [v for v, _ in res[(name, label)]]
            secs = statistics.mean(t for _, t in res[(name, label)])
            m = statistics.mean(vals)
            sd = statistics.stdev(vals) if len(vals) > 1 else float("nan")
            truth = truths[label]
            note = ""
            if name in LOWER and m - truth > sd:
                note = "lower > truth (VIOLATION)" if label.startswith("gauss") else "lower > truth"
                if name == "ba" and label.startswith("asinh"):
                    note += " (Gaussian H(Y) only an upper bound here)"
            if name in UPPER and m < truth:
                note = "upper < truth"
            emit(f"{name:<17}{label:<13}{m:>8.3f}{sd:>8.3f}{truth:>8.3f}{m - truth:>+9.3f}{secs:>8.1f}  {note}")


if __name__ == "__main__":
    main()
