"""Shared by the peer runners (stdlib + numpy only; never imports mibench, so each runner works in
its peer's own environment): argument parsing, the held-out split, JSON lines on stdout.

    PEER_PYTHON benchmarks/peers/run_<peer>.py ESTIMATORS DATA.npz [DATA.npz ...] [--seed S] [--threads T]

Each .npz holds ``x`` (n, dx) and ``y`` (n, dy) (and optionally ``seed``); one JSON line per (file,
estimator): {"file", "peer", "estimator", "mi_nats", "seconds", "settings", "error"}.  A failing
estimator is a recorded result (``mi_nats`` NaN, ``error`` set), not a crash of the benchmark.
"""
from __future__ import annotations

import argparse
import json
import math
import time
import traceback

import numpy as np

TEST_FRACTION = 0.2


def parse(peer: str, known: dict):
    ap = argparse.ArgumentParser(prog=f"peers/{peer}.py")
    ap.add_argument("estimators", help=f"comma-separated: {', '.join(known)}")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--seed", type=int, default=None, help="default: the file's 'seed' entry, else 0")
    ap.add_argument("--threads", type=int, default=1, help="torch / XLA CPU threads (default 1)")
    ap.add_argument("--device", default="cpu", help="torch device for the peers that take one (default cpu)")
    args = ap.parse_args()
    names = args.estimators.split(",")
    unknown = [n for n in names if n not in known]
    if unknown:
        ap.error(f"unknown {peer} estimator(s) {unknown}; known: {', '.join(known)}")
    return args, names


def split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, held-out rows): a seeded permutation, the last TEST_FRACTION held out (the same
    rule as mibench.estimate: numpy default_rng(seed).permutation(n))."""
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * TEST_FRACTION))
    return perm[:n - n_test], perm[n - n_test:]


def run_all(peer: str, args, names, estimate_fn, settings: dict) -> None:
    """``estimate_fn(name, x, y, seed) -> nats`` for every file and estimator; one JSON line each."""
    for path in args.files:
        d = np.load(path)
        seed = args.seed if args.seed is not None else int(d["seed"]) if "seed" in d.files else 0
        x, y = np.asarray(d["x"], dtype=np.float32), np.asarray(d["y"], dtype=np.float32)
        x, y = x.reshape(len(x), -1), y.reshape(len(y), -1)
        for name in names:
            t0 = time.perf_counter()
            err = ""
            try:
                mi = float(estimate_fn(name, x, y, seed))
            except Exception as e:  # noqa: BLE001
                mi, err = math.nan, f"{type(e).__name__}: {e}"
                traceback.print_exc()
            print(json.dumps({"file": path, "peer": peer, "estimator": name, "mi_nats": mi, "seed": seed,
                              "seconds": time.perf_counter() - t0, "settings": settings.get(name, ""),
                              "error": err}), flush=True)
