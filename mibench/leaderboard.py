"""Leaderboard (aggregation over seeds), its Markdown twin, and the regression gate (``compare``).

Input: run directories or anything containing them (sweep directories, ``results/``); every
directory below the given paths whose ``config.json`` says ``complete`` is used, others are
counted and skipped.  Each run contributes its ``summary.csv`` rows (per estimator and true-MI
level) as **one sample per seed**.

Leaderboard columns (``leaderboard.csv``; one row per setup x estimator x true-MI level)
-----------------------------------------------------------------------------------------
========================  ===================================================================
task, task_params         task name; its parameters that differ from the task's defaults
                          (``k=v;k=v``, ``data_dir`` left out)
ds, dr                    number of information sources, representation dimension (task info)
critic, layers, hidden,   critic type, depth (hidden layers), width, separable embedding size
embed
batch_size, lr, steps     training protocol
schedule, burn_in         MI schedule as given (``stepwise``, ``2``, ``2,4,6``) and the
                          per-level burn-in excluded from the metrics
estimator                 estimator name
rank                      rank of the estimator among the estimators of the same setup (all
                          columns above except estimator), by ``rank_score``; 1 = best; ties
                          share the lower rank
rank_score                MSE averaged over the setup's true-MI levels (bits^2); an estimator with
                          no finite estimate at some level scores +inf (ranked last)
true_mi                   the true-MI level (bits)
n_seeds, seeds            number of seeds aggregated and their list (``0;1;2``)
mean_estimate             mean estimate over the level's steps, averaged over seeds (bits)
bias, variance, mse       per-seed bias (bits), variance over steps (bits^2) and MSE (bits^2) of
                          the level window (see :mod:`mibench.metrics`), averaged over seeds
*_ci95                    half-width of the 95% confidence interval of that mean across seeds,
                          Student t with n_seeds - 1 degrees of freedom; empty when n_seeds = 1
abs_bias                  |bias| of the seed-mean (bits)
diverged_seeds            seeds in which the estimator diverged (non-finite estimate) at or
                          before the end of this level's window; sample protocol: failed
                          estimates (exception, NaN / inf, timeout)
protocol, n               ``stream`` (n = 0) or ``sample`` (issue 12): one fixed dataset of n pairs
                          per level and seed; bias / MSE over the seeds' single estimates and
                          ``variance`` the variance over seeds (bits^2); layers ... lr, steps are 0
                          for the sample protocol (mibench.estimate's data-sized defaults) unless set
kind                      critic | black-box | generative
seconds, n_parameters     sample protocol: mean wall-clock seconds per estimate, trainable parameters
mi_status, mi_stderr      sample protocol: the estimators' own statuses counted over the seeds'
                          successful estimates (``converged:2;overfit:1``; critic-bound estimators
                          via mibench.estimate, empty for bare-float estimators) and the mean of
                          their standard errors (bits; empty when none reported)
========================  ===================================================================

Rows are ordered by the setup columns (task, task_params, critic, layers, hidden, embed,
batch_size, lr, steps, schedule, burn_in), then rank, estimator and true_mi.

Regression gate
---------------
``compare(new, baseline)`` matches rows on (setup, estimator, true_mi) and flags:

* ``missing``: a baseline row has no counterpart in NEW;
* ``diverged``: NEW has more diverged seeds than the baseline (or a NaN MSE where the baseline
  had a number);
* ``mse``: ``new.mse > base.mse * (1 + tolerance) + mse_floor``;
* ``bias``: ``new.abs_bias > base.abs_bias * (1 + tolerance) + bias_floor``.

Defaults: ``tolerance = 0.25`` (relative), ``mse_floor = 0.05`` bits^2, ``bias_floor = 0.1`` bits;
the floors keep tiny baselines (e.g. 0.001 bits^2) from failing on noise.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import MibenchError

SETUP_COLUMNS = ["task", "task_params", "ds", "dr", "critic", "layers", "hidden", "embed", "batch_size", "lr",
                 "steps", "schedule", "burn_in", "precision", "protocol", "n"]
#: the setup key (ds / dr follow from task + task_params, so they are not part of it)
SETUP_KEY = ["task", "task_params", "critic", "layers", "hidden", "embed", "batch_size", "lr", "steps", "schedule",
             "burn_in", "precision", "protocol", "n"]
ROW_KEY = SETUP_KEY + ["estimator", "true_mi"]
METRICS = ["mean_estimate", "bias", "variance", "mse"]
COLUMNS = (SETUP_COLUMNS + ["estimator", "rank", "rank_score", "true_mi", "n_seeds", "seeds"]
           + [c for m in METRICS for c in (m, f"{m}_ci95")] + ["abs_bias", "diverged_seeds"]
           + ["kind", "seconds", "n_parameters", "mi_status", "mi_stderr"])
IGNORED_PARAMS = {"data_dir"}


# ------------------------------------------------------------------------------- collecting


@dataclass
class RunRecord:
    path: Path
    config: dict        # the whole config.json
    summary: list       # summary.csv rows (dicts, numbers parsed)


@dataclass
class Collection:
    runs: list
    incomplete: list = field(default_factory=list)
    duplicates: list = field(default_factory=list)
    manifests: dict = field(default_factory=dict)   # sweep dir -> sweep.json


def find_run_dirs(paths) -> tuple[list[Path], list[Path], dict]:
    """(complete run dirs, incomplete run dirs, {sweep dir: manifest}) below ``paths``, sorted."""
    from .results import is_complete

    complete, incomplete, manifests = [], [], {}
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise MibenchError(f"no such run or sweep directory: {p}")
        if p.is_file():
            raise MibenchError(f"{p} is a file; give run directories or sweep directories")
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            root = Path(root)
            if "sweep.json" in files:
                try:
                    manifests[root] = json.loads((root / "sweep.json").read_text())
                except json.JSONDecodeError:
                    pass
            if "config.json" in files:
                (complete if is_complete(root) else incomplete).append(root)
                dirs[:] = []     # a run directory has no run directories inside
    return sorted(set(complete)), sorted(set(incomplete)), manifests


def collect(paths) -> Collection:
    import csv

    from .results import read_config

    complete, incomplete, manifests = find_run_dirs(paths)
    runs, seen, dups = [], {}, []
    for d in complete:
        cfg = read_config(d)
        with open(d / "summary.csv", newline="") as fh:
            rows = [_parse_row(r) for r in csv.DictReader(fh)]
        key = (_setup_json(cfg), cfg["config"].get("seed"), tuple(cfg["config"].get("estimators", [])))
        if key in seen:            # same setup and seed twice (overlapping inputs): keep the first
            dups.append((d, seen[key]))
            continue
        seen[key] = d
        runs.append(RunRecord(d, cfg, rows))
    return Collection(runs, incomplete, dups, manifests)


def _parse_row(r: dict) -> dict:
    out = dict(r)
    for k in ("true_mi", "mean_estimate", "bias", "variance", "mse"):
        out[k] = float(r[k]) if r.get(k) not in (None, "") else float("nan")
    out["steps"] = int(float(r.get("steps") or 0))
    return out


def canonical_params(task: str, params: dict) -> str:
    """Parameters that differ from the task factory's defaults, as ``k=v;k=v`` (sorted)."""
    import inspect

    defaults = {}
    try:
        from .tasks import TASKS

        sig = inspect.signature(TASKS.get(task).obj)
        defaults = {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    except Exception:   # an unknown (third-party) task: keep everything
        pass
    items = []
    for k in sorted(params):
        v = params[k]
        if k in IGNORED_PARAMS or (k in defaults and _same(defaults[k], v)):
            continue
        items.append(f"{k}={_fmt_param(v)}")
    return ";".join(items)


def _same(a, b) -> bool:
    try:
        return a == b or (a is not None and b is not None and float(a) == float(b))
    except (TypeError, ValueError):
        return False


def _fmt_param(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v).lower() if isinstance(v, bool) else str(v)


def _schedule(mi) -> str:
    if isinstance(mi, float):
        return f"{mi:g}"
    if isinstance(mi, (list, tuple)):
        return ",".join(f"{float(v):g}" for v in mi)
    return str(mi).replace(" ", "")


def setup_of(cfg: dict) -> dict:
    c = cfg["config"]
    info = cfg.get("task_info", {})
    if c.get("protocol") == "sample":    # issue 12: mibench.sample_protocol
        kw = c.get("estimate_kwargs") or {}
        return {"task": c["task"], "task_params": canonical_params(c["task"], c.get("task_params") or {}),
                "ds": info.get("ds"), "dr": info.get("dr"), "critic": c["critic"],
                **{k: int(kw.get(k) or 0) for k in ("layers", "hidden", "embed", "batch_size", "steps")},
                "lr": float(kw.get("lr") or 0.0), "schedule": _schedule(c["mi"]), "burn_in": 0, "precision": "fp32",
                "protocol": "sample", "n": int(c["n"])}
    return {"task": c["task"], "task_params": canonical_params(c["task"], c.get("task_params") or {}),
            "ds": info.get("ds"), "dr": info.get("dr"), "critic": c["critic"], "layers": int(c["layers"]),
            "hidden": int(c["hidden"]), "embed": int(c["embed"]), "batch_size": int(c["batch_size"]),
            "lr": float(c["lr"]), "steps": int(c["steps"]), "schedule": _schedule(c["mi"]),
            "burn_in": int(c.get("burn_in") or 0), "precision": c.get("precision") or "fp32",
            "protocol": "stream", "n": 0}


def _setup_json(cfg: dict) -> str:
    s = setup_of(cfg)
    return json.dumps([s[k] for k in SETUP_KEY])


# ------------------------------------------------------------------------------ aggregation


def t_halfwidth(values, confidence: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of the mean (NaN for fewer than 2 values)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if v.size < 2:
        return float("nan")
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def t_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """(low, high) of the t interval of the mean; used as seaborn's ``errorbar`` callable."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    m = float(v.mean())
    h = t_halfwidth(v, confidence)
    return (m, m) if not np.isfinite(h) else (m - h, m + h)


def per_seed_rows(runs: list[RunRecord]) -> list[dict]:
    """One row per run x estimator x level (the samples the leaderboard aggregates); repeated
    segments of the same level within one run are pooled (averaged) first."""
    out = []
    for r in runs:
        setup = setup_of(r.config)
        if setup["protocol"] == "sample":
            out += _sample_seed_rows(r, setup)
            continue
        seed = r.config["config"].get("seed")
        diverged = r.config.get("diverged") or {}
        ends = _level_ends(r.config)
        pooled: dict = {}
        for row in r.summary:
            pooled.setdefault((row["estimator"], row["true_mi"]), []).append(row)
        for (est, level), rows in pooled.items():
            vals = {m: float(np.nanmean([x[m] for x in rows])) if any(np.isfinite(x[m]) for x in rows) else float("nan")
                    for m in METRICS}
            div_step = diverged.get(est)
            div = div_step is not None and div_step < ends.get(level, float("inf"))
            out.append({**setup, "estimator": est, "true_mi": float(level), "seed": seed, **vals,
                        "diverged": bool(div), "run_dir": str(r.path)})
    return out


def _sample_seed_rows(r: RunRecord, setup: dict) -> list[dict]:
    """Sample protocol: one row per estimator x level x seed from sample_estimates.csv (the single
    estimate of that seed's dataset; a failed estimate is NaN and counted in diverged_seeds)."""
    from .sample_protocol import read_sample_estimates

    out = []
    for e in read_sample_estimates(Path(r.path) / "sample_estimates.csv"):
        level = e["true_mi"]                 # read_sample_estimates returns the numbers as floats
        ok = e["status"] == "ok"
        est = e["estimate"] if ok else float("nan")
        out.append({**setup, "estimator": e["estimator"], "true_mi": level, "seed": int(e["seed"]),
                    "mean_estimate": est, "bias": est - level, "variance": float("nan"),
                    "mse": (est - level) ** 2, "diverged": not ok, "run_dir": str(r.path), "kind": e["kind"],
                    "seconds": float(e["seconds"]) if ok and e["seconds"] not in ("", None) else float("nan"),
                    "n_parameters": int(float(e["n_parameters"] or 0)),
                    "mi_status": e["mi_status"] if ok else "", "mi_stderr": e["mi_stderr"] if ok else float("nan")})
    # per-seed squared deviation from the seeds' mean: its mean over seeds is the variance over seeds
    groups: dict = {}
    for row in out:
        groups.setdefault((row["estimator"], row["true_mi"]), []).append(row)
    for rows in groups.values():
        vals = np.array([x["mean_estimate"] for x in rows], dtype=float)
        mean = float(vals[np.isfinite(vals)].mean()) if np.isfinite(vals).any() else float("nan")
        for x in rows:
            x["variance"] = (x["mean_estimate"] - mean) ** 2
    return out


def _level_ends(cfg: dict) -> dict:
    sched = cfg.get("schedule") or {}
    levels, bounds = sched.get("levels_bits") or [], sched.get("boundaries") or []
    ends: dict = {}
    for i, lv in enumerate(levels):
        if i + 1 < len(bounds):
            ends[float(lv)] = max(ends.get(float(lv), 0), bounds[i + 1])
    return ends


def aggregate(runs: list[RunRecord]):
    """The leaderboard as a pandas DataFrame with :data:`COLUMNS` (see the module docstring)."""
    import pandas as pd

    samples = per_seed_rows(runs)
    if not samples:
        return pd.DataFrame(columns=COLUMNS)
    df = pd.DataFrame(samples)
    rows = []
    for key, g in df.groupby(ROW_KEY, sort=False, dropna=False):
        first = g.iloc[0]
        row = {k: first[k] for k in SETUP_COLUMNS + ["estimator", "true_mi"]}
        seeds = sorted(g["seed"].tolist(), key=lambda s: (str(type(s)), s))
        row["n_seeds"] = len(g)
        row["seeds"] = ";".join(str(s) for s in seeds)
        for m in METRICS:
            vals = g[m].to_numpy(dtype=float)
            row[m] = float(np.nanmean(vals)) if np.isfinite(vals).any() else float("nan")
            row[f"{m}_ci95"] = t_halfwidth(vals)
        sample = first["protocol"] == "sample"
        if sample:   # one estimate per seed: the variance is over seeds (population, mse = bias^2 + var)
            est = g["mean_estimate"].to_numpy(dtype=float)
            est = est[np.isfinite(est)]
            row["variance"] = float(est.var()) if est.size else float("nan")
            row["variance_ci95"] = float("nan")
        row["abs_bias"] = abs(row["bias"]) if np.isfinite(row["bias"]) else float("nan")
        row["diverged_seeds"] = int(g["diverged"].sum())
        row["kind"] = (first.get("kind") if sample else None) or "critic"
        secs = g["seconds"].to_numpy(dtype=float) if sample else np.array([])
        row["seconds"] = float(np.nanmean(secs)) if np.isfinite(secs).any() else float("nan")
        row["n_parameters"] = int(g["n_parameters"].max()) if sample else None
        if sample:
            from .sample_protocol import status_counts

            ses = g["mi_stderr"].to_numpy(dtype=float)
            row["mi_status"] = status_counts(g["mi_status"].fillna("").astype(str).tolist())
            row["mi_stderr"] = float(np.nanmean(ses)) if np.isfinite(ses).any() else float("nan")
        else:
            row["mi_status"], row["mi_stderr"] = "", float("nan")
        rows.append(row)
    board = pd.DataFrame(rows)
    # rank within a setup by MSE averaged over levels
    board["rank_score"] = np.inf
    board["rank"] = 0
    for _, g in board.groupby(SETUP_KEY, sort=False, dropna=False):
        score = g.groupby("estimator")["mse"].apply(lambda s: float(s.mean()) if s.notna().all() else float("inf"))
        ranks = score.rank(method="min").astype(int)
        board.loc[g.index, "rank_score"] = g["estimator"].map(score).to_numpy()
        board.loc[g.index, "rank"] = g["estimator"].map(ranks).to_numpy()
    board = board.sort_values(SETUP_KEY + ["rank", "estimator", "true_mi"], kind="mergesort").reset_index(drop=True)
    return board[COLUMNS]


def build(paths):
    """(leaderboard DataFrame, Collection) for run / sweep directories."""
    col = collect(paths)
    if not col.runs:
        extra = f" ({len(col.incomplete)} incomplete)" if col.incomplete else ""
        raise MibenchError(f"no complete run directories found under {', '.join(map(str, paths))}{extra}")
    return aggregate(col.runs), col


# ---------------------------------------------------------------------------------- writing


def write_csv(board, path) -> Path:
    from .results import write_text

    path = Path(path)
    write_text(path, board.to_csv(index=False, lineterminator="\n", float_format=_float_fmt, na_rep=""))
    return path


def _float_fmt(v) -> str:  # pandas passes floats one by one when float_format is callable
    return f"{v:.6g}"


def provenance(col: Collection, board, command: str | None = None) -> dict:
    """What the leaderboard was built from: steps, seeds, devices, versions, presets, commands."""
    from . import __version__

    envs = [r.config.get("environment", {}) for r in col.runs]
    sources = sorted({str(r.config.get("task_info", {}).get("data_source")) for r in col.runs
                      if r.config.get("task_info", {}).get("data_source")})
    sweeps = []
    for d, m in sorted(col.manifests.items()):
        walls = [i["wall_seconds"] for i in m.get("invocations", []) if i.get("wall_seconds") is not None]
        sweeps.append({"dir": str(d), "name": m.get("name"), "preset": m.get("preset"),
                       "command": m.get("command"), "status": m.get("status"), "counts": m.get("counts"),
                       "cells": len(m.get("cells", [])), "backend": m.get("backend"), "workers": m.get("workers"),
                       "threads_per_worker": m.get("threads_per_worker"),
                       "wall_seconds": round(sum(walls), 1) if walls else None,
                       "description": (m.get("spec") or {}).get("description")})
    walls = [r.config.get("wall_seconds") for r in col.runs if r.config.get("wall_seconds") is not None]
    return {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "mibench": __version__,
        "command": command,
        "runs": len(col.runs),
        "incomplete_runs_skipped": [str(p) for p in col.incomplete],
        "duplicate_runs_skipped": [str(a) for a, _ in col.duplicates],
        "tasks": sorted(board["task"].unique().tolist()),
        "estimators": sorted(board["estimator"].unique().tolist()),
        "steps": sorted({int(r.config["config"]["steps"]) for r in col.runs if "steps" in r.config["config"]}),
        "seeds": sorted({s for r in col.runs for s in (r.config["config"].get("seeds") or [r.config["config"].get("seed")])}),
        "sample_protocol_n": sorted({int(r.config["config"]["n"]) for r in col.runs
                                     if r.config["config"].get("protocol") == "sample"}),
        "schedules": sorted({_schedule(r.config["config"]["mi"]) for r in col.runs}),
        "devices": sorted({f"{e.get('device')} ({e.get('device_name')})" for e in envs}),
        "torch": sorted({str(e.get("torch")) for e in envs}),
        "torch_threads": sorted({e.get("torch_threads") for e in envs if e.get("torch_threads") is not None}),
        "data_sources": sources,
        "train_wall_seconds_total": round(float(sum(walls)), 1),
        "sweeps": sweeps,
    }


def write_markdown(board, path, meta: dict | None = None, title: str = "MI estimator leaderboard") -> Path:
    from .results import write_text

    write_text(Path(path), to_markdown(board, meta, title))
    return Path(path)


def _num(v, digits=3) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "inf" if isinstance(v, float) and np.isinf(v) else "–"
    return f"{v:.{digits}f}"


def _pm(v, ci) -> str:
    s = _num(v)
    if ci is not None and isinstance(ci, float) and np.isfinite(ci):
        s += f" ± {ci:.3f}"
    return s


def to_markdown(board, meta: dict | None = None, title: str = "MI estimator leaderboard") -> str:
    lines = [f"# {title}", ""]
    if meta:
        lines.append(f"Generated {meta.get('generated')} by mibench {meta.get('mibench')} from {meta.get('runs')} runs.")
        lines.append("")
        for sw in meta.get("sweeps", []):
            if sw.get("command") or sw.get("preset"):
                how = f"{sw.get('cells')} cells, {sw.get('backend')} backend"
                if sw.get("workers"):
                    how += f", {sw['workers']} workers x {sw.get('threads_per_worker')} threads"
                if sw.get("wall_seconds"):
                    how += f", {sw['wall_seconds']:.0f} s wall"
                lines.append(f"- sweep `{sw.get('name')}`" + (f" (preset `{sw['preset']}`)" if sw.get("preset") else "")
                             + (f": `{sw['command']}`" if sw.get("command") else "") + f" ({how})")
                if sw.get("description"):
                    lines.append(f"  - {sw['description']}")
        for label, key in (("steps", "steps"), ("sample protocol: pairs per dataset", "sample_protocol_n"),
                           ("seeds", "seeds"), ("MI schedule (bits)", "schedules"),
                           ("device", "devices"), ("torch", "torch"), ("torch threads per run", "torch_threads"),
                           ("data", "data_sources")):
            vals = meta.get(key)
            if vals:
                lines.append(f"- {label}: " + ", ".join(map(str, vals)))
        if meta.get("command"):
            lines.append(f"- leaderboard command: `{meta['command']}`")
        if meta.get("train_wall_seconds_total"):
            lines.append(f"- total training time (sum over runs): {meta['train_wall_seconds_total']:.0f} s")
        lines.append("")
    lines += ["Bias in bits, variance and MSE in bits²; each value is the mean over seeds ± the half-width of its "
              "95% Student-t confidence interval. Rank: by MSE averaged over the true-MI levels, within each "
              "setup (1 = best). Column definitions: `mibench.leaderboard`.", ""]
    if board.empty:
        return "\n".join(lines + ["(no runs)", ""])
    for _, g in board.groupby(SETUP_KEY, sort=False, dropna=False):
        f = g.iloc[0]
        params = f" ({f['task_params'].replace(';', ', ')})" if f["task_params"] else ""
        if f.get("protocol") == "sample":
            lines += _sample_markdown(g, f, params)
            continue
        lines.append(f"## {f['task']}{params} · ds={f['ds']} dr={f['dr']} · {f['critic']} critic "
                     f"{f['layers']}×{f['hidden']} · batch {f['batch_size']} · lr {f['lr']:g} · {f['steps']} steps · "
                     f"MI {f['schedule']} bits" + (f" · burn-in {f['burn_in']}" if f["burn_in"] else ""))
        lines.append("")
        lines.append("| rank | estimator | avg MSE | true MI | estimate | bias | variance | MSE | seeds | diverged |")
        lines.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for _, r in g.iterrows():
            lines.append(f"| {r['rank']} | {r['estimator']} | {_num(r['rank_score'])} | {r['true_mi']:g} | "
                         f"{_pm(r['mean_estimate'], r['mean_estimate_ci95'])} | {_pm(r['bias'], r['bias_ci95'])} | "
                         f"{_pm(r['variance'], r['variance_ci95'])} | {_pm(r['mse'], r['mse_ci95'])} | "
                         f"{r['n_seeds']} | {r['diverged_seeds'] or ''} |")
        lines.append("")
    return "\n".join(lines)


def _sample_markdown(g, f, params) -> list[str]:
    """A sample-protocol setup: one estimate per dataset and seed; seconds and parameters per estimate."""
    kw = ", ".join(f"{k} {f[k]:g}" for k in ("layers", "hidden", "embed", "batch_size", "lr", "steps") if f[k])
    lines = [f"## {f['task']}{params} · ds={f['ds']} dr={f['dr']} · sample protocol, n = {f['n']} pairs per dataset "
             f"· MI {f['schedule']} bits · critic-bound estimators: {f['critic']} critic via mibench.estimate"
             + (f" ({kw})" if kw else " (data-sized defaults)"), "",
             "| rank | estimator | kind | avg MSE | true MI | estimate | bias | variance | MSE | seeds | failed "
             "| s / estimate | parameters | status |",
             "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for _, r in g.iterrows():
        params_n = r["n_parameters"]
        lines.append(f"| {r['rank']} | {r['estimator']} | {r['kind']} | {_num(r['rank_score'])} | {r['true_mi']:g} | "
                     f"{_pm(r['mean_estimate'], r['mean_estimate_ci95'])} | {_pm(r['bias'], r['bias_ci95'])} | "
                     f"{_num(r['variance'])} | {_pm(r['mse'], r['mse_ci95'])} | {r['n_seeds']} | "
                     f"{r['diverged_seeds'] or ''} | {_num(r['seconds'], 2)} | "
                     f"{'' if params_n is None or params_n != params_n else int(params_n)} | "
                     f"{r.get('mi_status') if isinstance(r.get('mi_status'), str) else ''} |")
    lines.append("")
    return lines


def write_all(board, col: Collection, out, command: str | None = None, markdown: bool = True) -> list[Path]:
    """``out`` (CSV), its Markdown twin (same stem, ``.md``) and ``<stem>.meta.json``."""
    from .results import write_json

    out = Path(out)
    if out.suffix.lower() != ".csv":
        raise MibenchError(f"-o must name a .csv file, got {out}")
    meta = provenance(col, board, command)
    written = [write_csv(board, out)]
    if markdown:
        written.append(write_markdown(board, out.with_suffix(".md"), meta))
    meta_path = out.with_name(out.stem + ".meta.json")
    write_json(meta_path, meta)
    written.append(meta_path)
    return written


def read_leaderboard(path):
    """A leaderboard CSV back as a DataFrame with the right types."""
    import pandas as pd

    df = pd.read_csv(path, keep_default_na=True, dtype={"task_params": str, "seeds": str, "schedule": str})
    if "precision" not in df.columns and "task" in df.columns:   # written before --precision existed: fp32
        df["precision"] = "fp32"
    if "protocol" not in df.columns and "task" in df.columns:    # written before the sample protocol (issue 12)
        df["protocol"] = "stream"
        df["n"] = 0
    missing = [c for c in ROW_KEY + ["mse", "abs_bias", "diverged_seeds"] if c not in df.columns]
    if missing:
        raise MibenchError(f"{path} is not a mibench leaderboard (missing columns: {', '.join(missing)})")
    df["task_params"] = df["task_params"].fillna("")
    df["schedule"] = df["schedule"].astype(str)
    return df


def load(source):
    """A leaderboard from a CSV file, or built from run / sweep directories (str, Path or list)."""
    if isinstance(source, (list, tuple)):
        return build(source)[0]
    p = Path(source)
    if p.is_file():
        return read_leaderboard(p)
    if not p.exists():
        raise MibenchError(f"no such leaderboard or run directory: {p}")
    return build([p])[0]


# ---------------------------------------------------------------------------------- compare


@dataclass
class Finding:
    kind: str          # missing | diverged | mse | bias
    key: dict
    baseline: float | None = None
    new: float | None = None
    detail: str = ""

    def label(self) -> str:
        k = self.key
        params = f"[{k['task_params']}]" if k.get("task_params") else ""
        return (f"{k['task']}{params} {k['estimator']} {k['critic']} {k['layers']}x{k['hidden']} "
                f"b{k['batch_size']} {k['steps']} steps @ {k['true_mi']:g} bits")


@dataclass
class CompareReport:
    regressions: list
    improvements: list
    matched: int
    new_only: int
    settings: dict

    @property
    def ok(self) -> bool:
        return not self.regressions

    def format(self) -> str:
        s = self.settings
        lines = [f"compared {self.matched} rows (tolerance {s['tolerance']:.0%} relative, floors: MSE "
                 f"{s['mse_floor']:g} bits², |bias| {s['bias_floor']:g} bits; gated: {', '.join(s['metrics'])})"]
        if self.regressions:
            lines.append(f"{len(self.regressions)} regression(s):")
            for f in self.regressions:
                lines.append(f"  WORSE {f.kind:<8} {f.label()}: {f.detail}")
        else:
            lines.append("no regressions")
        if self.improvements:
            lines.append(f"{len(self.improvements)} row(s) improved beyond the tolerance:")
            for f in self.improvements[:20]:
                lines.append(f"  better {f.kind:<7} {f.label()}: {f.detail}")
            if len(self.improvements) > 20:
                lines.append(f"  ... and {len(self.improvements) - 20} more")
        if self.new_only:
            lines.append(f"{self.new_only} row(s) only in NEW (not gated)")
        return "\n".join(lines)


def compare(new, baseline, tolerance: float = 0.25, mse_floor: float = 0.05, bias_floor: float = 0.1,
            metrics=("mse", "bias"), allow_missing: bool = False) -> CompareReport:
    """Regression check of ``new`` against ``baseline`` (each a leaderboard CSV path, a DataFrame,
    or run / sweep directories); see the module docstring for the rules."""
    import pandas as pd

    if tolerance < 0 or mse_floor < 0 or bias_floor < 0:
        raise MibenchError("tolerance and floors must be >= 0")
    metrics = tuple(m.strip().lower() for m in (metrics.split(",") if isinstance(metrics, str) else metrics))
    for m in metrics:
        if m not in ("mse", "bias"):
            raise MibenchError(f"--metrics takes mse and/or bias, got {m!r}")
    n = new if isinstance(new, pd.DataFrame) else load(new)
    b = baseline if isinstance(baseline, pd.DataFrame) else load(baseline)
    n, b = _keyed(n), _keyed(b)
    regressions, improvements = [], []
    for key, br in b.items():
        kd = dict(zip(ROW_KEY, key))
        nr = n.get(key)
        if nr is None:
            if not allow_missing:
                regressions.append(Finding("missing", kd, detail="in the baseline but not in NEW"))
            continue
        bdiv, ndiv = int(br["diverged_seeds"]), int(nr["diverged_seeds"])
        bm, nm = float(br["mse"]), float(nr["mse"])
        if ndiv > bdiv or (np.isfinite(bm) and not np.isfinite(nm)):
            regressions.append(Finding("diverged", kd, bdiv, ndiv,
                                       f"diverged seeds {bdiv} -> {ndiv}" + ("" if np.isfinite(nm) else ", MSE is NaN")))
            continue
        checks = []
        if "mse" in metrics:
            checks.append(("mse", bm, nm, mse_floor, "MSE", "bits²"))
        if "bias" in metrics:
            checks.append(("bias", float(br["abs_bias"]), float(nr["abs_bias"]), bias_floor, "|bias|", "bits"))
        for kind, bv, nv, floor, name, unit in checks:
            if not (np.isfinite(bv) and np.isfinite(nv)):
                continue
            limit = bv * (1 + tolerance) + floor
            detail = f"{name} {bv:.4g} -> {nv:.4g} {unit} ({_rel(bv, nv)}; limit {limit:.4g})"
            if nv > limit:
                regressions.append(Finding(kind, kd, bv, nv, detail))
            elif nv < (bv - floor) / (1 + tolerance):
                improvements.append(Finding(kind, kd, bv, nv, f"{name} {bv:.4g} -> {nv:.4g} {unit} ({_rel(bv, nv)})"))
    new_only = sum(1 for k in n if k not in b)
    settings = {"tolerance": tolerance, "mse_floor": mse_floor, "bias_floor": bias_floor, "metrics": list(metrics)}
    return CompareReport(regressions, improvements, sum(1 for k in b if k in n), new_only, settings)


def _rel(b, n) -> str:
    if b == 0:
        return "was 0"
    return f"{(n - b) / abs(b):+.0%}"


def _keyed(df) -> dict:
    out = {}
    for _, r in df.iterrows():
        key = tuple(_norm_key(c, r[c]) for c in ROW_KEY)
        out[key] = r
    return out


def _norm_key(col, v):
    if col in ("layers", "hidden", "embed", "batch_size", "steps", "burn_in", "n"):
        return int(v)
    if col in ("lr", "true_mi"):
        return round(float(v), 9)
    if col == "task_params":
        return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    return str(v)


def command_line() -> str:
    import shlex

    argv = list(sys.argv)
    if argv and argv[0].endswith(("cli.py", "__main__.py", "/mibench")):
        argv[0] = "mibench"
    return " ".join(shlex.quote(a) for a in argv)
