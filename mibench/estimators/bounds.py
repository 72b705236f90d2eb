"""Variational MI bounds as pure functions of a K x K critic score matrix (nats).

``scores[i, j] = f(x_i, y_j)``: the diagonal holds the K joint pairs, the K(K-1) off-diagonal
entries stand in for samples of the product of marginals.  Each function returns a 0-d tensor.

References: the unified bound of Poole et al. (2019), quoted as Definition 2.1 of the benchmark
paper (002, §2): I >= 1 + E_p[log e^f / a(y)] - E_{p(x)p(y)}[e^f / a(y)]; DV (Donsker-Varadhan);
NWJ = a(y) = e; InfoNCE (Oord et al. 2018); JS f-GAN training (Nowozin et al. 2016); SMILE
(Song & Ermon 2019, clipped partition function).  The optimal critic of every bound except NWJ
and TUBA is f* = log p(x,y)/(p(x)p(y)) (up to a constant for DV / InfoNCE / SMILE); NWJ's is
1 + log p/(pp) because of its a(y) = e.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Callable

import torch
import torch.nn.functional as F


def _offdiag_mask(k: int, device) -> torch.Tensor:
    return torch.eye(k, dtype=torch.bool, device=device)


def logmeanexp_offdiag(scores: torch.Tensor) -> torch.Tensor:
    """log of the mean of exp(scores) over the K(K-1) off-diagonal entries (last two dims)."""
    k = scores.shape[-1]
    masked = scores.masked_fill(_offdiag_mask(k, scores.device), float("-inf"))
    return torch.logsumexp(masked.flatten(-2), dim=-1) - math.log(k * (k - 1))


def mean_diag(scores: torch.Tensor) -> torch.Tensor:
    return torch.diagonal(scores, dim1=-2, dim2=-1).mean(-1)


def mean_offdiag(values: torch.Tensor) -> torch.Tensor:
    k = values.shape[-1]
    total = values.sum((-2, -1)) - torch.diagonal(values, dim1=-2, dim2=-1).sum(-1)
    return total / (k * (k - 1))


def dv_bound(scores: torch.Tensor) -> torch.Tensor:
    """Donsker-Varadhan: E_p[f] - log E_{p(x)p(y)}[e^f]."""
    return mean_diag(scores) - logmeanexp_offdiag(scores)


def nwj_bound(scores: torch.Tensor) -> torch.Tensor:
    """NWJ (Nguyen, Wainwright & Jordan 2010), a(y) = e: E_p[f] - E_{p(x)p(y)}[e^{f-1}]."""
    return mean_diag(scores) - torch.exp(logmeanexp_offdiag(scores) - 1.0)


def tuba_bound(scores: torch.Tensor, log_baseline: torch.Tensor) -> torch.Tensor:
    """TUBA (Poole et al. 2019) with a constant baseline a = exp(log_baseline):
    1 + E_p[f] - log a - E_{p(x)p(y)}[e^f] / a."""
    return 1.0 + mean_diag(scores) - log_baseline - torch.exp(logmeanexp_offdiag(scores) - log_baseline)


def infonce_bound(scores: torch.Tensor) -> torch.Tensor:
    """InfoNCE (Oord et al. 2018): log K + E_i[f_ii - log sum_j e^{f_ij}]; never exceeds log K."""
    k = scores.shape[-1]
    return math.log(k) + (mean_diag(scores) - torch.logsumexp(scores, dim=-1).mean(-1))


def js_fgan_objective(scores: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon f-GAN lower bound (to maximise): E_p[-softplus(-f)] - E_{p(x)p(y)}[softplus(f)].

    Not an MI estimate itself: its maximiser is f* = log p/(pp), which the JS and SMILE estimators
    then plug into NWJ / clipped DV.
    """
    joint = -F.softplus(-torch.diagonal(scores, dim1=-2, dim2=-1)).mean(-1)
    marginal = mean_offdiag(F.softplus(scores))
    return joint - marginal


