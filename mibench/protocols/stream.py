"""The streaming protocol (paper 002 §5): the estimators' critics train on a fresh batch at every
step while the true MI follows a schedule; every estimator reports an estimate at every step, and
bias / variance / MSE are taken over each level's steps (:mod:`mibench.metrics`).

Running it: :mod:`.stream_run` (config, checks, the run directory) and :mod:`.stream_training`
(the training loop).  This module is the protocol's face to the rest of mibench
(:class:`~mibench.protocols.base.RunProtocol`): setups and per-seed rows for the leaderboard,
estimates for ``load_runs``, figures, Markdown, sweep cells.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
import time
from pathlib import Path

import numpy as np

from ..errors import MibenchError
from .base import RunProtocol
from .common import (
    check_axis_value,
    dims_text,
    fmt_num,
    fmt_pm,
    fmt_value,
    listify,
    mi_token,
    param_tokens,
    schedule_label,
    setup_params,
    split_groups,
)
import mibench.protocols.stream_run as stream_run

from .stream_run import RunConfig, config_from_dict, prepare

#: grid axes of a streaming sweep (spec key -> RunConfig field), in the order cells are enumerated
AXES = [("critics", "critic"), ("layers", "layers"), ("hidden", "hidden"), ("embed", "embed"),
        ("batch_size", "batch_size"), ("lr", "lr"), ("mi", "mi"), ("steps", "steps"),
        ("burn_in", "burn_in"), ("seeds", "seed")]
METRICS = ["mean_estimate", "bias", "variance", "mse"]


class StreamProtocol(RunProtocol):
    name = "stream"
    estimates_file = "estimates.csv"
    record_files = ("estimates.csv", "summary.csv")
    empty_columns = ("seconds", "n_parameters")

    # -- configs and running -------------------------------------------------------------------
    def claims(self, settings: dict) -> bool:
        return settings.get("n") is None

    def config_from_args(self, args, task_params: dict) -> RunConfig:
        if getattr(args, "seeds", None) is not None or getattr(args, "timeout", None) is not None:
            raise MibenchError("--seeds and --timeout belong to the sample protocol: add --n N (e.g. --n 10000); "
                               "a streaming run takes one --seed")
        return RunConfig(task=args.task, task_params=task_params, estimators=args.estimator, critic=args.critic,
                         hidden=args.hidden, layers=args.layers, embed=args.embed, mi=args.mi, steps=args.steps,
                         batch_size=args.batch_size, lr=args.lr, seed=args.seed, device=args.device,
                         burn_in=args.burn_in, engine=args.engine, precision=args.precision)

    def config_from_dict(self, data: dict, where: str = "config") -> RunConfig:
        return config_from_dict(data, where)

    def prepare(self, cfg):
        return prepare(cfg)

    def resolved_dict(self, prepared) -> dict:
        return dataclasses.asdict(prepared[0])

    def run(self, prepared, out_dir, *, progress=False, plot=True, run_id=None, extra=None, resume=False):
        return stream_run.run(prepared, out_dir, progress=progress, plot=plot, run_id=run_id, extra=extra,
                              resume=resume)

    def failed_estimates(self, config: dict) -> list[str]:
        return []          # a diverged estimator is a measured outcome, recorded with its step

    def default_run_name(self, cfg) -> str:
        est = ",".join(cfg.estimators)
        est = est if len(est) <= 40 else f"{len(cfg.estimators)}est"
        mi = str(cfg.mi).replace(",", "-")
        name = f"{cfg.task}_{est}_{cfg.critic}_{mi}_s{cfg.seed}_{time.strftime('%Y%m%d-%H%M%S')}"
        return re.sub(r"[^A-Za-z0-9_.+-]", "-", name.replace(",", "+"))

    def format_result(self, result) -> str:
        cfg = result.config
        info = cfg["task_info"]
        width = max([11] + [len(r["estimator"]) + 1 for r in result.summary])
        lines = [f"task {info.get('task')}: ds={info.get('ds')} dr={info.get('dr')}"
                 + (f" · data: {info['data_source']}" if "data_source" in info else "")
                 + f" · device {cfg['environment']['device']} · {cfg.get('steps_per_second')} steps/s"]
        header = f"{'estimator':<{width}}{'true':>6}{'mean':>8}{'bias':>8}{'var':>8}{'mse':>8}{'steps':>7}"
        lines += [header, "-" * len(header)]
        for r in result.summary:
            lines.append(f"{r['estimator']:<{width}}{r['true_mi']:>6g}{r['mean_estimate']:>8.3f}{r['bias']:>8.3f}"
                         f"{r['variance']:>8.3f}{r['mse']:>8.3f}{r['steps']:>7d}")
        for name, step in result.diverged.items():
            lines.append(f"! {name} diverged (non-finite estimate) at step {step}; its later steps are excluded")
        for note in cfg.get("notes", []):
            lines.append(f"note: {note}")
        return "\n".join(lines)

    # -- reading -------------------------------------------------------------------------------
    def setup(self, config: dict) -> dict:
        c = config["config"]
        info = config.get("task_info", {})
        return {"task": c["task"], "task_params": setup_params(c["task"], c.get("task_params") or {}, info),
                "ds": info.get("ds"), "dr": info.get("dr"), "critic": c["critic"], "layers": int(c["layers"]),
                "hidden": int(c["hidden"]), "embed": int(c["embed"]), "batch_size": int(c["batch_size"]),
                "lr": float(c["lr"]), "steps": int(c["steps"]), "schedule": schedule_label(c["mi"]),
                "burn_in": int(c.get("burn_in") or 0), "precision": c.get("precision") or "fp32",
                "protocol": "stream", "n": 0}

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
                    for m in METRICS}
            div_step = diverged.get(est)
            div = div_step is not None and div_step < ends.get(level, float("inf"))
            out.append({**setup, "estimator": est, "true_mi": float(level), "seed": seed, **vals,
                        "diverged": bool(div), "run_dir": str(record.path), "kind": "critic",
                        "seconds": float("nan"), "n_parameters": None, "mi_status": "", "mi_stderr": float("nan")})
        return out

    def estimate_frame(self, run_dir: Path, config: dict):
        from ..records import read_estimates

        est_path = Path(run_dir) / self.estimates_file
        if not est_path.is_file():
            return None
        df = read_estimates(est_path, partial_last_line=config.get("status") != "complete")
        c = config["config"]
        df["run_id"] = df["run_id"].where(df["run_id"].notna(), config.get("run_id") or Path(run_dir).name)
        df["seed"] = df["seed"].fillna(c.get("seed")).astype("Int64")
        df["diverged_step"] = df["estimator"].map(config.get("diverged") or {}).astype(float)
        return df

    def plot(self, run_dir: Path, out_dir: Path) -> list[Path]:
        from ..plots import plot_metric_bars, plot_staircase
        from ..records import collect, read_config

        got = staircase_from_runs([run_dir])
        config = read_config(run_dir)
        if got is None or not len(got[1]):
            if "estimates.csv" in (config.get("files") or {}):
                from ..errors import UnreadableInput

                raise UnreadableInput(f"{run_dir}: estimates.csv is missing (the run recorded it; a results copy "
                                   "kept without its per-step log aggregates but cannot be re-plotted)")
            raise MibenchError(f"{run_dir} has logged no estimates")
        names, true_mi, mat, ceilings, diverged, cfg = got
        title = _title(cfg)
        if config.get("status") != "complete":     # interrupted / killed / still running: the steps logged
            from ..records import run_status

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
        from ..plots import plot_staircase

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
                 "| rank | estimator | avg MSE | true MI | estimate | bias | variance | MSE | seeds | diverged |",
                 "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for _, r in group.iterrows():
            lines.append(f"| {r['rank']} | {r['estimator']} | {fmt_num(r['rank_score'])} | {r['true_mi']:g} | "
                         f"{fmt_pm(r['mean_estimate'], r['mean_estimate_ci95'])} | {fmt_pm(r['bias'], r['bias_ci95'])} | "
                         f"{fmt_pm(r['variance'], r['variance_ci95'])} | {fmt_pm(r['mse'], r['mse_ci95'])} | "
                         f"{r['n_seeds']} | {r['diverged_seeds'] or ''} |")
        lines.append("")
        return lines

    # -- sweeps ----------------------------------------------------------------------------------
    def expand(self, task: str, task_params: dict, estimators: list, axes: dict, scalars: dict, split) -> list[dict]:
        from ..estimators.registry import require_streamable
        from ..schedule import parse_schedule

        require_streamable(estimators)
        values = {}
        for key, fld in AXES:
            raw = axes.get(key)
            if raw is None:
                values[fld] = [getattr(RunConfig, fld)] if fld != "seed" else [0]
            elif key == "seeds":
                from ..checks import parse_seeds

                values[fld] = parse_seeds(listify(raw))
            else:
                values[fld] = [check_axis_value(fld, v) for v in listify(raw)]
        if axes.get("n") is not None or scalars.get("timeout") is not None:
            raise MibenchError("n and timeout belong to the sample protocol")
        out = []
        for combo in itertools.product(*(values[f] for _, f in AXES)):
            kw = dict(zip([f for _, f in AXES], combo))
            for group in split_groups(estimators, split):
                cfg = RunConfig(task=task, task_params=dict(task_params), estimators=list(group), **kw,
                                **{k: v for k, v in scalars.items() if v is not None and k != "timeout"})
                cfg = cfg.resolved()
                parse_schedule(cfg.mi, cfg.steps)
                out.append(dataclasses.asdict(cfg))
        return out

    def name_cells(self, configs: list[dict], split: bool) -> list[str]:
        import json

        varying = {k for k in ("lr", "steps", "burn_in", "embed", "device", "log_every", "precision")
                   if len({json.dumps(c[k]) for c in configs}) > 1}
        names = []
        for cfg in configs:
            parts = [cfg["task"], *param_tokens(cfg["task_params"])]
            if split:
                parts.append("+".join(cfg["estimators"]))
            crit = f"{cfg['critic']}-d{cfg['layers']}w{cfg['hidden']}"
            if cfg["critic"] == "separable" or "embed" in varying:
                crit += f"e{cfg['embed']}"
            parts += [crit, f"b{cfg['batch_size']}", mi_token(cfg["mi"])]
            if "steps" in varying:
                parts.append(f"n{cfg['steps']}")
            if "lr" in varying:
                parts.append(f"lr{cfg['lr']:g}")
            if "burn_in" in varying:
                parts.append(f"bi{cfg['burn_in']}")
            if "device" in varying:
                parts.append(str(cfg["device"]))
            if "precision" in varying or cfg.get("precision", "fp32") != "fp32":
                parts.append(cfg.get("precision", "fp32"))
            parts.append(f"s{cfg['seed']}")
            names.append("_".join(parts))
        return names

    def describe_cell(self, config: dict) -> str:
        return f"{','.join(config['estimators'])}; {config['steps']} steps"


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
    from ..plots import ordered
    from ..records import read_config, read_estimates, verify_files

    names, rows, ceilings, diverged, true_mi, first = [], {}, {}, {}, None, None
    for d in run_dirs:
        d = Path(d)
        if not (d / "estimates.csv").is_file():
            continue
        cfg = read_config(d)
        complete = cfg.get("status") == "complete"
        if complete:
            verify_files(d, cfg, names=("estimates.csv",))
        first = first or cfg
        est = read_estimates(d / "estimates.csv", partial_last_line=not complete)
        steps = int(cfg.get("config", {}).get("steps") or (est["step"].max() + 1))
        expected = steps * len(cfg.get("config", {}).get("estimators") or [])
        if complete and expected and len(est) != expected:
            from ..errors import UnreadableInput

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
