"""``gaussian``'s status on BMI's tasks: where the closed form is exact (jointly Gaussian data) it reports
nothing, where Mardia's kurtosis rejects joint normality ``not_gaussian``, where its bias dx dy / (2n) nats
exceeds 0.1 ``high_dimensional`` (mibench.estimators.classical.gaussian_status).

    python benchmarks/bench_gaussian_status.py [--out benchmarks/results/gaussian_status.txt]

Prints, per task (n = 5,000, seeds 0-2, the sample protocol's draws), the truth, and for each seed the
estimate, Mardia's kurtosis in standard deviations from its mean under normality, and the status, so the
statuses can be read against the errors.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TASKS = ("1v1-normal-0.75", "multinormal-dense-5-5-0.5", "multinormal-sparse-3-3-2-2.0", "multinormal-dense-25-25-0.5",
         "multinormal-dense-50-50-0.5", "student-identity-5-5-2", "student-identity-3-3-3",
         "asinh-student-identity-5-5-2", "1v1-bimodal-0.75", "half_cube-multinormal-sparse-3-3-2-2.0",
         "normal_cdf-multinormal-sparse-3-3-2-2.0", "wiggly-1v1-normal-0.75", "spiral-multinormal-sparse-3-3-2-2.0",
         "spiral-multinormal-sparse-25-25-2-2.0", "swissroll_x-normal_cdf-1v1-normal-0.75", "1v1-additive-0.1",
         "1v1-additive-0.75")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "gaussian_status.txt"))
    args = ap.parse_args()
    import math
    import platform
    import time

    from mibench.estimators import ESTIMATORS
    from mibench.estimators.classical import gaussian_parts, joint_kurtosis_z
    from mibench.protocols.sample.run import draw_dataset
    from mibench.tasks import make_task
    from mibench.tasks.base import fixed_level

    lines = [f"# bench_gaussian_status.py; {platform.machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "# task, truth (bits), estimate per seed 0-2 (bits), kurtosis z per seed, status per seed ('-': none)"]
    for name in TASKS:
        task, truth = make_task(name), fixed_level(name)
        values, zs, statuses = [], [], []
        for seed in range(3):
            est = ESTIMATORS.get("gaussian").obj()
            x, y = draw_dataset(task, 5000, truth, seed)
            values.append(est.estimate(x, y) / math.log(2))
            zs.append(joint_kurtosis_z(*gaussian_parts(x, y)))
            statuses.append(est.status or "-")
        lines.append(f"{name:<42} {truth:6.3f}  " + " ".join(f"{v:6.3f}" for v in values) + "  "
                     + " ".join(f"{z:8.1f}" for z in zs) + "  " + " ".join(statuses))
        print(lines[-1], flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
