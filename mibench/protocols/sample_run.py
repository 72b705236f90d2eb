"""Running the sample protocol (as in the BMI benchmark, Czyż et al. 2023 §3): at each true-MI level
and seed the task draws **one fixed dataset** of ``n`` pairs, every estimator returns one number for
it (plus wall-clock seconds), and bias / variance / MSE are taken **over seeds**.

* Datasets: ``task.sample(n, mi_bits, generator)`` with a generator seeded from
  ``derived_seed(seed, "sample", level)``, so every estimator of a run (and of any other run with
  the same task, n, seed and level) sees the same pairs; any task works.
* Estimators: sample-based ones (``kind`` black-box / generative,
  :mod:`mibench.estimators.protocols`) are called as ``estimate(x, y, seed=seed)``; critic-bound
  ones go through ``mibench.estimate(x, y, estimator=NAME, critic=..., seed=SEED, units="nats")``
  (trained on a split, held-out value).
* Isolation: with a ``timeout`` (default 600 s) every estimate runs in a spawned worker process
  (:class:`mibench.workers.EstimateWorker`) that is killed when the estimate runs past it; an
  exception, a NaN / inf, a timeout or a crashed worker is recorded for that estimate (``status``)
  and the run carries on.  ``timeout=None`` runs in-process (no protection against hangs).
* Outputs (through :mod:`mibench.records`): ``config.json`` (``"protocol": "sample"``),
  ``sample_estimates.csv`` (rewritten after every estimate), ``summary.csv`` and ``estimates.png``.
* Resume: the estimates already in ``sample_estimates.csv`` are kept and the rest are run.

Two status columns: ``status`` is the outcome of the estimate as a computation (``ok``, ``error``,
``non_finite``, ``timeout``, ``crashed``); ``mi_status`` is how far the estimator itself trusts its
number: for critic-bound estimators :class:`mibench.estimation.EstimateResult`'s ``status``, with
``mi_stderr`` its standard error (bits) and ``clipped`` whether a negative held-out value was
reported as 0; for black-box / generative estimators that return a bare float, the object's
``status`` attribute if it sets one, else empty.  In ``summary.csv``, ``mi_status`` counts the
statuses over the successful seeds (``converged:2;overfit:1``) and ``mi_stderr`` is their mean.

Summary metrics (bits): ``mean_estimate`` and ``bias`` over the successful seeds, ``variance`` the
population variance over them, ``mse`` = mean squared error = bias^2 + variance.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..checks import check_fields, parse_seeds
from ..errors import MibenchError, one_line
from ..metrics import status_counts
from ..records import (
    SAMPLE_SUMMARY_EXTRA,
    RunWriter,
    read_config,
    read_sample_estimates,
    write_sample_estimates,
    write_summary,
)
from ..records.run_dir import now_iso
from ..seeding import derived_seed
from .sample_estimate import bits_or_empty, estimate_once, float_or_nan

LN2 = math.log(2.0)
DEFAULT_N = 10_000
DEFAULT_TIMEOUT = 600.0
#: the fewest pairs a dataset may have (critic-bound estimators need mibench.estimate's minimum)
MIN_N_BLACK_BOX = 20


@dataclass
class SampleConfig:
    task: str = "gaussian"
    task_params: dict = field(default_factory=dict)
    estimators: list = field(default_factory=lambda: ["ksg"])
    critic: str = "joint"           # critic of critic-bound estimators (mibench.estimate)
    mi: object = 4.0                # one level or a comma list of levels, bits
    n: int = DEFAULT_N
    seeds: list = field(default_factory=lambda: [0, 1, 2])
    timeout: float | None = DEFAULT_TIMEOUT
    device: str = "auto"
    estimate_kwargs: dict = field(default_factory=dict)   # steps, batch_size, ... for mibench.estimate
    protocol: str = "sample"

    def resolved(self) -> "SampleConfig":
        """Canonical names, typed values; a bad value is one line."""
        from ..critics import CRITICS
        from ..estimation.estimate import MIN_SAMPLES
        from ..estimators import resolve_estimators
        from ..estimators.protocols import CRITIC
        from ..estimators.registry import estimator_kind
        from ..schedule import parse_schedule

        levels = list(parse_schedule(self.mi, 10**9).levels)
        names = resolve_estimators(self.estimators)
        n = int(self.n)
        critic_bound = [e for e in names if estimator_kind(e) == CRITIC]
        least = MIN_SAMPLES if critic_bound else MIN_N_BLACK_BOX
        if n < least:
            why = f" ({', '.join(critic_bound)} train a critic through mibench.estimate)" if critic_bound else ""
            raise MibenchError(f"--n must be at least {least} pairs{why}, got {self.n}")
        seeds = parse_seeds(self.seeds, "--seeds")
        timeout = None if self.timeout in (None, 0, "none") else float(self.timeout)
        if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
            raise MibenchError(f"--timeout must be a positive number of seconds, got {self.timeout}")
        critic = CRITICS.get(self.critic).name
        return dataclasses.replace(self, task_params=dict(self.task_params), estimators=names, critic=critic,
                                   mi=levels if len(levels) > 1 else levels[0], n=n, seeds=seeds, timeout=timeout,
                                   estimate_kwargs=dict(self.estimate_kwargs or {}))

    @property
    def levels(self) -> list[float]:
        return [float(v) for v in (self.mi if isinstance(self.mi, (list, tuple)) else [self.mi])]


FIELD_TYPES = {"task": str, "task_params": dict, "estimators": None, "critic": str, "mi": None, "n": int,
               "seeds": None, "timeout": (float, None), "device": str, "estimate_kwargs": dict, "protocol": str}


def config_from_dict(data: dict, where: str = "config") -> SampleConfig:
    """A :class:`SampleConfig` from config.json's ``config`` (one line for unknown fields or bad types)."""
    return SampleConfig(**check_fields(data, FIELD_TYPES, where))


