"""The result of :func:`mibench.estimate`: the estimate, its standard error and a status."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

STATUSES = ("converged", "overfit", "still_increasing", "still_improving", "no_dependence_detected", "diverged",
            "train_only", "deterministic", "near_ceiling", "not_assessed", "failed_fit", "above_sample_limit",
            "high_dimensional", "tied_values", "few_pairs_per_bin", "too_few_evaluations", "loose_bound",
            "not_gaussian", "no_density", "noisy_readout", "outlier_range", "reduced_inputs")


def own_status(obj) -> str:
    """A sample estimator's own ``status`` where it is one of :data:`STATUSES`, else ``not_assessed`` (a
    word of its own, such as 'ready', would read as a status no reader knows)."""
    status = getattr(obj, "status", None)
    return status if isinstance(status, str) and status in STATUSES else "not_assessed"


def own_n_parameters(obj) -> int:
    """A sample estimator's own ``n_parameters`` where it is a whole number >= 0, else 0 (a string such as
    'many' raised a ValueError after the estimate was made)."""
    n = getattr(obj, "n_parameters", 0)
    ok = isinstance(n, (int, np.integer, float, np.floating)) and not isinstance(n, bool) and np.isfinite(n)
    return int(n) if ok and n >= 0 and float(n).is_integer() else 0


@dataclass
class EstimateResult:
    mi: float                 # held-out estimate at the best checkpoint, >= 0 (see mi_raw), in `units`
    units: str
    estimator: str
    critic: str
    curve: np.ndarray         # per-step training estimates, in `units`
    train_estimate: float     # mean of the last 10% of the training curve, in `units`
    n_train: int
    n_test: int
    diverged_at: int | None   # first step with a non-finite estimate, if any
    status: str = "converged"             # one of STATUSES (module docstring)
    mi_stderr: float = float("nan")       # standard error of mi over held-out blocks, in `units`
    mi_raw: float = float("nan")          # the held-out value before clipping at 0, in `units`
    clipped: bool = False                 # mi_raw < 0 was reported as 0
    seconds: float = 0.0                  # wall time of the call
    n_parameters: int = 0                 # trainable parameters of critic + estimator head
    best_step: int = 0                    # training step of the reported checkpoint
    steps_run: int = 0                    # steps trained before early stopping / the budget
    held_out_curve: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # (step, value) in `units`
    settings: dict = field(default_factory=dict)  # the resolved training settings (defaults filled in)

    def __float__(self) -> float:
        return float(self.mi)
