"""The reference table's outliers, re-run with the setting that explains each (docs/reference-table.md,
"Outliers and what explains them").

    python benchmarks/bench_outliers.py [--cases mienf-student,...] [--seeds 0,1] [--out FILE]

Each case runs estimators on a task of the table (the reference table's pairs: n = 5,000 on BMI's tasks,
10,000 on the images and the 10-d Gaussian, the sample protocol's draw) at their default and at the variation
that tests an explanation, and prints the estimates (bits) with the truth:

* ``mienf-student``: ``mienf`` / ``mienf-tridiag`` on the Student-t 5 x 5 with identity dispersion (dof 2),
  whose dependence is the shared scale, with no linear correlation, beside the dense Gaussian 5 x 5 (the
  control); at the default 2,000 steps and at 10,000.  Also the largest absolute correlation of the fitted
  base between the two sides' latents.
* ``doe-flow-wide``: ``doe-flow`` on BMI's 2-pair Gaussian 25 x 25 (and the dense 5 x 5, the control) with
  its RealNVP flows and with zuko's masked autoregressive flows (the family ``ba``, ``gm-flow`` and
  ``l1out`` use).
* ``generative-n``: ``ba``, ``fmmi-c`` and ``fmmi-j`` on the 2-pair Gaussian 25 x 25 (the normal-score map
  makes its normal-CDF version the same task for them) at n = 5,000, 20,000 and 50,000: an error that
  shrinks with n is the finite sample's, not a defect of the defaults.
* ``ksg-dims``: ``ksg`` (k = 3) on BMI's Gaussians of growing dimension: the 2-pair sparse ones keep
  1.47 bits at 3, 5 and 25 dimensions a side, the dense ones grow from 2 to 50; the status column shows
  ``high_dimensional``, which depends on the dimension alone (more than 3 a side).
* ``fmmi-j-wide``: ``fmmi-j`` and ``fmmi-c`` on BMI's dense Gaussians 5 x 5, 25 x 25 and 50 x 50 (and
  ``fmmi-j`` at 10,000 steps on the 50 x 50), with the estimate's parts from t < 1/2 and t >= 1/2 beside
  their Gaussian closed form: the path between independent endpoints narrows and widens again, so each
  part grows with the dimension and the MI is their small difference.
* ``minde-c-budget``: ``minde-c`` on the 2-pair Gaussian 5 x 5 (for it the same task as its normal-CDF and
  half-cube versions) and the Student-t 5 x 5 at its default 2,000 steps of 256 and at the MINDE authors'
  9,300 steps of 128: how much of the gap the budget closes.
* ``minde-spiral``: ``minde-c`` on the spiral version of BMI's 2-pair Gaussian 3 x 3 (the plain task, the
  control) at its default budget and at the MINDE authors' 9,300 steps of 128.
* ``doe-flow-n``: ``doe-flow`` on the 2-pair Gaussian 25 x 25 and the dense 50 x 50 at n = 5,000 and
  20,000: whether its gaps there (low at 25 x 25, high at 50 x 50; ``hybrid-resampled``, whose DoE part it
  is, reads the same seed by seed) shrink with the sample.
* ``doe-flow-spiral``: ``doe-flow`` on the spiral versions of BMI's 2-pair Gaussian 3 x 3 and 25 x 25 (the plain
  tasks, the controls) at n = 5,000 and 20,000, and on the spiral 3 x 3 at 8,000 steps (default 2,000): whether
  its gap on the spirals is the dimension's, the sample's or the budget's.
* ``fdime-kl-n``: ``f-dime-kl`` (a critic, through ``mibench.estimate`` at its defaults) on the dense 50 x 50
  at n = 5,000 and 20,000.
* ``fmmi-j-n``: ``fmmi-j`` on the 2-pair Gaussian 5 x 5 at n = 5,000 and 20,000.
* ``minde-j-budget``: ``minde-j`` on the spiral 2-pair Gaussian 3 x 3 and the plain one at its default budget
  and at the MINDE authors' 9,300 steps of 128.
* ``minde-j-student``: ``minde-j`` on the Student-t 2 x 2 with dof 1 (and ``minde-c`` there, the control) at
  its default budget and at the MINDE authors' 9,300 steps of 128.
* ``gaussian-10d``: ``minde-c`` and ``ba`` on the sample leaderboard's 10-d Gaussian at 4 bits (the table's
  n = 10,000): ``minde-c`` at its default budget and at the MINDE authors' 9,300 steps of 128, ``ba`` at
  n = 10,000 and 40,000.
* ``ksg-10d``: ``ksg`` on the 10-d Gaussian at 1, 2 and 4 bits, at n = 10,000 and 40,000: how its
  ``high_dimensional`` bias grows with the MI and shrinks with n.
* ``fdime-kl-readout``: ``f-dime-kl`` on the dense 50 x 50 (``mibench.estimate``'s defaults): its readout
  E_p[log R] for each per-column map beside the InfoNCE bound of the same critic on the same held-out pairs
  (``settings["preprocess_infonce"]``, what ``preprocess="auto"`` chooses by), in bits.
* ``fmmi-j-readout``: ``fmmi-j`` on BMI's 2-pair Gaussian 5 x 5 at its default (2,000 steps, 8 readout
  passes), with 64 and 256 readout passes, and at 8,000 steps.
* ``doe-flow-budget``: ``doe-flow`` on the 2-pair Gaussian 25 x 25 at n = 20,000 with its default budget and
  with 8,000 steps.
* ``doe-flow-parts``: ``doe-flow`` on the 2-pair Gaussian 25 x 25 at n = 20,000 given all coordinates, x's two
  dependent ones only, y's two only, and both (the same MI: the other coordinates are independent of all),
  with each flow's held-out cross-entropy above its exact entropy: which flow's excess makes the gap.
* ``fmmi-j-parts``: ``fmmi-j`` on the 2-pair Gaussian 5 x 5 (n = 5,000) given all coordinates and given the two
  dependent ones a side (the same MI), each with its two parts beside their Gaussian closed form.
* ``fmmi-j-bins``: ``fmmi-j`` on the 2-pair Gaussian 5 x 5 (n = 5,000; 64 readout passes) given all coordinates and
  the two dependent ones a side: the estimate's part from each eighth of the path, h(p_a) - h(p_b) for t in
  [a, b), beside its Gaussian closed form: where along the path the bias sits.
* ``fmmi-j-field``: ``fmmi-j`` with its velocity MLP as is and with the field of the independent standard-normal
  path added to it, v(z, t) = (2t - 1) / ((1 - t)^2 + t^2) z + MLP(z, t) (exact where every coordinate is
  independent, the data-free part of the field, which is z at t = 1), on the 2-pair Gaussian 5 x 5, the dense
  50 x 50 and the Student-t 5 x 5 (dof 2): whether the part the MLP misses is that data-free part; with each
  eighth of the path's error against the Gaussian closed form where the task is Gaussian.
* ``raw-candidate``: ``infonce`` (``mibench.estimate``) on mutinfo's rectangles 16 x 16 (1.44 and 3.61 bits) and
  32 x 32 (3.61) and the Gaussian bumps 16 x 16 (3.61), n = 10,000: on the reduced inputs alone (``reduce=True``),
  on the pixels (``reduce=False``) and by the default, which trains both and keeps the higher held-out bound.
* ``channel-n``: ``infonce`` (``mibench.estimate``) on mutinfo's MNIST label channel at 1.44 bits (two MNIST
  images whose classes pass a 10-ary symmetric channel) at n = 10,000 and 40,000.
* ``channel-twin``: ``minde-j`` and ``fmmi-c`` on the MNIST label channel at 1.44 and 2.89 bits and on its
  Gaussian-mixture twin: the canonical variates the estimators see (the default reduction, rank 9), fitted as
  ten class means with one pooled within-class covariance a side, the same channel on the classes, so the truth
  is known (Monte Carlo over 200,000 pairs of the exact mixture densities); the twin at n = 10,000 and 40,000
  and at 8,000 steps (default 2,000), and a Gaussian with the twin's covariance (its closed-form MI), the
  control.
* ``start-choice``: critics through ``mibench.estimate`` on mutinfo's Gaussian bumps 16 x 16 at 2.5 and 5 nats
  (n = 10,000, reduced to canonical variates) started from the fitted Gaussian, without it, and by the default
  (the higher held-out bound of the two); and ``nwj`` on a 150 x 150 Gaussian with four correlated pairs
  (rho 0.9, 4.79 bits), where the Gaussian holds.
* ``critic-wide``: the held-out readout's finite-sample gap on BMI's dense 50 x 50: the fitted Gaussian log
  density ratio (the right family for this task, the critics' start) fitted on the 80% training pairs and
  read on those and on the 20% held out, at n = 5,000 and 20,000 (no training: closed forms).
* ``image-manifold``: the density estimators on mutinfo's Gaussian bumps 16 x 16 at 2.5 nats (n = 10,000, the
  table's draw) and on the same pairs' latents (decoded from the images, each side's two latent coordinates
  through the normal quantile: the same MI, with a density), beside each side's intrinsic dimension (the
  TwoNN estimate of Facco et al. 2017 on the pixels): the images lie on a 2-d manifold in 256 dimensions.
* ``js-spiral``: ``js`` and ``infonce`` (critics, through ``mibench.estimate``) on the spiral version of BMI's
  2-pair Gaussian 3 x 3 at the defaults, without the Gaussian start, and with a critic of 2 x 256 (the default
  is data-sized: 1 x 64 at n = 5,000) trained up to 10,000 steps with patience 20, and at n = 20,000 and
  50,000.
* ``gaussian-wide``: ``gaussian`` (the closed form on the sample covariance) on BMI's dense 25 x 25 and
  50 x 50 at n = 3,000, 5,000 and 20,000 beside the plug-in's first-order bias dx dy / (2n) nats: the readouts
  that rest on a Gaussian fitted to n pairs (``gaussian``; ``mienf``'s base, fitted to its training pairs)
  read that much above the truth however well they fit.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


LN2 = math.log(2)


def machine_line() -> str:
    import os
    import platform

    import torch

    return (f"torch {torch.__version__}, 1 thread, {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.2f}, {platform.machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def draw(task_name: str, n: int, seed: int, bits: float | None = None):
    """``n`` pairs of ``task_name`` (``seed``) at ``bits``, by default the task's fixed level: (x, y, truth)."""
    from mibench.protocols.sample.run import draw_dataset
    from mibench.tasks import make_task

    task = make_task(task_name)
    bits = task.mi_bits if bits is None else bits
    x, y = draw_dataset(task, n, bits, seed)
    return x, y, bits


