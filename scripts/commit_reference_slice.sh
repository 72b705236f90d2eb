#!/usr/bin/env bash
# Stage the reference sweep's complete cells (config.json status "complete"), re-export the packaged
# copy the bmi / reference suites rank against and rebuild the table's views; the caller commits.  Cells still
# running are left out.
# Run it while the sweep is stopped (SIGTERM, then --resume after the commit): the packaged copy and the views
# are built from the directory, so a cell completing meanwhile would be in them but not in the commit.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git diff --quiet -- README.md docs/estimators.md; then
    echo "README.md or docs/estimators.md has uncommitted edits: commit them first (this script stages both)" >&2
    exit 1
fi
python - <<'PY'
import json, pathlib, subprocess
root = pathlib.Path("results/reference/sweep")
done = [p.parent for p in sorted(root.glob("*/config.json")) if json.loads(p.read_text()).get("status") == "complete"]
subprocess.run(["git", "add", "--", *map(str, done)], check=True)
# a committed cell being re-run (deleted, or running again) leaves the commit until it is complete again,
# so the committed cells, the packaged copy and the views agree
tracked = subprocess.run(["git", "ls-files", "--", str(root)], capture_output=True, text=True, check=True).stdout
stale = sorted({pathlib.Path(f).parent for f in tracked.split() if f.endswith("/config.json")} - set(done))
if stale:
    subprocess.run(["git", "rm", "-r", "-q", "--cached", "--", *map(str, stale)], check=True)
print(f"staged {len(done)} complete cells; {len(stale)} committed cells not complete now left out")
PY
python scripts/export_sample_baselines.py --set reference
git add mibench/analysis/packaged/reference.json.gz
# the manifest: every cell's status and each slice's wall time (sweep.json's invocations)
git add results/reference/sweep/sweep.json
# the leaderboard and the reference views of the cells so far (families, heatmap, outliers, statuses)
mibench leaderboard results/reference/sweep -o results/reference/leaderboard.csv --families > /dev/null
git add results/reference/leaderboard.csv results/reference/leaderboard.md results/reference/leaderboard.meta.json \
    results/reference/families.csv results/reference/families.md results/reference/outliers.csv \
    results/reference/statuses.csv results/reference/statuses_by_estimator.csv results/reference/heatmap.png
# README's and docs/estimators.md's "Which estimator?" rows follow the rebuilt families.csv
python scripts/which_estimator.py
git add README.md docs/estimators.md
