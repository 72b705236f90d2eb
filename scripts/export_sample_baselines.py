#!/usr/bin/env python
"""Export results/sample_leaderboard/ into the compact copy shipped in the package
(mibench/analysis/packaged/sample_leaderboard.json), which mibench.evaluate ranks against when
installed from a wheel (no checkout).  Run it after re-running the sample leaderboard;
tests/test_wheel_baselines.py fails while the two disagree.

    python scripts/export_sample_baselines.py [SRC_DIR]
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mibench.analysis.baselines import CHECKOUT, PACKAGED, load_packaged, write_packaged  # noqa: E402

if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else CHECKOUT
    path = write_packaged(src, PACKAGED)
    runs = load_packaged(path)["runs"]
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {len(runs)} run directories "
          f"from {src}, {path.stat().st_size / 1024:.1f} KiB")
