"""An i-RevNet-style invertible convolutional network (Jacobsen et al. 2018), random fixed weights.

Images (C, H, W) use 2-D convolutions; vectors (D,) are treated as a 1-channel signal of length D
with 1-D convolutions (the paper applies i-RevNet to sentence embeddings too).

* **Invertible downsampling** ("squeeze", space-to-depth): every 2x2 (2-D) or 2 (1-D) block of
  positions becomes channels, (C, H, W) -> (4C, H/2, W/2); a pure permutation of the numbers.
* **Additive coupling blocks** on the channel halves: ``(x1, x2) -> (x2, x1 + F(x2))`` with F a
  3-layer conv net (3x3, ReLU); inverse ``(y1, y2) -> (y2 - F(y1), y1)``.  Exact up to float
  rounding, whatever F is.

``stages`` stages of ``blocks`` blocks; each stage starts with a squeeze of both halves when the
spatial size is still even (the first squeeze needs an even size).  Output: both halves,
flattened, D numbers (a bijection R^D -> R^D).
"""
from __future__ import annotations

import torch
from torch import nn

from mibench.encoders.base import ENCODERS, Encoder, fixed_init
from mibench.errors import MibenchError

DEFAULT_STAGES = 2
DEFAULT_BLOCKS = 2
DEFAULT_HIDDEN = 32


def squeeze(x: torch.Tensor) -> torch.Tensor:
    if x.dim() == 4:
        n, c, h, w = x.shape
        return x.reshape(n, c, h // 2, 2, w // 2, 2).permute(0, 1, 3, 5, 2, 4).reshape(n, 4 * c, h // 2, w // 2)
    n, c, l = x.shape
    return x.reshape(n, c, l // 2, 2).permute(0, 1, 3, 2).reshape(n, 2 * c, l // 2)


def unsqueeze(x: torch.Tensor) -> torch.Tensor:
    if x.dim() == 4:
        n, c4, h, w = x.shape
        c = c4 // 4
        return x.reshape(n, c, 2, 2, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, c, 2 * h, 2 * w)
    n, c2, l = x.shape
    c = c2 // 2
    return x.reshape(n, c, 2, l).permute(0, 1, 3, 2).reshape(n, c, 2 * l)


class AdditiveBlock(nn.Module):
    def __init__(self, channels: int, hidden: int, conv):
        super().__init__()
        self.f = nn.Sequential(conv(channels, hidden, 3, padding=1), nn.ReLU(),
                               conv(hidden, hidden, 3, padding=1), nn.ReLU(),
                               conv(hidden, channels, 3, padding=1))

    def forward(self, x1, x2):
        return x2, x1 + self.f(x2)

    def inverse(self, y1, y2):
        return y2 - self.f(y1), y1


class IRevNet(Encoder):
    name = "irevnet"
    invertible = True

    def __init__(self, shape, seed: int = 0, stages: int = DEFAULT_STAGES, blocks: int = DEFAULT_BLOCKS,
                 hidden: int = DEFAULT_HIDDEN):
        super().__init__(shape)
        if len(self.shape) == 3:
            self.grid = self.shape
            conv = nn.Conv2d
            spatial = list(self.shape[1:])
        elif len(self.shape) == 1:
            self.grid = (1, self.shape[0])
            conv = nn.Conv1d
            spatial = [self.shape[0]]
        else:
            raise MibenchError(f"irevnet takes images (C, H, W) or vectors (D,), got shape {self.shape}")
        if any(s % 2 for s in spatial):
            raise MibenchError(f"irevnet's first invertible downsampling needs an even size, got {tuple(spatial)} "
                               + ("(use an even --side)" if len(spatial) == 2 else "(use an even --dim or --ds: the "
                                  "input's size)"))
        factor = 4 if len(spatial) == 2 else 2
        channels = self.grid[0]
        self.squeezes: list[bool] = []
        stage_mods = []
        for s in range(stages):
            do = all(v % 2 == 0 for v in spatial)
            if do:
                spatial = [v // 2 for v in spatial]
                # the first squeeze acts on the whole input (which is then split); later ones on each half
                channels = channels * factor
            self.squeezes.append(do)
            half = channels // 2
            stage_mods.append(nn.ModuleList(AdditiveBlock(half, hidden, conv) for _ in range(blocks)))
        self.stages = nn.ModuleList(stage_mods)
        self.out_shape = (channels, *spatial)
        fixed_init(self, seed)
        self.seed, self.hidden, self.n_blocks = seed, hidden, blocks

    def _split(self, x):
        c = x.shape[1] // 2
        return x[:, :c], x[:, c:]

    def forward(self, x):
        n = x.shape[0]
        h = x.reshape(n, *self.grid)
        if self.squeezes[0]:
            h = squeeze(h)
        x1, x2 = self._split(h)
        for i, stage in enumerate(self.stages):
            if i > 0 and self.squeezes[i]:
                x1, x2 = squeeze(x1), squeeze(x2)
            for block in stage:
                x1, x2 = block(x1, x2)
        return torch.cat([x1, x2], dim=1).reshape(n, -1)

    def inverse(self, z):
        n = z.shape[0]
        h = z.reshape(n, *self.out_shape)
        x1, x2 = self._split(h)
        for i in reversed(range(len(self.stages))):
            for block in reversed(self.stages[i]):
                x1, x2 = block.inverse(x1, x2)
            if i > 0 and self.squeezes[i]:
                x1, x2 = unsqueeze(x1), unsqueeze(x2)
        h = torch.cat([x1, x2], dim=1)
        if self.squeezes[0]:
            h = unsqueeze(h)
        return h.reshape(n, -1)

    def info(self):
        kind = "2-D" if len(self.grid) == 3 else "1-D"
        return {**super().info(), "architecture": f"i-RevNet-style ({kind}): {len(self.stages)} stages x "
                f"{self.n_blocks} additive coupling blocks (3 convs, width {self.hidden}), squeeze downsampling, "
                "random fixed weights", "output_shape": list(self.out_shape), "seed": self.seed}


@ENCODERS.register("irevnet", "i-RevNet-style invertible conv net (squeeze + additive coupling; images or vectors)")
def _irevnet(shape, *, seed=0, layer=None, task=None, device="cpu"):
    return IRevNet(shape, seed=seed)


__all__ = ["IRevNet", "squeeze", "unsqueeze"]
