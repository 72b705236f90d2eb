"""Reference values from the BMI package itself (Czyż et al. 2023, "Beyond Normal", PyPI
``benchmark-mi``), for mibench's re-implementation of its task catalogue.  Runs in BMI's own
environment (JAX) and never imports mibench:

    python -m venv bmi-ref && bmi-ref/bin/pip install benchmark-mi "jax==0.4.30" "jaxlib==0.4.30" "equinox<0.11.5"
    bmi-ref/bin/python benchmarks/peers/bmi_reference.py mibench/tasks/data/bmi_reference.json

For every task of BMI's v1 benchmark list (``bmi.benchmark.BENCHMARK_TASKS``, 40 tasks) and of the
mixture (BMM) tasks of its v2 workflow, it writes the task id, display name, dimensions, BMI's true
MI (nats) and, where BMI estimates the MI by Monte-Carlo, BMI's standard error; plus per-coordinate
quantiles (10/50/90 %) of 20,000 samples drawn with BMI's own sampler (seed 0), so the samplers
themselves can be compared, not only the MI values.
"""
import json
import sys
import time

import numpy as np

QUANTILES = (0.1, 0.5, 0.9)
N_QUANTILE = 20_000
MAX_COORDS = 3


def v2_mixture_tasks():
    import bmi.benchmark.tasks.mixtures as mixtures

    return [
        mixtures.task_x(),
        mixtures.task_ai(),
        mixtures.task_waves(),
        mixtures.task_galaxy(),
        mixtures.task_concentric_multinormal(dim_x=3, n_components=5),
        mixtures.task_concentric_multinormal(dim_x=5, n_components=5),
        mixtures.task_concentric_multinormal(dim_x=3, n_components=10),
        mixtures.task_concentric_multinormal(dim_x=5, n_components=10),
        mixtures.task_concentric_multinormal(dim_x=25, n_components=5),
        mixtures.task_multinormal_sparse_w_inliers(dim_x=5, dim_y=5, inlier_fraction=0.2),
        mixtures.task_multinormal_sparse_w_inliers(dim_x=25, dim_y=25, inlier_fraction=0.2),
        mixtures.task_multinormal_sparse_w_inliers(dim_x=5, dim_y=5, inlier_fraction=0.5),
        mixtures.task_multinormal_sparse_w_inliers(dim_x=25, dim_y=25, inlier_fraction=0.5),
    ]


def stderr_of(sampler):
    """BMI's Monte-Carlo standard error where its sampler has one (BMM samplers, possibly wrapped)."""
    while sampler is not None:
        if getattr(sampler, "_mi_stderr", None) is not None:
            return float(sampler._mi_stderr)
        sampler = getattr(sampler, "_base_sampler", None)
    return None


def record(task, catalogue: str) -> dict:
    t0 = time.perf_counter()
    mi = float(task.mutual_information)
    se = stderr_of(task.sampler)
    x, y = task.sample(N_QUANTILE, seed=0)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    q = lambda a: np.quantile(a[:, :MAX_COORDS], QUANTILES, axis=0).T.tolist()  # noqa: E731
    return {"id": task.id, "name": task.name, "catalogue": catalogue, "dim_x": int(task.dim_x),
            "dim_y": int(task.dim_y), "mi_nats": mi, "mi_stderr_nats": se,
            "truth": "Monte-Carlo" if se is not None else "closed form",
            "quantiles_x": q(x), "quantiles_y": q(y), "seconds": round(time.perf_counter() - t0, 2)}


def main() -> int:
    from bmi.benchmark import BENCHMARK_TASKS

    out = sys.argv[1] if len(sys.argv) > 1 else "bmi_reference.json"
    rows = []
    for task in BENCHMARK_TASKS.values():
        rows.append(record(task, "bmi-v1"))
        print(rows[-1]["id"], rows[-1]["mi_nats"], file=sys.stderr, flush=True)
    for task in v2_mixture_tasks():
        rows.append(record(task, "bmi-v2"))
        print(rows[-1]["id"], rows[-1]["mi_nats"], rows[-1]["mi_stderr_nats"], file=sys.stderr, flush=True)
    from importlib.metadata import version

    meta = {"package": "benchmark-mi", "version": version("benchmark-mi"), "jax": version("jax"),
            "quantiles": list(QUANTILES), "quantile_samples": N_QUANTILE, "quantile_seed": 0,
            "quantile_coords": MAX_COORDS, "units": "nats",
            "note": "v2 mixture tasks: BMI's BMMSampler defaults (mi_estimate_seed 0) with the tasks' "
                    "mi_estimate_sample = 100,000"}
    with open(out, "w") as fh:
        json.dump({"meta": meta, "tasks": rows}, fh, indent=1)
    print(f"wrote {out}: {len(rows)} tasks", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
