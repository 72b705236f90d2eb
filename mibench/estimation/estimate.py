"""``mibench.estimate``: estimate I(X;Y) on your own paired samples with any registered estimator.

Two paths, by the estimator's kind, after the same input checks (a constant input is MI 0, a
deterministic relation MI infinite, and an unavailable device one line, for every kind):

* a **critic bound** (``infonce``, the default, ``smile``, ``nwj``, ...) trains a critic on 80% of the
  pairs and reports its bound on the held-out 20%, which cannot collapse: strictly increasing
  per-column maps fitted on the training pairs (:mod:`mibench.estimation.preprocess`), a canonical
  reduction above 256 joint dimensions (:mod:`mibench.estimators.reduce`; up to 2,048 the unreduced
  columns are a candidate too), a start at the fitted
  Gaussian (or Student-t) log density ratio (:mod:`mibench.estimation.gaussian_start`), held-out
  checkpoint selection with early stopping (:mod:`mibench.estimation.training`) and a tiled readout of
  the held-out score matrix (:mod:`mibench.estimation.readout`);
* a **sample estimator** (black-box, generative, a plug-in) is called on the arrays; a trained one
  (:class:`~mibench.estimators.trained.HeldOutEstimator`) first gets the call's device, held-out share
  and training options among its typed settings.

The result's ``status`` says how far to trust the number.  docs/estimators.md ("``mibench.estimate`` on
your own arrays") describes the procedure, every status and the defaults, and why they are what they
are.
"""
from __future__ import annotations

import math
import numbers
import sys
import time
import warnings
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from mibench.errors import MibenchError
from mibench.estimation.defaults import TEST_FRACTION
from mibench.estimation.result import EstimateResult, own_n_parameters, own_status
from mibench.estimation.settings import EstimateSettings, SizedTraining, TrainingOptions

#: the fewest pairs a trained estimator (critic bound or generative) takes: it holds some out to read and
#: assess its fit (docs/estimators.md, "Procedure")
MIN_SAMPLES = 100
#: the fewest pairs a black-box estimator takes (k-NN with k up to 10, plug-ins; below it a number is noise)
MIN_SAMPLES_BLACK_BOX = 20
NEAR_CEILING_NATS = 1.0   # status near_ceiling within this of the readout's ceiling (InfoNCE: log m)
UNITS = ("bits", "nats")


def kind_floor(kind: str) -> int:
    """The fewest pairs an estimator of ``kind`` takes: :data:`MIN_SAMPLES` where it trains, else 20."""
    from mibench.estimators.kinds import CRITIC, GENERATIVE

    return MIN_SAMPLES if kind in (CRITIC, GENERATIVE) else MIN_SAMPLES_BLACK_BOX


def fewest_pairs(names) -> tuple[int, list]:
    """(the largest :func:`kind_floor` of the estimators ``names``, the trained ones among them)."""
    from mibench.estimators.registry import estimator_kind

    floors = {e: kind_floor(estimator_kind(e)) for e in names}
    trained = [e for e, floor in floors.items() if floor == MIN_SAMPLES]
    return max(floors.values(), default=MIN_SAMPLES_BLACK_BOX), trained


def too_few_pairs(n: int, names, flag: str) -> None:
    """One line where ``n`` pairs are fewer than :func:`fewest_pairs` of ``names`` (``flag`` names the setting)."""
    least, trained = fewest_pairs(names)
    if n < least:
        why = f" ({', '.join(trained)} train on some pairs and read out on the rest)" if trained else ""
        raise MibenchError(f"{flag} must be at least {least} pairs{why}, got {n}")


class TrainedCritic(NamedTuple):
    """One critic trained by :func:`_train_critic`."""

    outcome: Any                 # mibench.estimation.training.TrainingOutcome
    used: dict                   # the settings used
    n_parameters: int            # trainable parameters of the critic and the head
    ceiling_nats: float          # the largest value the head's readout can take on its held-out matrix
    offset_nats: float           # how far below the MI the head's readout sits by design (js-paper: 1/e)
    selection_nats: float        # what preprocess="auto" compares: a held-out lower bound (_selection_value)


class DependenceWarning(UserWarning):
    """I(X;Y) is 0 (a constant input) or infinite (a deterministic relation): no estimator trained."""


