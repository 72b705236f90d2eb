#!/usr/bin/env bash
# Reproduce the committed studies (CPU quick sizes; see README.md).  Each study is one resumable
# sweep under results/sweeps/studies-<study> (not committed), then its leaderboard CSV/Markdown
# and figure under results/studies/.  Usage: results/studies/run_studies.sh [STUDY ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${MIBENCH_DATA:?set MIBENCH_DATA to your data directory (mibench data prints the layout)}"
export MIBENCH_DATA
WORKERS="${WORKERS:-2}"; THREADS="${THREADS:-1}"
studies=("$@"); [ ${#studies[@]} -eq 0 ] && studies=(encoders resnet-layers estimators nuisance ds critics depth dr encoders_long estimators_long nuisance_long)
for s in "${studies[@]}"; do
  t0=$(date +%s)
  case "$s" in
    encoders)      nice -n 5 python -m mibench.cli sweep --preset encoders --quick --out results/sweeps/studies-encoders \
                     --workers "$WORKERS" --threads "$THREADS" --no-leaderboard --no-plot ;;
    ds)            nice -n 5 python -m mibench.cli sweep --preset ds --quick --out results/sweeps/studies-ds \
                     --workers "$WORKERS" --threads "$THREADS" --no-leaderboard --no-plot ;;   # paper §5.4: MI = ds bits
    resnet-layers) nice -n 5 python -m mibench.cli encoders train-resnet --layout 1x2x2 --side 16
                   nice -n 5 python -m mibench.cli sweep --preset resnet-layers --quick --seeds 0,1 --out results/sweeps/studies-resnet-layers \
                     --workers "$WORKERS" --threads "$THREADS" --no-leaderboard --no-plot ;;
    *)             nice -n 5 python -m mibench.cli sweep "results/studies/$s.toml" --out "results/sweeps/studies-$s" \
                     --workers "$WORKERS" --threads "$THREADS" --no-leaderboard --no-plot ;;
  esac
  t1=$(date +%s)
  mkdir -p "results/studies/$s"
  python -m mibench.cli leaderboard "results/sweeps/studies-$s" -o "results/studies/$s/leaderboard.csv" \
    --title "study $s (CPU quick size)"
  if [ "$s" = resnet-layers ]; then
    nice -n 5 python -m mibench.cli encoders layer-study results/sweeps/studies-resnet-layers -o results/studies
  else
    python scripts/make_study_figures.py "$s"
  fi
  [ -f results/studies/wall_seconds.csv ] || echo "study,wall_seconds" > results/studies/wall_seconds.csv
  echo "$s,$((t1 - t0))" >> results/studies/wall_seconds.csv
done
