"""mibench's generative estimators vs their torch-mist 0.2.17 references, on the same .npz datasets,
each side in its own environment (torch-mist through benchmarks/peers/run_torch_mist.py and its
stock settings), per seed, with seconds per estimate.

    python benchmarks/peers/compare_generative.py \
        [--peer $TORCH_MIST_PYTHON] [--n 5000] [--seeds 0,1,2] \
        [--out benchmarks/results/generative_vs_torch_mist.txt]

Pairs (mibench name -> torch-mist name): doe-flow -> doe, ba -> ba (both with H(Y) the Gaussian entropy
of y's covariance), gm-flow -> gm, club -> club, l1out -> l1out, flo -> flo, hybrid-resampled -> hybrid
(ResampledHybridMIEstimator: DoE + NWJ).  ``--summarize FILE``
appends the summary to a table (from its rows; an earlier summary is replaced), e.g. one whose run was
stopped before its end or whose rows were gathered from several runs.  ``--cases CASE@BITS,...``
runs a subset; ``--matched`` runs torch-mist with run_torch_mist.py's matched settings (as close as its
API allows to mibench's defaults); ``--mibench-from TABLE,...`` takes mibench's values for the
(case, seed, estimator) rows such tables already hold (the same data and defaults) instead of
estimating again.  The summary gives, for the Gaussian cases, the truth, club's population values
and whether the lower bounds (ba, flo) stay below the truth.  Cases: ``distributions`` tasks of
mibench (gauss-dense-5x5 at 1, 2, 4 and 6 bits, student-t-dof5-5x5 and asinh-5x5 at 1 bit), drawn
with ``mibench.tasks.distributions.draw``.  Rows are written as they come (seed-major: every case of
seed 0 first), so a run stopped early still leaves a table; the summary compares, per case and
estimator, the two seed means with their combined spread (the two sample standard deviations added).
"""
from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import comparison  # noqa: E402  (a sibling module: benchmarks/peers/ is on sys.path when run as a script)
from comparison import add_row, agreement, exceeds_truth, per_case, seed_sd  # noqa: E402

PAIRS = {"doe-flow": "doe", "ba": "ba", "gm-flow": "gm", "club": "club", "l1out": "l1out", "flo": "flo",
         "hybrid-resampled": "hybrid"}
CASES = [("gauss-dense-5x5", 1.0), ("gauss-dense-5x5", 2.0), ("gauss-dense-5x5", 4.0), ("gauss-dense-5x5", 6.0),
         ("student-t-dof5-5x5", 1.0), ("asinh-5x5", 1.0)]


LOWER_BOUNDS = ("ba", "flo")


def gaussian_reference_bits(case: str) -> dict | None:
    """Population values (bits) for a Gaussian case ``gauss-dense-DxD@BITS``: the truth, CLUB with the
    true Gaussian conditional (tr(S_y|x^-1 S_yy) - d_y nats) and CLUB with the best Gaussian of
    diagonal covariance (both sides' CLUB family: MLP mean, diagonal variance; sum_k S_yy,kk / S_y|x,kk - d_y
    nats, the fit being q(y|x) = N(E[y|x], diag S_y|x)); None for a non-Gaussian case."""
    name, bits = case.split("@")
    if not name.startswith("gauss-"):
        return None
    from mibench.tasks.registry import make_task

    task = make_task(name)
    s = task.covariance(task.rho(float(bits)))
    dx = task.dim_x
    sxx, syy, sxy = s[:dx, :dx], s[dx:, dx:], s[:dx, dx:]
    cond = syy - sxy.T @ np.linalg.solve(sxx, sxy)                      # S_y|x
    dy = syy.shape[0]
    club_true = float(np.trace(np.linalg.solve(cond, syy))) - dy
    club_diag = float(np.sum(np.diag(syy) / np.diag(cond))) - dy
    return {"truth": float(bits), "club_true": club_true / math.log(2), "club_diag": club_diag / math.log(2)}