def estimate(x, y, estimator: str = "infonce", critic: str = "joint", steps: int | None = None,
             batch_size: int | None = None, lr: float | None = None, hidden: int | None = None,
             layers: int | None = None, embed: int = 32, test_fraction: float | None = None,
             preprocess: str = "auto", gaussian_critic: bool | None = None, device: str = "auto",
             seed: int = 0, units: str = "bits", progress: bool = False,
             eval_every: int | None = None, patience: int | None = None, min_steps: int | None = None,
             threads: int | None = 1, reduce: bool | None = None, noise: float | None = None) -> EstimateResult:
    """Estimate I(X;Y) from paired samples (docs/estimators.md: the procedure and the ``status`` values).

    Parameters
    ----------
    x, y : array-like (numpy, torch, lists) of shape (n, dx) and (n, dy); 1-D inputs are one column,
        (n, ...) inputs (images) are flattened per sample.  Finite values only.
    estimator : any registered estimator name, ``package.module:Name`` or entry point (``mibench list``);
        default ``infonce`` (docs/estimators.md, "Why InfoNCE is the default").
    critic : critic of a critic-bound estimator (``joint``, ``separable``, ``bilinear``, ``inner``; ``conv`` /
        ``conv-joint`` for images: pass them as (n, C, H, W) or (n, H, W) arrays, or name the shape,
        ``conv-1x28x28``; flattened rows are read as C x s x s with C = 1, 3, 2, 6 or 4, the first that fits;
        no canonical reduction then, by default).
    steps, batch_size, lr, hidden, layers, eval_every, patience, min_steps, noise : training settings of a
        critic-bound estimator; ``None`` takes the data-sized default
        (:func:`mibench.estimation.defaults.default_settings`).  ``patience=0`` disables early stopping;
        ``noise`` is the standard deviation of Gaussian noise added to the (standardised) training batches.
        A trained sample estimator takes those of its typed settings that have these names (``steps``,
        ``batch_size``, ``lr``, ``hidden``, ``layers``, ``eval_every``); others are a one-line error.
    embed : the separable critic's embedding size.
    test_fraction : share of the pairs held out for the readout (default 0.2; 0: report the training tail,
        status ``train_only``); critic and generative estimators only (the others read every pair).
    preprocess : ``"auto"`` (default: normal scores and z-scores, the better held-out critic),
        ``"normal-scores"``, ``"zscore"`` or ``"none"`` (docs/estimators.md, "Procedure").
    gaussian_critic : start from the Gaussian critic (True), never (False), or by the size rule (None).
    reduce : project each side onto its leading canonical directions, fitted on the training pairs,
        before the critic (True), never (False), or where dim_x + dim_y > 256 (None), and then, up to
        2,048 joint dimensions, also train a critic on the unreduced columns and keep the one with the
        higher held-out bound (docs/estimators.md, "Procedure").
    device : ``auto``, ``cpu``, ``cuda[:N]`` or ``mps``.
    seed : seeds the split, the critic's initialisation and the minibatches (same seed, same result).
    units : ``"bits"`` (default) or ``"nats"``.
    progress : print every held-out evaluation to stderr.
    threads : torch CPU threads for this call, restored afterwards (``None`` keeps torch's setting);
        default 1: the default critics are small, and one thread was faster than two in development.

    Returns
    -------
    EstimateResult : ``mi`` (never negative; ``inf`` for a deterministic relation), ``mi_stderr``,
        ``status``, ``mi_raw``, ``clipped``, ``seconds``, ``n_parameters``, ``curve``, ``settings``, ...

    Cost
    ----
    For a critic-bound estimator (two critics under ``preprocess="auto"``, and on reduced inputs with and
    without the Gaussian start, plus one unreduced up to 2,048 joint dimensions), n_test = n x test_fraction:
    time = the training steps (at most ``steps`` batches, whatever n) + O(n log n) column maps and
    determinism check + O(n d^2) fitted start + per evaluation min(n_test, 16,000) x 125 critic calls
    + a final readout of min(n_test, 4,096)^2 per critic, in 128 x 128 tiles; memory = the interpreter,
    torch and its buffers + ~60 n d bytes of data copies + <= 16 MB of tiles, never O(n_test^2)
    (times and peaks: docs/estimators.md, "Procedure").
    """
    from mibench.utils.checks import check_seed
    from mibench.utils.threads import torch_threads

    t_start = time.perf_counter()
    seed = check_seed(seed)
    _check_switches(threads=threads, reduce=reduce, gaussian_critic=gaussian_critic, progress=progress,
                    test_fraction=test_fraction)
    training = TrainingOptions(hidden=hidden, layers=layers, batch_size=batch_size, lr=lr, steps=steps,
                               eval_every=eval_every, patience=patience, min_steps=min_steps, noise=noise)
    training.check()
    settings = EstimateSettings(estimator=estimator, critic=critic, training=training, embed=embed,
                                test_fraction=test_fraction, preprocess=preprocess, gaussian_critic=gaussian_critic,
                                reduce=reduce, device=device, seed=seed, units=units, progress=progress,
                                threads=threads, shapes=_image_shapes(x, y))
    with torch_threads(threads):
        return _estimate(x, y, settings, t_start)