def estimate_bits(name: str, task: str, n: int, seed: int, bits: float | None = None, **settings):
    """Draw ``task`` (n pairs, ``seed``, at ``bits`` or its fixed level), build estimator ``name`` with
    ``settings`` and estimate: (the estimator, its estimate in bits, the truth in bits, seconds)."""
    from mibench.estimators import ESTIMATORS

    x, y, truth = draw(task, n, seed, bits)
    est = ESTIMATORS.get(name).obj(**settings)
    t0 = time.perf_counter()
    value = est.estimate(x, y, seed=seed) / LN2
    return est, value, truth, time.perf_counter() - t0


def mienf_student(seeds, emit) -> None:
    emit("# case mienf-student: task, estimator, steps, seed, estimate (bits), truth (bits), largest |latent "
         "correlation| across the sides, seconds")
    for task in ("student-identity-5-5-2", "multinormal-dense-5-5-0.5"):
        for name in ("mienf", "mienf-tridiag"):
            for steps in (2000, 10000):
                for seed in seeds:
                    est, value, truth, secs = estimate_bits(name, task, 5000, seed, steps=steps)
                    corr = float(est.last.get("cross_correlation", float("nan")))
                    emit(f"{task:<28} {name:<14} {steps:>6} {seed:>3} {value:8.3f} {truth:8.3f} {corr:8.3f} "
                         f"{secs:7.1f}")


