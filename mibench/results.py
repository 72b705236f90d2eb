"""Run directories: atomic writes and readers.

A run directory holds ``config.json`` (resolved config, versions, device, seed, ``run_id``,
status), ``estimates.csv`` (step, estimator, critic, true_mi, estimate, run_id, seed; bits),
``summary.csv`` (see :data:`mibench.metrics.SUMMARY_COLUMNS`) and ``staircase.png``.  Every file
is written to a temporary name in the same directory and renamed into place, so a reader never
sees half a file; files get the mode a plain ``open()`` would give them (``0666 & ~umask``).
``config.json``'s ``status`` is ``running`` until the run ends as ``complete`` (or ``interrupted``
/ ``failed``), so an interrupted run is never mistaken for a finished one.

``estimates.csv`` is the exception to whole-file writes while a run trains: the harness appends
each logging block's rows (:class:`EstimatesLog`) as one write, so a run that is interrupted or
killed keeps every block logged so far; at the end the file is rewritten atomically in its final
order (estimator-major, the same content as a file written in one go).  Readers
(:func:`read_estimates`, :func:`load_runs`) drop a last line without its newline, and accept files
written before the ``run_id`` / ``seed`` columns existed.
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


ESTIMATE_COLUMNS = ["step", "estimator", "critic", "true_mi", "estimate", "run_id", "seed"]
#: the columns of estimates.csv files written before ``run_id`` and ``seed`` were added
LEGACY_ESTIMATE_COLUMNS = ESTIMATE_COLUMNS[:5]


def file_mode() -> int:
    """The mode a plain ``open(path, "w")`` gives a new file: ``0666 & ~umask``."""
    return 0o666 & ~current_umask()


def current_umask() -> int:
    try:                        # Linux >= 4.7: read it without changing it (thread-safe)
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)     # elsewhere the only portable way to read it is to set it ...
    os.umask(umask)             # ... and put it back at once
    return umask


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; on success rename it onto ``path``.  The file gets
    the umask's mode (``mkstemp`` alone would leave it 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode())
    except (AttributeError, OSError):   # pragma: no cover (no fchmod on Windows)
        pass
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
    write_text(path, ",".join(ESTIMATE_COLUMNS) + "\n"
               + format_estimates(names, critic, true_mi, estimates, run_id=run_id, seed=seed))


class EstimatesLog:
    """estimates.csv while a run trains: the header at :meth:`open`, then each logging block's rows
    appended with one ``write`` (:meth:`append`), so an interrupted or killed run keeps every
    block logged so far (whole lines: a reader drops a last line without its newline, the only
    trace a write cut short by SIGKILL could leave).  :meth:`finish` rewrites the file atomically
    in its final, estimator-major order (:func:`write_estimates`)."""

    def __init__(self, path, names, critic, run_id=None, seed=None):
        self.path = Path(path)
        self.names, self.critic, self.run_id, self.seed = list(names), critic, run_id, seed
        self._fd = None

    def open(self) -> "EstimatesLog":
        write_text(self.path, ",".join(ESTIMATE_COLUMNS) + "\n")      # replaces an older run's file
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        return self

    def append(self, true_mi, estimates, start: int, stop: int) -> None:
        """Append steps ``start:stop`` of every estimator (the whole run's arrays are given)."""
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


def read_estimates(path):
    """estimates.csv as a DataFrame; a last line cut short (no newline) is dropped; files written
    before the ``run_id`` / ``seed`` columns get them empty (NaN / None) unless the caller fills them."""
    import pandas as pd

    data = Path(path).read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[:data.rfind(b"\n") + 1]
    if not data.strip():
        return pd.DataFrame(columns=ESTIMATE_COLUMNS)
    df = pd.read_csv(io.BytesIO(data), dtype={"run_id": str, "estimator": str, "critic": str})
    for col in ESTIMATE_COLUMNS:
        if col not in df.columns:
            df[col] = None if col == "run_id" else np.nan
    return df


def read_config(run_dir) -> dict:
    return json.loads((Path(run_dir) / "config.json").read_text())


def is_complete(run_dir) -> bool:
    try:
        return read_config(run_dir).get("status") == "complete" and (Path(run_dir) / "summary.csv").is_file()
    except (FileNotFoundError, json.JSONDecodeError):
        return False


# ------------------------------------------------------------------------------ analysis

#: config columns :func:`load_runs` adds to every estimate row (besides run_id, seed, run_dir)
RUN_COLUMNS = ["task", "task_params", "ds", "dr", "critic", "layers", "hidden", "embed", "batch_size", "lr", "steps",
               "schedule", "burn_in", "precision", "status", "diverged_step"]


def load_runs(path, complete_only: bool = False):
    """Every per-step estimate of every run directory found under ``path``, as one pandas DataFrame.

    ``path`` is a run directory, a sweep directory or any directory holding run directories
    (e.g. ``results/``).  One row per run × step × estimator, with the columns of estimates.csv
    (``step``, ``estimator``, ``critic``, ``true_mi``, ``estimate`` in bits, ``run_id``, ``seed``)
    and the run's config: ``task``, ``task_params`` (``k=v;...``, only values that differ from the
    task's defaults), ``ds``, ``dr``, ``layers``, ``hidden``, ``embed``, ``batch_size``, ``lr``,
    ``steps``, ``schedule``, ``burn_in``, ``precision``, ``status`` (``complete``, ``running``,
    ``interrupted``, ``failed``: a partial run contributes the steps it logged),
    ``diverged_step`` (the step at which that estimator diverged, else NaN) and ``run_dir``.
    ``complete_only=True`` keeps complete runs only.  Files written before the ``run_id`` / ``seed``
    columns existed get the run's ``run_id`` from config.json (else the directory name) and its seed.

    >>> import mibench
    >>> df = mibench.load_runs("results/gaussian_staircase")
    >>> df.groupby(["estimator", "true_mi"])["estimate"].mean()       # doctest: +SKIP
    """
    import pandas as pd

    from .errors import MibenchError
    from .leaderboard import find_run_dirs, setup_of

    complete, incomplete, _ = find_run_dirs([path])
    frames = []
    for d in sorted(complete + ([] if complete_only else incomplete)):
        try:
            cfg = read_config(d)
        except (OSError, ValueError):
            continue                        # config.json being written or unreadable: not a run yet
        est_path = d / "estimates.csv"
        if not est_path.is_file() or not isinstance(cfg.get("config"), dict):
            continue
        df = read_estimates(est_path)
        c = cfg["config"]
        run_id = cfg.get("run_id") or d.name
        df["run_id"] = df["run_id"].where(df["run_id"].notna(), run_id)
        df["seed"] = df["seed"].fillna(c.get("seed")).astype("Int64")
        try:
            setup = setup_of(cfg)
        except (KeyError, TypeError, ValueError):
            setup = {k: c.get(k) for k in ("task", "critic", "layers", "hidden", "batch_size", "lr", "steps")}
        setup.pop("critic", None)           # estimates.csv has it
        for k in RUN_COLUMNS:
            if k in setup:
                df[k] = setup[k]
        df["status"] = cfg.get("status")
        df["diverged_step"] = df["estimator"].map(cfg.get("diverged") or {}).astype(float)
        df["run_dir"] = str(d)
        frames.append(df)
    if not frames:
        if not Path(path).exists():
            raise MibenchError(f"no such run or sweep directory: {path}")
        return pd.DataFrame(columns=ESTIMATE_COLUMNS + [c for c in RUN_COLUMNS if c != "critic"] + ["run_dir"])
    out = pd.concat(frames, ignore_index=True)
    front = ESTIMATE_COLUMNS + [c for c in RUN_COLUMNS if c != "critic" and c in out.columns] + ["run_dir"]
    return out[front + [c for c in out.columns if c not in front]]


# ------------------------------------------------------------------------------ re-running


def load_run_config(path):
    """The :class:`mibench.harness.RunConfig` recorded in a run's ``config.json`` (``path`` is the
    file or its run directory), for ``mibench run --config``.  Raises a one-line MibenchError for a
    missing, unreadable or foreign file."""
    import dataclasses

    from .errors import MibenchError
    from .harness import RunConfig

    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise MibenchError(f"--config: no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MibenchError(f"--config: cannot read {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    except ValueError as exc:
        raise MibenchError(f"--config: {path} is not valid JSON ({exc})") from None
    raw = data.get("config") if isinstance(data, dict) and isinstance(data.get("config"), dict) else data
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    if not isinstance(raw, dict) or "task" not in raw:
        raise MibenchError(f"--config: {path} is not a mibench run config (no 'config' with a 'task')")
    unknown = sorted(set(raw) - fields)
    if unknown:
        raise MibenchError(f"--config: {path} has fields this mibench does not know: {', '.join(unknown)}")
    return RunConfig(**raw)