def js_estimate(scores: torch.Tensor) -> torch.Tensor:
    """JS-trained critic evaluated with NWJ (Poole et al. 2019 §2.3): I_NWJ(f + 1), since the JS
    optimum log p/(pp) is NWJ's optimum minus one."""
    return nwj_bound(scores + 1.0)


def js_paper_estimate(scores: torch.Tensor) -> torch.Tensor:
    """The benchmark authors' readout of the JS-trained critic (their public code): NWJ on f itself,
    E_p[f] - E_{p(x)p(y)}[e^{f-1}].  At the JS optimum f* = log p/(pp) this is I - 1/e nats
    (I - 0.531 bits), i.e. 1/e nats below :func:`js_estimate`; kept so numbers can be compared
    with the paper's JS column."""
    return nwj_bound(scores)


def smile_bound(scores: torch.Tensor, clip: float | None) -> torch.Tensor:
    """SMILE (Song & Ermon 2019): DV with the partition term over scores clipped to [-tau, tau].

    ``clip=None`` (tau = inf) is plain DV on a JS-trained critic."""
    clipped = scores if clip is None else scores.clamp(-clip, clip)
    return mean_diag(scores) - logmeanexp_offdiag(clipped)


def smile_adaptive_bound(scores: torch.Tensor, floor: float = 5.0, quantile: float = 0.995) -> torch.Tensor:
    """SMILE with a data-chosen clip: DV with the partition-term scores capped at
    tau = max(``floor``, the ``quantile`` of the joint-pair (diagonal) scores of the matrix).

    Why: for the optimal critic f = log p/(pp) the change of measure E_{p(x)p(y)}[e^f 1{f > tau}] =
    P_p(f > tau) says that a cap at tau removes the partition mass P_p(f > tau), the share of joint
    pairs scoring above it, and so biases the readout up by about -log(1 - P_p(f > tau)) nats.  A fixed
    tau = 5 (SMILE-5) removes P_p(f > 5), which grows with the MI; a cap at the 99.5th percentile of
    the joint scores removes at most ~0.5% (<= 0.007 bits),
    and never capping below 5 keeps SMILE-5's robustness where the joint scores are small: a negative
    pair scoring far above the joint pairs (a critic extrapolating into heavy tails, which makes the
    unclipped DV collapse) is still capped.  Heavy joint tails push the percentile, and with it the
    cap, up (why this percentile: docs/estimators.md, "Why the defaults are what they are")."""
    diag = torch.diagonal(scores, dim1=-2, dim2=-1)
    tau = torch.quantile(diag.float(), quantile, dim=-1).to(scores.dtype).clamp_min(floor)
    capped = torch.minimum(scores, tau[..., None, None])
    return mean_diag(scores) - logmeanexp_offdiag(capped)


# ---------------------------------------------------------------------------------------------
# f-DIME (Letizia, Novello & Tonello, NeurIPS 2024, "Mutual information estimation via
# f-divergence and data derangements"), §3-4.  The critic is trained by the variational
# representation of an f-divergence between p(x,y) and p(x)p(y), J_f(T) = E_p[T] - E_{pp}[f*(T)],
# where the product-of-marginals samples are (x_i, y_sigma(i)) for a *derangement* sigma (a
# permutation without fixed points, so no joint pair leaks into the negatives: §4), i.e. K
# negatives per batch, not all K(K-1) off-diagonal pairs.  The MI is then read off the joint
# samples only, I = E_p[log R(D)], R the density ratio p/(pp) recovered from the discriminator D.
#
# mibench parametrises every variant by the critic score s = log R (so the optimum is
# s* = log p/(pp) for all three); the paper's discriminator D and its readout are
#   KL:  D = e^s,        J_KL  = E_p[log D] - E_pp[D] + 1,            I = E_p[log D]
#   HD:  D = e^{-s/2},   J_HD  = 2 - E_p[D] - E_pp[1/D],              I = E_p[log 1/D^2]
#   GAN: D = sigma(-s),  J_GAN = E_p[log(1-D)] + E_pp[log D] + log 4, I = E_p[log (1-D)/D]
# each of which equals E_p[s].
# ---------------------------------------------------------------------------------------------

FDIME_VARIANTS = ("kl", "hd", "gan")