@dataclass
class SampleResult:
    config: dict
    rows: list          # per-estimate rows (mibench.records.SAMPLE_ESTIMATE_COLUMNS)
    summary: list       # summary rows
    out_dir: Path | None = None


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


def prepare(cfg: SampleConfig):
    """Validate names, sizes and MI levels against the task; build the task (one-line errors):
    ``(cfg, device, task, kinds)``."""
    from ..device import resolve_device
    from ..estimators.registry import estimator_kind
    from ..tasks import make_task
    from ..tasks.base import check_mi_request

    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    task = make_task(cfg.task, device=device, **cfg.task_params)
    for level in cfg.levels:
        check_mi_request(task.name, level, task.max_mi_bits)
    kinds = {name: estimator_kind(name) for name in cfg.estimators}
    return cfg, device, task, kinds


def summarize(task: str, critic: str, rows: list[dict], kinds: dict, n: int) -> list[dict]:
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


class _StopFlag:
    requested = False


STOP = _StopFlag()


def run_sample(prepared, out_dir=None, *, progress: bool = False, plot: bool = True, run_id: str | None = None,
               extra: dict | None = None, resume: bool = False) -> SampleResult:
    """Run the sample protocol on a prepared config (:func:`prepare`); with ``out_dir`` write the run
    directory (module docstring).

    Parameters
    ----------
    prepared : the tuple :func:`prepare` returns (or a :class:`SampleConfig`, prepared here).
    out_dir : the run directory (nothing is written without one): new or empty, or with ``resume``
        the directory of this run (:func:`mibench.records.claim`; anything else is refused).
    progress : one line per estimate on stderr.
    plot : write estimates.png.
    run_id : recorded in config.json and every row (default: the directory's name).
    extra : keys added to config.json (e.g. ``rerun_of``).
    resume : keep the estimates already in ``out_dir``'s sample_estimates.csv and run the rest.
    """
    from ..workers import EstimateWorker
    from .runtime import environment, sigterm_requests_stop

    from ..records import claim

    if isinstance(prepared, SampleConfig):
        prepared = prepare(prepared)
    cfg, device, task, kinds = prepared
    if out_dir is not None:
        mode = claim(out_dir, dataclasses.asdict(cfg), resume=resume).mode
        if mode == "complete":
            raise MibenchError(f"{out_dir} holds this run, complete: nothing to resume")
        resume = mode == "resume"
    out = Path(out_dir) if out_dir is not None else None
    run_id = run_id or (out.resolve().name if out is not None else None)
    config = {"protocol": "sample", "status": "running", "run_id": run_id, "config": dataclasses.asdict(cfg),
              "task_info": task.info(), "environment": environment(device), "kinds": kinds,
              "schedule": {"levels_bits": cfg.levels, "description": f"sample protocol: n = {cfg.n} pairs per level "
                           f"and seed, seeds {','.join(map(str, cfg.seeds))}"},
              "started": now_iso(), **(extra or {})}
    rows: list[dict] = []
    if resume and out is not None:
        old = read_config(out)
        config["started"] = old.get("started", config["started"])
        config["resumed"] = list(old.get("resumed") or []) + [now_iso()]
        config["estimator_info"] = old.get("estimator_info") or {}
        if (out / "sample_estimates.csv").is_file():
            rows = [_as_written(r) for r in read_sample_estimates(out / "sample_estimates.csv")]
    done = {(r["estimator"], float(r["true_mi"]), int(r["seed"])) for r in rows}
    writer = RunWriter(out, config).start() if out is not None else None
    worker = EstimateWorker() if cfg.timeout is not None else None
    t0 = time.perf_counter()
    status, error = "failed", None
    total = len(cfg.levels) * len(cfg.seeds) * len(cfg.estimators)
    try:
        with sigterm_requests_stop(STOP):
            for level in cfg.levels:
                for seed in cfg.seeds:
                    todo = [name for name in cfg.estimators if (name, float(level), int(seed)) not in done]
                    if not todo:
                        continue
                    x, y = draw_dataset(task, cfg.n, level, seed)
                    for name in todo:
                        _check_stop()
                        job = (name, x, y, seed, cfg.critic, str(device), cfg.estimate_kwargs)
                        res = worker.run(job, cfg.timeout) if worker is not None else estimate_once(*job)
                        rows.append(_row(res, run_id, task.name, name, kinds, cfg, seed, level))
                        if res.get("info"):      # how the estimator ran (e.g. ksg's neighbour search)
                            config.setdefault("estimator_info", {}).setdefault(name, res["info"])
                        if progress:
                            r = rows[-1]
                            val = f"{r['estimate']:.3f} bits ({r['seconds']:.2f} s)" if r["status"] == "ok" else \
                                f"{r['status']}: {r['error']}"
                            print(f"[{len(rows)}/{total}] {name} · {level:g} bits · seed {seed}: {val}",
                                  file=sys.stderr, flush=True)
                        if out is not None:
                            write_sample_estimates(out / "sample_estimates.csv", rows)
                            writer.beat()
            _check_stop()
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except Exception as exc:
        error = one_line(exc)
        raise
    finally:
        if worker is not None:
            worker.stop(kill=status != "complete")
        if status != "complete" and writer is not None:
            writer.finish(status, error=error)
    summary = summarize(task.name, cfg.critic, rows, kinds, cfg.n)
    config.update(wall_seconds=round(time.perf_counter() - t0, 3),
                  failed_estimates=[_describe_failure(r) for r in rows if r["status"] != "ok"], finished=now_iso())
    result = SampleResult(config, rows, summary, out)
    if out is not None:
        write_sample_estimates(out / "sample_estimates.csv", rows)
        write_summary(out / "summary.csv", summary, SAMPLE_SUMMARY_EXTRA)
        if plot:
            from ..plots import plot_sample_run

            plot_sample_run(out / "estimates.png", rows, f"{task.name} · n = {cfg.n} · seeds {len(cfg.seeds)}")
        writer.finish("complete", files=("sample_estimates.csv", "summary.csv"))   # last: marks it complete
    return result


