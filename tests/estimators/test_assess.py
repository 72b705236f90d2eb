"""A trained estimator's status from its own diagnostics (mibench.estimators.trained.assess)."""
from __future__ import annotations

import numpy as np

from mibench.estimators.trained import Best, assess


def curve(losses, every=100):
    return tuple((every * (i + 1), v) for i, v in enumerate(losses))


def test_a_loss_still_falling_at_the_end_is_still_improving():
    losses = [2.0, 1.8, 1.6, 1.4, 1.2, 1.0, 0.8, 0.6]          # last quarter: 0.2 of a 1.4 fall
    best = {"flow": Best(0.6, {}, 800, curve(losses))}
    status, reason = assess(best, 1.0, 1.0)
    assert status == "still_improving" and "flow" in reason


def test_a_plateau_is_converged_and_an_early_best_is_not_still_improving():
    plateau = [2.0, 1.0, 0.8, 0.71, 0.70, 0.70, 0.699, 0.699]
    assert assess({"flow": Best(0.699, {}, 800, curve(plateau))}, 1.0, 1.05)[0] == "converged"
    rising = [2.0, 1.0, 0.8, 0.7, 0.75, 0.8, 0.85, 0.9]        # best at step 400, then overfitting
    assert assess({"flow": Best(0.7, {}, 400, curve(rising))}, 1.0, 1.0)[0] == "converged"


def test_a_training_readout_far_above_the_held_out_one_is_overfit():
    flat = curve([1.0, 0.9, 0.9, 0.9, 0.9])
    assert assess({"flow": Best(0.9, {}, 200, flat)}, 1.0, 1.6)[0] == "overfit"
    assert assess({"flow": Best(0.9, {}, 200, flat)}, 1.0, 1.2)[0] == "converged"      # within 25%
    assert assess({"flow": Best(0.9, {}, 200, flat)}, 1.0, float("nan"))[0] == "converged"


def test_an_estimator_reports_its_status_and_training_readout():
    from mibench.estimators import ESTIMATORS

    rng = np.random.default_rng(0)
    x = rng.standard_normal((600, 2))
    y = x + rng.standard_normal((600, 2))
    est = ESTIMATORS.get("doe-flow").obj(steps=40, eval_every=10)
    est.estimate(x, y, seed=0)
    assert est.status in ("converged", "still_improving", "overfit")
    assert np.isfinite(est.last["train_readout"])
    assert est.status != "still_improving" or "status_reason" in est.last


def test_too_few_evaluations_are_a_warning_not_converged():
    """doe-flow at steps=5 read 0.27 bits of 0.5 as `converged` (one validation evaluation), while 1,000
    steps said `still_improving`: a curve of fewer than 4 points cannot show a plateau.  The same status,
    and first, on the critic path (below)."""
    from mibench.analysis.reference import TRUSTING

    short = curve([1.0, 0.9])
    status, reason = assess({"flow": Best(0.9, {}, 200, short)}, 1.0, 1.0)
    assert status == "too_few_evaluations" and "pass more steps" in reason
    assert assess({"flow": Best(0.9, {}, 200, short)}, 1.0, 1.6)[0] == "too_few_evaluations"
    assert "too_few_evaluations" not in TRUSTING          # statuses.csv counts it as a warning


def test_a_critic_trained_for_a_few_evaluations_says_so():
    """infonce with steps=1 read 0.16 bits where KSG reads 2.8 on y = x^2 + noise, status `converged`."""
    import mibench

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 1))
    y = x ** 2 + 0.1 * rng.standard_normal((2000, 1))
    assert mibench.estimate(x, y, estimator="infonce", steps=1).status == "too_few_evaluations"


def test_a_density_readout_within_its_noise_of_zero_reads_no_dependence():
    """doe-flow on independent pairs read -0.009 bits with status `converged` and no standard error, where a
    critic says `no_dependence_detected`: the density estimators now give the per-pair standard error of
    their readout, and a converged value within 2 of them of zero says so."""
    import math

    import mibench

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 2))
    res = mibench.estimate(x, rng.standard_normal((2000, 2)), estimator="doe-flow", steps=600)
    assert res.status == "no_dependence_detected" and 0 < res.mi_stderr < 0.1
    assert res.mi == max(res.mi_raw, 0.0) and res.mi_raw <= 2 * res.mi_stderr
    dep = mibench.estimate(x, x + rng.standard_normal((2000, 2)), estimator="gm-flow", steps=600)
    assert dep.status != "no_dependence_detected" and math.isfinite(dep.mi_stderr) and dep.mi > 5 * dep.mi_stderr


