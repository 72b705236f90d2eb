"""Figures.  The staircase plot follows the paper's figures: raw per-step estimates as faint
points, an exponentially weighted moving average (restarted at every true-MI level) as a line, and
the true MI as a black staircase.

* Every estimator has one fixed colour in every figure (:func:`estimator_color`: a fixed table for
  the built-in estimators, a colour derived from a hash of the name for any other).
* Figures are drawn with matplotlib's object-oriented API (``matplotlib.figure.Figure`` on an Agg
  canvas, :func:`figure`; written by :func:`save_figure`), so they work headless and never switch
  the caller's pyplot backend nor change its rcParams.
* What a figure draws is computed by testable helpers (:func:`smooth_per_level`,
  :func:`staircase_data`, :func:`metric_scale`); the ``plot_*`` functions only draw it.
"""
from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mibench.records.io import atomic_path, float_or_nan

#: fixed colours of the built-in estimators (the paper's eight keep matplotlib's tab10 order)
ESTIMATOR_COLORS = {
    "nwj": "#1f77b4", "js": "#ff7f0e", "infonce": "#2ca02c", "dv": "#d62728", "mine": "#9467bd",
    "smile-1": "#8c564b", "smile-5": "#e377c2", "smile-inf": "#7f7f7f", "tuba": "#bcbd22", "ksg": "#17becf",
    "smile": "#e377c2", "js-paper": "#ffbb78", "alpha-infonce": "#98df8a", "gaussian": "#393b79",
    "histogram": "#637939", "doe-flow": "#8c6d31", "f-dime": "#843c39",
}
#: the order estimators are drawn and listed in (others follow in the order given)
ESTIMATOR_ORDER = ["nwj", "js", "infonce", "dv", "mine", "smile-1", "smile-5", "smile-inf"]
TRUE_MI_COLOR = "black"


def estimator_color(name: str) -> str:
    """The colour of ``name`` in every figure: fixed for built-in estimators; for any other name
    (a plug-in, ``smile-2.5``) a hue from a hash of the name (stable across processes and runs),
    at a fixed saturation and value so it is never grey or black like the true-MI staircase."""
    name = str(name)
    if name in ESTIMATOR_COLORS:
        return ESTIMATOR_COLORS[name]
    import colorsys

    h = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")
    hue = (h & 0xFFFF) / 0x10000
    sat = 0.55 + 0.35 * ((h >> 16) & 0xFF) / 0xFF
    val = 0.60 + 0.25 * ((h >> 24) & 0xFF) / 0xFF
    r, g, b = colorsys.hsv_to_rgb(hue, sat, val)
    return "#{:02x}{:02x}{:02x}".format(*(int(round(c * 255)) for c in (r, g, b)))


def palette(names) -> dict:
    """``{estimator: colour}`` for seaborn's ``palette=`` (see :func:`estimator_color`)."""
    return {n: estimator_color(n) for n in names}


def ordered(names) -> list:
    """Estimator names in the canonical order (the paper's eight first), duplicates dropped."""
    names = list(dict.fromkeys(names))
    return [n for n in ESTIMATOR_ORDER if n in names] + [n for n in names if n not in ESTIMATOR_ORDER]


# ------------------------------------------------------------------------------ figure plumbing


def figure(**kwargs):
    """A Figure (``matplotlib.figure.Figure(**kwargs)``) on its own Agg canvas: no pyplot, no
    backend switch, not in pyplot's figure list."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


@contextlib.contextmanager
def _style(seaborn: bool = False):
    """rcParams for one figure, restored afterwards (the caller's style is left as it was)."""
    import matplotlib

    with matplotlib.rc_context():
        if seaborn:
            import seaborn as sns

            sns.set_theme(style="whitegrid", context="notebook")
        yield


def save_figure(fig, path, metadata: dict | None = None) -> Path:
    """Write ``fig`` as a PNG at ``path``, atomically (its directory is created); returns ``path``.
    ``metadata``: PNG text fields (``{"Software": None}`` leaves out the matplotlib version)."""
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata=metadata)
    return path


# ------------------------------------------------------------------------------ staircase


def ewm(values: np.ndarray, span: int = 200, min_periods: int = 0) -> np.ndarray:
    """Exponentially weighted moving average (pandas' ``ewm(span).mean()``, adjust=True), NaN-aware;
    NaN until ``min_periods`` finite values have been seen."""
    import pandas as pd

    return pd.Series(values).ewm(span=span, ignore_na=True, min_periods=min_periods).mean().to_numpy()


