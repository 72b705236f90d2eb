"""Validate MI back-ends × MI-based metrics against the analytic Gaussian toy model (Tokui §5.1).

For every back-end × metric × attack × α: the analytic value (exact covariance algebra,
:mod:`~mibench.disentanglement.toy`), the estimate from n samples, the error and a pass/fail
against the back-end's stated tolerance.  A back-end that cannot estimate a case (histogram on a
multi-dimensional z_S, posterior without a known encoder, …) is reported as *unsupported* with the
reason, never as a number.

Tolerances (:data:`TOLERANCES`, nats, on metric values) state each back-end's accuracy at the
default settings (n = 2000, σ = 0.1, K = 5, α ∈ {0.5, 1, 2, 4}): the largest |mean error| + 4 sd
over seeds 0-4 across the default grid, rounded up (the errors behind them: docs/disentanglement.md,
"Validating the back-ends").  They document how accurate a back-end is, not how accurate it should be: the KSG
tolerance on bounds that need I(y_k; z) in 6-11 dimensions is > 1 nat because KSG underestimates
high MI in high dimensions that much.  Other settings (smaller n, other σ) may fail legitimately.
"""
from __future__ import annotations

import csv
import math
import os
import tempfile
from dataclasses import asdict, dataclass

import numpy as np

from mibench.disentanglement.backends import BackendUnsupported, get_backend
from mibench.disentanglement.metrics import MI_METRICS, InfoTable, get_mi_metric, normalisers, table_part
from mibench.disentanglement.toy import ATTACKS, analytic_table, check_toy_args, sample_toy
from mibench.errors import MibenchError
from mibench.utils.checks import check_positive_int, check_seed

DEFAULT_BACKENDS = ("histogram", "ksg", "gaussian", "posterior")
DEFAULT_METRICS = ("mig", "unibound", "u_upper", "u_upper_unclipped", "r_lower", "r_upper",
                   "c_lower", "c_upper", "dcimig", "minimality_mi")
DEFAULT_ATTACKS = ATTACKS
DEFAULT_ALPHAS = (0.5, 1.0, 2.0, 4.0)
DEFAULT_N, DEFAULT_SIGMA, DEFAULT_K, DEFAULT_SEED = 2000, 0.1, 5, 0

# Each tolerance: max over the default grid's (attack, α) cases of |mean error| + 4 sd over seeds 0-4, rounded
# up to 0.01 (``python -m mibench.disentanglement.validate --measure``; the errors: docs/disentanglement.md).
_GAUSSIAN_LIKE = {"mig": 0.05, "unibound": 0.05, "u_upper": 0.05, "u_upper_unclipped": 0.05, "r_lower": 0.03,
                  "r_upper": 0.03, "c_lower": 0.05, "c_upper": 0.05, "dcimig": 0.05}
TOLERANCES: dict[str, dict[str, float]] = {
    "histogram": {"mig": 0.68, "dcimig": 0.68},
    "gaussian": {**_GAUSSIAN_LIKE, "minimality_mi": 0.11},
    "posterior": {**_GAUSSIAN_LIKE, "minimality_mi": 0.12},
    "ksg": {"mig": 0.11, "unibound": 0.62, "u_upper": 1.66, "u_upper_unclipped": 2.24, "r_lower": 1.73,
            "r_upper": 0.55, "c_lower": 2.25, "c_upper": 2.24, "dcimig": 0.09, "minimality_mi": 0.37},
}

#: for metrics or back-ends with no tolerance on record (e.g. ``neural:*``): noted in the row.
FALLBACK_TOLERANCE = 0.3

CSV_FIELDS = ("backend", "metric", "attack", "alpha", "analytic", "estimate", "error", "tolerance", "status", "note")


@dataclass
class Row:
    backend: str
    metric: str
    attack: str
    alpha: float
    analytic: float
    estimate: float
    error: float
    tolerance: float
    status: str  # pass | fail | unsupported
    note: str = ""


def tolerance_for(backend: str, metric: str) -> tuple[float, str]:
    tol = TOLERANCES.get(backend, {}).get(metric)
    if tol is None:
        return FALLBACK_TOLERANCE, "no tolerance on record: fallback"
    return tol, ""


def _estimate_parts(y, post, backend, parts) -> tuple[dict, dict]:
    """The table parts a back-end can estimate, and the reason for each it cannot."""
    disc = np.zeros(y.shape[1], dtype=bool)  # the toy factors are continuous
    got, why = {}, {}
    for part in ["pair", *[p for p in ("rest", "full", "code_y") if p in parts]]:
        try:
            got[part] = table_part(y, post, backend, disc, part)
        except BackendUnsupported as exc:
            why[part] = str(exc)
    return got, why


