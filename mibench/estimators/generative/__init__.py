"""Generative (density-model) MI estimators for the sample protocol: each trains normalising flows
(:mod:`.flows`) on a training split and reads the MI off held-out log-likelihoods.

* :mod:`.base` -- data rules, split, training loop (:class:`DensityModelEstimator`,
  :class:`GenerativeTraining`);
* :mod:`.doe` -- ``doe-flow``, difference of entropies H(Y) - H(Y|X);
* :mod:`.family` -- ``ba`` (Barber-Agakov lower bound), ``gm-flow`` (H(X) + H(Y) - H(X, Y)),
  ``club`` and ``l1out`` (the contrastive upper bounds with a learned conditional).
"""
from mibench.estimators.generative.base import DensityModelEstimator, GenerativeTraining, pick_device
from mibench.estimators.generative.doe import DoEFlow
from mibench.estimators.generative.flows import ConditionalFlow

__all__ = ["ConditionalFlow", "DensityModelEstimator", "DoEFlow", "GenerativeTraining", "pick_device"]
