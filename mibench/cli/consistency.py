"""``mibench consistency``: the self-consistency tests (Song & Ermon, ICLR 2020, §5) on real images
for a list of estimators.  Light: the parser imports neither torch nor numpy; the defaults are
copies of :mod:`mibench.analysis.consistency_run`'s, checked equal by ``tests/analysis/test_consistency.py``."""
from __future__ import annotations

import os

from mibench.cli.args import csv_list

DEFAULT_ESTIMATORS = ("infonce", "nwj", "mine", "js", "js-paper", "smile-1", "smile-5", "smile-inf",
                      "smile-adaptive", "jsd-kl")
HELP = "self-consistency tests on MNIST / CIFAR-10 (Song & Ermon 2020): baseline, data processing, additivity"


def register_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "consistency", help=HELP,
        description="Run the three self-consistency tests of Song & Ermon (ICLR 2020, §5) on MNIST and / or "
                    "CIFAR-10 for a list of estimators, critics and seeds: baseline (Y = the top t rows of the "
                    "image X; the estimate must be 0 at t = 0 and grow with t), data processing "
                    "(I([X, X]; [Y, h(Y)]) / I(X; Y) = 1) and additivity (two independent images: ratio 2). "
                    "Writes OUT/consistency_estimates.csv (resumable: run the same command again to continue), "
                    "consistency.json, and the table consistency.csv / consistency.md (mibench report picks it "
                    "up). See docs/self-consistency.md.")
    p.add_argument("--dataset", default="mnist", help="comma list of mnist, cifar10, gaussian (the analogue with a "
                   "closed-form MI)")
    p.add_argument("--estimators", default=",".join(DEFAULT_ESTIMATORS), help="comma list of estimators "
                   "(stream: critic-bound ones; sample: any)")
    p.add_argument("--critics", default="joint", help="comma list of critics, e.g. joint,conv")
    p.add_argument("--seeds", default="0,1,2", help="comma list of seeds")
    p.add_argument("--rows", default=None, help="the baseline's t grid, comma list (default 0, 1/7 ... 5/7 and all "
                   "of the image height)")
    p.add_argument("--ratio-rows", default=None, help="t of the data-processing and additivity ratios (default "
                   "2/7 and 4/7 of the height)")
    p.add_argument("--protocol", default="stream", choices=("stream", "sample"),
                   help="stream: one streaming run per cell, all estimators on one batch stream (default); "
                        "sample: --n pairs per cell through mibench.estimate (wants --noise > 0)")
    p.add_argument("--steps", type=int, default=400, help="training steps per cell")
    p.add_argument("--tail", type=int, default=None, help="stream: an estimate is the mean of the last TAIL steps "
                   "(default 100, or --steps where that is fewer)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--noise", type=float, default=None, help="std of Gaussian noise added to Y (default: 0 for "
                   "images, 2 for the Gaussian analogue)")
    p.add_argument("--n", type=int, default=4000, help="sample protocol: pairs per cell")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--data-dir", default=None, help="dataset directory (else $MIBENCH_DATA, else the user cache)")
    p.add_argument("--out", default=os.path.join("results", "consistency"), help="output directory")
    p.add_argument("--overwrite", action="store_true", help="discard what --out holds and start again")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_consistency)


def _ints(text, what: str):
    from mibench.errors import MibenchError

    if text is None:
        return None
    try:
        return [int(v) for v in csv_list(text, what)]
    except ValueError:
        raise MibenchError(f"--{what} needs integers, got {text!r}") from None


def cmd_consistency(args) -> int:
    import shlex
    import sys

    from mibench.analysis.consistency_run import ConsistencySpec, run_consistency

    if args.threads:
        import torch

        torch.set_num_threads(int(args.threads))
    spec = ConsistencySpec(datasets=csv_list(args.dataset, "dataset"),
                           estimators=csv_list(args.estimators, "estimators"),
                           seeds=_ints(args.seeds, "seeds"), critics=csv_list(args.critics, "critics"),
                           rows=_ints(args.rows, "rows"), ratio_rows=_ints(args.ratio_rows, "ratio-rows"),
                           protocol=args.protocol, steps=args.steps, tail=args.tail, batch_size=args.batch_size,
                           lr=args.lr, noise=args.noise, n=args.n, device=args.device, data_dir=args.data_dir)
    command = " ".join(shlex.quote(w) for w in ["mibench", *sys.argv[1:]]) if sys.argv[1:2] == ["consistency"] \
        else "mibench consistency"
    table = run_consistency(spec, args.out, command=command, overwrite=args.overwrite, progress=not args.quiet)
    if not args.quiet:
        for r in table:
            print(f"{r['dataset']:<8} {r['estimator']:<15} {r['critic'] or '-':<15} passes: {r['passes']}")
    print(f"wrote {os.path.join(args.out, 'consistency.md')} (and consistency.csv, consistency_estimates.csv)")
    return 0
