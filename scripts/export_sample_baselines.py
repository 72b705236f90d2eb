#!/usr/bin/env python
"""Export committed baseline runs into the compact copies shipped in the package, which mibench.evaluate
ranks against when installed from a wheel (no checkout):

* the sample leaderboard, results/sample_leaderboard/ -> mibench/analysis/packaged/sample_leaderboard.json
  (the quick and paper suites; tests/test_wheel_baselines.py fails while the two disagree);
* the reference table, results/reference/sweep/ -> mibench/analysis/packaged/reference.json.gz (the bmi and
  reference suites; its complete cells).

    python scripts/export_sample_baselines.py [--set sample_leaderboard|reference] [SRC_DIR]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mibench.analysis.baselines import REFERENCE, SAMPLE, load_packaged, write_packaged  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("sample_leaderboard", "reference"), default="sample_leaderboard")
    parser.add_argument("src", nargs="?", help="the runs to export (default: the set's committed directory)")
    args = parser.parse_args()
    which = REFERENCE if args.set == "reference" else SAMPLE
    src = Path(args.src) if args.src else which.checkout
    path = write_packaged(src, which.packaged)
    runs = load_packaged(path)["runs"]
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {len(runs)} run directories "
          f"from {src}, {path.stat().st_size / 1024:.1f} KiB")
