"""The canonical reduction of high-dimensional inputs (:func:`mibench.estimate`'s critics and the trained
sample estimators): each side is projected onto its leading canonical directions, fitted on the training
pairs only (:func:`fit_canonical_reduction`: PCA, ridge CCA, a permutation null for the rank).

Why: on images (4,096 pixels a side) or sentence embeddings (768 a side) with ~8,000 training pairs, a
critic on the raw coordinates overfits long before it finds the shared signal, and the Gaussian start
cannot be fitted (its cross-covariance has dim_x * dim_y entries).  The dependence of such data is often
carried by a few directions (the classes shared by X and Y in the benchmark's vision and text tasks),
which canonical correlation analysis finds.  The held-out pairs are projected with the directions fitted
on the training pairs, so the held-out readout stays an honest estimate of I(A X; B Y) <= I(X; Y) (data
processing): the reduction can only lose information, never invent it.
"""
from __future__ import annotations

import numpy as np
import torch

REDUCE_ABOVE_DIM = 256   # reduce where dim_x + dim_y exceeds this (where the Gaussian start stops)
PCA_DIM = 512            # at most this many principal components per side before the CCA
RIDGE = 0.3              # shrinkage of each side's covariance towards a multiple of the identity
NULL_MARGIN = 1.5        # keep canonical directions with correlation > NULL_MARGIN x the null's largest
MAX_RANK = 64            # at most this many canonical directions per side
MIN_PCA_DIM = 8          # the fewest principal components a side the refit (step 3) goes down to
MIN_ROWS_PER_DIM = 4     # the PCA keeps at most (fit rows) / (2 x this) components a side: the CCA is fitted on
                         # at least this many rows per dimension (with fewer rows than dimensions every
                         # canonical correlation is 1 by construction, and the projections are noise)


def _pca_basis(a: torch.Tensor, k: int, seed: int) -> torch.Tensor:
    """(dim, k') leading principal directions of the centred rows ``a`` (k' = min(k, dim))."""
    if a.shape[1] <= k:
        return torch.eye(a.shape[1], dtype=a.dtype)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        _, _, v = torch.svd_lowrank(a, q=min(k + 10, min(a.shape)), niter=3)
    return v[:, :k]


def _ridge_whitener(a: torch.Tensor, lam: float) -> torch.Tensor:
    """((1 - lam) S + lam * mean(diag S) I)^(-1/2) for the covariance S of the centred rows ``a``."""
    s = a.T @ a / a.shape[0]
    s = (1 - lam) * s + lam * s.diagonal().mean().clamp_min(1e-12) * torch.eye(s.shape[0], dtype=s.dtype)
    lam_s, u = torch.linalg.eigh(s)
    return (u * lam_s.clamp_min(1e-12).rsqrt()) @ u.T


def _cca(xt: torch.Tensor, yt: torch.Tensor, pca_dim: int, lam: float, margin: float, seed: int) -> dict:
    """One fit of steps 1-3 of :func:`fit_canonical_reduction` at ``pca_dim`` principal components a side."""
    px, py = _pca_basis(xt, pca_dim, seed), _pca_basis(yt, pca_dim, seed + 1)
    zx, zy = (xt @ px).double(), (yt @ py).double()
    wx, wy = _ridge_whitener(zx, lam), _ridge_whitener(zy, lam)
    n = zx.shape[0]
    u, s, vh = torch.linalg.svd(wx @ (zx.T @ zy / n) @ wy)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    s_null = float(torch.linalg.svdvals(wx @ (zx.T @ zy[perm] / n) @ wy)[0])
    return {"px": px, "py": py, "wx": wx, "wy": wy, "u": u, "s": s, "vh": vh, "s_null": s_null, "zx": zx, "zy": zy,
            "pca_dim": int(px.shape[1]), "found": int((s > margin * s_null).sum())}


def _correlations(fit: dict, k: int) -> list[float]:
    """The training rows' correlation of the first ``k`` pairs of canonical variates of ``fit`` (in [0, 1]; the
    ridge's singular values, which rank the directions, are not correlations: the shrinkage of each side's
    covariance towards the identity lets them exceed 1 where a few components carry most of the variance)."""
    a = fit["zx"] @ fit["wx"] @ fit["u"][:, :k]
    b = fit["zy"] @ fit["wy"] @ fit["vh"].T[:, :k]
    num = (a * b).sum(0)
    den = (a.square().sum(0) * b.square().sum(0)).sqrt().clamp_min(1e-300)
    return [round(float(v), 4) for v in (num / den).abs()]


