"""What the generative (density-model) estimators add to :class:`~mibench.estimators.trained.HeldOutEstimator`:
the flow settings (:class:`FlowSettings`) and :meth:`DensityModelEstimator.flow`, a density model of the
estimator's flow family.  The split, data rules, device, seeding and training loop are the trained
base's; a subclass declares its density models, each one's per-pair negative log-likelihood (its
``loss``) and its readout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mibench.errors import MibenchError
from mibench.estimators.generative.flows import FLOW_FAMILIES, ConditionalFlow, ZukoMAF
from mibench.estimators.trained import HeldOutEstimator, Split, TrainedSettings

__all__ = ["DensityModelEstimator", "FlowSettings", "Split"]


@dataclass(frozen=True)
class FlowSettings(TrainedSettings):
    """:class:`~mibench.estimators.trained.TrainedSettings` plus the density models' shape.

    Parameters
    ----------
    layers, hidden, context : flow layers, MLP width and x-embedding size of each flow (``context`` is
        unused by ``zuko-maf``, which conditions every layer on x directly).
    flows : the flow family, ``realnvp`` (:class:`~.flows.ConditionalFlow`) or ``zuko-maf``
        (:class:`~.flows.ZukoMAF`).
    """

    layers: int = 4
    hidden: int = 128
    context: int = 64
    flows: str = "realnvp"

    RANGES: ClassVar[dict] = {**TrainedSettings.RANGES, "layers": (1, float("inf"), True, False),
                              "hidden": (1, float("inf"), True, False), "context": (1, float("inf"), True, False)}
    CHOICES: ClassVar[dict] = {**TrainedSettings.CHOICES, "flows": FLOW_FAMILIES}


@dataclass(frozen=True)
class ZukoFlowSettings(FlowSettings):
    """:class:`FlowSettings` with zuko's masked autoregressive flows (:mod:`.flows`' docstring)."""

    flows: str = "zuko-maf"


class DensityModelEstimator(HeldOutEstimator):
    """Base of the generative estimators (module docstring); settings: :class:`FlowSettings`."""

    name = "generative"
    Settings: ClassVar[type] = FlowSettings

    def flow(self, dim: int, context_dim: int = 0):
        """A density model log q(y | x) of ``dim`` variables given ``context_dim`` (0: log q(y)), of the
        estimator's flow family."""
        s = self.settings
        if s.flows == "zuko-maf":
            return ZukoMAF(dim, context_dim, s.layers, s.hidden)
        return ConditionalFlow(dim, context_dim, s.layers, s.hidden, s.context)

    def require_flows(self, family: str, why: str) -> None:
        """A one-line error when this estimator's flow family is not ``family``."""
        if self.settings.flows != family:
            raise MibenchError(f"{self.name} {why}: flows must be {family!r}, got {self.settings.flows!r}")
