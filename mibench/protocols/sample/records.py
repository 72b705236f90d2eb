"""Reading sample runs: sample_estimates.csv as the leaderboard's per-seed rows (a failed estimate is
NaN and counted), as ``load_runs``' frame and as figures; the setup of a run and its Markdown section."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mibench.errors import MibenchError
from mibench.protocols.base import ProtocolRecords
from mibench.protocols.setup import (
    dims_text,
    fmt_bound,
    fmt_num,
    fmt_pm,
    fmt_value,
    schedule_label,
    setup_params,
    truth_text,
)
from mibench.records.setup import RunSetup, truth_flag


class SampleRecords(ProtocolRecords):
    def setup(self, config: dict) -> dict:
        c = config["config"]
        info = config.get("task_info", {})
        kw = c.get("estimate_kwargs") or {}
        sizes = {k: int(kw.get(k) or 0) for k in ("layers", "hidden", "embed", "batch_size", "steps")}
        return RunSetup(task=c["task"], task_params=setup_params(c["task"], c.get("task_params") or {}, info),
                        ds=info.get("ds"), dr=info.get("dr"), critic=c["critic"], **sizes,
                        lr=float(kw.get("lr") or 0.0), schedule=schedule_label(c["mi"]), burn_in=0,
                        precision="fp32", protocol="sample", n=int(c["n"]), truth_check=truth_flag(info)).row()

    def seed_rows(self, record) -> list[dict]:
        """One row per estimator x level x seed from sample_estimates.csv (the single estimate of
        that seed's dataset; a failed estimate is NaN and counted in diverged_seeds); ``variance``
        is each seed's squared deviation from the seeds' mean, so its mean over seeds is the
        variance over seeds."""
        from mibench.records import read_sample_estimates, recorded_file

        setup = self.setup(record.config)
        out = []
        for e in read_sample_estimates(recorded_file(record.path, record.config, self.estimates_file)):
            level = e["true_mi"]
            ok = e["status"] == "ok"
            est = e["estimate"] if ok else float("nan")
            out.append({**setup, "estimator": e["estimator"], "true_mi": level, "seed": int(e["seed"]),
                        "mean_estimate": est, "bias": est - level, "variance": float("nan"),
                        "mse": (est - level) ** 2, "diverged": not ok, "run_dir": str(record.path), "kind": e["kind"],
                        "seconds": e["seconds"] if ok else float("nan"), "n_parameters": e["n_parameters"],
                        "mi_status": e["mi_status"] if ok else "", "mi_stderr": e["mi_stderr"] if ok else float("nan")})
        groups: dict = {}
        for row in out:
            groups.setdefault((row["estimator"], row["true_mi"]), []).append(row)
        for rows in groups.values():
            vals = np.array([x["mean_estimate"] for x in rows], dtype=float)
            mean = float(vals[np.isfinite(vals)].mean()) if np.isfinite(vals).any() else float("nan")
            for x in rows:
                x["variance"] = (x["mean_estimate"] - mean) ** 2
        return out

    def estimate_frame(self, run_dir: Path, config: dict):
        import pandas as pd

        from mibench.records import read_sample_estimates, recorded_file

        if not (Path(run_dir) / self.estimates_file).is_file():
            return None
        df = pd.DataFrame(read_sample_estimates(recorded_file(run_dir, config, self.estimates_file)))
        if df.empty:
            return None
        df["run_id"] = df["run_id"].where(df["run_id"].astype(bool), config.get("run_id") or Path(run_dir).name)
        df["seed"] = df["seed"].astype("Int64")
        df["step"] = pd.array([pd.NA] * len(df), dtype="Int64")
        return df

    def plot(self, run_dir: Path, out_dir: Path) -> list[Path]:
        from mibench.plots import plot_metric_bars, plot_sample_run
        from mibench.records import collect, read_config, read_sample_estimates, recorded_file, run_status

        cfg = read_config(run_dir)
        rows = read_sample_estimates(recorded_file(run_dir, cfg, self.estimates_file)) \
            if (Path(run_dir) / self.estimates_file).is_file() else []
        if not rows:
            raise MibenchError(f"{run_dir} has logged no estimates")
        c = cfg["config"]
        title = f"{c.get('task')} · sample protocol n = {c.get('n')} · seeds {','.join(map(str, c.get('seeds') or []))}"
        if cfg.get("status") != "complete":
            title += f" · {run_status(cfg)}"
        written = [plot_sample_run(out_dir / "estimates.png", rows, title)]
        if cfg.get("status") == "complete":
            samples = [r for rec in collect([run_dir]).runs for r in self.seed_rows(rec)]
            plot_metric_bars(samples, out_dir / "metrics.png", title=f"{c.get('task')} · sample protocol")
            written.append(out_dir / "metrics.png")
        return written

    def plot_setup_seed(self, run_dirs, path: Path, label: str) -> Path | None:
        return None        # every seed of a setup is in one sample run: its estimates.png shows them

    def setup_description(self, fields: dict) -> str:
        return f"sample protocol, n = {fmt_value(fields.get('n'))}"

    def shown_setup_fields(self, fields: dict) -> dict:
        def unset(v) -> bool:
            try:
                return float(v) == 0
            except (TypeError, ValueError):
                return False

        return {k: v for k, v in super().shown_setup_fields(fields).items() if not (k in self.DEFAULTED and unset(v))}

    def seeds_of(self, config: dict) -> list:
        return list((config.get("config") or {}).get("seeds") or [])

    def metric_mean(self, metric: str, group) -> float:
        """As the base class, but ``variance`` is the variance of the seeds' estimates about their
        mean (ddof 0), computed over the row's seeds together: pooled from several runs, each seed's
        deviation from its own run's mean would understate it."""
        if metric != "variance":
            return super().metric_mean(metric, group)
        est = group["mean_estimate"].to_numpy(dtype=float)
        est = est[np.isfinite(est)]
        return float(((est - est.mean()) ** 2).mean()) if est.size else float("nan")

    def metric_ci95(self, metric: str, values) -> float:
        """As the base class, but none for ``variance``: one estimate per seed makes it a single
        number over seeds, not a mean of per-seed values."""
        return float("nan") if metric == "variance" else super().metric_ci95(metric, values)

    def markdown_section(self, group, first, level: int = 2) -> list[str]:
        f = first
        params = f" ({f['task_params'].replace(';', ', ')})" if f["task_params"] else ""
        kw = ", ".join(f"{k} {f[k]:g}" for k in ("layers", "hidden", "embed", "batch_size", "lr", "steps") if f[k])
        lines = [f"{'#' * level} {f['task']}{params}{dims_text(f)} · sample protocol, n = {f['n']} pairs per "
                 f"dataset · MI {f['schedule']} bits · critic-bound estimators: {f['critic']} critic via "
                 "mibench.estimate" + (f" ({kw})" if kw else " (data-sized defaults)"), "",
                 *([truth, ""] if (truth := truth_text(f)) else []),
                 "| rank | estimator | kind | bound | avg MSE | true MI | estimate | bias | variance | MSE | seeds "
                 "| failed | s / estimate | parameters | status |",
                 "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for _, r in group.iterrows():
            params_n = r["n_parameters"]
            lines.append(f"| {r['rank']} | {r['estimator']} | {r['kind']} | {fmt_bound(r)} | "
                         f"{fmt_num(r['rank_score'])} | {r['true_mi']:g} | "
                         f"{fmt_pm(r['mean_estimate'], r['mean_estimate_ci95'])} | "
                         f"{fmt_pm(r['bias'], r['bias_ci95'])} | {fmt_num(r['variance'])} | "
                         f"{fmt_pm(r['mse'], r['mse_ci95'])} | {r['n_seeds']} | {r['diverged_seeds'] or ''} | "
                         f"{fmt_num(r['seconds'], 2)} | "
                         f"{'' if params_n is None or params_n != params_n else int(params_n)} | "
                         f"{r.get('mi_status') if isinstance(r.get('mi_status'), str) else ''} |")
        lines.append("")
        return lines

