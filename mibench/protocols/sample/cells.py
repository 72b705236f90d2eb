"""The sample protocol's sweep cells: one per critic x MI x n x estimate setting x estimator group, all
seeds inside."""
from __future__ import annotations

import dataclasses
import itertools

from mibench.errors import MibenchError
from mibench.protocols.base import ProtocolCells
from mibench.protocols.sample.config import SampleConfig
from mibench.protocols.setup import (
    check_axis_value,
    fmt_value,
    mi_token,
    param_tokens,
    split_groups,
)
from mibench.utils.checks import listify

#: settings of critic-bound estimators a sample sweep may set (mibench.estimate's arguments)
ESTIMATE_AXES = [("hidden", "hidden"), ("layers", "layers"), ("embed", "embed"), ("batch_size", "batch_size"),
                 ("lr", "lr"), ("steps", "steps")]


class SampleCells(ProtocolCells):
    def expand(self, task: str, task_params: dict, estimators: list, axes: dict, scalars: dict, split) -> list[dict]:
        """One cell per critic x MI x n x estimate setting x estimator group, all seeds inside."""
        if axes.get("burn_in") is not None:
            raise MibenchError("burn_in belongs to the streaming protocol; a sample sweep (n set) has none")
        from mibench.utils.checks import parse_seeds

        # left out: SampleConfig's default seeds (0, 1, 2), as --help says, so a cell has a variance over seeds
        seeds = parse_seeds(listify(axes["seeds"])) if axes.get("seeds") is not None else list(SampleConfig().seeds)
        critics = ([check_axis_value("critic", v) for v in listify(axes["critics"])] if axes.get("critics")
                   else ["joint"])
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
