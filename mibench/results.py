"""Run directories: atomic writes and readers.

A run directory holds ``config.json`` (resolved config, versions, device, seed, status),
``estimates.csv`` (step, estimator, critic, true_mi, estimate; bits), ``summary.csv`` (see
:data:`mibench.metrics.SUMMARY_COLUMNS`) and ``staircase.png``.  Every file is written to a
temporary name in the same directory and renamed into place, so a reader never sees half a file;
``config.json``'s ``status`` is ``running`` until the run ends as ``complete`` (or ``interrupted``
/ ``failed``), so an interrupted run is never mistaken for a finished one.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np


ESTIMATE_COLUMNS = ["step", "estimator", "critic", "true_mi", "estimate"]


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; on success rename it onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def write_rows(path, rows: list[dict], columns: list[str]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(r.get(k)) for k in columns})
    write_text(path, buf.getvalue())


def _fmt(v):
    if isinstance(v, float):
        return "nan" if np.isnan(v) else repr(round(v, 6)) if abs(v) < 1e15 else repr(v)
    return v


def write_estimates(path, names, critic, true_mi: np.ndarray, estimates: np.ndarray) -> None:
    """Long format: one row per step and estimator (bits).  Vectorised through numpy."""
    steps = len(true_mi)
    buf = io.StringIO()
    buf.write(",".join(ESTIMATE_COLUMNS) + "\n")
    for name, est in zip(names, estimates):
        buf.writelines(f"{s},{name},{critic},{t:.6g},{e:.6g}\n" for s, t, e in zip(range(steps), true_mi, est))
    write_text(path, buf.getvalue())


def read_config(run_dir) -> dict:
    return json.loads((Path(run_dir) / "config.json").read_text())


def is_complete(run_dir) -> bool:
    try:
        return read_config(run_dir).get("status") == "complete" and (Path(run_dir) / "summary.csv").is_file()
    except (FileNotFoundError, json.JSONDecodeError):
        return False
