"""The CSV files of a run directory: their columns, their writers and their readers.

=======================  =========  ==================================================================
file                     protocol   rows
=======================  =========  ==================================================================
``estimates.csv``        stream     one per training step and estimator (bits), estimator-major;
                                    appended per logging block while the run trains
``sample_estimates.csv`` sample     one per true-MI level x seed x estimator: one dataset's estimate
``summary.csv``          both       one per estimator and true-MI level: :data:`SUMMARY_COLUMNS`; the
                                    sample protocol adds :data:`SAMPLE_SUMMARY_EXTRA`
=======================  =========  ==================================================================

Readers are strict (:func:`mibench.records.io.read_csv_rows`): a damaged file is one
:class:`~mibench.errors.UnreadableInput` line.  Files written by older mibench versions still
load: ``estimates.csv`` without ``run_id`` / ``seed``, ``sample_estimates.csv`` with ``flag``
instead of ``mi_status``.
"""
from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np

from mibench.errors import UnreadableInput
from mibench.records.io import float_or_nan, read_bytes, read_csv_rows, rows_to_csv, write_rows, write_text

STREAM_ESTIMATE_COLUMNS = ["step", "estimator", "critic", "true_mi", "estimate", "run_id", "seed"]
#: the columns of estimates.csv files written before ``run_id`` and ``seed`` were added
LEGACY_STREAM_ESTIMATE_COLUMNS = STREAM_ESTIMATE_COLUMNS[:5]
SAMPLE_ESTIMATE_COLUMNS = ["run_id", "task", "estimator", "kind", "critic", "seed", "n", "true_mi", "estimate",
                           "seconds", "n_parameters", "status", "mi_status", "mi_stderr", "clipped", "error"]
SUMMARY_COLUMNS = ["task", "estimator", "critic", "true_mi", "mean_estimate", "bias", "variance", "mse", "steps"]
SAMPLE_SUMMARY_EXTRA = ["kind", "n", "estimates", "failed", "seconds", "n_parameters", "mi_status", "mi_stderr"]
#: the metric columns of summary.csv, the quantities the leaderboard averages over seeds
SUMMARY_METRICS = ["mean_estimate", "bias", "variance", "mse"]
SUMMARY_FLOATS = ("true_mi", *SUMMARY_METRICS)
#: outcomes of one sample-protocol estimate (``status`` column of sample_estimates.csv)
SAMPLE_OUTCOMES = ("ok", "error", "non_finite", "implausible", "timeout", "crashed")


# ----------------------------------------------------------------------------- summary.csv


def write_summary(path, rows: list[dict], extra_columns: list[str] = ()) -> None:
    write_rows(path, rows, SUMMARY_COLUMNS + list(extra_columns))


def read_summary(path) -> list[dict]:
    """summary.csv rows with the metric columns as floats and ``steps`` as an int."""
    rows = read_csv_rows(path, required=SUMMARY_COLUMNS, floats=SUMMARY_FLOATS, ints=("steps",),
                         what="summary.csv")
    if not rows:
        raise UnreadableInput(f"summary.csv {path} has no rows (a finished run has one per estimator and level)")
    for r in rows:
        for col in ("seconds", "mi_stderr"):
            if col in r:
                r[col] = float_or_nan(r[col])
    return rows


# -------------------------------------------------------------------------- estimates.csv


def _csv_field(value) -> str:
    text = "" if value is None else str(value)
    if any(c in text for c in ',"\n\r'):
        text = '"' + text.replace('"', '""') + '"'
    return text


