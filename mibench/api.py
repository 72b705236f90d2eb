"""``mibench.estimate``: estimate I(X;Y) on your own paired samples with any registered estimator
and critic, trained by the same harness as the benchmark."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .errors import MibenchError
from .units import nats_to_bits


@dataclass
class EstimateResult:
    mi: float                 # held-out estimate (or training-tail mean if test_fraction == 0), in `units`
    units: str
    estimator: str
    critic: str
    curve: np.ndarray         # per-step training estimates, in `units`
    train_estimate: float     # mean of the last 10% of the training curve, in `units`
    n_train: int
    n_test: int
    diverged_at: int | None   # first step with a non-finite estimate, if any

    def __float__(self) -> float:
        return float(self.mi)


class ArrayTask:
    """Minibatches of the user's training pairs (the 'task' the harness trains on)."""

    name = "arrays"

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        self.x, self.y = x, y
        self.dim_x, self.dim_y = x.shape[1], y.shape[1]
        self.device = x.device

    @property
    def max_mi_bits(self) -> float:
        return math.inf

    def sample(self, batch_size, mi_bits, generator):
        idx = torch.randint(0, self.x.shape[0], (batch_size,), generator=generator, device=self.device)
        return self.x[idx], self.y[idx]

    def info(self) -> dict:
        return {"task": self.name, "n": int(self.x.shape[0]), "dim_x": self.dim_x, "dim_y": self.dim_y}


def _as_2d(a, name: str) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise MibenchError(f"{name} must be a numeric array") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        arr = arr.reshape(arr.shape[0], -1)
    if not np.all(np.isfinite(arr)):
        raise MibenchError(f"{name} contains NaN or infinite values")
    return arr


def estimate(x, y, estimator: str = "smile", critic: str = "joint", steps: int = 2000, batch_size: int = 64,
             lr: float = 5e-4, hidden: int = 256, layers: int = 2, embed: int = 32, test_fraction: float = 0.2,
             standardize: bool = True, device: str = "auto", seed: int = 0, units: str = "bits",
             progress: bool = False) -> EstimateResult:
    """Estimate I(X;Y) from paired samples ``x`` (n, dx) and ``y`` (n, dy).

    The pairs are split (seeded) into training and held-out parts; the critic trains on random
    minibatches of training pairs (off-diagonal pairs of a batch act as the product of marginals)
    and the reported ``mi`` is the bound averaged over held-out batches of ``batch_size``, so it is
    not inflated by overfitting.  Columns are z-scored with training statistics when
    ``standardize``.  ``units``: 'bits' or 'nats'.
    """
    from .harness import RunConfig, _train, build_models, resolve_device
    from .schedule import parse_schedule

    if units not in ("bits", "nats"):
        raise MibenchError(f"units must be 'bits' or 'nats', got {units!r}")
    xa, ya = _as_2d(x, "x"), _as_2d(y, "y")
    if xa.shape[0] != ya.shape[0]:
        raise MibenchError(f"x and y must have the same number of samples, got {xa.shape[0]} and {ya.shape[0]}")
    if not 0 <= test_fraction < 1:
        raise MibenchError(f"test_fraction must be in [0, 1), got {test_fraction}")
    n = xa.shape[0]
    n_test = int(round(n * test_fraction))
    n_train = n - n_test
    if n_train < batch_size or (test_fraction > 0 and n_test < batch_size):
        raise MibenchError(f"{n} samples are too few for batch_size {batch_size} with test_fraction {test_fraction}; "
                           "pass more samples or a smaller batch_size")
    dev = resolve_device(device)
    perm = np.random.default_rng(seed).permutation(n)
    tr, te = perm[:n_train], perm[n_train:]
    if standardize:
        for arr in (xa, ya):
            mu, sd = arr[tr].mean(0), arr[tr].std(0)
            arr -= mu
            arr /= np.where(sd > 0, sd, 1.0)
    xt = torch.as_tensor(xa, dtype=torch.float32, device=dev)
    yt = torch.as_tensor(ya, dtype=torch.float32, device=dev)
    train_task = ArrayTask(xt[tr], yt[tr])
    cfg = RunConfig(task="arrays", estimators=[estimator], critic=critic, hidden=hidden, layers=layers, embed=embed,
                    mi=0.0, steps=steps, batch_size=batch_size, lr=lr, seed=seed, device=str(dev)).resolved()
    critics, heads, groups = build_models(cfg, train_task.dim_x, train_task.dim_y, dev)
    curve_bits, diverged = _train(cfg, train_task, parse_schedule(0.0, steps), critics, heads, groups, dev, progress)
    scale = 1.0 if units == "bits" else math.log(2.0)
    curve = curve_bits[0] * scale
    tail = curve[-max(1, steps // 10):]
    train_est = float(np.nanmean(tail)) if np.isfinite(tail).any() else float("nan")
    if n_test:
        held = _held_out_nats(critics[0], heads[0], xt[te], yt[te], batch_size)
        mi = nats_to_bits(held) * scale
    else:
        mi = train_est
    return EstimateResult(mi=float(mi), units=units, estimator=cfg.estimators[0], critic=critic, curve=curve,
                          train_estimate=train_est, n_train=n_train, n_test=n_test,
                          diverged_at=diverged.get(cfg.estimators[0]))


@torch.no_grad()
def _held_out_nats(critic, head, x, y, batch_size) -> float:
    """Mean of the estimator's reported bound over consecutive held-out batches of ``batch_size``."""
    critic.eval()
    n_batches = x.shape[0] // batch_size
    values = []
    for b in range(n_batches):
        sl = slice(b * batch_size, (b + 1) * batch_size)
        values.append(head.value(critic(x[sl], y[sl])))
    return float(torch.stack(values).mean())
