"""The encoder base class and registry: encoders g applied to X and Y after sampling (Lee & Rhee
2024 §5.7: deep representations).

``ENCODERS`` maps a transform name to a factory ``f(shape, *, seed, layer, task, device) -> Encoder``
where ``shape`` is one sample's shape: ``(C, side, side)`` for images, ``(D,)`` for vectors.

* ``realnvp``, ``maf``, ``irevnet``: randomly initialised (seeded, fixed) **invertible** networks.
  I(g(X); g(Y)) = I(X; Y) exactly for a bijection, so the task's truth is unchanged.  Each has
  ``forward`` and ``inverse``; invertibility is checked numerically by the tests and by
  :func:`reconstruction_error`.
* ``resnet``: a trained, **non-invertible** ResNet-18-shaped network; features of one ``layer``.
  The data-processing inequality gives I(g(X); g(Y)) <= I(X; Y); equality holds when the source
  classes can be decoded from g(X) without error (recorded: the classifier's accuracy).

Encoders run under ``torch.no_grad()`` on the task device, batched; output is flattened.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from mibench.errors import MibenchError
from mibench.utils.registry import Registry

ENCODERS: Registry = Registry("transform")


class Encoder(nn.Module):
    """A fixed map g from one sample shape to a flat vector of ``out_dim`` numbers."""

    name: str = "encoder"
    invertible: bool = False

    def __init__(self, shape: tuple[int, ...]):
        super().__init__()
        self.shape = tuple(int(s) for s in shape)
        self.in_dim = math.prod(self.shape)
        self.out_dim = self.in_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (n, in_dim) -> (n, out_dim)
        raise NotImplementedError

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        raise MibenchError(f"transform {self.name!r} is not invertible")

    @torch.no_grad()
    def encode(self, x: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
        """g(x) for a (n, in_dim) batch, without gradients, in chunks of ``chunk`` rows."""
        x = x.reshape(x.shape[0], self.in_dim)
        if x.shape[0] <= chunk:
            return self(x).reshape(x.shape[0], self.out_dim)
        return torch.cat([self(x[i:i + chunk]).reshape(-1, self.out_dim) for i in range(0, x.shape[0], chunk)])

    def info(self) -> dict:
        return {"transform": self.name, "invertible": self.invertible, "in_dim": self.in_dim,
                "out_dim": self.out_dim, "input_shape": list(self.shape)}


def fixed_init(module: nn.Module, seed: int) -> None:
    """Re-initialise every parameter of ``module`` from a private generator seeded with ``seed``
    (weights independent of the global RNG and of construction order)."""
    g = torch.Generator().manual_seed(int(seed))
    for name, p in module.named_parameters():
        with torch.no_grad():
            if p.dim() >= 2:
                fan_in = math.prod(p.shape[1:])
                bound = 1.0 / math.sqrt(fan_in)
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * bound * math.sqrt(3.0))
            else:
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * 0.1)


@torch.no_grad()
def reconstruction_error(encoder: Encoder, x: torch.Tensor) -> float:
    """max |g^{-1}(g(x)) - x| over a batch (flattened)."""
    x = x.reshape(x.shape[0], encoder.in_dim)
    return float((encoder.inverse(encoder(x)) - x).abs().max())


def make_encoder(name: str, shape, *, seed: int = 0, layer=None, task=None, device="cpu") -> Encoder:
    """Build transform ``name`` for samples of ``shape`` on ``device`` (``layer`` only for resnet)."""
    entry = ENCODERS.get(name)
    if layer is not None and entry.name != "resnet":
        raise MibenchError(f"--layer applies to the resnet transform only, not {entry.name!r}")
    enc = entry.obj(tuple(shape), seed=seed, layer=layer, task=task, device=device)
    return enc.to(device).eval().requires_grad_(False)
