"""The canonical reduction of :func:`mibench.estimate`'s high-dimensional inputs lives in
:mod:`mibench.estimators.reduce`, where the generative estimators use it too; its names are
re-exported here."""
from mibench.estimators.reduce import (  # noqa: F401
    MAX_RANK,
    NULL_MARGIN,
    PCA_DIM,
    REDUCE_ABOVE_DIM,
    RIDGE,
    apply_reduction,
    fit_canonical_reduction,
)