def level_segments(true_mi: np.ndarray) -> np.ndarray:
    """Start index of every constant-true-MI segment, plus ``len(true_mi)`` at the end."""
    true_mi = np.asarray(true_mi, dtype=float)
    return np.concatenate([[0], np.flatnonzero(np.diff(true_mi) != 0) + 1, [len(true_mi)]])


def smooth_per_level(values: np.ndarray, true_mi: np.ndarray, span: int, min_periods: int | None = None) -> np.ndarray:
    """EWM of ``values`` restarted at every change of the true MI, so a level's line starts at
    that level's own estimates instead of dragging the previous level's in.  The line starts once
    ``min_periods`` (default span / 10) estimates of the level are in, not on one noisy step; steps
    whose estimate is not finite (after a divergence) stay NaN rather than repeating the last average."""
    values = np.asarray(values, dtype=float)
    out = np.full(values.shape, np.nan)
    mp = max(1, span // 10) if min_periods is None else int(min_periods)
    bounds = level_segments(true_mi)
    for a, b in zip(bounds[:-1], bounds[1:]):
        out[a:b] = ewm(values[a:b], span, min(mp, b - a))
    out[~np.isfinite(values)] = np.nan
    return out


def divergence_steps(names, estimates: np.ndarray, diverged: dict | None = None) -> dict:
    """``{estimator: step}`` where it diverged: the recorded step when given (config.json's
    ``diverged``), else the first non-finite estimate (the harness blanks every later step)."""
    out = {}
    for name, est in zip(names, estimates):
        if diverged and name in diverged:
            out[name] = int(diverged[name])
            continue
        bad = np.flatnonzero(~np.isfinite(np.asarray(est, dtype=float)))
        if bad.size:
            out[name] = int(bad[0])
    return out


@dataclass
class StaircaseData:
    """Everything :func:`plot_staircase` draws, in data coordinates (bits, steps)."""
    names: list
    steps: np.ndarray
    true_mi: np.ndarray
    estimates: np.ndarray           # (n, steps) raw
    smoothed: np.ndarray            # (n, steps) EWM restarted per level
    colors: dict
    ylim: tuple
    span: int
    #: estimator -> (step, y, clipped): where its divergence marker goes; y is its last smoothed
    #: (else raw) finite value before the step, clipped into ylim (``clipped`` says so)
    diverged: dict = field(default_factory=dict)
    #: (ceiling in bits, label) per distinct ceiling below the top true MI; the label goes in the
    #: right margin, outside the axes, at the ceiling's height: never over the curves
    ceilings: list = field(default_factory=list)


def staircase_data(names, true_mi, estimates, ceilings: dict | None = None, diverged: dict | None = None,
                   span: int | None = None) -> StaircaseData:
    true_mi = np.asarray(true_mi, dtype=float)
    estimates = np.atleast_2d(np.asarray(estimates, dtype=float))
    names = list(names)
    steps = np.arange(len(true_mi))
    span = int(span or max(10, len(true_mi) // 100))
    smoothed = np.vstack([smooth_per_level(e, true_mi, span) for e in estimates]) if len(names) else estimates
    finite = estimates[np.isfinite(estimates)]
    top = float(np.max(true_mi)) if true_mi.size else 1.0
    hi = max(top * 1.4 + 1, 1.0)
    lo = min(-1.0, float(np.percentile(finite, 0.5)) if finite.size else -1.0)
    ylim = (max(lo, -0.3 * hi), hi)
    marks = {}
    for name, step in divergence_steps(names, estimates, diverged).items():
        i = names.index(name)
        before = smoothed[i, :step]
        ok = np.flatnonzero(np.isfinite(before))
        if not ok.size:
            raw = estimates[i, :step]
            ok = np.flatnonzero(np.isfinite(raw))
            before = raw
        y = float(before[ok[-1]]) if ok.size else float(true_mi[min(step, len(true_mi) - 1)])
        yc = float(np.clip(y, *ylim))
        marks[name] = (int(step), yc, yc != y)
    by_value: dict = {}
    for name, c in (ceilings or {}).items():
        if c is not None and np.isfinite(c) and c < top:
            by_value.setdefault(round(float(c), 6), []).append(name)
    ceil = [(v, f"{', '.join(ns)}\nceiling\nlog₂K = {v:.3g}") for v, ns in sorted(by_value.items())]
    return StaircaseData(names, steps, true_mi, estimates, smoothed, palette(names), ylim, span, marks, ceil)


def plot_staircase(path, names, true_mi: np.ndarray, estimates: np.ndarray, title: str = "",
                   ceilings: dict | None = None, span: int | None = None, diverged: dict | None = None):
    """Estimates vs. step over the true-MI staircase; returns ``path`` (the Figure is ``.figure``
    of the returned path's :func:`last_figure`... see :func:`draw_staircase` for the Figure)."""
    fig = draw_staircase(names, true_mi, estimates, title, ceilings, span, diverged)
    return save_figure(fig, path)


def draw_staircase(names, true_mi, estimates, title: str = "", ceilings: dict | None = None,
                   span: int | None = None, diverged: dict | None = None):
    """The staircase Figure (not saved).  Curves in the estimators' fixed colours; a diverged
    estimator gets an ✕ where it diverged (on the axis edge when off the scale) and its legend
    entry says at which step; ceiling labels sit in the right margin."""
    from matplotlib.transforms import blended_transform_factory

    d = staircase_data(names, true_mi, estimates, ceilings, diverged, span)
    with _style():
        fig = figure(figsize=(10, 5.6), dpi=110)
        ax = fig.add_subplot()
        order = ordered(d.names)
        for name in order:
            i = d.names.index(name)
            c = d.colors[name]
            ax.scatter(d.steps, d.estimates[i], s=2, alpha=0.12, color=c, rasterized=True, linewidths=0)
            label = name if name not in d.diverged else f"{name} (diverged at step {d.diverged[name][0]})"
            ax.plot(d.steps, d.smoothed[i], color=c, lw=1.6, label=label)
        ax.step(d.steps, d.true_mi, where="post", color=TRUE_MI_COLOR, lw=1.5, label="true MI")
        for name in order:
            if name in d.diverged:
                step, y, clipped = d.diverged[name]
                ax.plot([step], [y], marker="X", ms=11, color=d.colors[name], mec="black", mew=0.8, ls="none",
                        clip_on=False, zorder=5)
        right = blended_transform_factory(ax.transAxes, ax.transData)
        for value, label in d.ceilings:
            ax.axhline(value, color="grey", ls=":", lw=1)
            ax.text(1.01, value, label, transform=right, va="center", ha="left", fontsize=8, color="dimgrey",
                    clip_on=False)
        ax.set_ylim(*d.ylim)
        ax.set_xlim(0, max(len(d.steps) - 1, 1))
        ax.set_xlabel("training step")
        ax.set_ylabel("mutual information (bits)")
        ax.set_title(title or "MI estimates vs. true MI")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=8, ncol=min(5, len(order) + 1),
                  frameon=False)
        ax.grid(alpha=0.3)
        fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Leaderboard and sweep figures (seaborn).  Every function saves a PNG, closes the figure and
# returns the matplotlib Figure (axes, labels and legends stay inspectable).  Inputs are the
# per-seed rows of :func:`mibench.analysis.leaderboard.per_seed_rows` (one row per run x estimator x true-MI
# level); error bars are 95% Student-t intervals across seeds (none with a single seed).

METRIC_LABELS = {"bias": "bias (bits)", "variance": "variance (bits²)", "mse": "MSE (bits²)",
                 "mean_estimate": "mean estimate (bits)", "abs_bias": "|bias| (bits)"}
SWEEP_AXES = {"ds": "number of information sources ds", "dr": "representation dimension dr",
              "nuisance": "nuisance strength η", "layers": "critic depth (hidden layers)",
              "hidden": "critic width (hidden units)", "batch_size": "batch size K", "critic": "critic"}


def _seaborn():
    import seaborn as sns

    return sns


def metric_scale(values, metric: str, flatten: float = 20.0) -> tuple[str, dict]:
    """The y scale of a metric panel: ``("linear", {})`` unless one value would flatten the
    others, i.e. the largest magnitude is more than ``flatten`` times the 75th percentile of the
    magnitudes (in the paper's Table-3 grid DV's variance on the Gaussian task dwarfs every other
    value: results/table3/leaderboard.md).  Then
    variance / MSE / |bias| (never negative) get ``("log", {})`` and bias (signed) gets
    ``("symlog", {"linthresh": t})`` with ``t`` the power of ten at or above that percentile,
    so the usual values stay on a linear scale and the outliers are compressed."""
    v = np.abs(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    if v.size < 2:
        return "linear", {}
    q75, top = float(np.percentile(v, 75)), float(v.max())
    if top <= 0 or top <= flatten * max(q75, 1e-12):
        return "linear", {}
    if metric == "bias":
        return "symlog", {"linthresh": float(10 ** np.ceil(np.log10(max(q75, 1e-3))))}
    return "log", {}


def _apply_scale(ax, values, metric: str, label: str) -> str:
    """Set the panel's y scale (:func:`metric_scale`); returns the y label, which says the scale."""
    scale, kw = metric_scale(values, metric)
    if scale == "log":
        ax.set_yscale("log")
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v) & (v > 0)]
        if v.size:
            ax.set_ylim(bottom=float(v.min()) / 3)
        return label.replace(")", ", log scale)")
    if scale == "symlog":
        ax.set_yscale("symlog", **kw)
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v)]
        t = kw["linthresh"]         # room for the bars and their error bars, no empty decades
        lo = min(float(v.min()), ax.dataLim.y0 if np.isfinite(ax.dataLim.y0) else 0.0)
        hi = max(float(v.max()), ax.dataLim.y1 if np.isfinite(ax.dataLim.y1) else 0.0)
        ax.set_ylim(min(-t, 1.5 * lo) if lo < 0 else -t / 2, max(t, 1.5 * hi) if hi > 0 else t / 2)
        return label.replace(")", f", symlog: linear within ±{t:g})")
    if metric != "bias":            # variance and MSE are >= 0 (a t interval may reach below)
        ax.set_ylim(bottom=0)
    return label


