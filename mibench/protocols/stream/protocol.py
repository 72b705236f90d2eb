"""The streaming protocol (paper 002 §5): the estimators' critics train on a fresh batch at every
step while the true MI follows a schedule; every estimator reports an estimate at every step, and
bias / variance / MSE are taken over each level's steps (:mod:`mibench.metrics`).

:class:`StreamProtocol` is its face to the rest of mibench (:class:`~mibench.protocols.base.RunProtocol`):
configs and running here, reading its run directories in :mod:`.records`, sweep cells in :mod:`.cells`.
Its config: :mod:`.config`; running it: :mod:`.run` (checks, the run directory) and :mod:`.training`
(the training loop).
"""
from __future__ import annotations

import re
import time

from mibench.errors import MibenchError
from mibench.protocols.base import RunProtocol
from mibench.protocols.params import values_from_args
from mibench.protocols.setup import schedule_label
from mibench.protocols.stream.cells import StreamCells
from mibench.protocols.stream.config import StreamConfig
from mibench.protocols.stream.records import StreamRecords


class StreamProtocol(StreamRecords, StreamCells, RunProtocol):
    name = "stream"
    config_module = "mibench.protocols.stream.config"
    run_module = "mibench.protocols.stream.run"
    estimates_file = "estimates.csv"
    record_files = ("estimates.csv", "summary.csv")
    empty_columns = ("seconds", "n_parameters")

    # -- configs and running -------------------------------------------------------------------
    def claims(self, settings: dict) -> bool:
        return settings.get("n") is None

    def config_from_args(self, args, task_params: dict) -> StreamConfig:
        if getattr(args, "seeds", None) is not None or getattr(args, "timeout", None) is not None:
            raise MibenchError("--seeds and --timeout belong to the sample protocol: add --n N (e.g. --n 10000); "
                               "a streaming run takes one --seed")
        return StreamConfig(task_params=task_params, **values_from_args(args, StreamConfig))

    def failed_estimates(self, config: dict) -> list[str]:
        return []          # a diverged estimator is a result, recorded with its step

    def default_run_name(self, cfg) -> str:
        est = ",".join(cfg.estimators)
        est = est if len(est) <= 40 else f"{len(cfg.estimators)}est"
        mi = schedule_label(cfg.mi).replace(",", "-")      # a drawn level as printed: 3.32193, not 3.321928094887362
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
            # a space before every number, however wide (a diverging bound reads -25559.643)
            cells = "".join(f" {_number(r[k]):>{w}}" for k, w in (("mean_estimate", 7), ("bias", 7), ("variance", 7),
                                                                   ("mse", 7)))
            lines.append(f"{r['estimator']:<{width}}{r['true_mi']:>6g}{cells} {r['steps']:>6d}")
        for name, step in result.diverged.items():
            lines.append(f"! {name} diverged (non-finite estimate) at step {step}; its later steps are excluded")
        for note in cfg.get("notes", []):
            lines.append(f"note: {note}")
        return "\n".join(lines)


def _number(v: float) -> str:
    """A summary number as the run's table prints it: 3 decimals, or 4 significant digits when that would
    be wider than the column."""
    return f"{v:.3f}" if abs(v) < 1000 else f"{v:.4g}"
