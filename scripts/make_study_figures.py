"""One compact figure per reproduced study, from the study's leaderboard CSV.

    python scripts/make_study_figures.py [STUDY ...]     (default: every study with a leaderboard)

Reads the study's sweep (``results/sweeps/studies-<study>``) and writes
``results/studies/<study>/tail.csv``: per setup x estimator, the mean estimate, variance and MSE
over the **last 50% of the steps** (the converged part of these short runs; the leaderboard CSV
next to it averages over all steps, the paper's convention).  Then ``results/studies/<study>.png``:
top row the last-50% mean estimate per estimator against the study's axis with the true MI as a
black line, bottom row the last-50% MSE (bits^2); one column per task.
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parents[1] / "results" / "studies"

#: study -> (x axis, kind, x label)
STUDIES = {
    "encoders": ("transform", "bar", "encoder g applied to X and Y"),
    "estimators": ("estimator", "bar", "estimator"),
    "nuisance": ("nuisance", "line", "nuisance strength η"),
    "ds": ("ds", "line", "number of information sources ds"),
    "critics": ("critic", "bar", "critic"),
    "depth": ("layers", "line", "critic depth (hidden layers)"),
    "dr": ("dr", "line", "representation dimension dr"),
    "encoders_long": ("transform", "bar", "encoder g applied to X and Y"),
    "estimators_long": ("estimator", "bar", "estimator"),
    "nuisance_long": ("nuisance", "line", "nuisance strength η"),
}
TRANSFORM_ORDER = ["none", "realnvp", "maf", "irevnet"]


def params(text) -> dict:
    return dict(kv.split("=", 1) for kv in str(text if isinstance(text, str) else "").split(";") if "=" in kv)


def tail_table(sweep_dir, fraction: float = 0.5) -> pd.DataFrame:
    """Per run x estimator x level: mean estimate / bias / variance / MSE over the last ``fraction``
    of each level's steps (the converged part of a short run), averaged over seeds."""
    sys.path.insert(0, str(HERE.parents[1]))
    from mibench.analysis.leaderboard import collect_unique
    from mibench.protocols import protocol_of

    rows = []
    for run in collect_unique([Path(sweep_dir)]).runs:
        est = pd.read_csv(run.path / "estimates.csv")
        setup = protocol_of(run.config).setup(run.config)
        for (name, level), g in est.groupby(["estimator", "true_mi"], sort=False):
            g = g.sort_values("step")
            w = g["estimate"].to_numpy(float)[int(len(g) * (1 - fraction)):]
            w = w[np.isfinite(w)]
            rows.append({**setup, "estimator": name, "true_mi": float(level), "seed": run.config["config"]["seed"],
                         "mean_estimate": w.mean() if w.size else np.nan, "variance": w.var() if w.size else np.nan,
                         "mse": float(np.mean((w - level) ** 2)) if w.size else np.nan, "window_steps": int(w.size)})
    df = pd.DataFrame(rows)
    keys = [c for c in df.columns if c not in ("seed", "mean_estimate", "variance", "mse", "window_steps")]
    out = df.groupby(keys, sort=False, dropna=False).agg(
        mean_estimate=("mean_estimate", "mean"), variance=("variance", "mean"), mse=("mse", "mean"),
        window_steps=("window_steps", "min"), n_seeds=("seed", "nunique")).reset_index()
    out["bias"] = out["mean_estimate"] - out["true_mi"]
    return out


def load(study: str, which: str = "tail") -> pd.DataFrame:
    df = pd.read_csv(HERE / study / ("tail.csv" if which == "tail" else "leaderboard.csv"))
    p = df["task_params"].map(params)
    df["transform"] = p.map(lambda d: d.get("transform", "none"))
    df["nuisance"] = p.map(lambda d: float(d.get("nuisance", 0.0)))
    return df


