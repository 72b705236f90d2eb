"""Score-matrix estimator heads for f-DIME and alpha-InfoNCE (pure bounds in :mod:`.bounds`).

* **f-DIME** — Letizia, Novello & Tonello (NeurIPS 2024), "Mutual information estimation via
  f-divergence and data derangements".  The critic is trained with the variational representation
  of the KL, squared-Hellinger or GAN f-divergence (:func:`~mibench.estimators.fdime_objective`)
  whose product-of-marginals samples are the batch's y's *deranged* (each x_i paired with
  y_{i+1 mod K}: K negatives, never a joint pair, §4 of the paper); the estimate is the readout
  E_p[log R(D)] on the joint pairs (:func:`~mibench.estimators.fdime_estimate`).  Each variant
  trains its own critic.  The readout is not a bound: it can exceed the truth.
* **alpha-InfoNCE** — Poole, Ozair, van den Oord, Alemi & Tucker (ICML 2019) §2.5, the interpolated
  multi-sample bound between InfoNCE (alpha = 1) and NWJ / TUBA (alpha = 0), trained and reported;
  the baseline q is a learned constant (initialised at q = e, NWJ's choice).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from mibench.estimators.bounds import (
    FDIME_VARIANTS,
    RowForm,
    alpha_infonce_bound,
    fdime_estimate,
    fdime_from_diagonal,
    fdime_objective,
)
from mibench.estimators.heads import Estimator


class FDIMEEstimator(Estimator):
    """f-DIME head: loss = -J_f(scores) on diagonal + deranged negatives, estimate = E_p[log R]."""

    def __init__(self, variant: str):
        super().__init__()
        if variant not in FDIME_VARIANTS:
            raise ValueError(f"unknown f-DIME variant {variant!r}")
        self.variant = variant

    def value(self, scores):
        return fdime_estimate(scores, self.variant)

    def row_form(self):
        return RowForm(lambda d, stats: fdime_from_diagonal(d, self.variant), lambda d: ())   # the diagonal only

    def forward(self, scores):
        loss = -fdime_objective(scores, self.variant)
        return loss, fdime_estimate(scores.detach(), self.variant)


class AlphaInfoNCEEstimator(Estimator):
    """Poole et al. (2019) §2.5 interpolated bound with a learned constant baseline log q."""

    def __init__(self, alpha: float):
        super().__init__()
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.alpha = float(alpha)
        self.log_baseline = nn.Parameter(torch.ones(()))   # q = e: NWJ's baseline at alpha = 0

    def ceiling_nats(self, batch_size: int) -> float:
        return 1.0 + math.log((batch_size - 1) / self.alpha) if batch_size > 1 else math.inf

    def value(self, scores):
        return alpha_infonce_bound(scores, self.alpha, self.log_baseline)