def _check_switches(*, threads, reduce, gaussian_critic, progress, test_fraction) -> None:
    """The options whose wrong type would pass unnoticed or fail deep inside: one line naming the option
    (``reduce="False"`` is truthy, ``int(1.5)`` is 1, ``test_fraction="0.2"`` fails a comparison deep
    inside)."""
    if threads is not None and (isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral)
                                or threads < 1):
        raise MibenchError(f"threads must be an integer >= 1 or None, got {threads!r}")
    for name, value in (("reduce", reduce), ("gaussian_critic", gaussian_critic)):
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise MibenchError(f"{name} must be True, False or None, got {value!r}")
    if not isinstance(progress, (bool, np.bool_)):
        raise MibenchError(f"progress must be True or False, got {progress!r}")
    if test_fraction is not None and (isinstance(test_fraction, (bool, np.bool_))
                                      or not isinstance(test_fraction, numbers.Real)):
        raise MibenchError(f"test_fraction must be a number in [0, 1), got {test_fraction!r}")


def _image_shapes(x, y):
    """Each side's image shape where it is given as images ((n, C, H, W) or (n, H, W)), else None;
    None when neither is (the image critics then read the shape off the dimensions)."""
    out = []
    for a in (x, y):
        shape = tuple(int(v) for v in getattr(a, "shape", ())[1:])
        out.append(shape if len(shape) == 3 else (1, *shape) if len(shape) == 2 else None)
    return None if out == [None, None] else tuple(out)


def _estimate(x, y, settings: EstimateSettings, t_start: float) -> EstimateResult:
    """Check the inputs, answer a constant input, and dispatch by the estimator's kind."""
    from mibench.estimation.dependence import constant_input
    from mibench.estimators.kinds import CRITIC, GENERATIVE, kind_of
    from mibench.utils.device import resolve_device

    xa, ya, entry = _checked_inputs(x, y, settings)
    resolve_device(settings.device)          # an unavailable device: the same one line for every kind
    obj = entry.obj()
    kind = kind_of(obj)
    fraction = settings.test_fraction
    if fraction is not None and kind not in (CRITIC, GENERATIVE):
        raise MibenchError(f"estimator {entry.name!r} reads every pair: test_fraction does not apply to it")
    settings = replace(settings, test_fraction=TEST_FRACTION if fraction is None else fraction)
    base = {"units": settings.units, "estimator": entry.name, "critic": settings.critic if kind == CRITIC else "",
            "curve": np.zeros(0), "train_estimate": float("nan"), "n_train": xa.shape[0], "n_test": 0,
            "diverged_at": None}
    sizes = None
    if kind == CRITIC:
        sizes = _critic_settings(xa.shape[0], xa.shape[1], ya.shape[1], settings)
    elif xa.shape[0] < (least := kind_floor(kind)):
        raise MibenchError(f"{xa.shape[0]} samples are too few: a {kind} estimator needs >= {least} pairs"
                           + (" (it trains on some and reads out on the rest)" if kind == GENERATIVE else ""))
    constant = constant_input(xa, ya)
    if constant:
        warnings.warn(f"{constant}: I(X;Y) = 0, nothing was estimated", DependenceWarning, stacklevel=3)
        return EstimateResult(mi=0.0, mi_raw=0.0, mi_stderr=0.0, status="no_dependence_detected",
                              seconds=time.perf_counter() - t_start, settings={"reason": constant}, **base)
    if kind != CRITIC:
        return _sample_estimate(obj, xa, ya, settings, base, t_start)
    return _critic_estimate(xa, ya, settings, sizes, base, t_start)


