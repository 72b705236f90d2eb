"""Classical (non-neural) MI estimators: the one implementation of KSG, the Gaussian / CCA closed form
and the plug-in histogram estimator in mibench.  The sample protocol registers them as black-box
estimators (``ksg``, ``ksg-<k>``, ``gaussian``, ``histogram``, ``histogram-<bins>``: :class:`KSG`,
:class:`GaussianCCA`, :class:`Histogram`); unlike the disentanglement metrics' MI back-ends
(:mod:`mibench.disentanglement.backends`, thin adapters over the same kernels) they do **not** clip at 0,
so a benchmark sees each estimator's real bias and variance.

Kernels (arrays in, nats out, no Python loop over samples):

* :func:`ksg_mi_continuous` -- Kraskov, Stögbauer & Grassberger (2004), *Estimating mutual
  information*, Phys. Rev. E 69, 066138, estimator 1 (eq. 8); :func:`ksg_mi_discrete` -- Ross (2014)'s
  k-NN variant for a discrete variable against a continuous one.
* :func:`gaussian_mi_samples` -- ½ (log det Σ_x + log det Σ_y − log det Σ_xy) on sample covariances,
  i.e. −½ Σ_i log(1 − ρ_i²) over the canonical correlations ρ_i (Hotelling 1936; Cover & Thomas
  eq. 8.56 for the Gaussian entropies).
* :func:`plugin_mi` on :func:`equal_width_bins` -- the plug-in estimator on equal-width bins (20 per
  variable, as disentanglement_lib).
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma

from mibench.errors import MibenchError
from mibench.estimators.preprocess import zscore
from mibench.utils.checks import as_2d, as_labels, check_same_rows


class ClassicalUnsupported(MibenchError):
    """This classical estimator cannot handle this input (e.g. histogram on a multi-dimensional x)."""


def _pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    x2, y2 = as_2d(x, "x"), as_2d(y, "y")
    check_same_rows(x=x2, y=y2)
    return np.asarray(x2, dtype=np.float64), np.asarray(y2, dtype=np.float64)


def discrete_entropy(col: np.ndarray) -> float:
    """Plug-in entropy H(y) in nats of a discrete column."""
    _, counts = np.unique(col, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def row_labels(y: np.ndarray) -> np.ndarray:
    """One integer label per distinct row of a discrete (n, p) array."""
    if y.shape[1] == 1:
        return as_labels(y[:, 0])
    return np.unique(y, axis=0, return_inverse=True)[1].ravel()


# ---------------------------------------------------------------------------------------- histogram

def equal_width_bins(x: np.ndarray, bins: int) -> np.ndarray:
    """Bin labels 0..bins-1 of a 1-D array on ``bins`` equal-width bins spanning its range."""
    edges = np.histogram_bin_edges(x, bins=bins)
    return np.clip(np.digitize(x, edges[1:-1]), 0, bins - 1)


def plugin_bias_nats(classes_a: int, classes_b: int, n: int) -> float:
    """First-order bias of the plug-in MI on independent data, (C_a - 1)(C_b - 1) / (2n) nats for C_a and
    C_b occupied classes or bins (Miller 1955; Paninski 2003 §3)."""
    return (classes_a - 1) * (classes_b - 1) / (2 * n)


def plugin_mi(a: np.ndarray, b: np.ndarray) -> float:
    """Plug-in MI (nats) between two integer label arrays."""
    a = as_labels(a)
    b = as_labels(b)
    na, nb = a.max() + 1, b.max() + 1
    joint = np.bincount(a * nb + b, minlength=na * nb).reshape(na, nb)
    p = joint / joint.sum()
    pa = p.sum(1, keepdims=True)
    pb = p.sum(0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / (pa @ pb)[nz])).sum())


# ---------------------------------------------------------------------------------------------- ksg

def _jitter(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Standardise and add 1e-10 noise to break ties (Kraskov et al. 2004, §II)."""
    return zscore(a)[0] + 1e-10 * rng.standard_normal(a.shape)


