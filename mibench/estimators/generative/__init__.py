"""Generative (density-model) MI estimators for the sample protocol: each trains density models
(normalising flows, :mod:`.flows`; score and velocity networks, :mod:`.nets`) on a training split and reads
the MI off held-out pairs, on the trained base :class:`~mibench.estimators.trained.HeldOutEstimator`.

* :mod:`.base` -- :class:`DensityModelEstimator` and its :class:`FlowSettings`;
* :mod:`.doe` -- ``doe-flow``, difference of entropies H(Y) - H(Y|X);
* :mod:`.family` -- ``ba`` (Barber-Agakov lower bound), ``gm-flow`` (H(X) + H(Y) - H(X, Y)),
  ``club`` and ``l1out`` (the contrastive upper bounds with a learned conditional);
* :mod:`.mienf` -- ``mienf``, ``mienf-tridiag`` (flows to a Gaussian base with closed-form MI);
* :mod:`.minde` -- ``minde-c``, ``minde-j`` (score-based diffusion);
* :mod:`.fmmi` -- ``fmmi-c``, ``fmmi-j`` (flow matching).
"""
from mibench.estimators.generative.base import DensityModelEstimator, FlowSettings
from mibench.estimators.generative.doe import DoEFlow
from mibench.estimators.generative.flows import ConditionalFlow

__all__ = ["ConditionalFlow", "DensityModelEstimator", "DoEFlow", "FlowSettings"]
