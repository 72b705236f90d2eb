"""Critic modules.  ``forward(x, y)`` maps (K, dim_x), (K, dim_y) to the (K, K) matrix f(x_i, y_j);
``block_scores(xb, yb)`` maps G blocks (G, B, dim_x), (G, B, dim_y) to (G, B, B) score matrices.

Each critic class also declares its size without being built (:meth:`Critic.parameter_count`,
:meth:`Critic.activation_count`), so the memory checks (:mod:`mibench.utils.limits`) read the sizes
from the class that allocates them instead of re-deriving them by the critic's name."""
from __future__ import annotations

import torch
from torch import nn

from mibench.critics.kernels import linear as _linear
from mibench.critics.kernels import pair_mlp
from mibench.errors import MibenchError


def mlp(dim_in: int, hidden: int, dim_out: int, layers: int) -> nn.Sequential:
    """Input layer + ``layers`` hidden layers of width ``hidden`` (all ReLU) + linear output."""
    mods: list[nn.Module] = [nn.Linear(dim_in, hidden), nn.ReLU()]
    for _ in range(layers):
        mods += [nn.Linear(hidden, hidden), nn.ReLU()]
    mods.append(nn.Linear(hidden, dim_out))
    return nn.Sequential(*mods)


def mlp_parameters(dim_in: int, hidden: int, dim_out: int, layers: int) -> int:
    """Parameters of :func:`mlp` (weights and biases), counted without building it."""
    return dim_in * hidden + hidden + layers * (hidden * hidden + hidden) + hidden * dim_out + dim_out


