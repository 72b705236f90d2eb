"""The sample protocol's face to the rest of mibench (:class:`~mibench.protocols.base.RunProtocol`):
setups and per-seed rows for the leaderboard, estimates for ``load_runs``, figures, Markdown,
sweep cells.  Running it: :mod:`.sample_run`."""
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
import mibench.protocols.sample_run as sample_run

from .sample_run import SampleConfig, config_from_dict, prepare

#: settings of critic-bound estimators a sample sweep may set (mibench.estimate's arguments)
ESTIMATE_AXES = [("hidden", "hidden"), ("layers", "layers"), ("embed", "embed"), ("batch_size", "batch_size"),
                 ("lr", "lr"), ("steps", "steps")]


class SampleProtocol(RunProtocol):
    name = "sample"
    estimates_file = "sample_estimates.csv"
    record_files = ("sample_estimates.csv", "summary.csv")
    failure_word = "failed"
    #: setup columns left at 0 unless a sweep set them (mibench.estimate's data-sized defaults)
    DEFAULTED = {"layers", "hidden", "embed", "batch_size", "lr", "steps", "burn_in"}

    # -- configs and running -------------------------------------------------------------------
    def claims(self, settings: dict) -> bool:
        return settings.get("n") is not None

    def config_from_args(self, args, task_params: dict) -> SampleConfig:
        """``mibench run --n N``: training flags given on the command line (``--steps``, ``--hidden``,
        ...) become the critic-bound estimators' settings (``mibench.estimate``); flags that only
        mean something to the streaming protocol are refused."""
        from .sample_run import DEFAULT_TIMEOUT

        given = set(getattr(args, "_given", ()))
        stream_only = sorted(given & {"burn_in", "engine", "precision"})
        if stream_only:
            raise MibenchError(f"--{stream_only[0].replace('_', '-')} belongs to the streaming protocol; a sample run "
                               "(--n) has no training stream")
        kwargs = {k: getattr(args, k) for k in ("steps", "batch_size", "lr", "hidden", "layers", "embed") if k in given}
        mi = args.mi if str(args.mi).strip().lower() not in ("stepwise", "staircase") else "4"
        timeout = DEFAULT_TIMEOUT if args.timeout is None else (None if args.timeout == 0 else args.timeout)
        return SampleConfig(task=args.task, task_params=task_params, estimators=args.estimator, critic=args.critic,
                            mi=mi, n=args.n, seeds=args.seeds if args.seeds is not None else [args.seed],
                            timeout=timeout, device=args.device, estimate_kwargs=kwargs)

    def config_from_dict(self, data: dict, where: str = "config") -> SampleConfig:
        return config_from_dict(data, where)

    def prepare(self, cfg):
        return prepare(cfg)

    def resolved_dict(self, prepared) -> dict:
        return dataclasses.asdict(prepared[0])

    def run(self, prepared, out_dir, *, progress=False, plot=True, run_id=None, extra=None, resume=False):
        return sample_run.run_sample(prepared, out_dir, progress=progress, plot=plot, run_id=run_id, extra=extra,
                                     resume=resume)

    def default_run_name(self, cfg) -> str:
        est = ",".join(cfg.estimators)
        est = est if len(est) <= 40 else f"{len(cfg.estimators)}est"
        name = f"{cfg.task}_{est}_n{cfg.n}_mi{'-'.join(f'{v:g}' for v in cfg.levels)}_{time.strftime('%Y%m%d-%H%M%S')}"
        return re.sub(r"[^A-Za-z0-9_.+-]", "-", name)

    def format_result(self, result) -> str:
        info = result.config["task_info"]
        cfg = result.config["config"]
        width = max([16] + [len(r["estimator"]) + 1 for r in result.summary])
        lines = [f"task {info.get('task')}: ds={info.get('ds')} dr={info.get('dr')} · sample protocol, n = {cfg['n']}, "
                 f"seeds {','.join(map(str, cfg['seeds']))} · device {result.config['environment']['device']}"]
        header = (f"{'estimator':<{width}}{'kind':>11}{'true':>6}{'mean':>8}{'bias':>8}{'var':>8}{'mse':>8}{'ok':>4}"
                  f"{'s/est':>8}{'params':>9}  status")
        lines += [header, "-" * len(header)]
        for r in result.summary:
            secs = f"{r['seconds']:>7.2f}" if np.isfinite(r["seconds"]) else f"{'–':>7}"
            lines.append(f"{r['estimator']:<{width}}{r['kind']:>11}{r['true_mi']:>6g} {r['mean_estimate']:>7.3f}"
                         f" {r['bias']:>7.3f} {r['variance']:>7.3f} {r['mse']:>7.3f}{r['steps']:>4d} {secs}"
                         f" {r['n_parameters']:>8d}" + (f"  {r['mi_status']}" if r.get("mi_status") else ""))
        for name, info in (result.config.get("estimator_info") or {}).items():
            lines.append(f"  {name}: {info}")
        for note in result.config.get("failed_estimates", []):
            lines.append(f"! failed: {note}")
        return "\n".join(lines)

    # -- reading -------------------------------------------------------------------------------
    def setup(self, config: dict) -> dict:
        c = config["config"]
        info = config.get("task_info", {})
        kw = c.get("estimate_kwargs") or {}
        return {"task": c["task"], "task_params": setup_params(c["task"], c.get("task_params") or {}, info),
                "ds": info.get("ds"), "dr": info.get("dr"), "critic": c["critic"],
                **{k: int(kw.get(k) or 0) for k in ("layers", "hidden", "embed", "batch_size", "steps")},
                "lr": float(kw.get("lr") or 0.0), "schedule": schedule_label(c["mi"]), "burn_in": 0,
                "precision": "fp32", "protocol": "sample", "n": int(c["n"])}

    def seed_rows(self, record) -> list[dict]:
        """One row per estimator x level x seed from sample_estimates.csv (the single estimate of
        that seed's dataset; a failed estimate is NaN and counted in diverged_seeds); ``variance``
        is each seed's squared deviation from the seeds' mean, so its mean over seeds is the
        variance over seeds."""
        from ..records import read_sample_estimates

        setup = self.setup(record.config)
        out = []
        for e in read_sample_estimates(Path(record.path) / self.estimates_file):
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

        from ..records import read_sample_estimates

        path = Path(run_dir) / self.estimates_file
        if not path.is_file():
            return None
        df = pd.DataFrame(read_sample_estimates(path))
        if df.empty:
            return None
        df["run_id"] = df["run_id"].where(df["run_id"].astype(bool), config.get("run_id") or Path(run_dir).name)
        df["seed"] = df["seed"].astype("Int64")
        df["step"] = pd.array([pd.NA] * len(df), dtype="Int64")
        return df

    def plot(self, run_dir: Path, out_dir: Path) -> list[Path]:
        from ..plots import plot_metric_bars, plot_sample_run
        from ..records import collect, read_config, read_sample_estimates, run_status

        rows = read_sample_estimates(Path(run_dir) / self.estimates_file) \
            if (Path(run_dir) / self.estimates_file).is_file() else []
        if not rows:
            raise MibenchError(f"{run_dir} has logged no estimates")
        cfg = read_config(run_dir)
        c = cfg["config"]
        title = f"{c.get('task')} · sample protocol n = {c.get('n')} · seeds {len(c.get('seeds') or [])}"
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
                 "| rank | estimator | kind | avg MSE | true MI | estimate | bias | variance | MSE | seeds | failed "
                 "| s / estimate | parameters | status |",
                 "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for _, r in group.iterrows():
            params_n = r["n_parameters"]
            lines.append(f"| {r['rank']} | {r['estimator']} | {r['kind']} | {fmt_num(r['rank_score'])} | "
                         f"{r['true_mi']:g} | {fmt_pm(r['mean_estimate'], r['mean_estimate_ci95'])} | "
                         f"{fmt_pm(r['bias'], r['bias_ci95'])} | {fmt_num(r['variance'])} | "
                         f"{fmt_pm(r['mse'], r['mse_ci95'])} | {r['n_seeds']} | {r['diverged_seeds'] or ''} | "
                         f"{fmt_num(r['seconds'], 2)} | "
                         f"{'' if params_n is None or params_n != params_n else int(params_n)} | "
                         f"{r.get('mi_status') if isinstance(r.get('mi_status'), str) else ''} |")
        lines.append("")
        return lines

    # -- sweeps ----------------------------------------------------------------------------------
    def expand(self, task: str, task_params: dict, estimators: list, axes: dict, scalars: dict, split) -> list[dict]:
        """One cell per critic x MI x n x estimate setting x estimator group, all seeds inside."""
        if axes.get("burn_in") is not None:
            raise MibenchError("burn_in belongs to the streaming protocol; a sample sweep (n set) has none")
        from ..checks import parse_seeds

        seeds = parse_seeds(listify(axes["seeds"])) if axes.get("seeds") is not None else [0]
        critics = [check_axis_value("critic", v) for v in listify(axes["critics"])] if axes.get("critics") else ["joint"]
        mis = [check_axis_value("mi", v) for v in listify(axes["mi"])] if axes.get("mi") is not None else [4.0]
        ns = listify(scalars.get("n"))
        est_axes = {fld: [check_axis_value(fld, v) for v in listify(axes[key])]
                    for key, fld in ESTIMATE_AXES if axes.get(key) is not None}
        other = {k: v for k, v in scalars.items() if k in ("device", "timeout") and v is not None}
        out = []
        for critic, mi, n in itertools.product(critics, mis, ns):
            for ecombo in itertools.product(*est_axes.values()):
                kw = dict(zip(est_axes, ecombo))
                for group in split_groups(estimators, split, by_critic=False):
                    cfg = SampleConfig(task=task, task_params=dict(task_params), estimators=list(group), critic=critic,
                                       mi=mi, n=n, seeds=seeds, estimate_kwargs=kw, **other).resolved()
                    out.append(dataclasses.asdict(cfg))
        return out

    def name_cells(self, configs: list[dict], split: bool) -> list[str]:
        names = []
        for cfg in configs:
            parts = [cfg["task"], *param_tokens(cfg["task_params"])]
            if split:
                parts.append("+".join(e.split(":")[-1] for e in cfg["estimators"]))
            parts.append(f"sample-n{cfg['n']}")
            if cfg["critic"] != "joint":
                parts.append(cfg["critic"])
            parts += [f"{k}{fmt_value(v)}" for k, v in sorted(cfg.get("estimate_kwargs", {}).items())]
            mi = cfg["mi"] if not isinstance(cfg["mi"], list) else ",".join(f"{v:g}" for v in cfg["mi"])
            parts += [mi_token(mi), "seeds" + "-".join(map(str, cfg["seeds"]))]
            names.append("_".join(parts))
        return names

    def describe_cell(self, config: dict) -> str:
        return f"{','.join(config['estimators'])}; n = {config['n']}, seeds {','.join(map(str, config['seeds']))}"
