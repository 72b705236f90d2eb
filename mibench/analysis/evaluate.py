"""``mibench.evaluate(my_estimator, suite=...)``: the researcher's loop.

Runs a standard suite under the sample protocol (:mod:`mibench.protocols.sample.run`) with your
estimator only, then ranks it next to the committed baselines in ``results/sample_leaderboard/``
(built-in neural, baseline and generative estimators on the *same* datasets: the suite's task, n,
MI levels and seeds are the committed ones, and datasets depend only on (task, n, seed, level)).
Installed from a wheel (no checkout), the compact copy shipped in the package is used
(:mod:`mibench.analysis.baselines`).

``my_estimator``: a registered name or ``package.module:Name``, a sample estimator object / class
(``kind``, ``estimate(x, y, *, seed=0) -> nats``, ``n_parameters``), or a function ``f(x, y) -> nats``.
Its name in the results: ``name=`` when given, else the object's own ``name`` attribute, else its
class or function name *qualified by its module* (``my_pkg.estimators.CCA``; ``user.CCA`` for one
defined in a script, notebook or ``python -c``), so that a class called ``CCA`` or a function
called ``gaussian`` never collides with a built-in estimator or alias.

Suites (see :data:`SUITES`): ``quick`` = the Gaussian setup (about a minute for a fast estimator);
``paper`` = Gaussian, vision and text (both ranked against the sample leaderboard); ``bmi`` = BMI v1's 40
tasks at BMI's n = 5,000 and ``reference`` = the whole reference table (BMI, the sample leaderboard's
setups, mutinfo's images and MNIST channel), ranked against the reference table's runs
(``results/reference/sweep``, or their packaged copy; docs/reference-table.md).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from mibench.errors import MibenchError

#: the committed sample-protocol leaderboard's setups (results/sample_leaderboard/README.md):
#: task, task parameters, MI levels (bits), n pairs per dataset, seeds
SETUPS = {
    "gaussian": {"task": "gaussian", "task_params": {}, "mi": [4.0]},
    "vision": {"task": "vision", "task_params": {}, "mi": [4.0]},
    "text": {"task": "text", "task_params": {"ds": 2}, "mi": [1.0]},
}
#: common to every setup: pairs per dataset, seeds, and the settings of critic-bound estimators
#: (mibench.estimate with its defaults: joint critic, data-sized width / batch / steps)
COMMON = {"n": 10_000, "seeds": [0, 1, 2], "critic": "joint", "estimate_kwargs": {}}
SUITES = {"quick": ["gaussian"], "paper": ["gaussian", "vision", "text"], "bmi": "the reference table's BMI part",
          "reference": "the whole reference table"}


def baseline_dir(suite: str = "quick") -> Path:
    """Where ``suite``'s baselines are read from: the quick and paper suites' ($MIBENCH_SAMPLE_BASELINES,
    else ``results/sample_leaderboard`` of the checkout, else the copy shipped in the package), the bmi and
    reference suites' ($MIBENCH_REFERENCE_BASELINES, else ``results/reference/sweep``, else its packaged
    copy); :func:`mibench.analysis.baselines.baseline_dir`."""
    from mibench.analysis.baselines import REFERENCE
    from mibench.analysis.baselines import baseline_dir as _baseline_dir

    return _baseline_dir(REFERENCE) if suite in ("bmi", "reference") else _baseline_dir()


def suite_setups(suite: str) -> list[dict]:
    """The setups of a suite, each {name, task, task_params, mi (levels, bits), n, seeds}: the sample
    leaderboard's (:data:`SETUPS`, :data:`COMMON`) or the reference table's (its sweep preset)."""
    if suite in ("quick", "paper"):
        return [{"name": s, **SETUPS[s], "n": COMMON["n"], "seeds": COMMON["seeds"]} for s in SUITES[suite]]
    from mibench.sweep.presets import preset_dict

    out = []
    for t in preset_dict("reference", "full")["tasks"]:
        if suite == "bmi" and t.get("n") != 5000:
            continue
        levels = t["mi"][0] if isinstance(t["mi"], list) and isinstance(t["mi"][0], list) else t["mi"]
        params = dict(t.get("params", {}))
        name = t["task"] + "".join(f"-{k}-{v}" for k, v in params.items())
        out.append({"name": name, "task": t["task"], "task_params": params,
                    "mi": list(levels) if isinstance(levels, list) else [levels], "n": t["n"], "seeds": [0, 1, 2]})
    return out


#: module qualifier of names derived from objects defined in a script, notebook or ``python -c``
SCRIPT_QUALIFIER = "user"


def _name_of(obj) -> str:
    """The results name of a user's estimator: its own ``name`` attribute, else ``module.Name`` of
    its class or function (``user.Name`` when defined in ``__main__``)."""
    own = getattr(obj, "name", None)
    if isinstance(own, str) and own.strip():
        return own.strip()
    target = obj if isinstance(obj, type) or isinstance(getattr(obj, "__name__", None), str) else type(obj)
    module = getattr(target, "__module__", None) or ""
    if module in ("", "__main__") or module.startswith("<"):
        module = SCRIPT_QUALIFIER
    return f"{module}.{target.__name__}"


def evaluate(my_estimator, suite: str = "quick", *, name: str | None = None, baselines=None, out=None,
             timeout: float | None = 600.0, seeds=None, progress: bool = True, show: bool = True):
    """Benchmark ``my_estimator`` on a standard suite and rank it next to the committed baselines.

    Parameters
    ----------
    my_estimator : a registered name or ``package.module:Name``, a sample estimator object / class
        (``kind``, ``estimate(x, y, *, seed=0) -> nats``, ``n_parameters``) or a function
        ``f(x, y) -> nats``.
    suite : ``"quick"`` (the Gaussian setup), ``"paper"`` (Gaussian, vision, text), ``"bmi"`` (BMI v1's 40
        tasks) or ``"reference"`` (the whole reference table); :data:`SUITES`.
    name : the name in the leaderboard (default: the object's ``name``, else ``module.Name``).
    baselines : a directory of baseline runs (default :func:`baseline_dir`).
    out : where the run directories go (default a temporary directory); running again into the same
        ``out`` keeps (or continues) the runs already there.
    timeout : seconds per estimate before its worker is killed (``None``: in-process, no limit).
    seeds : override the suite's seeds (0, 1, 2).
    progress, show : print each estimate / the ranking.

    Returns
    -------
    DataFrame : the leaderboard (:mod:`mibench.analysis.leaderboard` columns) of the suite's setups with your
        estimator's rows.
    """
    from mibench.analysis.leaderboard import build
    from mibench.estimators import ESTIMATORS
    from mibench.estimators.plugins import register_estimator
    from mibench.protocols.sample.config import SampleConfig
    from mibench.protocols.sample.run import prepare, run_sample
    from mibench.records import claim, find_run_dirs

    if suite not in SUITES:
        raise MibenchError(f"unknown suite {suite!r}; choose from: {', '.join(SUITES)}")
    if isinstance(my_estimator, str):
        est_name = ESTIMATORS.get(my_estimator).name
    else:
        est_name = register_estimator(name or _name_of(my_estimator), my_estimator, replace=True)
    base = Path(baselines) if baselines is not None else baseline_dir(suite)
    if not base.is_dir() or not find_run_dirs([base])[0]:
        env = "MIBENCH_REFERENCE_BASELINES" if suite in ("bmi", "reference") else "MIBENCH_SAMPLE_BASELINES"
        raise MibenchError(f"no baseline runs found under {base}: pass baselines=DIR (a directory of sample-protocol "
                           f"runs) or set {env}")
    out_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="mibench-evaluate-"))
    run_dirs, kept = [], []
    for s in suite_setups(suite):
        cfg = SampleConfig(task=s["task"], task_params=dict(s["task_params"]), estimators=[est_name],
                           mi=s["mi"] if len(s["mi"]) > 1 else s["mi"][0], n=s["n"], critic=COMMON["critic"],
                           estimate_kwargs=dict(COMMON["estimate_kwargs"]),
                           seeds=list(seeds) if seeds is not None else s["seeds"], timeout=timeout, device="cpu")
        d = out_dir / f"{s['name']}_{est_name.replace(':', '-').replace('/', '-')}"
        prepared = prepare(cfg)
        c = claim(d, prepared.config_dict(), resume=True)   # the same run again: kept or continued
        if c.mode != "complete":
            run_sample(prepared, c, progress=progress, plot=False)
        else:
            kept.append(d.name)
        run_dirs.append(d)
    if kept and show:
        # an estimator changed since is not re-run: say so rather than rank old numbers silently
        print(f"kept {len(kept)} complete run(s) already in {out_dir} (not re-run: pass another out, or delete "
              "them, after changing the estimator)")
    # the estimator's own rows come from these runs only: a registered name's baseline rows (other seeds,
    # setups outside the suite) are neither pooled with them nor ranked as the user's
    fresh = {str(Path(d).resolve()) for d in run_dirs}
    board, _ = build([base, *run_dirs], prefer=run_dirs, keep_row=lambda row: row["estimator"] != est_name
                     or str(Path(row["run_dir"]).resolve()) in fresh)
    mine = board[board["estimator"] == est_name]
    keys = {(r["task"], r["task_params"], r["n"], r["schedule"]) for _, r in mine.iterrows()}
    board = board[[(r["task"], r["task_params"], r["n"], r["schedule"]) in keys for _, r in board.iterrows()]]
    if show:
        print(format_ranking(board, est_name))
        for note in _failed_notes(run_dirs):
            print(f"! failed: {note}")
    return board


def _failed_notes(run_dirs) -> list:
    """What each failed estimate of the user's runs raised (the ranking shows their MSE as inf only)."""
    from mibench.records import read_config

    return [note for d in run_dirs for note in read_config(d).get("failed_estimates", [])]


def format_ranking(board, est_name: str) -> str:
    lines = []
    for (task, params, n, sched), g in board.groupby(["task", "task_params", "n", "schedule"], sort=False):
        ranks = g.drop_duplicates("estimator").sort_values("rank")
        total = len(ranks)
        me = ranks[ranks["estimator"] == est_name]
        if me.empty:
            continue
        r = me.iloc[0]
        label = f"{task}" + (f" ({params})" if params else "") + f", n = {n}, MI {sched} bits"
        if total == 1:
            # nothing to rank against: no committed baseline has this setup (yet)
            lines.append(f"{label}: {est_name} has no baselines to rank against here (MSE averaged over levels "
                         f"{r['rank_score']:.3f} bits², {r['seconds']:.2f} s per estimate)")
            continue
        theirs = int(ranks[ranks["estimator"] != est_name]["n_seeds"].median())
        seeds = f"; {int(r['n_seeds'])} seed(s), the baselines {theirs}" if int(r["n_seeds"]) != theirs else ""
        failed = f"; {int(r['diverged_seeds'])} failed estimate(s), below" if int(r["diverged_seeds"]) else ""
        lines.append(f"{label}: {est_name} ranks {int(r['rank'])} of {total} (MSE averaged over levels "
                     f"{r['rank_score']:.3f} bits², {r['seconds']:.2f} s per estimate{seeds}{failed})")
        for _, o in ranks.iterrows():
            mark = "->" if o["estimator"] == est_name else "  "
            lines.append(f"  {mark} {int(o['rank']):>2}. {o['estimator']:<28} {o['kind']:<11} MSE {o['rank_score']:.3f}"
                         f"  {o['seconds']:.2f} s")
    return "\n".join(lines) if lines else f"{est_name}: no setup of the suite matched the baselines"
