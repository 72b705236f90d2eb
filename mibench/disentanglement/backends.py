"""MI back-ends for the disentanglement metrics: one registry, ``MI_BACKENDS``.

Every back-end estimates I(y; z_S) in nats from n paired samples, where y is one factor (n,) or a
set of factors (n, p) and z_S is a set of code dimensions (n, m) or a
:class:`~mibench.disentanglement.posterior.GaussianPosterior` restricted to S:

    backend.mi(y, z_S, discrete_y=...) -> float

``histogram``          plug-in MI on equal-width bins (disentanglement_lib: 20 bins per variable;
                       ``histogram-<bins>`` for another count).  One-dimensional y and z only.
``ksg``                Kraskov, Stögbauer & Grassberger (2004) estimator 1, multivariate, max-norm,
                       k = 3 (``ksg-<k>``; :func:`ksg_mi_continuous`); for a discrete y, Ross
                       (2014)'s k-NN variant.
``gaussian``           ½ log det Σ_y + ½ log det Σ_z − ½ log det Σ_(y,z) on sample covariances;
                       exact for jointly Gaussian data; otherwise the MI of Gaussians with the same
                       covariances, which bounds the MI neither way.  A discrete y is one-hot encoded.
``posterior``          Tokui & Sato §3.5, eq. 8: exact log-marginals of a known Gaussian encoder
                       p(z|x) (see :mod:`~mibench.disentanglement.posterior`).
``neural:<est>[:<critic>]``  ``mibench.estimate`` (any estimator / critic of the benchmark) trained
                       on the samples; held-out estimate.

A back-end that cannot handle a case raises :class:`BackendUnsupported` (a
:class:`~mibench.errors.MibenchError`); ``mibench validate`` reports such cases as *unsupported*
instead of a number.  How accurate each back-end is: docs/disentanglement.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from mibench.disentanglement.posterior import (
    GaussianPosterior,
    linear_gaussian_mi,
    log_density_matrix,
    match_factor_columns,
    tokui_eq8_discrete,
)
from mibench.errors import MibenchError
from mibench.estimators.classical import (
    ClassicalUnsupported,
    equal_width_bins,
    gaussian_mi_samples,
    ksg_mi_continuous,
    ksg_mi_discrete,
    one_hot,
    plugin_mi,
    row_labels,
)
from mibench.utils.checks import as_2d, check_same_rows
from mibench.utils.registry import Entry, Registry

#: this MI back-end cannot estimate this case (e.g. histogram on a multi-dimensional z_S); the same
#: error the classical kernels raise (e.g. Ross's KSG when every class has one sample)
BackendUnsupported = ClassicalUnsupported


@dataclass(frozen=True)
class MIBackend:
    """A named MI estimator: ``fn(y (n, p), z (n, m) | GaussianPosterior, discrete_y) -> nats``."""

    name: str
    description: str
    fn: Callable[..., float]
    #: bins per variable of a histogram back-end (its plug-in bias is checked), else None
    bins: int | None = None

    def mi(self, y, z, *, discrete_y: bool = False) -> float:
        """I(y; z) in nats, clipped at 0 (MI is non-negative; KSG and held-out neural estimates of an
        independent pair scatter below 0, which would inflate differences such as UniBound's).  Constant
        columns of z carry no information and are left out (a dead latent is exactly 0, where KSG's
        jitter would read it as a little), and a z with no other column gives 0."""
        y2 = as_2d(y, "y")
        if isinstance(z, GaussianPosterior):
            check_same_rows(y=y2, z=z.samples)
        else:
            z = as_2d(z, "z")
            check_same_rows(y=y2, z=z)
            varying = np.ptp(z, axis=0) > 0
            if not varying.any():
                return 0.0
            if not varying.all():
                z = z[:, varying]
        return max(0.0, float(self.fn(y2, z, discrete_y=bool(discrete_y))))

    def __str__(self) -> str:
        return self.name


MI_BACKENDS: Registry = Registry("MI back-end")

#: Training settings for ``neural:<estimator>`` back-ends: the benchmark's batch of 64, 1000 steps.
#: A back-end is trained once per factor and code subset (K·L + K·L + K + L times for the PID
#: bounds), so these settings set the cost (docs/disentanglement.md); change them here or build a
#: back-end with :func:`neural_backend`.
NEURAL_DEFAULTS = {"steps": 1000, "batch_size": 64, "seed": 0}


def _samples(z) -> np.ndarray:
    return z.samples if isinstance(z, GaussianPosterior) else z


# ---------------------------------------------------------------------------------------------
# histogram: plug-in MI on equal-width bins (disentanglement_lib's discretize + mutual_info_score)
# ---------------------------------------------------------------------------------------------

def histogram_mi(y: np.ndarray, z, *, discrete_y: bool, bins: int = 20) -> float:
    zs = _samples(z)
    if zs.shape[1] != 1 or y.shape[1] != 1:
        raise BackendUnsupported(
            f"histogram back-end bins one variable against one variable; got y with {y.shape[1]} and "
            f"z_S with {zs.shape[1]} dimensions (use ksg, gaussian, posterior or neural)"
        )
    if bins > zs.shape[0]:
        raise BackendUnsupported(f"histogram-{bins} has more bins than the {zs.shape[0]} samples: use fewer bins")
    ya = y[:, 0] if discrete_y else equal_width_bins(y[:, 0], bins)
    return plugin_mi(ya, equal_width_bins(zs[:, 0], bins))


# ---------------------------------------------------------------------------------------------
# ksg: Kraskov et al. (2004) estimator 1; Ross (2014) for a discrete y
# ---------------------------------------------------------------------------------------------

def ksg_mi(y: np.ndarray, z, *, discrete_y: bool, k: int = 3) -> float:
    zs = _samples(z)
    if discrete_y:
        return ksg_mi_discrete(row_labels(y), zs, k=k)
    return ksg_mi_continuous(y, zs, k=k)


# ---------------------------------------------------------------------------------------------
# gaussian: covariance log-determinants
# ---------------------------------------------------------------------------------------------

def gaussian_mi(y: np.ndarray, z, *, discrete_y: bool) -> float:
    zs = _samples(z)
    if discrete_y:
        yy = one_hot(row_labels(y))
        if yy.shape[1] == 0:
            return 0.0
    else:
        yy = y
    try:
        return gaussian_mi_samples(yy, zs)
    except BackendUnsupported:
        raise
    except MibenchError as exc:     # too few samples for the dimensions: this case, not the whole call
        raise BackendUnsupported(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# posterior: Tokui §3.5 eq. 8
# ---------------------------------------------------------------------------------------------

def posterior_mi(y: np.ndarray, z, *, discrete_y: bool) -> float:
    if not isinstance(z, GaussianPosterior):
        raise BackendUnsupported(
            "posterior back-end needs the encoder's Gaussian p(z|x) (a GaussianPosterior with means and "
            "covariances), not samples"
        )
    if z.A is not None:
        cols = match_factor_columns(z, y)
        if cols is not None:
            return linear_gaussian_mi(z, cols)
    if not discrete_y:
        raise BackendUnsupported(
            "posterior back-end (Tokui eq. 8) sums over the data points sharing a factor value; a continuous "
            "factor needs a linear-Gaussian encoder of standard-normal factors"
        )
    return tokui_eq8_discrete(row_labels(y), log_density_matrix(z))


# ---------------------------------------------------------------------------------------------
# neural:<estimator>[:<critic>] -> mibench.estimate
# ---------------------------------------------------------------------------------------------

def neural_mi(y: np.ndarray, z, *, discrete_y: bool, estimator: str, critic: str = "joint", trains: bool = True,
              **settings) -> float:
    try:
        from mibench.estimation import estimate  # lazily: the estimator stack is heavy
    except ModuleNotFoundError as exc:
        if exc.name == "mibench.estimation":
            raise BackendUnsupported("neural back-ends need mibench.estimate (mibench.estimation), "
                                     "not available here") from None
        raise
    opts = {**NEURAL_DEFAULTS, **settings}
    yy = one_hot(row_labels(y)) if discrete_y else y
    training = {"steps": opts["steps"], "batch_size": opts["batch_size"]} if trains else {}   # black-box: none
    result = estimate(yy.astype(np.float32), _samples(z).astype(np.float32), estimator=estimator, critic=critic,
                      seed=opts["seed"], units="nats", **training)
    return float(result.mi)


def neural_backend(estimator: str, critic: str = "joint", **settings) -> MIBackend:
    """A ``neural:<estimator>:<critic>`` back-end with explicit training settings; an unknown estimator or
    critic is refused here, before any sample is drawn, and a black-box estimator gets no training settings."""
    from mibench.critics import CRITICS
    from mibench.estimators import ESTIMATORS
    from mibench.estimators.kinds import BLACK_BOX, kind_of

    entry = ESTIMATORS.get(estimator)
    CRITICS.get(critic)
    trains = kind_of(entry.obj()) != BLACK_BOX
    name = f"neural:{estimator}" + (f":{critic}" if critic != "joint" else "")

    def fn(y, z, *, discrete_y):
        return neural_mi(y, z, discrete_y=discrete_y, estimator=estimator, critic=critic, trains=trains, **settings)

    return MIBackend(name, f"mibench.estimate with estimator {estimator!r}, critic {critic!r}", fn)


# ---------------------------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------------------------

def _histogram(bins: int) -> MIBackend:
    if bins < 2:
        raise MibenchError(f"histogram back-end needs at least 2 bins, got {bins}")
    name = "histogram" if bins == 20 else f"histogram-{bins}"
    return MIBackend(name, f"plug-in MI on {bins} equal-width bins (1-D only)",
                     lambda y, z, *, discrete_y: histogram_mi(y, z, discrete_y=discrete_y, bins=bins), bins=bins)


def _ksg(k: int) -> MIBackend:
    if k < 1:
        raise MibenchError(f"ksg back-end needs k >= 1, got {k}")
    name = "ksg" if k == 3 else f"ksg-{k}"
    return MIBackend(name, f"Kraskov k-NN estimator 1 (k = {k}); Ross (2014) for discrete factors",
                     lambda y, z, *, discrete_y: ksg_mi(y, z, discrete_y=discrete_y, k=k))


MI_BACKENDS.add("histogram", "plug-in MI on 20 equal-width bins, as disentanglement_lib (1-D only)", _histogram(20))
MI_BACKENDS.add("ksg", "Kraskov k-NN estimator 1, k = 3, multivariate", _ksg(3))
MI_BACKENDS.add("gaussian", "covariance log-det formula, exact for Gaussian data",
                MIBackend("gaussian", "covariance log-det formula", gaussian_mi))
MI_BACKENDS.add("posterior", "Tokui eq. 8: exact log-marginals of a known Gaussian encoder",
                MIBackend("posterior", "Tokui & Sato §3.5 eq. 8", posterior_mi))
MI_BACKENDS.add_pattern(r"histogram-(\d+)", "histogram-<bins>",
                        lambda m: Entry(m.group(0), "plug-in MI on equal-width bins", _histogram(int(m.group(1)))))
MI_BACKENDS.add_pattern(r"ksg-(\d+)", "ksg-<k>",
                        lambda m: Entry(m.group(0), "Kraskov k-NN estimator 1", _ksg(int(m.group(1)))))
MI_BACKENDS.add_pattern(
    r"neural:([A-Za-z0-9_.\-]+)(?::([A-Za-z0-9_.\-]+))?", "neural:<estimator>[:<critic>]",
    lambda m: Entry(m.group(0), "neural estimator trained on the samples",
                    neural_backend(m.group(1), m.group(2) or "joint")),
)


def get_backend(backend) -> MIBackend:
    """An :class:`MIBackend` from a registry name (or an ``MIBackend``, returned as is)."""
    if isinstance(backend, MIBackend):
        return backend
    return MI_BACKENDS.get(backend).obj