def _errorbar(df, by=()):
    from mibench.metrics import t_interval

    return t_interval if df.groupby(["estimator", "true_mi", *by]).size().max() > 1 else None


def _n_seeds_note(df, by=(), aggregated: bool = False) -> str:
    """The title's seed note (``2 seeds · error bars: 95% t-interval``): seeds per bar counted from
    the rows of each bar (per-seed rows) or read from ``n_seeds`` (``aggregated``: leaderboard rows)."""
    import pandas as pd

    if aggregated:
        n = pd.to_numeric(df["n_seeds"], errors="coerce").fillna(0).astype(int)
    else:
        n = df.groupby(["estimator", "true_mi", *by]).size()
    lo, hi = int(n.min()), int(n.max())
    seeds = f"{lo} seed{'s' if lo > 1 else ''}" if lo == hi else f"{lo}-{hi} seeds"
    return seeds + (" · error bars: 95% t-interval" if hi > 1 else "")


def bar_centre(level_index: int, estimator_index: int, n_estimators: int, width: float = 0.8) -> float:
    """The x of a bar in seaborn's dodged hue layout: level index + offset within ``width``."""
    return level_index - width / 2 + (estimator_index + 0.5) * width / n_estimators


def diverged_bars(df, order, levels, width: float = 0.8) -> list[tuple[float, str, float, int]]:
    """``(x, estimator, true_mi, n_seeds_diverged)`` for every bar of :func:`plot_metric_bars` whose
    estimator diverged (non-finite estimate) in at least one seed by the end of that level: ``x``
    is the bar's centre (seaborn's dodged hue layout: level index + offset within ``width``)."""
    if "diverged" not in df.columns:
        return []
    out = []
    flagged = df[df["diverged"].astype(bool)].groupby(["estimator", "true_mi"]).size()
    for (est, level), count in flagged.items():
        if est in order and level in levels:
            x = bar_centre(levels.index(level), order.index(est), len(order), width)
            out.append((float(x), est, float(level), int(count)))
    return sorted(out)