def doe_flow_wide(seeds, emit) -> None:
    emit("# case doe-flow-wide: task, flows, seed, estimate (bits), truth (bits), status, seconds")
    for task in ("multinormal-sparse-25-25-2-2.0", "multinormal-dense-5-5-0.5"):
        for flows in ("realnvp", "zuko-maf"):
            for seed in seeds:
                est, value, truth, secs = estimate_bits("doe-flow", task, 5000, seed, flows=flows)
                emit(f"{task:<32} {flows:<9} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} {secs:7.1f}")


def generative_n(seeds, emit) -> None:
    emit("# case generative-n: task, estimator, n, seed, estimate (bits), truth (bits), status, seconds")
    task = "multinormal-sparse-25-25-2-2.0"
    for name in ("ba", "fmmi-c", "fmmi-j"):
        for n in (5000, 20000, 50000):
            for seed in seeds:
                est, value, truth, secs = estimate_bits(name, task, n, seed)
                emit(f"{task:<32} {name:<8} {n:>6} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} {secs:7.1f}")


def ksg_dims(seeds, emit) -> None:
    emit("# case ksg-dims: task, dims a side, seed, estimate (bits), truth (bits), error (bits), status, seconds")
    for task, d in (("1v1-normal-0.75", 1), ("multinormal-dense-2-2-0.5", 2), ("multinormal-dense-3-3-0.5", 3),
                    ("multinormal-sparse-3-3-2-2.0", 3), ("multinormal-dense-5-5-0.5", 5),
                    ("multinormal-sparse-5-5-2-2.0", 5), ("multinormal-sparse-25-25-2-2.0", 25),
                    ("multinormal-dense-25-25-0.5", 25), ("multinormal-dense-50-50-0.5", 50)):
        for seed in seeds:
            est, value, truth, secs = estimate_bits("ksg", task, 5000, seed)
            emit(f"{task:<32} {d:>3} {seed:>3} {value:8.3f} {truth:8.3f} {value - truth:+8.3f} {est.status or '-':<17} "
                 f"{secs:6.1f}")


def _path_bins(x, y, bins: int = 8) -> list[float]:
    """fmmi-j's parts over ``bins`` equal bins of t in closed form for a Gaussian with the sample's correlation
    (nats): the path (1 - t) z_0 + t z_1 between independent z_0 ~ N(0, C_0) (the product of marginals) and
    z_1 ~ N(0, C_1) has covariance S_t = (1 - t)^2 C_0 + t^2 C_1, and the part of bin [a, b) is
    h(p_a) - h(p_b) = (log det S_a - log det S_b) / 2; with ``bins=2``, the halves h(p_0) - h(p_1/2) and
    h(p_1/2) - h(p_1)."""
    import numpy as np

    c1 = np.corrcoef(np.hstack([np.asarray(x, float), np.asarray(y, float)]), rowvar=False)
    dx = np.asarray(x).shape[1]
    c0 = c1.copy()
    c0[:dx, dx:] = 0
    c0[dx:, :dx] = 0
    logdet = [np.linalg.slogdet((1 - t) ** 2 * c0 + t ** 2 * c1)[1] for t in np.linspace(0, 1, bins + 1)]
    return [0.5 * (a - b) for a, b in zip(logdet[:-1], logdet[1:])]


def fmmi_j_wide(seeds, emit) -> None:
    emit("# case fmmi-j-wide: task, estimator, steps, seed, estimate (bits), truth (bits), the estimate's parts from "
         "t < 1/2 and t >= 1/2 (nats), the Gaussian closed form of fmmi-j's parts (nats), status, seconds")
    for task in ("multinormal-dense-5-5-0.5", "multinormal-dense-25-25-0.5", "multinormal-dense-50-50-0.5"):
        x, y, _ = draw(task, 5000, 0)
        exact = "{:8.2f} {:8.2f}".format(*_path_bins(x, y, 2))
        for name, steps in (("fmmi-j", 2000), ("fmmi-c", 2000), ("fmmi-j", 10000)):
            if steps > 2000 and not task.startswith("multinormal-dense-50"):
                continue
            for seed in (seeds if steps == 2000 else seeds[:1]):
                est, value, truth, secs = estimate_bits(name, task, 5000, seed, steps=steps)
                parts = f"{est.last['path_first_half']:8.2f} {est.last['path_second_half']:8.2f}"
                emit(f"{task:<28} {name:<7} {steps:>6} {seed:>3} {value:8.3f} {truth:8.3f} {parts} "
                     f"{exact if name == 'fmmi-j' else '       -        -'} {est.status:<16} {secs:6.1f}")


