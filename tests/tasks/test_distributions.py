"""The ``distributions`` task family (mibench/tasks/distributions.py): analytic MI checked against
Monte-Carlo log-density ratios of the exact densities, the strength solver, the registry names and
the Task protocol (harness run, fixed datasets of 10,000 pairs)."""
import math

import numpy as np
import pytest
import torch
from scipy import stats
from scipy.special import ndtri

from mibench.errors import MibenchError
from mibench.tasks import TASKS, make_task
from mibench.tasks.distributions import SUITE, _mix_mi_mc, draw, gaussian_mi_from_cov, student_t_correction_nats
from mibench.utils.units import LN2


@pytest.mark.parametrize("name", SUITE)
def test_suite_names_resolve_and_draw_10000_pairs_at_the_requested_mi(name):
    x, y, truth = draw(name, 10_000, mi_nats=1.0, seed=3)
    task = make_task(name)
    assert x.shape == (10_000, task.dim_x) and y.shape == (10_000, task.dim_y)
    assert x.dtype == np.float32 and np.isfinite(x).all() and np.isfinite(y).all()
    assert truth == pytest.approx(1.0)
    x2, _, _ = draw(name, 10_000, mi_nats=1.0, seed=3)
    assert np.array_equal(x, x2)  # a fixed dataset per (name, n, MI, seed)
    info = task.info()
    assert info["family"] == "distributions" and info["dim_x"] == task.dim_x


@pytest.mark.parametrize("name", ["gauss-dense-1x1", "gauss-dense-5x5", "gauss-dense-25x25", "gauss-sparse-25x25",
                                  "gauss-dense-3x7", "asinh-5x5"])
def test_gaussian_closed_form_matches_covariance_and_a_monte_carlo_log_density_ratio(name):
    task = make_task(name)
    target = 1.3
    rho = task.rho(target / LN2)
    cov = task.covariance(rho)
    assert gaussian_mi_from_cov(cov, task.dim_x) == pytest.approx(target, abs=1e-9)
    # Monte-Carlo E[log p(x,y) - log p(x) - log p(y)] with the exact Gaussian densities, on samples of
    # the untransformed Gaussian part (pure Gaussian kinds)
    if name.startswith("gauss"):
        gen = torch.Generator().manual_seed(0)
        x, y = task.sample(40_000, target / LN2, gen)
        xy = np.hstack([x.numpy(), y.numpy()]).astype(np.float64)
        dx = task.dim_x
        r = (stats.multivariate_normal(cov=cov).logpdf(xy)
             - stats.multivariate_normal(cov=cov[:dx, :dx]).logpdf(xy[:, :dx])
             - stats.multivariate_normal(cov=cov[dx:, dx:]).logpdf(xy[:, dx:]))
        se = r.std() / math.sqrt(r.size)
        assert abs(r.mean() - target) < 4 * se + 1e-3, (r.mean(), se)


@pytest.mark.parametrize("name,dof", [("student-t-dof3-1x1", 3.0), ("student-t-dof5-5x5", 5.0),
                                      ("student-t-dof2.5-2x3", 2.5)])
def test_student_t_formula_matches_monte_carlo_of_the_exact_density(name, dof):
    task = make_task(name)
    target = task.min_mi_nats + 0.7
    gen = torch.Generator().manual_seed(1)
    x, y = task.sample(60_000, target / LN2, gen)
    shape = task.covariance(task.rho(target / LN2))
    dx = task.dim_x
    xy = np.hstack([x.numpy(), y.numpy()]).astype(np.float64)
    r = (stats.multivariate_t(shape=shape, df=dof).logpdf(xy)
         - stats.multivariate_t(shape=shape[:dx, :dx], df=dof).logpdf(xy[:, :dx])
         - stats.multivariate_t(shape=shape[dx:, dx:], df=dof).logpdf(xy[:, dx:]))
    se = r.std() / math.sqrt(r.size)
    assert abs(r.mean() - target) < 4 * se + 2e-3, (r.mean(), target, se)
    assert 0 < student_t_correction_nats(dof, dx, task.dim_y) < 1
    assert student_t_correction_nats(1e6, dx, task.dim_y) < 1e-4   # -> Gaussian as dof -> inf


def test_student_t_refuses_levels_below_its_dof_correction():
    task = make_task("student-t-dof3-5x5")
    with pytest.raises(MibenchError, match="at least"):
        task.sample(10, 0.01, torch.Generator().manual_seed(0))


def test_transformed_margins_are_invertible_maps_of_the_gaussian():
    rho = make_task("cdf-1x1").rho(1.0 / LN2)
    x, y, _ = draw("cdf-1x1", 20_000, mi_nats=1.0, seed=0)
    assert x.min() >= 0 and x.max() <= 1
    gx, gy = (ndtri(np.clip(a[:, 0].astype(np.float64), 1e-7, 1 - 1e-7)) for a in (x, y))
    r = np.corrcoef(gx, gy)[0, 1]
    assert abs(abs(r) - rho) < 0.02
    xh, yh, _ = draw("halfcube-1x1", 20_000, mi_nats=1.0, seed=0)
    back = lambda t: np.sign(t) * np.abs(t) ** (2 / 3)  # noqa: E731
    assert abs(abs(np.corrcoef(back(xh[:, 0]), back(yh[:, 0]))[0, 1]) - rho) < 0.02
    xa, ya, _ = draw("asinh-1x1", 20_000, mi_nats=1.0, seed=0)
    assert abs(abs(np.corrcoef(np.sinh(xa[:, 0]), np.sinh(ya[:, 0]))[0, 1]) - rho) < 0.02