def format_estimates(names, critic, true_mi: np.ndarray, estimates: np.ndarray, start: int = 0,
                     stop: int | None = None, run_id=None, seed=None) -> str:
    """The estimates.csv lines (no header) of steps ``start:stop``: estimator-major, then step; bits.
    ``true_mi`` and ``estimates`` are the whole run's arrays ((steps,) and (n_estimators, steps))."""
    stop = len(true_mi) if stop is None else stop
    tail = f",{_csv_field(run_id)},{'' if seed is None else int(seed)}\n"
    critic = _csv_field(critic)
    steps = range(start, stop)
    lines = []
    for name, est in zip(names, estimates):
        head = f",{_csv_field(name)},{critic},"
        lines.extend(f"{s}{head}{t:.6g},{e:.6g}{tail}" for s, t, e in zip(steps, true_mi[start:stop], est[start:stop]))
    return "".join(lines)


def write_estimates(path, names, critic, true_mi: np.ndarray, estimates: np.ndarray, run_id=None, seed=None) -> None:
    """Long format: one row per step and estimator (bits), estimator-major; written atomically."""
    write_text(path, ",".join(STREAM_ESTIMATE_COLUMNS) + "\n"
               + format_estimates(names, critic, true_mi, estimates, run_id=run_id, seed=seed))


class EstimatesLog:
    """estimates.csv while a run trains: the header at :meth:`open`, then each logging block's rows
    appended with one ``write`` (:meth:`append`), so an interrupted or killed run keeps every
    block logged so far (whole lines: a reader drops a last line without its newline, the only
    trace a write cut short by SIGKILL could leave).  :meth:`finish` rewrites the file atomically
    in its final, estimator-major order (:func:`write_estimates`).  ``resume_from`` (a step)
    reopens the file of a resumed run, keeping the rows of the steps before it."""

    def __init__(self, path, names, critic, run_id=None, seed=None):
        self.path = Path(path)
        self.names, self.critic, self.run_id, self.seed = list(names), critic, run_id, seed
        self._fd = None
        self.logged = 0

    def open(self, resume_from: int = 0, keep: bool = False) -> "EstimatesLog":
        """Start the file (a new run), or with ``keep`` reopen a resumed run's: every whole line it
        logged is kept -- those of the steps before ``resume_from`` (its checkpoint) and those logged
        after it, which the resumed run re-computes (the same numbers) and does not write again.
        ``logged`` says how many steps the file holds (what :meth:`append` skips)."""
        kept, self.logged = "", 0
        if keep and self.path.is_file():
            data = read_bytes(self.path, "estimates.csv")
            lines = data[:data.rfind(b"\n") + 1].decode("utf-8").splitlines(keepends=True)[1:]
            kept = "".join(lines)
            steps = [int(line.split(",", 1)[0]) for line in lines]
            self.logged = max(steps) + 1 if steps else 0
            if self.logged < resume_from:
                raise UnreadableInput(f"{self.path} logged {self.logged} steps, fewer than its checkpoint's "
                                      f"{resume_from}: damaged; pass --overwrite to start the run again")
        write_text(self.path, ",".join(STREAM_ESTIMATE_COLUMNS) + "\n" + kept)   # replaces an older file
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        return self

    def append(self, true_mi, estimates, start: int, stop: int) -> None:
        """Append steps ``start:stop`` of every estimator (the whole run's arrays are given); steps
        the file already holds (:meth:`open`) are not written again."""
        start = max(start, self.logged)
        if self._fd is None or stop <= start:
            return
        data = format_estimates(self.names, self.critic, true_mi, estimates, start, stop, self.run_id,
                                self.seed).encode()
        view = memoryview(data)
        while view:                         # os.write may write less than asked (rare on files)
            view = view[os.write(self._fd, view):]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def finish(self, true_mi, estimates) -> None:
        self.close()
        write_estimates(self.path, self.names, self.critic, true_mi, estimates, self.run_id, self.seed)


