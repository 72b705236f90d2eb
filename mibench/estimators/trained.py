"""The base of every trained sample estimator, :class:`HeldOutEstimator`: a trained estimator fits its
own networks on a training split of the n pairs and reads I(X;Y) off held-out pairs.  What they all
share is written here once -- typed settings (:class:`TrainedSettings`), the data rules, the device and
threads, the training loop and the self-assessment of an estimate (:func:`assess`) -- so that a subclass
declares only its networks, their per-pair losses and its readout.  docs/estimators.md, "Trained sample
estimators", describes the procedure for users.
"""
from __future__ import annotations

import copy
import math
import numbers
from dataclasses import MISSING, asdict, dataclass, fields, replace
from typing import ClassVar

import numpy as np

from mibench.errors import MibenchError
from mibench.estimators.intrinsic import discrete_sides, low_dimensional_sides, no_density_reason
from mibench.estimators.kinds import GENERATIVE
from mibench.estimators.preprocess import normal_scores, zscore
from mibench.estimators.trained_members import Best, MemberTraining, held_out_reads, load_best, training_threads
from mibench.estimators.trained_members import cuda_devices as _cuda

MARGINALS = ("normal-scores", "zscore")


@dataclass(frozen=True)
class TrainedSettings:
    """The settings every trained sample estimator has.

    Parameters
    ----------
    steps : Adam steps (each one minibatch).
    batch_size : pairs per minibatch (at most the training pairs).
    lr : Adam's learning rate.
    test_fraction : share of the pairs held out for the readout.
    val_fraction : share of the remaining pairs held back to choose each network's best state.
    eval_every : steps between validation evaluations (and the last step).
    ema : 0 (off) or the decay of an exponential moving average of the weights, updated after every
        step with decay min(ema, (1 + step) / (10 + step)), the buffers taken as they stand; when on, the
        average is what is validated, kept and read out.
    device : ``auto`` (CUDA when available), ``cpu``, ``cuda[:N]`` or ``mps``.
    jitter : standard deviation of the Gaussian noise added to each modelled variable (z-score units).
    marginals : ``normal-scores`` (the normal-score map after the z-score) or ``zscore`` (z-scores only).
    threads : torch threads while it trains and reads out on a CPU.  1 (the default) gives the same
        numbers whatever the caller's thread count (a run's count follows the cores free when it starts,
        docs/install.md), which changes the rounding of parallel sums, a difference training grows; 0 keeps
        the caller's count (faster where cores are free; the numbers then depend on it).
    """

    steps: int = 2000
    batch_size: int = 256
    lr: float = 1e-3
    test_fraction: float = 0.2
    val_fraction: float = 0.1
    eval_every: int = 100
    ema: float = 0.0
    device: str = "auto"
    jitter: float = 0.01
    marginals: str = "normal-scores"
    threads: int = 1

    #: fields whose value must lie in a range: name -> (lowest, highest, lowest included, highest included)
    RANGES: ClassVar[dict] = {
        "steps": (1, math.inf, True, False), "batch_size": (1, math.inf, True, False),
        "lr": (0, math.inf, False, False),
        "test_fraction": (0, 1, False, False), "val_fraction": (0, 1, False, False),
        "eval_every": (1, math.inf, True, False), "ema": (0, 1, True, False), "jitter": (0, math.inf, True, False),
        "threads": (0, math.inf, True, False),
    }
    #: fields that take one of a few words: name -> the words
    CHOICES: ClassVar[dict] = {"marginals": MARGINALS}

    def check(self, owner: str) -> None:
        """One-line errors for a value of the wrong type or out of its range."""
        for f in fields(self):
            value = getattr(self, f.name)
            kind = f.type if isinstance(f.type, str) else f.type.__name__
            ok = {"int": isinstance(value, numbers.Integral) and not isinstance(value, bool),
                  "float": isinstance(value, numbers.Real) and not isinstance(value, bool),
                  "bool": isinstance(value, (bool, np.bool_)),
                  "str": isinstance(value, str)}.get(kind, True)
            if not ok:
                raise MibenchError(f"{owner} {f.name} must be {_article(kind)}, got {value!r}")
            if f.name in self.RANGES:
                lo, hi, lo_in, hi_in = self.RANGES[f.name]
                inside = (value >= lo if lo_in else value > lo) and (value <= hi if hi_in else value < hi)
                if not (math.isfinite(value) and inside):
                    raise MibenchError(f"{owner} {f.name} must be {_interval(lo, hi, lo_in, hi_in)}, got {value!r}")
            if f.name in self.CHOICES and value not in self.CHOICES[f.name]:
                raise MibenchError(f"{owner} {f.name} must be one of {', '.join(self.CHOICES[f.name])}, got {value!r}")

    def to_record(self) -> dict:
        """The settings as JSON-able values (what results record)."""
        return {k: (v.to_record() if hasattr(v, "to_record") else v) for k, v in asdict(self).items()}


