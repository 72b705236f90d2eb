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