def summarize(rows: list[dict], emit) -> None:
    emit("# summary (bits): per case and estimator, mean +- sd over seeds; agree = |difference of means| <= "
         "sd_mibench + sd_ref")
    emit("# Gaussian cases: club's population values with the true Gaussian conditional (club_true) and with the best "
         "diagonal-Gaussian conditional (club_diag, the family both sides' club use); lower bounds (ba, flo): "
         "'<= truth' when mean - truth <= the side's sd, else 'EXCEEDS truth'")
    for case, est, sel, a, b in per_case(rows, key=lambda k: (k[0], list(PAIRS).index(k[1]))):
        sd = seed_sd
        diff, _spread, verdict = agreement(a, b)
        extra = ""
        ref = gaussian_reference_bits(case)
        if est == "club" and ref is not None:
            extra = f"  [club_true {ref['club_true']:.2f}, club_diag {ref['club_diag']:.2f}]"
        if est in LOWER_BOUNDS and ref is not None:   # Gaussian: known truth, and BA's Gaussian H(Y) exact
            checks = [f"{side} {'EXCEEDS truth' if over else '<= truth'}"
                      for side, v in (("mibench", a), ("torch-mist", b))
                      if (over := exceeds_truth(v, sel[0]["truth"])) is not None]
            extra = "  [lower bound: " + ", ".join(checks) + "]"
        emit(f"#   {case:24s} {est:9s} truth {sel[0]['truth']:.2f}  mibench {np.nanmean(a):7.3f} +- {sd(a):.3f}  "
             f"torch-mist {np.nanmean(b):7.3f} +- {sd(b):.3f}  |diff| {diff:.3f}  {verdict}  "
             f"s/estimate {np.nanmean([r['seconds'] for r in sel]):.1f} vs "
             f"{np.nanmean([r['ref_seconds'] for r in sel]):.1f}"
             f"  (seeds {len(sel)}){extra}")


def summarize_file(path: Path) -> int:
    """Append the summary to a table from its rows, replacing an earlier summary."""
    return comparison.summarize_file(path, summarize, drop=("# summary", "#   ", "# Gaussian cases: club"))


def main() -> int:
    ap = comparison.compare_parser(list(PAIRS), "all of CASES",
                                   REPO / "benchmarks" / "results" / "generative_vs_torch_mist.txt", 1800.0)
    ap.add_argument("--peer", default=os.environ.get("TORCH_MIST_PYTHON"),
                    help="the torch-mist environment's python (default $TORCH_MIST_PYTHON; needed unless --summarize "
                         "or --reference-from)")
    ap.add_argument("--matched", action="store_true",
                    help="run_torch_mist.py --matched: torch-mist set as close as its API allows to mibench's defaults")
    args = ap.parse_args()
    if args.summarize:
        return summarize_file(Path(args.summarize))
    if args.peer is None and args.reference_from is None:
        ap.error("--peer (or $TORCH_MIST_PYTHON) is required: the torch-mist environment's python")

    import torch

    from mibench.estimators.registry import ESTIMATORS

    torch.set_num_threads(1)
    names = args.estimators.split(",")
    cases = comparison.parse_cases(args.cases, CASES)
    seeds = [int(v) for v in args.seeds.split(",")]
    emit = comparison.table_writer(Path(args.out), [])
    known = comparison.earlier_values(args.mibench_from, "mibench")
    known_ref = comparison.earlier_values(args.reference_from, "reference")

    emit(f"# compare_generative: n = {args.n}, seeds {args.seeds}; torch {torch.__version__}, 1 thread per side; "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {os.getloadavg()[0]:.2f}")
    emit("# mibench: the registry's defaults (TrainedSettings: 2,000 steps, batch 256, lr 1e-3, 20 % held out); "
         + ("torch-mist: run_torch_mist.py --matched (its MATCHED settings: 2,000 iterations, batch 256, lr 1e-3, "
            "hidden [128, 128], 4 affine-autoregressive flow layers where mibench has a flow)" if args.matched else
            "torch-mist: run_torch_mist.py stock (5,000 iterations, batch 64, hidden [256, 256], "
            "the same held-out 20 %)"))
    emit(f"{'case':24s} {'bits':>4s} {'seed':>4s} {'estimator':9s} {'mibench':>8s} {'s':>6s} "
         f"{'torch-mist':>10s} {'s':>6s}")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, bits, seed, x, y, path in comparison.npz_cases(cases, seeds, args.n, tmp):
            label = f"{case}@{bits:g}"
            if all((label, seed, n) in known_ref for n in names):
                ref = {PAIRS[n]: known_ref[(label, seed, n)] for n in names}
            else:
                ref = comparison.run_peer(args.peer, "run_torch_mist.py", [PAIRS[n] for n in names], path,
                                          timeout=args.peer_timeout, options=["--matched"] if args.matched else [],
                                          env={"OMP_NUM_THREADS": "1"})
            for name in names:
                mine = known.get((label, seed, name)) or comparison.timed_estimate(
                    name, lambda: ESTIMATORS.get(name).obj().estimate(x, y, seed=seed))
                add_row(rows, emit, case, bits, seed, name, mine, ref[PAIRS[name]], (24, 9, 10))
    summarize(rows, emit)
    emit(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
