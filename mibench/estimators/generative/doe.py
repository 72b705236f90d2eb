"""Generative (density-model) MI estimators for the sample-based protocol: ``doe-flow``.

**Difference of entropies** (McAllester & Stratos, "Formal limitations on the measurement of
mutual information", AISTATS 2020, §6 "DoE"): I(X;Y) = H(Y) - H(Y|X), each entropy replaced by the
held-out cross-entropy of a trained density model,

    I_DoE = E_test[log q(y|x)] - E_test[log q(y)],

with q(y) and q(y|x) two normalising flows trained by maximum likelihood on a training split
(Dinh, Sohl-Dickstein & Bengio 2017, RealNVP affine couplings; the conditional flow receives an
MLP embedding of x in every layer, as in conditional flows, Winkler et al. 2019).  Each layer is

* an element-wise affine map (in q(y|x) linear in the x embedding),
* a RealNVP affine coupling on alternating coordinate masks (skipped for 1-d y),
* an element-wise sinh-arcsinh map (Jones & Pewsey 2009; in q(y|x) linear in the x embedding) so
  1-d and heavy-tailed margins are not forced to be Gaussian,

and the base is N(0, I).  The log-determinants are exact.  The two cross-entropies are upper
bounds on H(Y) and H(Y|X), so I_DoE is *not* a bound: its error is the difference of the two
models' excess entropies.

Data handling (documented rules): columns are z-scored with training statistics; constant y
columns (on the training split) are dropped (they carry no information); y is jittered by
Gaussian noise of ``jitter`` = 0.01 (standardised units) so that densities exist for discrete or
often-exactly-0 coordinates (pixels) -- the target is then I(X; Y + N) <= I(X; Y), which differs
from I(X;Y) only by what noise of 1% of a standard deviation hides.  Then (``marginals =
"gaussianise"``, the default) every coordinate of x and y goes through the training split's
empirical CDF and the normal quantile (:func:`_gaussianise`): strictly increasing per coordinate,
so MI is unchanged, and the two flows' excess entropies no longer differ by how badly each fits
heavy-tailed margins (measured, Y -> Y^3, d = 1, rho 0.7, n 3000: 0.86 nats for a truth of 0.34
with z-scoring only).  Training (:class:`GenerativeTraining`, the settings a generative estimator
trains and splits by): Adam, minibatches, the best state of each flow on a validation part of the
training split is kept (early stopping); the estimate is on the held-out test split
(``test_fraction``).  Everything is batched torch on the device picked by :func:`pick_device`
(CUDA when available).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, fields, replace

import numpy as np
import torch
from torch import nn

from mibench.errors import MibenchError

LOG_2PI = math.log(2 * math.pi)


def pick_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class _Params(nn.Module):
    """Parameters of an invertible map: an MLP of the inputs (mask-ed y and/or the x context), or a
    free learned vector when there are no inputs.  Zero-initialised last layer: each layer starts
    as the identity."""

    def __init__(self, in_dim: int, out_dim: int, hidden: int):
        super().__init__()
        self.out_dim = out_dim
        if in_dim > 0 and hidden == 0:       # linear in an already-embedded context
            self.net = nn.Sequential(nn.Linear(in_dim, out_dim))
        elif in_dim > 0:
            self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, out_dim))
            nn.init.zeros_(self.net[-1].weight)
            nn.init.zeros_(self.net[-1].bias)
        else:
            self.net = None
            self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, h: torch.Tensor | None, n: int) -> torch.Tensor:
        if self.net is None:
            return self.bias.expand(n, self.out_dim)
        return self.net(h)


def _soft(s: torch.Tensor, bound: float = 3.0) -> torch.Tensor:
    """Log-scales squashed to (-bound, bound) for stable training."""
    return bound * torch.tanh(s / bound)


class _Layer(nn.Module):
    """Element-wise affine, RealNVP coupling (dim >= 2) and sinh-arcsinh; ``forward(y, ctx)`` maps
    data towards the base and returns (z, log|det dz/dy|)."""

    def __init__(self, dim: int, ctx_dim: int, hidden: int, parity: int):
        super().__init__()
        self.dim = dim
        self.affine = _Params(ctx_dim, 2 * dim, 0)      # element-wise maps: linear in the x embedding
        if dim >= 2:
            mask = (torch.arange(dim) % 2 == parity).float()
            self.register_buffer("mask", mask)
            self.coupling = _Params(dim + ctx_dim, 2 * dim, hidden)
        else:
            self.coupling = None
        self.sas = _Params(ctx_dim, 2 * dim, 0)

    def forward(self, y, ctx):
        n = y.shape[0]
        s, t = self.affine(ctx, n).chunk(2, dim=1)
        s = _soft(s)
        y = y * torch.exp(s) + t
        logdet = s.sum(1)
        if self.coupling is not None:
            m = self.mask
            h = y * m if ctx is None else torch.cat([y * m, ctx], dim=1)
            s, t = self.coupling(h, n).chunk(2, dim=1)
            s = _soft(s) * (1 - m)
            y = y * m + (1 - m) * (y * torch.exp(s) + t)
            logdet = logdet + s.sum(1)
        # sinh-arcsinh: z = sinh(b * asinh(y) - a), b = e^{beta} > 0 (Jones & Pewsey 2009)
        a, beta = self.sas(ctx, n).chunk(2, dim=1)
        beta = _soft(beta, 2.0)
        b = torch.exp(beta)
        inner = b * torch.asinh(y) - a
        z = torch.sinh(inner)
        logdet = logdet + (beta + torch.log(torch.cosh(inner)) - 0.5 * torch.log1p(y * y)).sum(1)
        return z, logdet


class ConditionalFlow(nn.Module):
    """log q(y | x) (or log q(y) when ``x_dim`` is 0): a stack of :class:`_Layer` on N(0, I)."""

    def __init__(self, y_dim: int, x_dim: int = 0, layers: int = 4, hidden: int = 128, context: int = 64):
        super().__init__()
        self.embed = None
        ctx_dim = 0
        if x_dim > 0:
            self.embed = nn.Sequential(nn.Linear(x_dim, hidden), nn.ReLU(), nn.Linear(hidden, context), nn.ReLU())
            ctx_dim = context
        self.layers = nn.ModuleList(_Layer(y_dim, ctx_dim, hidden, parity=i % 2) for i in range(layers))

    def log_prob(self, y: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
        ctx = None if self.embed is None else self.embed(x)
        logdet = torch.zeros(y.shape[0], dtype=y.dtype, device=y.device)
        for layer in self.layers:
            y, ld = layer(y, ctx)
            logdet = logdet + ld
        return -0.5 * (y * y).sum(1) - 0.5 * y.shape[1] * LOG_2PI + logdet


def _gaussianise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
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


def _standardise(train: np.ndarray, *others: np.ndarray):
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
    """

    steps: int = 2000
    batch_size: int = 256
    lr: float = 1e-3
    test_fraction: float = 0.2
    val_fraction: float = 0.1
    eval_every: int = 100
    device: str = "auto"


