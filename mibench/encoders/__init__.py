"""Encoders g applied to X and Y after sampling (Lee & Rhee 2024 §5.7: deep representations); see
:mod:`mibench.encoders.base` for the registry and the invertible / non-invertible kinds."""
from mibench.encoders import flows, irevnet, resnet  # noqa: F401  (register themselves)
from mibench.encoders.base import ENCODERS, Encoder, fixed_init, make_encoder, reconstruction_error

__all__ = ["ENCODERS", "Encoder", "make_encoder", "reconstruction_error", "fixed_init"]