def interval_bars(df, metric: str, order, levels, width: float = 0.8) -> tuple[list, list, list]:
    """``(x, value, half_width)`` lists of the error bars of leaderboard rows (:func:`plot_metric_bars`
    with ``aggregated``): each bar's ``<metric>_ci95``, where it and the value are finite."""
    xs, ys, hs = [], [], []
    col = f"{metric}_ci95"
    if col not in df.columns:
        return xs, ys, hs
    for est, level, value, half in zip(df["estimator"], df["true_mi"], df[metric], df[col]):
        value, half = float_or_nan(value), float_or_nan(half)
        if est in order and level in levels and np.isfinite(value) and np.isfinite(half):
            xs.append(bar_centre(levels.index(level), order.index(est), len(order), width))
            ys.append(value)
            hs.append(half)
    return xs, ys, hs


def plot_metric_bars(samples, path, title: str = "", *, aggregated: bool = False, order=None,
                     metadata: dict | None = None):
    """Bias / variance / MSE per estimator (hue, fixed colours) and true-MI level (x): three
    panels, each on the scale :func:`metric_scale` picks (log / symlog when an outlier would flatten
    the rest; the axis label says so).  Returns the Figure.

    Parameters
    ----------
    samples : per-seed rows (:func:`mibench.analysis.leaderboard.per_seed_rows`): each bar is the
        mean over seeds, its error bar the 95% t-interval (none with one seed), an estimator that
        diverged in a seed is marked; or, with ``aggregated``, leaderboard rows (one per estimator
        and level): each bar is the row's value, its error bar the row's ``<metric>_ci95``
        half-width where there is one, the seed count from ``n_seeds``.
    path : the PNG written (:func:`save_figure`).
    title : the figure's title; the seed count is appended.
    aggregated : ``samples`` are leaderboard rows.
    order : the estimators in the order drawn (default: by mean MSE, then name).
    metadata : PNG metadata (:func:`save_figure`).
    """
    import pandas as pd
    from matplotlib.transforms import blended_transform_factory

    sns = _seaborn()
    df = pd.DataFrame(samples)
    if order is None:
        order = sorted(df["estimator"].unique(), key=lambda e: (df.loc[df.estimator == e, "mse"].mean(), e))
    order = list(order)
    levels = sorted(df["true_mi"].unique())
    df = df.assign(level=df["true_mi"].map(lambda v: f"{v:g}"))
    eb = None if aggregated else _errorbar(df)
    marks = diverged_bars(df, order, levels)

    with _style(seaborn=True):
        fig = figure(figsize=(15, 4.6), dpi=110)
        axes = fig.subplots(1, 3)
        for ax, metric in zip(axes, ("bias", "variance", "mse")):
            sns.barplot(data=df, x="level", y=metric, hue="estimator", hue_order=order,
                        order=[f"{v:g}" for v in levels], errorbar=eb, capsize=0.1 if eb else 0,
                        err_kws={"linewidth": 1}, ax=ax, palette=palette(order), saturation=1)
            if aggregated:
                xs, ys, hs = interval_bars(df, metric, order, levels)
                if xs:
                    ax.errorbar(xs, ys, yerr=hs, fmt="none", ecolor=".26", elinewidth=1, capsize=2)
            ax.set_xlabel("true MI (bits)")
            ax.set_ylabel(_apply_scale(ax, df[metric], metric, METRIC_LABELS[metric]))
            ax.set_title(metric if metric != "mse" else "MSE")
            if metric == "bias":
                ax.axhline(0, color="black", lw=0.8)
            for x, est, _, _ in marks:          # where an estimator diverged: ✕ at the panel's foot
                ax.plot([x], [0.03], transform=blended_transform_factory(ax.transData, ax.transAxes), marker="X",
                        ms=9, color=estimator_color(est), mec="black", mew=0.7, ls="none", clip_on=False,
                        zorder=5, label="_diverged")
            if ax is not axes[-1] and ax.get_legend() is not None:
                ax.get_legend().remove()
        axes[-1].legend(title="estimator", fontsize=8, title_fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1))
        if marks:
            fig.text(0.99, 0.01, "✕ = diverged (non-finite estimate) in "
                     + ", ".join(f"{e} at {lv:g} bits ({k} seed{'s' if k > 1 else ''})" for _, e, lv, k in marks),
                     ha="right", va="bottom", fontsize=8)
        note = _n_seeds_note(df, aggregated=aggregated)
        fig.suptitle((title or "bias, variance and MSE per estimator") + f"  ({note})", fontsize=11)
        fig.tight_layout(rect=(0, 0.05 if marks else 0, 1, 1))
        save_figure(fig, path, metadata)
    return fig


