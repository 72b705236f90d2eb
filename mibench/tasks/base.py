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


#: task name -> the one MI level (bits) a fixed-MI task holds (:class:`mibench.tasks.catalogue.FixedMITask`
#: registers itself), so that both protocols refuse any other level before a run starts
FIXED_LEVELS: dict[str, float] = {}
FIXED_LEVEL_TOLERANCE_BITS = 1e-9


def check_fixed_level(task_name: str, mi_bits: float) -> None:
    """Refuse, in one line, a level other than the fixed MI of a fixed-MI task (no-op for other tasks)."""
    fixed = FIXED_LEVELS.get(task_name)
    if fixed is not None and not abs(mi_bits - fixed) <= FIXED_LEVEL_TOLERANCE_BITS:
        raise MibenchError(f"task {task_name!r} has one fixed true MI, {fixed:.12g} bits; requested {mi_bits:g} bits "
                           f"(use --mi {fixed:.12g})")


def check_mi_request(task_name: str, mi_bits: float, max_mi_bits: float, what: str = "") -> None:
    """Refuse impossible MI requests with one clear line."""
    if not math.isfinite(mi_bits) or mi_bits < 0:
        raise MibenchError(f"true MI must be a finite number >= 0 bits, got {mi_bits}")
    check_fixed_level(task_name, mi_bits)
    if mi_bits > max_mi_bits + 1e-9:
        extra = f" ({what})" if what else ""
        raise MibenchError(
            f"task {task_name!r} holds at most {max_mi_bits:g} bits{extra}; requested {mi_bits:g} bits"
        )


# ---------------------------------------------------------------------------------------------
# Binary symmetric channel (paper 002, §4.5, Theorem 4.4): I(X;Y) = ds * (1 - H_b(beta)), bits.
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
# Correlated Gaussians (paper 002, §4.1): I = -(d/2) log(1 - rho^2) nats.
# ---------------------------------------------------------------------------------------------

def gaussian_mi_bits(dim: int, rho: float) -> float:
    return -0.5 * dim * math.log1p(-rho * rho) / LN2


def gaussian_rho(dim: int, mi_bits: float) -> float:
    """Component-wise correlation rho giving ``mi_bits`` over ``dim`` independent pairs."""
    check_mi_request("gaussian", mi_bits, math.inf)
    return math.sqrt(-math.expm1(-2.0 * mi_bits * LN2 / dim))
