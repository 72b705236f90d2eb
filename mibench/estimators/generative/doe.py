"""Difference of entropies, ``doe-flow`` (McAllester & Stratos, "Formal limitations on the measurement
of mutual information", AISTATS 2020, §6 "DoE"): I(X;Y) = H(Y) - H(Y|X), each entropy replaced by the
held-out cross-entropy of a trained density model,

    I_DoE = E_test[log q(y|x)] - E_test[log q(y)],

with q(y) and q(y|x) two normalising flows (:mod:`.flows`) trained by maximum likelihood.  The two
cross-entropies are upper bounds on H(Y) and H(Y|X), so I_DoE is *not* a bound: its error is the
difference of the two models' excess entropies.
"""
from __future__ import annotations

from typing import ClassVar

from mibench.estimators.generative.base import DensityModelEstimator, ZukoFlowSettings
from mibench.estimators.trained import per_pair_stderr


class DoEFlow(DensityModelEstimator):
    """Difference-of-entropies estimator with two normalising flows (module docstring; settings:
    :class:`~.base.ZukoFlowSettings`: zuko's MAF by default, ``flows="realnvp"`` for mibench's RealNVP,
    which under-fits q(y|x) at 25 dimensions a side, docs/estimators.md).  Its conditional flow is
    ``models["conditional"]``."""

    name = "doe-flow"
    Settings: ClassVar[type] = ZukoFlowSettings

    def models(self, dx, dy):
        return {"marginal": self.flow(dy), "conditional": self.flow(dy, dx)}

    def loss(self, key, model, x, y):
        return -model.log_prob(y, x if key == "conditional" else None)

    def readout(self, models, x, y):
        log_y = models["marginal"].log_prob(y).double()
        log_y_given_x = models["conditional"].log_prob(y, x).double()
        h_y, h_y_given_x = -float(log_y.mean()), -float(log_y_given_x.mean())
        return h_y - h_y_given_x, {"h_y": h_y, "h_y_given_x": h_y_given_x,
                                   "stderr": per_pair_stderr(log_y_given_x - log_y)}