def deranged(scores: torch.Tensor, shift: int = 1) -> torch.Tensor:
    """The K negatives s[i, sigma(i)] of the cyclic derangement sigma(i) = (i + shift) mod K.

    Batch pairs are i.i.d., so a fixed cyclic derangement is distributed exactly like a random one
    (the batch order is exchangeable), and it keeps the bound a pure, deterministic function."""
    k = scores.shape[-1]
    if k < 2:
        raise ValueError("a derangement needs a batch of at least 2 pairs")
    shift = shift % k or 1
    idx = (torch.arange(k, device=scores.device) + shift) % k
    return scores.gather(-1, idx.expand(scores.shape[:-1]).unsqueeze(-1)).squeeze(-1)


def fdime_objective(scores: torch.Tensor, variant: str) -> torch.Tensor:
    """f-DIME training objective J_f (to maximise) on the diagonal (joint) and the deranged
    negatives; the maximiser is s* = log p(x,y)/(p(x)p(y)) for every variant."""
    joint = torch.diagonal(scores, dim1=-2, dim2=-1)
    neg = deranged(scores)
    if variant == "kl":     # f(u) = u log u, f*(t) = e^{t-1}; T = 1 + s
        return joint.mean(-1) - torch.exp(neg).mean(-1) + 1.0
    if variant == "hd":     # squared Hellinger, f(u) = (sqrt u - 1)^2
        return 2.0 - torch.exp(-0.5 * joint).mean(-1) - torch.exp(0.5 * neg).mean(-1)
    if variant == "gan":    # GAN divergence (2 JS - log 4)
        return -F.softplus(-joint).mean(-1) - F.softplus(neg).mean(-1) + math.log(4.0)
    raise ValueError(f"unknown f-DIME variant {variant!r}; choose from {FDIME_VARIANTS}")


def fdime_estimate(scores: torch.Tensor, variant: str) -> torch.Tensor:
    """f-DIME readout I = E_p[log R(D)] on the joint pairs (the diagonal), written through each
    variant's discriminator D as in the paper (module note above); all three reduce to E_p[s]."""
    return fdime_from_diagonal(torch.diagonal(scores, dim1=-2, dim2=-1), variant)


def fdime_from_diagonal(s: torch.Tensor, variant: str) -> torch.Tensor:
    """:func:`fdime_estimate` from the joint scores (the diagonal) alone."""
    if variant == "kl":
        log_ratio = s                                        # log D, D = e^s
    elif variant == "hd":
        log_ratio = -2.0 * (-0.5 * s)                        # log 1/D^2, log D = -s/2
    elif variant == "gan":
        log_ratio = F.logsigmoid(s) - F.logsigmoid(-s)       # log (1-D)/D, D = sigma(-s)
    else:
        raise ValueError(f"unknown f-DIME variant {variant!r}; choose from {FDIME_VARIANTS}")
    return log_ratio.mean(-1)


# ---------------------------------------------------------------------------------------------
# alpha-InfoNCE: Poole et al. (2019) §2.5, the interpolated bound (eq. 12)
#   I >= 1 + E_p[log e^{f(x1,y)} / a(y; x_1:K)] - E_{p(x_1:K)p(y)}[e^{f(x1,y)} / a(y; x_1:K)],
#   a(y; x_1:K) = alpha m(y; x_1:K) + (1 - alpha) q(y),  m = (1/K) sum_k e^{f(x_k, y)}.
# alpha = 1 is InfoNCE, alpha = 0 is TUBA / NWJ with baseline q.  On a batch of K pairs the y of
# a product-of-marginals pair (x_i, y_j) is independent of the K - 1 x's other than x_j only, so
# the bound is evaluated with K - 1 contrast samples in both terms (leave-one-out means):
#   joint term    at (i, j), i != j:  f_jj - log(alpha loo(i, j) + (1 - alpha) q)
#   marginal term at (i, j), i != j:  e^{f_ij} / (alpha loo(j, j) + (1 - alpha) q)
# with loo(i, j) = mean_{k != i} e^{f_kj} (column j without row i; it contains x_j for i != j and
# x_i for the marginal term's denominator), each averaged over the K(K-1) off-diagonal cells.
# ---------------------------------------------------------------------------------------------