@dataclass(frozen=True, eq=False)
class _Split:
    """The standardised (and gaussianised) training, validation and test arrays of one estimate."""

    x_train: np.ndarray
    x_val: np.ndarray
    x_test: np.ndarray
    y_train: np.ndarray
    y_val: np.ndarray
    y_test: np.ndarray


class DoEFlow:
    """Difference-of-entropies estimator with two normalising flows (module docstring).

    Parameters
    ----------
    layers, hidden, context : flow layers, MLP width and x-embedding size of each flow.
    jitter : standard deviation of the noise added to the standardised y (module docstring).
    marginals : ``"gaussianise"`` (default) or ``"standardise"`` (module docstring).
    training : steps, batch size, learning rate, split fractions, evaluation interval and device
        (:class:`GenerativeTraining`; default ``GenerativeTraining()``).
    **training_options : any :class:`GenerativeTraining` field (``steps``, ``batch_size``, ``lr``,
        ``test_fraction``, ``val_fraction``, ``eval_every``, ``device``), replacing that of ``training``.

    ``n_parameters``: parameters of both flows for the last data shape estimated (0 before the
    first call; :meth:`count_parameters` gives it for any shape)."""

    kind = "generative"
    name = "doe-flow"

    def __init__(self, layers: int = 4, hidden: int = 128, context: int = 64, jitter: float = 0.01,
                 marginals: str = "gaussianise", training: GenerativeTraining | None = None, **training_options):
        if marginals not in ("gaussianise", "standardise"):
            raise MibenchError(f"doe-flow marginals must be 'gaussianise' or 'standardise', got {marginals!r}")
        unknown = sorted(set(training_options) - {f.name for f in fields(GenerativeTraining)})
        if unknown:
            raise TypeError(f"DoEFlow() got an unexpected keyword argument {unknown[0]!r}")
        self.marginals = marginals
        self.layers, self.hidden, self.context = layers, hidden, context
        self.training = replace(training or GenerativeTraining(), **training_options)
        self.jitter = jitter
        self.n_parameters = 0
        self.last = {}

    def _models(self, dx: int, dy: int):
        marginal = ConditionalFlow(dy, 0, self.layers, self.hidden, self.context)
        conditional = ConditionalFlow(dy, dx, self.layers, self.hidden, self.context)
        return marginal, conditional

    def count_parameters(self, dx: int, dy: int) -> int:
        return sum(p.numel() for m in self._models(dx, dy) for p in m.parameters())

    def estimate(self, x, y, *, seed: int = 0) -> float:
        x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
        y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        n = x.shape[0]
        if y.shape[0] != n:
            raise MibenchError(f"x and y must have the same number of rows, got {n} and {y.shape[0]}")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise MibenchError("doe-flow: x or y contains NaN or infinite values")
        n_test = int(round(self.training.test_fraction * n))
        n_val = int(round(self.training.val_fraction * (n - n_test)))
        n_train = n - n_test - n_val
        if n_test < 2 or n_val < 2 or n_train < 4:
            raise MibenchError(f"doe-flow needs more samples to split into train/validation/test, got {n}")
        rng = np.random.default_rng([seed, 0xD0E])
        order = rng.permutation(n)
        tr, va, te = order[:n_train], order[n_train:n_train + n_val], order[n_train + n_val:]
        _, (xtr, xva, xte) = _standardise(x[tr], x[va], x[te])
        keep, (ytr, yva, yte) = _standardise(y[tr], y[va], y[te])
        if not keep.any():
            return 0.0    # y constant on the training split: no information to carry
        ytr, yva, yte = (a[:, keep] for a in (ytr, yva, yte))
        noise = rng.standard_normal
        ytr, yva, yte = (a + self.jitter * noise(a.shape) for a in (ytr, yva, yte))
        if self.marginals == "gaussianise":
            xtr, xva, xte = _gaussianise(xtr + 1e-9 * noise(xtr.shape), xva, xte)
            ytr, yva, yte = _gaussianise(ytr, yva, yte)

        device = pick_device(self.training.device)
        threads = torch.get_num_threads()
        if device.type == "cpu":
            # batch-256 GEMMs of width 128 gain nothing from intra-op threads; on a busy CPU the
            # threads' spin-waits made training ~10x slower (measured: 0.35 s vs 0.03 s per step)
            torch.set_num_threads(1)
        try:
            return self._fit(_Split(xtr, xva, xte, ytr, yva, yte), device, seed)
        finally:
            torch.set_num_threads(threads)

    def _fit(self, split: _Split, device: torch.device, seed: int) -> float:
        """Train both flows on ``split`` (best validation state of each kept) and return the test
        estimate of H(Y) - H(Y|X) in nats; details in ``self.last``."""
        dt = torch.float32
        T = lambda a: torch.as_tensor(a, dtype=dt, device=device)   # noqa: E731
        xtr, xva, xte, ytr, yva, yte = map(T, (split.x_train, split.x_val, split.x_test,
                                               split.y_train, split.y_val, split.y_test))
        n_train, n_val, n_test = xtr.shape[0], xva.shape[0], xte.shape[0]
        train = self.training
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            marginal, conditional = (m.to(device) for m in self._models(xtr.shape[1], ytr.shape[1]))
        self.n_parameters = sum(p.numel() for m in (marginal, conditional) for p in m.parameters())
        opt = torch.optim.Adam([*marginal.parameters(), *conditional.parameters()], lr=train.lr)
        gen = torch.Generator(device=device).manual_seed(seed)
        batch = min(train.batch_size, n_train)
        best = {"m": (math.inf, None, 0), "c": (math.inf, None, 0)}

        def val_nll(model, cond):
            with torch.no_grad():
                return float(-model.log_prob(yva, xva if cond else None).mean())

        for step in range(1, train.steps + 1):
            idx = torch.randint(0, n_train, (batch,), generator=gen, device=device)
            yb, xb = ytr[idx], xtr[idx]
            loss = -(marginal.log_prob(yb).mean() + conditional.log_prob(yb, xb).mean())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if step % train.eval_every == 0 or step == train.steps:
                for key, model, cond in (("m", marginal, False), ("c", conditional, True)):
                    v = val_nll(model, cond)
                    if math.isfinite(v) and v < best[key][0]:
                        best[key] = (v, copy.deepcopy(model.state_dict()), step)
        for key, model in (("m", marginal), ("c", conditional)):
            if best[key][1] is None:
                raise MibenchError("doe-flow: training diverged (no finite validation likelihood)")
            model.load_state_dict(best[key][1])
        with torch.no_grad():
            h_y = -float(marginal.log_prob(yte).double().mean())
            h_y_given_x = -float(conditional.log_prob(yte, xte).double().mean())
        self.last = {"h_y": h_y, "h_y_given_x": h_y_given_x, "best_step_marginal": best["m"][2],
                     "best_step_conditional": best["c"][2], "n_train": n_train, "n_val": n_val, "n_test": n_test,
                     "device": str(device)}
        return h_y - h_y_given_x
