"""The generative family every peer toolkit has (torch-mist: BA, DoE, GM, L1Out, CLUB), on the flows
of :mod:`.flows` and the data rules, split and training of :mod:`mibench.estimators.trained`: ``ba``,
``gm-flow``, ``club`` and ``l1out``, each class's docstring gives its formula and citation.  All in nats,
all read on the held-out test split.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from mibench.estimators.generative.base import DensityModelEstimator, ZukoFlowSettings
from mibench.estimators.generative.flows import ConditionalGaussian
from mibench.estimators.kinds import ESTIMATE, UPPER_BOUND
from mibench.estimators.trained import per_pair_stderr

LOG_2PI_E = math.log(2 * math.pi * math.e)


def gaussian_entropy(y: torch.Tensor) -> float:
    """Entropy (nats) of the Gaussian with the sample covariance of the rows of ``y``."""
    cov = torch.cov(y.double().T).reshape(y.shape[1], y.shape[1])
    return 0.5 * (y.shape[1] * LOG_2PI_E + float(torch.linalg.slogdet(cov)[1]))


@dataclass(frozen=True)
class CLUBSettings(ZukoFlowSettings):
    """``shifts``: cyclic shifts of the test pairs that stand in for the product of marginals."""

    shifts: int = 16

    RANGES: ClassVar[dict] = {**ZukoFlowSettings.RANGES, "shifts": (1, float("inf"), True, False)}


@dataclass(frozen=True)
class L1OutSettings(ZukoFlowSettings):
    """``block``: test pairs per leave-one-out block (K)."""

    block: int = 256

    RANGES: ClassVar[dict] = {**ZukoFlowSettings.RANGES, "block": (2, float("inf"), True, False)}


class _ConditionalModel(DensityModelEstimator):
    """One conditional flow q(y | x), trained by maximum likelihood."""

    Settings: ClassVar[type] = ZukoFlowSettings

    def models(self, dx, dy):
        return {"conditional": self.flow(dy, dx)}

    def loss(self, key, model, x, y):
        return -model.log_prob(y, x)


def pair_log_prob(flow, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``out[i, j] = log q(y_j | x_i)`` for a block of K pairs (K^2 flow evaluations)."""
    k = x.shape[0]
    xs = x.unsqueeze(1).expand(k, k, x.shape[1]).reshape(k * k, -1)
    ys = y.unsqueeze(0).expand(k, k, y.shape[1]).reshape(k * k, -1)
    return flow.log_prob(ys, xs).reshape(k, k)


class BarberAgakovFlow(_ConditionalModel):
    """``ba``, Barber & Agakov ("The IM algorithm", NeurIPS 2003): I(X;Y) >= H(Y) + E_p[log q(y|x)] for any
    conditional density q (Poole et al. 2019, eq. 2).  The bound needs the true H(Y); here H(Y) is the
    entropy of the Gaussian with Y's covariance (after the normal scores of the data rules), exact when Y
    is jointly Gaussian after those per-coordinate maps (every Gaussian task, any 1-d Y up to the jitter)
    and an upper bound on H(Y) otherwise (the Gaussian has the largest entropy for a covariance): then BA
    may exceed the truth (a Student-t Y with identity dispersion: the shared scale is dependence no
    covariance shows).  So ``ba`` is registered as an *estimate*: a number labelled a lower bound must be
    one on every task, and no lower bound on H(Y) of a general Y is at hand (docs/estimators.md)."""

    name = "ba"
    bound = ESTIMATE        # a lower bound only where Y is Gaussian after the normal scores (above)

    def readout(self, models, x, y):
        h_y = gaussian_entropy(y)
        log_q = models["conditional"].log_prob(y, x).double()
        h_y_given_x = -float(log_q.mean())
        # the standard error of the conditional term (H(Y)'s closed form is taken as exact)
        return h_y - h_y_given_x, {"h_y_gaussian": h_y, "h_y_given_x": h_y_given_x, "stderr": per_pair_stderr(log_q)}