def plot_sweep(samples, axis: str, path, title: str = "", style: str | None = None):
    """MSE and bias (rows) against a sweep axis (x), one column per true-MI level, hue = estimator."""
    import pandas as pd

    sns = _seaborn()
    df = pd.DataFrame(samples)
    levels = sorted(df["true_mi"].unique())[:6]
    categorical = axis == "critic" or not pd.api.types.is_numeric_dtype(df[axis])
    order = ordered(sorted(df["estimator"].unique()))
    colors = palette(order)
    by = [axis] + ([style] if style else [])
    eb = _errorbar(df, by)
    with _style(seaborn=True):
        fig = figure(figsize=(4.2 * len(levels) + 1.8, 7.2), dpi=110)
        axes = fig.subplots(2, len(levels), squeeze=False)
        for j, level in enumerate(levels):
            sub = df[df["true_mi"] == level]
            for i, metric in enumerate(("mse", "bias")):
                ax = axes[i, j]
                if categorical:
                    sns.barplot(data=sub, x=axis, y=metric, hue="estimator", hue_order=order, errorbar=eb, ax=ax,
                                palette=colors, capsize=0.1 if eb else 0, saturation=1)
                else:
                    sns.lineplot(data=sub, x=axis, y=metric, hue="estimator", hue_order=order, style=style,
                                 errorbar=eb, marker="o", ax=ax, palette=colors, err_style="bars")
                    vals = sorted(sub[axis].dropna().unique())
                    if len(vals) > 2 and vals[0] > 0 and vals[-1] / vals[0] >= 20:
                        ax.set_xscale("log")
                label = METRIC_LABELS[metric]
                if metric_scale(sub[metric], metric)[0] != "linear":
                    label = _apply_scale(ax, sub[metric], metric, label)
                if metric == "bias":
                    ax.axhline(0, color="black", lw=0.8)
                ax.set_xlabel(SWEEP_AXES.get(axis, axis))
                ax.set_ylabel(label)
                ax.set_title(f"true MI = {level:g} bits")
                if ax.get_legend() is not None and not (i == 0 and j == len(levels) - 1):
                    ax.get_legend().remove()
        leg_ax = axes[0, -1]
        if leg_ax.get_legend() is not None:
            leg_ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.suptitle((title or f"estimation error vs {SWEEP_AXES.get(axis, axis)}") + f"  ({_n_seeds_note(df, by)})",
                     fontsize=11)
        fig.tight_layout()
        save_figure(fig, path)
    return fig


