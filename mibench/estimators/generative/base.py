"""What every generative (density-model) estimator shares: the data rules, the split, the training
loop and its settings.  A subclass of :class:`DensityModelEstimator` declares its density models
(:meth:`~DensityModelEstimator.models`), each model's per-pair negative log-likelihood
(:meth:`~DensityModelEstimator.nll`: the training loss and the early-stopping criterion) and its
readout on the held-out pairs (:meth:`~DensityModelEstimator.readout`).

Data handling (documented rules): columns are z-scored with training statistics; constant y
columns (on the training split) are dropped (they carry no information); y (and x, for estimators
that model x's density) is jittered by Gaussian noise of ``jitter`` = 0.01 (standardised units) so
that densities exist for discrete or often-exactly-0 coordinates (pixels) -- the target is then
I(X; Y + N) <= I(X; Y), which differs from I(X;Y) only by what noise of 1% of a standard deviation
hides.  Then (``marginals = "gaussianise"``, the default) every coordinate of x and y goes through
the training split's empirical CDF and the normal quantile (:func:`gaussianise`): strictly
increasing per coordinate, so MI is unchanged, and the models' excess entropies no longer differ by
how badly each fits heavy-tailed margins (measured, Y -> Y^3, d = 1, rho 0.7, n 3000: doe-flow gave
0.86 nats for a truth of 0.34 with z-scoring only).  Training (:class:`GenerativeTraining`): Adam,
minibatches, the best state of each model on a validation part of the training split is kept (early
stopping); the estimate is on the held-out test split (``test_fraction``).  Everything is batched
torch on the device picked by :func:`pick_device` (CUDA when available).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, fields, replace

import numpy as np
import torch
from torch import nn

from mibench.errors import MibenchError
from mibench.estimators.generative.flows import FLOW_FAMILIES, ConditionalFlow, ZukoMAF


def pick_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def gaussianise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Each column through the training split's empirical CDF (piecewise-linear between the sorted
    training values, levels (i + 1/2)/n) and the standard-normal quantile: a strictly increasing
    map per coordinate (ties are broken by the jitter applied before), so MI is unchanged, and the
    flows start from Gaussian margins instead of having to learn heavy tails (Y -> Y^3)."""
    from scipy.special import ndtri

    n = train.shape[0]
    levels = ndtri((np.arange(n) + 0.5) / n)
    srt = np.sort(train, axis=0)
    return [np.column_stack([np.interp(a[:, j], srt[:, j], levels) for j in range(a.shape[1])])
            for a in (train, *others)]


def standardise(train: np.ndarray, *others: np.ndarray):
    mean = train.mean(0)
    sd = train.std(0)
    keep = sd > 0
    sd = np.where(keep, sd, 1.0)
    return keep, [(a - mean) / sd for a in (train, *others)]


@dataclass(frozen=True)
class GenerativeTraining:
    """How a generative (density-model) estimator trains and splits its data.

    Parameters
    ----------
    steps : Adam steps (each one minibatch).
    batch_size : pairs per minibatch (at most the training pairs).
    lr : Adam's learning rate.
    test_fraction : share of the pairs held out for the estimate.
    val_fraction : share of the remaining pairs held back to choose the best state (early stopping).
    eval_every : steps between validation evaluations (and the last step).
    device : ``auto`` (CUDA when available, :func:`pick_device`), ``cpu``, ``cuda[:N]``, ...
    ema : 0 (off) or the decay of an exponential moving average of each model's weights, updated after
        every step (decay min(ema, (1 + step) / (10 + step)), so the first steps do not pin it to the
        initial weights); when on, the average is what is validated, kept and read out (``minde-*``
        use 0.995, the paper's EMA: measured, it removes most of their excess over the authors' code,
        benchmarks/results/minde_vs_authors.txt).
    """

    steps: int = 2000
    batch_size: int = 256
    lr: float = 1e-3
    test_fraction: float = 0.2
    val_fraction: float = 0.1
    eval_every: int = 100
    device: str = "auto"
    ema: float = 0.0


