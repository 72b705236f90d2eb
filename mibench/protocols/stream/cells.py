"""The streaming protocol's sweep cells: the resolved configs of a grid, their names and one line each."""
from __future__ import annotations

import dataclasses
import itertools

from mibench.errors import MibenchError
from mibench.protocols.base import ProtocolCells
from mibench.protocols.setup import (
    check_axis_value,
    mi_token,
    param_tokens,
    split_groups,
)
from mibench.protocols.stream.config import AXES, StreamConfig
from mibench.utils.checks import listify


class StreamCells(ProtocolCells):
    def expand(self, task: str, task_params: dict, estimators: list, axes: dict, scalars: dict, split) -> list[dict]:
        from mibench.estimators.registry import require_streamable
        from mibench.protocols.schedule import check_burn_in, parse_schedule

        require_streamable(estimators)
        values = {}
        for key, fld in AXES:
            raw = axes.get(key)
            if raw is None:
                values[fld] = [getattr(StreamConfig, fld)] if fld != "seed" else [0]
            elif key == "seeds":
                from mibench.utils.checks import parse_seeds

                values[fld] = parse_seeds(listify(raw))
            else:
                values[fld] = [check_axis_value(fld, v) for v in listify(raw)]
        if axes.get("n") is not None or scalars.get("timeout") is not None:
            raise MibenchError("n and timeout belong to the sample protocol")
        out = []
        for combo in itertools.product(*(values[f] for _, f in AXES)):
            kw = dict(zip([f for _, f in AXES], combo))
            for group in split_groups(estimators, split):
                cfg = StreamConfig(task=task, task_params=dict(task_params), estimators=list(group), **kw,
                                **{k: v for k, v in scalars.items() if v is not None and k != "timeout"})
                cfg = cfg.resolved()
                check_burn_in(cfg.burn_in, parse_schedule(cfg.mi, cfg.steps))     # refused now, not per cell
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
