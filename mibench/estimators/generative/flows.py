"""Normalising flows for the generative estimators: :class:`ConditionalFlow`, log q(y | x) (or log q(y)
without a context) as a stack of element-wise affine maps, RealNVP affine couplings (Dinh,
Sohl-Dickstein & Bengio 2017) on alternating masks and element-wise sinh-arcsinh maps (Jones &
Pewsey 2009) on a N(0, I) base; the conditional flow receives an MLP embedding of x in every layer
(Winkler et al. 2019).  Log-determinants are exact.

:class:`ZukoMAF` is zuko's masked autoregressive flow (Papamakarios et al. 2017; zuko 1.6, Rozet et al.)
behind the same ``log_prob(y, x)``: it reads closer to the truth than these flows in less time
(docs/estimators.md), so ``ba``, ``gm-flow``, ``l1out`` and ``doe-flow`` use it.  ``mienf`` keeps these
layers (it needs their map to the base); ``flows=`` switches a density model's family."""
from __future__ import annotations

import math

import torch
from torch import nn

LOG_2PI = math.log(2 * math.pi)


class _Params(nn.Module):
    """Parameters of an invertible map: an MLP of the inputs (mask-ed y and/or the x context), or a
    free learned vector when there are no inputs.  Zero-initialised last layer: each layer starts
    as the identity.  Stacked as members (:mod:`mibench.estimators.members`), the free vector has a
    leading member dimension and each member's rows get its own."""

    member_parameters = ("bias",)

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
            if self.bias.dim() == 2:     # (members, out): member-major folded rows
                m = self.bias.shape[0]
                return self.bias.unsqueeze(1).expand(m, n // m, self.out_dim).reshape(n, self.out_dim)
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

    def transform(self, y: torch.Tensor, x: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(z, log|det dz/dy|): y mapped to the base space (given x for a conditional flow)."""
        ctx = None if self.embed is None else self.embed(x)
        logdet = torch.zeros(y.shape[0], dtype=y.dtype, device=y.device)
        for layer in self.layers:
            y, ld = layer(y, ctx)
            logdet = logdet + ld
        return y, logdet

    def log_prob(self, y: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
        z, logdet = self.transform(y, x)
        return -0.5 * (z * z).sum(1) - 0.5 * z.shape[1] * LOG_2PI + logdet


class ZukoMAF(nn.Module):
    """log q(y | x) (or log q(y) when ``x_dim`` is 0) from ``zuko.flows.MAF``: ``layers`` affine
    autoregressive transforms, each a masked MLP with two hidden layers of ``hidden`` units that also
    reads x (module docstring)."""

    def __init__(self, y_dim: int, x_dim: int = 0, layers: int = 4, hidden: int = 128):
        super().__init__()
        import zuko

        self.flow = zuko.flows.MAF(y_dim, context=x_dim, transforms=layers, hidden_features=[hidden, hidden])
        # one variable without a context: each transform is a free affine map whose parameters zuko
        # draws at random (a start far from the data's scale, slow to leave at lr 1e-3); start them at
        # the identity, as mibench's flows start.  Every other case keeps zuko's initialisation.
        with torch.no_grad():
            for t in self.flow.transform.transforms:
                for p in getattr(t, "phi", ()):
                    p.zero_()

    def log_prob(self, y: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
        return self.flow(x).log_prob(y)

    def sample(self, m: int, x: torch.Tensor) -> torch.Tensor:
        """``m`` draws y ~ q(.|x_i) for each row of ``x``: shape (m, n, y_dim)."""
        return self.flow(x).sample((m,))


#: the flow families a density-model estimator can use (``flows=``)
FLOW_FAMILIES = ("realnvp", "zuko-maf")


class ConditionalGaussian(nn.Module):
    """log q(y | x) = log N(y; mu(x), diag sigma^2(x)), mu and log sigma^2 from one MLP of x (the
    variational family of CLUB, Cheng et al. 2020, §3.2); the same ``log_prob(y, x)`` as the flows."""

    def __init__(self, y_dim: int, x_dim: int, hidden: int = 128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(x_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 2 * y_dim))

    def log_prob(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        mu, log_var = self.net(x).chunk(2, dim=1)
        log_var = 6.0 * torch.tanh(log_var / 6.0)       # variances within e^{+-6}: stable training
        return -0.5 * (((y - mu) ** 2) * torch.exp(-log_var) + log_var + LOG_2PI).sum(1)
