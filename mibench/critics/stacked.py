"""E joint critics evaluated together: parameters stacked along a leading axis, one batched
matmul per layer (``torch.baddbmm``) instead of E separate passes.

Built *from* E ordinary :class:`JointCritic` s (so initialisation, and therefore every number, is
the same as training them one after another); Adam is element-wise, so one optimizer over the
stacked tensors equals E optimizers.  Which engine is faster depends on the device: see
``benchmarks/bench_training.py`` and :func:`mibench.protocols.stream.training.choose_engine`.
"""
from __future__ import annotations

import torch
from torch import nn

from mibench.critics.mlp import JointCritic


class StackedJointCritics(nn.Module):
    def __init__(self, critics: list[JointCritic]):
        super().__init__()
        if not critics or not all(isinstance(c, JointCritic) for c in critics):
            raise TypeError("StackedJointCritics needs JointCritic instances")
        self.dim_x = critics[0].dim_x
        linears = [[m for m in c.net if hasattr(m, "weight")] for c in critics]
        n_layers = len(linears[0])
        self.weights = nn.ParameterList(
            nn.Parameter(torch.stack([lin[i].weight.detach() for lin in linears]).clone()) for i in range(n_layers))
        self.biases = nn.ParameterList(
            nn.Parameter(torch.stack([lin[i].bias.detach() for lin in linears]).clone()) for i in range(n_layers))

    @property
    def n(self) -> int:
        return self.weights[0].shape[0]

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(K, dx), (K, dy) -> (E, K, K) score matrices, one per critic."""
        e, k = self.n, x.shape[0]
        w1, b1 = self.weights[0], self.biases[0]
        hx = torch.baddbmm(b1[:, None, :], x.expand(e, -1, -1), w1[:, :, : self.dim_x].transpose(1, 2))
        hy = torch.bmm(y.expand(e, -1, -1), w1[:, :, self.dim_x:].transpose(1, 2))
        h = torch.relu(hx[:, :, None, :] + hy[:, None, :, :]).reshape(e, k * k, -1)
        last = len(self.weights) - 1
        for i in range(1, last):
            h = torch.relu(torch.baddbmm(self.biases[i][:, None, :], h, self.weights[i].transpose(1, 2)))
        out = torch.baddbmm(self.biases[last][:, None, :], h, self.weights[last].transpose(1, 2))
        return out.reshape(e, k, k)