def read_estimates(path, *, partial_last_line: bool = False):
    """estimates.csv as a pandas DataFrame (:data:`STREAM_ESTIMATE_COLUMNS`).

    ``partial_last_line``: the file of a run that did not finish, whose last block write may have
    been cut short: a last line without its newline is dropped.  Otherwise a damaged file is one
    :class:`UnreadableInput` line.  Files written before the ``run_id`` / ``seed`` columns get them
    empty (None / NaN) unless the caller fills them.
    """
    import pandas as pd

    data = read_bytes(path, "estimates.csv")
    if data and not data.endswith(b"\n"):
        if not partial_last_line:
            raise UnreadableInput(f"estimates.csv {path} is truncated (its last line is cut off)")
        data = data[:data.rfind(b"\n") + 1]
    if not data.strip():
        if partial_last_line:
            return pd.DataFrame(columns=STREAM_ESTIMATE_COLUMNS)
        raise UnreadableInput(f"estimates.csv {path} is empty")
    try:
        df = pd.read_csv(io.BytesIO(data), dtype={"run_id": str, "estimator": str, "critic": str})
    except (ValueError, pd.errors.ParserError) as exc:
        raise UnreadableInput(f"estimates.csv {path} cannot be parsed: {str(exc).splitlines()[0]}") from None
    missing = [c for c in LEGACY_STREAM_ESTIMATE_COLUMNS if c not in df.columns]
    if missing:
        raise UnreadableInput(f"estimates.csv {path} is not a mibench file of that kind (missing columns: "
                              f"{', '.join(missing)})")
    for col in ("step", "true_mi", "estimate"):
        if len(df) and not pd.api.types.is_numeric_dtype(df[col]):
            raise UnreadableInput(f"estimates.csv {path}: column {col} holds values that are not numbers")
    for col in STREAM_ESTIMATE_COLUMNS:
        if col not in df.columns:
            df[col] = None if col == "run_id" else np.nan
    return df


# ------------------------------------------------------------------- sample_estimates.csv


def write_sample_estimates(path, rows: list[dict]) -> None:
    write_rows(path, rows, SAMPLE_ESTIMATE_COLUMNS)


def sample_estimates_text(rows: list[dict]) -> str:
    return rows_to_csv(rows, SAMPLE_ESTIMATE_COLUMNS)


def read_sample_estimates(path) -> list[dict]:
    """``sample_estimates.csv`` rows as dicts with ``true_mi`` / ``estimate`` / ``mi_stderr`` /
    ``seconds`` as floats (NaN when empty), ``seed`` / ``n`` / ``n_parameters`` as ints, and
    ``mi_status`` / ``clipped`` present (empty) in files written before those columns existed
    (whose ``flag`` column is read as ``mi_status``), and ``not_assessed`` for a black-box value recorded
    without a status (as files written before black-box values got one hold it).  A second row of the same
    estimator, level and seed is refused: a run makes each estimate once, so it can only be a damaged or edited
    file."""
    rows = read_csv_rows(path, required=["estimator", "seed", "true_mi", "estimate", "status"],
                         floats=("true_mi", "estimate", "mi_stderr", "seconds"), ints=("seed",),
                         what="sample_estimates.csv")
    seen = set()
    for lineno, r in enumerate(rows, start=2):
        key = (r["estimator"], r["true_mi"], r["seed"])
        if key in seen:
            raise UnreadableInput(f"sample_estimates.csv {path}, line {lineno}: a second estimate of {key[0]} at "
                                  f"{key[1]:g} bits, seed {key[2]} (damaged or edited file)")
        seen.add(key)
        if "mi_status" not in r:
            r["mi_status"] = r.pop("flag", "") or ""
        if r["status"] == "ok" and not r["mi_status"] and r.get("kind") not in (None, "", "critic"):
            # written before a black-box value was recorded as mibench.estimate reports it
            r["mi_status"] = "not_assessed"
        r.setdefault("clipped", "")
        r.setdefault("mi_stderr", float("nan"))
        r.setdefault("seconds", float("nan"))
        params = float_or_nan(r.get("n_parameters") or 0)
        r["n_parameters"] = int(params) if params == params else 0
        if r["status"] not in SAMPLE_OUTCOMES:
            raise UnreadableInput(f"sample_estimates.csv {path}: unknown status {r['status']!r}")
    return rows