def run_mlp(net: nn.Sequential, h: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Apply ``net[start:]`` (alternating Linear / ReLU, ending in Linear) with each Linear + ReLU
    pair fused into one kernel call (:func:`mibench.critics.kernels.linear`)."""
    mods = list(net)[start:]
    i = 0
    while i < len(mods):
        lin = mods[i]
        relu = i + 1 < len(mods) and isinstance(mods[i + 1], nn.ReLU)
        h = _linear(h, lin.weight, lin.bias, relu=relu)
        i += 2 if relu else 1
    return h


class Critic(nn.Module):
    """Base of every critic: ``forward`` scores one batch, :meth:`block_scores` several at once.

    A registered critic is built by :meth:`build` from the registry's common sizes, and declares
    what it will hold before it is built: :meth:`parameter_count` (equal to the built critic's
    ``sum(p.numel())``) and :meth:`activation_count` (the values one training step's forward pass
    keeps for the backward pass).  ``shapes`` is read by the image critics only."""

    #: whether the critic reads its inputs as images (the conv critics take the task's image shapes)
    takes_shapes = False

    @classmethod
    def build(cls, dim_x: int, dim_y: int, hidden: int, layers: int, embed: int, shapes=None) -> "Critic":
        """The critic for inputs of ``dim_x`` and ``dim_y`` columns."""
        raise NotImplementedError

    @classmethod
    def parameter_count(cls, dim_x: int, dim_y: int, hidden: int, layers: int, embed: int, shapes=None) -> int:
        """Trainable parameters of :meth:`build`'s critic, without building it."""
        raise NotImplementedError

    @classmethod
    def activation_count(cls, batch: int, pairs_per_row: int, dim_x: int, dim_y: int, hidden: int, layers: int,
                         embed: int, shapes=None) -> int:
        """Activation values one training step holds for a batch of ``batch`` rows, each scored against
        ``pairs_per_row`` others (the score matrix itself not included)."""
        raise NotImplementedError

    def block_scores(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        """(G, B, dim_x), (G, B, dim_y) -> (G, B, B): each block's score matrix (one block at a
        time here; critics with a batched pass override it)."""
        return torch.stack([self(xb[i], yb[i]) for i in range(xb.shape[0])])


class InnerCritic(Critic):
    """x^T y: no parameters, no activations besides the score matrix."""

    @classmethod
    def build(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        if dim_x != dim_y:
            raise MibenchError(f"the inner critic needs equal dimensions, got dim_x={dim_x}, dim_y={dim_y}; "
                               "use bilinear, separable or joint")
        return cls()

    @classmethod
    def parameter_count(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return 0

    @classmethod
    def activation_count(cls, batch, pairs_per_row, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return 0

    def forward(self, x, y):
        return x @ y.T


class BilinearCritic(Critic):
    def __init__(self, dim_x: int, dim_y: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim_x, dim_y))
        nn.init.normal_(self.weight, std=(dim_x * dim_y) ** -0.25 / 4)

    @classmethod
    def build(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return cls(dim_x, dim_y)

    @classmethod
    def parameter_count(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return dim_x * dim_y

    @classmethod
    def activation_count(cls, batch, pairs_per_row, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return batch * dim_y                                    # x W

    def forward(self, x, y):
        return (x @ self.weight) @ y.T


class SeparableCritic(Critic):
    def __init__(self, dim_x, dim_y, hidden, layers, embed):
        super().__init__()
        self.f = mlp(dim_x, hidden, embed, layers)
        self.g = mlp(dim_y, hidden, embed, layers)

    @classmethod
    def build(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return cls(dim_x, dim_y, hidden, layers, embed)

    @classmethod
    def parameter_count(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return mlp_parameters(dim_x, hidden, embed, layers) + mlp_parameters(dim_y, hidden, embed, layers)

    @classmethod
    def activation_count(cls, batch, pairs_per_row, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return 2 * batch * (hidden * (layers + 1) + embed)     # each sample once through its MLP

    def forward(self, x, y):
        return run_mlp(self.f, x) @ run_mlp(self.g, y).T


class SplitLinear(nn.Module):
    """The joint critic's first layer W [x; y] + b, stored as two parameters W_x and W_y.

    Initialised from an ordinary ``nn.Linear(dim_x + dim_y, hidden)`` (same values, same RNG
    draws), so it is the same layer; keeping W_x and W_y as separate contiguous tensors lets both
    per-sample products run on the fast GEMM path and their gradients land without a slice copy
    (what that buys: benchmarks/README.md, "Performance")."""

    def __init__(self, linear: nn.Linear, dim_x: int):
        super().__init__()
        w = linear.weight.detach()
        self.weight_x = nn.Parameter(w[:, :dim_x].clone())
        self.weight_y = nn.Parameter(w[:, dim_x:].clone())
        self.bias = nn.Parameter(linear.bias.detach().clone())

    @property
    def weight(self) -> torch.Tensor:
        return torch.cat([self.weight_x, self.weight_y], dim=1)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(pairs, self.weight, self.bias)


class JointCritic(Critic):
    """MLP on the concatenation [x_i, y_j] for every pair, without materialising the
    K^2 x (dim_x + dim_y) input: the first layer is split, W [x; y] = W_x x + W_y y, so it costs
    O(K d h) plus one broadcast add of O(K^2 h) instead of O(K^2 d h)."""

    def __init__(self, dim_x, dim_y, hidden, layers):
        super().__init__()
        self.dim_x = dim_x
        self.net = mlp(dim_x + dim_y, hidden, 1, layers)
        self.net[0] = SplitLinear(self.net[0], dim_x)

    @classmethod
    def build(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return cls(dim_x, dim_y, hidden, layers)

    @classmethod
    def parameter_count(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return mlp_parameters(dim_x + dim_y, hidden, 1, layers)

    @classmethod
    def activation_count(cls, batch, pairs_per_row, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return batch * pairs_per_row * hidden * (layers + 1)   # every pair through the hidden layers

    def forward(self, x, y):
        first = self.net[0]
        hx = _linear(x, first.weight_x, first.bias)   # (K, h)
        hy = _linear(y, first.weight_y, None)         # (K, h)
        k = x.shape[0]
        # pair (i, j) = x_i with y_j: relu(hx_i + hy_j) through the layers after the first, as one
        # fused node on CPU (kernels.pair_mlp)
        return pair_mlp(hx[:, None, :], hy[None, :, :], self._pair_layers()).reshape(k, k)

    def _pair_layers(self) -> list:
        """(weight, bias) of the layers after the split first layer, in order (ReLU after all but the last)."""
        return [(m.weight, m.bias) for m in list(self.net)[2:] if isinstance(m, nn.Linear)]

    def block_scores(self, xb, yb):
        """All G blocks in one batched pass (the split first layer per sample, then the K^2 pairs)."""
        g, b = xb.shape[0], xb.shape[1]
        first = self.net[0]
        hx = _linear(xb.reshape(g * b, -1), first.weight_x, first.bias).view(g, b, 1, -1)
        hy = _linear(yb.reshape(g * b, -1), first.weight_y, None).view(g, 1, b, -1)
        return pair_mlp(hx, hy, self._pair_layers()).view(g, b, b)

    def forward_naive(self, x, y):
        """Reference: materialise all K^2 concatenations (used by tests and benchmarks)."""
        k = x.shape[0]
        pairs = torch.cat([x[:, None, :].expand(k, k, -1), y[None, :, :].expand(k, k, -1)], dim=-1)
        return self.net(pairs.reshape(k * k, -1)).reshape(k, k)
