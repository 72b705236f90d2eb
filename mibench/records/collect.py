"""Collecting run directories for the leaderboard, plots and ``load_runs``: every complete run
below the given paths with its config.json and summary.csv, read strictly and checked against
the checksum the run recorded for summary.csv.  A reader of a per-estimate file (``estimates.csv``,
``sample_estimates.csv``: the leaderboard's sample rows, plots, ``load_runs``) checks that file
itself when it reads it (:func:`~mibench.records.run_dir.recorded_file`), so a committed run kept
as config.json + summary.csv (the per-step log left out for size) still aggregates."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mibench.records.formats import read_summary
from mibench.records.manifest import read_manifest
from mibench.records.run_dir import find_run_dirs, read_config, verify_files


@dataclass
class RunRecord:
    path: Path
    config: dict        # the whole config.json
    summary: list       # summary.csv rows (dicts, numbers parsed)


@dataclass
class Collection:
    runs: list
    incomplete: list = field(default_factory=list)
    duplicates: list = field(default_factory=list)   # (skipped run dir, the run kept) pairs
    manifests: dict = field(default_factory=dict)    # sweep dir -> sweep.json


def collect(paths) -> Collection:
    """Complete runs below ``paths`` (run, sweep or results directories).  A damaged file of a
    complete run's summary.csv is one :class:`~mibench.errors.UnreadableInput` line naming it."""
    complete, incomplete, sweeps = find_run_dirs(paths)
    runs = []
    for d in complete:
        cfg = read_config(d)
        verify_files(d, cfg, names=("summary.csv",))
        runs.append(RunRecord(d, cfg, read_summary(d / "summary.csv")))
    manifests = {d: m for d in sweeps if (m := read_manifest(d)) is not None}
    return Collection(runs, incomplete, [], manifests)
