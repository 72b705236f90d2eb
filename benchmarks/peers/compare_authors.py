"""mibench's estimators vs their authors' reference implementations, on the same .npz datasets, each
side in its own environment (the reference through its runner in benchmarks/peers/), per seed, with
seconds per estimate.

    MINDE_PYTHON=... MUTINFO_PYTHON=... python benchmarks/peers/compare_authors.py \
        [--estimators minde-c,minde-j] [--cases gauss-dense-5x5@1,...] [--n 5000] [--seeds 0,1,2] \
        [--out benchmarks/results/minde_vs_authors.txt] [--reference-from EARLIER_TABLE]

Pairs (mibench name -> runner, reference name; the reference environment's python, from ``--minde-python`` /
``--mutinfo-python`` or else the environment variable, required unless ``--reference-from`` or ``--summarize``):

* ``minde-c``, ``minde-j`` -> run_minde.py (github.com/MustaphaBounoua/minde, the authors' code), $MINDE_PYTHON
  (with ``MINDE_SRC`` set, as run_minde.py says);
* ``nishiyama`` -> run_mutinfo.py (torchfd's NishiyamaLoss trained by mutinfo's MINE, both by the MIENF /
  FMMI authors), $MUTINFO_PYTHON; ``nwj`` -> the same runner with torchfd's NWJLoss, a control for
  its training protocol.  ``MUTINFO_STEPS`` (passed through to the runner) sets its training length.

MIENF and FMMI have no runnable reference here (their authors' code could not be fetched or installed:
benchmarks/results/mienf_fmmi_vs_authors.txt says why), nor has ``jsd-kl`` (its authors' repository
could not be fetched).  Cases: gauss-dense-5x5 at 1 and 4 bits (``mibench.tasks.distributions.draw``).
mibench's side is its registry's defaults: ``ESTIMATORS`` entry ``.estimate`` for a sample estimator,
``mibench.estimate(x, y, estimator=NAME)`` for a critic bound.  Rows are written as they come
(seed-major), so a run stopped early still leaves a table; ``--summarize FILE`` appends the summary to
such a table.  The summary compares, per case and estimator, the two seed means with their combined
spread (the two sample standard deviations added): ``agree`` when the difference of the means is
within it.
"""
from __future__ import annotations

import json
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

PAIRS = {"minde-c": ("run_minde.py", "minde-c", "minde"),          # (runner, reference name, environment)
         "minde-j": ("run_minde.py", "minde-j", "minde"),
         "nishiyama": ("run_mutinfo.py", "nishiyama", "mutinfo"),
         "nwj": ("run_mutinfo.py", "nwj", "mutinfo")}
CASES = [("gauss-dense-5x5", 1.0), ("gauss-dense-5x5", 4.0)]


LOWER_BOUNDS = ("nishiyama", "nwj")


def summarize(rows: list[dict], emit) -> None:
    emit("# summary (bits): per case and estimator, mean +- sd over seeds; agree = |difference of means| <= "
         "sd_mibench + sd_ref; a lower bound's side is marked 'EXCEEDS truth' where its mean - truth > its sd")
    for case, est, sel, a, b in per_case(rows):
        sd = seed_sd
        diff, _spread, verdict = agreement(a, b)
        extra = ""
        if est in LOWER_BOUNDS:
            over = [side for side, v in (("mibench", a), ("authors", b)) if exceeds_truth(v, sel[0]["truth"])]
            extra = "  [lower bound: " + (", ".join(f"{side} EXCEEDS truth" for side in over) or "both <= truth") + "]"
        emit(f"#   {case:22s} {est:9s} truth {sel[0]['truth']:.2f}  mibench {np.nanmean(a):6.3f} +- {sd(a):.3f}  "
             f"authors {np.nanmean(b):6.3f} +- {sd(b):.3f}  |diff| {diff:.3f}  {verdict}  "
             f"s/estimate {np.mean([r['seconds'] for r in sel]):.1f} vs "
             f"{np.mean([r['ref_seconds'] for r in sel]):.1f}{extra}")


def summarize_file(path: Path) -> int:
    """Append the summary to a table from its rows."""
    return comparison.summarize_file(path, summarize)


