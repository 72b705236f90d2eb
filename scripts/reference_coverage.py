#!/usr/bin/env python
"""How far the reference table got and what is left, from the committed cells: the numbers that
results/reference/README.md ("Coverage so far") quotes.

    python scripts/reference_coverage.py [--sweep results/reference/sweep]

Prints the complete cells out of the preset's, the tasks every estimator has run on, the compute so far
(the sum of the complete cells' own wall seconds, one worker's time), the slowest estimators (median
seconds per estimate), each recorded slice (sweep.json's invocations) and a forecast of the rest in
single-worker hours.  The forecast takes, per remaining cell, its estimates (seeds x MI levels) times a
seconds-per-estimate guess, the first that exists of:

1. the median over the same estimator's complete cells on the same task;
2. on a BMI task, the median over the same estimator's complete BMI cells;
3. on an image or text task, the estimator's median on that task in the committed sample leaderboard or
   mutinfo catalogue (``SETUP_RUNS``); else its seconds on the vision setup scaled by infonce's ratio of that
   task to the vision setup; else infonce's seconds there, scaled by the estimator's BMI median over
   infonce's.

Guesses 3 come from runs at other loads and budgets: the image and text part of the forecast is rough.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUP_TASKS = ("gaussian", "vision", "text")
SETUP_RUNS = ("results/sample_leaderboard/sweep/*/sample_estimates.csv",
              "results/catalogues/mutinfo-images-quick/*/sample_estimates.csv")


def _is_bmi(task: str) -> bool:
    return task not in SETUP_TASKS and not task.startswith("mutinfo")


def _estimates(cfg: dict) -> int:
    mi = cfg.get("mi")
    return len(cfg.get("seeds") or [0]) * (len(mi) if isinstance(mi, list) else 1)


def _setup_seconds() -> dict:
    """estimator -> task -> median seconds per estimate in the committed sample-protocol runs."""
    found: dict = defaultdict(lambda: defaultdict(list))
    for pattern in SETUP_RUNS:
        for path in sorted(ROOT.glob(pattern)):
            with path.open() as f:
                for row in csv.DictReader(f):
                    try:
                        found[row["estimator"]][row["task"]].append(float(row["seconds"]))
                    except (KeyError, ValueError):
                        continue
    return {e: {t: statistics.median(v) for t, v in d.items()} for e, d in found.items()}


def coverage(sweep: Path) -> dict:
    manifest = json.loads((sweep / "sweep.json").read_text())
    cells = manifest["cells"]
    per_cell: dict = defaultdict(list)      # (estimator, task) -> seconds per estimate
    per_bmi: dict = defaultdict(list)       # estimator -> seconds per estimate on BMI tasks
    tasks: dict = defaultdict(set)          # task -> estimators with a complete cell
    compute = 0.0
    done = set()                            # cells complete by their own record (as the sweep's plan decides)
    for cell in cells:
        path = sweep / cell["dir"] / "config.json"
        record = json.loads(path.read_text()) if path.exists() else {}
        if record.get("status") != "complete":
            continue
        done.add(cell["dir"])
        est, task = cell["config"]["estimators"][0], cell["config"]["task"]
        wall = float(record.get("wall_seconds") or 0.0)
        compute += wall
        per_cell[est, task].append(wall / _estimates(cell["config"]))
        if _is_bmi(task):
            per_bmi[est].append(wall / _estimates(cell["config"]))
        tasks[task].add(est)
    n_estimators = len({c["config"]["estimators"][0] for c in cells})
    bmi_median = {e: statistics.median(v) for e, v in per_bmi.items()}
    setup = _setup_seconds()

    def guess(est: str, task: str) -> float:
        if per_cell.get((est, task)):
            return statistics.median(per_cell[est, task])
        ratio = bmi_median.get(est, 20.0) / bmi_median.get("infonce", 20.0)
        if _is_bmi(task):
            return bmi_median.get(est, 20.0)
        mine, infonce = setup.get(est, {}), setup.get("infonce", {})
        if task in mine:
            return mine[task]
        if "vision" in mine and task in infonce and "vision" in infonce:
            return mine["vision"] * infonce[task] / infonce["vision"]
        return infonce.get(task, infonce.get("vision", 20.0)) * ratio

    remaining: Counter = Counter()
    left: Counter = Counter()
    for cell in cells:
        if cell["dir"] in done:
            continue
        est, task = cell["config"]["estimators"][0], cell["config"]["task"]
        part = "BMI" if _is_bmi(task) else "images and text"
        remaining[part] += _estimates(cell["config"]) * guess(est, task)
        left[part] += 1
    slowest = sorted(((statistics.median(v), e) for e, v in per_bmi.items()), reverse=True)[:6]
    return {
        "cells": len(cells), "complete": len(done), "estimators": n_estimators,
        "tasks_all": sorted(t for t, ests in tasks.items() if len(ests) >= n_estimators),
        "tasks_touched": len(tasks), "compute_hours": compute / 3600,
        "slowest": [(e, s) for s, e in slowest],
        "slices": [inv for inv in manifest.get("invocations", []) if "wall_seconds" in inv],
        "remaining_cells": dict(left), "remaining_hours": {k: v / 3600 for k, v in remaining.items()},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sweep", type=Path, default=ROOT / "results" / "reference" / "sweep")
    args = ap.parse_args(argv)
    c = coverage(args.sweep)
    print(f"complete cells: {c['complete']} of {c['cells']} ({c['estimators']} estimators)")
    print(f"tasks with every estimator: {len(c['tasks_all'])}; tasks with any cell: {c['tasks_touched']}")
    print(f"compute so far (sum of the complete cells' wall seconds): {c['compute_hours']:.2f} h")
    print("slowest on BMI's tasks, median s per estimate: "
          + ", ".join(f"{e} {s:.1f}" for e, s in c["slowest"]))
    for inv in c["slices"]:
        print(f"slice {inv['started']}: {inv['wall_seconds']:.0f} s, {inv.get('completed', '?')} cells completed, "
              f"{inv.get('workers', '?')} workers")
    total = sum(c["remaining_hours"].values())
    parts = "; ".join(f"{k}: {c['remaining_cells'][k]} cells, {h:.1f} h"
                      for k, h in sorted(c["remaining_hours"].items()))
    print(f"forecast for the rest, single-worker hours: {total:.1f} ({parts})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
