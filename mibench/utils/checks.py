"""Input validation at mibench's boundaries (CLI, Python API, sweeps, disentanglement metrics), in
the style of scikit-learn's ``check_array``: every user mistake is one :class:`MibenchError` line.

* arrays: :func:`as_2d` (numeric, finite, (n, d)), :func:`check_same_rows`, :func:`as_labels`,
  :func:`resolve_discrete`;
* numbers: :func:`check_positive_int`, :func:`check_seed`;
* seeds: :func:`parse_seeds` (``"0,1,2"``, ``"0-4"``, ``3``, ``[0, 1]``);
* sweep axes: :func:`listify` (a scalar or a non-empty list -> a list).

Task parameters are checked against the task factory's signature by
:func:`mibench.tasks.make_task` (and, without building the task, :func:`check_task_params`); critic
sizes by :func:`check_critic_sizes`.
"""
from __future__ import annotations

import re

import numpy as np

from mibench.errors import MibenchError

#: A factor column counts as discrete under ``discrete=None`` ("auto") when its values are all
#: integers and it takes at most this many distinct values ...
AUTO_DISCRETE_MAX_VALUES = 50
#: ... or, whatever its values (float codes such as a scale 0.5, 0.6, ..., 1.0; integer codes past
#: 50), when each distinct value repeats this many times on average ...
AUTO_DISCRETE_MIN_REPEATS = 10
#: ... up to this many distinct values.  A continuous factor's values do not repeat.
AUTO_DISCRETE_MAX_REPEATED = 1000
#: seeds are stored as signed 64-bit integers (torch generators, numpy)
MAX_SEED = 2**63 - 1


