"""FMMI, mutual information by flow matching (Butakov, Semenenko, Frolov & Oseledets, "FMMI: flow matching
mutual information estimation", arXiv:2511.08552, 2025): learn the velocity field v of a continuous
flow that carries the product of marginals to the joint, and read the MI off its divergence.

For a flow dz/dt = v(z, t) with marginals p_t, d h(p_t)/dt = E_{p_t}[div v(z, t)] (continuity equation),
so h(p_1) - h(p_0) = int_0^1 E_{p_t}[div v] dt.  Starting at p_0 = p_X p_Y and ending at p_1 = p_XY,
h(p_0) - h(p_1) = h(X) + h(Y) - h(X, Y) = I(X;Y):

    I(X;Y) = - int_0^1 E_{p_t}[div v(z_t, t)] dt.

Flow matching (Lipman et al. 2023; Albergo & Vanden-Eijnden 2023) learns v by regression on straight
interpolants z_t = (1 - t) z_0 + t z_1, target z_1 - z_0, and the interpolants' law at time t is the
learned flow's p_t, so the integral is a plain expectation over (t, z_0, z_1) of the learned
divergence -- no ODE is solved.  Two variants:

* ``fmmi-c`` (conditional): x is kept, only y moves, from an independent y_0 (y of another pair) to the
  y paired with x; v = v(y_t, t | x) on dy coordinates and I = h(Y) - h(Y|X) = -E[div_y v];
* ``fmmi-j`` (joint): z = [x, y] moves from (x_a, y_b) (a product-of-marginals pair) to an independent
  joint pair (x_c, y_c); v on dx + dy coordinates.

The divergence is exact (one backward pass per coordinate) up to ``EXACT_DIV_MAX_DIM`` coordinates and
Hutchinson's estimator (Rademacher probes) above.  The data rules, split and early stopping (on the
flow-matching loss of the validation pairs) are those of :mod:`mibench.estimators.trained`; the estimate averages the
divergence over ``readout_passes`` draws of t and partners for each held-out pair.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from mibench.estimators.generative.nets import TimeMLP
from mibench.estimators.members import member_randperm, members_of
from mibench.estimators.trained import HeldOutEstimator, TrainedSettings, per_pair_stderr

EXACT_DIV_MAX_DIM = 32
HUTCHINSON_PROBES = 4
PATH_BINS = 8          # the readout's parts along the path (``path_parts``); even, so two halves


def divergence(fn, z: torch.Tensor, generator: torch.Generator | None = None, members: int = 1) -> torch.Tensor:
    """Per-row div_z fn(z) (fn maps (n, d) -> (n, d) row-wise): exact for d <= EXACT_DIV_MAX_DIM,
    Hutchinson's estimate with HUTCHINSON_PROBES Rademacher probes above (``members``: the rows are that
    many members' equal blocks, and each block gets the probes one member's rows draw)."""
    with torch.enable_grad():
        z = z.detach().requires_grad_(True)
        out = fn(z)
        d = z.shape[1]
        total = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
        if d <= EXACT_DIV_MAX_DIM:
            for i in range(d):
                g, = torch.autograd.grad(out[:, i].sum(), z, retain_graph=i < d - 1)
                total = total + g[:, i]
            return total.detach()
        for k in range(HUTCHINSON_PROBES):
            e = (torch.randint(0, 2, (z.shape[0] // members, d), generator=generator, device=z.device) * 2 - 1)
            e = e.to(z.dtype).repeat(members, 1)
            g, = torch.autograd.grad((out * e).sum(), z, retain_graph=k < HUTCHINSON_PROBES - 1)
            total = total + (g * e).sum(1)
        return (total / HUTCHINSON_PROBES).detach()


@dataclass(frozen=True)
class FMMISettings(TrainedSettings):
    """``joint`` picks the variant; ``readout_passes``: draws of (t, partners) per held-out pair in the
    estimate; ``hidden``: the velocity MLP's width."""

    hidden: int = 256
    joint: bool = False
    readout_passes: int = 8

    RANGES: ClassVar[dict] = {**TrainedSettings.RANGES, "hidden": (1, float("inf"), True, False),
                              "readout_passes": (1, float("inf"), True, False)}


