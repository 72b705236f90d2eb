"""Two recent lower bounds on I(X;Y) = KL(p(x,y) || p(x)p(y)) that are pure functions of the critic's
K x K score matrix (the diagonal holds the joint pairs, the off-diagonal entries the product of
marginals, as in :mod:`mibench.estimators.bounds`); each returns a 0-d tensor in nats and reduces
over the last two dimensions, so a (G, K, K) stack is evaluated in one call: Nishiyama's bound
(:func:`nishiyama_bound`, arXiv:1907.00288, Thm 1) and Dorent et al.'s Xi(JSD) (:func:`jsd_kl_bound`,
NeurIPS 2025); each function's docstring gives its formula and where it comes from.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from mibench.estimators.bounds import RowForm, js_fgan_objective

LOG2 = math.log(2.0)
#: bisection bracket for u = log q: Xi is reported up to -XI_LOG_Q_MIN nats (a critic that separates
#: joint from shuffled pairs perfectly on the batch)
XI_LOG_Q_MIN = -80.0
_BISECTION_STEPS = 80


def _moments(scores: torch.Tensor):
    """Means and (biased) variances of the scores on the diagonal (P) and off it (Q)."""
    k = scores.shape[-1]
    eye = torch.eye(k, dtype=torch.bool, device=scores.device)
    diag = torch.diagonal(scores, dim1=-2, dim2=-1)
    mu_p = diag.mean(-1)
    v_p = ((diag - mu_p.unsqueeze(-1)) ** 2).mean(-1)
    n_off = k * (k - 1)
    mu_q = scores.masked_fill(eye, 0.0).sum((-2, -1)) / n_off
    v_q = ((scores - mu_q[..., None, None]) ** 2).masked_fill(eye, 0.0).sum((-2, -1)) / n_off
    return mu_p, v_p, mu_q, v_q


def nishiyama_bound(scores: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Nishiyama's bound with f the critic, P the joint pairs and Q the product of marginals.  ``eps`` keeps
    the variances and D away from 0 (a constant critic gives 0).

    Nishiyama (T. Nishiyama, "A new lower bound for Kullback-Leibler divergence based on
    Hammersley-Chapman-Robbins bound", arXiv:1907.00288, Theorem 1): for any function f with means
    mu_P, mu_Q and variances v_P, v_Q under P and Q,

        KL(P || Q) >= (A - 2 v_P) / D * artanh(D / A) + 1/2 log(v_P / v_Q),
        A = (mu_P - mu_Q)^2 + v_P + v_Q,   D = sqrt(A^2 - 4 v_P v_Q),

    with equality for Bernoulli P, Q and f the identity.  f is the critic, P the joint pairs, Q the
    product of marginals; the bound depends on f only through four moments, is invariant to affine
    changes of f, and is trained and reported (the critic maximises it).
    """
    return nishiyama_from_moments(*_moments(scores), eps)


def nishiyama_from_moments(mu_p, v_p, mu_q, v_q, eps: float = 1e-12) -> torch.Tensor:
    """Theorem 1 of Nishiyama (:func:`nishiyama_bound`) from the two means and variances."""
    v_p, v_q = v_p + eps, v_q + eps
    a = (mu_p - mu_q) ** 2 + v_p + v_q
    d = torch.sqrt((a * a - 4.0 * v_p * v_q).clamp_min(eps * eps))
    ratio = (d / a).clamp(max=1.0 - 1e-15)
    return (a - 2.0 * v_p) / d * torch.atanh(ratio) + 0.5 * torch.log(v_p / v_q)


def jsd_gap(log_q: torch.Tensor) -> torch.Tensor:
    """log 2 - JSD(q) on the extremal curve (:func:`jsd_kl_bound`) at q = exp(log_q), computed without
    cancellation: (1 + q)/2 log(1 + q) - q/2 log q; increasing in q, 0 at q = 0, log 2 at q = 1."""
    q = torch.exp(log_q)
    return 0.5 * (1.0 + q) * torch.log1p(q) - 0.5 * q * log_q


