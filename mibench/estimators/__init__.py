"""MI estimators: critic-bound heads (:mod:`.heads`, bounds in :mod:`.bounds`, f-DIME and
alpha-InfoNCE in :mod:`.fdime`), classical black-box estimators (:mod:`.classical`), generative
ones (:mod:`.generative`), their kinds as protocols (:mod:`.protocols`) and the registry
(:mod:`.registry`).  Adding one is one small class and one ``ESTIMATORS.add`` call.
"""
from mibench.estimators.heads import BoundEstimator, Estimator, JSTrainedEstimator, MINEEstimator, TUBAEstimator
from mibench.estimators.registry import (
    ESTIMATORS,
    PAPER_ESTIMATORS,
    estimator_entry,
    estimator_kind,
    make_estimator,
    require_streamable,
    resolve_estimators,
    training_groups,
    training_key,
)

__all__ = ["ESTIMATORS", "PAPER_ESTIMATORS", "Estimator", "BoundEstimator", "JSTrainedEstimator", "MINEEstimator",
           "TUBAEstimator", "estimator_entry", "estimator_kind", "make_estimator", "require_streamable",
           "resolve_estimators", "training_groups", "training_key"]
