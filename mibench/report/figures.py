"""The report's figures, per setup: the run directories' own PNGs (staircase / estimates /
metrics, as ``mibench run`` / ``mibench plot`` wrote them; rendered with
:func:`mibench.analysis.run_figures.plot_results` when a run has none), and a bias / variance / MSE
figure drawn from the leaderboard rows with their 95% intervals (:func:`mibench.plots.plot_metric_bars`).
Everything is copied or written under ``SITE/figures/<setup>/``.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mibench.records.io import slug

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
                dest = out_dir / f"{slug(run.name, allowed='A-Za-z0-9_.-', max_len=100)}__{f}"
                shutil.copyfile(src_dir / f, dest)
                figs.append(Figure(src=dest.relative_to(site).as_posix(), caption=f"{run.name}: {RUN_FIGURES[f]}",
                                   kind="run"))
    return figs


def _render(run: Path, out: Path) -> bool:
    """Draw the figures of a run directory that has none into ``out`` (False when it cannot)."""
    if not (run / "config.json").is_file():
        return False
    from mibench.analysis.run_figures import plot_results
    from mibench.errors import UnreadableInput

    try:
        plot_results(run, out)
    except UnreadableInput:
        raise       # a damaged record is refused (exit 4), as the leaderboard and plot refuse it
    except Exception:  # a figure that cannot be drawn is left out; the page is still written
        return False
    return True


def metrics_figure(setup, site: Path) -> Figure:
    """Bias / variance / MSE per estimator (bars, fixed colours, the board's order) and true-MI
    level, with the leaderboard's 95% t-interval half-widths as error bars where there are several
    seeds (:func:`mibench.plots.plot_metric_bars` on the setup's leaderboard rows)."""
    from mibench.plots import plot_metric_bars

    out = site / "figures" / setup.slug / "metrics.png"
    order = list(dict.fromkeys(r["estimator"] for r in setup.rows))          # the board's order: by rank
    plot_metric_bars(setup.rows, out, title=setup.label, aggregated=True, order=order,
                     metadata={"Software": None})
    return Figure(src=out.relative_to(site).as_posix(), kind="metrics",
                  caption="bias, variance and MSE per estimator and true-MI level (from the table)")