def test_mixture_mc_truth_is_solved_and_precise():
    task = make_task("mix-1x1")
    rho = task.rho(1.0 / LN2)
    mi, se = _mix_mi_mc(1, 1, 1, rho)
    assert mi == pytest.approx(1.0, abs=1e-5) and se < 0.005
    assert task.info()["mi_mc_stderr_nats"] < 0.005
    # an independent Monte-Carlo evaluation (other seed) agrees within its error
    mi2, se2 = _mix_mi_mc(1, 1, 1, rho, seed=7)
    assert abs(mi2 - 1.0) < 4 * math.hypot(se, se2)
    assert _mix_mi_mc(1, 1, 1, 0.0)[0] == pytest.approx(0.0, abs=0.01)   # independent components
    x, _, _ = draw("mix-1x1", 20_000, mi_nats=1.0, seed=0)
    assert np.histogram(x[:, 0], bins=[-10, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 10])[0][3] < 0.1 * 20_000  # bimodal


def test_registry_and_errors():
    assert "gauss-sparse-25x25" in TASKS and "student-t-dof3-1x1" in TASKS and "mix-5x5" in TASKS
    helps = " ".join(TASKS.patterns_help())
    for word in ("gauss-dense-", "student-t-dof", "asinh-", "mix-"):
        assert word in helps
    with pytest.raises(MibenchError, match="dims"):
        make_task("gauss-dense-0x5")
    with pytest.raises(MibenchError, match="exactly one"):
        draw("gauss-dense-1x1", 10)
    with pytest.raises(MibenchError):
        make_task("gauss-dense-1x1").sample(10, -1.0, torch.Generator())


def test_streaming_harness_runs_a_distributions_task(tmp_path):
    from mibench.protocols.stream.run import RunConfig, run

    res = run(RunConfig(task="gauss-sparse-5x5", estimators=["smile"], steps=30, batch_size=32, hidden=16,
                        layers=1, mi="0,1", device="cpu", log_every=10), out_dir=tmp_path / "r", plot=False)
    assert np.isfinite(res.estimates).all() and res.true_mi[-1] == 1.0


@pytest.mark.parametrize("name", ["gaussian", "gauss-dense-3x2", "student-t-dof3-2x2", "mix-2x2"])
@pytest.mark.parametrize("batch", [0, -1, 2.5])
def test_a_batch_size_that_is_not_a_positive_integer_is_one_line(name, batch):
    """These tasks gave torch's 'negative dimension' error for -1, an empty batch for 0 and 2 rows for 2.5,
    where the image, text and catalogue tasks refused them."""
    task = make_task(name)
    with pytest.raises(MibenchError, match="batch size must be an integer"):
        task.sample(batch, 0.5, torch.Generator().manual_seed(0))
    x, y = task.sample(8.0, 0.5, torch.Generator().manual_seed(0))
    assert x.shape[0] == y.shape[0] == 8


@pytest.mark.parametrize("name", ["gaussian", "gauss-dense-1x1", "cdf-1x1", "student-t-dof3-1x1"])
def test_a_level_float32_samples_cannot_carry_is_refused(name):
    """26 and 26.5 bits on one correlated pair drew bit-identical samples (the float64 rho rounds to the same
    value) under two recorded truths, and far below that the float32 samples hold x == y exactly; a level is
    capped at 16 bits per correlated pair, where the noise spans about 100 float32 spacings near 1."""
    from mibench.tasks.base import MAX_BITS_PER_PAIR

    task = make_task(name, dim=1) if name == "gaussian" else make_task(name)
    top = task.max_mi_bits
    assert MAX_BITS_PER_PAIR <= top < MAX_BITS_PER_PAIR + 1         # one pair (plus the Student-t's tail share)
    x, y = task.sample(20000, top, torch.Generator().manual_seed(0))
    assert torch.isfinite(x).all() and (x != y).float().mean() > 0.99
    with pytest.raises(MibenchError, match="bits per correlated pair"):
        task.sample(10, top + 1, torch.Generator().manual_seed(0))


def test_student_t_with_too_few_degrees_of_freedom_is_refused():
    """At dof 0.1 one draw in about 200 was inf (a chi^2 draw of 0 in float32), and the estimators were
    recorded as failed or diverged on the task's own bad data."""
    with pytest.raises(MibenchError, match="at least 0.5 degrees of freedom"):
        make_task("student-t-dof0.1-2x2")
    x, y = make_task("student-t-dof0.5-2x2").sample(100000, 2.0, torch.Generator().manual_seed(0))
    assert torch.isfinite(x).all() and torch.isfinite(y).all()
