"""The reference table's views: every estimator on every standard task, ranked per data family, drawn as
an estimator x task heatmap of the error, its outliers and how often each status was right.

Input is the leaderboard of the reference sweep (``mibench sweep --preset reference``; any leaderboard of
sample runs works).  A task belongs to one family by what makes it hard (:func:`family_of`): Gaussian;
heavy tails; transformed margins; spirals and other non-linear maps; images; text; and, besides its own
family, to "25-50 dimensions" when a side has at least 25.  docs/reference-table.md explains the
families, the scores and the rules below.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

GAUSSIAN, HEAVY, MARGINS, NONLINEAR, HIGH_DIM, IMAGES, TEXT = (
    "Gaussian", "heavy tails", "transformed margins", "spirals and other non-linear maps", "25-50 dimensions",
    "images", "text")
FAMILIES = (GAUSSIAN, HEAVY, MARGINS, NONLINEAR, HIGH_DIM, IMAGES, TEXT)
#: an estimator whose error on a family is above this multiple of the family's median error is an outlier
OUTLIER_FACTOR = 3.0
#: an estimate is "right" within max(this many bits, ``RIGHT_RELATIVE`` of the truth)
RIGHT_BITS, RIGHT_RELATIVE = 0.1, 0.1
#: statuses that claim the number can be used (the others warn about it)
TRUSTING = ("", "ok", "converged", "not_assessed")     # and any status this table has not seen warns


def family_of(task: str) -> tuple[str, ...]:
    """The families of a task (its own, plus ``25-50 dimensions`` where a side has at least 25)."""
    own = _own_family(task)
    dims = re.search(r"-(\d+)-(\d+)-", task)
    wide = bool(dims) and int(dims.group(1)) >= 25 and task.split("-")[0] not in ("mutinfo",)
    return (own, HIGH_DIM) if wide else (own,)


def _own_family(task: str) -> str:
    if task.startswith(("mutinfo-", "vision")):
        return IMAGES
    if task.startswith(("text", "mixed")):
        return TEXT
    if task.startswith(("spiral", "swissroll")) or "additive" in task:
        return NONLINEAR
    if "student" in task:
        return HEAVY
    if task.startswith(("normal_cdf-", "half_cube-", "wiggly-")) or "bimodal" in task:
        return MARGINS
    return GAUSSIAN


def cell_label(row) -> str:
    """A short column label for one task (and level) of the table."""
    label = str(row["task"])
    params = str(row.get("task_params") or "")
    if "encoder=all-MiniLM-L6-v2" in params:
        label += " (off-the-shelf)"
    elif "encoder=" in params:
        label += " (fine-tuned)"
    return label


def cells(board):
    """One row per (task, parameters, level, estimator) with the seed-mean estimate, its error in bits,
    whether every seed failed, the families and the truth; from a leaderboard DataFrame."""
    import pandas as pd

    rows = []
    for _, r in board.iterrows():
        truth, mean = float(r["true_mi"]), float(r["mean_estimate"])
        rows.append({"task": r["task"], "task_params": r.get("task_params") or "", "true_mi": truth,
                     "estimator": r["estimator"], "kind": r.get("kind", ""), "bound": r.get("bound", ""),
                     "bound_check": r.get("bound_check", ""), "mean_estimate": mean,
                     "error": mean - truth if math.isfinite(mean) else float("nan"),
                     "n_seeds": int(r.get("n_seeds") or 0), "failed_seeds": int(r.get("diverged_seeds") or 0),
                     "seconds": float(r.get("seconds", float("nan"))), "label": cell_label(r),
                     "families": family_of(str(r["task"]))})
    return pd.DataFrame(rows)


def family_table(board):
    """Per family and estimator: cells, cells with a failed seed, mean absolute error of the seed-mean
    estimates (bits, over the cells with a finite one), mean seconds per estimate, and the rank by the
    error among the estimators with every cell of the family and no failed cell; then those missing cells
    (a mean over fewer tasks is not comparable: a missing hard task flatters it), then those with
    failures."""
    import pandas as pd

    c = cells(board)
    out = []
    for family in FAMILIES:
        part = c[c["families"].apply(lambda fs, f=family: f in fs)]
        if part.empty:
            continue
        for est, g in part.groupby("estimator", sort=False):
            finite = g["error"].dropna()
            out.append({"family": family, "estimator": est, "kind": g["kind"].iloc[0], "bound": g["bound"].iloc[0],
                        "cells": len(g), "failed_cells": int((g["failed_seeds"] > 0).sum()),
                        "mae_bits": float(finite.abs().mean()) if len(finite) else float("nan"),
                        "mean_bias_bits": float(finite.mean()) if len(finite) else float("nan"),
                        "bound_crossed": int((g["bound_check"].isin(["above truth", "below truth"])).sum()),
                        "seconds": float(np.nanmean(g["seconds"])) if g["seconds"].notna().any() else float("nan")})
    table = pd.DataFrame(out)
    if table.empty:
        return table
    table["rank"] = 0
    family_cells = {f: len(c[c["families"].apply(lambda fs, f=f: f in fs)].drop_duplicates(
        ["task", "task_params", "true_mi"])) for f in table["family"].unique()}
    table["family_cells"] = table["family"].map(family_cells)
    for family, g in table.groupby("family", sort=False):
        key = g.assign(bad=(g["failed_cells"] > 0) | g["mae_bits"].isna(),
                       missing=g["cells"] < g["family_cells"]).sort_values(
            ["bad", "missing", "mae_bits", "estimator"], kind="mergesort")
        table.loc[key.index, "rank"] = range(1, len(key) + 1)
    return table.sort_values(["family", "rank"], key=lambda s: s.map(FAMILIES.index) if s.name == "family" else s,
                             kind="mergesort").reset_index(drop=True)


def leaders(table, family: str, k: int = 2):
    """The first ``k`` rows of ``family`` in :func:`family_table`."""
    return table[table["family"] == family].sort_values("rank").head(k)


def outliers(board, factor: float = OUTLIER_FACTOR):
    """Rows to fix or explain: an estimator whose error on a family exceeds ``factor`` x the family's
    median error (``far from its peers``), one with failed seeds (``failed``), and a bound that crossed
    the truth beyond its 95% interval (``lower bound above truth`` / ``upper bound below truth``)."""
    import pandas as pd

    table = family_table(board)
    out = []
    for family, g in table.groupby("family", sort=False):
        median = float(np.nanmedian(g["mae_bits"])) if g["mae_bits"].notna().any() else float("nan")
        for _, r in g.iterrows():
            if math.isfinite(median) and r["mae_bits"] > factor * max(median, 0.01):
                out.append({"family": family, "estimator": r["estimator"], "what": "far from its peers",
                            "detail": f"error {r['mae_bits']:.2f} bits, family median {median:.2f}"})
            if r["failed_cells"]:
                out.append({"family": family, "estimator": r["estimator"], "what": "failed",
                            "detail": f"{r['failed_cells']} of {r['cells']} cells with a failed seed"})
    c = cells(board)
    for _, r in c[c["bound_check"].isin(["above truth", "below truth"])].iterrows():
        what = "lower bound above truth" if r["bound_check"] == "above truth" else "upper bound below truth"
        out.append({"family": r["families"][0], "estimator": r["estimator"], "what": what,
                    "detail": f"{r['label']} at {r['true_mi']:.3g} bits: {r['mean_estimate']:.3f}"})
    return pd.DataFrame(out, columns=["family", "estimator", "what", "detail"])


def status_accuracy(rows, by: tuple = ()):
    """How often each status was right, from per-seed rows (``status``, ``mi_status``, ``estimate`` and
    ``true_mi`` in bits): a trusting status (:data:`TRUSTING`) is right when the estimate is within
    max(:data:`RIGHT_BITS`, :data:`RIGHT_RELATIVE` x truth) of the truth; a warning status (any other, the
    plausibility rule's included) is right when it is not.  Seeds without an estimate (an error, a timeout, a
    non-finite value) have no status to judge and are left out.  ``by``: row fields to split the table by
    (e.g. ``("estimator",)``: how far each estimator's own ``converged`` can be trusted)."""
    import pandas as pd

    out = {}
    for r in rows:
        if r.get("status") not in ("ok", "implausible"):
            continue
        status = str(r.get("mi_status") or "") or "ok"
        est, truth = float(r.get("estimate", float("nan"))), float(r["true_mi"])
        close = math.isfinite(est) and abs(est - truth) <= max(RIGHT_BITS, RIGHT_RELATIVE * truth)
        trusting = status in TRUSTING
        right = close if trusting else not close
        key = (*(str(r.get(f, "")) for f in by), status)
        s = out.setdefault(key, {**dict(zip(by, key)), "status": status, "claims": "usable" if trusting else "warns",
                                 "estimates": 0, "right": 0})
        s["estimates"] += 1
        s["right"] += int(right)
    table = pd.DataFrame(list(out.values()), columns=[*by, "status", "claims", "estimates", "right"])
    table["share_right"] = table["right"] / table["estimates"].clip(lower=1)
    return table.sort_values([*by, "claims", "estimates"], ascending=[True] * len(by) + [False, False],
                             kind="mergesort").reset_index(drop=True)


def heatmap(board, path, clip_bits: float = 2.0) -> Path:
    """Estimator (rows) x task and level (columns) of the seed-mean error in bits, the colour clipped at
    +-``clip_bits``; a cell with a failed seed is grey with an x (BMI's figure, with the error in place of
    the estimate).  Columns are grouped by family; rows ordered by the mean absolute error."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    c = cells(board)
    c["column"] = c.apply(lambda r: f"{r['label']} @{r['true_mi']:.2f}", axis=1)
    c["family"] = c["families"].apply(lambda fs: fs[0])
    order = c.drop_duplicates("column").assign(f=lambda d: d["family"].map(FAMILIES.index)).sort_values(
        ["f", "task", "true_mi"], kind="mergesort")["column"].tolist()
    est_order = c.groupby("estimator")["error"].apply(lambda e: e.abs().mean()).sort_values().index.tolist()
    grid = np.full((len(est_order), len(order)), np.nan)
    failed = np.zeros_like(grid, dtype=bool)
    for _, r in c.iterrows():
        i, j = est_order.index(r["estimator"]), order.index(r["column"])
        grid[i, j] = r["error"]
        failed[i, j] = r["failed_seeds"] > 0 or not math.isfinite(r["error"])
    fig, ax = plt.subplots(figsize=(max(8, 0.22 * len(order) + 3), max(5, 0.28 * len(est_order) + 2)))
    cmap = plt.get_cmap("RdBu_r").with_extremes(bad="white")     # white: not run
    shown = np.ma.masked_where(np.isnan(grid) & ~failed, np.clip(np.nan_to_num(grid), -clip_bits, clip_bits))
    im = ax.imshow(shown, cmap=cmap, vmin=-clip_bits, vmax=clip_bits, aspect="auto", interpolation="nearest")
    for i, j in zip(*np.nonzero(failed)):       # a failed seed: grey, crossed
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, color="#bdbdbd"))
        ax.text(j, i, "x", ha="center", va="center", fontsize=6, color="#444")
    ax.set_yticks(range(len(est_order)), est_order, fontsize=7)
    ax.set_xticks(range(len(order)), order, rotation=90, fontsize=6)
    fams = [c.loc[c["column"] == col, "family"].iloc[0] for col in order]
    starts = [j for j in range(len(fams)) if j == 0 or fams[j] != fams[j - 1]]
    for j in starts[1:]:
        ax.axvline(j - 0.5, color="k", lw=0.8)
    for j, end in zip(starts, starts[1:] + [len(fams)]):      # each family named above its columns
        ax.text((j + end - 1) / 2, -0.7, fams[j], ha="center", va="bottom", fontsize=7)
    fig.colorbar(im, ax=ax, fraction=0.02, pad=0.01, label=f"mean estimate - truth (bits), clipped at +-{clip_bits:g}")
    ax.set_title("Reference table: error of each estimator on each task (grey x: a failed seed; white: not run)",
                 fontsize=9, pad=14)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130, bbox_inches="tight")      # the long task names below the axes, whole
    plt.close(fig)
    return path


def family_markdown(table, k: int = 2) -> str:
    """The per-family ranking as Markdown: every estimator's rank, error, failures and seconds."""
    lines = []
    for family in FAMILIES:
        g = table[table["family"] == family]
        if g.empty:
            continue
        lines += [f"### {family}", "", "| rank | estimator | kind | bound | cells | failed | MAE (bits) | bias (bits) "
                  "| s / estimate |", "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for _, r in g.sort_values("rank").iterrows():
            lines.append(f"| {r['rank']} | {r['estimator']} | {r['kind']} | {r['bound']} | "
                         f"{r['cells']} of {r['family_cells']} | "
                         f"{r['failed_cells']} | {_f(r['mae_bits'])} | {_f(r['mean_bias_bits'])} | "
                         f"{_f(r['seconds'], 1)} |")
        lines.append("")
    return "\n".join(lines)


def _f(v, digits: int = 3) -> str:
    return f"{v:.{digits}f}" if isinstance(v, float) and math.isfinite(v) else "-"


def estimate_rows(runs) -> list[dict]:
    """Every sample run's per-seed rows as recorded (``status``, ``mi_status``, ``estimate``, ``true_mi``,
    bits), read through the checksums; streaming runs have none."""
    from mibench.records import read_sample_estimates, recorded_file

    out = []
    for r in runs:
        if r.config.get("protocol") == "sample":
            out += read_sample_estimates(recorded_file(r.path, r.config, "sample_estimates.csv"))
    return out


def write_views(board, out, rows=None, prefix: str = "") -> list[Path]:
    """The reference views next to a leaderboard: ``families.csv`` / ``.md``, ``outliers.csv``,
    ``heatmap.png`` and, with per-seed ``rows``, ``statuses.csv`` and ``statuses_by_estimator.csv``; each
    name after ``prefix`` (so that the views of two leaderboards in one directory do not overwrite each
    other)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = family_table(board)
    written = [out / f"{prefix}families.csv", out / f"{prefix}families.md", out / f"{prefix}outliers.csv"]
    table.to_csv(written[0], index=False, float_format="%.6g")
    written[1].write_text(family_markdown(table))
    outliers(board).to_csv(written[2], index=False)
    written.append(heatmap(board, out / f"{prefix}heatmap.png"))
    if rows is not None:
        status_accuracy(rows).to_csv(out / f"{prefix}statuses.csv", index=False, float_format="%.4g")
        status_accuracy(rows, by=("estimator",)).to_csv(out / f"{prefix}statuses_by_estimator.csv", index=False,
                                                        float_format="%.4g")
        written += [out / f"{prefix}statuses.csv", out / f"{prefix}statuses_by_estimator.csv"]
    return written