def as_2d(a, name: str, *, min_rows: int = 2, flatten: bool = False) -> np.ndarray:
    """``a`` (numpy array, torch tensor, nested lists) as a finite float64 array of shape (n, d).

    Parameters
    ----------
    a : the samples; a 1-D input becomes one column.
    name : the argument's name in error messages.
    min_rows : the fewest samples accepted.
    flatten : accept (n, d1, d2, ...) arrays (images) and flatten each sample; otherwise such an
        array is refused.
    """
    if hasattr(a, "detach") and hasattr(a, "cpu"):          # a torch tensor, without importing torch
        if getattr(a, "is_sparse", False) or str(getattr(a, "layout", "")) != "torch.strided":
            a = a.to_dense()
        a = a.detach().cpu()
        if a.is_floating_point() and str(a.dtype) not in ("torch.float16", "torch.float32", "torch.float64"):
            a = a.double()                                    # bfloat16 and the float8s: numpy has none
        a = a.numpy()
    if np.ma.isMaskedArray(a) and np.ma.getmaskarray(a).any():
        raise MibenchError(f"{name} is a masked array with masked entries: drop or fill those rows first "
                           "(the values under the mask would be read as data)")
    try:
        if np.iscomplexobj(a):       # float64 would keep the real part and drop the rest, with a warning only
            raise MibenchError(f"{name} is complex: pass real arrays (e.g. the real and imaginary parts as columns)")
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        hint = ("; encode category or string labels as integer codes (e.g. pandas' .cat.codes)"
                if _has_labels(a) else "")
        raise MibenchError(f"{name} must be a numeric array, got {type(a).__name__}{hint}") from None
    if arr.ndim == 0:
        raise MibenchError(f"{name} must be an array of samples, got a scalar")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        if not flatten:
            raise MibenchError(f"{name} must be 1-D or 2-D (samples x dims), got shape {arr.shape}")
        arr = arr.reshape(arr.shape[0], -1)
    if arr.shape[0] < min_rows:
        raise MibenchError(f"{name} needs at least {min_rows} samples, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise MibenchError(f"{name} has no columns")
    if not np.all(np.isfinite(arr)):
        raise MibenchError(f"{name} contains NaN or infinite values")
    return arr


def _has_labels(a) -> bool:
    """Whether ``a`` holds category or string values (pandas categoricals, object or string arrays)."""
    dtypes = getattr(a, "dtypes", None)
    kinds = [getattr(a, "dtype", None)] if dtypes is None else list(getattr(dtypes, "values", [dtypes]))
    for dt in kinds:
        if dt is not None and (str(dt) == "category" or getattr(dt, "kind", "") in "OUS"):
            return True
    return False


def check_same_rows(**arrays) -> int:
    """All arrays have the same number of rows; returns it."""
    rows = {k: len(v) for k, v in arrays.items()}
    if len(set(rows.values())) > 1:
        desc = ", ".join(f"{k}: {n}" for k, n in rows.items())
        raise MibenchError(f"inputs must have the same number of samples; got {desc}")
    return next(iter(rows.values()))


def is_discrete_column(col: np.ndarray) -> bool:
    """The "auto" rule: integer-valued with at most :data:`AUTO_DISCRETE_MAX_VALUES` distinct values, or
    any values repeating :data:`AUTO_DISCRETE_MIN_REPEATS` times on average (at most
    :data:`AUTO_DISCRETE_MAX_REPEATED` distinct values): a factor coded by floats, or with many integer
    codes, is still a discrete factor, normalised by its entropy."""
    values = np.unique(col)
    if values.size <= AUTO_DISCRETE_MAX_VALUES and np.all(np.equal(np.mod(values, 1.0), 0.0)):
        return True
    return values.size <= AUTO_DISCRETE_MAX_REPEATED and values.size * AUTO_DISCRETE_MIN_REPEATS <= col.size


def resolve_discrete(y: np.ndarray, discrete) -> np.ndarray:
    """Per-factor discreteness flags (bool array of length K).

    ``discrete`` is ``None`` (auto, see :func:`is_discrete_column`), one bool for all factors, or a
    sequence of K bools.
    """
    k = y.shape[1]
    if discrete is None:
        return np.array([is_discrete_column(y[:, j]) for j in range(k)], dtype=bool)
    if isinstance(discrete, (bool, np.bool_)):
        return np.full(k, bool(discrete))
    flags = np.asarray(discrete)
    if flags.shape != (k,):
        raise MibenchError(f"discrete must be None, a bool or {k} bools (one per factor), got shape {flags.shape}")
    return flags.astype(bool)


def as_labels(col: np.ndarray) -> np.ndarray:
    """Integer labels 0..C-1 of a discrete column."""
    return np.unique(col, return_inverse=True)[1].ravel()


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (booleans and non-integral numbers refused)."""
    if isinstance(value, bool):
        raise MibenchError(f"{name} must be an integer, got {value!r}")
    try:
        v = int(value)
    except (TypeError, ValueError, OverflowError):
        raise MibenchError(f"{name} must be an integer, got {value!r}") from None
    if v != value and not (isinstance(value, str) and value.strip().lstrip("+-").isdigit()):
        raise MibenchError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if v < minimum:
        raise MibenchError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return v


def check_seed(value, name: str = "seed") -> int:
    """A seed: an integer in [0, 2^63 - 1]."""
    seed = check_positive_int(value, name, minimum=0)
    if seed > MAX_SEED:
        raise MibenchError(f"{name} must be at most 2^63 - 1 = {MAX_SEED}, got {value}")
    return seed


def listify(v) -> list:
    """A sweep axis value as a list (a scalar is one value; an empty list is one line)."""
    if isinstance(v, (list, tuple)):
        if not v:
            raise MibenchError("empty list in the sweep spec (every axis needs at least one value)")
        return list(v)
    return [v]


_RANGE = re.compile(r"(\d+)\s*-\s*(\d+)")


def parse_seeds(value, name: str = "seeds") -> list[int]:
    """``"0,1,2"`` / ``"0-4"`` / ``3`` / ``[0, 1]`` / ``["0-2", 5]`` -> distinct seeds in the order given.

    A range ``a-b`` needs a <= b; every seed passes :func:`check_seed`.
    """
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    out: list[int] = []
    for item in items:
        if isinstance(item, str):
            parts = [p.strip() for p in item.split(",")]
        else:
            parts = [item]
        for part in parts:
            if isinstance(part, str):
                if not part:
                    continue
                m = _RANGE.fullmatch(part)
                if m:
                    a, b = int(m.group(1)), int(m.group(2))
                    if a > b:
                        raise MibenchError(f"{name}: the range {part!r} runs backwards; write it as {b}-{a}")
                    check_seed(b, name)
                    out += range(a, b + 1)
                    continue
            out.append(check_seed(part, name))
    if not out:
        raise MibenchError(f"no {name} given (e.g. 0,1,2 or 0-4)")
    return list(dict.fromkeys(out))


def check_critic_sizes(hidden, layers, embed) -> tuple[int, int, int]:
    """Critic width >= 1, depth (hidden layers) >= 0, separable embedding >= 1."""
    return (check_positive_int(hidden, "hidden (critic width)"), check_positive_int(layers, "layers (critic depth)", 0),
            check_positive_int(embed, "embed (separable critic embedding)"))


# ----------------------------------------------------------------------------------- configs


def _expected_type(default, annotation) -> type | None:
    """The type a parameter takes, from its default (or, for a None default, its annotation)."""
    for t in (bool, int, float, str):
        if type(default) is t:
            return t
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    for name, t in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if re.search(rf"\b{name}\b", text or ""):
            return t
    return None


def check_value_type(value, expected: type | None, where: str):
    """``value`` as ``expected`` (bool / int / float / str): ints accept integral floats, floats
    accept ints; anything else (a string for a number, a bool for an int) is one line."""
    if expected is None or value is None:
        return value
    if expected is bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
    elif expected is int:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif expected is float:
        if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            return float(value)
    elif expected is str:
        if isinstance(value, str):
            return value
    raise MibenchError(f"{where} must be {'a' if expected is not int else 'an'} "
                       f"{ {bool: 'true/false', int: 'integer', float: 'number', str: 'string'}[expected]}, "
                       f"got {value!r}")


def check_task_params(task: str, factory, params: dict, passthrough=("transform", "layer")) -> dict:
    """The task parameters ``params`` checked against the task factory's signature: unknown names
    and values of the wrong type are refused in one line; returns them typed.  A factory with a
    ``check_params`` attribute (a function of the same parameters that raises :class:`MibenchError`)
    has its values checked too, without building the task (a sweep's ``--dry-run`` refuses
    ``--set dim=0`` before any cell runs)."""
    import inspect

    accepted = inspect.signature(factory).parameters
    out = {}
    for key, value in params.items():
        if key in passthrough:
            out[key] = value
            continue
        if key not in accepted or key == "device":
            ok = sorted(k for k in accepted if k != "device")
            raise MibenchError(f"task {task!r} does not take {key!r}; it takes: {', '.join(ok) or 'nothing'}")
        p = accepted[key]
        expected = _expected_type(p.default if p.default is not inspect.Parameter.empty else None, p.annotation)
        out[key] = check_value_type(value, expected, f"task {task!r} parameter {key!r}")
    check = getattr(factory, "check_params", None)
    if check is not None:
        try:
            check(**{k: v for k, v in out.items() if k not in passthrough})
        except MibenchError as exc:
            raise MibenchError(f"task {task!r}: {exc}") from None
    return out


def check_fields(data: dict, types: dict, where: str) -> dict:
    """``data`` with only the keys of ``types``, each value of its type (``None`` in ``types``:
    unchecked; a tuple of types: the first that fits).  Unknown keys and wrong types are one line."""
    unknown = sorted(set(data) - set(types))
    if unknown:
        raise MibenchError(f"{where} has fields this mibench does not know: {', '.join(unknown)}")
    out = {}
    for key, value in data.items():
        expected = types[key]
        if expected is dict:
            if not isinstance(value, dict):
                raise MibenchError(f"{where}: {key} must be a mapping, got {value!r}")
            out[key] = dict(value)
        elif isinstance(expected, tuple):
            errors = []
            for t in expected:
                try:
                    out[key] = value if t is None else check_value_type(value, t, f"{where}: {key}")
                    break
                except MibenchError as exc:
                    errors.append(str(exc))
            else:
                raise MibenchError(errors[0])
        else:
            out[key] = check_value_type(value, expected, f"{where}: {key}")
    return out


def estimate_value(raw, who: str) -> float:
    """An estimator's return value as a float: a real number, or an array or tensor of one element; a string, a
    bool or anything else is refused in one line (``float("1.5")`` and ``float(True)`` would pass as estimates)."""
    if hasattr(raw, "detach") and hasattr(raw, "cpu"):          # a torch tensor (bf16 too), without importing torch
        raw = raw.detach().float().cpu().numpy() if raw.is_floating_point() else raw.detach().cpu().numpy()
    if isinstance(raw, np.ndarray) and raw.size == 1:           # 0-d or one element, as float() took them
        raw = raw.reshape(())[()]
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, float, np.integer, np.floating)):
        raise MibenchError(f"{who} returned {type(raw).__name__} {raw!r:.40}, not a number")
    return float(raw)
