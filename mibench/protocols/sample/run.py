"""Running the sample protocol (as in the BMI benchmark, Czyż et al. 2023 §3): at each true-MI level
and seed the task draws **one fixed dataset** of ``n`` pairs, every estimator returns one number for
it (plus wall-clock seconds), and bias / variance / MSE are taken **over seeds**.

* Datasets: ``task.sample(n, mi_bits, generator)`` with a generator seeded from
  ``derived_seed(seed, "sample", level)``, so every estimator of a run (and of any other run with
  the same task, n, seed and level) sees the same pairs; any task works.
* Estimators: sample-based ones (``kind`` black-box / generative, :mod:`mibench.estimators.kinds`)
  are called on the arrays; critic-bound ones go through ``mibench.estimate`` (trained on a split,
  held-out value).
* Isolation: with a ``timeout`` every estimate runs in a spawned worker process
  (:class:`mibench.protocols.workers.EstimateWorker`) that is killed when the estimate runs past it, so
  a hang or a crash costs one estimate, not the run; ``timeout=None`` runs in-process.
* Outputs (through :mod:`mibench.records`): ``config.json`` (``"protocol": "sample"``),
  ``sample_estimates.csv`` (rewritten after every estimate, so a run resumes from the last one),
  ``summary.csv`` and ``estimates.png``.

Two status columns keep apart whether an estimate was obtained (``status``: ``ok``, a failure, or
``implausible`` for a number :mod:`mibench.estimation.plausibility` refuses -- counted as failed,
never averaged) and how far the estimator itself trusts its number (``mi_status``, ``mi_stderr``).
Summary metrics (bits) are over the successful seeds: ``mean_estimate``, ``bias``, ``variance`` (the
population variance), ``mse`` = bias^2 + variance.  The columns in full: docs/run-directory.md,
"The sample protocol".
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mibench.metrics import status_counts
from mibench.protocols.base import PreparedRun
from mibench.protocols.sample.config import DEFAULT_N, DEFAULT_TIMEOUT, SampleConfig, check_memory  # noqa: F401
from mibench.protocols.sample.job import CellJob, bits_or_empty, estimate_cell, estimate_once
from mibench.records import (
    SAMPLE_SUMMARY_EXTRA,
    RunHeader,
    read_sample_estimates,
    write_sample_estimates,
    write_summary,
)
from mibench.records.io import float_or_nan
from mibench.utils.seeding import derived_seed
from mibench.utils.units import LN2


@dataclass
class SampleResult:
    config: dict
    rows: list          # per-estimate rows (mibench.records.SAMPLE_ESTIMATE_COLUMNS)
    summary: list       # summary rows
    out_dir: Path | None = None


#: a cell's members train together only where their datasets (float64) fit in this many bytes at once
CELL_MAX_BYTES = 256 * 2 ** 20


@dataclass
class PreparedSample(PreparedRun):
    """A sample run checked and ready: config, device, task, the kind of each estimator and the
    estimators that train a cell's members (seeds) together (:func:`batched_estimators`)."""

    kinds: dict | None = None
    batched: frozenset = frozenset()


def dataset_seed(seed: int, level: float) -> int:
    return derived_seed(int(seed), "sample", f"{float(level):g}")


