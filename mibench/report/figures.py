"""The report's figures, per setup: the run directories' own PNGs (staircase / estimates /
metrics, as ``mibench run`` / ``mibench plot`` wrote them; rendered with :func:`mibench.plots.plot_results`
when a run has none), and a bias / variance / MSE figure drawn from the leaderboard rows with
their 95% intervals.  Everything is copied or written under ``SITE/figures/<setup>/``.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: run-directory figures, in the order shown, with what they show
RUN_FIGURES = {
    "staircase.png": "estimates vs training step over the true-MI staircase",
    "estimates.png": "each seed's estimate vs the true MI",
    "metrics.png": "bias, variance and MSE per estimator and level",
}


@dataclass
class Figure:
    src: str          # path relative to the site directory (forward slashes)
    caption: str
    kind: str         # "metrics" | "run"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")[:100]


def run_figures(setup, site: Path) -> list[Figure]:
    """Copy each run directory's figures of ``setup`` into the site (rendering them when a run
    has none but has the estimates to draw them from)."""
    out_dir = site / "figures" / setup.slug
    figs = []
    for run in setup.runs:
        with tempfile.TemporaryDirectory(prefix="mibench-report-") as tmp:
            src_dir = run
            found = [f for f in RUN_FIGURES if (run / f).is_file()]
            if not found and _render(run, Path(tmp)):
                src_dir = Path(tmp)
                found = [f for f in RUN_FIGURES if (src_dir / f).is_file()]
            for f in found:
                out_dir.mkdir(parents=True, exist_ok=True)
                dest = out_dir / f"{_safe(run.name)}__{f}"
                shutil.copyfile(src_dir / f, dest)
                figs.append(Figure(src=dest.relative_to(site).as_posix(), caption=f"{run.name}: {RUN_FIGURES[f]}",
                                   kind="run"))
    return figs


def _render(run: Path, out: Path) -> bool:
    """Draw the figures of a run directory that has none into ``out`` (False when it cannot)."""
    if not (run / "config.json").is_file():
        return False
    from ..figures import plot_results

    try:
        plot_results(run, out)
    except Exception:  # a figure that cannot be drawn is left out; the page is still written
        return False
    return True


def metrics_figure(setup, site: Path) -> Figure:
    """Bias / variance / MSE per estimator (bars, fixed colours) and true-MI level, with the
    leaderboard's 95% t-interval half-widths as error bars where there are several seeds."""
    import numpy as np

    from ..plots import estimator_color, metric_scale

    rows = setup.rows
    names = list(dict.fromkeys(r["estimator"] for r in rows))           # the board's order: by rank
    levels = sorted({float(r["true_mi"]) for r in rows})
    by = {(r["estimator"], float(r["true_mi"])): r for r in rows}
    fig = _figure(figsize=(13, 4.2), dpi=100)
    axes = fig.subplots(1, 3)
    width = 0.8 / max(1, len(names))
    x = np.arange(len(levels))
    for ax, metric, title in zip(axes, ("bias", "variance", "mse"), ("bias (bits)", "variance (bits²)", "MSE (bits²)")):
        values = []
        for i, name in enumerate(names):
            v = np.array([_num(by.get((name, lv), {}).get(metric)) for lv in levels])
            ci = np.array([_num(by.get((name, lv), {}).get(f"{metric}_ci95")) for lv in levels])
            values += list(v[np.isfinite(v)])
            err = np.where(np.isfinite(ci), ci, 0.0) if np.isfinite(ci).any() else None
            ax.bar(x - 0.4 + width * (i + 0.5), np.where(np.isfinite(v), v, 0.0), width, yerr=err, capsize=2,
                   color=estimator_color(name), label=name, error_kw={"linewidth": 0.8})
        scale, kw = metric_scale(values, metric)
        if scale != "linear":
            ax.set_yscale(scale, **kw)
            title = title.replace(")", f", {scale} scale)")
        ax.set_xticks(x, [f"{lv:g}" for lv in levels])
        ax.set_xlabel("true MI (bits)")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if metric == "bias":
            ax.axhline(0, color="black", lw=0.8)
    axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), title="estimator", title_fontsize=8)
    seeds = sorted({int(r.get("n_seeds") or 0) for r in rows})
    note = f"{seeds[-1]} seed{'s' if seeds[-1] != 1 else ''}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]} seeds"
    fig.suptitle(f"{setup.label}  ({note}{'; error bars: 95% t-interval' if seeds[-1] > 1 else ''})", fontsize=10)
    fig.tight_layout()
    out = site / "figures" / setup.slug / "metrics.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", metadata={"Software": None})
    return Figure(src=out.relative_to(site).as_posix(), kind="metrics",
                  caption="bias, variance and MSE per estimator and true-MI level (from the table)")


def _num(v) -> float:
    try:
        return float(v) if v is not None and v != "" else float("nan")
    except (TypeError, ValueError):
        return float("nan")


def _figure(**kwargs):
    """A Figure on its own Agg canvas (no pyplot: the caller's backend and style are untouched)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(**kwargs)
    FigureCanvasAgg(fig)
    return fig
