"""The per-column maps :func:`mibench.estimate` offers its critics (``preprocess=``), built from the one
normal-score map and the one z-score of :mod:`mibench.estimators.preprocess`; each leaves I(X;Y) unchanged."""
from __future__ import annotations

import numpy as np

from mibench.estimators.preprocess import normal_scores, zscore

PREPROCESS = ("auto", "normal-scores", "zscore", "none")   # auto: mibench.estimate chooses (its docstring)


def standardise_columns(arrays, train: np.ndarray, preprocess: str) -> None:
    """Apply ``preprocess`` in place to every array, fitted on the rows ``train``: normal scores
    (:func:`~mibench.estimators.preprocess.normal_scores`) then a z-score
    (:func:`~mibench.estimators.preprocess.zscore`), a z-score alone, or nothing (``"none"``)."""
    for arr in arrays:
        if preprocess == "normal-scores":
            normal_scores(arr, train)
        if preprocess != "none":
            arr[:] = zscore(arr, train)[0]
