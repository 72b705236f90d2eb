"""The density models' flow families: zuko's MAF (``ba``, ``gm-flow``, ``l1out``) and mibench's
RealNVP / sinh-arcsinh flows (``doe-flow``, ``mienf``), chosen by ``flows=``."""
import math

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.estimators.generative import DoEFlow
from mibench.estimators.generative.family import BarberAgakovFlow, GMFlow, L1OutFlow
from mibench.estimators.generative.flows import ConditionalFlow, ZukoMAF
from mibench.estimators.generative.mienf import MIENF
from mibench.tasks.distributions import draw


@pytest.mark.parametrize("cls, family", [(BarberAgakovFlow, "zuko-maf"), (GMFlow, "zuko-maf"),
                                         (L1OutFlow, "zuko-maf"), (DoEFlow, "zuko-maf"), (MIENF, "realnvp")])
def test_default_family_per_estimator(cls, family):
    est = cls()
    assert est.parameters().flows == family
    expected = ZukoMAF if family == "zuko-maf" else ConditionalFlow
    assert isinstance(est.flow(3, 2), expected)


def test_the_family_can_be_switched_and_changes_the_model():
    assert isinstance(BarberAgakovFlow(flows="realnvp").flow(3, 2), ConditionalFlow)
    assert BarberAgakovFlow().count_parameters(3, 3) != BarberAgakovFlow(flows="realnvp").count_parameters(3, 3)


def test_unknown_family_and_mienf_with_zuko_are_one_line_errors():
    with pytest.raises(MibenchError, match="flows must be one of realnvp, zuko-maf"):
        GMFlow(flows="nsf")
    with pytest.raises(MibenchError, match="flows must be 'realnvp'"):
        MIENF(flows="zuko-maf")


@pytest.mark.parametrize("context", [0, 2])
def test_zuko_maf_is_a_normalised_density_in_one_dimension(context):
    torch.manual_seed(0)
    flow = ZukoMAF(1, context, layers=2, hidden=16)
    grid = torch.linspace(-30, 30, 60001).unsqueeze(1)
    x = torch.full((grid.shape[0], context), 0.3) if context else None
    with torch.no_grad():
        dens = flow.log_prob(grid, x).exp()
    assert float(torch.trapezoid(dens, grid[:, 0])) == pytest.approx(1.0, abs=1e-3)


def test_one_unconditional_variable_starts_at_the_standard_normal():
    """Without a context a 1-d MAF is free affine maps; they start at the identity (zuko draws them at
    random: log q would be far from the N(0, 1) the normal-scored marginals already follow)."""
    torch.manual_seed(0)
    y = torch.randn(100, 1)
    with torch.no_grad():
        got = ZukoMAF(1, 0, layers=4, hidden=16).log_prob(y)
    torch.testing.assert_close(got, -0.5 * y[:, 0] ** 2 - 0.5 * math.log(2 * math.pi))


def test_gm_flow_on_one_dimensional_pairs_with_short_training():
    """1 x 1 pairs at 1 bit: with zuko's random start the y marginal's entropy was still 6 nats after
    300 steps and gm-flow read 7.8 bits."""

    x, y, _ = draw("gauss-dense-1x1", 2000, mi_bits=1.0, seed=0)
    est = GMFlow()
    est = est.with_settings(steps=300, eval_every=50)
    bits = est.estimate(np.asarray(x), np.asarray(y), seed=0) / math.log(2)
    assert abs(bits - 1.0) < 0.3, bits
    assert abs(est.last["h_y"] - 0.5 * math.log(2 * math.pi * math.e)) < 0.1