#: joint dimension (dx + dz) above which :func:`ksg_mi_continuous` switches from max-norm k-d trees
#: to the blocked brute-force torch path (k-d trees degrade towards brute force with dimension, with a
#: Python-level overhead per visited node; where the two cross: docs/estimators.md, KSG)
KSG_BRUTE_ABOVE = 12
#: the most dimensions a side on which ``ksg`` reports no warning: its k-nearest-neighbour counts are biased
#: low as the dimension grows (Kraskov et al. 2004 §IV; Gao, Ver Steeg & Galstyan 2015), and on BMI's
#: 2-pair Gaussians at 1.47 bits the bias leaves 10% between 3 and 5 dimensions a side (docs/estimators.md)
KSG_RELIABLE_SIDE_DIMS = 3
#: ``ksg`` reports ``tied_values`` where a column has fewer distinct values than this share of the rows: its
#: neighbour counts assume continuous data, and the 1e-10 jitter orders ties arbitrarily (docs/estimators.md)
KSG_MIN_DISTINCT_SHARE = 0.5
#: ... or where more than this share of the (x, y) rows repeat an earlier row: each copy is its twin's
#: nearest neighbour at the jitter's distance, which reads as dependence
KSG_MAX_REPEATED_ROWS = 0.01
#: ``histogram`` reports ``outlier_range`` where a variable with more distinct values than bins has fewer
#: than this share of its bins holding at least :data:`HISTOGRAM_HELD_SHARE` of the pairs each: its
#: equal-width bins span a range set by a few outliers, and most pairs share a bin, which reads as
#: independence
HISTOGRAM_MIN_USED_BINS, HISTOGRAM_HELD_SHARE = 0.25, 0.01
#: ``histogram`` reports ``few_pairs_per_bin`` where the plug-in's first-order bias on independent data,
#: (bins - 1)^2 / (2 n) nats (Miller 1955; Paninski 2003 §3), exceeds this
HISTOGRAM_BIAS_NATS = 0.05
#: ``gaussian`` reports ``not_gaussian`` where Mardia's multivariate kurtosis of the joint sample is this many
#: standard deviations from its mean under normality (Mardia 1970, 1974), checked up to
#: ``NOT_GAUSSIAN_MAX_DIM`` joint dimensions; where the threshold separates BMI's tasks: docs/estimators.md,
#: "Statuses"
NOT_GAUSSIAN_Z, NOT_GAUSSIAN_MAX_DIM = 5.0, 256
#: ``gaussian`` reports ``high_dimensional`` where the closed form's first-order bias dx dy / (2n) nats exceeds
#: this (docs/estimators.md, "Statuses")
GAUSSIAN_BIAS_NATS = 0.1
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


#: the largest share of samples in single-sample classes :func:`ksg_mi_discrete` drops and still answers
MAX_SINGLETON_SHARE = 0.05


def ksg_mi_discrete(labels: np.ndarray, z: np.ndarray, k: int = 3, seed: int = 0) -> float:
    """Ross (2014) k-NN MI between a discrete label and a continuous vector.

    I = ψ(N) − <ψ(N_c)> + <ψ(k_i)> − <ψ(m_i)>: k_i = min(k, N_c − 1) neighbours within the point's
    class give a radius d_i; m_i counts all points within d_i.  Classes with one sample are dropped;
    where they hold more than :data:`MAX_SINGLETON_SHARE` of the samples (a label with more classes than
    the samples can show, such as the joint label of several factors), the estimate would be of the few
    rows left and is refused.
    """
    rng = np.random.default_rng(seed)
    z = _jitter(z, rng)
    classes, counts = np.unique(labels, return_counts=True)
    keep = np.isin(labels, classes[counts > 1])
    if keep.sum() <= k:
        raise ClassicalUnsupported("ksg: every class of the discrete factor has a single sample")
    dropped = int(keep.size - keep.sum())
    if dropped > MAX_SINGLETON_SHARE * keep.size:
        raise ClassicalUnsupported(f"ksg: {dropped} of {keep.size} samples are the only one of their "
                                   f"class ({classes.size} classes); the estimator reads classes of 2 or more: "
                                   "more samples, or a back-end for many classes")
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


# ----------------------------------------------------------------------------------------- gaussian

def one_hot(labels: np.ndarray) -> np.ndarray:
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
    if a.shape[1] > a.shape[0]:
        # more columns than pairs: rank < n, so always a projection; the SVD of the n x d rows costs O(n^2 d)
        # time and O(n d) memory, where the d x d covariance's eigh costs O(d^3) and O(d^2)
        u, sv, _ = np.linalg.svd(centred, full_matrices=False)
        keep = sv ** 2 > rtol * float((sv ** 2).max())
        return u[:, keep] * sv[keep]
    evals, evecs = np.linalg.eigh(np.atleast_2d(np.cov(centred, rowvar=False)))
    keep = evals > rtol * max(float(evals.max()), 0.0)
    return a if keep.all() else centred @ evecs[:, keep]