def log_loo_colmean(scores: torch.Tensor) -> torch.Tensor:
    """``out[i, j] = log mean_{k != i} exp(scores[k, j])`` (K x K), computed stably: rows other than
    a column's maximum subtract their term in log space (log1p of at most -1/2); the maximum's row
    is a masked logsumexp."""
    k = scores.shape[-1]
    lse = torch.logsumexp(scores, dim=-2, keepdim=True)                  # (.., 1, K)
    top = scores.argmax(dim=-2, keepdim=True)                            # (.., 1, K)
    is_top = torch.zeros_like(scores, dtype=torch.bool).scatter_(-2, top, True)
    without_top = torch.logsumexp(scores.masked_fill(is_top, float("-inf")), dim=-2, keepdim=True)
    # for a non-maximal row, e^{s_ij} <= half of the column sum, so log1p(-r) is well conditioned
    r = torch.exp((scores - lse).masked_fill(is_top, -1.0))
    others = lse + torch.log1p(-r)
    return torch.where(is_top, without_top.expand_as(scores), others) - math.log(k - 1)


def alpha_infonce_bound(scores: torch.Tensor, alpha: float, log_baseline=0.0) -> torch.Tensor:
    """Poole et al. (2019) §2.5 interpolated bound, batch form above; ``log_baseline`` = log q (a
    constant, possibly a learned parameter).  alpha = 0 with log q = 1 is exactly NWJ.  The value
    never exceeds 1 + log((K - 1)/alpha)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    k = scores.shape[-1]
    log_q = torch.as_tensor(log_baseline, dtype=scores.dtype, device=scores.device)
    log_1ma = math.log1p(-alpha) if alpha < 1.0 else float("-inf")
    if alpha > 0.0:
        loo = log_loo_colmean(scores) + math.log(alpha)
        log_a = torch.logaddexp(loo, log_q + log_1ma) if alpha < 1.0 else loo   # log a at (i, j)
    else:
        log_a = (log_q + log_1ma).expand_as(scores)
    eye = torch.eye(k, dtype=torch.bool, device=scores.device)
    diag = torch.diagonal(scores, dim1=-2, dim2=-1)                       # f_jj per column j
    log_a_jj = torch.diagonal(log_a, dim1=-2, dim2=-1)                    # per column j
    # off-diagonal means with the diagonal masked out (not subtracted: it may be inf / huge)
    joint = (diag.unsqueeze(-2) - log_a).masked_fill(eye, 0.0).sum((-2, -1)) / (k * (k - 1))
    off_diagonal = (scores - log_a_jj.unsqueeze(-2)).masked_fill(eye, float("-inf"))
    marginal = torch.exp(off_diagonal).sum((-2, -1)) / (k * (k - 1))
    return 1.0 + joint - marginal


# ---------------------------------------------------------------------------------------------
# Row forms: a bound written through the diagonal d (the K joint scores) and per-row reductions of
# the off-diagonal scores, so that a K x K matrix too large to hold can be read tile by tile
# (mibench.estimation.readout): every bound above except alpha-InfoNCE needs only
#   r_i = log sum_{j != i} exp(h(S_ij))    (h the identity or a clip),
# e.g. DV = mean(d) - (logsumexp_i r_i - log K(K-1)), InfoNCE = log K + mean_i(d_i - logaddexp(d_i, r_i)).
# ---------------------------------------------------------------------------------------------

#: one per-row statistic of the off-diagonal scores: ("logsumexp" or "sum", elementwise map or None)
Reduction = tuple[str, Callable[[torch.Tensor], torch.Tensor] | None]


def _one_logsumexp(d: torch.Tensor) -> tuple[Reduction, ...]:
    return (("logsumexp", None),)


@dataclass(frozen=True)
class RowForm:
    """A bound as ``finish(d, stats)``: ``d`` the (K,) diagonal, ``stats[k]`` the (K,) row statistic
    of ``reductions(d)[k]`` -- ``("logsumexp", h)``: log sum_{j != i} exp(h(S_ij)); ``("sum", h)``:
    sum_{j != i} h(S_ij) (h None: the identity).  ``reductions`` sees the whole diagonal first (a clip
    chosen from the joint scores); an empty tuple means the bound reads the diagonal only."""

    finish: Callable[[torch.Tensor, list], torch.Tensor]
    reductions: Callable[[torch.Tensor], tuple[Reduction, ...]] = _one_logsumexp

    def value(self, scores: torch.Tensor) -> torch.Tensor:
        """The bound on a whole (K, K) matrix through the row form (the reference for tests)."""
        k = scores.shape[-1]
        eye = torch.eye(k, dtype=torch.bool, device=scores.device)
        d = torch.diagonal(scores)
        stats = []
        for kind, h in self.reductions(d):
            mapped = scores if h is None else h(scores)
            if kind == "logsumexp":
                stats.append(torch.logsumexp(mapped.masked_fill(eye, float("-inf")), dim=-1))
            else:
                stats.append(mapped.masked_fill(eye, 0.0).sum(-1))
        return self.finish(d, stats)


def _log_pairs(k: int) -> float:
    return math.log(k * (k - 1))


def _dv_rows(d, stats):
    return d.mean() - (torch.logsumexp(stats[0], 0) - _log_pairs(d.numel()))


def _nwj_rows(d, stats):
    return d.mean() - torch.exp(torch.logsumexp(stats[0], 0) - _log_pairs(d.numel()) - 1.0)


def _js_rows(d, stats):        # NWJ on f + 1
    return d.mean() + 1.0 - torch.exp(torch.logsumexp(stats[0], 0) - _log_pairs(d.numel()))


def _infonce_rows(d, stats):
    return math.log(d.numel()) + (d - torch.logaddexp(d, stats[0])).mean()


def tuba_rows(d, stats, log_baseline):
    """:func:`tuba_bound`'s row form (``finish`` with the baseline bound by ``functools.partial``)."""
    lb = torch.as_tensor(log_baseline, dtype=d.dtype, device=d.device)
    return 1.0 + d.mean() - lb - torch.exp(torch.logsumexp(stats[0], 0) - _log_pairs(d.numel()) - lb)


