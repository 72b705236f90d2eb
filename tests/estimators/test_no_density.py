"""Status ``no_density``: a generative estimator on data that lie on a manifold of lower dimension than their
coordinates (mibench/estimators/intrinsic.py).  On mutinfo's Gaussian bumps 16 x 16 at 3.61 bits, fmmi-c read
10.3 bits and mienf 3.8, both ``converged``; on the pairs' two-coordinate latents (the same MI, with a density)
3.76 and 3.57 (benchmarks/results/outliers_image-manifold.txt)."""
import numpy as np

from mibench.estimators import ESTIMATORS
from mibench.estimators.intrinsic import low_dimensional_sides, two_nn_dimension


def _circle(n: int, seed: int):
    """x: an angle's noisy reading (1 coordinate); y: the point on the unit circle (2 coordinates, a curve)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 2 * np.pi, n)
    return (t + 0.3 * rng.standard_normal(n))[:, None], np.stack([np.cos(t), np.sin(t)], 1)


def test_two_nn_reads_a_curve_as_one_dimension_and_a_cloud_as_its_coordinates():
    rng = np.random.default_rng(0)
    _, y = _circle(2000, 0)
    assert abs(two_nn_dimension(y) - 1) < 0.15
    assert abs(two_nn_dimension(rng.standard_normal((2000, 3))) - 3) < 0.4
    assert np.isnan(two_nn_dimension(np.repeat(np.eye(3), 100, axis=0)))      # discrete: no estimate
    cloud = rng.standard_normal((1000, 5))
    near = np.concatenate([cloud, cloud[:3] + 1e-9])      # three nearly equal rows read it as 0 (the Gram
    assert abs(two_nn_dimension(near) - two_nn_dimension(cloud)) < 0.2     # matrix's rounding, the mean)
    mixed = np.concatenate([rng.standard_normal((3000, 1)), rng.integers(0, 2, (3000, 1))], 1)
    assert low_dimensional_sides(None, mixed, seed=0) == {}     # a binary column is not a missing dimension
    wide = rng.standard_normal((2000, 50))            # TwoNN reads about 30 here, as for the Gaussian sample
    assert low_dimensional_sides(wide, wide[:, :25], seed=0) == {}
    sides = low_dimensional_sides(None, y, seed=0)
    assert list(sides) == ["y"] and sides["y"][0] < 1.2 and sides["y"][2] == 2


def test_a_generative_estimator_on_a_curve_says_no_density():
    x, y = _circle(3000, 1)
    est = ESTIMATORS.get("ba").obj(steps=300, eval_every=25)
    est.estimate(x, y, seed=0)
    assert est.status == "no_density" and est.last["intrinsic_dimension"]["y"][2] == 2
    thick = y + 0.3 * np.random.default_rng(2).standard_normal(y.shape)     # a density in the plane
    est.estimate(x, thick, seed=0)
    assert est.status != "no_density" and "intrinsic_dimension" not in est.last
    est.estimate(x, thick[:, :1], seed=0)                                   # a 1-d y always has a density,
    assert est.status != "no_density" and est.last.get("intrinsic_dimension") is None   # nothing carried over
    flo = ESTIMATORS.get("flo").obj(steps=100, eval_every=25)               # not a density estimator
    flo.estimate(x, y, seed=0)
    assert flo.status != "no_density"


def test_constant_columns_are_not_missing_dimensions_of_a_modelled_x():
    """gm-flow models x's density too: x = two varying columns and four constant ones (dropped before the
    model) read as 2 of 6 dimensions, no_density, before the constant columns were left out of the check."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal((2000, 2)), np.ones((2000, 4))], 1)
    y = x[:, :2] @ np.array([[1.0, 0.3], [0.2, 1.0]]) + rng.standard_normal((2000, 2))
    est = ESTIMATORS.get("gm-flow").obj(steps=50, eval_every=25)
    est.split(x, y, 0)
    assert est.intrinsic == {}


def test_estimate_says_why_a_sample_estimator_read_no_density():
    """mibench.estimate's settings held only the training parameters: nothing said which side had no density."""
    import mibench

    x, y = _circle(2000, 4)
    r = mibench.estimate(x, y, estimator="ba", steps=100, eval_every=25)
    assert r.status == "no_density" and r.settings["intrinsic_dimension"]["y"][2] == 2
    assert "manifold" in r.settings["status_reason"]