def _as_written(r: dict) -> dict:
    """A row read back from sample_estimates.csv in the types :func:`_row` gives (so a resumed run
    writes the kept rows exactly as they were)."""
    r = dict(r)
    r["n"] = int(float_or_nan(r.get("n")) if r.get("n") not in (None, "") else 0)
    r["mi_stderr"] = r["mi_stderr"] if math.isfinite(r["mi_stderr"]) else ""
    r["clipped"] = {"True": True, "False": False}.get(r.get("clipped"), r.get("clipped", ""))
    return r


def _check_stop() -> None:
    from ..errors import Terminated

    if STOP.requested:
        STOP.requested = False
        raise Terminated("SIGTERM")


def _row(res: dict, run_id, task: str, name: str, kinds: dict, cfg: SampleConfig, seed, level) -> dict:
    value = res.get("value_nats", float("nan"))
    return {"run_id": run_id, "task": task, "estimator": name, "kind": res.get("kind") or kinds[name],
            "critic": cfg.critic if kinds[name] == "critic" else "", "seed": seed, "n": cfg.n,
            "true_mi": float(level), "estimate": value / LN2 if value == value else value,
            "seconds": res.get("seconds", float("nan")), "n_parameters": int(res.get("n_parameters") or 0),
            "status": res.get("status"), "mi_status": res.get("mi_status", ""),
            "mi_stderr": bits_or_empty(res.get("mi_stderr_nats", float("nan"))),
            "clipped": res.get("clipped", ""), "error": res.get("error", "")}