def doe_flow_n(seeds, emit) -> None:
    emit("# case doe-flow-n: task, n, seed, estimate (bits), truth (bits), status, seconds")
    for task in ("multinormal-sparse-25-25-2-2.0", "multinormal-dense-50-50-0.5"):
        for n in (5000, 20000):
            for seed in seeds:
                est, value, truth, secs = estimate_bits("doe-flow", task, n, seed)
                emit(f"{task:<32} {n:>6} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} {secs:6.1f}")


def doe_flow_spiral(seeds, emit) -> None:
    emit("# case doe-flow-spiral: task, n, steps, seed, estimate (bits), truth (bits), status, seconds")
    runs = [(f"{kind}multinormal-sparse-{d}-{d}-2-2.0", n, 2000) for d in (3, 25) for kind in ("spiral-", "")
            for n in (5000, 20000)]
    runs.append(("spiral-multinormal-sparse-3-3-2-2.0", 20000, 8000))
    for task, n, steps in runs:
        for seed in seeds:
            est, value, truth, secs = estimate_bits("doe-flow", task, n, seed, steps=steps)
            emit(f"{task:<38} {n:>6} {steps:>5} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} {secs:6.1f}")


def fdime_kl_n(seeds, emit) -> None:
    import mibench

    emit("# case fdime-kl-n: task, n, seed, estimate (bits), truth (bits), status, seconds")
    task = "multinormal-dense-50-50-0.5"
    for n in (5000, 20000):
        for seed in seeds:
            x, y, truth = draw(task, n, seed)
            res = mibench.estimate(x, y, estimator="f-dime-kl", seed=seed)
            emit(f"{task:<32} {n:>6} {seed:>3} {res.mi:8.3f} {truth:8.3f} {res.status:<16} {res.seconds:6.1f}")


def fmmi_j_n(seeds, emit) -> None:
    emit("# case fmmi-j-n: task, n, seed, estimate (bits), truth (bits), status, seconds")
    for n in (5000, 20000):
        for seed in seeds:
            est, value, truth, secs = estimate_bits("fmmi-j", "multinormal-sparse-5-5-2-2.0", n, seed)
            emit(f"{'multinormal-sparse-5-5-2-2.0':<32} {n:>6} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} "
                 f"{secs:6.1f}")


def critic_wide(seeds, emit) -> None:
    import numpy as np

    emit("# case critic-wide: n, seed, the fitted Gaussian log ratio's mean on its training pairs and on the held-out "
         "ones (bits), truth (bits), dx dy / (2 n_train) in bits")
    task = "multinormal-dense-50-50-0.5"

    def log_ratio(c, d, a, b):
        def logpdf(cov, v):
            return -0.5 * (np.einsum("ij,ij->i", v @ np.linalg.inv(cov), v) + np.linalg.slogdet(cov)[1])
        return logpdf(c, np.hstack([a, b])) - logpdf(c[:d, :d], a) - logpdf(c[d:, d:], b)

    for n in (5000, 20000):
        for seed in seeds:
            x, y, truth = draw(task, n, seed)
            perm = np.random.default_rng(seed).permutation(n)
            tr, te = perm[:int(0.8 * n)], perm[int(0.8 * n):]
            x, y = x - x[tr].mean(0), y - y[tr].mean(0)
            d = x.shape[1]
            c = np.cov(np.hstack([x[tr], y[tr]]), rowvar=False)
            on_train, held_out = (float(log_ratio(c, d, x[r], y[r]).mean()) / LN2 for r in (tr, te))
            emit(f"{n:>6} {seed:>3} {on_train:8.3f} {held_out:8.3f} {truth:8.3f} {d * d / (2 * len(tr)) / LN2:8.3f}")


def _budget(case: str, name: str, tasks: tuple, seeds, emit) -> None:
    """``name`` on ``tasks`` at its default 2,000 steps of 256 and at the MINDE authors' 9,300 of 128."""
    emit(f"# case {case}: task, steps, batch, seed, estimate (bits), truth (bits), status, seconds")
    for task in tasks:
        for steps, batch in ((2000, 256), (9300, 128)):
            for seed in seeds:
                est, value, truth, secs = estimate_bits(name, task, 5000, seed, steps=steps, batch_size=batch)
                emit(f"{task:<36} {steps:>5} {batch:>4} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} "
                     f"{secs:6.1f}")


def minde_c_budget(seeds, emit) -> None:
    _budget("minde-c-budget", "minde-c", ("multinormal-sparse-5-5-2-2.0", "student-identity-5-5-2"), seeds, emit)


def minde_spiral(seeds, emit) -> None:
    _budget("minde-spiral", "minde-c", ("spiral-multinormal-sparse-3-3-2-2.0", "multinormal-sparse-3-3-2-2.0"), seeds,
            emit)


def minde_j_budget(seeds, emit) -> None:
    _budget("minde-j-budget", "minde-j", ("spiral-multinormal-sparse-3-3-2-2.0", "multinormal-sparse-3-3-2-2.0"),
            seeds, emit)


def gaussian_wide(seeds, emit) -> None:
    emit("# case gaussian-wide: task, n, seed, estimate (bits), truth (bits), error (bits), dx dy / (2n) in bits")
    for task, d in (("multinormal-dense-25-25-0.5", 25), ("multinormal-dense-50-50-0.5", 50)):
        for n in (3000, 5000, 20000):
            for seed in seeds:
                _, value, truth, _ = estimate_bits("gaussian", task, n, seed)
                emit(f"{task:<28} {n:>6} {seed:>3} {value:8.3f} {truth:8.3f} {value - truth:+8.3f} "
                     f"{d * d / (2 * n) / LN2:8.3f}")


