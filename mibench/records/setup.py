"""The setup of one run as the leaderboard records it: the columns, declared once.

Each protocol fills a :class:`RunSetup` from a run's ``config.json``
(:meth:`mibench.protocols.base.ProtocolRecords.setup`); the leaderboard groups and ranks by
:data:`SETUP_KEY` and writes :data:`SETUP_COLUMNS` first (:mod:`mibench.analysis.leaderboard`), and
the report reads them back (:mod:`mibench.report.reading`).  A column added here reaches all of them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class RunSetup:
    """What a run was: task, critic, training and schedule (a protocol's unused sizes are 0)."""

    task: str
    #: the task's parameters that name it, ``key=value;...`` (:func:`mibench.protocols.setup.setup_params`)
    task_params: str
    #: source and rendered dimensions of the tasks that have them (None elsewhere)
    ds: int | None
    dr: int | None
    critic: str
    layers: int
    hidden: int
    embed: int
    batch_size: int
    lr: float
    steps: int
    #: the true-MI schedule as a label (:func:`mibench.protocols.setup.schedule_label`)
    schedule: str
    burn_in: int
    precision: str
    protocol: str
    #: pairs per dataset (sample protocol; 0 for a stream)
    n: int
    #: the exact truth check's status where it did not hold (``not established``: the recorded true MI
    #: assumes a decodability the check could not prove); "" where the truth holds or is analytic
    truth_check: str = ""

    def row(self) -> dict:
        """The setup as leaderboard columns, in :data:`SETUP_COLUMNS` order."""
        return dataclasses.asdict(self)


#: the leaderboard's setup columns, in its order
SETUP_COLUMNS = [f.name for f in dataclasses.fields(RunSetup)]
#: the setup key the leaderboard groups by (ds / dr and the truth check follow from task + task_params, so they are
#: not part of it)
SETUP_KEY = [c for c in SETUP_COLUMNS if c not in ("ds", "dr", "truth_check")]


def truth_flag(task_info: dict | None) -> str:
    """A run's ``truth_check`` column: its task's exact-check status (``task_info.truth_check``) where that is
    not ``holds``, else ""."""
    status = ((task_info or {}).get("truth_check") or {}).get("status")
    return "" if status in (None, "holds") else str(status)

__all__ = ["RunSetup", "SETUP_COLUMNS", "SETUP_KEY", "truth_flag"]