def test_a_readout_whose_blocks_disagree_is_noisy_not_independent():
    """js on mutinfo's rectangles at 5 nats (7.21 bits) read 1.82 nats with a standard error of 1.19 over its
    held-out blocks, and said `no_dependence_detected`: a value that far from 0 within 2 standard errors
    says the blocks disagree, not that x and y are independent. It now reads `noisy_readout`, for the
    critics and for a trained sample estimator alike; a small standard error keeps `no_dependence_detected`."""
    from mibench.estimation.training import _status
    from mibench.estimators.trained import HeldOutEstimator, within_noise_of_zero

    held = [(s, 1.0, 0.1) for s in range(0, 1000, 100)]
    best = (1.9, 0.2, 500, None)
    assert _status(held, best, "patience", None, 1.82, 1.19) == "noisy_readout"
    assert _status(held, best, "patience", None, 0.03, 0.02) == "no_dependence_detected"
    assert _status(held, best, "patience", None, float("nan"), 0.02) == "no_dependence_detected"
    assert within_noise_of_zero(1.82, 0.5) is None
    assert within_noise_of_zero(0.3, 0.19)[0] == "no_dependence_detected"     # the boundary: 0.2 nats
    assert within_noise_of_zero(0.3, 0.21)[0] == "noisy_readout"
    status, reason = within_noise_of_zero(1.82, 1.19)
    assert status == "noisy_readout" and "1.19" in reason

    class Judge:                                     # a sample estimator's judgement, without training one
        intrinsic, loose_bound, reduction = None, False, None
    judged = HeldOutEstimator.judged
    assert judged(Judge(), ("converged", ""), 1.82, 1.19)[0] == "noisy_readout"
    assert judged(Judge(), ("converged", ""), 0.01, 0.02)[0] == "no_dependence_detected"
    assert judged(Judge(), ("converged", ""), 1.82, 0.3) == ("converged", "")


def test_a_reading_below_zero_without_a_standard_error_is_no_dependence_detected():
    """minde-* and mienf* give no standard error: a held-out reading of -0.09 nats, recorded as 0 and clipped,
    read `converged` (the reading says the models saw nothing above independence). It reads
    `no_dependence_detected` now; a positive reading without a standard error keeps the training's status."""
    from mibench.estimators.trained import HeldOutEstimator

    class Judge:
        intrinsic, loose_bound, reduction = None, False, None
    judged = HeldOutEstimator.judged
    nan = float("nan")
    status, reason = judged(Judge(), ("converged", ""), -0.09, nan)
    assert status == "no_dependence_detected" and "no standard error" in reason
    assert judged(Judge(), ("overfit", "why"), 0.0, nan)[0] == "no_dependence_detected"
    assert judged(Judge(), ("converged", ""), 0.4, nan) == ("converged", "")
    assert judged(Judge(), ("still_improving", "why"), -0.09, nan) == ("still_improving", "why")


def test_an_estimator_whose_number_is_a_loose_bound_never_reads_converged():
    """club read 0.96-6.3x the truth on BMI's 40 tasks in the reference table (median 3.0) and js-paper
    0.0-0.8x, with status `converged` right on 6 of 114 and 0 of 32 seeds: a converged readout of either
    now reads `loose_bound`, a warning, with the number kept."""
    import math

    import mibench
    from mibench.analysis.reference import TRUSTING

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 2))
    y = 0.8 * x + 0.6 * rng.normal(size=(2000, 2))               # 1.47 bits
    club = mibench.estimate(x, y, estimator="club")
    assert club.status == "loose_bound" and club.mi > 2 * 1.47
    x1 = x[:, :1]
    y1 = 0.9 * x1 + math.sqrt(1 - 0.81) * rng.normal(size=(2000, 1))   # 1.20 bits
    js = mibench.estimate(x1, y1, estimator="js-paper")
    assert js.status == "loose_bound" and 0 < js.mi < 1.20 - 0.3
    assert "loose_bound" not in TRUSTING


def test_a_converged_readout_of_reduced_inputs_reads_reduced_inputs():
    """Above 256 joint dimensions a trained estimator models the canonical variates, so its number is
    I(AX; BY) <= I(X; Y): on mutinfo's rectangles 16 x 16 at 1.44 bits minde-c read 0.61-0.65, `converged`.
    It reads `reduced_inputs` now (a warning, the number kept); a value near zero still reads
    `no_dependence_detected`, and a loose bound `loose_bound`."""
    from mibench.estimators.trained import HeldOutEstimator

    class Judge:
        intrinsic, loose_bound, reduction = None, False, {"rank": 9}
    judged = HeldOutEstimator.judged
    status, reason = judged(Judge(), ("converged", ""), 0.45, 0.02)
    assert status == "reduced_inputs" and "9 canonical variates" in reason and "I(AX; BY)" in reason
    assert judged(Judge(), ("converged", ""), 0.01, 0.02)[0] == "no_dependence_detected"
    assert judged(Judge(), ("overfit", "why"), 0.45, 0.02) == ("overfit", "why")
    Judge.loose_bound = True
    assert judged(Judge(), ("converged", ""), 0.45, 0.02)[0] == "loose_bound"