def image_manifold(seeds, emit) -> None:
    import numpy as np
    import torch
    from scipy.special import ndtri

    from mibench.estimators import ESTIMATORS
    from mibench.estimators.intrinsic import two_nn_dimension
    from mibench.tasks.mutinfo_images import decode_latents

    emit("# case image-manifold: inputs, estimator, seed, estimate (bits), truth (bits), status, seconds; "
         "then each side's TwoNN intrinsic dimension")
    name, n, bits = "mutinfo-gaussian2d-16x16", 10000, 2.5 / LN2
    for seed in seeds:
        x, y, _ = draw(name, n, seed, bits)
        lat = [ndtri(np.clip(decode_latents("gaussian2d", torch.as_tensor(a).reshape(-1, 16, 16)).double().numpy(),
                             1e-12, 1 - 1e-12)) for a in (x, y)]
        if seed == seeds[0]:
            emit(f"# intrinsic dimension (TwoNN), seed {seed}: x {two_nn_dimension(x):.2f} of {x.shape[1]}, "
                 f"y {two_nn_dimension(y):.2f} of {y.shape[1]}; latents x {two_nn_dimension(lat[0]):.2f} of 2")
        for est_name in ("fmmi-c", "fmmi-j", "mienf", "mienf-tridiag", "doe-flow", "minde-c", "ksg"):
            for label, (a, b) in (("images", (x, y)), ("latents", lat)):
                est = ESTIMATORS.get(est_name).obj()
                t0 = time.perf_counter()
                value = est.estimate(np.asarray(a), np.asarray(b), seed=seed) / LN2
                emit(f"{label:<8} {est_name:<14} {seed:>3} {value:9.3f} {bits:8.3f} {est.status or '-':<18} "
                     f"{time.perf_counter() - t0:7.1f}")


def js_spiral(seeds, emit) -> None:
    import mibench

    emit("# case js-spiral: estimator, setting, seed, estimate (bits), truth (bits), status, steps run, seconds")
    task = "spiral-multinormal-sparse-3-3-2-2.0"
    variants = (("default", 5000, {}), ("no start", 5000, {"gaussian_critic": False}),
                ("2 x 256, 10k steps", 5000, {"hidden": 256, "layers": 2, "steps": 10000, "patience": 20}),
                ("n = 20,000", 20000, {}), ("n = 50,000", 50000, {}))
    for name in ("js", "infonce"):
        for label, n, kw in variants:
            for seed in seeds:
                x, y, truth = draw(task, n, seed)
                r = mibench.estimate(x, y, estimator=name, seed=seed, **kw)
                emit(f"{name:<8} {label:<20} {seed:>3} {r.mi:8.3f} {truth:8.3f} {r.status:<16} {r.steps_run:>6} "
                     f"{r.seconds:7.1f}")


def minde_j_student(seeds, emit) -> None:
    for name in ("minde-j", "minde-c"):
        _budget(f"minde-j-student ({name})", name, ("student-identity-2-2-1",), seeds, emit)


def gaussian_10d(seeds, emit) -> None:
    emit("# case gaussian-10d: estimator, setting, n, seed, estimate (bits), truth (bits), status, seconds")
    runs = (("minde-c", "default", 10000, {}), ("minde-c", "9,300 x 128", 10000, {"steps": 9300, "batch_size": 128}),
            ("ba", "default", 10000, {}), ("ba", "default", 40000, {}))
    for name, label, n, kw in runs:
        for seed in seeds:
            est, value, truth, secs = estimate_bits(name, "gaussian", n, seed, 4.0, **kw)
            emit(f"{name:<8} {label:<12} {n:>6} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} {secs:7.1f}")


def ksg_10d(seeds, emit) -> None:
    emit("# case ksg-10d: n, seed, estimate (bits), truth (bits), error (bits), status, seconds")
    for bits in (1.0, 2.0, 4.0):
        for n in (10000, 40000):
            for seed in seeds:
                est, value, truth, secs = estimate_bits("ksg", "gaussian", n, seed, bits)
                emit(f"{n:>6} {seed:>3} {value:8.3f} {truth:8.3f} {value - truth:+8.3f} {est.status or '-':<17} "
                     f"{secs:7.1f}")


def fdime_kl_readout(seeds, emit) -> None:
    import mibench

    emit("# case fdime-kl-readout: seed, map, KL readout (bits), InfoNCE of the same critic (bits), truth (bits), "
         "chosen map, status")
    task = "multinormal-dense-50-50-0.5"
    for seed in seeds:
        x, y, truth = draw(task, 5000, seed)
        r = mibench.estimate(x, y, estimator="f-dime-kl", seed=seed)
        values, infonce = r.settings["preprocess_values"], r.settings["preprocess_infonce"]
        for prep in values:
            emit(f"{seed:>3} {prep:<14} {values[prep] / LN2:8.3f} {infonce[prep] / LN2:8.3f} {truth:8.3f} "
                 f"{r.settings['preprocess']:<14} {r.status}")


