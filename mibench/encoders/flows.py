"""Randomly initialised normalising flows on the flattened input: RealNVP and MAF.

Both are bijections R^D -> R^D by construction (Dinh et al. 2016; Papamakarios et al. 2017), so
applying the same fixed g to X and Y leaves I(X; Y) unchanged.  Weights are drawn once from a
seeded private generator (:func:`mibench.encoders.fixed_init`); nothing is trained.

* **RealNVP**: ``n_layers`` affine coupling layers, each preceded by a fixed random permutation of
  the D coordinates: the first half conditions an MLP giving log-scale s and shift t of the second
  half, ``y2 = x2 * exp(s) + t`` with ``s = tanh(.)`` (scale in [1/e, e]); inverse
  ``x2 = (y2 - t) * exp(-s)``.  Forward and inverse cost one MLP pass per layer.
* **MAF**: ``n_layers`` MADE layers (masked MLPs, autoregressive in a random order per layer):
  ``u_i = (x_i - mu_i(x_<i)) * exp(-alpha_i(x_<i))`` with ``alpha = tanh(.)``.  This direction
  (data -> noise) is one pass and is the one used as g; the inverse (autoregressive, solved by a
  fixed-point iteration that is exact after at most D sweeps) is used only to verify invertibility.
"""
from __future__ import annotations

import torch
from torch import nn

from mibench.encoders.base import ENCODERS, Encoder, fixed_init
from mibench.errors import MibenchError

DEFAULT_LAYERS = 4
DEFAULT_HIDDEN = 256


def _check_dim(name: str, dim: int) -> None:
    if dim < 2:
        raise MibenchError(f"{name} needs inputs of at least 2 numbers, got {dim}")


class AffineCoupling(nn.Module):
    def __init__(self, dim: int, hidden: int, perm: torch.Tensor):
        super().__init__()
        self.k = dim // 2
        self.register_buffer("perm", perm)
        self.register_buffer("inv_perm", torch.argsort(perm))
        self.net = nn.Sequential(nn.Linear(self.k, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 2 * (dim - self.k)))

    def _st(self, x1):
        s, t = self.net(x1).chunk(2, dim=1)
        return torch.tanh(s), t

    def forward(self, x):
        z = x[:, self.perm]
        x1, x2 = z[:, :self.k], z[:, self.k:]
        s, t = self._st(x1)
        return torch.cat([x1, x2 * torch.exp(s) + t], dim=1)

    def inverse(self, y):
        y1, y2 = y[:, :self.k], y[:, self.k:]
        s, t = self._st(y1)
        z = torch.cat([y1, (y2 - t) * torch.exp(-s)], dim=1)
        return z[:, self.inv_perm]


class FlowStack(Encoder):
    """A composition of invertible layers (each with ``forward`` and ``inverse``)."""

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def inverse(self, z):
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return z


class RealNVP(FlowStack):
    name = "realnvp"
    invertible = True

    def __init__(self, shape, seed: int = 0, n_layers: int = DEFAULT_LAYERS, hidden: int = DEFAULT_HIDDEN):
        super().__init__(shape)
        _check_dim(self.name, self.in_dim)
        g = torch.Generator().manual_seed(int(seed) + 7919)
        self.layers = nn.ModuleList(AffineCoupling(self.in_dim, hidden, torch.randperm(self.in_dim, generator=g))
                                    for _ in range(n_layers))
        fixed_init(self, seed)
        self.n_layers, self.hidden, self.seed = n_layers, hidden, seed

    def info(self):
        return {**super().info(), "architecture": f"RealNVP: {self.n_layers} affine couplings (random permutation, "
                f"MLP {self.hidden} x 2, tanh log-scale), random fixed weights", "seed": self.seed}


class MaskedLinear(nn.Linear):
    def __init__(self, d_in: int, d_out: int, mask: torch.Tensor):
        super().__init__(d_in, d_out)
        self.register_buffer("mask", mask.to(torch.get_default_dtype()))

    def forward(self, x):
        return nn.functional.linear(x, self.weight * self.mask, self.bias)