def _clip_reductions(clip: float, d):
    return (("logsumexp", lambda s: s.clamp(-clip, clip)),)


def _adaptive_reductions(floor: float, quantile: float, d):
    tau = torch.quantile(d.float(), quantile).to(d.dtype).clamp_min(floor)
    return (("logsumexp", lambda s: torch.minimum(s, tau)),)


_ROW_FORMS = {dv_bound: RowForm(_dv_rows), nwj_bound: RowForm(_nwj_rows), infonce_bound: RowForm(_infonce_rows),
              js_estimate: RowForm(_js_rows), js_paper_estimate: RowForm(_nwj_rows)}


def row_form(bound) -> RowForm | None:
    """The :class:`RowForm` of one of this module's bounds (a ``functools.partial`` of
    :func:`smile_bound` or :func:`smile_adaptive_bound` included), else None."""
    if isinstance(bound, partial) and not bound.args:
        kw = bound.keywords
        if bound.func is smile_bound and set(kw) == {"clip"}:
            clip = kw["clip"]
            return RowForm(_dv_rows) if clip is None else RowForm(_dv_rows, partial(_clip_reductions, float(clip)))
        if bound.func is smile_adaptive_bound and set(kw) <= {"floor", "quantile"}:
            return RowForm(_dv_rows, partial(_adaptive_reductions, kw.get("floor", 5.0), kw.get("quantile", 0.995)))
        return None
    if bound is smile_adaptive_bound:
        return RowForm(_dv_rows, partial(_adaptive_reductions, 5.0, 0.995))
    try:
        form = _ROW_FORMS.get(bound)
    except TypeError:          # an unhashable callable
        form = None
    # a bound defined elsewhere (mibench.estimators.kl_lower_bounds) carries its own as ``row_form``
    return form if form is not None else getattr(bound, "row_form", None)
