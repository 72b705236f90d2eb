"""Networks the generative estimators share (besides the flows of :mod:`.flows`)."""
from __future__ import annotations

import torch
from torch import nn


class TimeMLP(nn.Module):
    """f(z, t[, context]) -> R^out: an MLP (SiLU) of the input, the context and sin/cos features of t;
    the velocity field of ``fmmi-*`` and the denoiser of ``minde-*``."""

    def __init__(self, in_dim: int, context_dim: int, out_dim: int, hidden: int, depth: int = 3):
        super().__init__()
        self.register_buffer("freqs", torch.tensor([1.0, 2.0, 4.0, 8.0]) * torch.pi)
        layers, width = [], in_dim + context_dim + 1 + 8
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        self.net = nn.Sequential(*layers, nn.Linear(width, out_dim))

    def forward(self, z: torch.Tensor, t: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        tf = t.unsqueeze(1) * self.freqs
        parts = [z, t.unsqueeze(1), torch.sin(tf), torch.cos(tf)] + ([context] if context is not None else [])
        return self.net(torch.cat(parts, dim=1))
