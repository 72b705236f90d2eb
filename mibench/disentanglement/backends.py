"""MI back-ends for the disentanglement metrics: one registry, ``MI_BACKENDS``.

Every back-end estimates I(y; z_S) in nats from n paired samples, where y is one factor (n,) or a
set of factors (n, p) and z_S is a set of code dimensions (n, m) or a
:class:`~mibench.disentanglement.posterior.GaussianPosterior` restricted to S:

    backend.mi(y, z_S, discrete_y=...) -> float

=====================  ==========================================================================
``histogram``          plug-in MI on equal-width bins (disentanglement_lib: 20 bins per variable;
                       ``histogram:<bins>`` for another count).  One-dimensional y and z only.
``ksg``                Kraskov, Stögbauer & Grassberger (2004) estimator 1, multivariate, max-norm,
                       k = 3 (``ksg:<k>``); above :data:`KSG_BRUTE_ABOVE` joint dimensions
                       Euclidean marginal norms by blocked GEMM (:func:`ksg_mi_continuous`); for a
                       discrete y, Ross (2014)'s k-NN variant.
``gaussian``           ½ log det Σ_y + ½ log det Σ_z − ½ log det Σ_(y,z) on sample covariances;
                       exact for jointly Gaussian data, the linear (canonical-correlation) part of
                       the information otherwise.  A discrete y is one-hot encoded.
``posterior``          Tokui & Sato §3.5, eq. 8: exact log-marginals of a known Gaussian encoder
                       p(z|x) (see :mod:`~mibench.disentanglement.posterior`).
``neural:<est>[:<critic>]``  ``mibench.estimate`` (any estimator / critic of the benchmark) trained
                       on the samples; held-out estimate.
=====================  ==========================================================================

A back-end that cannot handle a case raises :class:`BackendUnsupported` (a
:class:`~mibench.errors.MibenchError`); ``mibench validate`` reports such cases as *unsupported*
instead of a number.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma

from ..errors import MibenchError
from ..registry import Entry, Registry
from .checks import as_2d, as_labels, check_same_rows
from .posterior import (
    GaussianPosterior,
    linear_gaussian_mi,
    log_density_matrix,
    match_factor_columns,
    tokui_eq8_discrete,
)


class BackendUnsupported(MibenchError):
    """This MI back-end cannot estimate this case (e.g. histogram on a multi-dimensional z_S)."""


@dataclass(frozen=True)
class MIBackend:
    """A named MI estimator: ``fn(y (n, p), z (n, m) | GaussianPosterior, discrete_y) -> nats``."""

    name: str
    description: str
    fn: Callable[..., float]

    def mi(self, y, z, *, discrete_y: bool = False) -> float:
        """I(y; z) in nats, clipped at 0 (MI is non-negative; KSG and held-out neural estimates of an
        independent pair scatter below 0, which would inflate differences such as UniBound's)."""
        y2 = as_2d(y, "y")
        if isinstance(z, GaussianPosterior):
            check_same_rows(y=y2, z=z.samples)
        else:
            z = as_2d(z, "z")
            check_same_rows(y=y2, z=z)
        return max(0.0, float(self.fn(y2, z, discrete_y=bool(discrete_y))))

    def __str__(self) -> str:
        return self.name


MI_BACKENDS: Registry = Registry("MI back-end")

#: Training settings for ``neural:<estimator>`` back-ends: the benchmark's batch of 64, 1000 steps.
#: A back-end is trained once per factor and code subset (K·L + K·L + K + L times for the PID
#: bounds), about 10 s each with the separable critic and 100 s with the joint one on a busy 2-core
#: CPU; change them here or build a back-end with :func:`neural_backend`.
NEURAL_DEFAULTS = {"steps": 1000, "batch_size": 64, "seed": 0}


def _samples(z) -> np.ndarray:
    return z.samples if isinstance(z, GaussianPosterior) else z


def _standardise(a: np.ndarray) -> np.ndarray:
    sd = a.std(axis=0)
    sd[sd == 0] = 1.0
    return (a - a.mean(axis=0)) / sd


def _row_labels(y: np.ndarray) -> np.ndarray:
    """One integer label per distinct row of a discrete (n, p) array."""
    if y.shape[1] == 1:
        return as_labels(y[:, 0])
    return np.unique(y, axis=0, return_inverse=True)[1].ravel()


# ---------------------------------------------------------------------------------------------
# histogram: plug-in MI on equal-width bins (disentanglement_lib's discretize + mutual_info_score)
# ---------------------------------------------------------------------------------------------

def equal_width_bins(x: np.ndarray, bins: int) -> np.ndarray:
    """Bin labels 0..bins-1 of a 1-D array on ``bins`` equal-width bins spanning its range."""
    edges = np.histogram_bin_edges(x, bins=bins)
    return np.clip(np.digitize(x, edges[1:-1]), 0, bins - 1)


def plugin_mi(a: np.ndarray, b: np.ndarray) -> float:
    """Plug-in MI (nats) between two integer label arrays."""
    a = as_labels(a)
    b = as_labels(b)
    joint = np.bincount(a * (b.max() + 1) + b, minlength=(a.max() + 1) * (b.max() + 1)).reshape(a.max() + 1, b.max() + 1)
    p = joint / joint.sum()
    pa = p.sum(1, keepdims=True)
    pb = p.sum(0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / (pa @ pb)[nz])).sum())


