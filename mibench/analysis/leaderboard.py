"""Leaderboard (aggregation over seeds), its Markdown twin, and the regression gate (``compare``).

Input: run directories or anything containing them (sweep directories, ``results/``); every
directory below the given paths whose ``config.json`` says ``complete`` is used, others are
counted and skipped.  Each run contributes its ``summary.csv`` rows (per estimator and true-MI
level) as **one sample per seed**.

The columns are documented in docs/sweeps.md ("Leaderboard"); :data:`COLUMNS` lists them in order.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from mibench.errors import MibenchError, UnreadableInput
from mibench.metrics import status_counts
from mibench.protocols.setup import fmt_num
from mibench.records.formats import SUMMARY_METRICS
from mibench.records.setup import SETUP_COLUMNS, SETUP_KEY

ROW_KEY = SETUP_KEY + ["estimator", "true_mi"]
METRICS = SUMMARY_METRICS          # the metric columns averaged over seeds (mibench.records.formats)
COLUMNS = (SETUP_COLUMNS + ["estimator", "rank", "rank_score", "true_mi", "n_seeds", "seeds"]
           + [c for m in METRICS for c in (m, f"{m}_ci95")] + ["abs_bias", "diverged_seeds"]
           + ["kind", "bound", "bound_check", "seconds", "n_parameters", "mi_status", "mi_stderr"])


# ------------------------------------------------------------------------------- collecting


def collect_unique(paths, prefer=()):
    """Complete runs below ``paths`` (:func:`mibench.records.collect`, which keeps every run), without
    repeats: a run each of whose (estimator, seed) samples of its setup an earlier run already holds
    (overlapping inputs, or the same seed run again) is skipped and listed in ``duplicates``.  Runs of
    one setup with other seeds are kept and pooled; a sample two kept runs share is counted once
    (:func:`per_seed_rows`).  Runs are taken in path order, those below a directory of ``prefer``
    first (they win a tie)."""
    from mibench.protocols import protocol_of
    from mibench.records import collect as collect_records

    col = collect_records(paths)
    preferred = [Path(p).resolve() for p in prefer]
    runs, seen = [], {}
    for r in sorted(col.runs, key=lambda r: not any(Path(r.path).resolve().is_relative_to(p) for p in preferred)):
        protocol = protocol_of(r.config)
        setup = json.dumps([protocol.setup(r.config)[k] for k in SETUP_KEY])
        samples = {(setup, str(e), repr(seed)) for e in r.config["config"].get("estimators", [])
                   for seed in protocol.seeds_of(r.config)}
        if samples and samples <= seen.keys():
            col.duplicates.append((r.path, seen[min(samples)]))
            continue
        for sample in samples:
            seen.setdefault(sample, r.path)
        runs.append(r)
    col.runs = runs
    return col


def per_seed_rows(runs) -> list[dict]:
    """One row per run x estimator x level x seed (the samples the leaderboard aggregates), from each
    run's protocol (:meth:`mibench.protocols.base.RunProtocol.seed_rows`); a sample an earlier run
    already gave (the same setup, estimator, level and seed) is counted once, so no seed stands in for
    two replicates."""
    from mibench.protocols import protocol_of

    rows, seen = [], set()
    for r in runs:
        for row in protocol_of(r.config).seed_rows(r):
            key = (json.dumps([row[k] for k in ROW_KEY], default=str), repr(row["seed"]))
            if key not in seen:
                seen.add(key)
                rows.append(row)
    return rows


# ------------------------------------------------------------------------------ aggregation


def aggregate(runs, keep_row=None):
    """The leaderboard as a pandas DataFrame with :data:`COLUMNS` (see the module docstring), from the
    per-seed rows for which ``keep_row(row)`` holds (default: all)."""
    import pandas as pd

    from mibench.protocols import get_protocol

    samples = [row for row in per_seed_rows(runs) if keep_row is None or keep_row(row)]
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
        protocol = get_protocol(first["protocol"])
        for m in METRICS:
            vals = g[m].to_numpy(dtype=float)
            row[m] = protocol.metric_mean(m, g)
            row[f"{m}_ci95"] = protocol.metric_ci95(m, vals)
        row["abs_bias"] = abs(row["bias"]) if np.isfinite(row["bias"]) else float("nan")
        row["diverged_seeds"] = int(g["diverged"].sum())
        row["kind"] = first.get("kind") or "critic"
        row["bound"], row["bound_check"] = bound_columns(row)
        secs = g["seconds"].to_numpy(dtype=float)
        row["seconds"] = float(np.nanmean(secs)) if np.isfinite(secs).any() else float("nan")
        params = [p for p in g["n_parameters"].tolist() if p is not None and p == p]
        row["n_parameters"] = int(max(params)) if params else None
        ses = g["mi_stderr"].to_numpy(dtype=float)
        row["mi_status"] = status_counts(g["mi_status"].fillna("").astype(str).tolist())
        row["mi_stderr"] = float(np.nanmean(ses)) if np.isfinite(ses).any() else float("nan")
        rows.append(row)
    board = pd.DataFrame(rows)
    # rank within a setup: the estimators none of whose estimates failed first, then those with failed
    # estimates, each by MSE averaged over levels (that averages the estimates that gave a value, so an
    # estimator failing on its hardest seeds would otherwise rank above one that answered them all)
    board["rank_score"] = np.inf
    board["rank"] = 0
    for _, g in board.groupby(SETUP_KEY, sort=False, dropna=False):
        score = g.groupby("estimator")["mse"].apply(lambda s: float(s.mean()) if s.notna().all() else float("inf"))
        failed = g.groupby("estimator")["diverged_seeds"].sum() > 0
        keys = {e: (bool(failed[e]), score[e]) for e in score.index}
        ordered = sorted(keys.values())
        ranks = pd.Series({e: ordered.index(k) + 1 for e, k in keys.items()})     # ties share the lower rank
        board.loc[g.index, "rank_score"] = g["estimator"].map(score).to_numpy()
        board.loc[g.index, "rank"] = g["estimator"].map(ranks).to_numpy()
    board = board.sort_values(SETUP_KEY + ["rank", "estimator", "true_mi"], kind="mergesort").reset_index(drop=True)
    return board[COLUMNS]


def bound_columns(row: dict) -> tuple[str, str]:
    """(``bound``, ``bound_check``) of a leaderboard row: whether the estimator's number is a lower
    bound, an upper bound or an estimate (:func:`mibench.estimators.registry.estimator_bound`; "" for a
    name this install does not know), and for a bound whether the seeds' mean kept to its side of the
    truth: ``above truth`` / ``below truth`` when it crossed it by more than its 95% interval (a lower
    bound above the truth, an upper bound, such as CLUB or L1Out with a learned conditional, below it),
    else ``holds``."""
    from mibench.estimators.kinds import LOWER_BOUND, UPPER_BOUND
    from mibench.estimators.registry import estimator_bound

    try:
        bound = estimator_bound(row["estimator"])
    except MibenchError:
        return "", ""
    bias, ci = row.get("bias", float("nan")), row.get("bias_ci95", float("nan"))
    if bound not in (LOWER_BOUND, UPPER_BOUND) or not np.isfinite(bias):
        return bound, ""
    margin = ci if np.isfinite(ci) else 0.0
    if bound == LOWER_BOUND and bias > margin:
        return bound, "above truth"
    if bound == UPPER_BOUND and bias < -margin:
        return bound, "below truth"
    return bound, "holds"


def build(paths, keep_row=None, prefer=()):
    """(leaderboard DataFrame, Collection) for run / sweep directories.

    Parameters
    ----------
    paths : run directories, sweep directories or directories holding them (searched recursively).
    keep_row : a per-seed row filter (:func:`aggregate`).
    prefer : directories whose runs win over the others' for the same samples (:func:`collect_unique`).
    """
    col = collect_unique(paths, prefer)
    if not col.runs:
        raise MibenchError(no_complete_runs(paths, col))
    return aggregate(col.runs, keep_row), col


def no_complete_runs(paths, col) -> str:
    """The one line for ``paths`` holding no complete run: how many incomplete ones there are, and
    that a sweep's are continued by ``--resume``."""
    where = ", ".join(map(str, paths))
    if not col.incomplete:
        return f"no complete run directories found under {where}"
    return (f"no complete run directories found under {where}: {len(col.incomplete)} incomplete "
            "(interrupted, failed or still running; a sweep's continue with 'mibench sweep ... --resume')")


