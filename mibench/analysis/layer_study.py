"""The ResNet layer study (Lee & Rhee 2024 §5.7, Figure 6): estimated MI per layer for each estimator.

Input: a sweep (or runs) of the ``resnet-layers`` preset: vision runs with ``transform=resnet`` and
one ``layer`` each, plus optionally the raw canvas (no transform).  Output:

* ``resnet_layers.csv``: one row per (layer, estimator): feature shape / dimension, mean estimate,
  bias, variance, MSE (bits; last 50% of the steps, seeds averaged; ``mean_estimate_all`` over
  all steps), the truth (the DPI bound
  I(X; Y), ``truth_kind`` exact, checked or upper bound), the ResNet's source-decoding accuracy, and a
  held-out **linear-probe** accuracy of the source classes from that layer's features (how
  linearly readable the information is at that depth);
* ``resnet_layers.png``: estimated MI per layer (one line per estimator) against the truth, with
  the linear-probe accuracy underneath.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from mibench.errors import MibenchError

ORDER = ["raw", "stem", "layer1", "layer2", "layer3", "layer4", "pool"]


@torch.no_grad()
def _features(model, task, layers, n, seed):
    base = getattr(task, "base", task)
    g = torch.Generator(device=base.device).manual_seed(seed)
    shape = (base.layout[0], base.side, base.side)
    feats = {l: [] for l in layers}
    labels = []
    for start in range(0, n, 256):
        b = min(256, n - start)
        x, _, cx, _ = base.sample_with_classes(b, float(base.ds), g)
        imgs = x.reshape(b, *shape)
        for l in layers:
            f = imgs.reshape(b, -1) if l == "raw" else model.features(imgs, l).reshape(b, -1)
            feats[l].append(f.double())
        labels.append(cx)
    return {l: torch.cat(v) for l, v in feats.items()}, torch.cat(labels)


def linear_probe_accuracy(train_x, train_y, test_x, test_y, l2: float = 1e-3, iters: int = 200) -> float:
    """Held-out accuracy of one logistic regression per source (standardised features, L-BFGS with
    torch's default tolerances; the same fit as the class pools' decoder)."""
    from mibench.tasks.pools import fit_linear_decoder

    logits = fit_linear_decoder(_np(train_x), _np(train_y), l2=l2, max_iter=iters,
                                tolerance_grad=1e-7, tolerance_change=1e-9)
    pred = logits(_np(test_x)) > 0
    return float((pred == _np(test_y).astype(bool)).mean())


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def layer_probes(task, model, layers=ORDER, n_train: int = 2000, n_test: int = 2000) -> dict:
    """{layer: held-out linear-probe accuracy of the ds source classes} on fresh canvases."""
    tr, ytr = _features(model, task, layers, n_train, seed=101)
    te, yte = _features(model, task, layers, n_test, seed=202)
    return {l: linear_probe_accuracy(tr[l], ytr, te[l], yte) for l in layers}


def _window_stats(values: np.ndarray, level: float) -> dict:
    v = values[np.isfinite(values)]
    if not v.size:
        return {"mean_estimate": np.nan, "bias": np.nan, "variance": np.nan, "mse": np.nan}
    m = float(v.mean())
    return {"mean_estimate": m, "bias": m - level, "variance": float(v.var()), "mse": float(np.mean((v - level) ** 2))}


def layer_table(paths, probes: bool = True, n_probe: int = 2000, tail: float = 0.5):
    """Rows of the layer study from run / sweep directories (pandas DataFrame) and the ResNet record.

    Per (layer, estimator, true-MI level): mean estimate / bias / variance / MSE over the **last
    ``tail`` fraction** of the level's steps (the converged part of a short run), and
    ``mean_estimate_all`` over all of them (the leaderboard's window); averaged over seeds.
    """
    import pandas as pd

    from mibench.analysis.leaderboard import collect_unique

    col = collect_unique([Path(p) for p in paths])
    runs = [r for r in col.runs if r.config["config"]["task"] == "vision"]
    if not runs:
        raise MibenchError("no complete vision runs found for the layer study")
    rows, record, resnet_cfg = [], None, None
    for r in runs:
        ti = r.config.get("task_info", {})
        if ti.get("transform") not in (None, "resnet"):
            continue
        layer = ti.get("layer") or "raw"
        enc = ti.get("encoder") or {}
        if ti.get("transform") == "resnet":
            record, resnet_cfg = enc, r.config
        shape = enc.get("feature_shape") or [ti.get("dim_x")]
        est = pd.read_csv(r.path / "estimates.csv")
        for (name, level), g in est.groupby(["estimator", "true_mi"], sort=False):
            v = g.sort_values("step")["estimate"].to_numpy(float)
            rows.append({"layer": layer, "feature_shape": "x".join(map(str, shape)), "dim": ti.get("dim_x"),
                         "estimator": name, "true_mi": float(level), "truth_kind": ti.get("truth_kind", "exact"),
                         "seed": r.config["config"]["seed"], "steps": len(v),
                         **_window_stats(v[int(len(v) * (1 - tail)):], float(level)),
                         "mean_estimate_all": float(np.nanmean(v))})
    raw = pd.DataFrame(rows)
    keys = ["layer", "feature_shape", "dim", "estimator", "true_mi", "truth_kind", "steps"]
    df = raw.groupby(keys, sort=False).agg(
        mean_estimate=("mean_estimate", "mean"), bias=("bias", "mean"), variance=("variance", "mean"),
        mse=("mse", "mean"), mean_estimate_all=("mean_estimate_all", "mean"), n_seeds=("seed", "nunique")).reset_index()
    df["window"] = f"last {tail:.0%} of steps"
    df["layer"] = pd.Categorical(df["layer"], [l for l in ORDER if l in set(df["layer"])], ordered=True)
    df = df.sort_values(["layer", "estimator"]).reset_index(drop=True)
    if record is not None:
        acc = record.get("classifier_accuracy", {})
        df["resnet_source_accuracy"] = acc.get("source_accuracy")
        df["resnet_eval_decisions"] = acc.get("decisions")
    if probes and record is not None:
        from mibench.encoders.resnet import load_or_train
        from mibench.tasks import make_task

        params = {k: v for k, v in resnet_cfg["config"]["task_params"].items() if k not in ("transform", "layer")}
        task = make_task("vision", device="cpu", **params)
        tr = record["training"]
        model, _ = load_or_train(task, steps=tr.get("steps"), batch=tr.get("batch"), lr=tr.get("lr"),
                                 seed=tr.get("seed") or 0, width=_width(record))
        studied = set(df["layer"].astype(str))
        acc = layer_probes(task, model.eval(), [l for l in ORDER if l in studied], n_probe, n_probe)
        df["linear_probe_accuracy"] = df["layer"].astype(str).map(acc)
    return df, record


def _width(record) -> int | None:
    import re

    m = re.search(r"width (\d+)", str(record.get("architecture", "")))
    return int(m.group(1)) if m else None


def plot_layers(df, path, record=None, title: str | None = None):
    from mibench.plots import estimator_color, figure, save_figure

    layers = [l for l in ORDER if l in set(df["layer"].astype(str))]
    has_probe = "linear_probe_accuracy" in df.columns
    fig = figure(figsize=(8.5, 7 if has_probe else 4.8), dpi=110)    # no pyplot: caller's backend untouched
    axes = fig.subplots(2 if has_probe else 1, 1, sharex=True,
                        gridspec_kw={"height_ratios": [3, 1.2]} if has_probe else None)
    ax = axes[0] if has_probe else axes
    xs = np.arange(len(layers))
    for est, g in df.groupby("estimator", sort=True):
        g = g.set_index(g["layer"].astype(str)).reindex(layers)
        ax.plot(xs, g["mean_estimate"].to_numpy(float), marker="o", color=estimator_color(est), label=est)
    truth = float(df["true_mi"].iloc[0])
    exact = df["truth_kind"].isin(["exact", "checked"]).all()
    checked = (df["truth_kind"] == "checked").any()
    ax.axhline(truth, color="black", lw=1.4, ls="-" if exact else "--",
               label=f"true MI {truth:g} bits" + ("" if exact else " (DPI upper bound)")
               + (" (decoding checked on a sample)" if exact and checked else ""))
    dims = df.drop_duplicates("layer").set_index(df.drop_duplicates("layer")["layer"].astype(str))
    labels = [f"{l}\n{dims.loc[l, 'feature_shape']}" if l in dims.index else l for l in layers]
    ax.set_ylabel("estimated MI (bits), last 50% of steps")
    ax.set_ylim(bottom=min(0.0, float(np.nanmin(df["mean_estimate"])) - 0.1), top=max(truth * 1.3, 0.5))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    if title is None:
        acc = (record or {}).get("classifier_accuracy", {})
        title = ("I(g(X); g(Y)) per ResNet layer (narrow ResNet-18, trained by mibench)"
                 + (f" · decoder accuracy {acc.get('source_accuracy'):.5f}" if acc else ""))
    ax.set_title(title, fontsize=10)
    if has_probe:
        per_layer = df.drop_duplicates("layer")
        pr = per_layer.set_index(per_layer["layer"].astype(str))["linear_probe_accuracy"]
        axes[1].bar(xs, [pr.get(l, np.nan) for l in layers], color="grey")
        lo = float(np.nanmin(pr.to_numpy(float)))
        axes[1].set_ylim(max(0.0, min(lo, 0.99) - 0.02), 1.0)
        axes[1].set_ylabel("linear probe acc.")
        axes[1].grid(alpha=0.3, axis="y")
        for x, l in zip(xs, layers):
            v = pr.get(l, np.nan)
            if np.isfinite(v):
                axes[1].text(x, v, f"{v:.4f}", ha="center", va="bottom", fontsize=7)
    last = axes[-1] if has_probe else ax
    last.set_xticks(xs)
    last.set_xticklabels(labels, fontsize=8)
    last.set_xlabel("layer (feature shape)")
    fig.tight_layout()
    save_figure(fig, path)
    return Path(path)


def run_layer_study(paths, out_dir, probes: bool = True, n_probe: int = 2000) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    df, record = layer_table(paths, probes=probes, n_probe=n_probe)
    csv = out / "resnet_layers.csv"
    df.to_csv(csv, index=False, float_format="%.5g")
    png = plot_layers(df, out / "resnet_layers.png", record)
    return [csv, png]
