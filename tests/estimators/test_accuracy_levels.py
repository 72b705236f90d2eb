"""Accuracy of the 14 estimators of issue 32 at several MI levels, against the analytic truth.

Bands come from measured seed spread: benchmarks/results/accuracy_levels.txt (ba, gm-flow,
l1out, minde-c and minde-j from its re-measured section, after their flows became zuko's MAF and
MINDE's training times importance-sampled; minde-c, minde-j and hybrid-resampled from its last two sections,
after MINDE's readout quadrature was fixed), written by

    E=nishiyama,jsd-kl,ba,gm-flow,club,l1out,flo,mienf,mienf-tridiag,minde-c,minde-j,fmmi-c,fmmi-j,hybrid-resampled
    OMP_NUM_THREADS=1 python benchmarks/bench_accuracy.py --cases levels --dim 3 --n 2000 --seeds 0,1,2,3,4 \
        --budget short --estimators $E

(n = 2,000 pairs; gauss-dense-3x3 at 1, 2, 4 and 6 bits, student-t-dof5-3x3 and asinh-3x3 at 2 bits;
ba, gm-flow, club, l1out, hybrid-resampled 300 steps, the other generative estimators and flo 400, eval_every 50;
nishiyama and jsd-kl through mibench.estimate with its defaults).  MEASURED holds that table's mean and
sample sd in bits over seeds 0-4; each test runs seed 0 (data and estimator) and asserts the estimate
lies within mean +- 4 sd (sd floored at SD_FLOOR bits, so that a machine whose floats differ slightly
does not fail a case whose five seeds happened to agree closely).  Rerun the command above and copy
the summary here when an estimator or its defaults change.

The lower bounds (ba, flo, nishiyama, jsd-kl) must not exceed the truth beyond their spread on the
Gaussian cases: the table's means satisfy mean - truth <= sd (test_measured_lower_bounds_stay_below_the_truth)
and each run's estimate stays below truth + sd (over the 5 seeds x 4 Gaussian cases the largest
excess of any lower bound was +0.064 bits (ba, one seed at 2 bits, within its sd 0.149; flo's +0.005);
all seed-0 values are 0.18 bits or more below the truth).
club and l1out are upper bounds only with the true conditional; where their measured mean is below the
truth (l1out at 1 and 2 bits and on Student-t / asinh) the table says so (BELOW_TRUTH), and the
leaderboard's bound_check column reads "below truth" for such a mean (mibench.analysis.leaderboard).

All 84 (estimator, case) runs are marked slow (79 runs: 381 s with `pytest -m slow` on 2 cores under
load 2-4, 0.6-16 s each, before hybrid-resampled's 5) except FAST: five of the cheapest estimators at 4 and
6 bits (about 19 s), so
that the default suite also pins a level above the 1 bit of test_generative_family.py.

What a band catches: the seed-0 estimate leaving mean +- 4 sd.  Checked by hand on the FAST cases
with the mean shifted by +-5 sd: 7 of 8 fail; fmmi-c at 6 bits with the mean lowered by 5 sd passes,
its seed-0 value being 1.05 sd below the mean (a shift passes when it is under 4 sd plus the seed-0
value's own offset in that direction).  The lower-bound assert fails when the truth is lowered by 1 bit
(ba at 6 bits: its seed-0 value > 5 + 0.105).
"""
import math

import pytest

import mibench
from mibench.estimators.registry import ESTIMATORS
from mibench.tasks.distributions import draw

N = 2000
SD_FLOOR = 0.01
STEPS = {"ba": 300, "gm-flow": 300, "club": 300, "l1out": 300, "flo": 400, "mienf": 400, "mienf-tridiag": 400,
         "minde-c": 400, "minde-j": 400, "fmmi-c": 400, "fmmi-j": 400, "hybrid-resampled": 300}
CRITIC = ("nishiyama", "jsd-kl")
# below the truth on the Gaussian cases (ba: its Gaussian H(Y) is exact there, so it is a lower bound there)
LOWER = ("ba", "flo", "nishiyama", "jsd-kl")
CASES = {   # label: (task, requested bits)
    "gauss-1": ("gauss-dense-3x3", 1.0), "gauss-2": ("gauss-dense-3x3", 2.0), "gauss-4": ("gauss-dense-3x3", 4.0),
    "gauss-6": ("gauss-dense-3x3", 6.0), "student-t-2": ("student-t-dof5-3x3", 2.0), "asinh-2": ("asinh-3x3", 2.0),
}
# bits, from the table; each run checks draw's truth against it
TRUTH = {'gauss-1': 1.0, 'gauss-2': 2.0, 'gauss-4': 4.0, 'gauss-6': 6.0, 'student-t-2': 2.0, 'asinh-2': 2.0}

