
import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.protocols.schedule import parse_schedule
from mibench.tasks import bsc_crossover, bsc_mi_bits, gaussian_mi_bits, gaussian_rho, make_task
from mibench.tasks.base import binary_entropy_bits, invert_monotone


@pytest.mark.parametrize("ds", [1, 3, 10, 100])
@pytest.mark.parametrize("frac", [0.0, 0.013, 0.25, 0.5, 0.9, 1.0])
def test_bsc_inverse_round_trips(ds, frac):
    mi = frac * ds
    beta = bsc_crossover(ds, mi)
    assert 0.0 <= beta <= 0.5
    assert bsc_mi_bits(ds, beta) == pytest.approx(mi, abs=1e-9)


def test_bsc_known_values():
    assert bsc_crossover(1, 1.0) == 0.0
    assert bsc_crossover(1, 0.0) == 0.5
    assert binary_entropy_bits(0.11) == pytest.approx(0.4999, abs=1e-3)
    assert bsc_crossover(1, 0.5) == pytest.approx(0.110028, abs=1e-5)
    with pytest.raises(MibenchError, match="at most 4 bits"):
        bsc_crossover(4, 4.5)
    with pytest.raises(MibenchError):
        bsc_crossover(4, -1)


@pytest.mark.parametrize("dim", [1, 10, 50])
@pytest.mark.parametrize("mi", [0.0, 0.5, 2.0, 10.0])
def test_gaussian_rho_round_trips(dim, mi):
    assert gaussian_mi_bits(dim, gaussian_rho(dim, mi)) == pytest.approx(mi, abs=1e-9)


def test_gaussian_samples_have_the_requested_correlation():
    task = make_task("gaussian", dim=3)
    x, y = task.sample(200_000, 4.0, torch.Generator().manual_seed(0))
    r = np.corrcoef(x[:, 1].numpy(), y[:, 1].numpy())[0, 1]
    assert r == pytest.approx(gaussian_rho(3, 4.0), abs=0.005)
    cubic = make_task("gaussian", dim=3, cubic=True)
    xc, yc2 = cubic.sample(5, 4.0, torch.Generator().manual_seed(3))
    xg, yg = task.sample(5, 4.0, torch.Generator().manual_seed(3))
    assert torch.allclose(yc2, yg ** 3)


def test_stepwise_schedule():
    s = parse_schedule("stepwise", 20_000)
    mi = s.true_mi()
    assert mi.shape == (20_000,)
    assert list(np.unique(mi)) == [2, 4, 6, 8, 10]
    assert (mi[:4000] == 2).all() and (mi[-4000:] == 10).all()
    assert parse_schedule(2.5, 10).levels == (2.5,)
    assert parse_schedule("1,3", 10).levels == (1.0, 3.0)
    for bad in ("-2", "abc", "nan"):
        with pytest.raises(MibenchError):
            parse_schedule(bad, 100)
    for typo in ("2,,4", "2,4,", ",2"):                 # '2,,4' ran as 2,4 and config.json kept '2,,4'
        with pytest.raises(MibenchError, match="--mi lists an empty level"):
            parse_schedule(typo, 100)
    with pytest.raises(MibenchError, match="cannot hold"):
        parse_schedule("stepwise", 3)


def test_invert_monotone_both_directions():
    """Bisection to machine precision on an increasing and on a decreasing function; a target out
    of range gives the nearest end of the bracket."""
    x = invert_monotone(lambda v: v ** 3, 0.125, 0.0, 1.0)
    assert x == pytest.approx(0.5, abs=1e-15)
    x = invert_monotone(lambda v: 1.0 - v * v, 0.75, 0.0, 1.0, increasing=False)
    assert x == pytest.approx(0.5, abs=1e-15)
    assert invert_monotone(lambda v: v, 5.0, 0.0, 1.0) == pytest.approx(1.0, abs=1e-15)
    assert invert_monotone(lambda v: v, 0.3, 0.0, 1.0, max_iter=1) == 0.25       # one halving: [0, 0.5]