def main() -> int:
    ap = comparison.compare_parser(list(PAIRS), "gauss-dense-5x5 at 1 and 4 bits",
                                   REPO / "benchmarks" / "results" / "minde_vs_authors.txt", 3600.0)
    ap.add_argument("--mibench-options", default="{}", help="JSON keyword arguments for the mibench estimators")
    for env in ("minde", "mutinfo"):
        ap.add_argument(f"--{env}-python", default=os.environ.get(f"{env.upper()}_PYTHON"),
                        help=f"the python of the {env} reference's environment (default ${env.upper()}_PYTHON)")
    args = ap.parse_args()
    if args.summarize:
        return summarize_file(Path(args.summarize))

    import torch

    import mibench
    from mibench.estimators.kinds import SAMPLE_KINDS
    from mibench.estimators.registry import ESTIMATORS, estimator_kind

    torch.set_num_threads(1)
    names = args.estimators.split(",")
    seeds = [int(v) for v in args.seeds.split(",")]
    cases = comparison.parse_cases(args.cases, CASES)
    options = json.loads(args.mibench_options)

    def mibench_nats(name, x, y, seed) -> float:
        if estimator_kind(name) in SAMPLE_KINDS:
            return ESTIMATORS.get(name).obj(**options).estimate(x, y, seed=seed)
        return mibench.estimate(x, y, estimator=name, seed=seed, units="nats", **options).mi

    runners: dict[tuple[str, str], list[str]] = {}
    for name in names:
        runner, ref_name, env = PAIRS[name]
        python = getattr(args, f"{env}_python")
        if python is None and args.reference_from is None:
            ap.error(f"{name}'s reference needs --{env}-python (or ${env.upper()}_PYTHON): its environment's python")
        runners.setdefault((runner, python), []).append(ref_name)
    emit = comparison.table_writer(Path(args.out), [])

    emit(f"# compare_authors: n = {args.n}, seeds {args.seeds}; torch {torch.__version__}, 1 thread per side; "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {os.getloadavg()[0]:.2f} "
         "(2 cores, shared)")
    emit(f"# mibench: the registry's defaults{' + ' + json.dumps(options) if options else ''} (a sample estimator: "
         "TrainedSettings, 2,000 steps, batch 256, lr 1e-3, 70/10/20 % train/validation/test, early stopping; a "
         "critic bound: mibench.estimate's data-sized defaults, 20 % held out, early stopping on the held-out curve); "
         "authors: each runner's settings (its docstring; the line it reports is below as '# authors' NAME:')")
    earlier = comparison.earlier_values(args.reference_from, "reference") if args.reference_from else None
    if args.reference_from:
        emit(f"# authors' column copied from {args.reference_from} (the same cases, n and seeds; not rerun)")
    known = comparison.earlier_values(args.mibench_from, "mibench")
    if args.mibench_from:
        emit(f"# mibench's column copied from {args.mibench_from} (the same cases, n and seeds; not rerun)")
    emit(f"{'case':22s} {'bits':>4s} {'seed':>4s} {'estimator':9s} {'mibench':>8s} {'s':>6s} {'authors':>8s} {'s':>6s}")
    rows: list[dict] = []
    settings: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case, bits, seed, x, y, path in comparison.npz_cases(cases, seeds, args.n, tmp):
            ref = {}
            if earlier is not None:
                ref = {PAIRS[n][1]: earlier.get((f"{case}@{bits:g}", seed, n), (math.nan, math.nan)) for n in names}
            else:
                for (runner, python), ref_names in runners.items():
                    new = {n for n in ref_names if n not in settings}
                    ref.update(comparison.run_peer(python, runner, ref_names, path, timeout=args.peer_timeout,
                                                   env={"OMP_NUM_THREADS": "1"}, settings=settings))
                    for n in sorted(new & set(settings)):
                        emit(f"# authors' {n}: {settings[n]}")
            for name in names:
                mine = known.get((f"{case}@{bits:g}", seed, name)) or comparison.timed_estimate(
                    name, lambda: mibench_nats(name, x, y, seed))
                add_row(rows, emit, case, bits, seed, name, mine, ref[PAIRS[name][1]], (22, 9, 8))
    summarize(rows, emit)
    emit(f"# load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