def _checked_inputs(x, y, settings: EstimateSettings):
    """(x, y) as 2-D float arrays (copies) and the estimator's registry entry; one-line errors."""
    from mibench.estimation.preprocess import PREPROCESS
    from mibench.estimators import ESTIMATORS
    from mibench.utils.checks import as_2d, check_same_rows

    if settings.units not in UNITS:
        raise MibenchError(f"units must be 'bits' or 'nats', got {settings.units!r}")
    xa, ya = as_2d(x, "x", flatten=True).copy(), as_2d(y, "y", flatten=True).copy()
    check_same_rows(x=xa, y=ya)
    if settings.preprocess not in PREPROCESS:
        raise MibenchError(f"preprocess must be one of {', '.join(PREPROCESS)}, got {settings.preprocess!r}")
    if settings.test_fraction is not None and not 0 <= settings.test_fraction < 1:
        raise MibenchError(f"test_fraction must be in [0, 1), got {settings.test_fraction}")
    return xa, ya, ESTIMATORS.get(settings.estimator)


def _critic_settings(n: int, dim_x: int, dim_y: int, settings: EstimateSettings) -> SizedTraining:
    """The training settings with the data-sized defaults filled in, and the split sizes; one-line errors."""
    from mibench.estimation.defaults import default_settings

    test_fraction = settings.test_fraction
    n_test = int(round(n * test_fraction))
    n_train = n - n_test
    s = settings.training.resolved(default_settings(n_train, dim_x, dim_y))
    if n < MIN_SAMPLES:
        raise MibenchError(f"{n} samples are too few: a critic-bound estimator needs >= {MIN_SAMPLES} pairs")
    if test_fraction > 0 and n_test < 16:
        raise MibenchError(f"test_fraction {test_fraction} holds out {n_test} of {n} pairs; >= 16 are needed: pass "
                           "more samples or a larger test_fraction")
    if n_train < s["batch_size"]:
        raise MibenchError(f"{n_train} training pairs are fewer than batch_size {s['batch_size']}: pass more samples "
                           "or a smaller batch_size")
    if int(s["batch_size"]) < 2:
        raise MibenchError(f"batch_size must be >= 2, got {s['batch_size']}")
    if not (s["lr"] > 0 and math.isfinite(s["lr"])):
        raise MibenchError(f"lr must be a positive number, got {s['lr']}")
    if int(s["steps"]) < 1 or int(s["eval_every"]) < 1 or int(s["patience"]) < 0 or int(s["min_steps"]) < 0:
        raise MibenchError("steps and eval_every must be >= 1, patience and min_steps >= 0")
    if not (s["noise"] >= 0 and math.isfinite(s["noise"])):
        raise MibenchError(f"noise must be a number >= 0, got {s['noise']}")
    from mibench.critics import critic_sizes
    from mibench.utils.limits import estimate_sizes_fit  # hard caps and memory, before allocating

    estimate_sizes_fit(s, n, critic_sizes(settings.critic, dim_x, dim_y, settings.shapes), settings.embed,
                       settings.device)
    return SizedTraining(values=s, n_train=n_train, n_test=n_test)


def _deterministic_result(reason: str, base: dict, t_start: float, used: dict) -> EstimateResult:
    warnings.warn(f"{reason}; mi is reported as inf and nothing was trained", DependenceWarning, stacklevel=4)
    return EstimateResult(mi=math.inf, mi_raw=math.inf, mi_stderr=float("nan"), status="deterministic",
                          seconds=time.perf_counter() - t_start, settings={**used, "reason": reason}, **base)


def sample_estimator(obj, device: str, test_fraction: float = 0.2, options: dict | None = None):
    """The sample estimator ``obj`` set up for this call: a trained one
    (:class:`~mibench.estimators.trained.HeldOutEstimator`) gets the device, the held-out share and the
    caller's training ``options`` among its settings (one that it does not have is a one-line error);
    any other refuses training options in one line."""
    from mibench.estimators.trained import HeldOutEstimator

    if isinstance(obj, HeldOutEstimator):
        return obj.with_settings(device=str(device), test_fraction=test_fraction, **(options or {}))
    if options:
        raise MibenchError(f"estimator {getattr(obj, 'name', type(obj).__name__)!r} trains nothing: "
                           f"{', '.join(sorted(options))} do not apply to it")
    return obj


def parameters_of(obj) -> dict:
    """An estimator's recorded settings: its typed ``parameters()`` as JSON-able values, else {}."""
    params = getattr(obj, "parameters", None)
    if not callable(params):
        return {}
    value = params()
    return value.to_record() if hasattr(value, "to_record") else dict(value) if isinstance(value, dict) else {}


