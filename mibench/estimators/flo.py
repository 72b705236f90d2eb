"""FLO, the contrastive Fenchel-Legendre lower bound (Guo, Chen, Zhou, Guo, Carin & Li, "Tight mutual
information estimation with contrastive Fenchel-Legendre optimization", NeurIPS 2022, eq. (9)):

    I(X;Y) >= I_FLO(u, g) = 1 + E_{p(x,y) p(y')}[ -u(x,y) - exp(-u(x,y) + g(x,y') - g(x,y)) ]

for any critic g and any u (the Fenchel-Legendre dual of -log, -log t >= 1 - u - e^{-u} t, applied to
t = E_{y'} e^{g(x,y') - g(x,y)}; at u* = log t it equals E_p[g(x,y) - log E_{y'} e^{g(x,y')}] <= I).
Unlike InfoNCE the bound is not capped by the batch size, and each positive needs only one negative:
u carries the partition function that InfoNCE averages over the batch.

Here g and u are two joint MLPs of [x, y] (ReLU, ``hidden`` wide, two hidden layers), trained together
by Adam on the training split with ``negatives`` cyclic shifts of the minibatch as the y' (each shift
of i.i.d. pairs is a derangement, so y' is independent of (x, y)); the best state on the validation
split is kept; the bound is read on the held-out pairs with ``test_negatives`` shifts.  The data
rules, split and training loop are those of every trained sample estimator
(:mod:`mibench.estimators.trained`; no jitter: FLO models no density); FLO runs under the sample protocol.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from mibench.critics.mlp import mlp
from mibench.estimators.kinds import BLACK_BOX, LOWER_BOUND
from mibench.estimators.members import member_roll, members_of
from mibench.estimators.trained import HeldOutEstimator, TrainedSettings, per_pair_stderr

#: exponents above this are clamped while training (never in the readout): a fresh u can be far below
#: the log partition function, and e^{40} already gives a gradient that resets it
TRAIN_EXP_CAP = 40.0


class _FLONets(nn.Module):
    def __init__(self, dx: int, dy: int, hidden: int):
        super().__init__()

        self.g, self.u = mlp(dx + dy, hidden, 1, layers=1), mlp(dx + dy, hidden, 1, layers=1)

    def terms(self, x: torch.Tensor, y: torch.Tensor, shifts: int, cap: float | None) -> torch.Tensor:
        """Per positive pair i: 1 - u_i - mean_s exp(-u_i + g(x_i, y_(i+s)) - g(x_i, y_i)), s = 1..shifts
        (shifted within each member's rows when stacked, :mod:`mibench.estimators.members`)."""
        xy = torch.cat([x, y], dim=1)
        g_pos = self.g(xy).squeeze(1)
        u = self.u(xy).squeeze(1)
        members = members_of(self)
        expo = torch.stack([self.g(torch.cat([x, member_roll(y, -s, members)], dim=1)).squeeze(1)
                            for s in range(1, shifts + 1)], dim=1) - (g_pos + u).unsqueeze(1)
        if cap is not None:
            expo = expo.clamp(max=cap)
        return 1.0 - u - torch.exp(expo).mean(1)


@dataclass(frozen=True)
class FLOSettings(TrainedSettings):
    """``hidden``: width of the g and u networks; ``negatives`` / ``test_negatives``: shifts per positive
    in training and in the readout; no jitter by default (FLO models no density)."""

    hidden: int = 128
    negatives: int = 8
    test_negatives: int = 32
    jitter: float = 0.0

    RANGES: ClassVar[dict] = {**TrainedSettings.RANGES, "hidden": (1, float("inf"), True, False),
                              "negatives": (1, float("inf"), True, False),
                              "test_negatives": (1, float("inf"), True, False)}


class FLOEstimator(HeldOutEstimator):
    """``flo`` (module docstring); settings: :class:`FLOSettings`."""

    kind = BLACK_BOX
    name = "flo"
    bound = LOWER_BOUND
    Settings: ClassVar[type] = FLOSettings

    def models(self, dx, dy):
        return {"flo": _FLONets(dx, dy, self.settings.hidden)}

    def loss(self, key, model, x, y):
        # minimised by the training loop and the early stopping: the negative bound per pair
        cap = TRAIN_EXP_CAP if torch.is_grad_enabled() else None
        return -model.terms(x, y, min(self.settings.negatives, x.shape[0] // members_of(model) - 1), cap)

    def readout(self, models, x, y):
        terms = models["flo"].terms(x, y, min(self.settings.test_negatives, x.shape[0] - 1), None).double()
        return float(terms.mean()), {"stderr": per_pair_stderr(terms)}