class FMMI(HeldOutEstimator):
    """``fmmi-c`` / ``fmmi-j`` (module docstring); settings: :class:`FMMISettings`."""

    name = "fmmi-c"
    Settings: ClassVar[type] = FMMISettings

    def __init__(self, **options):
        super().__init__(**options)
        self.joint = bool(self.settings.joint)
        self.readout_passes = self.settings.readout_passes
        self.models_x = self.joint
        if self.joint:
            self.name = "fmmi-j"

    def models(self, dx, dy):
        hidden = self.settings.hidden
        if self.joint:
            return {"velocity": TimeMLP(dx + dy, 0, dx + dy, hidden)}
        return {"velocity": TimeMLP(dy, dx, dy, hidden)}

    def _draw(self, x, y, generator=None, members: int = 1):
        """(z_0, z_1, t, context) for one flow-matching sample per row; partners are drawn within each
        member's rows when ``members`` networks run stacked (:mod:`mibench.estimators.members`)."""
        n = x.shape[0]
        t = torch.rand(n, generator=generator, device=x.device, dtype=x.dtype)
        return self._pair_up(x, y, t, lambda: member_randperm(n, members, generator, x.device))

    def _pair_up(self, x, y, t, perm):
        """(z_0, z_1, t, context) of :meth:`_draw` from the times ``t`` and ``perm()``, which gives one
        permutation of the rows per call (the partners), called in the order both draws rely on."""
        if self.joint:
            a, b, c = perm(), perm(), perm()
            return torch.cat([x[a], y[b]], 1), torch.cat([x[c], y[c]], 1), t, None
        return y[perm()], y, t, x

    def loss(self, key, model, x, y):
        gen = None if torch.is_grad_enabled() else torch.Generator(device=x.device).manual_seed(0)
        z0, z1, t, ctx = self._draw(x, y, gen, members_of(model))
        zt = (1 - t.unsqueeze(1)) * z0 + t.unsqueeze(1) * z1
        return ((model(zt, t, ctx) - (z1 - z0)) ** 2).sum(1)

    def _read_draw(self, x, y, generator, members: int):
        """:meth:`_draw` for the readout of ``members`` stacked networks (member-major rows): each member's
        rows get the draws its own readout makes (every readout's generator starts from the same seed)."""
        if members == 1:
            return self._draw(x, y, generator)
        n = x.shape[0] // members
        t = torch.rand(n, generator=generator, device=x.device, dtype=x.dtype).repeat(members)
        offsets = torch.arange(members, device=x.device).unsqueeze(1) * n
        return self._pair_up(x, y, t, lambda: (torch.randperm(n, generator=generator, device=x.device)
                                               + offsets).reshape(-1))

    def _divergences(self, model, x, y, members: int = 1):
        """(-div v per pass and row (passes, rows), t likewise) of the readout (``members``: :meth:`_read_draw`)."""
        gen = torch.Generator(device=x.device).manual_seed(1)
        values, times = [], []
        for _ in range(self.readout_passes):
            z0, z1, t, ctx = self._read_draw(x, y, gen, members)
            zt = (1 - t.unsqueeze(1)) * z0 + t.unsqueeze(1) * z1
            values.append(-divergence(lambda z: model(z, t, ctx), zt, gen, members))
            times.append(t)
        return torch.stack(values), torch.stack(times)

    def readout_members(self, folds, xs, ys):
        """:meth:`readout` of every member through the stacked velocity field, on their rows folded
        member-major (:meth:`~mibench.estimators.trained_members.MemberTraining.readout_members`)."""
        m = len(xs)
        values, times = self._divergences(folds["velocity"], torch.cat(xs), torch.cat(ys), m)
        values, times = values.view(self.readout_passes, m, -1), times.view(self.readout_passes, m, -1)
        return [self._summary(values[:, i].reshape(-1), times[:, i].reshape(-1)) for i in range(m)]

    def readout(self, models, x, y):
        values, times = self._divergences(models["velocity"], x, y)
        return self._summary(values.reshape(-1), times.reshape(-1))

    def _summary(self, values: torch.Tensor, t: torch.Tensor) -> tuple[float, dict]:
        """(value, details) of the readout from its -div v and t per pass and pair (passes first)."""
        v = values.double()
        # the estimate's parts in PATH_BINS equal bins of t, estimates of h(p_a) - h(p_b) for each bin [a, b)
        # (where on the path an error sits), and its halves, the parts from t < 1/2 and t >= 1/2: between
        # independent endpoints the path narrows and widens again, each half is of the order of the moving
        # dimensions (in nats) and the MI is their small difference (docs/reference-table.md, fmmi-j)
        edges = torch.linspace(0, 1, PATH_BINS + 1, dtype=t.dtype, device=t.device)
        which = torch.bucketize(t, edges[1:-1], right=True)
        parts = torch.zeros(PATH_BINS, dtype=v.dtype, device=v.device).index_add_(0, which, v) / v.numel()
        half = PATH_BINS // 2
        return float(v.mean()), {"stderr": per_pair_stderr(v), "passes": self.readout_passes,
                                 "path_first_half": float(parts[:half].sum()),
                                 "path_second_half": float(parts[half:].sum()),
                                 "path_parts": [float(p) for p in parts]}