class MADE(nn.Module):
    """Masked MLP: outputs (mu, alpha) for coordinate i depend only on coordinates earlier in ``order``."""

    def __init__(self, dim: int, hidden: int, order: torch.Tensor, g: torch.Generator):
        super().__init__()
        deg_in = torch.empty(dim, dtype=torch.long)
        deg_in[order] = torch.arange(1, dim + 1)          # order[k] is the k-th coordinate generated
        deg_h1 = torch.randint(1, max(dim, 2), (hidden,), generator=g)  # hidden degrees in [1, D-1]
        deg_h2 = torch.randint(1, max(dim, 2), (hidden,), generator=g)
        self.register_buffer("order", order)
        self.l1 = MaskedLinear(dim, hidden, (deg_h1[:, None] >= deg_in[None, :]))
        self.l2 = MaskedLinear(hidden, hidden, (deg_h2[:, None] >= deg_h1[None, :]))
        out_mask = (deg_in[:, None] > deg_h2[None, :])
        self.l3 = MaskedLinear(hidden, 2 * dim, torch.cat([out_mask, out_mask]))

    def params(self, x):
        h = torch.relu(self.l1(x))
        h = torch.relu(self.l2(h))
        mu, alpha = self.l3(h).chunk(2, dim=1)
        return mu, torch.tanh(alpha)

    def forward(self, x):  # data -> noise, one pass
        mu, alpha = self.params(x)
        return (x - mu) * torch.exp(-alpha)

    def inverse(self, u):
        """noise -> data.  The autoregressive inverse x = u * exp(alpha(x)) + mu(x) is solved by the
        fixed-point iteration x <- u * exp(alpha(x)) + mu(x) started at x = u: after k sweeps the
        first k coordinates in generation order are exact (each depends only on earlier ones), so D
        sweeps give the exact sequential inverse; we stop earlier once a sweep changes nothing beyond
        float rounding (random MADEs are contractive, so this takes a few dozen sweeps, not D)."""
        x = u.clone()
        tol = 4 * torch.finfo(u.dtype).eps
        for _ in range(u.shape[1]):
            mu, alpha = self.params(x)
            new = u * torch.exp(alpha) + mu
            done = bool(((new - x).abs() <= tol * (1 + new.abs())).all())
            x = new
            if done:
                break
        return x


class MAF(FlowStack):
    name = "maf"
    invertible = True

    def __init__(self, shape, seed: int = 0, n_layers: int = DEFAULT_LAYERS, hidden: int = DEFAULT_HIDDEN):
        super().__init__(shape)
        _check_dim(self.name, self.in_dim)
        g = torch.Generator().manual_seed(int(seed) + 104729)
        self.layers = nn.ModuleList(MADE(self.in_dim, hidden, torch.randperm(self.in_dim, generator=g), g)
                                    for _ in range(n_layers))
        fixed_init(self, seed)
        self.n_layers, self.hidden, self.seed = n_layers, hidden, seed

    def info(self):
        return {**super().info(), "architecture": f"MAF: {self.n_layers} MADE layers (random order each, masked MLP "
                f"{self.hidden} x 2, tanh log-scale), data->noise direction, random fixed weights", "seed": self.seed}


@ENCODERS.register("realnvp", "RealNVP affine-coupling flow on the flattened input (random fixed weights; invertible)")
def _realnvp(shape, *, seed=0, layer=None, task=None, device="cpu"):
    return RealNVP(shape, seed=seed)


@ENCODERS.register("maf", "masked autoregressive flow on the flattened input (random fixed weights; invertible)")
def _maf(shape, *, seed=0, layer=None, task=None, device="cpu"):
    return MAF(shape, seed=seed)


__all__ = ["RealNVP", "MAF", "AffineCoupling", "MADE"]
