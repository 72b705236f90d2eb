"""Variational MI bounds as pure functions of a K x K critic score matrix (nats).

``scores[i, j] = f(x_i, y_j)``: the diagonal holds the K joint pairs, the K(K-1) off-diagonal
entries stand in for samples of the product of marginals.  Each function returns a 0-d tensor.

References: the unified bound of Poole et al. (2019), quoted as Definition 2.1 of the benchmark
paper (002, §2): I >= 1 + E_p[log e^f / a(y)] - E_{p(x)p(y)}[e^f / a(y)]; DV (Donsker-Varadhan);
NWJ = a(y) = e; InfoNCE (Oord et al. 2018); JS f-GAN training (Nowozin et al. 2016); SMILE
(Song & Ermon 2019, clipped partition function).  The optimal critic of every bound except NWJ
and TUBA is f* = log p(x,y)/(p(x)p(y)) (up to a constant for DV / InfoNCE / SMILE); NWJ's is
1 + log p/(pp) because of its a(y) = e.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _offdiag_mask(k: int, device) -> torch.Tensor:
    return torch.eye(k, dtype=torch.bool, device=device)


def logmeanexp_offdiag(scores: torch.Tensor) -> torch.Tensor:
    """log of the mean of exp(scores) over the K(K-1) off-diagonal entries (last two dims)."""
    k = scores.shape[-1]
    masked = scores.masked_fill(_offdiag_mask(k, scores.device), float("-inf"))
    return torch.logsumexp(masked.flatten(-2), dim=-1) - math.log(k * (k - 1))


def mean_diag(scores: torch.Tensor) -> torch.Tensor:
    return torch.diagonal(scores, dim1=-2, dim2=-1).mean(-1)


def mean_offdiag(values: torch.Tensor) -> torch.Tensor:
    k = values.shape[-1]
    total = values.sum((-2, -1)) - torch.diagonal(values, dim1=-2, dim2=-1).sum(-1)
    return total / (k * (k - 1))


def dv_bound(scores: torch.Tensor) -> torch.Tensor:
    """Donsker-Varadhan: E_p[f] - log E_{p(x)p(y)}[e^f]."""
    return mean_diag(scores) - logmeanexp_offdiag(scores)


def nwj_bound(scores: torch.Tensor) -> torch.Tensor:
    """NWJ (Nguyen, Wainwright & Jordan 2010), a(y) = e: E_p[f] - E_{p(x)p(y)}[e^{f-1}]."""
    return mean_diag(scores) - torch.exp(logmeanexp_offdiag(scores) - 1.0)


def tuba_bound(scores: torch.Tensor, log_baseline: torch.Tensor) -> torch.Tensor:
    """TUBA (Poole et al. 2019) with a constant baseline a = exp(log_baseline):
    1 + E_p[f] - log a - E_{p(x)p(y)}[e^f] / a."""
    return 1.0 + mean_diag(scores) - log_baseline - torch.exp(logmeanexp_offdiag(scores) - log_baseline)


def infonce_bound(scores: torch.Tensor) -> torch.Tensor:
    """InfoNCE (Oord et al. 2018): log K + E_i[f_ii - log sum_j e^{f_ij}]; never exceeds log K."""
    k = scores.shape[-1]
    return math.log(k) + (mean_diag(scores) - torch.logsumexp(scores, dim=-1).mean(-1))


def js_fgan_objective(scores: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon f-GAN lower bound (to maximise): E_p[-softplus(-f)] - E_{p(x)p(y)}[softplus(f)].

    Not an MI estimate itself: its maximiser is f* = log p/(pp), which the JS and SMILE estimators
    then plug into NWJ / clipped DV.
    """
    joint = -F.softplus(-torch.diagonal(scores, dim1=-2, dim2=-1)).mean(-1)
    marginal = mean_offdiag(F.softplus(scores))
    return joint - marginal


def js_estimate(scores: torch.Tensor) -> torch.Tensor:
    """JS-trained critic evaluated with NWJ (Poole et al. 2019 §2.3): I_NWJ(f + 1), since the JS
    optimum log p/(pp) is NWJ's optimum minus one."""
    return nwj_bound(scores + 1.0)


def smile_bound(scores: torch.Tensor, clip: float | None) -> torch.Tensor:
    """SMILE (Song & Ermon 2019): DV with the partition term over scores clipped to [-tau, tau].

    ``clip=None`` (tau = inf) is plain DV on a JS-trained critic."""
    clipped = scores if clip is None else scores.clamp(-clip, clip)
    return mean_diag(scores) - logmeanexp_offdiag(clipped)