def _sample_estimate(obj, xa, ya, settings: EstimateSettings, base: dict, t_start: float) -> EstimateResult:
    """A black-box or generative estimator: one call on the arrays as given."""
    from mibench.estimation.dependence import deterministic_dependence
    from mibench.utils.checks import estimate_value
    from mibench.utils.device import resolve_device

    device = resolve_device(settings.device)
    obj = sample_estimator(obj, str(device), settings.test_fraction, settings.training.given())
    reason = deterministic_dependence(xa, ya, np.arange(xa.shape[0]))
    if reason:
        return _deterministic_result(reason, base, t_start, {})
    raw = estimate_value(obj.estimate(xa, ya, seed=settings.seed), f"estimator {base['estimator']!r}")
    if not math.isfinite(raw):
        raise MibenchError(f"estimator {base['estimator']!r} returned {raw}")
    from mibench.estimation.plausibility import implausible, pairs_read, stderr_of

    status = own_status(obj)
    used = {"kind": getattr(obj, "kind", ""), "info": str(getattr(obj, "last_info", "") or ""),
            "device": str(device), "parameters": parameters_of(obj)}
    mi = max(raw, 0.0)
    flag = implausible(raw, pairs_read(obj, xa.shape[0]), stderr_of(obj))
    if flag:
        status, used["implausible"] = flag
        mi = math.nan if status == "failed_fit" else mi
    scale = settings.scale
    # a trained estimator's own split and standard error (its ``last``), where it gives them, why its status, and
    # FMMI's parts along its path (nats)
    last = getattr(obj, "last", None)
    last = last if isinstance(last, dict) else {}
    shown = ("status_reason", "intrinsic_dimension", "train_readout", "reduction")
    used.update({k: v for k, v in last.items() if k in shown or k.startswith(("best_step", "path_"))})
    split = {k: int(last[k]) for k in ("n_train", "n_test") if isinstance(last.get(k), numbers.Integral)}
    return EstimateResult(mi=mi * scale, mi_raw=raw * scale, clipped=raw < 0, status=status,
                          seconds=time.perf_counter() - t_start, n_parameters=own_n_parameters(obj),
                          settings=used, mi_stderr=stderr_of(obj) * scale, **{**base, **split})