TABLE = {   # estimator: {case: (mean bits, sd bits)} over seeds 0-4
    "nishiyama": {"gauss-1": (0.802, 0.060), "gauss-2": (1.607, 0.112), "gauss-4": (3.226, 0.138),
                  "gauss-6": (4.944, 0.131), "student-t-2": (1.578, 0.133), "asinh-2": (1.604, 0.113)},
    "jsd-kl": {"gauss-1": (0.719, 0.078), "gauss-2": (1.454, 0.126), "gauss-4": (2.990, 0.172),
               "gauss-6": (4.602, 0.189), "student-t-2": (1.358, 0.140), "asinh-2": (1.449, 0.125)},
    "ba": {"gauss-1": (0.881, 0.126), "gauss-2": (1.863, 0.149), "gauss-4": (3.811, 0.137),
           "gauss-6": (5.790, 0.105), "student-t-2": (1.887, 0.123), "asinh-2": (1.863, 0.148)},
    "gm-flow": {"gauss-1": (0.942, 0.134), "gauss-2": (1.925, 0.159), "gauss-4": (3.926, 0.160),
                "gauss-6": (5.925, 0.165), "student-t-2": (1.953, 0.135), "asinh-2": (1.936, 0.174)},
    "club": {"gauss-1": (2.677, 0.240), "gauss-2": (6.822, 0.394), "gauss-4": (25.003, 1.077),
             "gauss-6": (70.143, 3.398), "student-t-2": (6.826, 0.117), "asinh-2": (6.832, 0.399)},
    "l1out": {"gauss-1": (0.933, 0.116), "gauss-2": (1.948, 0.139), "gauss-4": (4.064, 0.191),
              "gauss-6": (6.742, 0.243), "student-t-2": (1.889, 0.178), "asinh-2": (1.948, 0.138)},
    "flo": {"gauss-1": (0.891, 0.094), "gauss-2": (1.855, 0.097), "gauss-4": (3.478, 0.120),
            "gauss-6": (4.759, 0.168), "student-t-2": (1.816, 0.109), "asinh-2": (1.855, 0.097)},
    "mienf": {"gauss-1": (1.021, 0.054), "gauss-2": (2.022, 0.073), "gauss-4": (4.006, 0.085),
              "gauss-6": (5.976, 0.105), "student-t-2": (1.831, 0.100), "asinh-2": (2.023, 0.074)},
    "mienf-tridiag": {"gauss-1": (1.017, 0.055), "gauss-2": (2.027, 0.079), "gauss-4": (4.002, 0.086),
                      "gauss-6": (5.947, 0.079), "student-t-2": (1.848, 0.108), "asinh-2": (2.028, 0.080)},
    "minde-c": {"gauss-1": (0.723, 0.011), "gauss-2": (1.448, 0.037), "gauss-4": (2.803, 0.059),
                "gauss-6": (3.734, 0.100), "student-t-2": (1.389, 0.048), "asinh-2": (1.448, 0.037)},
    "minde-j": {"gauss-1": (0.768, 0.073), "gauss-2": (1.456, 0.122), "gauss-4": (2.487, 0.283),
                "gauss-6": (3.118, 0.376), "student-t-2": (1.303, 0.147), "asinh-2": (1.456, 0.123)},
    "fmmi-c": {"gauss-1": (1.074, 0.148), "gauss-2": (2.122, 0.181), "gauss-4": (4.206, 0.229),
               "gauss-6": (6.163, 0.170), "student-t-2": (1.975, 0.159), "asinh-2": (2.123, 0.181)},
    "fmmi-j": {"gauss-1": (1.266, 0.094), "gauss-2": (2.423, 0.084), "gauss-4": (4.337, 0.090),
               "gauss-6": (6.176, 0.083), "student-t-2": (2.231, 0.168), "asinh-2": (2.424, 0.085)},
    "hybrid-resampled": {"gauss-1": (0.930, 0.131), "gauss-2": (1.942, 0.166), "gauss-4": (3.890, 0.222),
                         "gauss-6": (5.888, 0.128), "student-t-2": (1.900, 0.112), "asinh-2": (1.942, 0.165)},
}
MEASURED = {(name, case): v for name, cases in TABLE.items() for case, v in cases.items()}
#: club / l1out cases whose measured mean is below the truth (upper bounds only with the true conditional)
#: (club stays far above: its population value for Gaussians is sum_k rho_k^2 / (1 - rho_k^2) nats)
BELOW_TRUTH = {("l1out", "gauss-1"), ("l1out", "gauss-2"), ("l1out", "student-t-2"), ("l1out", "asinh-2")}