def fmmi_j_readout(seeds, emit) -> None:
    emit("# case fmmi-j-readout: setting, seed, estimate (bits), truth (bits), status, seconds")
    task = "multinormal-sparse-5-5-2-2.0"
    for label, kw in (("default", {}), ("64 passes", {"readout_passes": 64}), ("256 passes", {"readout_passes": 256}),
                      ("8,000 steps", {"steps": 8000})):
        for seed in seeds:
            est, value, truth, secs = estimate_bits("fmmi-j", task, 5000, seed, **kw)
            emit(f"{label:<12} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} {secs:7.1f}")


def doe_flow_budget(seeds, emit) -> None:
    emit("# case doe-flow-budget: task, n, steps, seed, estimate (bits), truth (bits), status, seconds")
    task = "multinormal-sparse-25-25-2-2.0"
    for steps in (None, 8000):
        for seed in seeds:
            est, value, truth, secs = estimate_bits("doe-flow", task, 20000, seed,
                                                    **({} if steps is None else {"steps": steps}))
            emit(f"{task:<32} 20000 {steps or 'default':>7} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} "
                 f"{secs:7.1f}")


def doe_flow_parts(seeds, emit) -> None:
    import numpy as np

    from mibench.estimators import ESTIMATORS

    emit("# case doe-flow-parts: coordinates given (x, y), seed, estimate (bits), truth (bits), each flow's held-out "
         "cross-entropy above its exact entropy (nats: q(y), q(y|x)), status, seconds")
    task, half_log = "multinormal-sparse-25-25-2-2.0", 0.5 * math.log(2 * math.pi * math.e)
    for seed in seeds:
        x, y, truth = draw(task, 20000, seed)
        for label, cx, cy in (("25, 25", 25, 25), ("2, 25", 2, 25), ("25, 2", 25, 2), ("2, 2", 2, 2)):
            est = ESTIMATORS.get("doe-flow").obj()
            t0 = time.perf_counter()
            value = est.estimate(np.ascontiguousarray(x[:, :cx]), np.ascontiguousarray(y[:, :cy]), seed=seed) / LN2
            secs = time.perf_counter() - t0
            h_y = cy * half_log                   # y's normal scores: cy independent unit normals
            excess_y = est.last["h_y"] - h_y
            excess_y_given_x = est.last["h_y_given_x"] - (h_y - truth * LN2)
            emit(f"{label:<7} {seed:>3} {value:8.3f} {truth:8.3f} {excess_y:8.3f} {excess_y_given_x:8.3f} "
                 f"{est.status:<16} {secs:6.1f}")


def fmmi_j_parts(seeds, emit) -> None:
    import numpy as np

    from mibench.estimators import ESTIMATORS

    emit("# case fmmi-j-parts: coordinates given a side, seed, estimate (bits), truth (bits), the estimate's parts "
         "from t < 1/2 and t >= 1/2 (nats), their Gaussian closed form (nats), each part's error (nats), status, "
         "seconds")
    for seed in seeds:
        x, y, truth = draw("multinormal-sparse-5-5-2-2.0", 5000, seed)
        for d in (5, 2):
            xs, ys = np.ascontiguousarray(x[:, :d]), np.ascontiguousarray(y[:, :d])
            est = ESTIMATORS.get("fmmi-j").obj()
            t0 = time.perf_counter()
            value = est.estimate(xs, ys, seed=seed) / LN2
            secs = time.perf_counter() - t0
            got = (est.last["path_first_half"], est.last["path_second_half"])
            exact = _path_bins(xs, ys, 2)
            emit(f"{d:>2} {seed:>3} {value:8.3f} {truth:8.3f} {got[0]:8.3f} {got[1]:8.3f} {exact[0]:8.3f} "
                 f"{exact[1]:8.3f} {got[0] - exact[0]:+8.3f} {got[1] - exact[1]:+8.3f} {est.status:<16} {secs:6.1f}")


def fmmi_j_bins(seeds, emit) -> None:
    import numpy as np

    from mibench.estimators import ESTIMATORS

    emit("# case fmmi-j-bins: coordinates a side, seed, estimate (bits), truth (bits); then per eighth of the path "
         "(t from a to b): the estimate's part, its Gaussian closed form and the difference (nats)")
    for seed in seeds:
        x, y, truth = draw("multinormal-sparse-5-5-2-2.0", 5000, seed)
        for d in (5, 2):
            xs, ys = np.ascontiguousarray(x[:, :d]), np.ascontiguousarray(y[:, :d])
            est = ESTIMATORS.get("fmmi-j").obj(readout_passes=64)
            value = est.estimate(xs, ys, seed=seed) / LN2
            emit(f"{d:>2} {seed:>3} {value:8.3f} {truth:8.3f} {est.status}")
            exact = _path_bins(xs, ys)
            for i, (got, want) in enumerate(zip(est.last["path_parts"], exact)):
                emit(f"   t {i / 8:5.3f}-{(i + 1) / 8:5.3f} {got:8.3f} {want:8.3f} {got - want:+8.3f}")


def _fmmi_with_reference_field():
    """``fmmi-j`` whose velocity network adds the exact field of the independent standard-normal path
    (``fmmi-j-field``): a bench variant, not a registered estimator."""
    from torch import nn

    from mibench.estimators.generative.fmmi import FMMI

    class WithReferenceField(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, z, t, context=None):
            return ((2 * t - 1) / ((1 - t) ** 2 + t ** 2)).unsqueeze(1) * z + self.net(z, t, context)

    class FMMIField(FMMI):
        def models(self, dx, dy):
            return {k: WithReferenceField(m) for k, m in super().models(dx, dy).items()}

    return FMMIField