def _critic_estimate(xa, ya, settings: EstimateSettings, sizes: SizedTraining, base: dict,
                     t_start: float) -> EstimateResult:
    """A critic-bound estimator: split, reduce where asked, train one critic per per-column map, report
    the best map's held-out readout."""
    from mibench.critics import takes_shapes
    from mibench.estimation.defaults import default_settings
    from mibench.estimation.dependence import deterministic_dependence
    from mibench.estimation.preprocess import standardise_columns
    from mibench.estimators.reduce import REDUCE_ABOVE_DIM, apply_reduction, fit_canonical_reduction
    from mibench.utils.device import resolve_device

    est_name = base["estimator"]
    dev = resolve_device(settings.device)
    perm = np.random.default_rng(settings.seed).permutation(xa.shape[0])
    tr, te = perm[:sizes.n_train], perm[sizes.n_train:]
    dim_in = (xa.shape[1], ya.shape[1])
    reduce = sum(dim_in) > REDUCE_ABOVE_DIM if settings.reduce is None else settings.reduce
    if takes_shapes(settings.critic):       # an image critic reads pixels: a projection is no image
        if settings.reduce:
            raise MibenchError(f"critic {settings.critic!r} reads images; reduce=True would hand it canonical variates")
        reduce = False
    reason = deterministic_dependence(xa, ya, tr)
    if reason:
        used = {**sizes.values, "embed": settings.embed, "test_fraction": settings.test_fraction,
                "preprocess": settings.preprocess, "reduce": bool(reduce)}
        return _deterministic_result(reason, {**base, "n_train": sizes.n_train, "n_test": sizes.n_test}, t_start, used)
    reduction, raw = None, None
    if reduce:
        raw = _raw_candidate(xa, ya, tr, settings, sizes)
        # fitted on the centred columns as given (pixels, embedding coordinates: one unit system, where
        # per-column scaling inflates rare pixels); the per-column map then applies to the canonical variates
        a, b, reduction = fit_canonical_reduction(xa, ya, tr, settings.seed)
        xa, ya = apply_reduction(xa, a, tr), apply_reduction(ya, b, tr)
        # canonical variates are linear combinations of many columns: z-scored, not normal-scored
        # (docs/estimators.md, "Why the defaults are what they are")
        auto = default_settings(sizes.n_train, *dim_in, reduced_dims=(xa.shape[1], ya.shape[1]))
        sizes = replace(sizes, values=settings.training.resolved(auto))
    candidates = _candidates(settings, bool(reduce), sizes, xa.shape[1] + ya.shape[1])
    tried = []
    for prep, start in candidates:
        a, b = xa.copy(), ya.copy()
        standardise_columns((a, b), tr, prep)
        if settings.progress and len(candidates) > 1:
            print(f"preprocess {prep}, {'Gaussian start' if start else 'no start'}:", file=sys.stderr)
        tried.append((prep, start, _train_critic(a, b, tr, te, est_name, sizes.values, settings, dev, start)))
    # of two candidates (two maps, or with and without the start) the critic whose held-out lower bound is the
    # higher (_selection_value, on the pairs that chose the checkpoint; neither changes what the bound bounds)
    prep, _, trained = max(tried, key=lambda c: _finite_or_floor(c[2].selection_nats))
    choice = _choice_record(tried)
    if raw is not None:                      # the same inputs unreduced: kept where its held-out bound is higher
        prep, trained, reduce = _against_raw(raw, prep, trained, choice, (tr, te, est_name, settings, dev))
    out = trained.outcome
    used = {**trained.used, "embed": settings.embed, "test_fraction": settings.test_fraction, "preprocess": prep,
            "reduce": bool(reduce), "device": str(dev)}
    used.update(choice)
    if reduction is not None:
        used["reduction"] = reduction
    if not math.isfinite(out.raw):
        raise MibenchError(f"estimator {est_name!r} diverged at step {out.diverged_at} before any finite held-out "
                           "value; try a smaller lr or another estimator")
    from mibench.estimation.plausibility import implausible

    status = out.status
    if sizes.n_test and out.raw > trained.ceiling_nats - NEAR_CEILING_NATS:
        status = "near_ceiling"
    if status == "converged" and trained.offset_nats > 0:   # js-paper: below the MI by design, however trained
        status = "loose_bound"
    mi = max(out.raw, 0.0)
    flag = implausible(out.raw, used["readout_pairs"], out.stderr, trained.offset_nats) if sizes.n_test else None
    if flag:
        status, used["implausible"] = flag
        mi = math.nan if status == "failed_fit" else mi
    scale = settings.scale
    return EstimateResult(
        mi=mi * scale, units=base["units"], estimator=est_name, critic=settings.critic,
        curve=out.curve * scale, train_estimate=out.train_estimate * scale, n_train=sizes.n_train,
        n_test=sizes.n_test, diverged_at=out.diverged_at, status=status, mi_stderr=out.stderr * scale,
        mi_raw=out.raw * scale, clipped=bool(out.raw < 0), seconds=time.perf_counter() - t_start,
        n_parameters=trained.n_parameters, best_step=out.best_step, steps_run=out.steps_run,
        held_out_curve=np.array([(st, v * scale) for st, v, _ in out.held]).reshape(-1, 2), settings=used)


#: reduced inputs of at most this many joint dimensions also train one critic on the unreduced columns, and keep it
#: where its held-out bound is the higher: the canonical directions are linear, and on mutinfo's rectangles 16 x 16
#: (a 4-d latent drawn as edges) the 4-8 directions kept lost half the MI, where a critic on the 512 pixels reads
#: more, and faster; above it a critic on the raw columns overfits (vision: 8,192 pixels)
RAW_CANDIDATE_MAX_DIM = 2048


def _raw_candidate(xa, ya, tr, settings: EstimateSettings, sizes: SizedTraining):
    """(map, x, y, training values) of the unreduced candidate (:data:`RAW_CANDIDATE_MAX_DIM`), z-scored
    (under ``preprocess="auto"``; normal scores read the same on images and cost a second critic), or None:
    not where the reduction was asked for (``reduce=True``), nor where the Gaussian start was
    (``gaussian_critic=True``: the unreduced columns are above its size rule), nor without a held-out part to
    choose by."""
    if (settings.reduce is not None or settings.gaussian_critic or not sizes.n_test
            or xa.shape[1] + ya.shape[1] > RAW_CANDIDATE_MAX_DIM):
        return None
    from mibench.estimation.preprocess import standardise_columns

    prep = "zscore" if settings.preprocess == "auto" else settings.preprocess
    a, b = xa.copy(), ya.copy()
    standardise_columns((a, b), tr, prep)
    return prep, a, b, sizes.values


