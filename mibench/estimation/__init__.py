"""``mibench.estimate``: I(X;Y) on the user's own paired arrays, with any registered estimator.

* :mod:`.estimate` -- the entry point: input checks, dispatch by estimator kind, the result;
* :mod:`.training` -- the held-out training loop of critic-bound estimators (early stopping);
* :mod:`.defaults` -- the training settings sized to the data;
* :mod:`.preprocess` -- normal scores and z-scores (per-column maps that leave I(X;Y) unchanged);
* :mod:`.gaussian_start` -- the critic that starts as the Gaussian log density ratio;
* :mod:`.dependence` -- constant inputs and deterministic relations, found before training;
* :mod:`.result` -- :class:`EstimateResult` and its ``status`` values.
"""
from mibench.estimation.defaults import default_settings
from mibench.estimation.estimate import DependenceWarning, estimate
from mibench.estimation.result import STATUSES, EstimateResult

__all__ = ["estimate", "EstimateResult", "STATUSES", "DependenceWarning", "default_settings"]
