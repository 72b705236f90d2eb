"""The run-protocol interface: what every protocol provides, so that ``run``, ``sweep``,
``leaderboard``, ``plot``, ``load_runs`` and ``--config`` never ask which protocol they hold.

Two protocols implement it (compare bmi's ``src/bmi/interface.py``, which keeps its interfaces in a
module that imports nothing of the package):

* ``stream`` (:mod:`mibench.protocols.stream`): the estimators' critics train on a fresh batch at
  every step while the true MI follows a schedule; one estimate per step (the paper's protocol);
* ``sample`` (:mod:`mibench.protocols.sample`): one fixed dataset of n pairs per true-MI level and
  seed, one number per estimator and dataset (the BMI benchmark's protocol).

A run directory says which protocol wrote it (config.json ``protocol``; runs written before the
field existed are ``stream``), and :func:`mibench.protocols.protocol_of` returns its protocol.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar


class RunProtocol:
    """Base class of the protocols; each method documents its contract."""

    #: the protocol's name in config.json and in the leaderboard's ``protocol`` column
    name: ClassVar[str]
    #: the per-estimate file of its run directories
    estimates_file: ClassVar[str]
    #: the files a complete run's config.json records checksums for
    record_files: ClassVar[tuple[str, ...]]

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
        values of the wrong type are one-line errors."""
        raise NotImplementedError

    def prepare(self, cfg) -> Any:
        """Validate everything the run needs and build the task: ``(cfg resolved, device, task, ...)``;
        a user mistake is one line, raised before any directory is written."""
        raise NotImplementedError

    def resolved_dict(self, prepared) -> dict:
        """The resolved config of ``prepared`` as recorded in config.json (for ``--out`` claims)."""
        raise NotImplementedError

    # -- running ---------------------------------------------------------------------------
    def run(self, prepared, out_dir: Path | None, *, progress: bool = False, plot: bool = True,
            run_id: str | None = None, extra: dict | None = None, resume: bool = False) -> Any:
        """Run (or, with ``resume``, continue) and write the run directory ``out_dir``."""
        raise NotImplementedError

    def failed_estimates(self, config: dict) -> list[str]:
        """One line per estimate that failed in a finished run (config.json)."""
        return list(config.get("failed_estimates") or [])

    def format_result(self, result) -> str:
        """The table ``mibench run`` prints."""
        raise NotImplementedError

    def default_run_name(self, cfg) -> str:
        """A readable directory name for the run (``results/runs/<name>``)."""
        raise NotImplementedError

    # -- reading -----------------------------------------------------------------------------
    def setup(self, config: dict) -> dict:
        """The leaderboard's setup columns (:data:`mibench.leaderboard.SETUP_COLUMNS`) of a run."""
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

    def metric_ci95(self, metric: str, values) -> float:
        """The half-width of the 95% interval of a leaderboard metric's mean over seeds."""
        from ..metrics import t_halfwidth

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

    def markdown_section(self, group, first) -> list[str]:
        """The leaderboard's Markdown section of one setup (``group``: its rows, ``first``: one)."""
        raise NotImplementedError

    # -- sweeps ------------------------------------------------------------------------------
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