def _against_raw(raw: tuple, prep: str, reduced: TrainedCritic, choice: dict, train_args: tuple):
    """(map, critic, whether the reduced one is kept): a critic trained on the unreduced candidate ``raw``
    (:func:`_raw_candidate`) replaces the reduced inputs' ``reduced`` where its held-out selection value is the
    higher; both values go to ``choice["inputs_values"]`` (and the InfoNCE values compared, where those are not
    them, to ``choice["inputs_infonce"]``)."""
    tr, te, est_name, settings, dev = train_args
    other = _train_critic(*raw[1:3], tr, te, est_name, raw[3], settings, dev, False)
    choice["inputs_values"] = {"reduced": float(reduced.outcome.raw), "raw": float(other.outcome.raw)}
    if any(c.selection_nats != c.outcome.raw and math.isfinite(c.selection_nats) for c in (reduced, other)):
        choice["inputs_infonce"] = {"reduced": float(reduced.selection_nats), "raw": float(other.selection_nats)}
    if _finite_or_floor(other.selection_nats) > _finite_or_floor(reduced.selection_nats):
        return raw[0], other, False
    return prep, reduced, True


def _candidates(settings: EstimateSettings, reduced: bool, sizes: SizedTraining, d: int) -> list[tuple[str, bool]]:
    """The (per-column map, Gaussian start) pairs to train a critic for: each map of
    :func:`_preprocess_candidates` with the start by the size rule (:func:`_start_by_size`), or ``gaussian_critic``
    where given.  On reduced inputs (one map) with the start left to the default and a held-out part to choose
    by, one critic with the start and one without: canonical variates of images are a non-linear function of
    their shared latent, where the Gaussian log ratio is far off on the product of the marginals and the bounds
    with an exponential term cannot train away from it (docs/estimators.md, "Procedure")."""
    maps = _preprocess_candidates(settings.preprocess, reduced, sizes.n_test)
    if settings.gaussian_critic is not None:
        return [(m, bool(settings.gaussian_critic)) for m in maps]
    start = _start_by_size(d, sizes.n_train)
    if reduced and start and sizes.n_test and len(maps) == 1:
        return [(maps[0], True), (maps[0], False)]
    return [(m, start) for m in maps]


def _choice_record(tried: list) -> dict:
    """What the settings record of a choice between two critics (``tried``: (map, start, TrainedCritic)):
    each one's held-out value by map (``preprocess_values``) or by start (``start_values``), and the InfoNCE
    values the choice compared where they are not those (``*_infonce``); {} for one critic."""
    if len(tried) < 2:
        return {}
    maps_vary = tried[0][0] != tried[1][0]
    key = "preprocess" if maps_vary else "start"
    label = (lambda c: c[0]) if maps_vary else (lambda c: "gaussian" if c[1] else "none")
    out = {f"{key}_values": {label(c): float(c[2].outcome.raw) for c in tried}}
    if any(math.isfinite(c[2].selection_nats) and c[2].selection_nats != c[2].outcome.raw for c in tried):
        out[f"{key}_infonce"] = {label(c): float(c[2].selection_nats) for c in tried}
    return out