def gaussian_parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each side z-scored (the MI does not depend on a column's scale, and covariances of values near 1e200
    overflow) and restricted to its non-degenerate principal subspace (:func:`_principal_part`): what the
    closed form and its status read."""
    return _principal_part(zscore(a)[0]), _principal_part(zscore(b)[0])


def gaussian_status(a: np.ndarray, b: np.ndarray) -> str:
    """How far to trust the closed form on the parts ``a``, ``b`` (:func:`gaussian_parts`): ``not_gaussian``
    where Mardia's multivariate kurtosis rejects joint normality (:func:`joint_kurtosis_z`; then it reads the
    linear part of the dependence only), else ``high_dimensional`` where its bias dx dy / (2n) nats exceeds
    :data:`GAUSSIAN_BIAS_NATS`, else ''."""
    if abs(joint_kurtosis_z(a, b)) > NOT_GAUSSIAN_Z:        # NaN (not tested) compares False
        return "not_gaussian"
    return "high_dimensional" if a.shape[1] * b.shape[1] / (2 * a.shape[0]) > GAUSSIAN_BIAS_NATS else ""


def joint_kurtosis_z(a: np.ndarray, b: np.ndarray) -> float:
    """Mardia's multivariate kurtosis of the joint sample [a, b] in standard deviations from its mean under
    normality, with the exact mean and variance at this n (Mardia 1974; the large-n ones read wide Gaussian
    samples as heavy-tailed); NaN where it is not tested: above :data:`NOT_GAUSSIAN_MAX_DIM` joint dimensions,
    at n <= 2d, or on a degenerate joint covariance (a deterministic linear relation, infinite MI)."""
    z = np.hstack([a, b])
    n, d = z.shape
    if not (0 < d <= NOT_GAUSSIAN_MAX_DIM and n > 2 * d):
        return float("nan")
    z = z - z.mean(axis=0)
    cov = np.atleast_2d(np.cov(z, rowvar=False, bias=True))
    if np.linalg.matrix_rank(cov) < d:
        return float("nan")
    m = np.einsum("ij,ij->i", z @ np.linalg.inv(cov), z)          # squared Mahalanobis distances
    mean = d * (d + 2) * (n - 1) / (n + 1)
    var = 8 * d * (d + 2) * (n - 3) * (n - d - 1) * (n - d + 1) / ((n + 1) ** 2 * (n + 3) * (n + 5))
    return float((np.mean(m ** 2) - mean) / np.sqrt(var))


def gaussian_mi_samples(a: np.ndarray, b: np.ndarray) -> float:
    """½ (log det Σ_a + log det Σ_b − log det Σ_ab) from sample covariances (nats), on the parts
    :func:`gaussian_parts` keeps.  With no more pairs than dimensions the sample covariance is singular by
    construction, which is no evidence of a deterministic relation: a one-line error."""
    return gaussian_mi_parts(*gaussian_parts(a, b))


def gaussian_mi_parts(a: np.ndarray, b: np.ndarray) -> float:
    """:func:`gaussian_mi_samples` on parts already made by :func:`gaussian_parts`."""
    if a.shape[0] <= a.shape[1] + b.shape[1] + 1:
        raise MibenchError(f"gaussian needs more pairs than dimensions: {a.shape[0]} pairs for {a.shape[1]} + "
                           f"{b.shape[1]} non-degenerate dimensions (the sample covariance is singular)")
    cov = np.cov(np.hstack([a, b]), rowvar=False).reshape(a.shape[1] + b.shape[1], -1)
    da = a.shape[1]
    _, ld_a = np.linalg.slogdet(cov[:da, :da])
    _, ld_b = np.linalg.slogdet(cov[da:, da:])
    sign, ld = np.linalg.slogdet(cov)
    if sign <= 0:
        return float("inf")  # a deterministic linear relation: infinite Gaussian MI
    return float(max(0.0, 0.5 * (ld_a + ld_b - ld)))


# -------------------------------------------------------------------------------- sample estimators

class KSG:
    """``ksg`` (``ksg-<k>``): Kraskov, Stögbauer & Grassberger (2004), estimator 1 (eq. 8), k = 3, on z-scored
    columns with 1e-10 jitter (§II) seeded by ``seed``.  Up to :data:`KSG_BRUTE_ABOVE` joint dimensions:
    max-norm, k-d trees (``scipy.spatial.cKDTree``); above (k-d trees degrade towards brute force with
    dimension): Euclidean norms in x and y with the joint max of the two -- valid for estimator 1, KSG 2004
    §II -- by exact blocked GEMM in torch.  The search used is in ``last_info`` and in the sample run's
    ``config.json`` (``estimator_info``).  ``status`` is ``high_dimensional`` when a side has more than
    :data:`KSG_RELIABLE_SIDE_DIMS` dimensions (the estimate may be far below the truth), else ``tied_values``
    when a column repeats values (fewer distinct ones than :data:`KSG_MIN_DISTINCT_SHARE` of the rows: KSG
    assumes continuous data), else empty."""

    kind = "black-box"
    n_parameters = 0

    def __init__(self, k: int = 3):
        if int(k) != k or k < 1:
            raise MibenchError(f"ksg needs an integer k >= 1, got {k}")
        self.k = int(k)
        self.name = "ksg" if self.k == 3 else f"ksg-{self.k}"
        self.last_info = ""
        self.status = ""

    def estimate(self, x, y, *, seed: int = 0) -> float:
        x, y = _pair(x, y)
        self.last_info = ksg_describe(x.shape[1], y.shape[1], k=self.k)
        wide = max(x.shape[1], y.shape[1]) > KSG_RELIABLE_SIDE_DIMS
        self.status = "high_dimensional" if wide else "tied_values" if _tied(x, y) else ""
        return float(ksg_mi_continuous(x, y, k=self.k, seed=seed))


def _tied(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether a non-constant column of x or y has fewer distinct values than KSG_MIN_DISTINCT_SHARE of the
    rows (a constant column changes no distance), or more than KSG_MAX_REPEATED_ROWS of the rows repeat."""
    least = KSG_MIN_DISTINCT_SHARE * x.shape[0]
    if any(1 < len(np.unique(col)) < least for a in (x, y) for col in a.T):
        return True
    repeated = x.shape[0] - len(np.unique(np.hstack([x, y]), axis=0))
    return repeated > KSG_MAX_REPEATED_ROWS * x.shape[0]