# ---------------------------------------------------------------------------------- writing


def write_csv(board, path) -> Path:
    from mibench.records import write_text

    path = Path(path)
    write_text(path, board.to_csv(index=False, lineterminator="\n", float_format=_float_fmt, na_rep=""))
    return path


def _float_fmt(v) -> str:  # pandas passes floats one by one when float_format is callable
    return f"{v:.6g}"


def provenance(col, board, command: str | None = None) -> dict:
    """What the leaderboard was built from: steps, seeds, devices, versions, presets, commands."""
    from mibench._version import __version__
    from mibench.protocols import protocol_of
    from mibench.protocols.setup import schedule_label
    from mibench.sweep.plan import cell_counts, sweep_status

    envs = [r.config.get("environment", {}) for r in col.runs]
    setups = [protocol_of(r.config).setup(r.config) for r in col.runs]
    sources = sorted({str(r.config.get("task_info", {}).get("data_source")) for r in col.runs
                      if r.config.get("task_info", {}).get("data_source")})
    sweeps = []
    for d, m in sorted(col.manifests.items()):
        walls = [i["wall_seconds"] for i in m.get("invocations", []) if i.get("wall_seconds") is not None]
        sweeps.append({"dir": str(d), "name": m.get("name"), "preset": m.get("preset"),
                       "command": m.get("command"), "status": sweep_status(d, m), "counts": cell_counts(d, m),
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
        "seeds": sorted({s for r in col.runs
                         for s in (r.config["config"].get("seeds") or [r.config["config"].get("seed")])}),
        "sample_protocol_n": sorted({s["n"] for s in setups if s["n"]}),
        "schedules": sorted({schedule_label(r.config["config"]["mi"]) for r in col.runs}),
        "devices": sorted({f"{e.get('device')} ({e.get('device_name')})" for e in envs}),
        "torch": sorted({str(e.get("torch")) for e in envs}),
        "torch_threads": sorted({e.get("torch_threads") for e in envs if e.get("torch_threads") is not None}),
        "data_sources": sources,
        "train_wall_seconds_total": round(float(sum(walls)), 1),
        "sweeps": sweeps,
    }


def write_markdown(board, path, meta: dict | None = None, title: str = "MI estimator leaderboard") -> Path:
    from mibench.records import write_text

    write_text(Path(path), to_markdown(board, meta, title))
    return Path(path)


def to_markdown(board, meta: dict | None = None, title: str = "MI estimator leaderboard") -> str:
    """The leaderboard as Markdown: provenance, then one section per setup (its protocol's table)."""
    from mibench.protocols import get_protocol

    lines = [f"# {title}", ""]
    if meta:
        lines += _markdown_provenance(meta)
    lines += ["Bias in bits, variance and MSE in bits²; each value is the mean over seeds ± the half-width of its "
              "95% Student-t confidence interval. Rank: by MSE averaged over the true-MI levels, within each "
              "setup (1 = best). Column definitions: `mibench.analysis.leaderboard`.", ""]
    if board.empty:
        return "\n".join(lines + ["(no runs)", ""])
    groups = [(catalogue_of(g.iloc[0]["task"]), g) for _, g in board.groupby(SETUP_KEY, sort=False, dropna=False)]
    order = {None: -1, **{c: i for i, c in enumerate(_catalogue_names())}}
    current = object()
    for catalogue, g in sorted(groups, key=lambda cg: order.get(cg[0], len(order))):   # stable: board order kept
        if catalogue != current and catalogue is not None:
            members = [gg for c, gg in groups if c == catalogue]
            lines += _catalogue_summary(catalogue, members)
        current = catalogue
        first = g.iloc[0]
        lines += get_protocol(first["protocol"]).markdown_section(g, first, level=2 if catalogue is None else 3)
    return "\n".join(lines)


def catalogue_of(task: str) -> str | None:
    """The benchmark catalogue a task belongs to (``bmi-v1``, ``mutinfo-images``, ...), else None."""
    from mibench.tasks.catalogue import catalogues_of

    found = catalogues_of(task)
    return found[0] if found else None


def _catalogue_names() -> list[str]:
    from mibench.tasks.catalogue import CATALOGUES

    return list(CATALOGUES)


def _catalogue_summary(catalogue: str, setups: list) -> list[str]:
    """A catalogue's heading and, per estimator, how it did over the catalogue's setups."""
    import pandas as pd

    rows = pd.concat(setups)
    per = []
    for est, g in rows.groupby("estimator", sort=False):
        by_setup = g.groupby(SETUP_KEY, sort=False, dropna=False)
        ranks = by_setup["rank"].first()
        per.append((est, len(ranks), int((ranks == 1).sum()), float(ranks.mean()), float(g["abs_bias"].mean()),
                    float(by_setup["rank_score"].first().replace(np.inf, np.nan).mean()),
                    float(g["seconds"].mean()), int(g["diverged_seeds"].sum())))
    per.sort(key=lambda r: (r[3], r[0]))
    lines = [f"## Catalogue `{catalogue}`: {len(setups)} setups", "",
             "| estimator | setups | ranked first | mean rank | mean abs bias (bits) | mean MSE (bits²) | s / estimate "
             "| failed |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for est, n, first, rank, bias, mse, secs, failed in per:
        lines.append(f"| {est} | {n} | {first} | {rank:.2f} | {fmt_num(bias)} | {fmt_num(mse)} | {fmt_num(secs, 2)} | "
                     f"{failed or ''} |")
    lines.append("")
    return lines


def _markdown_provenance(meta: dict) -> list[str]:
    lines = [f"Generated {meta.get('generated')} by mibench {meta.get('mibench')} from {meta.get('runs')} runs.", ""]
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
    return lines


def write_all(board, col, out, command: str | None = None, markdown: bool = True) -> list[Path]:
    """``out`` (CSV), its Markdown twin (same stem, ``.md``) and ``<stem>.meta.json``."""
    from mibench.records import write_json

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


# ---------------------------------------------------------------------------------- reading

#: numeric columns of a leaderboard CSV (a value that does not parse makes the file unreadable)
NUMERIC = ["layers", "hidden", "embed", "batch_size", "lr", "steps", "burn_in", "n", "rank", "rank_score", "true_mi",
           "n_seeds", "abs_bias", "diverged_seeds", "seconds", "n_parameters", "mi_stderr",
           *[c for m in METRICS for c in (m, f"{m}_ci95")]]


def read_leaderboard(path):
    """A leaderboard CSV back as a DataFrame with the right types; an empty, truncated or
    damaged file, or one that is not a leaderboard, is one :class:`UnreadableInput` line."""
    import io

    import pandas as pd

    from mibench.records import read_csv_rows
    from mibench.records.io import read_bytes

    rows = read_csv_rows(path, required=["task", "estimator", "true_mi", "mse"], floats=NUMERIC, what="leaderboard")
    header = read_bytes(path, "leaderboard").split(b"\n", 1)[0].decode().split(",")
    df = pd.read_csv(io.BytesIO(read_bytes(path, "leaderboard")), keep_default_na=True,
                     dtype={"task_params": str, "seeds": str, "schedule": str})
    if len(df) != len(rows) or list(df.columns) != header:
        raise UnreadableInput(f"leaderboard {path} cannot be read consistently (damaged file)")
    if "precision" not in df.columns:   # written before --precision existed: fp32
        df["precision"] = "fp32"
    if "protocol" not in df.columns:    # written before the sample protocol existed
        df["protocol"] = "stream"
        df["n"] = 0
    if "truth_check" not in df.columns:  # written before the column: no flag recorded
        df["truth_check"] = ""
    missing = [c for c in ROW_KEY + ["mse", "abs_bias", "diverged_seeds"] if c not in df.columns]
    if missing:
        raise UnreadableInput(f"{path} is not a mibench leaderboard (missing columns: {', '.join(missing)})")
    df["task_params"] = df["task_params"].fillna("")
    df["truth_check"] = [v if isinstance(v, str) else "" for v in df["truth_check"]]
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


def command_line() -> str:
    import shlex

    argv = list(sys.argv)
    if argv and argv[0].endswith(("cli.py", "__main__.py", "/mibench")):
        argv[0] = "mibench"
    return " ".join(shlex.quote(a) for a in argv)


__all__ = ["SETUP_COLUMNS", "SETUP_KEY", "ROW_KEY", "METRICS", "COLUMNS", "collect_unique", "per_seed_rows",
           "aggregate", "build", "write_csv", "provenance", "to_markdown", "write_markdown", "write_all",
           "read_leaderboard", "load", "command_line"]


def __getattr__(name):
    if name == "collect":       # the former name of collect_unique, still importable with a warning
        import warnings

        warnings.warn("mibench.analysis.leaderboard.collect is named collect_unique (mibench.records.collect "
                      "keeps repeated runs)", DeprecationWarning, stacklevel=2)
        return collect_unique
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