FAST = {("ba", "gauss-6"), ("fmmi-c", "gauss-6"), ("club", "gauss-6"), ("flo", "gauss-4"),
        ("hybrid-resampled", "gauss-4")}


def band(mean: float, sd: float) -> tuple[float, float]:
    s = max(sd, SD_FLOOR)
    return mean - 4 * s, mean + 4 * s


def within(bits: float, mean: float, sd: float) -> bool:
    lo, hi = band(mean, sd)
    return lo <= bits <= hi


def run(name: str, case: str, seed: int = 0) -> tuple[float, float]:
    """(estimate, truth) in bits."""
    task, bits = CASES[case]
    x, y, truth = draw(task, N, mi_bits=bits, seed=seed)
    if name in CRITIC:
        return mibench.estimate(x, y, estimator=name, seed=seed, units="bits").mi, truth / math.log(2)
    est = ESTIMATORS.get(name).obj()
    est = est.with_settings(steps=STEPS[name], eval_every=50)
    return est.estimate(x, y, seed=seed) / math.log(2), truth / math.log(2)


def check(name: str, case: str) -> None:
    mean, sd = MEASURED[(name, case)]
    bits, truth = run(name, case)
    assert abs(truth - TRUTH[case]) < 1e-3
    lo, hi = band(mean, sd)
    assert lo <= bits <= hi, f"{name} on {case}: {bits:.3f} bits, measured {mean} +- {sd} (band {lo:.3f}..{hi:.3f})"
    if name in LOWER and case.startswith("gauss"):
        assert bits <= truth + max(sd, SD_FLOOR), f"{name} on {case}: lower bound {bits:.3f} above truth {truth:.3f}"
    if name == "club":
        assert bits > truth


PARAMS = [pytest.param(name, case, id=f"{name}-{case}",
                       marks=() if (name, case) in FAST else pytest.mark.slow)
          for name, case in MEASURED]


@pytest.mark.parametrize("name,case", PARAMS)
def test_estimate_within_the_measured_band(name, case):
    check(name, case)


def test_measured_lower_bounds_stay_below_the_truth():
    """On the Gaussian cases each lower bound's mean over seeds 0-4 is at most truth + sd."""
    for (name, case), (mean, sd) in MEASURED.items():
        if name in LOWER and case.startswith("gauss"):
            assert mean - TRUTH[case] <= sd, (name, case, mean, sd)


def test_below_truth_cases_are_the_measured_ones_and_the_leaderboard_flags_them():
    from mibench.analysis.leaderboard import bound_columns

    assert BELOW_TRUTH == {(n, c) for (n, c), (mean, _sd) in MEASURED.items()
                           if n in ("club", "l1out") and mean < TRUTH[c]}
    for name, case in BELOW_TRUTH:
        mean, _sd = MEASURED[(name, case)]
        assert bound_columns({"estimator": name, "bias": mean - TRUTH[case], "bias_ci95": 0.0}) == \
            ("upper bound", "below truth")


def test_club_tracks_its_population_value():
    """For a Gaussian pair the Gaussian-q CLUB tends to sum_k rho_k^2 / (1 - rho_k^2) nats (family.py):
    gauss-dense-3x3 has 3 pairs sharing the bits equally; the measured means lie within 4 sd of it."""
    for case in ("gauss-1", "gauss-2", "gauss-4", "gauss-6"):
        one_minus_rho2 = 2.0 ** (-2 * TRUTH[case] / 3)
        population = 3 * (1 - one_minus_rho2) / one_minus_rho2 / math.log(2)
        mean, sd = MEASURED[("club", case)]
        assert abs(mean - population) <= 4 * sd, (case, mean, sd, population)


def test_every_estimator_and_case_is_pinned():
    names = set(STEPS) | set(CRITIC)
    assert {(n, c) for n in names for c in CASES} == set(MEASURED)
    assert FAST <= set(MEASURED)


def test_a_value_off_by_five_sd_fails_the_band():
    for (mean, sd) in MEASURED.values():
        s = max(sd, SD_FLOOR)
        assert within(mean, mean, sd) and within(mean + 3.9 * s, mean, sd)
        assert not within(mean + 5 * s, mean, sd) and not within(mean - 5 * s, mean, sd)
