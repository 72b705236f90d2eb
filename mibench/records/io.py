"""Atomic file writes and strict CSV reads: the floor every run-directory format stands on.

Writes go to a temporary name in the same directory and are renamed into place, so a reader never
sees half a file; files get the mode a plain ``open()`` would give them (``0666 & ~umask``).
Reads refuse what a writer of mibench can never have produced -- an empty file, a last line cut
off mid-way (every mibench CSV ends with a newline), a row with too few or too many fields, a
number that does not parse -- with one :class:`~mibench.errors.UnreadableInput` line naming the
file, instead of a traceback or a silently wrong number.
"""
from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import re
import tempfile
from pathlib import Path

from mibench.errors import MibenchError, UnreadableInput


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


def _refuse_os_error(exc: OSError, path: Path, doing: str):
    why = exc.strerror or type(exc).__name__
    raise MibenchError(f"cannot {doing} {path}: {why}") from None


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; on success rename it onto ``path``.  The file gets
    the umask's mode (``mkstemp`` alone would leave it 0600).  A directory that cannot be created
    or written to is a one-line :class:`MibenchError`."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileExistsError:
        raise MibenchError(f"cannot write {path}: {path.parent} is not a directory") from None
    except OSError as exc:
        _refuse_os_error(exc, path, "write")
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


def write_bytes(path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def format_value(v):
    """How a value appears in a mibench CSV: floats rounded to 6 decimals (``nan`` for NaN)."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(round(v, 6)) if abs(v) < 1e15 else repr(v)
    return v


def rows_to_csv(rows: list[dict], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: format_value(r.get(k)) for k in columns})
    return buf.getvalue()


def write_rows(path, rows: list[dict], columns: list[str]) -> None:
    """``rows`` as a CSV with ``columns`` (extra keys ignored), written atomically."""
    write_text(path, rows_to_csv(rows, columns))


def file_digest(path) -> str:
    """SHA-256 of a file (hex), recorded in a complete run's config.json to detect later damage."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_bytes(path, what: str) -> bytes:
    """A file's bytes; missing or unreadable is one :class:`UnreadableInput` line."""
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UnreadableInput(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise UnreadableInput(f"{what} {path} is a directory, not a file") from None
    except OSError as exc:
        raise UnreadableInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def read_csv_rows(path, *, required: list[str], floats=(), ints=(), what: str = "file",
                  partial_last_line: bool = False) -> list[dict]:
    """The rows of a mibench CSV as dicts, strictly.

    Parameters
    ----------
    path : the CSV file.
    required : columns the header must have (others are kept as text).
    floats, ints : columns parsed as numbers (empty -> NaN for floats; a non-number is refused).
    what : the file's role in error messages (``"summary.csv"``, ``"leaderboard"``).
    partial_last_line : drop a last line without its newline instead of refusing the file (a file
        appended to while a run trains, read before the run finished).
    """
    data = read_bytes(path, what)
    if not data.strip():
        raise UnreadableInput(f"{what} {path} is empty")
    if not data.endswith(b"\n"):
        if not partial_last_line:
            raise UnreadableInput(f"{what} {path} is truncated (its last line is cut off)")
        data = data[:data.rfind(b"\n") + 1]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableInput(f"{what} {path} is not a text (UTF-8) file") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None) or []
    missing = [c for c in required if c not in header]
    if missing:
        raise UnreadableInput(f"{what} {path} is not a mibench file of that kind (missing columns: "
                              f"{', '.join(missing)})")
    out = []
    for lineno, fields in enumerate(reader, start=2):
        if len(fields) != len(header):
            raise UnreadableInput(f"{what} {path}, line {lineno}: {len(fields)} fields where the header has "
                                  f"{len(header)} (damaged file)")
        row = dict(zip(header, fields))
        for col in floats:
            if col in row:
                row[col] = _parse_float(row[col], col, path, lineno, what)
        for col in ints:
            if col in row:
                row[col] = _parse_int(row[col], col, path, lineno, what)
        out.append(row)
    return out


def _parse_float(text: str, col: str, path, lineno: int, what: str) -> float:
    if text in ("", "nan", "NaN"):
        return float("nan")
    try:
        return float(text)
    except ValueError:
        raise UnreadableInput(f"{what} {path}, line {lineno}: {col} = {text!r} is not a number") from None


def _parse_int(text: str, col: str, path, lineno: int, what: str) -> int:
    value = _parse_float(text, col, path, lineno, what)
    if not math.isfinite(value) or value != int(value):
        raise UnreadableInput(f"{what} {path}, line {lineno}: {col} = {text!r} is not an integer")
    return int(value)


def slug(text, *, allowed: str = "A-Za-z0-9_.+-", max_len: int = 120, lower: bool = False) -> str:
    """``text`` as a file-name part: every run of characters outside ``allowed`` (the body of a
    regular-expression character class) becomes one ``-``, leading and trailing ``-`` are dropped,
    then it is lower-cased with ``lower`` and cut to ``max_len`` characters."""
    out = re.sub(f"[^{allowed}]+", "-", str(text)).strip("-")
    return (out.lower() if lower else out)[:max_len]


def float_or_nan(v) -> float:
    """``float(v)``, or NaN for what is not a number (None, ``""``, other text, an object)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def read_json(path, what: str = "file"):
    """A JSON file, strictly (missing, empty, truncated or invalid: one :class:`UnreadableInput` line)."""
    data = read_bytes(path, what)
    if not data.strip():
        raise UnreadableInput(f"{what} {path} is empty")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UnreadableInput(f"{what} {path} is not valid JSON ({exc})") from None
