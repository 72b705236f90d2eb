"""Self-consistency tasks on real images (Song & Ermon, ICLR 2020, "Understanding the limitations of
variational mutual information estimators", §5): where no true MI can be built, properties that any
correct MI estimate must have.  Three families, each on MNIST (1 x 28 x 28), CIFAR-10 (3 x 32 x 32)
or a Gaussian analogue with a closed-form MI (1 x 8 x 8):

``consistency-baseline-<data>``    X an image, Y the same image with all but its top t rows masked
                                   (set to 0): I(X; Y) is 0 at t = 0 and does not decrease with t
                                   (Y at t is a function of Y at t + 1).
``consistency-dp-<data>``          data processing: X~ = [X, X], Y~ = [Y, h(Y)] with h a further
                                   masking: I(X~; Y~) = I(X; Y), since h(Y) is a function of Y.
``consistency-additivity-<data>``  two independent images: X~ = [X1, X2], Y~ = [Y1, Y2], each Y_i
                                   masked at t: I(X~; Y~) = 2 I(X1; Y1).

Pairs are stacked as channels, so the image critic (``--critic conv``) sees both halves at every
position; the samples are the flattened images, and ``image_shapes`` says their shape.

Truth.  Images are drawn uniformly from a finite pool, so with ``noise = 0`` the exact MI of the
baseline is the entropy of the masked image over the pool (``info()``'s ``pool_mi_bits``; the
Gaussian analogue's closed form is ``exact_mi_bits``).  These values are far above what a batch of K
pairs lets a bound report, which is the point: the tests check the *relations* between an
estimator's own values (:mod:`mibench.analysis.consistency`).  The protocols need one MI level per
task, so these are fixed-MI tasks at a placeholder 0 bits: a run's ``true_mi`` column is 0 and its
bias is its mean estimate.  Parameters and truths in full: docs/self-consistency.md.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from mibench.data.sources import shown_path
from mibench.errors import MibenchError
from mibench.tasks.base import FIXED_LEVELS, batch_count, check_fixed_level
from mibench.tasks.registry import TASKS

TESTS = ("baseline", "dp", "additivity")
#: dataset -> image shape (C, H, W) and the default noise standard deviation added to Y
DATASETS = {"mnist": ((1, 28, 28), 0.0), "cifar10": ((3, 32, 32), 0.0), "gaussian": ((1, 8, 8), 2.0)}
#: how many more rows h masks by default in the data-processing test
DP_EXTRA_ROWS = 3
#: the MI level every self-consistency task holds for the protocols (a placeholder: module docstring)
PLACEHOLDER_LEVEL = 0.0
TEST_TEXT = {"baseline": "X an image, Y its top t rows (the rest masked); I = 0 at t = 0, non-decreasing in t",
             "dp": "X~ = [X, X], Y~ = [Y, h(Y)], h a further masking; I(X~; Y~) / I(X; Y) = 1",
             "additivity": "two independent images, I([X1, X2]; [Y1, Y2]) / I(X1; Y1) = 2"}


def load_pool(dataset: str, data_dir=None, device="cpu") -> tuple[torch.Tensor | None, dict]:
    """(uint8 images (N, C, H, W) on ``device``, info) of MNIST's training split or CIFAR-10's batches
    (or the shipped subset where the full data is absent, as the other tasks choose); (None, info) for
    the Gaussian analogue, whose pixels are drawn fresh."""
    if dataset == "gaussian":
        return None, {"data_source": "i.i.d. N(0, 1) pixels (no data)"}
    from mibench.data import embedded

    kind, where, rows = embedded.choose_source(dataset, data_dir)
    if kind == "full":
        if dataset == "mnist":
            from mibench.data.loaders import load_mnist

            images = load_mnist(where, "train")[0][:, None]
            source = f"full data ({shown_path(where)}/mnist, train split, md5 verified)"
        else:
            from mibench.data.loaders import load_cifar10

            images, _, batches, _ = load_cifar10(where)
            source = f"full data ({shown_path(where)}/cifar10, batches {', '.join(batches)})"
    else:
        images = embedded.load(dataset)["images"]
        images = images[:, None] if images.ndim == 3 else images
        embedded.announce(dataset, where)
        source = embedded.describe(dataset)
    info = {"data_source": source, "pool_size": int(len(images))}
    if rows:
        info["checksums"] = rows
    return torch.from_numpy(np.array(images, dtype=np.uint8, copy=True)).to(device), info


def prefix_entropy_bits(pool: np.ndarray, rows: int) -> float:
    """H of the top-``rows``-row prefix of an image drawn uniformly from ``pool`` (N, C, H, W), bits:
    the exact I(X; Y_t) of the baseline with no noise."""
    if rows <= 0:
        return 0.0
    flat = np.ascontiguousarray(pool[:, :, :rows, :]).reshape(len(pool), -1)
    _, counts = np.unique(flat, axis=0, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


class SelfConsistencyTask:
    """One self-consistency task (module docstring): ``test`` in :data:`TESTS` on ``dataset``."""

    def __init__(self, test: str, dataset: str, rows: int | None = None, rows_h: int | None = None,
                 noise: float | None = None, data_dir=None, device="cpu"):
        if test not in TESTS or dataset not in DATASETS:
            raise MibenchError(f"self-consistency tasks are {', '.join(TESTS)} on {', '.join(DATASETS)}; "
                               f"got {test!r} on {dataset!r}")
        shape, default_noise = DATASETS[dataset]
        self.test, self.dataset, self.shape = test, dataset, shape
        self.name = f"consistency-{test}-{dataset}"
        self.rows = _check_rows(shape[1] // 2 if rows is None else rows, shape[1], "rows")
        self.rows_h = None
        if test == "dp":
            self.rows_h = _check_rows(max(self.rows - DP_EXTRA_ROWS, 0) if rows_h is None else rows_h, self.rows,
                                      "rows_h")
        elif rows_h is not None:
            raise MibenchError(f"rows_h (h's rows) belongs to the data-processing task, not {self.name}")
        self.noise = float(default_noise if noise is None else noise)
        if not (math.isfinite(self.noise) and self.noise >= 0):
            raise MibenchError(f"noise must be a number >= 0, got {noise}")
        if dataset == "gaussian" and self.noise == 0:
            raise MibenchError("the Gaussian analogue needs noise > 0 (with none, Y is X's rows and I is infinite)")
        self.device = torch.device(device)
        self.pool, self._pool_info = load_pool(dataset, data_dir, self.device)
        channels = shape[0] * (1 if test == "baseline" else 2)
        self.image_shapes = ((channels, *shape[1:]),) * 2
        self.dim_x = self.dim_y = channels * shape[1] * shape[2]
        self._truth = None
        FIXED_LEVELS[self.name] = PLACEHOLDER_LEVEL

    @property
    def max_mi_bits(self) -> float:
        return PLACEHOLDER_LEVEL

    def images(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` images (n, C, H, W) drawn uniformly (with replacement) from the pool, float in [0, 1]
        (Gaussian analogue: N(0, 1) pixels)."""
        if self.pool is None:
            return torch.randn(n, *self.shape, generator=generator, device=self.device)
        idx = torch.randint(0, self.pool.shape[0], (n,), generator=generator, device=self.device)
        return self.pool[idx].float().mul_(1.0 / 255.0)

    def observe(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Y of images ``x``: the top ``rows`` rows kept, the rest 0, plus the noise."""
        y = x.clone()
        y[:, :, self.rows:, :] = 0.0
        if self.noise > 0:
            y.add_(torch.randn(y.shape, generator=generator, device=self.device), alpha=self.noise)
        return y

    def sample_images(self, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(X, Y) as images (n, C', H, W) (module docstring)."""
        n = batch_count(batch_size)
        x = self.images(n, generator)
        y = self.observe(x, generator)
        if self.test == "dp":
            h = y.clone()
            h[:, :, self.rows_h:, :] = 0.0
            return torch.cat([x, x], 1), torch.cat([y, h], 1)
        if self.test == "additivity":
            x2 = self.images(n, generator)
            return torch.cat([x, x2], 1), torch.cat([y, self.observe(x2, generator)], 1)
        return x, y

    def sample(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        check_fixed_level(self.name, float(mi_bits))
        x, y = self.sample_images(batch_size, generator)
        return x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)

    def truth_bits(self) -> dict:
        """The exact MI where it is known (module docstring): ``pool_mi_bits`` (noise 0, the finite pool)
        or ``exact_mi_bits`` (the Gaussian analogue)."""
        if self._truth is None:
            factor = 2.0 if self.test == "additivity" else 1.0
            if self.pool is None:
                per_pixel = 0.5 * math.log2(1.0 + 1.0 / self.noise ** 2)
                self._truth = {"exact_mi_bits": factor * self.rows * self.shape[0] * self.shape[2] * per_pixel}
            elif self.noise == 0:
                self._truth = {"pool_mi_bits": factor * prefix_entropy_bits(self.pool.cpu().numpy(), self.rows)}
            else:
                self._truth = {}
        return self._truth

    def info(self) -> dict:
        return {"task": self.name, "family": "self-consistency", "test": self.test, "dataset": self.dataset,
                "rows": self.rows, "rows_h": self.rows_h, "noise": self.noise, "dim_x": self.dim_x,
                "dim_y": self.dim_y, "image_shape": list(self.image_shapes[0]), "description": TEST_TEXT[self.test],
                "true_mi": ("unknown to the protocols: a self-consistency test (Song & Ermon 2020, §5); the "
                            f"run's true-MI column is a placeholder {PLACEHOLDER_LEVEL:g}, so its bias is the mean "
                            "estimate"),
                "max_mi_bits": PLACEHOLDER_LEVEL, "fixed_mi": True, **self.truth_bits(), **self._pool_info}


def _check_rows(value, most: int, what: str) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise MibenchError(f"{what} must be an integer, got {value!r}") from None
    if v != value or not 0 <= v <= most:
        raise MibenchError(f"{what} must be an integer in [0, {most}], got {value}")
    return v


def _factory(test: str, dataset: str):
    def factory(device="cpu", rows: int | None = None, rows_h: int | None = None, noise: float | None = None,
                data_dir=None):
        return SelfConsistencyTask(test, dataset, rows=rows, rows_h=rows_h, noise=noise, data_dir=data_dir,
                                   device=device)

    return factory


for _test in TESTS:
    for _data, ((_c, _h, _w), _noise) in DATASETS.items():
        _name = f"consistency-{_test}-{_data}"
        TASKS.add(_name, f"self-consistency ({_data} {_c}x{_h}x{_w}): {TEST_TEXT[_test]}; --rows t"
                  + (", --rows-h" if _test == "dp" else "") + ", --noise; "
                  + ("closed-form MI in task_info" if _data == "gaussian" else "true MI unknown to the protocols")
                  + " (runs at a placeholder 0 bits)",
                  _factory(_test, _data))
        FIXED_LEVELS[_name] = PLACEHOLDER_LEVEL
