"""How much ``preprocess="auto"`` gains by choosing its map on the held-out pairs: mibench.estimate with
its defaults trains one critic on normal scores and one on z-scores and reports the higher held-out
value (``settings["preprocess_values"]`` keeps both).  Choosing on the pairs that are also read could
bias the estimate upwards; this measures by how much: per case, the mean reported value against the
mean of the better map (the selection gain: what choosing per seed adds over always using the map
that is better on average), on independent pairs (truth 0) and on distributions cases at 1 nat,
n = 10,000, 1 torch thread.

    python benchmarks/bench_auto_selection.py [--seeds 0,1,2,3,4] [--out FILE]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from peers.comparison import table_writer  # noqa: E402

import mibench  # noqa: E402
from mibench.tasks.distributions import draw  # noqa: E402

CASES = ["independent-1x1", "independent-5x5", "independent-25x25",
         "gauss-dense-5x5", "cdf-1x1", "mix-5x5", "student-t-dof5-5x5"]


def dataset(case: str, n: int, seed: int):
    if case.startswith("independent-"):
        d = int(case.split("-")[1].split("x")[0])
        rng = np.random.default_rng(100 + seed)
        return rng.standard_normal((n, d)), rng.standard_normal((n, d)), 0.0
    return draw(case, n, mi_nats=1.0, seed=seed)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    emit = table_writer(Path(args.out), []) if args.out else print
    emit(f"# bench_auto_selection: n = {args.n}, seeds {args.seeds}, mibench.estimate defaults, 1 torch thread; "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    emit("# nats; mi_raw (unclipped) means over seeds; gain = auto - the better map's mean; wins = seeds where")
    emit("# normal scores were chosen")
    emit(f"{'case':20s} {'truth':>6s} {'auto':>8s} {'normal':>8s} {'zscore':>8s} {'gain':>8s} {'|n-z|':>7s} "
         f"{'wins':>5s}")
    for case in CASES:
        rows = []
        for seed in seeds:
            x, y, truth = dataset(case, args.n, seed)
            r = mibench.estimate(x, y, seed=seed, units="nats", device="cpu")
            v = r.settings["preprocess_values"]
            rows.append((r.mi_raw, v["normal-scores"], v["zscore"], r.settings["preprocess"] == "normal-scores"))
        a = np.array(rows, dtype=float)
        gain = a[:, 0].mean() - max(a[:, 1].mean(), a[:, 2].mean())
        emit(f"{case:20s} {truth:6.3f} {a[:, 0].mean():8.4f} {a[:, 1].mean():8.4f} {a[:, 2].mean():8.4f} "
             f"{gain:+8.4f} {np.abs(a[:, 1] - a[:, 2]).mean():7.4f} {int(a[:, 3].sum()):5d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