@dataclass(frozen=True, eq=False)
class Split:
    """The standardised (and gaussianised) training, validation and test arrays of one estimate."""

    x_train: np.ndarray
    x_val: np.ndarray
    x_test: np.ndarray
    y_train: np.ndarray
    y_val: np.ndarray
    y_test: np.ndarray


class DensityModelEstimator:
    """Base of the generative estimators (module docstring).

    Parameters
    ----------
    layers, hidden, context : flow layers, MLP width and x-embedding size of each flow.
    flows : the flow family, ``"realnvp"`` (:class:`~.flows.ConditionalFlow`) or ``"zuko-maf"``
        (:class:`~.flows.ZukoMAF`, which has no separate x embedding: ``context`` is unused); default
        the estimator's own (``default_flows``).
    jitter : standard deviation of the noise added to the standardised y (module docstring).
    marginals : ``"gaussianise"`` (default) or ``"standardise"`` (module docstring).
    training : steps, batch size, learning rate, split fractions, evaluation interval and device
        (:class:`GenerativeTraining`; default ``GenerativeTraining()``).
    **training_options : any :class:`GenerativeTraining` field (``steps``, ``batch_size``, ``lr``,
        ``test_fraction``, ``val_fraction``, ``eval_every``, ``device``), replacing that of ``training``.

    ``n_parameters``: parameters of the models for the last data shape estimated (0 before the first
    call; :meth:`count_parameters` gives the first-stage models' count for any shape, without the
    models a :meth:`second_stage` adds).  ``last``: the readout's parts and the
    training details of the last estimate.
    """

    kind = "generative"
    name = "generative"
    #: the estimator models the density of x too (x is jittered like y)
    models_x = False
    #: the flow family used unless ``flows=`` says otherwise (:data:`~.flows.FLOW_FAMILIES`)
    default_flows = "realnvp"

    def __init__(self, layers: int = 4, hidden: int = 128, context: int = 64, jitter: float = 0.01,
                 marginals: str = "gaussianise", training: GenerativeTraining | None = None, flows: str | None = None,
                 **training_options):
        if marginals not in ("gaussianise", "standardise"):
            raise MibenchError(f"{self.name} marginals must be 'gaussianise' or 'standardise', got {marginals!r}")
        self.flows = flows or self.default_flows
        if self.flows not in FLOW_FAMILIES:
            raise MibenchError(f"{self.name} flows must be one of {', '.join(FLOW_FAMILIES)}, got {self.flows!r}")
        unknown = sorted(set(training_options) - {f.name for f in fields(GenerativeTraining)})
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}")
        self.marginals = marginals
        self.layers, self.hidden, self.context = layers, hidden, context
        self.training = replace(training or GenerativeTraining(), **training_options)
        self.jitter = jitter
        self.n_parameters = 0
        self.last = {}

    # --- what a subclass declares -------------------------------------------------------------------

    def models(self, dx: int, dy: int) -> dict[str, nn.Module]:
        """The density models by key, built in a fixed order (the seed decides their weights)."""
        raise NotImplementedError

    def nll(self, key: str, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-pair negative log-likelihood of model ``key`` (its training loss and validation score)."""
        raise NotImplementedError

    def readout(self, models: dict[str, nn.Module], x: torch.Tensor, y: torch.Tensor) -> tuple[float, dict]:
        """(I in nats, details) on the held-out pairs, with every model in its best state."""
        raise NotImplementedError

    def second_stage(self, models: dict[str, nn.Module], data: tuple, device: torch.device,
                     seed: int) -> tuple[dict[str, nn.Module], tuple]:
        """(Models, their training data): models trained after ``models`` (in their best states,
        then frozen) and added to them for the readout, on data built from ``data`` (x_train,
        y_train, x_val, y_val) and in the same layout; none here (the resampled hybrid trains its
        critic on negatives drawn from its trained conditional flow, stored beside each y).  Called
        with torch's global generator seeded with ``seed + 2`` (inside a fork of its state)."""
        return {}, data

    def prepare(self, split: Split) -> Split:
        """A last per-variable invertible map of the standardised arrays before training (identity
        here; such a map leaves the MI unchanged)."""
        return split

    # --- shared -------------------------------------------------------------------------------------

    def flow(self, dim: int, context_dim: int = 0) -> nn.Module:
        """A density model log q(y | x) of ``dim`` variables given ``context_dim`` (0: log q(y)), of the
        estimator's flow family."""
        if self.flows == "zuko-maf":
            return ZukoMAF(dim, context_dim, self.layers, self.hidden)
        return ConditionalFlow(dim, context_dim, self.layers, self.hidden, self.context)

    def count_parameters(self, dx: int, dy: int) -> int:
        return sum(p.numel() for m in self.models(dx, dy).values() for p in m.parameters())

    def estimate(self, x, y, *, seed: int = 0) -> float:
        x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
        y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        n = x.shape[0]
        if y.shape[0] != n:
            raise MibenchError(f"x and y must have the same number of rows, got {n} and {y.shape[0]}")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise MibenchError(f"{self.name}: x or y contains NaN or infinite values")
        n_test = int(round(self.training.test_fraction * n))
        n_val = int(round(self.training.val_fraction * (n - n_test)))
        n_train = n - n_test - n_val
        if n_test < 2 or n_val < 2 or n_train < 4:
            raise MibenchError(f"{self.name} needs more samples to split into train/validation/test, got {n}")
        rng = np.random.default_rng([seed, 0xD0E])
        order = rng.permutation(n)
        tr, va, te = order[:n_train], order[n_train:n_train + n_val], order[n_train + n_val:]
        x, y = self._reduced(x, y, np.concatenate([tr, va]), seed)
        keep_x, (xtr, xva, xte) = standardise(x[tr], x[va], x[te])
        keep, (ytr, yva, yte) = standardise(y[tr], y[va], y[te])
        if not keep.any() or (self.models_x and not keep_x.any()):
            return 0.0    # y (or a modelled x) constant on the training split: no information to carry
        ytr, yva, yte = (a[:, keep] for a in (ytr, yva, yte))
        noise = rng.standard_normal
        ytr, yva, yte = (a + self.jitter * noise(a.shape) for a in (ytr, yva, yte))
        if self.models_x:
            xtr, xva, xte = (a[:, keep_x] + self.jitter * noise(a[:, keep_x].shape) for a in (xtr, xva, xte))
        if self.marginals == "gaussianise":
            xtr, xva, xte = gaussianise(xtr + (0.0 if self.models_x else 1e-9 * noise(xtr.shape)), xva, xte)
            ytr, yva, yte = gaussianise(ytr, yva, yte)

        device = pick_device(self.training.device)
        threads = torch.get_num_threads()
        if device.type == "cpu":
            # batch-256 GEMMs of width 128 gain nothing from intra-op threads; on a busy CPU the
            # threads' spin-waits made training ~10x slower (measured: 0.35 s vs 0.03 s per step)
            torch.set_num_threads(1)
        try:
            return self._fit(self.prepare(Split(xtr, xva, xte, ytr, yva, yte)), device, seed)
        finally:
            torch.set_num_threads(threads)

    def _reduced(self, x: np.ndarray, y: np.ndarray, fit_rows: np.ndarray, seed: int):
        """Above ``REDUCE_ABOVE_DIM`` joint dimensions, x and y projected onto their leading canonical
        directions fitted on ``fit_rows`` (the training and validation pairs; :mod:`mibench.estimators.reduce`,
        the reduction ``mibench.estimate`` applies for its critics): flows on 4,096 pixels a side do not
        fit this CPU's budget, and the held-out value then estimates I(A X; B Y) <= I(X; Y)."""
        from mibench.estimators.reduce import REDUCE_ABOVE_DIM, apply_reduction, fit_canonical_reduction

        self.reduction = None
        if x.shape[1] + y.shape[1] <= REDUCE_ABOVE_DIM:
            return x, y
        a, b, info = fit_canonical_reduction(x, y, fit_rows, seed)
        self.reduction = info
        return apply_reduction(x, a, fit_rows), apply_reduction(y, b, fit_rows)

    def _train(self, models: dict, data: tuple, device: torch.device, seed: int) -> dict:
        """Adam on minibatches of the training pairs; {key: (best validation loss, its state, step)}.
        The estimators' own draws in training (noise levels, times, partners) come from torch's global
        generator, seeded here from ``seed`` (and restored after), so an estimate is a function of the
        data and the seed."""
        xtr, ytr, xva, yva = data
        train = self.training
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed + 1)
            opt = torch.optim.Adam([p for m in models.values() for p in m.parameters()], lr=train.lr)
            gen = torch.Generator(device=device).manual_seed(seed)
            batch = min(train.batch_size, xtr.shape[0])
            best = {k: (math.inf, None, 0) for k in models}
            # the models validated and kept: the weights themselves, or their moving average (``ema``)
            kept = {k: copy.deepcopy(m) for k, m in models.items()} if train.ema > 0 else models
            for step in range(1, train.steps + 1):
                idx = torch.randint(0, xtr.shape[0], (batch,), generator=gen, device=device)
                yb, xb = ytr[idx], xtr[idx]
                loss = sum(self.nll(k, m, xb, yb).mean() for k, m in models.items())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if train.ema > 0:
                    decay = min(train.ema, (1 + step) / (10 + step))
                    with torch.no_grad():
                        for key, model in models.items():
                            for avg, p in zip(kept[key].state_dict().values(), model.state_dict().values()):
                                if avg.is_floating_point():
                                    avg.mul_(decay).add_(p, alpha=1 - decay)
                                else:
                                    avg.copy_(p)
                if step % train.eval_every == 0 or step == train.steps:
                    with torch.no_grad():
                        for key, model in kept.items():
                            v = float(self.nll(key, model, xva, yva).mean())
                            if math.isfinite(v) and v < best[key][0]:
                                best[key] = (v, copy.deepcopy(model.state_dict()), step)
        return best

    def _load_best(self, models: dict, best: dict) -> None:
        for key, model in models.items():
            if best[key][1] is None:
                raise MibenchError(f"{self.name}: training diverged (no finite validation loss)")
            model.load_state_dict(best[key][1])

    def _fit(self, split: Split, device: torch.device, seed: int) -> float:
        """Train every model on ``split`` (the best validation state of each kept) and return the
        readout on the test split in nats; details in ``self.last``."""
        T = lambda a: torch.as_tensor(a, dtype=torch.float32, device=device)   # noqa: E731
        xtr, xva, xte, ytr, yva, yte = map(T, (split.x_train, split.x_val, split.x_test,
                                               split.y_train, split.y_val, split.y_test))
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            models = {k: m.to(device) for k, m in self.models(xtr.shape[1], ytr.shape[1]).items()}
        self.n_parameters = sum(p.numel() for m in models.values() for p in m.parameters())
        best = self._train(models, (xtr, ytr, xva, yva), device, seed)
        self._load_best(models, best)
        data = (xtr, ytr, xva, yva)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed + 2)
            later, later_data = self.second_stage(models, data, device, seed)
            later = {k: m.to(device) for k, m in later.items()}
        if later:
            for model in models.values():
                model.requires_grad_(False)
            later_best = self._train(later, later_data, device, seed + 2)
            self._load_best(later, later_best)
            models, best = {**models, **later}, {**best, **later_best}
            self.n_parameters += sum(p.numel() for m in later.values() for p in m.parameters())
        with torch.no_grad():
            value, details = self.readout(models, xte, yte)
        self.last = {**details, **{f"best_step_{k}": best[k][2] for k in models},
                     **({"reduction": self.reduction} if getattr(self, "reduction", None) else {}),
                     "n_train": xtr.shape[0], "n_val": xva.shape[0], "n_test": xte.shape[0], "device": str(device)}
        return value
