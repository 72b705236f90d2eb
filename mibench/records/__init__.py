"""Run records: every run-directory format mibench writes and reads, and nothing above them.

* :mod:`.io` -- atomic writes, strict CSV / JSON reads, checksums;
* :mod:`.formats` -- ``estimates.csv``, ``sample_estimates.csv``, ``summary.csv``;
* :mod:`.run_dir` -- ``config.json``: status (``stale`` for a dead writer), heartbeat, checksums,
  what ``--out DIR`` means (:func:`claim`), finding run directories;
* :mod:`.manifest` -- a sweep's ``sweep.json``;
* :mod:`.setup` -- a run's setup as the leaderboard's columns (:class:`RunSetup`);
* :mod:`.collect` -- complete runs below some paths, for the leaderboard and plots.

This package imports nothing of mibench but :mod:`mibench.errors`; everything that reads or writes
a run directory goes through it.
"""
from mibench.records.collect import Collection, RunRecord, collect
from mibench.records.formats import (
    SAMPLE_ESTIMATE_COLUMNS,
    SAMPLE_OUTCOMES,
    SAMPLE_SUMMARY_EXTRA,
    STREAM_ESTIMATE_COLUMNS,
    SUMMARY_COLUMNS,
    SUMMARY_METRICS,
    EstimatesLog,
    read_estimates,
    read_sample_estimates,
    read_summary,
    write_estimates,
    write_sample_estimates,
    write_summary,
)
from mibench.records.io import (
    atomic_path,
    file_digest,
    float_or_nan,
    read_csv_rows,
    read_json,
    slug,
    write_bytes,
    write_json,
    write_rows,
    write_text,
)
from mibench.records.manifest import SweepManifest, read_manifest
from mibench.records.run_dir import (
    CONFIG,
    MANIFEST,
    Claim,
    RunHeader,
    RunWriter,
    claim,
    config_diff,
    find_run_dirs,
    fingerprint,
    is_complete,
    read_config,
    recorded_file,
    run_status,
    sweep_cells,
    unique_dir,
    verify_files,
)
from mibench.records.setup import SETUP_COLUMNS, SETUP_KEY, RunSetup

__all__ = [
    "Collection", "RunRecord", "collect", "EstimatesLog", "SAMPLE_ESTIMATE_COLUMNS", "SAMPLE_OUTCOMES",
    "SAMPLE_SUMMARY_EXTRA", "STREAM_ESTIMATE_COLUMNS", "SUMMARY_COLUMNS", "SUMMARY_METRICS", "read_estimates",
    "read_sample_estimates", "read_summary", "write_estimates", "write_sample_estimates", "write_summary",
    "atomic_path", "file_digest", "float_or_nan", "read_csv_rows", "read_json", "slug", "write_bytes", "write_json",
    "write_rows", "write_text", "SweepManifest", "read_manifest", "CONFIG", "MANIFEST", "Claim", "RunHeader",
    "RunWriter", "claim", "config_diff", "find_run_dirs", "fingerprint", "is_complete", "read_config", "recorded_file",
    "run_status", "sweep_cells", "unique_dir", "verify_files", "RunSetup", "SETUP_COLUMNS", "SETUP_KEY",
]
