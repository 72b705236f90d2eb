"""The streaming protocol's records as the leaderboard, ``load_runs`` and ``mibench plot`` read them: a run's
setup, its per-seed rows, its estimates as a DataFrame, its figures and its leaderboard section."""
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
from mibench.records.formats import SUMMARY_METRICS
from mibench.records.setup import RunSetup, truth_flag


class StreamRecords(ProtocolRecords):
    def setup(self, config: dict) -> dict:
        c = config["config"]
        info = config.get("task_info", {})
        return RunSetup(task=c["task"], task_params=setup_params(c["task"], c.get("task_params") or {}, info),
                        ds=info.get("ds"), dr=info.get("dr"), critic=c["critic"], layers=int(c["layers"]),
                        hidden=int(c["hidden"]), embed=int(c["embed"]), batch_size=int(c["batch_size"]),
                        lr=float(c["lr"]), steps=int(c["steps"]), schedule=schedule_label(c["mi"]),
                        burn_in=int(c.get("burn_in") or 0), precision=c.get("precision") or "fp32",
                        protocol="stream", n=0, truth_check=truth_flag(info)).row()

    def seed_rows(self, record) -> list[dict]:
        """Summary rows of one run as per-seed samples; repeated segments of the same level within
        the run are pooled (averaged) first; an estimator counts as diverged at a level when it
        diverged before the level's window ended."""
        setup = self.setup(record.config)
        seed = record.config["config"].get("seed")
        diverged = record.config.get("diverged") or {}
        ends = _level_ends(record.config)
        pooled: dict = {}
        for row in record.summary:
            pooled.setdefault((row["estimator"], row["true_mi"]), []).append(row)
        out = []
        for (est, level), rows in pooled.items():
            vals = {m: float(np.nanmean([x[m] for x in rows])) if any(np.isfinite(x[m]) for x in rows) else float("nan")
                    for m in SUMMARY_METRICS}
            div_step = diverged.get(est)
            div = div_step is not None and div_step < ends.get(level, float("inf"))
            out.append({**setup, "estimator": est, "true_mi": float(level), "seed": seed, **vals,
                        "diverged": bool(div), "run_dir": str(record.path), "kind": "critic",
                        "seconds": float("nan"), "n_parameters": None, "mi_status": "", "mi_stderr": float("nan")})
        return out

    def estimate_frame(self, run_dir: Path, config: dict):
        from mibench.records import read_estimates, recorded_file

        if not (Path(run_dir) / self.estimates_file).is_file():
            return None       # a complete run kept without its per-step log
        df = read_estimates(recorded_file(run_dir, config, self.estimates_file),
                            partial_last_line=config.get("status") != "complete")
        c = config["config"]
        df["run_id"] = df["run_id"].where(df["run_id"].notna(), config.get("run_id") or Path(run_dir).name)
        df["seed"] = df["seed"].fillna(c.get("seed")).astype("Int64")
        df["diverged_step"] = df["estimator"].map(config.get("diverged") or {}).astype(float)
        return df

    def plot(self, run_dir: Path, out_dir: Path) -> list[Path]:
        from mibench.plots import plot_metric_bars, plot_staircase
        from mibench.records import collect, read_config

        got = staircase_from_runs([run_dir])
        config = read_config(run_dir)
        if got is None or not len(got[1]):
            if "estimates.csv" in (config.get("files") or {}):
                from mibench.errors import UnreadableInput

                raise UnreadableInput(f"{run_dir}: estimates.csv is missing (the run recorded it; a results copy "
                                   "kept without its per-step log aggregates but cannot be re-plotted)")
            raise MibenchError(f"{run_dir} has logged no estimates")
        names, true_mi, mat, ceilings, diverged, cfg = got
        title = _title(cfg)
        if config.get("status") != "complete":     # interrupted / killed / still running: the steps logged
            from mibench.records import run_status

            title += f" · {run_status(config)} after {len(true_mi)} steps"
        written = [plot_staircase(out_dir / "staircase.png", names, true_mi, mat, title, ceilings, diverged=diverged)]
        if config.get("status") == "complete":
            c = config["config"]
            rows = [r for rec in collect([run_dir]).runs for r in self.seed_rows(rec)]
            plot_metric_bars(rows, out_dir / "metrics.png", title=f"{c['task']} · {c['critic']} critic")
            written.append(out_dir / "metrics.png")
        return written

    def plot_setup_seed(self, run_dirs, path: Path, label: str) -> Path | None:
        """A sweep's staircase of one setup and seed with all its estimators (also when the sweep
        split them over cells)."""
        from mibench.plots import plot_staircase

        got = staircase_from_runs(run_dirs)
        if got is None:
            return None
        names, true_mi, mat, ceilings, diverged, _ = got
        return plot_staircase(path, names, true_mi, mat, label, ceilings, diverged=diverged)

    def setup_description(self, fields: dict) -> str:
        how = (f"{fields.get('critic')} critic {fmt_value(fields.get('layers'))}×{fmt_value(fields.get('hidden'))}, "
               f"batch {fmt_value(fields.get('batch_size'))}, {fmt_value(fields.get('steps'))} steps")
        precision = fields.get("precision")
        return how + (f", {precision}" if precision and precision != "fp32" else "")

    def shown_setup_fields(self, fields: dict) -> dict:
        return {k: v for k, v in super().shown_setup_fields(fields).items() if k != "n"}

    def seeds_of(self, config: dict) -> list:
        return [(config.get("config") or {}).get("seed")]

    def markdown_section(self, group, first, level: int = 2) -> list[str]:
        f = first
        params = f" ({f['task_params'].replace(';', ', ')})" if f["task_params"] else ""
        lines = [f"{'#' * level} {f['task']}{params}{dims_text(f)} · {f['critic']} critic "
                 f"{f['layers']}×{f['hidden']} · batch {f['batch_size']} · lr {f['lr']:g} · {f['steps']} steps · "
                 f"MI {f['schedule']} bits" + (f" · burn-in {f['burn_in']}" if f["burn_in"] else ""), "",
                 *([truth, ""] if (truth := truth_text(f)) else []),
                 "| rank | estimator | bound | avg MSE | true MI | estimate | bias | variance | MSE | seeds "
                 "| diverged |",
                 "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for _, r in group.iterrows():
            lines.append(f"| {r['rank']} | {r['estimator']} | {fmt_bound(r)} | {fmt_num(r['rank_score'])} | "
                         f"{r['true_mi']:g} | {fmt_pm(r['mean_estimate'], r['mean_estimate_ci95'])} | "
                         f"{fmt_pm(r['bias'], r['bias_ci95'])} | {fmt_pm(r['variance'], r['variance_ci95'])} | "
                         f"{fmt_pm(r['mse'], r['mse_ci95'])} | {r['n_seeds']} | {r['diverged_seeds'] or ''} |")
        lines.append("")
        return lines


def _level_ends(cfg: dict) -> dict:
    sched = cfg.get("schedule") or {}
    levels, bounds = sched.get("levels_bits") or [], sched.get("boundaries") or []
    ends: dict = {}
    for i, lv in enumerate(levels):
        if i + 1 < len(bounds):
            ends[float(lv)] = max(ends.get(float(lv), 0), bounds[i + 1])
    return ends


def _title(cfg: dict) -> str:
    c = cfg["config"]
    return f"{c['task']} · {c['critic']} critic · batch {c['batch_size']} · seed {c['seed']}"


def staircase_from_runs(run_dirs):
    """``(names, true_mi, estimates, ceilings, diverged, config)`` read from the estimates.csv of
    one run or of several runs of the same setup and seed (a sweep that split the estimators over
    cells): every estimator of the setup in one array, in the canonical order.  ``config`` is the
    first run's config.json.  Runs without estimates.csv are skipped (None when none has one)."""
    from mibench.plots import ordered
    from mibench.records import read_config, read_estimates, recorded_file

    names, rows, ceilings, diverged, true_mi, first = [], {}, {}, {}, None, None
    for d in run_dirs:
        d = Path(d)
        if not (d / "estimates.csv").is_file():
            continue
        cfg = read_config(d)
        complete = cfg.get("status") == "complete"
        first = first or cfg
        est = read_estimates(recorded_file(d, cfg, "estimates.csv"), partial_last_line=not complete)
        steps = int(cfg.get("config", {}).get("steps") or (est["step"].max() + 1))
        expected = steps * len(cfg.get("config", {}).get("estimators") or [])
        if complete and expected and len(est) != expected:
            from mibench.errors import UnreadableInput

            raise UnreadableInput(f"{d / 'estimates.csv'} has {len(est)} rows where the complete run logged "
                                  f"{expected} ({steps} steps x {expected // steps} estimators): damaged file")
        for name, e in est.groupby("estimator", sort=False):
            if name in rows:
                continue
            e = e.sort_values("step")
            mat_row = np.full(steps, np.nan)
            idx = e["step"].to_numpy(int)
            mat_row[idx] = e["estimate"].to_numpy(float)
            tm = np.full(steps, np.nan)
            tm[idx] = e["true_mi"].to_numpy(float)
            if true_mi is None or (np.isnan(true_mi).any() and not np.isnan(tm).any()):
                true_mi = tm
            elif len(tm) != len(true_mi) or not np.allclose(tm, true_mi, equal_nan=True):
                raise MibenchError(f"{d}: its true-MI schedule differs from the other runs of the setup")
            rows[name] = mat_row
            names.append(name)
        ceilings.update(cfg.get("ceilings_bits") or {})
        diverged.update(cfg.get("diverged") or {})
    if not names:
        return None
    names = ordered(names)
    true_mi = np.asarray(true_mi)
    if np.isnan(true_mi).any():        # a partial run: the steps logged so far
        ok = np.flatnonzero(np.isfinite(true_mi))
        true_mi = true_mi[:ok[-1] + 1] if ok.size else true_mi[:0]
    mat = np.vstack([rows[n][:len(true_mi)] for n in names])
    return names, true_mi, mat, ceilings, diverged, first
