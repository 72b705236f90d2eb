"""``mibench validate``: MI back-ends × MI-based metrics vs the analytic Gaussian toy model.

Light on purpose: building the parser (``mibench validate --help``, argument errors) imports
neither torch nor numpy; :mod:`mibench.disentanglement.validate` is imported only when the
command runs.  The defaults below are copies of that module's (``DEFAULT_*``, ``MI_METRICS``),
checked equal by ``tests/test_packaging.py``.
"""
from __future__ import annotations

import argparse
import os
import sys

from mibench.cli.args import csv_list, float_list

DEFAULT_BACKENDS = ("histogram", "ksg", "gaussian", "posterior")
DEFAULT_METRICS = ("mig", "unibound", "u_upper", "u_upper_unclipped", "r_lower", "r_upper",
                   "c_lower", "c_upper", "dcimig", "minimality_mi")
DEFAULT_ATTACKS = ("none", "redundancy", "synergy")
DEFAULT_ALPHAS = (0.5, 1.0, 2.0, 4.0)
DEFAULT_N, DEFAULT_SIGMA, DEFAULT_K, DEFAULT_SEED = 2000, 0.1, 5, 0
#: every MI-based metric (named in --help)
MI_METRICS = ("mig", "unibound", "u_upper", "u_upper_unclipped", "r_lower", "r_upper", "c_lower", "c_upper",
              "dcimig", "minimality_mi", "sufficiency_mi", "ridgeway_modularity")


def register_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "validate",
        help="validate disentanglement metrics' MI back-ends against the analytic Gaussian toy model",
        description=(
            "For every MI back-end x metric x attack x alpha, compare the metric estimated from samples of "
            "Tokui & Sato's Gaussian toy model (y ~ N(0, I_K), z | y ~ N(y, sigma^2 I), redundancy / synergy "
            "attacks) with its exact value. Writes validation.csv and validation_<attack>.png to --out and "
            "prints a pass/fail summary; exits 1 if a supported case fails its stated tolerance."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--backends", default=",".join(DEFAULT_BACKENDS),
                   help="comma-separated MI back-ends: histogram[-<bins>], ksg[-<k>], gaussian, posterior, "
                        "neural:<estimator>[:<critic>] (slow: one training per MI term)")
    p.add_argument("--metrics", default=",".join(DEFAULT_METRICS),
                   help="comma-separated MI-based metrics: " + ", ".join(MI_METRICS))
    p.add_argument("--attacks", default=",".join(DEFAULT_ATTACKS), help="comma-separated: none, redundancy, synergy")
    p.add_argument("--alphas", default=",".join(f"{a:g}" for a in DEFAULT_ALPHAS), help="attack strengths")
    p.add_argument("--n", type=int, default=DEFAULT_N, help="samples per (attack, alpha)")
    p.add_argument("--sigma", type=float, default=DEFAULT_SIGMA, help="code noise of the toy model")
    p.add_argument("--K", type=int, default=DEFAULT_K, help="number of factors (= code dimensions)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="sampling seed")
    p.add_argument("--out", default=os.path.join("results", "validation"), help="output directory")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    lists = dict(backends=csv_list(args.backends, "backends"), metrics=csv_list(args.metrics, "metrics"),
                 attacks=csv_list(args.attacks, "attacks"), alphas=float_list(args.alphas, "alphas"))
    from mibench.disentanglement import validate as V  # numpy, scipy, torch: only once the arguments parse

    rows = V.run_validation(
        **lists,
        n=args.n, sigma=args.sigma, K=args.K, seed=args.seed,
        progress=lambda msg: print(f"  {msg}", file=sys.stderr, flush=True),
    )
    paths = V.write_outputs(rows, args.out, sigma=args.sigma, K=args.K, n=args.n)
    summary = V.summarise(rows)
    print(V.format_summary(summary))
    n_fail = sum(r.status == "fail" for r in rows)
    n_pass = sum(r.status == "pass" for r in rows)
    n_uns = sum(r.status == "unsupported" for r in rows)
    print(f"\n{n_pass} passed, {n_fail} failed, {n_uns} unsupported; wrote {', '.join(paths)}")
    return 1 if n_fail else 0
