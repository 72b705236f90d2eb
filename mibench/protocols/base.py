"""The run-protocol interface: what every protocol provides, so that ``run``, ``sweep``,
``leaderboard``, ``plot``, ``load_runs`` and ``--config`` never ask which protocol they hold.

Two protocols implement it (compare bmi's ``src/bmi/interface.py``, which keeps its interfaces in a
module that imports nothing of the package):

* ``stream`` (:mod:`mibench.protocols.stream.protocol`): the estimators' critics train on a fresh batch at
  every step while the true MI follows a schedule; one estimate per step (the paper's protocol);
* ``sample`` (:mod:`mibench.protocols.sample.protocol`): one fixed dataset of n pairs per true-MI level and
  seed, one number per estimator and dataset (the BMI benchmark's protocol).

The interface is three small ones, one concern each, and each protocol implements them in a module
of its own: :class:`ProtocolRunner` (configs and running: ``protocol.py``), :class:`ProtocolRecords`
(reading its run directories: ``records.py``) and :class:`ProtocolCells` (a sweep's cells:
``cells.py``).

A run directory says which protocol wrote it (config.json ``protocol``; runs written before the
field existed are ``stream``), and :func:`mibench.protocols.protocol_of` returns its protocol.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar


@dataclass
class PreparedRun:
    """A run checked and ready to start (:meth:`RunProtocol.prepare`): its resolved config, the torch
    device and the built task; each protocol's subclass adds what it planned (the streaming
    protocol's MI schedule, the sample protocol's estimator kinds)."""

    config: Any
    device: Any
    task: Any

    def config_dict(self) -> dict:
        """The resolved config as config.json records it (what ``--out`` claims are compared by)."""
        return dataclasses.asdict(self.config)


class ProtocolRunner:
    """Configs and running: how ``mibench run`` and a sweep cell make a run of this protocol."""

    #: the protocol's name in config.json and in the leaderboard's ``protocol`` column
    name: ClassVar[str]
    #: the module with its config (``config_from_dict``) and the one that runs it (``prepare``, ``run``);
    #: imported when first needed, so that choosing a protocol loads neither
    config_module: ClassVar[str]
    run_module: ClassVar[str]

    # -- configs ---------------------------------------------------------------------------
    def claims(self, settings: dict) -> bool:
        """Whether a run with these settings (``n``, ``timeout``, ...) is of this protocol."""
        raise NotImplementedError

    def config_from_args(self, args, task_params: dict):
        """A config object from ``mibench run``'s parsed arguments (flags of the other protocol are
        refused in one line)."""
        raise NotImplementedError

    def config_from_dict(self, data: dict, where: str = "config") -> Any:
        """A config object from a dict (config.json's ``config``, a sweep cell); unknown fields and
        values of the wrong type are one-line errors (the protocol's ``config_module``)."""
        return importlib.import_module(self.config_module).config_from_dict(data, where)

    def prepare(self, cfg) -> PreparedRun:
        """Validate everything the run needs and build the task; a user mistake is one line,
        raised before any directory is written (the protocol's ``run_module``)."""
        prepared = importlib.import_module(self.run_module).prepare(cfg)
        from mibench.tasks.shapes import check_critic_for_task

        check_critic_for_task(prepared.config.critic, prepared.task)    # an image critic needs an image task
        return prepared

    # -- running ---------------------------------------------------------------------------
    def run(self, prepared: PreparedRun, out_dir, *, progress: bool = False, plot: bool = True,
            run_id: str | None = None, extra: dict | None = None, resume: bool = False) -> Any:
        """Run (or, with ``resume``, continue) and write the run directory ``out_dir`` (a path, or
        the :class:`~mibench.records.Claim` the caller made of it; None: nothing is written)."""
        return importlib.import_module(self.run_module).run(prepared, out_dir, progress=progress, plot=plot,
                                                            run_id=run_id, extra=extra, resume=resume)

    def failed_estimates(self, config: dict) -> list[str]:
        """One line per estimate that failed in a finished run (config.json)."""
        return list(config.get("failed_estimates") or [])

    def format_result(self, result) -> str:
        """The table ``mibench run`` prints."""
        raise NotImplementedError

    def default_run_name(self, cfg) -> str:
        """A readable directory name for the run (``results/runs/<name>``)."""
        raise NotImplementedError



class ProtocolRecords:
    """Reading what the protocol's runs recorded: the leaderboard's rows and Markdown, ``load_runs``'
    frames, ``mibench plot``'s figures."""

    #: the per-estimate file of its run directories
    estimates_file: ClassVar[str]
    #: the files a complete run's config.json records checksums for
    record_files: ClassVar[tuple[str, ...]]

    def setup(self, config: dict) -> dict:
        """The leaderboard's setup columns of a run: a :class:`mibench.records.setup.RunSetup` filled
        from its config.json, as a dict (:meth:`~mibench.records.setup.RunSetup.row`)."""
        raise NotImplementedError

    def seed_rows(self, record) -> list[dict]:
        """One row per estimator x true-MI level x seed of a complete run: the samples the
        leaderboard aggregates (setup columns, ``estimator``, ``true_mi``, ``seed``, the metrics,
        ``diverged``, ``kind``, ``seconds``, ``n_parameters``, ``mi_status``, ``mi_stderr``)."""
        raise NotImplementedError

    def estimate_frame(self, run_dir: Path, config: dict):
        """The run's estimates as a pandas DataFrame for :func:`mibench.load_runs`: at least
        ``estimator``, ``true_mi``, ``estimate`` (bits), ``seed``, ``run_id``."""
        raise NotImplementedError

    def plot(self, run_dir: Path, out_dir: Path) -> list[Path]:
        """``mibench plot RUN``: the run's figures (also for a run that did not finish)."""
        raise NotImplementedError

    def plot_setup_seed(self, run_dirs, path: Path, label: str) -> Path | None:
        """A sweep's figure of one setup and seed with all its estimators (None: nothing to draw)."""
        raise NotImplementedError

    def metric_mean(self, metric: str, group) -> float:
        """A leaderboard metric over the seeds of one row (``group``: its per-seed rows, a DataFrame):
        the mean of the seeds' finite values."""
        import numpy as np

        vals = group[metric].to_numpy(dtype=float)
        return float(np.nanmean(vals)) if np.isfinite(vals).any() else float("nan")

    def metric_ci95(self, metric: str, values) -> float:
        """The half-width of the 95% interval of a leaderboard metric's mean over seeds."""
        from mibench.metrics import t_halfwidth

        return t_halfwidth(values)

    #: what a failed seed is called in a leaderboard's ``diverged_seeds`` column
    failure_word: ClassVar[str] = "diverged"
    #: leaderboard columns this protocol leaves empty (not shown in its tables)
    empty_columns: ClassVar[tuple[str, ...]] = ()

    def setup_description(self, fields: dict) -> str:
        """How a setup ran, in a few words (``joint critic 2×256, batch 64, 20000 steps``)."""
        raise NotImplementedError

    def shown_setup_fields(self, fields: dict) -> dict:
        """The setup columns worth showing (those the protocol leaves at 0 / unset dropped)."""
        return {k: v for k, v in fields.items() if v not in (None, "")}

    def seeds_of(self, config: dict) -> list:
        """The seeds of one run (config.json)."""
        raise NotImplementedError

    def markdown_section(self, group, first, level: int = 2) -> list[str]:
        """The leaderboard's Markdown section of one setup (``group``: its rows, ``first``: one), its
        heading at ``level``."""
        raise NotImplementedError


class ProtocolCells:
    """A sweep's cells of this protocol: their resolved configs, names and descriptions."""

    def expand(self, task: str, task_params: dict, estimators: list, axes: dict, scalars: dict,
               split) -> list[dict]:
        """The resolved configs of a sweep's cells for one task and parameter combination."""
        raise NotImplementedError

    def name_cells(self, configs: list[dict], split: bool) -> list[str]:
        """Readable, deterministic cell names (made unique by the sweep)."""
        raise NotImplementedError

    def describe_cell(self, config: dict) -> str:
        """One line for ``mibench sweep --dry-run``."""
        raise NotImplementedError


class RunProtocol(ProtocolRunner, ProtocolRecords, ProtocolCells):
    """A run protocol: how its runs are made (:class:`ProtocolRunner`), read
    (:class:`ProtocolRecords`) and laid out in a sweep (:class:`ProtocolCells`)."""
