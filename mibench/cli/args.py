"""Argument parsers the commands share: comma lists, typed values, ``KEY=V1,V2`` task-parameter axes.
Light: no torch or numpy (``--help`` and argument errors never load them)."""
from __future__ import annotations

import contextlib
import math
import sys

from mibench.errors import MibenchError


def csv_list(text: str, what: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``; empty: one line naming ``--what``."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise MibenchError(f"--{what} needs a comma-separated list, got {text!r}")
    return items


def float_list(text: str, what: str) -> list[float]:
    """``"0.5,1"`` -> ``[0.5, 1.0]``; a word that is not a number: one line naming ``--what``."""
    out = []
    for t in csv_list(text, what):
        try:
            out.append(float(t))
        except ValueError:
            raise MibenchError(f"--{what}: {t!r} is not a number") from None
    return out


def axis_values(text, cast=str):
    """A sweep axis from the command line: ``"2,4"`` -> ``[2, 4]``, ``"2"`` -> ``2`` (None: not given)."""
    if text is None:
        return None
    vals = [v.strip() for v in str(text).split(",") if v.strip()]
    if not vals:
        raise MibenchError(f"empty list: {text!r}")
    try:
        out = [cast(v) for v in vals]
    except ValueError:
        raise MibenchError(f"expected {cast.__name__} values, got {text!r}") from None
    return out if len(out) > 1 else out[0]


def mi_values(items):
    """``--mi`` values of a sweep: numbers, schedules (``2,4,6``) or names (``stepwise``)."""
    if not items:
        return None
    out = []
    for v in items:
        try:
            out.append(float(v) if "," not in v else v)
        except ValueError:
            out.append(v)
    return out if len(out) > 1 else out[0]


def typed(text: str):
    """A ``--set`` value as bool, int, float or text."""
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for cast in (int, float):
        try:
            v = cast(text)
            if cast is float and not math.isfinite(v):
                return text
            return v
        except ValueError:
            pass
    return text


def parse_set(items: list[str] | None) -> dict:
    """``["dim=2,4", "cubic=true"]`` -> ``{"dim": [2, 4], "cubic": True}`` (values typed)."""
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise MibenchError(f"--set expects KEY=V1,V2,..., got {item!r}")
        vals = [typed(v.strip()) for v in value.split(",") if v.strip()]
        if not vals:
            raise MibenchError(f"--set {key}= needs at least one value")
        if key in out:      # the last one silently won
            raise MibenchError(f"--set {key} is given twice; give its values once, comma separated")
        out[key] = vals if len(vals) > 1 else vals[0]
    return out


@contextlib.contextmanager
def printing_result(code: int):
    """Around a command's printing of a result it has already decided: should the reader of stdout
    go away (``| head``), the command still ends with ``code`` (the regression gate's 1, a sweep's 3)
    instead of the quiet 0 of a closed stdout (:func:`mibench.cli.main`)."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError as exc:
        exc.exit_code = code
        raise
