"""The sample-based protocol (issue 12; as in the BMI benchmark, Czyż et al. 2023 §3): at each
true-MI level and seed the task draws **one fixed dataset** of ``n`` pairs, every estimator returns
one number for it (plus wall-clock seconds), and bias / variance / MSE are taken **over seeds**.

* Datasets: ``task.sample(n, mi_bits, generator)`` with a generator seeded from
  ``derived_seed(seed, "sample", level)``, so every estimator of a run (and of any other run with
  the same task, n, seed and level) sees the same pairs; any task works (gaussian, vision, text,
  mixed, transformed, distributions, features:FILE.npz).
* Estimators: sample-based ones (``kind`` black-box / generative, :mod:`mibench.estimators.protocols`)
  are called as ``estimate(x, y, seed=seed)``; critic-bound ones go through
  ``mibench.estimate(x, y, estimator=NAME, critic=..., seed=SEED, units="nats")`` (trained on a split,
  held-out value).
* Isolation: with a ``timeout`` (default 600 s) every estimate runs in a spawned worker process
  that is killed when the estimate runs past it; an exception, a NaN / inf, a timeout or a crashed
  worker is recorded for that estimate (``status``) and the run carries on.  ``timeout=None`` runs
  in-process (no protection against hangs).
* Outputs (atomic writes): ``config.json`` (``"protocol": "sample"``), ``sample_estimates.csv``
  (one row per seed x level x estimator: seed, estimator, kind, true_mi, estimate, seconds,
  n_parameters, status, mi_status, mi_stderr, clipped, error; MI in bits), ``summary.csv`` (the
  streaming columns, ``steps`` = successful estimates, plus kind, n, failed, seconds, n_parameters,
  mi_status, mi_stderr; bits) and ``estimates.png``.

Two status columns: ``status`` is the outcome of the estimate as a computation (``ok``, ``error``,
``non_finite``, ``timeout``, ``crashed``: :data:`STATUSES`); ``mi_status`` is how far the estimator
itself trusts its number: for critic-bound estimators :class:`mibench.estimation.EstimateResult`'s
``status`` (``converged``, ``overfit``, ``still_increasing``, ``no_dependence_detected``,
``diverged``, ``train_only``), with ``mi_stderr`` its standard error (bits) and ``clipped`` whether
a negative held-out value was reported as 0; for black-box / generative estimators that return a
bare float, the object's ``status`` attribute if it sets one, else empty (as are ``mi_stderr`` and
``clipped``).  Files written before these columns existed (a ``flag`` column instead of
``mi_status``) load as before (:func:`read_sample_estimates`).  In ``summary.csv``, ``mi_status``
counts the statuses over the successful seeds (``converged:2;overfit:1``) and ``mi_stderr`` is
their mean standard error.

Summary metrics (bits): ``mean_estimate`` and ``bias`` over the successful seeds, ``variance`` the
population variance over them, ``mse`` = mean squared error = bias^2 + variance (as metrics.py).
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import MibenchError

LN2 = math.log(2.0)
DEFAULT_N = 10_000
DEFAULT_TIMEOUT = 600.0
ESTIMATE_COLUMNS = ["run_id", "task", "estimator", "kind", "critic", "seed", "n", "true_mi", "estimate", "seconds",
                    "n_parameters", "status", "mi_status", "mi_stderr", "clipped", "error"]
SUMMARY_EXTRA = ["kind", "n", "estimates", "failed", "seconds", "n_parameters", "mi_status", "mi_stderr"]
STATUSES = ("ok", "error", "non_finite", "timeout", "crashed")


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
        from .estimators import resolve_estimators
        from .schedule import parse_schedule

        levels = list(parse_schedule(self.mi, 10**9).levels)
        if str(self.mi).strip().lower() in ("stepwise", "staircase"):
            levels = list(levels)
        n = int(self.n)
        if n < 20:
            raise MibenchError(f"--n must be at least 20 pairs, got {self.n}")
        seeds = parse_seed_list(self.seeds)
        timeout = None if self.timeout in (None, 0, "none") else float(self.timeout)
        if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
            raise MibenchError(f"--timeout must be a positive number of seconds, got {self.timeout}")
        names = resolve_estimators(self.estimators)
        from .critics import CRITICS

        critic = CRITICS.get(self.critic).name
        return dataclasses.replace(self, task_params=dict(self.task_params), estimators=names, critic=critic,
                                   mi=levels if len(levels) > 1 else levels[0], n=n, seeds=seeds, timeout=timeout,
                                   estimate_kwargs=dict(self.estimate_kwargs or {}))

    @property
    def levels(self) -> list[float]:
        return [float(v) for v in (self.mi if isinstance(self.mi, (list, tuple)) else [self.mi])]


def parse_seed_list(v) -> list[int]:
    """``"0,1,2"`` / ``"0-4"`` / ``3`` / ``[0, 1]`` -> a list of distinct integer seeds."""
    items = v if isinstance(v, (list, tuple)) else str(v).split(",")
    out: list[int] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            if "-" in text[1:]:
                a, b = text.split("-", 1) if not text.startswith("-") else (text, text)
                rng = range(int(a), int(b) + 1)
            else:
                rng = [int(text)]
        except ValueError:
            raise MibenchError(f"--seeds must be integers, a comma list or a range a-b, got {v!r}") from None
        for s in rng:
            if s not in out:
                out.append(s)
    if not out:
        raise MibenchError("no seed given")
    return out


@dataclass
class SampleResult:
    config: dict
    rows: list          # per-estimate rows (ESTIMATE_COLUMNS)
    summary: list       # summary rows
    out_dir: Path | None = None


def dataset_seed(seed: int, level: float) -> int:
    from .seeding import derived_seed

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


# ------------------------------------------------------------------------- one estimate


def estimate_once(name: str, x: np.ndarray, y: np.ndarray, seed: int, critic: str, device: str,
                  estimate_kwargs: dict | None = None) -> dict:
    """Run estimator ``name`` on one dataset in this process; never raises (errors are recorded)."""
    from .estimators.protocols import CRITIC, kind_of
    from .estimators import ESTIMATORS

    out = {"value_nats": float("nan"), "seconds": float("nan"), "n_parameters": 0, "status": "error",
           "mi_status": "", "mi_stderr_nats": float("nan"), "clipped": "", "error": "", "kind": "", "info": ""}
    try:
        obj = ESTIMATORS.get(name).obj()
        kind = kind_of(obj)
        out["kind"] = kind
        t0 = time.perf_counter()
        if kind == CRITIC:
            from .estimation import estimate

            res = estimate(x, y, estimator=name, critic=critic, seed=int(seed), units="nats", device=device,
                           **(estimate_kwargs or {}))
            out["seconds"] = time.perf_counter() - t0
            value = float(getattr(res, "mi", res))
            out["mi_status"] = str(getattr(res, "status", "") or "")
            out["mi_stderr_nats"] = _float_or_nan(getattr(res, "mi_stderr", float("nan")))
            if hasattr(res, "clipped"):
                out["clipped"] = bool(res.clipped)
            out["n_parameters"] = int(getattr(res, "n_parameters", 0) or 0)
        else:
            raw = obj.estimate(x, y, seed=int(seed))
            out["seconds"] = time.perf_counter() - t0
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise MibenchError(f"estimate returned {type(raw).__name__}, not a number") from None
            out["n_parameters"] = int(getattr(obj, "n_parameters", 0) or 0)
            out["mi_status"] = str(getattr(obj, "status", "") or "")
            out["info"] = str(getattr(obj, "last_info", "") or "")
        out["value_nats"] = value
        if math.isfinite(value):
            out["status"] = "ok"
        else:
            out["status"] = "non_finite"
            out["error"] = f"estimate is {value}"
    except BaseException as exc:  # recorded, the run carries on (KeyboardInterrupt re-raised)
        if isinstance(exc, KeyboardInterrupt):
            raise
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        out["error"] = f"{type(exc).__name__}: {msg}".rstrip(": ")[:500]
        out["status"] = "error"
        out["traceback"] = traceback.format_exc()
    return out


def _float_or_nan(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _bits_or_empty(nats):
    """A standard error in nats -> bits for the CSV; empty when there is none."""
    v = _float_or_nan(nats)
    return v / LN2 if math.isfinite(v) else ""


def read_sample_estimates(path) -> list[dict]:
    """``sample_estimates.csv`` rows as dicts with ``true_mi`` / ``estimate`` / ``mi_stderr`` as
    floats (NaN when empty) and ``mi_status`` / ``clipped`` present (empty) in files written
    before those columns existed (whose ``flag`` column is read as ``mi_status``)."""
    import csv

    rows = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if "mi_status" not in r:
                r["mi_status"] = r.pop("flag", "") or ""
            r.setdefault("clipped", "")
            r["true_mi"] = float(r["true_mi"])
            r["estimate"] = _float_or_nan(r.get("estimate") or "nan")
            r["mi_stderr"] = _float_or_nan(r.get("mi_stderr") or "nan")
            rows.append(r)
    return rows


def _worker_main(conn, registrations: bytes | None, sys_path: list, parent_pid: int | None = None,
                 threads: int | None = None) -> None:
    """A spawned estimate worker: receives jobs, answers with :func:`estimate_once` results; exits
    when its parent dies (never an orphan computing for nobody)."""
    if parent_pid is not None:
        import threading

        def watch():
            while True:
                time.sleep(1.0)
                if os.getppid() != parent_pid:
                    os._exit(1)

        threading.Thread(target=watch, daemon=True, name="mibench-parent-watch").start()
    for p in sys_path:
        if p not in sys.path:
            sys.path.append(p)
    if threads:      # the parent's torch threads (a sweep cell's share of the cores)
        import torch

        torch.set_num_threads(int(threads))
    try:
        if registrations:
            import cloudpickle

            from . import plugins

            plugins.install_registrations(cloudpickle.loads(registrations))
        conn.send(("ready", None))
    except BaseException as exc:  # pragma: no cover - reported to the parent
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        conn.send(("done", estimate_once(*job)))


class EstimateWorker:
    """A killable worker process (spawn) for estimates with a timeout; restarted after a kill."""

    def __init__(self):
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        import multiprocessing as mp

        from . import plugins

        regs = plugins.registrations()
        payload = None
        if regs:
            import cloudpickle

            payload = cloudpickle.dumps(regs)
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        threads = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None
        self.proc = ctx.Process(target=_worker_main, args=(child, payload, list(sys.path), os.getpid(), threads),
                                daemon=True, name="mibench-estimate-worker")
        me = mp.current_process()
        daemonic = me.daemon     # a Dask / pool worker is daemonic; multiprocessing refuses its children,
        if daemonic:             # but this child is killed by us and exits when we die (_worker_main)
            me._config["daemon"] = False
        # a script read from stdin (``python - < f.py``) has __main__.__file__ = "<stdin>", which spawn
        # would try to re-run in the child and fail; the worker needs nothing from __main__ (registered
        # estimators travel with cloudpickle), so hide a __file__ that is not a file, as for a REPL
        main = sys.modules.get("__main__")
        main_file = getattr(main, "__file__", None)
        hide = isinstance(main_file, str) and getattr(main, "__spec__", None) is None and not os.path.isfile(main_file)
        if hide:
            del main.__file__
        try:
            self.proc.start()
        except BaseException:
            self.proc = None
            raise
        finally:
            if daemonic:
                me._config["daemon"] = True
            if hide:
                main.__file__ = main_file
        child.close()
        self.conn = parent
        if not parent.poll(120):
            self.stop(kill=True)
            raise MibenchError("the estimate worker process did not start within 120 s")
        try:
            kind, msg = parent.recv()
        except (EOFError, OSError):
            code = self.proc.exitcode if self.proc is not None else None
            self.stop(kill=True)
            raise MibenchError(f"the estimate worker process exited before it started (exit code {code}); "
                               "run with timeout=None (--timeout 0) to estimate in this process") from None
        if kind != "ready":
            self.stop(kill=True)
            raise MibenchError(f"the estimate worker failed to start: {msg}")

    def run(self, job: tuple, timeout: float) -> dict:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        try:
            self.conn.send(job)
            if self.conn.poll(timeout):
                kind, res = self.conn.recv()
                return res
            self.stop(kill=True)
            return {"status": "timeout", "error": f"no estimate within --timeout {timeout:g} s (worker killed)",
                    "value_nats": float("nan"), "seconds": float(timeout), "n_parameters": 0, "kind": ""}
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError) as exc:
            code = self.proc.exitcode if self.proc is not None else None
            self.stop(kill=True)
            return {"status": "crashed", "error": f"estimate worker died ({type(exc).__name__}, exit code {code})",
                    "value_nats": float("nan"), "seconds": float("nan"), "n_parameters": 0, "kind": ""}

    def stop(self, kill: bool = False) -> None:
        if self.proc is None or self.proc.pid is None:
            self.proc = None
            return
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()
        self.proc = self.conn = None


# ------------------------------------------------------------------------------ the run


def prepare(cfg: SampleConfig):
    """Validate names, sizes and MI levels against the task; build the task (one-line errors)."""
    from .device import resolve_device
    from .tasks import make_task
    from .tasks.base import check_mi_request

    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    task = make_task(cfg.task, device=device, **cfg.task_params)
    for level in cfg.levels:
        check_mi_request(task.name, level, task.max_mi_bits)
    from .estimators.protocols import estimator_kind

    kinds = {name: estimator_kind(name) for name in cfg.estimators}
    return cfg, device, task, kinds


def summarize(task: str, critic: str, rows: list[dict], kinds: dict, n: int) -> list[dict]:
    """Summary rows (bits) per estimator and level over the successful seeds."""
    from .metrics import SUMMARY_COLUMNS  # noqa: F401  (same leading columns)

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
        ses = np.array([_float_or_nan(r.get("mi_stderr")) for r in group if r["status"] == "ok"], dtype=float)
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


def status_counts(statuses) -> str:
    """``["converged", "overfit", "converged"]`` -> ``"converged:2;overfit:1"`` (empty ones left out)."""
    from collections import Counter

    return ";".join(f"{k}:{v}" for k, v in Counter(s for s in statuses if s).items())


def run_sample(cfg: SampleConfig, out_dir=None, progress: bool = False, plot: bool = True, prepared=None,
               run_id: str | None = None, extra: dict | None = None) -> SampleResult:
    """Run the sample protocol; with ``out_dir`` write the run directory (module docstring)."""
    from . import results
    from .harness import environment
    from .metrics import SUMMARY_COLUMNS

    cfg, device, task, kinds = prepared or prepare(cfg)
    out = Path(out_dir) if out_dir is not None else None
    run_id = run_id or (out.resolve().name if out is not None else None)
    config = {"status": "running", "protocol": "sample", "run_id": run_id, "config": dataclasses.asdict(cfg),
              "task_info": task.info(), "environment": environment(device), "kinds": kinds,
              "schedule": {"levels_bits": cfg.levels, "description": f"sample protocol: n = {cfg.n} pairs per level "
                           f"and seed, seeds {','.join(map(str, cfg.seeds))}"},
              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **(extra or {})}
    if out is not None:
        results.write_json(out / "config.json", config)
    worker = EstimateWorker() if cfg.timeout is not None else None
    rows: list[dict] = []
    t0 = time.perf_counter()
    status = "failed"
    try:
        total = len(cfg.levels) * len(cfg.seeds) * len(cfg.estimators)
        done = 0
        for level in cfg.levels:
            for seed in cfg.seeds:
                x, y = draw_dataset(task, cfg.n, level, seed)
                for name in cfg.estimators:
                    job = (name, x, y, seed, cfg.critic, str(device), cfg.estimate_kwargs)
                    res = worker.run(job, cfg.timeout) if worker is not None else estimate_once(*job)
                    value = res.get("value_nats", float("nan"))
                    rows.append({"run_id": run_id, "task": task.name, "estimator": name,
                                 "kind": res.get("kind") or kinds[name],
                                 "critic": cfg.critic if kinds[name] == "critic" else "", "seed": seed, "n": cfg.n,
                                 "true_mi": float(level), "estimate": value / LN2 if value == value else value,
                                 "seconds": res.get("seconds", float("nan")),
                                 "n_parameters": int(res.get("n_parameters") or 0), "status": res.get("status"),
                                 "mi_status": res.get("mi_status", ""),
                                 "mi_stderr": _bits_or_empty(res.get("mi_stderr_nats", float("nan"))),
                                 "clipped": res.get("clipped", ""), "error": res.get("error", "")})
                    if res.get("info"):      # how the estimator ran (e.g. ksg's neighbour search)
                        config.setdefault("estimator_info", {}).setdefault(name, res["info"])
                    done += 1
                    if progress:
                        r = rows[-1]
                        val = f"{r['estimate']:.3f}" if r["status"] == "ok" else r["status"]
                        print(f"[{done}/{total}] {name} · {level:g} bits · seed {seed}: {val} ({r['seconds']:.2f} s)",
                              file=sys.stderr, flush=True)
                    if out is not None:
                        results.write_rows(out / "sample_estimates.csv", rows, ESTIMATE_COLUMNS)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        if worker is not None:
            worker.stop(kill=status != "complete")
        if status != "complete" and out is not None:
            config["status"] = status
            results.write_json(out / "config.json", config)
    summary = summarize(task.name, cfg.critic, rows, kinds, cfg.n)
    failures = [f"{r['estimator']} at {r['true_mi']:g} bits, seed {r['seed']}: {r['status']}"
                + (f" ({r['error']})" if r["error"] else "") for r in rows if r["status"] != "ok"]
    config.update(status="complete", wall_seconds=round(time.perf_counter() - t0, 3), failed_estimates=failures,
                  finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    result = SampleResult(config, rows, summary, out)
    if out is not None:
        results.write_rows(out / "sample_estimates.csv", rows, ESTIMATE_COLUMNS)
        results.write_rows(out / "summary.csv", summary, SUMMARY_COLUMNS + SUMMARY_EXTRA)
        if plot:
            plot_sample_run(out / "estimates.png", rows, f"{task.name} · n = {cfg.n} · seeds {len(cfg.seeds)}")
        results.write_json(out / "config.json", config)   # last: marks the directory complete
    return result


def is_sample_run(cfg: dict) -> bool:
    return (cfg or {}).get("protocol") == "sample" or (cfg or {}).get("config", {}).get("protocol") == "sample"


def plot_sample_run(path, rows: list[dict], title: str = "") -> None:
    """Estimate (bits) against the true MI: one marker per seed, the mean per level joined."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from . import results

    fig = Figure(figsize=(6.4, 4.4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    try:
        from .plots import estimator_color
    except ImportError:  # pragma: no cover
        estimator_color = None
    names = list(dict.fromkeys(r["estimator"] for r in rows))
    levels = sorted({r["true_mi"] for r in rows})
    if levels:
        lo, hi = 0.0, max(levels) * 1.15 + 0.5
        ax.plot([lo, hi], [lo, hi], color="black", lw=1, ls="--", label="true MI")
    for name in names:
        color = estimator_color(name) if estimator_color else None
        pts = [(r["true_mi"], r["estimate"]) for r in rows if r["estimator"] == name and r["status"] == "ok"]
        if pts:
            a = np.array(pts)
            ax.scatter(a[:, 0], a[:, 1], s=14, alpha=0.6, color=color)
            means = [(lv, a[a[:, 0] == lv, 1].mean()) for lv in levels if (a[:, 0] == lv).any()]
            m = np.array(means)
            ax.plot(m[:, 0], m[:, 1], marker="o", color=color, label=name)
        fails = sum(1 for r in rows if r["estimator"] == name and r["status"] != "ok")
        if fails and not pts:
            ax.plot([], [], color=color, label=f"{name} (all {fails} failed)")
    ax.set_xlabel("true MI (bits)")
    ax.set_ylabel("estimate (bits)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    with results.atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, dpi=110, format="png")


def format_sample_summary(result: SampleResult) -> str:
    info = result.config["task_info"]
    cfg = result.config["config"]
    lines = [f"task {info.get('task')}: ds={info.get('ds')} dr={info.get('dr')} · sample protocol, n = {cfg['n']}, "
             f"seeds {','.join(map(str, cfg['seeds']))} · device {result.config['environment']['device']}"]
    header = (f"{'estimator':<16}{'kind':>11}{'true':>6}{'mean':>8}{'bias':>8}{'var':>8}{'mse':>8}{'ok':>4}"
              f"{'s/est':>8}{'params':>9}  status")
    lines += [header, "-" * len(header)]
    for r in result.summary:
        lines.append(f"{r['estimator'][:16]:<16}{r['kind']:>11}{r['true_mi']:>6g} {r['mean_estimate']:>7.3f}"
                     f" {r['bias']:>7.3f} {r['variance']:>7.3f} {r['mse']:>7.3f}{r['steps']:>4d} {r['seconds']:>7.2f}"
                     f" {r['n_parameters']:>8d}" + (f"  {r['mi_status']}" if r.get("mi_status") else ""))
    for name, info in (result.config.get("estimator_info") or {}).items():
        lines.append(f"  {name}: {info}")
    for note in result.config.get("failed_estimates", []):
        lines.append(f"! failed: {note}")
    return "\n".join(lines)


def plot_sample_figures(run_dir, out_dir=None) -> list[Path]:
    """``mibench plot`` on a sample run: ``estimates.png`` (estimate vs true MI per seed) and, when
    complete, ``metrics.png`` (bias / variance / MSE bars over seeds, as for streaming runs)."""
    from .results import is_complete, read_config

    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir else run_dir
    rows = read_sample_estimates(run_dir / "sample_estimates.csv")
    if not rows:
        raise MibenchError(f"{run_dir} has logged no estimates")
    cfg = read_config(run_dir)
    c = cfg.get("config", {})
    title = f"{c.get('task')} · sample protocol n = {c.get('n')} · seeds {len(c.get('seeds') or [])}"
    if cfg.get("status") != "complete":
        title += f" · {cfg.get('status')}"
    out.mkdir(parents=True, exist_ok=True)
    plot_sample_run(out / "estimates.png", rows, title)
    written = [out / "estimates.png"]
    if is_complete(run_dir):
        from .leaderboard import collect, per_seed_rows
        from .plots import plot_metric_bars

        col = collect([run_dir])
        plot_metric_bars(per_seed_rows(col.runs), out / "metrics.png", title=f"{c.get('task')} · sample protocol")
        written.append(out / "metrics.png")
    return written