def _article(kind: str) -> str:
    return {"int": "a whole number", "float": "a number", "bool": "True or False", "str": "a string"}.get(kind, kind)


def _interval(lo, hi, lo_in, hi_in) -> str:
    if hi == math.inf:
        return f"{'>=' if lo_in else '>'} {lo}"
    return f"in {'[' if lo_in else '('}{lo}, {hi}{']' if hi_in else ')'}"


def settings_from(cls: type, owner: str, options: dict, base=None):
    """An instance of the settings dataclass ``cls``: ``base`` (or the defaults) with ``options``
    replacing fields; an unknown option or a bad value is a one-line error naming ``owner``."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise MibenchError(f"{owner} has no setting {unknown[0]!r}; its settings are: {', '.join(sorted(names))}")
    if base is None:
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
                   and f.name not in options]
        if missing:
            raise MibenchError(f"{owner} needs the setting {missing[0]!r}")
        settings = cls(**options)
    else:
        settings = replace(base, **options)
    settings.check(owner)
    return settings


@dataclass(frozen=True, eq=False)
class Split:
    """The prepared training, validation and test arrays of one estimate (float64, rows are pairs)."""

    x_train: np.ndarray
    x_val: np.ndarray
    x_test: np.ndarray
    y_train: np.ndarray
    y_val: np.ndarray
    y_test: np.ndarray


#: a network is still improving when its validation loss fell, over the last quarter of the evaluations,
#: by more than this share of its whole fall (and its best state is from that quarter)
STILL_IMPROVING_SHARE = 0.1
#: a readout on training pairs above the held-out one by more than max(this, ``OVERFIT_RELATIVE`` x the
#: held-out value) nats shows models fitted to their training pairs
OVERFIT_NATS, OVERFIT_RELATIVE = 0.1, 0.25
#: the fewest held-out (validation) evaluations from which a status judges a training curve, here and for
#: the critics (:mod:`mibench.estimation.training`); fewer: ``too_few_evaluations``
MIN_EVALUATIONS = 4


def per_pair_stderr(terms) -> float:
    """The standard error of a readout that is the mean of per-pair ``terms`` (a tensor), in their units."""
    n = terms.numel()
    return float(terms.double().std() / n ** 0.5) if n > 1 else float("nan")


#: a converged (or overfit) readout at or below this many of its own standard errors reads
#: ``no_dependence_detected``, as a critic's does, which is checked before overfitting there
#: (:mod:`mibench.estimation.training`)
NO_DEPENDENCE_SE = 2.0
#: ... unless that standard error is above this many nats: then the held-out blocks disagree too much to
#: say anything of the dependence (``noisy_readout``), where an independent pair's blocks agree to a few
#: hundredths of a nat
NOISY_READOUT_SE = 0.2


def within_noise_of_zero(value: float, se: float) -> tuple[str, str] | None:
    """(status, reason) of a held-out readout ``value`` (nats) within :data:`NO_DEPENDENCE_SE` of its
    standard errors ``se`` of zero, or None: ``no_dependence_detected`` where ``se`` is small, since the
    value then cannot be told from independence; ``noisy_readout`` where ``se`` exceeds
    :data:`NOISY_READOUT_SE`, since then neither the value nor independence is supported (an exponential
    readout far from its critic's optimum: on mutinfo's rectangles at 5 nats ``js`` read 1.8 +- 1.2 nats)."""
    if not math.isfinite(value):
        return "no_dependence_detected", "the held-out value is not finite"
    if not (math.isfinite(se) and value <= NO_DEPENDENCE_SE * se):
        return None
    if se > NOISY_READOUT_SE:
        return "noisy_readout", (f"{value:.3g} nats with a standard error of {se:.3g} over the held-out blocks: "
                                 "the blocks disagree too much to read the value or its absence")
    return "no_dependence_detected", f"{value:.3g} nats is at or below {NO_DEPENDENCE_SE:g} standard errors ({se:.3g})"

def reduced_inputs_reason(reduction: dict) -> str:
    """Why a converged readout of reduced inputs reads ``reduced_inputs`` (``reduction``: the canonical reduction's
    record, :func:`mibench.estimators.reduce.fit_canonical_reduction`)."""
    from mibench.estimators.reduce import REDUCE_ABOVE_DIM

    rank = reduction.get("rank", "?") if isinstance(reduction, dict) else "?"
    return (f"estimated on {rank} canonical variates a side (the inputs exceed {REDUCE_ABOVE_DIM} joint dimensions): "
            "the number is I(AX; BY) <= I(X; Y), below the MI where the reduction drops dependence")


#: why a converged readout of an estimator whose number is a loose bound reads ``loose_bound``
LOOSE_BOUND_REASON = ("the readout is a bound whose gap to the MI the estimator's diagnostics cannot see: read it as "
                      "a bound, not an estimate")


def assess(best: dict, held_out: float, on_training: float | None = None) -> tuple[str, str]:
    """(status, reason) of a trained estimate from its own diagnostics: ``still_improving`` (a network's
    validation loss was still falling at the end of training: more steps may change the number),
    ``overfit`` (the readout on training pairs far above the held-out one), else ``converged``; first of all
    ``too_few_evaluations`` where a network has fewer than :data:`MIN_EVALUATIONS` validation evaluations (too
    few to judge its curve), as for the critics."""
    for key, b in best.items():
        losses = [v for _, v in b.curve if math.isfinite(v)]
        if len(losses) < MIN_EVALUATIONS:
            return "too_few_evaluations", (f"{key} has {len(losses)} validation evaluation(s), too few to judge its "
                                           "training: pass more steps or a smaller eval_every")
    for key, b in best.items():
        losses = [v for _, v in b.curve if math.isfinite(v)]
        quarter = int(0.75 * len(losses))
        fall = losses[0] - min(losses)
        late = losses[quarter] - min(losses[quarter:])
        if fall > 0 and late > STILL_IMPROVING_SHARE * fall and b.step >= b.curve[quarter][0]:
            return "still_improving", (f"{key}'s validation loss fell by {late:.3g} over the last quarter of training "
                                       f"({late / fall:.0%} of its fall): pass more steps")
    if on_training is not None and math.isfinite(on_training) and math.isfinite(held_out):
        gap = on_training - held_out
        if gap > max(OVERFIT_NATS, OVERFIT_RELATIVE * abs(held_out)):
            return "overfit", (f"the readout on training pairs is {gap:.3g} nats above the held-out one: the models "
                               "fitted their training pairs; more data or fewer steps may change the number")
    return "converged", ""


class HeldOutEstimator(MemberTraining):
    """Base of the trained sample estimators (module docstring).

    * **Typed settings** (:class:`TrainedSettings`, extended per estimator): built from keywords, validated
      (a wrong type or range is a one-line error), returned by :meth:`parameters` so results record them.
    * **The data rules** (:meth:`split`): a seeded train / validation / test split, the canonical reduction
      above :data:`~mibench.estimators.reduce.REDUCE_ABOVE_DIM` joint dimensions, z-scores fitted on the
      training rows (:func:`~mibench.estimators.preprocess.zscore`; constant y columns dropped), Gaussian
      jitter of ``jitter`` standard deviations on every modelled variable (so densities exist for discrete
      coordinates: the target becomes I(X; Y + N), which differs from I(X;Y) only by what noise of 1% of a
      standard deviation hides), then the normal-score map (:func:`~mibench.estimators.preprocess.normal_scores`)
      fitted on the training rows.
    * **Device and threads**: the device from :func:`mibench.utils.device.resolve_device` (an unavailable one
      is the same one-line error as for every estimator), one torch thread on a CPU.
    * **The training loop** (:meth:`train`): Adam on minibatches of the training pairs, an optional moving
      average of the weights, every network's validation loss every ``eval_every`` steps, each network's best
      state kept (early stopping by selection); then :func:`assess` sets :attr:`status`.

    A subclass declares its networks (:meth:`models`), each network's per-pair training loss (:meth:`loss`)
    and the readout on the held-out pairs (:meth:`readout`).  Composite estimators (the resampled hybrid)
    train another estimator's networks through :meth:`fit` and add their own.  ``n_parameters``: trainable
    parameters of the networks of the last estimate (0 before); ``last``: the readout's parts and the
    training details of the last estimate.
    """

    kind = GENERATIVE
    name = "trained"
    #: the settings dataclass of this estimator (subclasses extend it)
    Settings: ClassVar[type] = TrainedSettings
    #: the estimator models x's density too (x is jittered like y and its constant columns dropped)
    models_x = False
    #: the device types on which :meth:`estimate_members` trains a cell's members (seeds) as one stacked
    #: network unless told: every device type, where stacking is the faster way (the CPU: docs/estimators.md,
    #: "Members of a cell")
    batch_members_on: ClassVar[tuple] = ("cpu", "cuda", "mps")
    #: its number is a bound far from the MI even when training converged (``club``): a converged readout
    #: then reads ``loose_bound``, a warning (docs/estimators.md, "Statuses")
    loose_bound: ClassVar[bool] = False

    def __init__(self, **options):
        self.settings = settings_from(self.Settings, self.name, options)
        self.n_parameters = 0
        self.last: dict = {}
        self.reduction = None
        #: the sides of the last estimate's training rows without a density in their coordinates
        #: (:func:`~mibench.estimators.intrinsic.low_dimensional_sides`; generative estimators only)
        self.intrinsic: dict = {}
        #: how far the last estimate can be trusted, from the estimator's own diagnostics (:func:`assess`)
        self.status = ""

    # --- settings -------------------------------------------------------------------------------

    def parameters(self):
        """The estimator's typed settings (a frozen dataclass; ``.to_record()`` for JSON)."""
        return self.settings

    def with_settings(self, **options) -> "HeldOutEstimator":
        """A new estimator of this class with these settings, ``options`` replacing some (validated)."""
        merged = {f.name: getattr(self.settings, f.name) for f in fields(self.settings)}
        return type(self)(**{**merged, **options})

    # --- what a subclass declares ---------------------------------------------------------------

    def models(self, dx: int, dy: int) -> dict:
        """The networks by key, built in a fixed order (the seed decides their weights)."""
        raise NotImplementedError

    def loss(self, key: str, model, x, y):
        """Per-pair training loss of network ``key`` (also its validation score; lower is better)."""
        raise NotImplementedError

    def readout(self, models: dict, x, y) -> tuple[float, dict]:
        """(I in nats, details) on the held-out pairs, every network in its best state."""
        raise NotImplementedError

    def prepare(self, split: Split) -> Split:
        """A last per-variable invertible map of the prepared arrays before training (identity here)."""
        return split

    # --- the procedure --------------------------------------------------------------------------

    def count_parameters(self, dx: int, dy: int) -> int:
        """Trainable parameters of this estimator's networks for data of dimensions (dx, dy)."""
        return sum(p.numel() for m in self.models(dx, dy).values() for p in m.parameters())

    def estimate(self, x, y, *, seed: int = 0) -> float:
        """I(X;Y) in nats on the held-out pairs (class docstring: the procedure)."""

        from mibench.utils.device import resolve_device

        device = resolve_device(self.settings.device)
        self.status, self.last = "", {}      # nothing of a previous estimate carries over
        split = self.split(x, y, seed)
        if split is None:
            return 0.0    # y (or a modelled x) constant on the training split: no information to carry
        with training_threads(self.settings.threads, device):      # the same numbers at any caller's count
            return self.fit_and_read(self.prepare(split), device, seed)

    def stacks_members(self) -> bool:
        """Whether a cell's members can train as one stacked network: this estimator trains by this base's
        procedure (a subclass with its own ``estimate``, ``fit``, ``fit_and_read``, ``train`` or ``prepare``
        trains its members one at a time)."""
        cls = type(self)
        return all(getattr(cls, m) is getattr(HeldOutEstimator, m)
                   for m in ("estimate", "fit", "fit_and_read", "train", "prepare"))

    def batches_members(self) -> bool:
        """Whether :meth:`estimate_members` stacks the members unless told: :meth:`stacks_members` and the
        device's type is in ``batch_members_on``."""
        from mibench.utils.device import resolve_device

        return self.stacks_members() and resolve_device(self.settings.device).type in self.batch_members_on

    def split(self, x, y, seed: int) -> Split | None:
        """The data rules (class docstring) applied to (x, y); None when y, or a modelled x, is constant
        on the training split."""
        s = self.settings
        x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
        y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        n = x.shape[0]
        if y.shape[0] != n:
            raise MibenchError(f"x and y must have the same number of rows, got {n} and {y.shape[0]}")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise MibenchError(f"{self.name}: x or y contains NaN or infinite values")
        n_test = int(round(s.test_fraction * n))
        n_val = int(round(s.val_fraction * (n - n_test)))
        n_train = n - n_test - n_val
        if n_test < 2 or n_val < 2 or n_train < 4:
            raise MibenchError(f"{self.name} needs more samples to split into train/validation/test, got {n}")
        rng = np.random.default_rng([seed, 0xD0E])
        order = rng.permutation(n)
        tr, va, te = order[:n_train], order[n_train:n_train + n_val], order[n_train + n_val:]
        x, y = self._reduced(x, y, np.concatenate([tr, va]), seed)
        train = np.arange(n_train)
        x, keep_x = zscore(x[np.concatenate([tr, va, te])], train)
        y, keep = zscore(y[np.concatenate([tr, va, te])], train)
        if not keep.any() or (self.models_x and not keep_x.any()):
            return None
        y = y[:, keep]
        # the modelled sides without a density (y, and x where its density is modelled too)
        modelled_x = x[:n_train, keep_x] if self.models_x else None
        self.intrinsic = ({**low_dimensional_sides(modelled_x, y[:n_train], seed),
                           **discrete_sides(modelled_x, y[:n_train])} if self.kind == GENERATIVE else {})
        parts = (slice(0, n_train), slice(n_train, n_train + n_val), slice(n_train + n_val, n))
        y = np.concatenate([y[p] + s.jitter * rng.standard_normal(y[p].shape) for p in parts])
        if self.models_x:
            x = x[:, keep_x]
            x = np.concatenate([x[p] + s.jitter * rng.standard_normal(x[p].shape) for p in parts])
        if s.marginals == "normal-scores":
            normal_scores(x, train)
            normal_scores(y, train)
        return Split(*(x[p] for p in parts), *(y[p] for p in parts))

    def _reduced(self, x: np.ndarray, y: np.ndarray, fit_rows: np.ndarray, seed: int):
        """Above ``REDUCE_ABOVE_DIM`` joint dimensions, x and y projected onto their leading canonical
        directions fitted on ``fit_rows`` (:mod:`mibench.estimators.reduce`, the reduction
        ``mibench.estimate`` applies for its critics); the held-out value then estimates
        I(A X; B Y) <= I(X; Y)."""
        from mibench.estimators.reduce import REDUCE_ABOVE_DIM, apply_reduction, fit_canonical_reduction

        self.reduction = None
        if x.shape[1] + y.shape[1] <= REDUCE_ABOVE_DIM:
            return x, y
        a, b, info = fit_canonical_reduction(x, y, fit_rows, seed)
        self.reduction = info
        return apply_reduction(x, a, fit_rows), apply_reduction(y, b, fit_rows)

    def tensors(self, split: Split, device) -> tuple:
        """(x_train, x_val, x_test, y_train, y_val, y_test) as float32 tensors on ``device``."""
        import torch

        return tuple(torch.as_tensor(a, dtype=torch.float32, device=device)
                     for a in (split.x_train, split.x_val, split.x_test, split.y_train, split.y_val, split.y_test))

    def fit(self, data: tuple, device, seed: int) -> tuple[dict, dict]:
        """(networks in their best validation states, {key: :class:`Best`}): this estimator's networks
        built with torch's generator seeded by ``seed`` and trained on ``data`` = (x_train, y_train,
        x_val, y_val) tensors."""
        import torch

        with torch.random.fork_rng(devices=_cuda(device)):
            torch.manual_seed(seed)
            models = {k: m.to(device) for k, m in self.models(data[0].shape[1], data[1].shape[1]).items()}
        self.n_parameters = sum(p.numel() for m in models.values() for p in m.parameters())
        best = self.train(models, self.loss, data, device, seed)
        load_best(self.name, models, best)
        return models, best

    def fit_and_read(self, split: Split, device, seed: int) -> float:
        """Train on ``split`` and return the readout on its test part in nats; details in ``last``."""
        tensors = self.tensors(split, device)
        xtr, xva, xte, ytr, yva, yte = tensors
        models, best = self.fit((xtr, ytr, xva, yva), device, seed)
        return self.read_fitted(models, best, tensors, device)

    def read_fitted(self, models: dict, best: dict, tensors: tuple, device, read: tuple | None = None) -> float:
        """The readout in nats of ``models`` (in their best states ``best``) fitted on ``tensors`` (the six
        of :meth:`tensors`), on its test part; details in ``last``.  The one readout of a separate estimate
        and of each member of a cell (:meth:`estimate_members`).  ``read``: (value, details, the value on as
        many training pairs) where the two readouts were already made (a cell's members read out stacked,
        :meth:`~mibench.estimators.trained_members.MemberTraining.readout_members`)."""
        xtr, xva, xte, ytr, yva, yte = tensors
        if read is None:
            read, = held_out_reads(lambda xs, ys: [self.readout(models, xs[0], ys[0])], [tensors])
        value, details, on_training = read
        self.status, reason = self.judged(assess(best, value, on_training), value,
                                          float(details.get("stderr", float("nan"))))
        self.record({**details, "train_readout": on_training, **({"status_reason": reason} if reason else {})},
                    best, (xtr, xva, xte), device)
        return value

    def judged(self, assessed: tuple[str, str], value: float, se: float) -> tuple[str, str]:
        """(status, reason) of a readout from :func:`assess`'s, in this order: ``no_density`` where a modelled
        side has no density (:attr:`intrinsic`; the cause the training diagnostics cannot see, and which more
        steps or pairs do not remove: a value near 0 there is not evidence of independence), else
        ``no_dependence_detected`` (or ``noisy_readout``) where the value is within :data:`NO_DEPENDENCE_SE`
        standard errors ``se`` of 0 (:func:`within_noise_of_zero`), or at or below 0 where there is no standard
        error, else ``loose_bound`` for a converged bound of a :attr:`loose_bound` estimator, else ``reduced_inputs``
        for a converged readout of reduced inputs (:attr:`reduction`: the number estimates I(AX; BY) of the
        canonical variates, at most I(X; Y), which the diagnostics cannot tell from the MI)."""
        status, reason = assessed
        if status in ("converged", "overfit", "still_improving") and self.intrinsic:
            return "no_density", no_density_reason(self.intrinsic)
        judged = status in ("converged", "overfit") and not math.isnan(value)
        near_zero = None
        if judged and math.isfinite(se):
            near_zero = within_noise_of_zero(value, se)
        elif judged and value <= 0:      # no standard error (minde-*, mienf*), but a reading at or below independence
            near_zero = ("no_dependence_detected", f"{value:.3g} nats is at or below zero (this estimator gives no "
                                                   "standard error)")
        if near_zero:
            return near_zero
        if status == "converged" and self.loose_bound:
            return "loose_bound", LOOSE_BOUND_REASON
        if status == "converged" and self.reduction:
            return "reduced_inputs", reduced_inputs_reason(self.reduction)
        return status, reason

    def record(self, details: dict, best: dict, xs: tuple, device) -> None:
        """``last``: the readout's details, each network's best step, the reduction and the split sizes."""
        self.last = {**details, **{f"best_step_{k}": b.step for k, b in best.items()},
                     **({"reduction": self.reduction} if self.reduction else {}),
                     **({"intrinsic_dimension": self.intrinsic} if self.intrinsic else {}),
                     "n_train": xs[0].shape[0], "n_val": xs[1].shape[0], "n_test": xs[2].shape[0],
                     "device": str(device)}

    def train(self, models: dict, loss, data: tuple, device, seed: int) -> dict:
        """The training loop (class docstring): Adam over every network of ``models`` on the sum of
        their mean per-pair ``loss(key, model, x, y)``; returns {key: :class:`Best`}.  Draws made inside
        the losses (noise levels, times, partners) use torch's global generator, seeded from ``seed``
        here (and restored after), so an estimate is a function of the data and the seed."""
        import torch

        from mibench.critics.kernels import make_adam

        xtr, ytr, xva, yva = data
        s = self.settings
        with torch.random.fork_rng(devices=_cuda(device)):
            torch.manual_seed(seed + 1)
            # fused Adam where torch has it: the same rule as the per-parameter loop (elementwise, so a
            # stacked member's update is its separate run's bit for bit), in less time
            opt = make_adam([p for m in models.values() for p in m.parameters()], lr=s.lr)
            gen = torch.Generator(device=device).manual_seed(seed)
            batch = min(s.batch_size, xtr.shape[0])
            best = {k: Best() for k in models}
            curves: dict = {k: [] for k in models}
            # the networks validated and kept: the weights themselves, or their moving average (``ema``)
            kept = {k: copy.deepcopy(m) for k, m in models.items()} if s.ema > 0 else models
            for step in range(1, s.steps + 1):
                idx = torch.randint(0, xtr.shape[0], (batch,), generator=gen, device=device)
                yb, xb = ytr[idx], xtr[idx]
                total = sum(loss(k, m, xb, yb).mean() for k, m in models.items())
                opt.zero_grad(set_to_none=True)
                total.backward()
                opt.step()
                if s.ema > 0:
                    _update_average(kept, models, min(s.ema, (1 + step) / (10 + step)))
                if step % s.eval_every == 0 or step == s.steps:
                    with torch.no_grad():
                        for key, model in kept.items():
                            v = float(loss(key, model, xva, yva).mean())
                            curves[key].append((step, v))
                            if math.isfinite(v) and v < best[key].loss:
                                best[key] = Best(v, copy.deepcopy(model.state_dict()), step)
        return {k: replace(b, curve=tuple(curves[k])) for k, b in best.items()}


def _update_average(kept: dict, models: dict, decay: float) -> None:
    import torch

    with torch.no_grad():
        for key, model in models.items():
            for avg, p in zip(kept[key].parameters(), model.parameters()):
                avg.mul_(decay).add_(p, alpha=1 - decay)
            # buffers are the network's as it stands: an average of a constant (a TimeMLP's frequencies)
            # drifts by float rounding, decay * b + (1 - decay) * b != b
            for avg, b in zip(kept[key].buffers(), model.buffers()):
                avg.copy_(b)