class GMFlow(DensityModelEstimator):
    """``gm-flow``: generative MI from three densities, I = H(X) + H(Y) - H(X, Y), each the held-out
    cross-entropy of a flow q(x), q(y), q(x, y) (torch-mist's GM).  Not a bound."""

    name = "gm-flow"
    models_x = True
    Settings: ClassVar[type] = ZukoFlowSettings

    def models(self, dx, dy):
        return {"x": self.flow(dx), "y": self.flow(dy), "joint": self.flow(dx + dy)}

    def loss(self, key, model, x, y):
        data = {"x": x, "y": y}.get(key)
        return -model.log_prob(torch.cat([x, y], dim=1) if data is None else data)

    def readout(self, models, x, y):
        nll = {key: self.loss(key, m, x, y).double() for key, m in models.items()}
        h = {key: float(v.mean()) for key, v in nll.items()}
        return h["x"] + h["y"] - h["joint"], {**{f"h_{k}": v for k, v in h.items()},
                                              "stderr": per_pair_stderr(nll["x"] + nll["y"] - nll["joint"])}


class CLUBGaussian(_ConditionalModel):
    """``club``: Cheng et al., "CLUB: a contrastive log-ratio upper bound of mutual information", ICML
    2020, eq. (3): I_CLUB = E_p(x,y)[log q(y|x)] - E_p(x)E_p(y)[log q(y|x)], an upper bound when q is the
    true conditional (Theorem 3.1); with a learned q it can fall below the truth (Theorem 3.2 needs q
    close to p in KL).  q is the paper's variational family, a Gaussian with MLP mean and diagonal
    variance (§3.2), not a flow: the second term averages log q over mismatched pairs, far in q's tails,
    where a flow's sinh-arcsinh tails decay faster than a Gaussian's and read far higher (for jointly
    Gaussian X, Y the Gaussian q's population value is sum_k rho_k^2 / (1 - rho_k^2) nats, already far
    above the MI).  The product-of-marginals term averages log q(y_(i+s) | x_i) over ``shifts`` cyclic
    shifts s of the test pairs (each shift is a derangement of i.i.d. pairs)."""

    name = "club"
    bound = UPPER_BOUND
    # far above the MI on nearly every task of the reference table (docs/reference-table.md, "Outliers")
    loose_bound = True
    Settings: ClassVar[type] = CLUBSettings

    def models(self, dx, dy):
        return {"conditional": ConditionalGaussian(dy, dx, self.settings.hidden)}

    def readout(self, models, x, y):
        flow = models["conditional"]
        joint = float(flow.log_prob(y, x).double().mean())
        n = x.shape[0]
        shifts = range(1, min(self.settings.shifts, n - 1) + 1)
        marginal = sum(float(flow.log_prob(torch.roll(y, -s, 0), x).double().mean()) for s in shifts) / len(shifts)
        return joint - marginal, {"joint_log_q": joint, "marginal_log_q": marginal, "shifts": len(shifts)}


class L1OutFlow(_ConditionalModel):
    """``l1out``: the leave-one-out upper bound (Poole et al., "On variational bounds of mutual
    information", ICML 2019, eq. 13), E[log q(y_i|x_i) - log 1/(K-1) sum_(j != i) q(y_i|x_j)] over blocks of
    K = ``block`` test pairs; an upper bound when q is the true conditional, for every K."""

    name = "l1out"
    bound = UPPER_BOUND
    Settings: ClassVar[type] = L1OutSettings

    def readout(self, models, x, y):
        flow = models["conditional"]
        n = x.shape[0]
        k = max(2, min(self.settings.block, n))
        total, count = 0.0, 0
        for start in range(0, n - k + 1, k):           # whole blocks; the < K leftover pairs are dropped
            logq = pair_log_prob(flow, x[start:start + k], y[start:start + k]).double()   # [i, j] = log q(y_j|x_i)
            eye = torch.eye(k, dtype=torch.bool, device=logq.device)
            loo = torch.logsumexp(logq.masked_fill(eye, -math.inf), dim=0) - math.log(k - 1)   # per y_j
            total += float((torch.diagonal(logq) - loo).sum())
            count += k
        return total / count, {"block": k, "pairs": count}
