"""The settings of one :func:`mibench.estimate` call, as named objects handed down its steps.

* :class:`TrainingOptions` -- the caller's training options of a critic-bound estimator, ``None``
  where the data-sized default applies;
* :class:`EstimateSettings` -- everything the caller chose (estimator, critic, the training
  options, preprocessing, reduction, device, seed, units, ...), built once by ``estimate``;
* :class:`SizedTraining` -- the training settings with the data-sized defaults filled in
  (:func:`mibench.estimation.defaults.default_settings`), and the training / held-out split sizes.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class TrainingOptions:
    """The caller's training options of a critic-bound estimator; ``None`` takes the data-sized default.

    Parameters
    ----------
    hidden, layers : the critic's width and number of hidden layers.
    batch_size, lr, steps : pairs per training step, Adam's learning rate and the step budget.
    eval_every, patience, min_steps : a held-out evaluation every ``eval_every`` steps; stop after
        ``patience`` evaluations without a new best (0: never), but not before ``min_steps``.
    noise : standard deviation of Gaussian noise added to the (standardised) training batches.
    """

    hidden: int | None = None
    layers: int | None = None
    batch_size: int | None = None
    lr: float | None = None
    steps: int | None = None
    eval_every: int | None = None
    patience: int | None = None
    min_steps: int | None = None
    noise: float | None = None

    def check(self) -> None:
        """One-line errors for an option of the wrong type (``lr="fast"``); ranges are checked once the
        data-sized defaults are filled in."""
        from mibench.errors import MibenchError

        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            whole = f.type.startswith("int")
            ok = isinstance(value, numbers.Integral if whole else numbers.Real) and not isinstance(value, bool)
            if not ok:
                raise MibenchError(f"{f.name} must be {'a whole number' if whole else 'a number'}, got {value!r}")

    def given(self) -> dict:
        """The options the caller set (not ``None``), by name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def resolved(self, auto: dict) -> dict:
        """The options as a dict (in field order), each ``None`` replaced by its default from ``auto``."""
        return {f.name: (auto[f.name] if getattr(self, f.name) is None else getattr(self, f.name))
                for f in fields(self)}


@dataclass(frozen=True)
class EstimateSettings:
    """What the caller of :func:`mibench.estimate` chose (its docstring describes each value).

    Parameters
    ----------
    estimator : the estimator name as given (registered name, ``package.module:Name`` or entry point).
    critic : critic of a critic-bound estimator.
    training : the training options (:class:`TrainingOptions`).
    embed : the separable critic's embedding size.
    test_fraction : share of the pairs held out for the readout (None: the default, where it applies).
    preprocess : ``"auto"``, ``"normal-scores"``, ``"zscore"`` or ``"none"``.
    gaussian_critic : start from the Gaussian critic (True), never (False), or by the size rule (None).
    reduce : project onto the leading canonical directions (True), never (False), or by dimension (None).
    device : ``auto``, ``cpu``, ``cuda[:N]`` or ``mps``.
    seed : seeds the split, the critic's initialisation and the minibatches.
    units : ``"bits"`` or ``"nats"``.
    progress : print every held-out evaluation to stderr.
    threads : torch CPU threads for the call (``None`` keeps torch's setting).
    shapes : ``(shape_x, shape_y)``, each side's image shape (C, H, W) where it was given as images
        ((n, C, H, W) or (n, H, W) arrays), else None; read by the image critics (``conv``).
    """

    estimator: str
    critic: str
    training: TrainingOptions
    embed: int
    test_fraction: float | None
    preprocess: str
    gaussian_critic: bool | None
    reduce: bool | None
    device: str
    seed: int
    units: str
    progress: bool
    threads: int | None
    shapes: tuple | None = None

    @property
    def scale(self) -> float:
        """Factor from nats to ``units``."""
        return 1.0 if self.units == "nats" else 1.0 / math.log(2.0)


@dataclass(frozen=True)
class SizedTraining:
    """The training settings of one critic-bound call, sized to the data.

    Parameters
    ----------
    values : the :class:`TrainingOptions` as a dict (``hidden``, ``layers``, ``batch_size``, ``lr``,
        ``steps``, ``eval_every``, ``patience``, ``min_steps``, ``noise``), each ``None`` replaced by
        its data-sized default.
    n_train, n_test : training and held-out pairs.
    """

    values: dict
    n_train: int
    n_test: int