def _finite_or_floor(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def _start_by_size(d: int, n_train: int) -> bool:
    """The size rule for the Gaussian start: d <= 256 joint dimensions with >= 20 training pairs each."""
    from mibench.estimation.gaussian_start import GAUSSIAN_MAX_DIM, GAUSSIAN_PAIRS_PER_DIM

    return d <= GAUSSIAN_MAX_DIM and n_train >= GAUSSIAN_PAIRS_PER_DIM * d


def _preprocess_candidates(preprocess: str, reduced: bool, n_test: int) -> tuple[str, ...]:
    """The per-column maps to train with.  ``auto``: z-scores alone for canonical variates (linear
    combinations of many columns); otherwise both normal scores and z-scores where there is a held-out
    part to choose by (normal scores alone without one).  Normal scores suit monotone transforms of
    Gaussians and heavy tails, z-scores multimodal margins, and no cheap statistic of the margins told the
    cases apart (docs/estimators.md, "Procedure").  ``normal-scores`` on canonical variates is read as
    z-scores."""
    if reduced and preprocess in ("auto", "normal-scores"):
        return ("zscore",)
    if preprocess == "auto":
        return ("normal-scores", "zscore") if n_test else ("normal-scores",)
    return (preprocess,)


def _train_critic(xa, ya, tr, te, est_name: str, s: dict, settings: EstimateSettings, dev, gaussian_critic: bool):
    """Train one critic on the prepared arrays.

    Parameters
    ----------
    xa, ya : the prepared (per-column mapped, possibly reduced) arrays.
    tr, te : row indices of the training and held-out pairs.
    est_name : the registered estimator name (the head).
    s : the data-sized training settings (:attr:`SizedTraining.values`).
    settings : the call's settings (critic, embed, seed, progress).
    dev : the torch device.
    gaussian_critic : start from the fitted Gaussian (or Student-t) log density ratio.

    Returns
    -------
    TrainedCritic : the outcome, the settings used, the trainable parameters, the readout's ceiling and the
    head's designed offset.
    """
    import torch

    from mibench.critics import make_critic
    from mibench.critics.kernels import make_adam
    from mibench.estimation.defaults import BLOCK
    from mibench.estimation.gaussian_start import GAUSSIAN_LR_SCALE, GaussianResidualCritic, fit_start
    from mibench.estimation.readout import readout_pairs
    from mibench.estimation.training import HeldOutData, LoopSettings, train_held_out
    from mibench.estimators import make_estimator

    n_train = len(tr)
    steps, batch = int(s["steps"]), int(s["batch_size"])
    d = xa.shape[1] + ya.shape[1]
    block = min(BLOCK, batch)
    used = {**s, "block": block, "gaussian_critic": bool(gaussian_critic)}
    xt = torch.as_tensor(xa, dtype=torch.float32, device=dev)
    yt = torch.as_tensor(ya, dtype=torch.float32, device=dev)
    data = HeldOutData(x_train=xt[tr], y_train=yt[tr], x_test=xt[te], y_test=yt[te])

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        net = make_critic(settings.critic, xa.shape[1], ya.shape[1], int(s["hidden"]), int(s["layers"]), settings.embed,
                          shapes=settings.shapes)
    if gaussian_critic:
        z = np.concatenate([xa[tr], ya[tr]], axis=1).reshape(n_train, d)
        start = fit_start(z - z.mean(0), xa.shape[1])
        net = GaussianResidualCritic(net, start.scale, xa.shape[1], n_train, start.dof, start.pool)
        used["start"] = start.info()
    net = net.to(dev)
    head = make_estimator(est_name).to(dev)
    params = [p for m in (net, head) for p in m.parameters() if p.requires_grad]
    n_parameters = int(sum(p.numel() for p in params))
    groups: list = params
    if gaussian_critic:
        slow = {id(p) for p in net.start_parameters()}
        groups = [{"params": [p for p in params if id(p) not in slow]},
                  {"params": net.start_parameters(), "lr": float(s["lr"]) * GAUSSIAN_LR_SCALE}]
    optimizer = make_adam(groups, float(s["lr"])) if params else None
    loop = LoopSettings(steps=steps, batch=batch // block * block, block=block, eval_every=int(s["eval_every"]),
                        patience=int(s["patience"]), min_steps=int(s["min_steps"]), seed=settings.seed,
                        start_is_candidate=bool(gaussian_critic), noise=float(s.get("noise", 0.0)))
    out = train_held_out(net, head, optimizer, data, loop, progress=settings.progress)
    ceiling = getattr(head, "ceiling_nats", None)
    k = readout_pairs(head, len(te))          # the readout's matrix: at most 4,096 held-out pairs a side
    used["readout_pairs"] = k
    return TrainedCritic(outcome=out, used=used, n_parameters=n_parameters,
                         ceiling_nats=float(ceiling(k)) if ceiling is not None and len(te) else math.inf,
                         offset_nats=float(getattr(head, "offset_nats", 0.0)),
                         selection_nats=_selection_value(est_name, net, data, out.raw))


def _selection_value(est_name: str, net, data, raw: float) -> float:
    """What ``preprocess="auto"`` compares between the per-column maps' critics: for a lower bound its own
    held-out readout (the higher bound is the better critic); for a head whose number is not a bound
    (``smile-*``, ``f-dime-*``) the InfoNCE bound on the same critic's held-out scores, since the higher of two
    readouts that are not bounds is biased upward (docs/estimators.md, "Procedure")."""
    import torch

    from mibench.estimation.readout import full_matrix_value
    from mibench.estimators import make_estimator
    from mibench.estimators.kinds import LOWER_BOUND
    from mibench.estimators.registry import estimator_bound

    if estimator_bound(est_name) == LOWER_BOUND or not data.n_test or not math.isfinite(raw):
        return raw
    with torch.no_grad():
        return full_matrix_value(net, make_estimator("infonce").to(data.x_test.device), data.x_test, data.y_test)