def fit_canonical_reduction(x: np.ndarray, y: np.ndarray, train: np.ndarray, seed: int, *, pca_dim: int = PCA_DIM,
                            lam: float = RIDGE, margin: float = NULL_MARGIN,
                            max_rank: int = MAX_RANK) -> tuple[np.ndarray, np.ndarray, dict]:
    """(A, B, info): projections (dim_x, r) and (dim_y, r) fitted on the rows ``train`` of ``x``, ``y``; apply
    as ``(x - mean_x) @ A`` (:func:`apply_reduction`).  ``info`` records the rank, the leading ridge singular
    values and the null's largest (what the rank compares) and the training rows' correlation of each pair of
    canonical variates (``canonical_correlations``).  Steps, on the (already normal-scored, z-scored) training
    rows:

    1. **PCA** of each side to at most ``pca_dim`` components and at most (fitting rows) / 8 (randomized
       SVD, Halko et al. 2011, Alg. 4.4 via :func:`torch.svd_lowrank`, seeded), so the next step's matrices
       stay small and the CCA has at least :data:`MIN_ROWS_PER_DIM` rows per dimension;
    2. **ridge-regularised CCA** (Vinod 1976; the shrinkage form of Tuzhilina et al. 2023): each side is
       whitened by ((1 - lam) S + lam * mean(diag S) I)^(-1/2), S its training covariance in the PCA basis,
       and the SVD of the whitened cross-covariance gives canonical directions with correlations s_i;
       ``lam`` > 0 keeps directions of tiny variance from fitting noise (plain CCA on 512 + 512
       dimensions from 8,000 pairs finds spurious correlations of ~0.4);
    3. **rank by a permutation null**: the same whitened cross-covariance with the training Y rows shuffled
       (seeded) has no dependence; its largest singular value s_null is the noise level, and the
       directions kept are those with s_i > ``margin`` * s_null (at least 1, at most ``max_rank``).
       Where no direction stands above the null, the CCA is refitted on half, a quarter, ... as many
       principal components (down to :data:`MIN_PCA_DIM`) and the size that keeps the most directions is
       used: with few rows per dimension the ridge CCA's spectrum is flat noise and would keep one arbitrary
       direction (``info["pca_tries"]``: the sizes tried, with the directions each kept).
    """
    idx = torch.as_tensor(train)
    xt = torch.as_tensor(x, dtype=torch.float32)[idx]
    yt = torch.as_tensor(y, dtype=torch.float32)[idx]
    xt, yt = xt - xt.mean(0), yt - yt.mean(0)
    pca_dim = max(1, min(pca_dim, len(train) // (2 * MIN_ROWS_PER_DIM)))
    fits = [_cca(xt, yt, pca_dim, lam, margin, seed)]
    while fits[0]["found"] == 0 and pca_dim // 2 >= MIN_PCA_DIM:
        pca_dim //= 2
        fits.append(_cca(xt, yt, pca_dim, lam, margin, seed))
    best = max(fits, key=lambda f: f["found"])           # the first (largest) of the best: max keeps it
    px, py, wx, wy, u, s, vh, s_null = (best[k] for k in ("px", "py", "wx", "wy", "u", "s", "vh", "s_null"))
    tries = [[f["pca_dim"], f["found"]] for f in fits]
    r = int(min(max_rank, max(1, best["found"])))
    a = (px.double() @ wx @ u[:, :r]).numpy()
    b = (py.double() @ wy @ vh.T[:, :r]).numpy()
    shown = min(len(s), r + 4)
    info = {"rank": r, "pca_dim": [int(px.shape[1]), int(py.shape[1])], "pca_tries": tries, "ridge": lam,
            "canonical_correlations": _correlations(best, shown),
            "ridge_singular_values": [round(float(v), 4) for v in s[:shown]],
            "null_singular_value": round(s_null, 4)}
    return a, b, info


def apply_reduction(arr: np.ndarray, proj: np.ndarray, train: np.ndarray) -> np.ndarray:
    """``(arr - mean of arr[train]) @ proj`` in float64."""
    return (arr - arr[train].mean(0)) @ proj