def xi_of_jsd(jsd: torch.Tensor) -> torch.Tensor:
    """Xi(JSD): the smallest KL (nats) of any pair of distributions whose Jensen-Shannon divergence
    is ``jsd`` (:func:`jsd_kl_bound`); 0 at JSD <= 0, increasing, -XI_LOG_Q_MIN at JSD -> log 2."""
    gap = (LOG2 - jsd.double()).clamp(0.0, LOG2)
    lo = torch.full_like(gap, XI_LOG_Q_MIN)      # jsd_gap(lo) ~ 0 <= gap
    hi = torch.zeros_like(gap)                   # jsd_gap(0) = log 2 >= gap
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        above = jsd_gap(mid) > gap
        hi = torch.where(above, mid, hi)
        lo = torch.where(above, lo, mid)
    return (-0.5 * (lo + hi)).to(jsd.dtype)


def jsd_lower_bound(scores: torch.Tensor) -> torch.Tensor:
    """The classifier's variational lower bound on JSD(p(x,y) || p(x)p(y)) (:func:`jsd_kl_bound`)."""
    return LOG2 + 0.5 * js_fgan_objective(scores)


def jsd_kl_bound(scores: torch.Tensor) -> torch.Tensor:
    """Dorent et al.'s MI lower bound Xi(JSD_hat) on a JS-trained critic's scores (not differentiated:
    the critic is trained by the JS objective).

    JSD -> KL (R. Dorent, P. Golland, W. Wells III, "Connecting Jensen-Shannon and
    Kullback-Leibler divergences: a new bound for representation learning", NeurIPS 2025,
    arXiv:2510.20644): the tight lower bound Xi(JSD) <= KL over all pairs of distributions with a given
    Jensen-Shannon divergence.  A binary classifier of joint vs shuffled pairs trained with the cross
    entropy (the JS f-GAN objective, :func:`~mibench.estimators.bounds.js_fgan_objective`) gives a
    variational lower bound on the JSD,

        JSD >= log 2 + 1/2 (E_p[log sigmoid(f)] + E_{p(x)p(y)}[log sigmoid(-f)]),

    and, Xi being increasing, Xi of that value is a lower bound on the MI.  Xi is the lower edge of the
    (JSD, KL) joint range; by Harremoes & Vajda (IEEE Trans. IT 2011) that range is the convex hull of
    the range over pairs of distributions on two points, and its lower edge is the curve of
    P = (1, 0), Q = (q, 1 - q), 0 < q <= 1 (checked here numerically against a 3001 x 3001 grid of
    Bernoulli pairs: the minimum KL at each JSD lies on this curve, and the curve is convex):

        KL = -log q,     JSD(q) = log 2 + q/2 log q - (1 + q)/2 log(1 + q).

    :func:`xi_of_jsd` inverts JSD(q) by bisection on log q (vectorised, float64).  The critic is the
    JS-trained one every JS-trained estimator shares (``training_objective = "js-fgan"``).
    """
    return xi_of_jsd(jsd_lower_bound(scores))


# --- row forms: both bounds through the diagonal and per-row sums of the off-diagonal scores, so the
# held-out readout (mibench.estimation.readout) can read a matrix too large to hold tile by tile

def _square(s: torch.Tensor) -> torch.Tensor:
    return s * s


def _nishiyama_rows(d: torch.Tensor, stats: list) -> torch.Tensor:
    n_off = d.numel() * (d.numel() - 1)
    mu_q = stats[0].sum() / n_off
    v_q = (stats[1].sum() / n_off - mu_q * mu_q).clamp_min(0.0)
    mu_p = d.mean()
    return nishiyama_from_moments(mu_p, ((d - mu_p) ** 2).mean(), mu_q, v_q)


def _jsd_kl_rows(d: torch.Tensor, stats: list) -> torch.Tensor:
    n_off = d.numel() * (d.numel() - 1)
    objective = -F.softplus(-d).mean() - stats[0].sum() / n_off
    return xi_of_jsd(LOG2 + 0.5 * objective)


nishiyama_bound.row_form = RowForm(_nishiyama_rows, lambda d: (("sum", None), ("sum", _square)))
jsd_kl_bound.row_form = RowForm(_jsd_kl_rows, lambda d: (("sum", F.softplus),))