def _outlier_range(col: np.ndarray, bins: int) -> bool:
    """Whether ``col`` (more distinct values than ``bins``) has most of its pairs in a few of its equal-width
    bins (:data:`HISTOGRAM_MIN_USED_BINS`): a range set by outliers."""
    if len(np.unique(col)) <= bins:
        return False                        # a discrete variable: each value in a bin of its own is exact
    counts = np.bincount(equal_width_bins(col, bins), minlength=bins)
    return (counts >= HISTOGRAM_HELD_SHARE * len(col)).sum() < HISTOGRAM_MIN_USED_BINS * bins


class GaussianCCA:
    """``gaussian``: the Gaussian closed form on sample covariances (:func:`gaussian_mi_samples`).  Exact for
    jointly Gaussian data (up to sampling bias ~ dx·dy/(2n)), the linear part of the dependence otherwise;
    ``status`` says which (:func:`gaussian_status`).  Degenerate directions (constant pixels) are dropped; a
    deterministic linear relation gives ``inf``."""

    kind = "black-box"
    n_parameters = 0
    name = "gaussian"

    def __init__(self):
        self.status = ""

    def estimate(self, x, y, *, seed: int = 0) -> float:
        self.status = ""
        x, y = _pair(x, y)
        a, b = gaussian_parts(x, y)
        value = float(gaussian_mi_parts(a, b))
        if value == np.inf and _tied(x, y):    # a linear relation of continuous values is infinite MI, not these
            raise MibenchError("gaussian: x and y are in an exact linear relation, and they take few distinct "
                               "values (labels, counts): their MI is finite, at most their entropy, which the "
                               "Gaussian closed form cannot read; use histogram, ksg or a critic bound")
        self.status = gaussian_status(a, b)
        return value


class Histogram:
    """``histogram`` (``histogram-<bins>``): plug-in MI on equal-width bins (20 per variable, as
    disentanglement_lib); **one-dimensional x and y only** -- anything else is refused with one line.
    ``status`` is ``few_pairs_per_bin`` when the plug-in's bias on independent data, (bins - 1)^2 / (2 n)
    nats, exceeds :data:`HISTOGRAM_BIAS_NATS` (e.g. below 3,610 pairs at 20 bins), else ``outlier_range``
    where a few outliers set a variable's bins (:data:`HISTOGRAM_MIN_USED_BINS`), else empty."""

    kind = "black-box"
    n_parameters = 0
    #: the largest dimension of x and of y it takes (the conformance suite reads it)
    max_side_dims = 1

    def __init__(self, bins: int = 20):
        if int(bins) != bins or bins < 2:
            raise MibenchError(f"histogram needs an integer number of bins >= 2, got {bins}")
        self.bins = int(bins)
        self.name = "histogram" if self.bins == 20 else f"histogram-{self.bins}"
        self.status = ""

    def estimate(self, x, y, *, seed: int = 0) -> float:
        x, y = _pair(x, y)
        if x.shape[1] != 1 or y.shape[1] != 1:
            raise MibenchError(f"{self.name} bins one variable against one: x has {x.shape[1]} and y "
                               f"{y.shape[1]} dimensions (use ksg, gaussian or a neural estimator)")
        bias = plugin_bias_nats(self.bins, self.bins, x.shape[0])
        outliers = _outlier_range(x[:, 0], self.bins) or _outlier_range(y[:, 0], self.bins)
        self.status = "few_pairs_per_bin" if bias > HISTOGRAM_BIAS_NATS else "outlier_range" if outliers else ""
        return float(plugin_mi(equal_width_bins(x[:, 0], self.bins), equal_width_bins(y[:, 0], self.bins)))


#: the sample estimators of this module by class name (the registry builds them lazily by name)
SAMPLE_ESTIMATORS = {"KSG": KSG, "GaussianCCA": GaussianCCA, "Histogram": Histogram}