def validate_case(y, post, analytic: InfoTable, backends, metrics, attack: str, alpha: float) -> list[Row]:
    """Rows for one (attack, α) sample: every back-end × metric."""
    rows = []
    chosen = [get_mi_metric(m) for m in metrics]
    parts = {p for m in chosen for p in m.parts}
    for be in backends:
        got, why = _estimate_parts(y, post, be, parts)
        table = InfoTable(normaliser=normalisers(y, np.zeros(y.shape[1], bool)),
                          discrete=np.zeros(y.shape[1], bool), backend=be.name, **got) if "pair" in got else None
        for m in chosen:
            try:
                exact = float(m.fn(analytic))
            except MibenchError as exc:
                rows.append(Row(be.name, m.name, attack, alpha, math.nan, math.nan, math.nan, math.nan, "unsupported",
                                str(exc)))
                continue
            tol, tol_note = tolerance_for(be.name, m.name)
            missing = [p for p in m.parts if p not in got]
            if missing:  # unsupported rows carry no tolerance: nothing was checked
                rows.append(Row(be.name, m.name, attack, alpha, exact, math.nan, math.nan, math.nan, "unsupported",
                                why[missing[0]]))
                continue
            try:
                est = float(m.fn(table))
            except MibenchError as exc:
                rows.append(Row(be.name, m.name, attack, alpha, exact, math.nan, math.nan, math.nan, "unsupported",
                                str(exc)))
                continue
            err = est - exact
            ok = bool(np.isfinite(err) and abs(err) <= tol)
            rows.append(Row(be.name, m.name, attack, alpha, exact, est, err, tol, "pass" if ok else "fail", tol_note))
    return rows


def run_validation(backends=DEFAULT_BACKENDS, metrics=DEFAULT_METRICS, attacks=DEFAULT_ATTACKS,
                   alphas=DEFAULT_ALPHAS, n=DEFAULT_N, sigma=DEFAULT_SIGMA, K=DEFAULT_K, seed=DEFAULT_SEED,
                   progress=None) -> list[Row]:
    """Every back-end × metric × attack × α on toy samples drawn with ``seed`` (the same y, z, ε for
    every α).  The un-attacked model (``attack="none"``) is evaluated once, with α = 0."""
    check_positive_int(n, "n", minimum=10)
    check_seed(seed)
    bes = list({be.name: be for be in map(get_backend, backends)}.values())     # each once
    metrics = list(dict.fromkeys(get_mi_metric(m).name for m in metrics))
    attacks, alphas = list(dict.fromkeys(attacks)), list(dict.fromkeys(alphas))
    for a in attacks:
        check_toy_args(K, sigma, a, 0.0)
    for a in alphas:
        check_toy_args(K, sigma, "redundancy", a)
    rows: list[Row] = []
    for attack in attacks:
        for alpha in ([0.0] if attack == "none" else alphas):
            if progress:
                progress(f"{attack} α={alpha:g}")
            y, post = sample_toy(n, K, sigma, attack, alpha, seed)
            rows += validate_case(y, post, analytic_table(K, sigma, attack, alpha), bes, metrics, attack, alpha)
    return rows


# ---------------------------------------------------------------------------------------------
# outputs: CSV, plots, summary
# ---------------------------------------------------------------------------------------------

