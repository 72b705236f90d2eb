"""Critic-bound estimator heads: small modules turning the critic's K x K score matrix into
(training loss, reported MI estimate in nats); the bounds themselves are pure functions in
:mod:`mibench.estimators.bounds`."""
from __future__ import annotations

import math
from functools import partial

import torch
from torch import nn

from mibench.estimators.bounds import (
    RowForm,
    dv_bound,
    js_fgan_objective,
    logmeanexp_offdiag,
    mean_diag,
    row_form,
    tuba_bound,
    tuba_rows,
)


class Estimator(nn.Module):
    """Base: ``forward(scores) -> (loss, estimate)``; loss is minimised, estimate is in nats.

    Subclasses may hold state carried across steps (MINE's moving average, TUBA's baseline).
    ``ceiling_nats(K)`` is the largest value the reported estimate can take for batch K
    (``inf`` when unbounded), so a run can say when the truth is out of the estimator's reach.

    ``training_objective`` names the critic's training objective when training is stateless and
    depends on nothing but that objective; estimators that name the same objective differ only
    in the estimation step (benchmark paper §2: "two associated steps ... JS, MINE and SMILE
    adopt small modifications in either optimization or estimation"), so the harness trains one
    critic for all of them and reads each estimate off the same scores.  ``None``: the estimator
    trains its own critic.
    """

    #: what it is (:mod:`mibench.estimators.kinds`): a head on the critic's score matrix
    kind = "critic"
    training_objective: str | None = None
    #: stateless heads whose bound reduces over the last two dimensions: a (G, B, B) stack of score
    #: matrices is evaluated in one call (:mod:`mibench.estimation.training` relies on it)
    batched: bool = False
    #: how far below the MI the readout sits at its critic's optimum, in nats (0 for a tight bound): a
    #: value below zero by less than this is the readout's design, not a failed critic
    #: (:func:`mibench.estimation.plausibility.implausible`)
    offset_nats: float = 0.0

    def ceiling_nats(self, batch_size: int) -> float:
        return math.inf

    def value(self, scores: torch.Tensor) -> torch.Tensor:
        """The reported estimate (nats) for a score matrix: pure, never changes training state."""
        raise NotImplementedError

    def row_form(self) -> RowForm | None:
        """:meth:`value` through the diagonal and per-row statistics of the off-diagonal scores
        (:class:`~mibench.estimators.bounds.RowForm`), so that the readout on a held-out matrix too
        large to hold streams over tiles of it; ``None`` (the default): ``value`` needs the whole matrix,
        and the readout holds one of at most ``WHOLE_MATRIX_MAX_PAIRS`` pairs a side
        (:mod:`mibench.estimation.readout`)."""
        return None

    def forward(self, scores: torch.Tensor):
        """One training step's ``(loss to minimise, reported estimate detached)``."""
        value = self.value(scores)
        return -value, value.detach()


class BoundEstimator(Estimator):
    """Trains and reports one bound (NWJ, DV, InfoNCE)."""

    batched = True

    def __init__(self, bound, ceiling=None):
        super().__init__()
        self.bound = bound
        self._ceiling = ceiling

    def ceiling_nats(self, batch_size: int) -> float:
        return self._ceiling(batch_size) if self._ceiling else math.inf

    def value(self, scores):
        return self.bound(scores)

    def row_form(self):
        return row_form(self.bound)


class JSTrainedEstimator(Estimator):
    """Trains the critic with the JS f-GAN objective and reports another bound on it (JS, SMILE).

    Training depends only on the scores (no state), so every JS-trained estimator of a run
    shares one critic (see :attr:`Estimator.training_objective`)."""

    training_objective = "js-fgan"
    batched = True

    def __init__(self, report, offset_nats: float = 0.0):
        super().__init__()
        self.report = report
        self.offset_nats = float(offset_nats)

    def value(self, scores):
        return self.report(scores)

    def row_form(self):
        return row_form(self.report)

    def forward(self, scores):
        loss = -js_fgan_objective(scores)
        return loss, self.report(scores.detach())


class MINEEstimator(Estimator):
    """MINE (Belghazi et al. 2018): DV value; the gradient of the partition term uses an
    exponential moving average (momentum 0.9) of E[e^f] carried across steps to de-bias it."""

    def __init__(self, momentum: float = 0.9):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("ema", torch.tensor(float("nan")))

    def value(self, scores):
        return dv_bound(scores)

    def row_form(self):
        return row_form(dv_bound)

    def forward(self, scores):
        joint = mean_diag(scores)
        log_partition = logmeanexp_offdiag(scores)
        partition = torch.exp(log_partition)
        with torch.no_grad():
            fresh = partition.detach()
            # first step initialises the average with the batch value (no bias towards 0 or 1)
            ema = torch.where(torch.isnan(self.ema), fresh, self.momentum * self.ema + (1 - self.momentum) * fresh)
            ema = ema.clamp_min(1e-4)
            self.ema.copy_(ema)
        # d/dtheta log E[e^f] ~= (d/dtheta E[e^f]) / EMA   (MINE's bias-corrected gradient)
        surrogate = joint - partition / ema
        estimate = (joint - log_partition).detach()
        return -surrogate, estimate


class TUBAEstimator(Estimator):
    """TUBA with a learned constant baseline a = exp(b) (Poole et al. 2019, eq. 9 with a(y) = a)."""

    def __init__(self):
        super().__init__()
        self.log_baseline = nn.Parameter(torch.zeros(()))

    def value(self, scores):
        return tuba_bound(scores, self.log_baseline)

    def row_form(self):
        return RowForm(partial(tuba_rows, log_baseline=self.log_baseline.detach()))