def figure(study: str) -> Path:
    x, kind, xlabel = STUDIES[study]
    df = load(study)
    tasks = list(dict.fromkeys(df["task"]))
    ests = sorted(df["estimator"].unique())
    # one fixed colour per estimator, as in mibench's figures
    from mibench.plots import estimator_color

    fig, axes = plt.subplots(2, len(tasks), figsize=(4.6 * len(tasks) + 1.5, 6.6), dpi=110, squeeze=False)
    for j, task in enumerate(tasks):
        sub = df[df["task"] == task]
        if x == "transform":
            xs = [t for t in TRANSFORM_ORDER if t in set(sub[x])]
        elif x == "estimator":
            xs = ests
        else:
            xs = sorted(sub[x].unique(), key=lambda v: (isinstance(v, str), v))
        for i, metric in enumerate(("mean_estimate", "mse")):
            ax = axes[i, j]
            if kind == "bar" and x != "estimator":
                width = 0.8 / len(ests)
                for k, e in enumerate(ests):
                    s = sub[sub["estimator"] == e].set_index(x).reindex(xs)
                    offset = (k - (len(ests) - 1) / 2) * width
                    ax.bar(np.arange(len(xs)) + offset, s[metric], width, color=estimator_color(e), label=e)
                ax.set_xticks(np.arange(len(xs)))
                ax.set_xticklabels(xs, fontsize=8)
            elif x == "estimator":
                s = sub.set_index("estimator").reindex(xs)
                ax.bar(np.arange(len(xs)), s[metric], color=[estimator_color(e) for e in xs])
                ax.set_xticks(np.arange(len(xs)))
                ax.set_xticklabels(xs, fontsize=8, rotation=30)
            else:
                for k, e in enumerate(ests):
                    s = sub[sub["estimator"] == e].sort_values(x)
                    ax.plot(s[x], s[metric], marker="o", color=estimator_color(e), label=e)
                if x in ("dr",) or (x == "ds" and sub[x].max() / max(sub[x].min(), 1) >= 20):
                    ax.set_xscale("log")
            if metric == "mean_estimate":
                truth = sub["true_mi"].unique()
                if kind == "line" and len(truth) > 1 and sub.groupby(x)["true_mi"].nunique().max() == 1:
                    tl = sub.groupby(x)["true_mi"].first().sort_index()   # truth varies with x (ds study: MI = ds)
                    ax.plot(tl.index, tl.values, color="black", lw=1.3, label="true MI")
                else:
                    for t in truth:
                        ax.axhline(t, color="black", lw=1.3)
                ax.set_title(task, fontsize=10)
                ax.set_ylabel("mean estimate (bits)")
                lo = min(0.0, float(np.nanmin(sub[metric])))
                ax.set_ylim(lo - 0.05, max(float(np.nanmax(truth)) * 1.35, float(np.nanmax(sub[metric])) * 1.05))
            else:
                ax.set_ylabel("MSE (bits²)")
                ax.set_ylim(bottom=0)
            ax.set_xlabel(xlabel)
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="center right", fontsize=8, title="estimator")
    steps = sorted(df["steps"].unique())
    seeds = sorted(df["n_seeds"].unique())
    fig.suptitle(f"{study}: true MI (black) vs estimates, last 50% of steps\n"
                 f"joint critic unless varied · {'/'.join(map(str, steps))} steps · "
                 f"{'/'.join(map(str, seeds))} seed(s) · CPU", fontsize=10)
    fig.tight_layout(rect=(0, 0, (0.88 if len(tasks) > 1 else 0.8) if handles else 1, 0.93))
    out = HERE / f"{study}.png"
    fig.savefig(out)
    plt.close(fig)
    return out


def main(argv) -> int:
    studies = argv or [s for s in STUDIES if (HERE / s / "leaderboard.csv").is_file()]
    for s in studies:
        sweep = HERE.parents[1] / "results" / "sweeps" / f"studies-{s}"
        if sweep.is_dir():
            tail_table(sweep).to_csv(HERE / s / "tail.csv", index=False, float_format="%.5g")
        print(figure(s))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
