"""Peer estimators from the BMI package (Czyż et al. 2023, "Beyond normal: on the evaluation of
mutual information estimators", NeurIPS; PyPI ``benchmark-mi``), run with their stock defaults on
datasets written by bench_estimate.py.  Runs in the peer's own environment (JAX), never imports
mibench:

    python -m venv peer-venv && peer-venv/bin/pip install benchmark-mi "jax==0.4.30" "jaxlib==0.4.30" "equinox<0.11.5"
    peer-venv/bin/python benchmarks/peer_bmi.py infonce,ksg DATA.npz [DATA.npz ...]

Each .npz holds ``x`` (n, dx) and ``y`` (n, dy); one JSON line per (file, estimator) on stdout:
{"file", "estimator", "mi" (nats), "seconds"}.  (The pins: benchmark-mi 0.1.3's equinox does not
import with jax >= 0.4.34.)
"""
import json
import sys
import time

import numpy as np


def main() -> int:
    import bmi

    peers = {
        "infonce": lambda: bmi.estimators.InfoNCEEstimator(verbose=False),
        "nwj": lambda: bmi.estimators.NWJEstimator(verbose=False),
        "dv": lambda: bmi.estimators.DonskerVaradhanEstimator(verbose=False),
        "mine": lambda: bmi.estimators.MINEEstimator(verbose=False),
        "ksg": lambda: bmi.estimators.KSGEnsembleFirstEstimator(),
        "cca": lambda: bmi.estimators.CCAMutualInformationEstimator(),
    }
    names = sys.argv[1].split(",")
    unknown = [n for n in names if n not in peers]
    if unknown:
        print(f"unknown peer estimator(s) {unknown}; known: {', '.join(peers)}", file=sys.stderr)
        return 2
    for path in sys.argv[2:]:
        d = np.load(path)
        for name in names:
            t0 = time.perf_counter()
            try:
                mi = float(peers[name]().estimate(d["x"], d["y"]))
            except Exception as e:  # a failing peer is a recorded result, not a crash of the benchmark
                print(f"{path} {name}: {type(e).__name__}: {e}", file=sys.stderr)
                mi = float("nan")
            print(json.dumps({"file": path, "estimator": name, "mi": mi, "seconds": time.perf_counter() - t0}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