def sweep_axes(df) -> list[str]:
    """The sweep axes that vary in ``df`` (per-seed rows of one task); dr is dropped when it is a
    function of ds (Gaussian: ds = dr = dim)."""
    axes = [a for a in SWEEP_AXES if a in df.columns and df[a].nunique(dropna=True) > 1]
    if "ds" in axes and "dr" in axes and df.groupby("ds")["dr"].nunique().max() == 1:
        axes.remove("dr")
    return axes


def plot_sample_run(path, rows: list[dict], title: str = "") -> Path:
    """A sample-protocol run: estimate (bits) against the true MI, one marker per seed, the mean per
    level joined, the true MI as a dashed diagonal; an estimator whose every estimate failed is
    listed in the legend."""
    names = list(dict.fromkeys(r["estimator"] for r in rows))
    levels = sorted({r["true_mi"] for r in rows})
    with _style():
        fig = figure(figsize=(6.4, 4.4))
        ax = fig.add_subplot(1, 1, 1)
        if levels:
            lo, hi = 0.0, max(levels) * 1.15 + 0.5
            ax.plot([lo, hi], [lo, hi], color=TRUE_MI_COLOR, lw=1, ls="--", label="true MI")
        for name in names:
            color = estimator_color(name)
            pts = [(r["true_mi"], r["estimate"]) for r in rows if r["estimator"] == name and r["status"] == "ok"]
            if pts:
                a = np.array(pts)
                ax.scatter(a[:, 0], a[:, 1], s=14, alpha=0.6, color=color)
                m = np.array([(lv, a[a[:, 0] == lv, 1].mean()) for lv in levels if (a[:, 0] == lv).any()])
                ax.plot(m[:, 0], m[:, 1], marker="o", color=color, label=name)
            fails = sum(1 for r in rows if r["estimator"] == name and r["status"] != "ok")
            if fails and not pts:
                ax.plot([], [], color=color, label=f"{name} (all {fails} failed)")
        ax.set_xlabel("true MI (bits)")
        ax.set_ylabel("estimate (bits)")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        return save_figure(fig, path)