def fmmi_j_field(seeds, emit) -> None:
    from mibench.estimators.generative.fmmi import FMMI

    emit("# case fmmi-j-field: task, field, seed, estimate (bits), truth (bits), status, seconds; then each eighth's "
         "error against the Gaussian closed form (nats), where the task is Gaussian")
    variants = (("MLP", FMMI), ("reference+MLP", _fmmi_with_reference_field()))
    for task in ("multinormal-sparse-5-5-2-2.0", "multinormal-dense-50-50-0.5", "student-identity-5-5-2"):
        for seed in seeds:
            x, y, truth = draw(task, 5000, seed)
            exact = _path_bins(x, y) if task.startswith("multinormal") else None
            for label, cls in variants:
                est = cls(joint=True)
                t0 = time.perf_counter()
                value = est.estimate(x, y, seed=seed) / LN2
                emit(f"{task:<28} {label:<14} {seed:>3} {value:8.3f} {truth:8.3f} {est.status:<16} "
                     f"{time.perf_counter() - t0:6.1f}")
                if exact is not None:
                    emit("   " + " ".join(f"{g - w:+7.3f}" for g, w in zip(est.last["path_parts"], exact)))


def raw_candidate(seeds, emit) -> None:
    import mibench

    emit("# case raw-candidate: data, level (bits), inputs, seed, estimate (bits), status, inputs kept, seconds")
    setups = (("mutinfo-rectangles2d-16x16", 1.442695), ("mutinfo-rectangles2d-16x16", 3.606738),
              ("mutinfo-rectangles2d-32x32", 3.606738), ("mutinfo-gaussian2d-16x16", 3.606738))
    for task, bits in setups:
        for seed in seeds:
            x, y, _ = draw(task, 10000, seed, bits)
            for label, reduce in (("reduced", True), ("raw", False), ("default", None)):
                r = mibench.estimate(x, y, estimator="infonce", seed=seed, reduce=reduce)
                kept = "reduced" if r.settings["reduce"] else "raw"
                emit(f"{task:<28} {bits:6.3f} {label:<8} {seed:>3} {r.mi:8.3f} {r.status:<16} {kept:<8} "
                     f"{r.seconds:6.1f}")


def channel_n(seeds, emit) -> None:
    import mibench

    emit("# case channel-n: level (bits), n, seed, estimate (bits), status, inputs kept, seconds")
    for n in (10000, 40000):
        for seed in seeds:
            x, y, bits = draw("mutinfo-channel-mnist", n, seed, 1.442695)
            r = mibench.estimate(x, y, estimator="infonce", seed=seed)
            kept = "reduced" if r.settings["reduce"] else "raw"
            emit(f"{bits:6.3f} {n:>6} {seed:>3} {r.mi:8.3f} {r.status:<16} {kept:<8} {r.seconds:6.1f}")


def _channel_twin(bits: float):
    """The Gaussian-mixture twin of the label channel's reduced pairs at ``bits`` (``channel-twin``):
    (sample(n, seed) -> (x, y), truth in bits, the exact mixture model's mean log ratio on the real pairs)."""
    import numpy as np
    import torch

    from mibench.estimators.reduce import apply_reduction, fit_canonical_reduction
    from mibench.tasks import make_task

    task = make_task("mutinfo-channel-mnist")
    x, y, cx, cy = task.sample_with_classes(10000, bits, torch.Generator().manual_seed(0))
    x, y, cx, cy = x.double().numpy(), y.double().numpy(), cx.numpy(), cy.numpy()
    rows = np.arange(len(x))
    a, b, _ = fit_canonical_reduction(x, y, rows, 0)
    sides = []
    for z, c in ((apply_reduction(x, a, rows), cx), (apply_reduction(y, b, rows), cy)):
        means = np.stack([z[c == k].mean(0) for k in range(task.k)])
        resid = z - means[c]
        sides.append((means, np.linalg.cholesky(resid.T @ resid / len(z))))
    eps = task.error_probability(bits)
    log_p = np.log(np.where(np.eye(task.k, dtype=bool), (1 - eps) / task.k, eps / ((task.k - 1) * task.k)))

    def log_normal(z, means, chol):       # (n, k): log N(z; mean_c, chol chol^T) for each class c
        d = (z[:, None, :] - means[None]).reshape(-1, z.shape[1])
        w = np.linalg.solve(chol, d.T).T.reshape(len(z), len(means), -1)
        return -0.5 * (w ** 2).sum(-1) - np.log(np.diag(chol)).sum() - 0.5 * z.shape[1] * math.log(2 * math.pi)

    def mean_log_ratio(xs, ys):
        lx, ly = log_normal(xs, *sides[0]), log_normal(ys, *sides[1])
        joint = torch.logsumexp(torch.as_tensor(lx[:, :, None] + ly[:, None, :] + log_p[None]).flatten(1), 1)
        mx = torch.logsumexp(torch.as_tensor(lx), 1) - math.log(task.k)
        my = torch.logsumexp(torch.as_tensor(ly), 1) - math.log(task.k)
        return float((joint - mx - my).mean()) / LN2

    def sample(n, seed):
        rng = np.random.default_rng(seed)
        c = rng.integers(0, task.k, n)
        c2 = np.where(rng.random(n) < eps, (c + rng.integers(1, task.k, n)) % task.k, c)
        (m1, l1), (m2, l2) = sides
        return (m1[c] + rng.standard_normal((n, len(l1))) @ l1.T, m2[c2] + rng.standard_normal((n, len(l2))) @ l2.T)

    real = mean_log_ratio(apply_reduction(x, a, rows), apply_reduction(y, b, rows))
    return sample, mean_log_ratio(*sample(200000, 12345)), real


