"""Regenerate results/sample_leaderboard/evaluate_suites.txt: mibench.evaluate's quick and paper suites
ranked against the committed sample leaderboard, with an example black-box estimator (the Gaussian MI of
the correlation between the rows' means of x and y), run in-process.

    python scripts/evaluate_suites.py [--out results/sample_leaderboard/evaluate_suites.txt]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mibench  # noqa: E402


class MeanCorrelation:
    """-log(1 - c^2) / 2 nats for c = the correlation of x's and y's row means."""

    kind, n_parameters = "black-box", 0

    def estimate(self, x, y, *, seed=0):
        c = np.corrcoef(x.mean(1), y.mean(1))[0, 1]
        return -0.5 * np.log(1 - c ** 2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/sample_leaderboard/evaluate_suites.txt")
    ap.add_argument("--header", default="", help="comment lines to put first (the date and what changed)")
    args = ap.parse_args()
    lines = [f"# {h}" for h in args.header.split("\n") if h]
    lines += ["# mibench.evaluate's suites against results/sample_leaderboard, with an example black-box "
              "estimator on the",
              "# rows' means (MeanCorrelation, scripts/evaluate_suites.py, in-process: timeout=None):",
              "#   mibench.evaluate(MeanCorrelation(), suite='quick' | 'paper', name='mean-correlation', timeout=None)"]
    for suite in ("quick", "paper"):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            mibench.evaluate(MeanCorrelation(), suite=suite, name="mean-correlation", timeout=None, progress=False)
        lines += ["", f"## mibench.evaluate(MeanCorrelation(), suite='{suite}')", buf.getvalue().rstrip()]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