def draw_dataset(task, n: int, mi_bits: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed dataset of one (level, seed): ``n`` pairs as float64 arrays (n, dx), (n, dy)."""
    import torch

    gen = torch.Generator(device=task.device)
    gen.manual_seed(dataset_seed(seed, mi_bits))
    xs, ys = [], []
    chunk = 16_384
    with torch.no_grad():
        for start in range(0, n, chunk):
            xb, yb = task.sample(min(chunk, n - start), mi_bits, gen)
            xs.append(xb.detach().to("cpu", torch.float64).reshape(xb.shape[0], -1).numpy())
            ys.append(yb.detach().to("cpu", torch.float64).reshape(yb.shape[0], -1).numpy())
    return np.concatenate(xs), np.concatenate(ys)


def prepare(cfg: SampleConfig) -> PreparedSample:
    """Validate names, sizes and MI levels against the task; build the task (one-line errors)."""
    from mibench.estimators.registry import estimator_kind
    from mibench.tasks import make_task
    from mibench.tasks.base import check_mi_request
    from mibench.utils.device import resolve_device

    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    task = make_task(cfg.task, device=device, **cfg.task_params)
    # the levels the data is drawn at: a request within the printed precision of the task's maximum is
    # drawn at the maximum, and recorded so (a truth of 4.0004 bits was recorded for data drawn at 4)
    drawn = [check_mi_request(task.name, level, task.max_mi_bits) for level in cfg.levels]
    if drawn != cfg.levels:
        cfg = dataclasses.replace(cfg, mi=drawn if len(drawn) > 1 else drawn[0])
    kinds = {name: estimator_kind(name) for name in cfg.estimators}
    check_memory(cfg, task, device, critic_bound="critic" in kinds.values())
    return PreparedSample(cfg, device, task, kinds, batched_estimators(cfg, device, kinds))


def batched_estimators(cfg: SampleConfig, device, kinds: dict) -> frozenset:
    """The sample estimators of ``cfg`` that train a cell's members (its (level, seed) pairs) as one stacked
    network on ``device`` (:meth:`~mibench.estimators.trained.HeldOutEstimator.batches_members`: where that
    is faster than one at a time), when there are several pairs.  Such an estimator estimates the pairs it
    misses in one job (:class:`~mibench.protocols.sample.job.CellJob`; with a timeout, the worker has
    ``timeout`` per member; the levels go in groups where their datasets do not fit at once, :func:`_todo`),
    each member with its own dataset, split and seed, and its row recorded as its separate estimate's would
    be, in the same place; its ``seconds`` is an equal share of the cell's time."""
    from mibench.estimation.estimate import sample_estimator
    from mibench.estimators import ESTIMATORS

    out = set()
    for name in cfg.estimators if len(cfg.seeds) * len(cfg.levels) > 1 else ():
        if kinds.get(name) == "critic":
            continue
        try:
            obj = sample_estimator(ESTIMATORS.get(name).obj(), str(device))
            if callable(getattr(obj, "batches_members", None)) and obj.batches_members():
                out.add(name)
        except Exception:     # an estimator that cannot say trains its members one at a time
            continue
    return frozenset(out)


def summarize_over_seeds(task: str, critic: str, rows: list[dict], kinds: dict, n: int) -> list[dict]:
    """Summary rows (bits) per estimator and level over the successful seeds."""
    out = []
    keys = []
    for r in rows:
        k = (r["estimator"], r["true_mi"])
        if k not in keys:
            keys.append(k)
    for est, level in sorted(keys, key=lambda k: (k[1], keys.index(k))):
        group = [r for r in rows if r["estimator"] == est and r["true_mi"] == level]
        ok = np.array([r["estimate"] for r in group if r["status"] == "ok"], dtype=float)
        secs = np.array([r["seconds"] for r in group if r["status"] == "ok"], dtype=float)
        params = [r["n_parameters"] for r in group if r["status"] == "ok"]
        statuses = [str(r.get("mi_status") or "") for r in group if r["status"] == "ok"]
        ses = np.array([float_or_nan(r.get("mi_stderr")) for r in group if r["status"] == "ok"], dtype=float)
        ses = ses[np.isfinite(ses)]
        if ok.size:
            mean, var, mse = float(ok.mean()), float(ok.var()), float(np.mean((ok - level) ** 2))
        else:
            mean = var = mse = float("nan")
        out.append({"task": task, "estimator": est, "critic": critic if kinds.get(est) == "critic" else "",
                    "true_mi": level, "mean_estimate": mean, "bias": mean - level, "variance": var, "mse": mse,
                    "steps": int(ok.size), "kind": kinds.get(est, ""), "n": n, "estimates": len(group),
                    "failed": len(group) - int(ok.size),
                    "seconds": float(np.mean(secs)) if secs.size else float("nan"),
                    "n_parameters": int(max(params)) if params else 0,
                    "mi_status": status_counts(statuses),
                    "mi_stderr": float(ses.mean()) if ses.size else ""})
    return out


def _describe_failure(r: dict) -> str:
    return (f"{r['estimator']} at {r['true_mi']:g} bits, seed {r['seed']}: {r['status']}"
            + (f" ({r['error']})" if r["error"] else ""))


def run_sample(prepared, out_dir=None, *, progress: bool = False, plot: bool = True, run_id: str | None = None,
               extra: dict | None = None, resume: bool = False) -> SampleResult:
    """Run the sample protocol on a prepared config (:func:`prepare`); with ``out_dir`` write the run
    directory (module docstring).

    Parameters
    ----------
    prepared : what :func:`prepare` returns (or a :class:`SampleConfig`, prepared here).
    out_dir : the run directory (nothing is written without one): new or empty, or with ``resume``
        the directory of this run (:func:`mibench.records.claim`; anything else is refused); or the
        :class:`~mibench.records.Claim` the caller made of it.
    progress : one line per estimate on stderr.
    plot : write estimates.png.
    run_id : recorded in config.json and every row (default: the directory's name).
    extra : keys added to config.json (e.g. ``rerun_of``).
    resume : keep the estimates already in ``out_dir``'s sample_estimates.csv and run the rest.
    """
    from mibench.protocols.runtime import RunLifecycle, check_stop
    from mibench.protocols.workers import EstimateWorker

    if isinstance(prepared, SampleConfig):
        prepared = prepare(prepared)
    cfg, task = prepared.config, prepared.task
    life = RunLifecycle(out_dir, prepared.config_dict(), resume=resume)
    run_id = life.run_id(run_id)
    rows = _at_config_levels(_kept_rows(life), cfg.levels)
    t0 = time.perf_counter()
    with life.running(_header(prepared, run_id, extra), carry=("estimator_info", "estimator_settings")) as config:
        worker = EstimateWorker() if cfg.timeout is not None else None

        def estimate(seeds, job):
            if worker is None:
                res = estimate_cell(job) if isinstance(job, CellJob) else estimate_once(*job)
            else:        # a cell trains its members together: each member's --timeout, in one budget
                limit = f"--timeout {cfg.timeout:g} s" + (f" per estimate ({cfg.timeout * len(seeds):g} s for the "
                                                          f"{len(seeds)} trained together)" if len(seeds) > 1 else "")
                res = worker.run(job, cfg.timeout * len(seeds), limit)
            if isinstance(res, list):
                return res
            # a failed worker fails each member, each with its share of the time
            share = res.get("seconds", float("nan")) / len(seeds)
            return [{**res, "seconds": share} for _ in seeds]

        done = False
        try:
            for members, name, datasets in _todo(prepared, rows):
                check_stop()
                seeds = [seed for _, seed in members]
                if len(members) > 1:
                    job = CellJob(name, datasets, seeds, str(prepared.device))
                else:
                    job = (name, *datasets[0], seeds[0], cfg.critic, str(prepared.device), cfg.estimate_kwargs)
                for (level, seed), res in zip(members, estimate(seeds, job)):
                    rows.append(_row(res, run_id, task.name, name, prepared.kinds, cfg, seed, level))
                    _note(config, name, res)
                    if progress:
                        _print_progress(rows[-1], len(rows), len(cfg.levels) * len(cfg.seeds) * len(cfg.estimators))
                rows.sort(key=_run_order(cfg))      # a cell's rows where its separate estimates' would be
                if life.out is not None:
                    write_sample_estimates(life.out / "sample_estimates.csv", rows)
                    life.beat()
            check_stop()
            done = True
        finally:
            if worker is not None:
                worker.stop(kill=not done)
        summary = summarize_over_seeds(task.name, cfg.critic, rows, prepared.kinds, cfg.n)
        config.update(wall_seconds=round(time.perf_counter() - t0, 3),
                      failed_estimates=[_describe_failure(r) for r in rows if r["status"] != "ok"], finished=_now())
        result = SampleResult(config, rows, summary, life.out)
        if life.out is not None:
            _write_outputs(life.out, result, plot, f"{task.name} · n = {cfg.n} · seeds {','.join(map(str, cfg.seeds))}")
        life.complete(files=("sample_estimates.csv", "summary.csv"))   # last: marks it complete
    return result


#: the name every protocol's run module gives its run
run = run_sample


def _now() -> str:
    from mibench.records.run_dir import now_iso

    return now_iso()


def _header(prepared: PreparedSample, run_id, extra) -> RunHeader:
    """config.json's header of a sample run."""
    from mibench.protocols.runtime import environment

    cfg = prepared.config
    schedule = {"levels_bits": cfg.levels, "description": f"sample protocol: n = {cfg.n} pairs per level and seed, "
                                                          f"seeds {','.join(map(str, cfg.seeds))}"}
    return RunHeader("sample", run_id, prepared.config_dict(), schedule, prepared.task.info(),
                     environment(prepared.device), {"kinds": prepared.kinds}, dict(extra or {}))


def _kept_rows(life) -> list[dict]:
    """The estimates a resumed run already made (as written)."""
    path = life.out / "sample_estimates.csv" if life.out is not None else None
    if not life.resume or path is None or not path.is_file():
        return []
    return [_as_written(r) for r in read_sample_estimates(path)]


def _at_config_levels(rows: list[dict], levels) -> list[dict]:
    """Kept rows with ``true_mi`` read back as the config's level it was written from: the CSV keeps 6
    decimals, so 1 nat (1.4426950408889634 bits) reads back as 1.442695, which no level equals; matched
    by the written value, a resumed run neither makes that estimate again nor summarises it apart."""
    written = {round(float(v), 6): float(v) for v in levels}
    return [{**r, "true_mi": written.get(round(float(r["true_mi"]), 6), r["true_mi"])} for r in rows]


def _run_order(cfg: SampleConfig):
    """Sort key of the rows: level, seed, estimator, in the config's order (the order of separate
    estimates); rows of values the config does not list (none, unless edited) last, in their order."""
    levels = {float(v): i for i, v in enumerate(cfg.levels)}
    seeds = {int(v): i for i, v in enumerate(cfg.seeds)}
    names = {v: i for i, v in enumerate(cfg.estimators)}
    last = len(levels) + len(seeds) + len(names)
    return lambda r: (levels.get(float(r["true_mi"]), last), seeds.get(int(r["seed"]), last),
                      names.get(r["estimator"], last))


def _note(config: dict, name: str, res: dict) -> None:
    """config.json's notes of how an estimator ran: its info (e.g. ksg's neighbour search) and, for a
    trained estimator, its typed settings as it ran (the first estimate's)."""
    if res.get("info"):
        config.setdefault("estimator_info", {}).setdefault(name, res["info"])
    if res.get("parameters"):
        config.setdefault("estimator_settings", {}).setdefault(name, res["parameters"])


def _todo(prepared: PreparedSample, rows: list[dict]):
    """``(members, estimator, datasets)`` of every estimate still to make, ``members`` its (level, seed)
    pairs and ``datasets`` their (x, y), each (level, seed)'s dataset drawn once (only where one of its
    estimates is missing).  The levels go in groups whose datasets fit in :data:`CELL_MAX_BYTES` (all of
    them where they fit): in each group, first one item per estimator that trains a cell's members together
    (``prepared.batched``) with every (level, seed) it misses there (a run's levels share one shape, so
    they stack as its seeds do), then one item per estimate of the others, level by level and seed by seed."""
    cfg, task = prepared.config, prepared.task
    done = {(r["estimator"], float(r["true_mi"]), int(r["seed"])) for r in rows}
    per_level = cfg.n * (int(task.dim_x) + int(task.dim_y)) * 8 * len(cfg.seeds)
    group = max(1, CELL_MAX_BYTES // per_level)
    stack = per_level <= CELL_MAX_BYTES
    levels = list(cfg.levels)
    for start in range(0, len(levels), group):
        missing = {(float(level), int(seed)): [name for name in cfg.estimators
                                               if (name, float(level), int(seed)) not in done]
                   for level in levels[start:start + group] for seed in cfg.seeds}
        cells = [name for name in cfg.estimators if stack and name in prepared.batched
                 and sum(name in todo for todo in missing.values()) > 1]
        data = {}
        for name in cells:
            members = [key for key, todo in missing.items() if name in todo]
            for key in members:
                if key not in data:
                    data[key] = draw_dataset(task, cfg.n, *key)
            yield members, name, [data[key] for key in members]
        for key, todo in missing.items():
            todo = [name for name in todo if name not in cells]
            if todo:
                x, y = data.pop(key) if key in data else draw_dataset(task, cfg.n, *key)
                images = _as_images(task, cfg.critic, x, y)
                for name in todo:
                    yield [key], name, [images if prepared.kinds.get(name) == "critic" else (x, y)]
            data.pop(key, None)


def _as_images(task, critic: str, x, y):
    """For an image critic (``conv``), the task's image sides as (n, C, H, W) arrays (``mibench.estimate``
    reads the shape off them); the flat arrays otherwise."""
    from mibench.tasks.shapes import check_critic_for_task

    shapes = check_critic_for_task(critic, task)
    if shapes is None:
        return x, y
    return tuple(a if s is None else a.reshape(a.shape[0], *s) for a, s in zip((x, y), shapes))


def _print_progress(r: dict, i: int, total: int) -> None:
    val = f"{r['estimate']:.3f} bits ({r['seconds']:.2f} s)" if r["status"] == "ok" else f"{r['status']}: {r['error']}"
    print(f"[{i}/{total}] {r['estimator']} · {r['true_mi']:g} bits · seed {r['seed']}: {val}", file=sys.stderr,
          flush=True)


def _write_outputs(out: Path, result: SampleResult, plot: bool, title: str) -> None:
    write_sample_estimates(out / "sample_estimates.csv", result.rows)
    write_summary(out / "summary.csv", result.summary, SAMPLE_SUMMARY_EXTRA)
    if plot:
        from mibench.plots import plot_sample_run

        plot_sample_run(out / "estimates.png", result.rows, title)


def _as_written(r: dict) -> dict:
    """A row read back from sample_estimates.csv in the types :func:`_row` gives (so a resumed run
    writes the kept rows exactly as they were)."""
    r = dict(r)
    r["n"] = int(float_or_nan(r.get("n")) if r.get("n") not in (None, "") else 0)
    r["mi_stderr"] = r["mi_stderr"] if math.isfinite(r["mi_stderr"]) else ""
    r["clipped"] = {"True": True, "False": False}.get(r.get("clipped"), r.get("clipped", ""))
    return r


def _row(res: dict, run_id, task: str, name: str, kinds: dict, cfg: SampleConfig, seed, level) -> dict:
    value = res.get("value_nats", float("nan"))
    return {"run_id": run_id, "task": task, "estimator": name, "kind": res.get("kind") or kinds[name],
            "critic": cfg.critic if kinds[name] == "critic" else "", "seed": seed, "n": cfg.n,
            "true_mi": float(level), "estimate": value / LN2 if value == value else value,
            "seconds": res.get("seconds", float("nan")), "n_parameters": int(res.get("n_parameters") or 0),
            "status": res.get("status"), "mi_status": res.get("mi_status", ""),
            "mi_stderr": bits_or_empty(res.get("mi_stderr_nats", float("nan"))),
            "clipped": res.get("clipped", ""), "error": res.get("error", "")}
