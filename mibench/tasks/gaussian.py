"""Correlated Gaussians (Lee & Rhee 2024, §4.1): X, Y in R^d, corr(X_i, Y_i) = rho, I = -(d/2) log(1-rho^2).

The optional cubic transform y -> y^3 is invertible per coordinate, so the true MI is unchanged
(Song & Ermon 2019's "cubic" setting).
"""
from __future__ import annotations

import math
from functools import lru_cache

import torch

from mibench.errors import MibenchError
from mibench.tasks.base import MAX_BITS_PER_PAIR, PER_PAIR_NOTE, batch_count, check_mi_request, gaussian_rho
from mibench.tasks.registry import TASKS


def check_params(dim: int = 10, cubic: bool = False) -> None:
    """The parameters' values, checked without building the task."""
    if int(dim) < 1:
        raise MibenchError(f"dim must be an integer >= 1, got {dim}")


class GaussianTask:
    def __init__(self, dim: int = 10, cubic: bool = False, device="cpu"):
        check_params(dim, cubic)
        self.name = "gaussian"
        self.dim = self.dim_x = self.dim_y = int(dim)
        self.cubic = bool(cubic)
        self.device = torch.device(device)

    @property
    def max_mi_bits(self) -> float:
        return self.dim * MAX_BITS_PER_PAIR

    @lru_cache(maxsize=64)
    def rho(self, mi_bits: float) -> float:
        check_mi_request(self.name, mi_bits, self.max_mi_bits, PER_PAIR_NOTE)
        rho = gaussian_rho(self.dim, mi_bits)
        if rho >= 1.0:
            raise MibenchError(f"{mi_bits:g} bits over dim {self.dim} needs |rho| = 1 in float64; lower the MI or "
                               "raise --dim")
        return rho

    def sample(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        rho = self.rho(float(mi_bits))
        eps = torch.randn(2, batch_count(batch_size), self.dim, generator=generator, device=self.device)
        x = eps[0]
        y = rho * x + math.sqrt(1.0 - rho * rho) * eps[1]
        if self.cubic:
            y = y.pow(3)
        return x, y

    def info(self) -> dict:
        return {"task": self.name, "ds": self.dim, "dr": self.dim, "dim_x": self.dim, "dim_y": self.dim,
                "cubic": self.cubic}


@TASKS.register("gaussian", "correlated Gaussians, I = -(d/2) log(1 - rho^2); --dim d (default 10), --cubic")
def make_gaussian(device="cpu", dim: int = 10, cubic: bool = False) -> GaussianTask:
    return GaussianTask(dim=dim, cubic=cubic, device=device)


make_gaussian.check_params = check_params
#: (most bits, why) of a task with these parameters, without building it: a sweep refuses a level above it at once
make_gaussian.max_mi = lambda dim=10, **_: (int(dim) * MAX_BITS_PER_PAIR, PER_PAIR_NOTE)
