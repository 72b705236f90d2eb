"""Compare mibench's BMI catalogue with BMI's own values: truth per task (closed forms: |ours - BMI|;
Monte-Carlo: the difference in combined standard errors) and the samplers (largest deviation of our
empirical CDF at BMI's 10/50/90 % quantiles, in units of its standard error).  Writes a Markdown and
a CSV table:

    python benchmarks/peers/bmi_compare.py benchmarks/results/bmi_catalogue_comparison

Reads mibench/tasks/data/bmi_reference.json (benchmarks/peers/bmi_reference.py, BMI's environment).
"""
import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

from mibench.tasks import make_task

REF = Path(__file__).resolve().parents[2] / "mibench" / "tasks" / "data" / "bmi_reference.json"


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bmi_catalogue_comparison")
    ref = json.loads(REF.read_text())
    n = ref["meta"]["quantile_samples"]
    levels = np.array(ref["meta"]["quantiles"])
    se_cdf = np.sqrt(2 * levels * (1 - levels) / n)
    rows = []
    for r in ref["tasks"]:
        t = make_task(r["id"])
        x, y = t.sample(n, t.mi_bits, torch.Generator().manual_seed(7))
        z = 0.0
        for ours, qs in ((x, r["quantiles_x"]), (y, r["quantiles_y"])):
            a = ours.double().numpy()
            for j, q in enumerate(qs):
                z = max(z, float(np.max(np.abs((a[:, j:j + 1] <= np.array(q)[None, :]).mean(0) - levels) / se_cdf)))
        row = {"task": r["id"], "catalogue": r["catalogue"], "dims": f"{t.dim_x}x{t.dim_y}", "truth": t.truth,
               "bmi_mi_nats": r["mi_nats"], "mibench_mi_nats": t.mi_nats, "diff_nats": t.mi_nats - r["mi_nats"],
               "bmi_stderr": r["mi_stderr_nats"] or "", "mibench_stderr": t.mi_stderr_nats or "",
               "diff_in_stderr": "", "sampler_max_cdf_dev_in_se": round(z, 2)}
        if r["mi_stderr_nats"]:
            row["diff_in_stderr"] = round(row["diff_nats"] / math.hypot(r["mi_stderr_nats"], t.mi_stderr_nats), 2)
        rows.append(row)
    with open(out.with_suffix(".csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    closed = [r for r in rows if r["truth"] == "closed form"]
    mc = [r for r in rows if r["truth"] != "closed form"]
    lines = [f"# mibench's BMI catalogue vs BMI {ref['meta']['version']} (JAX {ref['meta']['jax']})", "",
             f"Closed forms ({len(closed)} tasks): max |mibench - BMI| = "
             f"{max(abs(r['diff_nats']) for r in closed):.2e} nats "
             f"({max(abs(r['diff_nats']) for r in closed if r['task'] != '1v1-additive-0.1'):.2e} without "
             "1v1-additive-0.1, which BMI evaluates in float32).",
             f"Monte-Carlo ({len(mc)} tasks): max |difference| = {max(abs(r['diff_in_stderr']) for r in mc):.2f} "
             "combined standard errors.",
             f"Samplers: largest empirical-CDF deviation at BMI's 10/50/90 % quantiles (n = {n} each side) = "
             f"{max(r['sampler_max_cdf_dev_in_se'] for r in rows):.2f} standard errors.", "",
             "| task | catalogue | dims | truth | BMI MI (nats) | mibench MI (nats) | difference | in stderr "
             "| sampler dev (se) |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['catalogue']} | {r['dims']} | {r['truth']} | {r['bmi_mi_nats']:.6f} | "
                     f"{r['mibench_mi_nats']:.6f} | {r['diff_nats']:+.1e} | {r['diff_in_stderr']} | "
                     f"{r['sampler_max_cdf_dev_in_se']} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:6]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
