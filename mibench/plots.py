"""Figures.  The staircase plot follows the paper's figures: raw per-step estimates as faint
points, an exponentially weighted moving average as a line, and the true MI as a black staircase.
Matplotlib's Agg backend is used so plots work headless.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def ewm(values: np.ndarray, span: int = 200) -> np.ndarray:
    """Exponentially weighted moving average (pandas' ``ewm(span).mean()``, adjust=True), NaN-aware."""
    import pandas as pd

    return pd.Series(values).ewm(span=span, ignore_na=True).mean().to_numpy()


def plot_staircase(path, names, true_mi: np.ndarray, estimates: np.ndarray, title: str = "",
                   ceilings: dict | None = None, span: int | None = None) -> Path:
    plt = _pyplot()
    steps = np.arange(len(true_mi))
    span = span or max(10, len(true_mi) // 100)
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    colors = plt.get_cmap("tab10")
    for i, (name, est) in enumerate(zip(names, estimates)):
        c = colors(i % 10)
        ax.scatter(steps, est, s=2, alpha=0.12, color=c, rasterized=True, linewidths=0)
        ax.plot(steps, ewm(est, span), color=c, lw=1.6, label=name)
    ax.step(steps, true_mi, where="post", color="black", lw=1.5, label="true MI")
    for name, ceiling in (ceilings or {}).items():
        if np.isfinite(ceiling) and ceiling < np.max(true_mi):
            ax.axhline(ceiling, color="grey", ls=":", lw=1)
            ax.text(steps[-1], ceiling, f" {name} ceiling log2 K", va="bottom", ha="right", fontsize=8, color="grey")
    finite = estimates[np.isfinite(estimates)]
    hi = max(float(np.max(true_mi)) * 1.4 + 1, 1.0)
    lo = min(-1.0, float(np.percentile(finite, 0.5)) if finite.size else -1.0)
    ax.set_ylim(max(lo, -0.3 * hi), hi)
    ax.set_xlabel("training step")
    ax.set_ylabel("mutual information (bits)")
    ax.set_title(title or "MI estimates vs. true MI")
    ax.legend(loc="upper left", fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    from .results import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------------
# Leaderboard and sweep figures (seaborn).  Every function saves a PNG, closes the figure and
# returns the matplotlib Figure (axes, labels and legends stay inspectable).  Inputs are the
# per-seed rows of :func:`mibench.leaderboard.per_seed_rows` (one row per run x estimator x true-MI
# level); error bars are 95% Student-t intervals across seeds (none with a single seed).

METRIC_LABELS = {"bias": "bias (bits)", "variance": "variance (bits²)", "mse": "MSE (bits²)",
                 "mean_estimate": "mean estimate (bits)", "abs_bias": "|bias| (bits)"}
SWEEP_AXES = {"ds": "number of information sources ds", "dr": "representation dimension dr",
              "nuisance": "nuisance strength η", "layers": "critic depth (hidden layers)",
              "hidden": "critic width (hidden units)", "batch_size": "batch size K", "critic": "critic"}


def _seaborn():
    _pyplot()
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    return sns


def _save(fig, path) -> None:
    from .results import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    _pyplot().close(fig)


def _errorbar(df, by=()):
    from .leaderboard import t_interval

    return t_interval if df.groupby(["estimator", "true_mi", *by]).size().max() > 1 else None


def _n_seeds_note(df, by=()) -> str:
    n = df.groupby(["estimator", "true_mi", *by]).size()
    lo, hi = int(n.min()), int(n.max())
    seeds = f"{lo} seed{'s' if lo > 1 else ''}" if lo == hi else f"{lo}-{hi} seeds"
    return seeds + (" · error bars: 95% t-interval" if hi > 1 else "")


def plot_metric_bars(samples, path, title: str = ""):
    """Bias / variance / MSE per estimator (hue) and true-MI level (x): three panels."""
    import pandas as pd

    sns = _seaborn()
    plt = _pyplot()
    df = pd.DataFrame(samples)
    order = sorted(df["estimator"].unique(), key=lambda e: (df.loc[df.estimator == e, "mse"].mean(), e))
    levels = sorted(df["true_mi"].unique())
    df = df.assign(level=df["true_mi"].map(lambda v: f"{v:g}"))
    eb = _errorbar(df)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), dpi=110)
    for ax, metric in zip(axes, ("bias", "variance", "mse")):
        sns.barplot(data=df, x="level", y=metric, hue="estimator", hue_order=order,
                    order=[f"{v:g}" for v in levels], errorbar=eb, capsize=0.1 if eb else 0, err_kws={"linewidth": 1},
                    ax=ax, palette="tab10")
        ax.set_xlabel("true MI (bits)")
        ax.set_ylabel(METRIC_LABELS[metric])
        ax.set_title(metric if metric != "mse" else "MSE")
        if metric == "bias":
            ax.axhline(0, color="black", lw=0.8)
        else:   # variance and MSE are >= 0 (a t interval may reach below)
            ax.set_ylim(bottom=0)
        if ax is not axes[-1] and ax.get_legend() is not None:
            ax.get_legend().remove()
    axes[-1].legend(title="estimator", fontsize=8, title_fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle((title or "bias, variance and MSE per estimator") + f"  ({_n_seeds_note(df)})", fontsize=11)
    fig.tight_layout()
    _save(fig, path)
    return fig


def plot_sweep(samples, axis: str, path, title: str = "", style: str | None = None):
    """MSE and bias (rows) against a sweep axis (x), one column per true-MI level, hue = estimator."""
    import pandas as pd

    sns = _seaborn()
    plt = _pyplot()
    df = pd.DataFrame(samples)
    levels = sorted(df["true_mi"].unique())[:6]
    categorical = axis == "critic" or not pd.api.types.is_numeric_dtype(df[axis])
    order = sorted(df["estimator"].unique())
    by = [axis] + ([style] if style else [])
    eb = _errorbar(df, by)
    fig, axes = plt.subplots(2, len(levels), figsize=(4.2 * len(levels) + 1.8, 7.2), dpi=110, squeeze=False)
    for j, level in enumerate(levels):
        sub = df[df["true_mi"] == level]
        for i, metric in enumerate(("mse", "bias")):
            ax = axes[i, j]
            if categorical:
                sns.barplot(data=sub, x=axis, y=metric, hue="estimator", hue_order=order, errorbar=eb, ax=ax,
                            palette="tab10", capsize=0.1 if eb else 0)
            else:
                sns.lineplot(data=sub, x=axis, y=metric, hue="estimator", hue_order=order, style=style,
                             errorbar=eb, marker="o", ax=ax, palette="tab10", err_style="bars")
                vals = sorted(sub[axis].dropna().unique())
                if len(vals) > 2 and vals[0] > 0 and vals[-1] / vals[0] >= 20:
                    ax.set_xscale("log")
            if metric == "bias":
                ax.axhline(0, color="black", lw=0.8)
            ax.set_xlabel(SWEEP_AXES.get(axis, axis))
            ax.set_ylabel(METRIC_LABELS[metric])
            ax.set_title(f"true MI = {level:g} bits")
            if ax.get_legend() is not None and not (i == 0 and j == len(levels) - 1):
                ax.get_legend().remove()
    leg_ax = axes[0, -1]
    if leg_ax.get_legend() is not None:
        leg_ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle((title or f"estimation error vs {SWEEP_AXES.get(axis, axis)}") + f"  ({_n_seeds_note(df, by)})",
                 fontsize=11)
    fig.tight_layout()
    _save(fig, path)
    return fig


def sweep_axes(df) -> list[str]:
    """The sweep axes that vary in ``df`` (per-seed rows of one task); dr is dropped when it is a
    function of ds (Gaussian: ds = dr = dim)."""
    axes = [a for a in SWEEP_AXES if a in df.columns and df[a].nunique(dropna=True) > 1]
    if "ds" in axes and "dr" in axes and df.groupby("ds")["dr"].nunique().max() == 1:
        axes.remove("dr")
    return axes


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", str(text)).strip("-")[:120]


def plot_results(target, out_dir=None, max_bar_plots: int = 24) -> list[Path]:
    """``mibench plot``: figures for a run directory or for everything below a sweep directory.

    * run directory: ``staircase.png`` (re-rendered from estimates.csv) and ``metrics.png``, in the
      run directory unless ``out_dir`` is given;
    * sweep / results directory (``out_dir`` default ``<target>/plots``): ``metrics_<setup>.png``
      per setup (seeds pooled) and ``sweep_<axis>_<task>.png`` for every axis that varies
      (ds, dr, nuisance, critic depth / width, batch size, critic type).
    """
    import json

    import pandas as pd

    from .errors import MibenchError
    from .leaderboard import SETUP_KEY, collect, per_seed_rows
    from .results import is_complete

    target = Path(target)
    written: list[Path] = []
    if (target / "config.json").is_file():
        if not is_complete(target):
            raise MibenchError(f"{target} is not a complete run directory (status in config.json)")
        out = Path(out_dir) if out_dir else target
        cfg = json.loads((target / "config.json").read_text())
        est = pd.read_csv(target / "estimates.csv")
        names = list(dict.fromkeys(est["estimator"]))
        steps = int(est["step"].max()) + 1
        true_mi = est[est.estimator == names[0]].sort_values("step")["true_mi"].to_numpy()
        mat = np.full((len(names), steps), np.nan)
        for i, n in enumerate(names):
            e = est[est.estimator == n]
            mat[i, e["step"].to_numpy()] = e["estimate"].to_numpy()
        c = cfg["config"]
        title = f"{c['task']} · {c['critic']} critic · batch {c['batch_size']} · seed {c['seed']}"
        written.append(plot_staircase(out / "staircase.png", names, true_mi, mat, title, cfg.get("ceilings_bits")))
        col = collect([target])
        plot_metric_bars(per_seed_rows(col.runs), out / "metrics.png", title=f"{c['task']} · {c['critic']} critic")
        written.append(out / "metrics.png")
        return written

    col = collect([target])
    if not col.runs:
        raise MibenchError(f"no complete run directories under {target}")
    out = Path(out_dir) if out_dir else target / "plots"
    df = pd.DataFrame(per_seed_rows(col.runs))
    nuis = {str(r.path): (r.config.get("task_info") or {}).get("nuisance") for r in col.runs}
    df["nuisance"] = df["run_dir"].map(nuis)
    n_bars = 0
    for key, g in df.groupby(SETUP_KEY, sort=True, dropna=False):
        if n_bars >= max_bar_plots:
            break
        s = dict(zip(SETUP_KEY, key))
        label = f"{s['task']}" + (f" ({s['task_params']})" if s["task_params"] else "") + \
                f" · {s['critic']} {s['layers']}×{s['hidden']} · batch {s['batch_size']} · {s['steps']} steps"
        slug = _slug(f"{s['task']}_{s['task_params']}_{s['critic']}-d{s['layers']}w{s['hidden']}_b{s['batch_size']}"
                     f"_n{s['steps']}_mi{s['schedule']}")
        path = out / f"metrics_{slug}.png"
        plot_metric_bars(g, path, title=label)
        written.append(path)
        n_bars += 1
    for task, g in df.groupby("task", sort=True):
        for axis in sweep_axes(g):
            others = [a for a in sweep_axes(g) if a != axis and not (axis == "ds" and a == "dr")]
            style = None
            if others:
                g = g.assign(setup=g[others].astype(str).agg(" ".join, axis=1)) if len(others) > 1 else \
                    g.assign(setup=g[others[0]].astype(str))
                style = "setup"
            path = out / f"sweep_{axis}_{_slug(task)}.png"
            plot_sweep(g, axis, path, title=f"{task}: estimation error vs {SWEEP_AXES[axis]}",
                       style=style if axis != "critic" else None)
            written.append(path)
    return written
