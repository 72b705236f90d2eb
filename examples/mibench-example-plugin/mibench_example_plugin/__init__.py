"""An example mibench estimator plug-in (see README.md)."""
from .estimators import GaussianEstimator, correlation_mi

__all__ = ["GaussianEstimator", "correlation_mi"]
