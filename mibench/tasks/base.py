"""The task protocol and the information-theoretic maps that tasks share.

A *task* samples paired batches (X, Y) whose true mutual information is known exactly, at any
requested level up to the task's capacity.  It is a small protocol (compare bmi's
``src/bmi/interface.py``): ``sample(batch_size, mi_bits, generator)`` returns two float32 tensors
of shape (batch, dim_x) and (batch, dim_y) on ``task.device``; ``info()`` returns the JSON-able
facts recorded in a run's ``config.json`` (ds, dr, pool sizes, decoder accuracy, data source).
"""
from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import torch

from mibench.errors import MibenchError
from mibench.utils.checks import check_positive_int
from mibench.utils.units import LN2


@runtime_checkable
class Task(Protocol):
    name: str
    dim_x: int
    dim_y: int
    device: torch.device

    @property
    def max_mi_bits(self) -> float:
        """Largest true MI (bits) the task can hold; ``math.inf`` when unbounded."""

    def sample(self, batch_size: int, mi_bits: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """A batch of joint pairs whose true MI is ``mi_bits``."""

    def info(self) -> dict:
        """JSON-able description (ds, dr, data source, decoder accuracy, ...)."""


def batch_count(batch_size) -> int:
    """A task's batch size as an int: an integer >= 1 (``sample(2.5, ...)`` drew 2 rows, ``sample(0, ...)``
    an empty batch, ``sample(-1, ...)`` raised torch's error)."""
    return check_positive_int(batch_size, "batch size")


#: task name -> the one MI level (bits) a fixed-MI task holds, filled when the task is registered
#: (:mod:`mibench.tasks.bmi_v1`) and when it is built (:class:`mibench.tasks.catalogue.FixedMITask`), so
#: that both protocols refuse other levels before a run starts and ``mibench run`` / ``mibench sweep``
#: run such a task at its own level when no MI is given (:func:`fixed_level`)
FIXED_LEVELS: dict[str, float] = {}
#: mibench prints an MI bound or a fixed level with at least this many significant digits (``mibench
#: list`` 12, run tables and refusals 4 to 6), so a request that agrees with the value to these digits
#: is that value (:func:`printed_tolerance`)
PRINTED_DIGITS = 4


def printed_tolerance(value_bits: float) -> float:
    """Half a unit in the :data:`PRINTED_DIGITS`-th significant digit of ``value_bits``: how far a
    request may lie from a fixed level or a bound and still be that value as mibench prints it
    (0.596322538971 bits is accepted as 0.5963; log2(10) = 3.32192809489 as 3.32193 or 3.322)."""
    value = abs(float(value_bits))
    if not math.isfinite(value):
        return 0.0
    if value == 0.0:
        return 0.5 * 10.0 ** -PRINTED_DIGITS
    return 0.5 * 10.0 ** (math.floor(math.log10(value)) - PRINTED_DIGITS + 1) * (1 + 1e-9)


def fixed_level(task_name: str) -> float | None:
    """The one MI (bits) of a fixed-MI task (:data:`FIXED_LEVELS`, the name as registered or in any
    case), or None for a task that holds a range of levels."""
    if task_name in FIXED_LEVELS:
        return FIXED_LEVELS[task_name]
    key = str(task_name).strip().lower()
    return next((v for k, v in FIXED_LEVELS.items() if k.lower() == key), None)


def check_fixed_level(task_name: str, mi_bits: float) -> float:
    """The fixed MI of a fixed-MI task when ``mi_bits`` is it at the printed precision
    (:func:`printed_tolerance`), else a one-line refusal; ``mi_bits`` unchanged for other tasks."""
    fixed = fixed_level(task_name)
    if fixed is None:
        return mi_bits
    if not abs(mi_bits - fixed) <= printed_tolerance(fixed):
        raise MibenchError(f"task {task_name!r} has one fixed true MI, {fixed:.12g} bits, and cannot run at "
                           f"{mi_bits:g} bits: leave --mi out (or give --mi {fixed:.12g})")
    return fixed


#: the most MI (bits) a task draws per correlated Gaussian pair: the noise that sets it has a standard
#: deviation of 2^-I, and float32 samples (spacing ~1e-7 near 1) must resolve it for the stated truth to
#: hold -- at 16 bits the noise spans about 100 spacings near 1; past about 26 bits float64 cannot hold the
#: correlation, and two levels drew the same samples
MAX_BITS_PER_PAIR = 16.0
PER_PAIR_NOTE = f"{MAX_BITS_PER_PAIR:g} bits per correlated pair: float32 samples resolve no finer noise"


def sources_reach(ds: int) -> tuple[float, str]:
    """(most bits, why) of a task of ``ds`` binary sources (one bit each), as its factory's ``max_mi``."""
    return float(ds), f"ds = {ds} binary sources"


class LevelAboveTask(MibenchError):
    """A requested MI level above what the task holds (:func:`check_mi_request`): the command line
    adds, where ``--mi`` was left out, that the level was its default."""


def check_mi_request(task_name: str, mi_bits: float, max_mi_bits: float, what: str = "") -> float:
    """Refuse an impossible MI request with one clear line; return the level to draw at: the request,
    or the fixed level / the task's maximum when the request is that value at the printed precision
    (:func:`printed_tolerance`)."""
    if not math.isfinite(mi_bits) or mi_bits < 0:
        raise MibenchError(f"true MI must be a finite number >= 0 bits, got {mi_bits}")
    mi_bits = check_fixed_level(task_name, mi_bits)
    if mi_bits > max_mi_bits:
        if mi_bits <= max_mi_bits + printed_tolerance(max_mi_bits):
            return max_mi_bits
        extra = f" ({what})" if what else ""
        raise LevelAboveTask(
            f"task {task_name!r} holds at most {max_mi_bits:.6g} bits{extra}; requested {mi_bits:g} bits"
        )
    return mi_bits


def mi_for_task(task_name: str, mi):
    """The MI setting a run or sweep cell of ``task_name`` gets: for a fixed-MI task, its own level when
    none is given (``mi`` None) and the exact level for a number that is it at the printed precision;
    anything else unchanged (the protocols check it against the task)."""
    fixed = fixed_level(task_name)
    if fixed is None:
        return mi
    if mi is None:
        return fixed
    if isinstance(mi, (list, tuple)):          # a sweep axis or a list of levels: each value
        return [mi_for_task(task_name, v) for v in mi]
    try:
        value = float(mi)
    except (TypeError, ValueError):
        return mi
    return fixed if math.isfinite(value) and abs(value - fixed) <= printed_tolerance(fixed) else mi


# ---------------------------------------------------------------------------------------------
# Binary symmetric channel (Lee & Rhee 2024, §4.5, Theorem 4.4): I(X;Y) = ds * (1 - H_b(beta)), bits.
# ---------------------------------------------------------------------------------------------

def binary_entropy_bits(beta: float) -> float:
    """H_b(beta) in bits; H_b(0) = H_b(1) = 0."""
    if beta <= 0.0 or beta >= 1.0:
        return 0.0
    return -(beta * math.log2(beta) + (1.0 - beta) * math.log2(1.0 - beta))


def bsc_mi_bits(ds: int, beta: float) -> float:
    """True MI (bits) of ds fair binary sources sent to Y through a BSC with crossover beta."""
    return ds * (1.0 - binary_entropy_bits(beta))


def bsc_crossover(ds: int, mi_bits: float) -> float:
    """The crossover beta in [0, 1/2] with ds * (1 - H_b(beta)) = mi_bits exactly.

    H_b is strictly increasing on [0, 1/2], so the root is unique; found by bisection to machine
    precision (not a grid).
    """
    if ds < 1:
        raise MibenchError(f"ds must be >= 1, got {ds}")
    check_mi_request("bsc", mi_bits, float(ds), f"ds = {ds} binary sources")
    target = 1.0 - mi_bits / ds  # required H_b(beta), in [0, 1]
    if target <= 0.0:
        return 0.0
    if target >= 1.0:
        return 0.5
    return invert_monotone(binary_entropy_bits, target, 0.0, 0.5)


def invert_monotone(f, target: float, lo: float, hi: float, *, increasing: bool = True, max_iter: int = 200,
                    tol: float = 1e-17) -> float:
    """The x in [lo, hi] with f(x) = target, for f strictly monotone on [lo, hi], by bisection.

    The bracket is halved until it is narrower than ``tol`` (machine precision by default) or
    ``max_iter`` halvings are done; the midpoint of the last bracket is returned.  A target outside
    f's range on the bracket gives (to within ``tol``) the end of the bracket nearest to it.

    Parameters
    ----------
    f : the monotone function of one float.
    target : the value to reach.
    lo, hi : the bracket, lo < hi.
    increasing : f increases on [lo, hi] (False: it decreases).
    max_iter : most halvings.
    tol : bracket width at which to stop.
    """
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        below = f(mid) < target if increasing else f(mid) > target    # the root lies above mid
        if below:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol:
            break
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------------------------------------
# Correlated Gaussians (Lee & Rhee 2024, §4.1): I = -(d/2) log(1 - rho^2) nats.
# ---------------------------------------------------------------------------------------------

def gaussian_mi_bits(dim: int, rho: float) -> float:
    return -0.5 * dim * math.log1p(-rho * rho) / LN2


def gaussian_rho(dim: int, mi_bits: float) -> float:
    """Component-wise correlation rho giving ``mi_bits`` over ``dim`` independent pairs."""
    check_mi_request("gaussian", mi_bits, math.inf)
    return math.sqrt(-math.expm1(-2.0 * mi_bits * LN2 / dim))
