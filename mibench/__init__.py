"""mibench: a benchmark suite for neural mutual-information estimators (Lee & Rhee, NeurIPS 2024 D&B)."""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import MibenchError, DataNotFoundError

__all__ = ["MibenchError", "DataNotFoundError", "estimate", "__version__"]


def estimate(x, y, **kwargs):
    """Estimate I(X;Y) on your own paired arrays; see :func:`mibench.api.estimate`."""
    from .api import estimate as _estimate

    return _estimate(x, y, **kwargs)