def histogram_mi(y: np.ndarray, z, *, discrete_y: bool, bins: int = 20) -> float:
    zs = _samples(z)
    if zs.shape[1] != 1 or y.shape[1] != 1:
        raise BackendUnsupported(
            f"histogram back-end bins one variable against one variable; got y with {y.shape[1]} and "
            f"z_S with {zs.shape[1]} dimensions (use ksg, gaussian, posterior or neural)"
        )
    ya = y[:, 0] if discrete_y else equal_width_bins(y[:, 0], bins)
    return plugin_mi(ya, equal_width_bins(zs[:, 0], bins))


# ---------------------------------------------------------------------------------------------
# ksg: Kraskov et al. (2004) estimator 1; Ross (2014) for a discrete y
# ---------------------------------------------------------------------------------------------

def _jitter(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Standardise and add 1e-10 noise to break ties (Kraskov et al. 2004, §II)."""
    return _standardise(a) + 1e-10 * rng.standard_normal(a.shape)


#: joint dimension (dx + dz) above which :func:`ksg_mi_continuous` switches from max-norm k-d trees
#: to the blocked brute-force torch path (k-d trees degrade towards brute force with dimension,
#: with a Python-level overhead per visited node; measured at n = 10,000, one thread, seconds per
#: estimate kdtree / brute: 12 joint dims 3.5-5.9 / 2.6-2.9, 16 dims 7.8-8.5 / 2.8-3.1, 20 dims
#: 11-12 / 2.6-3.0: benchmarks/results/ksg.txt)
KSG_BRUTE_ABOVE = 12
#: memory bound of one row block of the brute-force path (bytes of one block x n distance matrix)
KSG_BLOCK_BYTES = 64 * 2**20
KSG_METHODS = ("auto", "kdtree", "brute")


def ksg_method(dx: int, dz: int, method: str = "auto") -> str:
    """The neighbour search :func:`ksg_mi_continuous` uses for these dimensions: ``kdtree`` or ``brute``."""
    if method not in KSG_METHODS:
        raise MibenchError(f"ksg method must be one of {', '.join(KSG_METHODS)}, got {method!r}")
    if method == "auto":
        return "brute" if dx + dz > KSG_BRUTE_ABOVE else "kdtree"
    return method


def ksg_describe(dx: int, dz: int, method: str = "auto", k: int = 3) -> str:
    """One line saying how :func:`ksg_mi_continuous` runs for these dimensions (for run records)."""
    m = ksg_method(dx, dz, method)
    why = f"joint dimension {dx + dz} {'>' if m == 'brute' else '<='} {KSG_BRUTE_ABOVE}" if method == "auto" \
        else "method chosen explicitly"
    if m == "kdtree":
        return f"KSG estimator 1, k = {k}: max-norm in x, y and joint, exact k-d tree search ({why})"
    return (f"KSG estimator 1, k = {k}: Euclidean norms in x and y, joint max of the two (KSG 2004 §II), "
            f"exact blocked brute-force search in torch float64 ({why})")


def ksg_mi_continuous(x: np.ndarray, z: np.ndarray, k: int = 3, seed: int = 0, method: str = "auto") -> float:
    """KSG estimator 1: ψ(k) + ψ(N) − <ψ(n_x + 1) + ψ(n_z + 1)>, vectorised.

    Columns are standardised and jittered by 1e-10 (Kraskov, Stögbauer & Grassberger 2004, §II).
    ``method`` (:func:`ksg_method`; ``auto`` picks by the joint dimension, threshold
    :data:`KSG_BRUTE_ABOVE`):

    * ``kdtree``: max-norm in x, z and the joint space, k-d trees (``scipy.spatial.cKDTree``);
      exact, fast in low dimensions.
    * ``brute``: Euclidean norm in each marginal space and the max of the two as the joint norm,
      all pairwise distances by GEMM in row blocks (bounded memory, :data:`KSG_BLOCK_BYTES`) in
      torch float64.  Estimator 1 stays valid: Kraskov et al. (2004) §II (after eq. 8) note that
      any norms may be used in the x and z spaces as long as the joint distance is the max of the
      two, since only the counts n_x, n_z of points strictly inside the k-th joint neighbour's
      distance ε_i/2 are used.  The value differs from ``kdtree``'s by the finite-sample bias
      of the different norm only.  Cost O(n² (dx + dz)) flops, no per-sample Python.
    """
    n = x.shape[0]
    if n <= k:
        raise MibenchError(f"ksg with k = {k} needs more than {k} samples, got {n}")
    how = ksg_method(x.shape[1], z.shape[1], method)
    rng = np.random.default_rng(seed)
    x = _jitter(x, rng)
    z = _jitter(z, rng)
    if how == "brute":
        nx, nz = _ksg_counts_brute(x, z, k)
    else:
        joint = np.hstack([x, z])
        dist, _ = cKDTree(joint).query(joint, k=k + 1, p=np.inf)
        radius = np.nextafter(dist[:, -1], 0)  # strictly closer than the k-th joint neighbour
        nx = cKDTree(x).query_ball_point(x, radius, p=np.inf, return_length=True) - 1
        nz = cKDTree(z).query_ball_point(z, radius, p=np.inf, return_length=True) - 1
    return float(digamma(k) + digamma(n) - np.mean(digamma(nx + 1) + digamma(nz + 1)))


def _ksg_counts_brute(x: np.ndarray, z: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(n_x, n_z) of KSG estimator 1 with Euclidean marginal norms and the joint max-norm of the
    two: per row block, squared distances by GEMM (||a||² + ||b||² − 2 a·b, clamped at 0, the
    self-distance set exactly), the k-th smallest joint distance ε_i (self excluded), and the
    points strictly closer than ε_i in each marginal (self excluded)."""
    import torch

    n = x.shape[0]
    X = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    Z = torch.from_numpy(np.ascontiguousarray(z, dtype=np.float64))
    sx, sz = (X * X).sum(1), (Z * Z).sum(1)
    nx = torch.empty(n, dtype=torch.int64)
    nz = torch.empty(n, dtype=torch.int64)
    rows = max(1, min(n, KSG_BLOCK_BYTES // (8 * n)))
    inf = float("inf")
    with torch.no_grad():
        for s in range(0, n, rows):
            e = min(n, s + rows)
            r = torch.arange(e - s)
            c = torch.arange(s, e)
            dx = torch.addmm(sx[s:e, None] + sx[None, :], X[s:e], X.T, alpha=-2.0).clamp_min_(0.0)
            dz = torch.addmm(sz[s:e, None] + sz[None, :], Z[s:e], Z.T, alpha=-2.0).clamp_min_(0.0)
            dx[r, c] = inf      # self excluded from the neighbours and the counts
            dz[r, c] = inf
            eps = torch.maximum(dx, dz).kthvalue(k, dim=1).values
            nx[s:e] = (dx < eps[:, None]).sum(1)
            nz[s:e] = (dz < eps[:, None]).sum(1)
    return nx.numpy(), nz.numpy()


def ksg_mi_discrete(labels: np.ndarray, z: np.ndarray, k: int = 3, seed: int = 0) -> float:
    """Ross (2014) k-NN MI between a discrete label and a continuous vector.

    I = ψ(N) − <ψ(N_c)> + <ψ(k_i)> − <ψ(m_i)>: k_i = min(k, N_c − 1) neighbours within the point's
    class give a radius d_i; m_i counts all points within d_i.  Classes with one sample are dropped.
    """
    rng = np.random.default_rng(seed)
    z = _jitter(z, rng)
    classes, counts = np.unique(labels, return_counts=True)
    keep = np.isin(labels, classes[counts > 1])
    if keep.sum() <= k:
        raise BackendUnsupported("ksg: every class of the discrete factor has a single sample")
    labels, z = labels[keep], z[keep]
    n = labels.size
    radius = np.empty(n)
    k_i = np.empty(n)
    n_c = np.empty(n)
    for c in np.unique(labels):  # loop over classes, not samples
        idx = np.flatnonzero(labels == c)
        kc = min(k, idx.size - 1)
        dist, _ = cKDTree(z[idx]).query(z[idx], k=kc + 1, p=np.inf)
        radius[idx] = dist[:, -1]
        k_i[idx] = kc
        n_c[idx] = idx.size
    m = cKDTree(z).query_ball_point(z, radius, p=np.inf, return_length=True) - 1
    return float(digamma(n) - np.mean(digamma(n_c)) + np.mean(digamma(k_i)) - np.mean(digamma(m)))


def ksg_mi(y: np.ndarray, z, *, discrete_y: bool, k: int = 3) -> float:
    zs = _samples(z)
    if discrete_y:
        return ksg_mi_discrete(_row_labels(y), zs, k=k)
    return ksg_mi_continuous(y, zs, k=k)


# ---------------------------------------------------------------------------------------------
# gaussian: covariance log-determinants
# ---------------------------------------------------------------------------------------------

def _one_hot(labels: np.ndarray) -> np.ndarray:
    """One-hot encoding without the last class (so the covariance is not singular)."""
    labels = as_labels(labels)
    return np.eye(labels.max() + 1)[labels][:, :-1]


def _principal_part(a: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """``a`` itself when its sample covariance has full rank; otherwise ``a`` projected onto the
    eigen-directions with variance > rtol × the largest (constant pixels, duplicated columns).
    Degenerate directions carry no Gaussian information; without this the log-det formula divides
    0 by 0 (returned inf before)."""
    if a.shape[1] == 0:
        return a
    centred = a - a.mean(axis=0)
    evals, evecs = np.linalg.eigh(np.atleast_2d(np.cov(centred, rowvar=False)))
    keep = evals > rtol * max(float(evals.max()), 0.0)
    return a if keep.all() else centred @ evecs[:, keep]


def gaussian_mi_samples(a: np.ndarray, b: np.ndarray) -> float:
    """½ (log det Σ_a + log det Σ_b − log det Σ_ab) from sample covariances (nats); each side is
    first restricted to its non-degenerate principal subspace (:func:`_principal_part`)."""
    a, b = _principal_part(a), _principal_part(b)
    cov = np.cov(np.hstack([a, b]), rowvar=False).reshape(a.shape[1] + b.shape[1], -1)
    da = a.shape[1]
    _, ld_a = np.linalg.slogdet(cov[:da, :da])
    _, ld_b = np.linalg.slogdet(cov[da:, da:])
    sign, ld = np.linalg.slogdet(cov)
    if sign <= 0:
        return float("inf")  # a deterministic linear relation: infinite Gaussian MI
    return float(max(0.0, 0.5 * (ld_a + ld_b - ld)))


def gaussian_mi(y: np.ndarray, z, *, discrete_y: bool) -> float:
    zs = _samples(z)
    if discrete_y:
        yy = _one_hot(_row_labels(y))
        if yy.shape[1] == 0:
            return 0.0
    else:
        yy = y
    return gaussian_mi_samples(yy, zs)


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
    return tokui_eq8_discrete(_row_labels(y), log_density_matrix(z))


# ---------------------------------------------------------------------------------------------
# neural:<estimator>[:<critic>] -> mibench.estimate
# ---------------------------------------------------------------------------------------------

def neural_mi(y: np.ndarray, z, *, discrete_y: bool, estimator: str, critic: str = "joint", **settings) -> float:
    try:
        from ..api import estimate  # lazily: the estimator stack is heavy
    except ModuleNotFoundError as exc:
        if exc.name == "mibench.api":
            raise BackendUnsupported("neural back-ends need mibench.estimate (mibench.api), not available here") from None
        raise
    opts = {**NEURAL_DEFAULTS, **settings}
    yy = _one_hot(_row_labels(y)) if discrete_y else y
    result = estimate(
        yy.astype(np.float32), _samples(z).astype(np.float32), estimator=estimator, critic=critic,
        steps=opts["steps"], batch_size=opts["batch_size"], seed=opts["seed"], units="nats",
    )
    return float(result.mi)


def neural_backend(estimator: str, critic: str = "joint", **settings) -> MIBackend:
    """A ``neural:<estimator>:<critic>`` back-end with explicit training settings."""
    name = f"neural:{estimator}" + (f":{critic}" if critic != "joint" else "")

    def fn(y, z, *, discrete_y):
        return neural_mi(y, z, discrete_y=discrete_y, estimator=estimator, critic=critic, **settings)

    return MIBackend(name, f"mibench.estimate with estimator {estimator!r}, critic {critic!r}", fn)


# ---------------------------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------------------------

def _histogram(bins: int) -> MIBackend:
    if bins < 2:
        raise MibenchError(f"histogram back-end needs at least 2 bins, got {bins}")
    name = "histogram" if bins == 20 else f"histogram:{bins}"
    return MIBackend(name, f"plug-in MI on {bins} equal-width bins (1-D only)",
                     lambda y, z, *, discrete_y: histogram_mi(y, z, discrete_y=discrete_y, bins=bins))


def _ksg(k: int) -> MIBackend:
    if k < 1:
        raise MibenchError(f"ksg back-end needs k >= 1, got {k}")
    name = "ksg" if k == 3 else f"ksg:{k}"
    return MIBackend(name, f"Kraskov k-NN estimator 1 (k = {k}); Ross (2014) for discrete factors",
                     lambda y, z, *, discrete_y: ksg_mi(y, z, discrete_y=discrete_y, k=k))


MI_BACKENDS.add("histogram", "plug-in MI on 20 equal-width bins, as disentanglement_lib (1-D only)", _histogram(20))
MI_BACKENDS.add("ksg", "Kraskov k-NN estimator 1, k = 3, multivariate", _ksg(3))
MI_BACKENDS.add("gaussian", "covariance log-det formula, exact for Gaussian data",
                MIBackend("gaussian", "covariance log-det formula", gaussian_mi))
MI_BACKENDS.add("posterior", "Tokui eq. 8: exact log-marginals of a known Gaussian encoder",
                MIBackend("posterior", "Tokui & Sato §3.5 eq. 8", posterior_mi))
MI_BACKENDS.add_pattern(r"histogram:(\d+)", "histogram:<bins>",
                        lambda m: Entry(m.group(0), "plug-in MI on equal-width bins", _histogram(int(m.group(1)))))
MI_BACKENDS.add_pattern(r"ksg:(\d+)", "ksg:<k>",
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
