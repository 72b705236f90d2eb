"""The sample protocol's face to the rest of mibench (:class:`~mibench.protocols.base.RunProtocol`):
configs and running here, reading its run directories in :mod:`.records`, sweep cells in
:mod:`.cells`.  Its config: :mod:`.config`; running it: :mod:`.run`."""
from __future__ import annotations

import re
import time

import numpy as np

from mibench.errors import MibenchError
from mibench.protocols.base import RunProtocol
from mibench.protocols.sample.cells import SampleCells
from mibench.protocols.sample.config import DEFAULT_TIMEOUT, SampleConfig, check_flags_reach_a_critic
from mibench.protocols.sample.records import SampleRecords


class SampleProtocol(SampleRecords, SampleCells, RunProtocol):
    name = "sample"
    config_module = "mibench.protocols.sample.config"
    run_module = "mibench.protocols.sample.run"
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
        given = set(getattr(args, "_given", ()))
        stream_only = sorted(given & {"burn_in", "engine", "precision"})
        if stream_only:
            raise MibenchError(f"--{stream_only[0].replace('_', '-')} belongs to the streaming protocol; a sample run "
                               "(--n) has no training stream")
        if "seed" in given and args.seeds is not None:      # --seed was ignored
            raise MibenchError("give --seed or --seeds, not both (a sample run takes the seeds of --seeds)")
        kwargs = {k: getattr(args, k) for k in ("steps", "batch_size", "lr", "hidden", "layers", "embed") if k in given}
        check_flags_reach_a_critic(kwargs, args.estimators)
        # left out, a sample run takes one level (4 bits: one dataset per seed, not five); asked for, the
        # staircase's levels, as a sweep's sample cells take them
        stepwise = str(args.mi).strip().lower() in ("stepwise", "staircase")
        mi = "4" if stepwise and "mi" not in given else args.mi
        timeout = DEFAULT_TIMEOUT if args.timeout is None else (None if args.timeout == 0 else args.timeout)
        return SampleConfig(task=args.task, task_params=task_params, estimators=args.estimators, critic=args.critic,
                            mi=mi, n=args.n, seeds=args.seeds if args.seeds is not None else [args.seed],
                            timeout=timeout, device=args.device, estimate_kwargs=kwargs)

    def default_run_name(self, cfg) -> str:
        est = ",".join(cfg.estimators)
        est = est if len(est) <= 40 else f"{len(cfg.estimators)}est"
        name = f"{cfg.task}_{est}_n{cfg.n}_mi{'-'.join(f'{v:g}' for v in cfg.levels)}_{time.strftime('%Y%m%d-%H%M%S')}"
        return re.sub(r"[^A-Za-z0-9_.+-]", "-", name)

    def format_result(self, result) -> str:
        info = result.config["task_info"]
        cfg = result.config["config"]
        names = {id(r): r["estimator"] + (f" ({r['critic']})" if r.get("critic") else "") for r in result.summary}
        width = max([16] + [len(v) + 1 for v in names.values()])
        sizes = ":" + "".join(f" {k}={info[k]}" for k in ("ds", "dr") if info.get(k) is not None)
        lines = [f"task {info.get('task')}{sizes if sizes != ':' else ''} · sample protocol, n = {cfg['n']}, "
                 f"seeds {','.join(map(str, cfg['seeds']))} · device {result.config['environment']['device']}"]
        header = (f"{'estimator':<{width}}{'kind':>11}{'true':>9}{'mean':>8}{'bias':>8}{'var':>8}{'mse':>8}{'ok':>4}"
                  f"{'s/est':>8}{'params':>9}  status")
        lines += [header, "-" * len(header)]
        one_seed = len(cfg["seeds"]) == 1            # no spread to show: '–', not a variance of 0
        for r in result.summary:
            secs = f"{r['seconds']:>7.2f}" if np.isfinite(r["seconds"]) else f"{'–':>7}"
            var = f"{'–':>7}" if one_seed else f"{r['variance']:>7.3f}"
            lines.append(f"{names[id(r)]:<{width}}{r['kind']:>11} {r['true_mi']:>8.4g} {r['mean_estimate']:>7.3f}"
                         f" {r['bias']:>7.3f} {var} {r['mse']:>7.3f}{r['steps']:>4d} {secs}"
                         f" {r['n_parameters']:>8d}" + (f"  {r['mi_status']}" if r.get("mi_status") else ""))
        for name, info in (result.config.get("estimator_info") or {}).items():
            lines.append(f"  {name}: {info}")
        for note in result.config.get("failed_estimates", []):
            lines.append(f"! failed: {note}")
        return "\n".join(lines)
