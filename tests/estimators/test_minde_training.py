"""MINDE trains where its readout weighs (the paper's importance-sampled times) and minde-c reads out an
EMA of its weights: the two changes that brought mibench's MINDE to the authors' code
(benchmarks/results/minde_vs_authors.txt).  Before them, minde-c read 4.67 bits at a truth of 4
(gauss-dense-5x5, n 5,000, seed 0; the authors' code 3.99) and minde-j 1.46 at a truth of 1 (1.13)."""
import math

import pytest
import torch

from mibench.estimators.generative import minde
from mibench.estimators.registry import ESTIMATORS
from mibench.tasks.distributions import draw


def _log_phi(t: float) -> float:
    """An antiderivative of beta(t) / s_t^2: log(exp(int_0^t beta) - 1)."""
    return math.log(math.expm1(float(minde._int_beta(torch.tensor(t, dtype=torch.float64)))))


def test_minde_trains_on_times_weighted_like_its_readout(monkeypatch):
    """The denoising loss draws t with density proportional to beta(t) / s_t^2 on [T_MIN, 1]; a uniform t
    (the old rule) puts 0.9 % of the draws below t = 0.01, this law 15 %."""
    seen = []
    original = minde.noise_scale
    monkeypatch.setattr(minde, "noise_scale", lambda t: (seen.append(t.detach().clone()), original(t))[1])
    torch.manual_seed(0)
    for joint in (False, True):
        seen.clear()
        est = minde.MINDE(joint=joint)
        model = est.models(2, 3)["denoiser"]
        x, y = torch.randn(20000, 2), torch.randn(20000, 3)
        est.loss("denoiser", model, x, y)
        t = torch.cat(seen)
        expected = (_log_phi(0.01) - _log_phi(minde.T_MIN)) / (_log_phi(1.0) - _log_phi(minde.T_MIN))
        assert expected > 0.1
        assert abs(float((t < 0.01).float().mean()) - expected) < 0.015
        assert float(t.min()) >= minde.T_MIN - 1e-7 and float(t.max()) <= 1.0


def test_minde_c_reads_out_a_moving_average_and_minde_j_does_not():
    assert ESTIMATORS.get("minde-c").obj().parameters().ema == minde.EMA > 0
    assert ESTIMATORS.get("minde-j").obj().parameters().ema == 0
    assert minde.MINDE(ema=0.0).parameters().ema == 0     # an explicit choice is kept
    assert minde.MINDE(joint=True).parameters().ema == 0  # the joint variant's own default


def test_minde_readout_integrates_over_t_accurately():
    """The readout's 64-point rule against the exact integral of beta / (2 s_t^2) ||eps_p - eps_q||^2 over
    [T_MIN, 1], for a denoiser difference of known size (a Gaussian-channel-like profile, a_t^2 s_t^2 /
    (0.05 a_t^2 + s_t^2) per coordinate).  The old rule (64 points evenly spaced in log s_t^2, trapezoid in
    t) read 7.8 % high here, and minde-c 4.20 instead of 3.67 bits at 4 (the paper's §3 integral;
    benchmarks/results/minde_vs_authors.txt, 2026-11-25)."""

    def profile(t):
        ib = minde._int_beta(t.double())
        a2, s2 = torch.exp(-ib), -torch.expm1(-ib)
        return a2 * s2 / (0.05 * a2 + s2)

    class Known(minde.MINDE):
        def _denoise(self, model, zt, t, x, mask_x, mask_y=None):
            return profile(t).sqrt().to(zt.dtype).unsqueeze(1) * mask_x * torch.ones_like(zt)

    dy = 3
    x, y = torch.randn(50, 2), torch.randn(50, dy)
    value, _ = Known().readout({"denoiser": None}, x, y)
    t = torch.logspace(math.log10(minde.T_MIN), 0, 400001, dtype=torch.float64)
    exact = float(torch.trapezoid(minde.beta(t) / (2 * -torch.expm1(-minde._int_beta(t))) * dy * profile(t), t))
    assert abs(value / exact - 1) < 0.005, (value, exact)


@pytest.mark.slow
@pytest.mark.parametrize("name, bits, low, high", [("minde-c", 4.0, 3.3, 4.1), ("minde-j", 1.0, 0.8, 1.35)])
def test_minde_near_the_authors_on_gauss_dense_5x5(name, bits, low, high):
    """Registry defaults, n 5,000, seed 0.  Measured with the readout's nodes evenly spaced in phi (seeds
    0-2): minde-c 3.67 +- 0.19 at 4 bits (the authors' code 3.76 +- 0.20), minde-j 1.13 +- 0.03 at 1 bit
    (1.16 +- 0.04); with the earlier readout 4.20 (4.198 at seed 0, outside this band) and 1.23, and
    before the training times and EMA 4.67 and 1.46 at seed 0."""
    x, y, _ = draw("gauss-dense-5x5", 5000, mi_bits=bits, seed=0)
    value = ESTIMATORS.get(name).obj().estimate(x, y, seed=0) / math.log(2)
    assert low <= value <= high, f"{name}: {value:.3f} bits at a truth of {bits}"
