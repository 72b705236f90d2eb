#!/usr/bin/env bash
# Stage the reference sweep's complete cells (config.json status "complete") and re-export the packaged
# copy the bmi / reference suites rank against; the caller commits.  Cells still running are left out.
set -euo pipefail
cd "$(dirname "$0")/.."
python - <<'PY'
import json, pathlib, subprocess
root = pathlib.Path("results/reference/sweep")
done = [p.parent for p in sorted(root.glob("*/config.json")) if json.loads(p.read_text()).get("status") == "complete"]
subprocess.run(["git", "add", "--", *map(str, done)], check=True)
print(f"staged {len(done)} complete cells")
PY
python scripts/export_sample_baselines.py --set reference
git add mibench/analysis/packaged/reference.json.gz