def channel_twin(seeds, emit) -> None:
    import numpy as np

    import mibench

    emit("# case channel-twin: level (bits), data, estimator, n, steps, seed, estimate (bits), truth (bits), status, "
         "seconds")
    for bits in (1.442695, 2.88539):
        sample, truth, real = _channel_twin(bits)
        emit(f"# level {bits:.3f}: twin truth {truth:.3f} bits; the twin's mixture model on the real reduced pairs "
             f"reads {real:.3f}")
        xt, yt = sample(400000, 999)           # the control: a Gaussian with the twin's covariance
        cov = np.cov(np.hstack([xt, yt]).T)
        d = xt.shape[1]
        gauss = 0.5 * (np.linalg.slogdet(cov[:d, :d])[1] + np.linalg.slogdet(cov[d:, d:])[1]
                       - np.linalg.slogdet(cov)[1]) / LN2
        for name in ("minde-j", "fmmi-c"):
            for seed in seeds:
                xr, yr, _ = draw("mutinfo-channel-mnist", 10000, seed, bits)
                runs = [("mnist", xr, yr, bits, 10000, 2000)]
                runs += [("twin", *sample(n, seed), truth, n, steps) for n, steps in
                         ((10000, 2000), (40000, 2000), (10000, 8000))]
                z = np.random.default_rng(seed).multivariate_normal(np.zeros(2 * d), cov, size=10000)
                runs.append(("gauss-cov", z[:, :d], z[:, d:], gauss, 10000, 2000))
                for label, xs, ys, true_bits, n, steps in runs:
                    r = mibench.estimate(xs, ys, estimator=name, seed=seed, steps=steps)
                    emit(f"{bits:6.3f} {label:<9} {name:<8} {n:>6} {steps:>5} {seed:>3} {r.mi:8.3f} {true_bits:8.3f} "
                         f"{r.status:<16} {r.seconds:6.1f}")


def start_choice(seeds, emit) -> None:
    import numpy as np

    import mibench

    emit("# case start-choice: data, estimator, start, seed, estimate (bits), truth (bits), status, seconds")
    starts = (("gaussian", True), ("none", False), ("default", None))
    for nats in (2.5, 5.0):
        for seed in seeds:
            x, y, _ = draw("mutinfo-gaussian2d-16x16", 10000, seed, nats / LN2)
            for name in ("nwj", "smile-5", "mine", "infonce"):
                for label, start in starts:
                    r = mibench.estimate(x, y, estimator=name, seed=seed, gaussian_critic=start)
                    emit(f"bumps-16x16 {name:<8} {label:<9} {seed:>3} {r.mi:8.3f} {nats / LN2:8.3f} {r.status:<18} "
                         f"{r.seconds:6.1f}")
    d, k, rho = 150, 4, 0.9
    truth = -0.5 * k * math.log(1 - rho * rho) / LN2
    for seed in seeds:
        rng = np.random.default_rng(seed)
        zx, zy = rng.standard_normal((10000, d)), rng.standard_normal((10000, d))
        zy[:, :k] = rho * zx[:, :k] + math.sqrt(1 - rho * rho) * zy[:, :k]
        q = np.linalg.qr(rng.standard_normal((d, d)))[0]
        for label, start in starts:
            r = mibench.estimate(zx @ q, zy @ q.T, estimator="nwj", seed=seed, gaussian_critic=start)
            emit(f"gauss-150  {'nwj':<8} {label:<9} {seed:>3} {r.mi:8.3f} {truth:8.3f} {r.status:<18} {r.seconds:6.1f}")


CASES = {"raw-candidate": raw_candidate, "channel-n": channel_n, "channel-twin": channel_twin,
         "doe-flow-parts": doe_flow_parts,
         "fmmi-j-parts": fmmi_j_parts, "fmmi-j-bins": fmmi_j_bins, "fmmi-j-field": fmmi_j_field,
         "image-manifold": image_manifold, "start-choice": start_choice, "doe-flow-budget": doe_flow_budget,
         "fmmi-j-readout": fmmi_j_readout,
         "fdime-kl-readout": fdime_kl_readout,
         "ksg-10d": ksg_10d,
         "gaussian-10d": gaussian_10d,
         "minde-j-student": minde_j_student,
         "js-spiral": js_spiral,
         "mienf-student": mienf_student, "doe-flow-wide": doe_flow_wide, "generative-n": generative_n,
         "ksg-dims": ksg_dims, "fmmi-j-wide": fmmi_j_wide, "minde-c-budget": minde_c_budget,
         "gaussian-wide": gaussian_wide, "minde-spiral": minde_spiral,
         "critic-wide": critic_wide, "doe-flow-n": doe_flow_n,
         "fdime-kl-n": fdime_kl_n, "doe-flow-spiral": doe_flow_spiral,
         "fmmi-j-n": fmmi_j_n, "minde-j-budget": minde_j_budget}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--out", default=None, help="default: benchmarks/results/outliers_<cases>.txt")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    import torch

    torch.set_num_threads(1)          # every case, as machine_line says
    args.out = args.out or str(REPO / "benchmarks" / "results" / f"outliers_{args.cases.replace(',', '_')}.txt")
    lines = [f"# bench_outliers.py --cases {args.cases} --seeds {args.seeds}; {machine_line()}"]

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)
        Path(args.out).write_text("\n".join(lines) + "\n")

    for case in args.cases.split(","):
        CASES[case](seeds, emit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
