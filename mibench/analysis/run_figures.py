"""Figures of run and sweep directories (``mibench plot``): reads the runs through
:mod:`mibench.records` and their protocols, draws with :mod:`mibench.plots`."""
from __future__ import annotations

from pathlib import Path

from mibench.errors import MibenchError
from mibench.records.io import slug as file_slug


def plot_results(target, out_dir=None, max_bar_plots: int = 24) -> list[Path]:
    """``mibench plot``: figures for a run directory or for everything below a sweep directory.

    * run directory: its protocol's figures (:meth:`mibench.protocols.base.RunProtocol.plot`), in the
      run directory unless ``out_dir`` is given; a run that did not complete (interrupted, killed,
      still running) is drawn from what it logged;
    * sweep / results directory (``out_dir`` default ``<target>/plots``): ``metrics_<setup>.png``
      per setup (seeds pooled), per setup and seed the protocol's figure with all its estimators
      (a streaming sweep's ``staircase_<setup>_s<seed>.png``, also when the sweep split them over
      cells), and ``sweep_<axis>_<task>.png`` for every axis that varies (ds, dr, nuisance, critic
      depth / width, batch size, critic type).
    """
    import pandas as pd

    from mibench.analysis.leaderboard import SETUP_KEY, collect_unique, no_complete_runs, per_seed_rows
    from mibench.plots import SWEEP_AXES, plot_metric_bars, plot_sweep, sweep_axes
    from mibench.protocols import get_protocol, protocol_of
    from mibench.records import read_config

    target = Path(target)
    if (target / "config.json").is_file():
        out = Path(out_dir) if out_dir else target
        out.mkdir(parents=True, exist_ok=True)
        return protocol_of(read_config(target)).plot(target, out)
    col = collect_unique([target])
    if not col.runs:
        raise MibenchError(no_complete_runs([target], col))
    out = Path(out_dir) if out_dir else target / "plots"
    written: list[Path] = []
    df = pd.DataFrame(per_seed_rows(col.runs))
    nuis = {str(r.path): (r.config.get("task_info") or {}).get("nuisance") for r in col.runs}
    df["nuisance"] = df["run_dir"].map(nuis)
    n_bars = n_stairs = 0
    named = ("task", "task_params", "critic", "layers", "hidden", "batch_size", "steps", "schedule")
    # a setup field the name and title above leave out, where it varies here: in both, so setups that
    # differ only in it (lr, n, precision, the protocol, ...) never write one figure over another
    extra = [k for k in SETUP_KEY if k not in named and df[k].astype(str).nunique() > 1]
    for key, g in df.groupby(SETUP_KEY, sort=True, dropna=False):
        s = dict(zip(SETUP_KEY, key))
        protocol = get_protocol(s["protocol"])
        label = f"{s['task']}" + (f" ({s['task_params']})" if s["task_params"] else "") + \
                f" · {protocol.setup_description(s)}" + "".join(f" · {k} {s[k]}" for k in extra if k != "n")
        slug = file_slug(f"{s['task']}_{s['task_params']}_{s['critic']}-d{s['layers']}w{s['hidden']}_b{s['batch_size']}"
                         f"_n{s['steps']}_mi{s['schedule']}" + "".join(f"_{k}{s[k]}" for k in extra))
        if n_bars < max_bar_plots:
            path = out / f"metrics_{slug}.png"
            plot_metric_bars(g, path, title=label)
            written.append(path)
            n_bars += 1
        for seed, runs in g.groupby("seed", sort=True):
            if n_stairs >= max_bar_plots:
                break
            path = protocol.plot_setup_seed(sorted(set(runs["run_dir"])), out / f"staircase_{slug}_s{seed}.png",
                                            f"{label} · seed {seed}")
            if path is not None:
                written.append(path)
                n_stairs += 1
    several = df["protocol"].nunique() > 1
    for (task, proto), g in df.groupby(["task", "protocol"], sort=True):     # a sample run has no batch-size axis
        axes = sweep_axes(g)
        # setup fields that are no axis but vary (steps, the schedule, lr, n, ...; task parameters besides the
        # axes'): each value its own series, never averaged with the others as if they were seeds
        unplotted = [k for k in SETUP_KEY if k not in ("task", "task_params", "protocol", *SWEEP_AXES)
                     and g[k].astype(str).nunique() > 1]
        if axes and g.groupby(axes, dropna=False)["task_params"].nunique().max() > 1:
            unplotted.append("task_params")
        for axis in axes:
            others = [a for a in axes if a != axis and not (axis == "ds" and a == "dr")] + unplotted
            style = None
            if others:
                g = g.assign(setup=g[others].astype(str).radd([f"{k} " for k in others]).agg(" · ".join, axis=1))
                style = "setup"
            path = out / f"sweep_{axis}_{file_slug(task)}{'_' + proto if several else ''}.png"
            plot_sweep(g, axis, path, title=f"{task}: estimation error vs {SWEEP_AXES[axis]}",
                       style=style if axis != "critic" else None)
            written.append(path)
    return written