def _atomic_target(path: str) -> str:
    """A temporary file next to ``path`` (same file system, so os.replace is atomic), mode 0666 & ~umask."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp-", suffix=os.path.splitext(path)[1])
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return tmp


def write_csv(rows: list[Row], path: str) -> str:
    """Write the rows atomically (temporary file in the same directory, then os.replace)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = _atomic_target(path)
    try:
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
            writer.writeheader()
            for r in rows:
                d = asdict(r)
                writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in d.items()})
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def plot_attack(rows: list[Row], attack: str, path: str, *, sigma: float, K: int, n: int) -> str | None:
    """Metric vs α: analytic curve and estimated points per back-end (cf. Tokui's figures)."""
    import matplotlib

    from mibench.plots import figure  # a Figure on its own Agg canvas: the caller's backend is left alone

    sel = [r for r in rows if r.attack == attack]
    if not sel:
        return None
    metrics = list(dict.fromkeys(r.metric for r in sel))
    backends = list(dict.fromkeys(r.backend for r in sel))
    a_max = max(r.alpha for r in sel)
    grid = np.linspace(0.0, a_max * 1.05, 60)
    curves = {m: [] for m in metrics}
    for a in grid:
        t = analytic_table(K, sigma, attack, float(a))
        for m in metrics:
            try:
                curves[m].append(MI_METRICS[m].fn(t))
            except MibenchError:
                curves[m].append(np.nan)
    cols = min(4, len(metrics))
    nrows = math.ceil(len(metrics) / cols)
    fig = figure(figsize=(3.6 * cols, 3.0 * nrows))
    axes = fig.subplots(nrows, cols, squeeze=False)
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = "osD^v<>ph*"
    for ax, m in zip(axes.ravel(), metrics):
        ax.plot(grid, curves[m], color="black", lw=1.5, label="analytic")
        for b_i, b in enumerate(backends):
            pts = [(r.alpha, r.estimate) for r in sel if r.metric == m and r.backend == b and r.status != "unsupported"]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, linestyle="none", marker=markers[b_i % len(markers)],
                        color=colours[b_i % len(colours)], label=b, alpha=0.85)
        ax.set_title(m, fontsize=10)
        ax.set_xlabel("attack strength α")
        ax.set_ylabel("metric value (nats, unnormalised)" if m != "minimality_mi" else "metric value (ratio)")
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(metrics):]:
        ax.axis("off")
    legend = {}
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(lab, h)
    fig.legend(list(legend.values()), list(legend.keys()), loc="lower center", ncol=len(legend), frameon=False)
    fig.suptitle(f"{attack} attack on the Gaussian toy model (σ={sigma:g}, K={K}, n={n})")
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = _atomic_target(path)
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def summarise(rows: list[Row]) -> list[dict]:
    """Per back-end × metric: cases, pass/fail/unsupported counts, mean and max |error|, tolerance."""
    out = []
    keys = list(dict.fromkeys((r.backend, r.metric) for r in rows))
    for b, m in keys:
        sel = [r for r in rows if r.backend == b and r.metric == m]
        errs = np.array([r.error for r in sel if r.status != "unsupported"])
        out.append({
            "backend": b, "metric": m, "cases": len(sel),
            "pass": sum(r.status == "pass" for r in sel), "fail": sum(r.status == "fail" for r in sel),
            "unsupported": sum(r.status == "unsupported" for r in sel),
            "mean_error": float(errs.mean()) if errs.size else math.nan,
            "max_abs_error": float(np.abs(errs).max()) if errs.size else math.nan,
            "tolerance": next((r.tolerance for r in sel if r.status != "unsupported"), math.nan),
        })
    return out


def format_summary(summary: list[dict]) -> str:
    head = (f"{'backend':<14} {'metric':<18} {'pass':>4} {'fail':>4} {'unsup':>5} {'mean err':>9} {'max|err|':>9} "
            f"{'tol':>6}")
    lines = [head, "-" * len(head)]
    for s in summary:
        def f(v):
            return f"{v:+9.3f}" if np.isfinite(v) else f"{'-':>9}"
        mx = f"{s['max_abs_error']:9.3f}" if np.isfinite(s["max_abs_error"]) else f"{'-':>9}"
        tol = f"{s['tolerance']:6.2f}" if np.isfinite(s["tolerance"]) else f"{'-':>6}"
        lines.append(f"{s['backend']:<14} {s['metric']:<18} {s['pass']:>4} {s['fail']:>4} {s['unsupported']:>5} "
                     f"{f(s['mean_error'])} {mx} {tol}")
    return "\n".join(lines)


def write_outputs(rows: list[Row], out_dir: str, *, sigma: float, K: int, n: int) -> list[str]:
    """validation.csv and one validation_<attack>.png per attacked model."""
    paths = [write_csv(rows, os.path.join(out_dir, "validation.csv"))]
    for attack in dict.fromkeys(r.attack for r in rows):
        if attack != "none":
            p = plot_attack(rows, attack, os.path.join(out_dir, f"validation_{attack}.png"), sigma=sigma, K=K, n=n)
            if p:
                paths.append(p)
    return paths


# ---------------------------------------------------------------------------------------------
# measuring the tolerances (developer tool)
# ---------------------------------------------------------------------------------------------

def measure_tolerances(seeds=range(5), backends=DEFAULT_BACKENDS, metrics=DEFAULT_METRICS, k_sd: float = 4.0,
                       **settings) -> dict[str, dict[str, dict]]:
    """|mean error| + k_sd · sd over seeds, maximised over the grid, per back-end × metric."""
    errs: dict = {}
    for seed in seeds:
        for r in run_validation(backends, metrics, seed=seed, **settings):
            if r.status != "unsupported":
                errs.setdefault((r.backend, r.metric, r.attack, r.alpha), []).append(r.error)
    out: dict = {}
    for (b, m, _, _), e in errs.items():
        e = np.asarray(e)
        need = abs(e.mean()) + k_sd * (e.std(ddof=1) if e.size > 1 else 0.0)
        cur = out.setdefault(b, {}).setdefault(m, {"tol": 0.0, "max_abs_mean": 0.0, "max_sd": 0.0})
        cur["tol"] = max(cur["tol"], need)
        cur["max_abs_mean"] = max(cur["max_abs_mean"], abs(e.mean()))
        cur["max_sd"] = max(cur["max_sd"], e.std(ddof=1) if e.size > 1 else 0.0)
    return out


if __name__ == "__main__":  # pragma: no cover - developer tool
    import json
    import sys

    if "--measure" in sys.argv:
        res = measure_tolerances()
        print(json.dumps(res, indent=1))
