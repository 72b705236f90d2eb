"""MI-based disentanglement metrics on factors y (n × K) and codes z (n × L), with any MI back-end.

Every metric is computed from an :class:`InfoTable` of mutual informations, estimated once by an
MI back-end (:mod:`~mibench.disentanglement.backends`) or computed exactly (the analytic toy model,
:mod:`~mibench.disentanglement.toy`); the same formulas therefore give both the estimate and the
analytic value.

Normalisation: a summand for a discrete factor is divided by its entropy H(y_k) (plug-in, nats), so
scores lie in [0, 1]; for a continuous factor the differential entropy does not normalise anything
(Tokui & Sato, §5.1: "dividing by it does not normalize the score when y_k is continuous") and the
summand is left **unnormalised, in nats**.

Metrics (names as in :data:`MI_METRICS`; each formula and its citation on its function):

* ``mig`` — Chen et al. (2018); Tokui eq. 3.
* ``unibound`` (= ``u_lower``) — Tokui eq. 6.
* the six bounds of Tokui eq. 7, aggregated like UniBound (Tokui §5.2): ``u_lower``, ``u_upper``
  (eq. 7 as printed), ``r_lower``, ``r_upper``, ``c_lower``, ``c_upper``, and
  ``u_upper_unclipped``, the unique-information upper bound of Tokui's Table 1 (:func:`pid_terms`).
* ``dcimig`` — Sepliarskaia et al. §4.1.
* ``minimality_mi`` / ``sufficiency_mi`` — Almudévar et al. (ICLR) eqs. 5–8 with MI from the
  back-end (without ``x`` the data are taken to carry exactly the factors' information, x ≡ y).
* ``ridgeway_modularity`` — Ridgeway & Mozer (2018), on the MI matrix (disentanglement_lib's form).

Which metric means what, and the two forms of the unique upper bound: docs/disentanglement.md.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from mibench.disentanglement.backends import BackendUnsupported, MIBackend, get_backend
from mibench.disentanglement.posterior import GaussianPosterior
from mibench.errors import MibenchError
from mibench.estimators.classical import discrete_entropy, row_labels
from mibench.utils.checks import as_2d, check_same_rows, resolve_discrete

PARTS = ("pair", "rest", "full", "code_y", "code_x")

#: Floor (nats) on the minimality denominator I(z_j; x): m_ij = I(z_j; y_i) / max(I(z_j; x), floor).
#: A variable carrying (almost) no information then scores ≈ 0, as pure noise does in Almudévar
#: NeurIPS Table 11, instead of a ratio of two noise-level estimates; the metric stays continuous.
MIN_INFO_NATS = 0.05


@dataclass(frozen=True)
class InfoTable:
    """The mutual informations the metrics need (nats).

    pair[k, l] = I(y_k; z_l); rest[k, l] = I(y_k; z_∖l); full[k] = I(y_k; z);
    code_y[l] = I(z_l; y) (the whole factor vector); code_x[l] = I(z_l; x) when data x were given.
    normaliser[k] = H(y_k) for a discrete factor, 1 for a continuous one.
    """

    pair: np.ndarray
    normaliser: np.ndarray
    discrete: np.ndarray
    rest: np.ndarray | None = None
    full: np.ndarray | None = None
    code_y: np.ndarray | None = None
    code_x: np.ndarray | None = None
    backend: str = ""

    @property
    def n_factors(self) -> int:
        return self.pair.shape[0]

    @property
    def n_codes(self) -> int:
        return self.pair.shape[1]

    def need(self, *parts: str) -> None:
        missing = [p for p in parts if getattr(self, p) is None]
        if missing:
            raise MibenchError(f"this metric needs the MI table parts {missing}; compute them with "
                               "info_table(parts=...)")


# ---------------------------------------------------------------------------------------------
# estimating the table
# ---------------------------------------------------------------------------------------------

def _code_dim(z) -> int:
    return z.dim if isinstance(z, GaussianPosterior) else z.shape[1]


def _subset(z, dims):
    if isinstance(z, GaussianPosterior):
        return z.subset(dims)
    return z[:, dims]


def prepare(y, z, discrete=None):
    """Validated (y (n, K), z (n, L) array or GaussianPosterior, discrete flags (K,))."""
    y = as_2d(y, "y (factors)")
    if isinstance(z, GaussianPosterior):
        check_same_rows(**{"y (factors)": y, "z (codes)": z.samples})
    else:
        z = as_2d(z, "z (codes)")
        check_same_rows(**{"y (factors)": y, "z (codes)": z})
    return y, z, resolve_discrete(y, discrete)


def normalisers(y: np.ndarray, discrete: np.ndarray) -> np.ndarray:
    """H(y_k) for discrete factors, 1 for continuous ones (see the module docstring); a constant factor,
    discrete or continuous, is refused."""
    out = np.array([discrete_entropy(y[:, k]) if discrete[k] else 1.0 for k in range(y.shape[1])])
    constant = np.flatnonzero((out <= 0) | (np.ptp(y, axis=0) == 0))
    if constant.size:
        raise MibenchError(f"factor {constant[0]} is constant (H = 0): it cannot be disentangled; drop it")
    return out


def table_part(y: np.ndarray, z, backend, discrete: np.ndarray, part: str, x=None) -> np.ndarray:
    """One part of the :class:`InfoTable` (validated inputs from :func:`prepare`).

    Cost in back-end calls: K·L for ``pair`` and ``rest``, K for ``full``, L for ``code_y``/``code_x``.
    """
    be: MIBackend = get_backend(backend)
    K, L = y.shape[1], _code_dim(z)

    def per_factor(zS) -> np.ndarray:
        return np.array([be.mi(y[:, k], zS, discrete_y=discrete[k]) for k in range(K)])

    if part == "pair":
        return np.stack([per_factor(_subset(z, [l])) for l in range(L)], axis=1)
    if part == "rest":
        if L < 2:
            raise MibenchError("I(y_k; z_∖l) needs at least two code dimensions")
        return np.stack([per_factor(_subset(z, [j for j in range(L) if j != l])) for l in range(L)], axis=1)
    if part == "full":
        return per_factor(_subset(z, list(range(L))))
    if part == "code_y":  # I(z_l; y) with the whole factor vector; mixed factors go to the back-end as continuous
        try:
            return np.array([be.mi(y, _subset(z, [l]), discrete_y=bool(discrete.all())) for l in range(L)])
        except BackendUnsupported as exc:
            what = "the joint label of the factors" if discrete.all() and K > 1 else "the factor vector"
            raise BackendUnsupported(f"I(z_l; y), which minimality_mi needs, reads {what}: {exc}") from None
    if part == "code_x":
        if x is None:
            raise MibenchError("the code_x part needs the data x")
        xx = as_2d(x, "x (data)")
        check_same_rows(**{"y (factors)": y, "x (data)": xx})
        return np.array([be.mi(xx, _subset(z, [l]), discrete_y=False) for l in range(L)])
    raise MibenchError(f"unknown MI table part {part!r}; choose from {', '.join(PARTS)}")


def info_table(y, z, backend="ksg", *, discrete=None, parts=("pair", "rest", "full"), x=None) -> InfoTable:
    """Estimate the requested parts of the :class:`InfoTable` (``pair`` always) with one MI back-end.

    Where a back-end is known to be off for these inputs the table is still returned, with a
    :class:`DisentanglementWarning` saying why (:func:`_warn_where_unreliable`)."""
    be: MIBackend = get_backend(backend)
    y, z, disc = prepare(y, z, discrete)
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise MibenchError(f"unknown MI table parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    if x is not None:
        check_same_rows(**{"y (factors)": y, "x (data)": as_2d(x, "x (data)", flatten=True)})
    norm = normalisers(y, disc)
    wanted = ["pair", *[q for q in PARTS if q in parts and q != "pair"]]
    _warn_where_unreliable(be, y, disc, _code_dim(z), wanted)
    out = {p: table_part(y, z, be, disc, p, x=x) for p in wanted}
    # I(z_l; y) for a discrete factor vector: at most the joint entropy H(y)
    joint = discrete_entropy(row_labels(y)) if disc.all() else None
    _cap_at_entropy(out, norm, disc, be.name, joint)
    return InfoTable(normaliser=norm, discrete=disc, backend=be.name, **out)


#: an estimate of I(y_k; z) above H(y_k) by more than this share is reported (a warning), not only capped
CAP_WARN_SHARE = 0.05


class DisentanglementWarning(UserWarning):
    """A score may be off for these inputs (a back-end outside its range, factors of two kinds): the
    message says why and what to change."""


class EntropyCapWarning(DisentanglementWarning):
    """A back-end's I(y_k; z) exceeded H(y_k) for a discrete factor and was capped there."""


def _stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside this package folder (the
    user's line, whichever of the wrappers it went through)."""
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


def _warn_where_unreliable(be: MIBackend, y: np.ndarray, discrete: np.ndarray, n_codes: int, parts) -> None:
    """Warn (:class:`DisentanglementWarning`) where the table's numbers are known to be off, before
    estimating them:

    * factors of both kinds: a discrete factor's term is a ratio in [0, 1], a continuous one's is in
      nats (module docstring), so a score averaged over factors mixes two units;
    * ``gaussian`` on a discrete factor: the closed form is exact for jointly Gaussian variables only,
      and a one-hot factor is not one (it can read more or less than the MI; no bound either way);
    * a histogram back-end whose plug-in bias, (C - 1)(B - 1) / 2n nats for C classes against B bins
      (Paninski 2003), exceeds :data:`~mibench.estimators.classical.HISTOGRAM_BIAS_NATS`: that bias is
      read as information, so an independent code scores above 0;
    * ``ksg`` on code subsets of more than :data:`~mibench.estimators.classical.KSG_RELIABLE_SIDE_DIMS`
      dimensions (the parts ``rest`` and ``full``): k-NN estimates fall far below the truth there, so the
      bounds built on them (UniBound, the PID bounds) are unreliable (docs/disentanglement.md)."""
    import warnings

    from mibench.estimators.classical import HISTOGRAM_BIAS_NATS, KSG_RELIABLE_SIDE_DIMS, plugin_bias_nats

    notes = []
    if discrete.any() and not discrete.all():
        notes.append(f"factors {np.flatnonzero(~discrete).tolist()} are continuous and the others discrete: a "
                     "continuous factor's term is in nats, a discrete one's a ratio in [0, 1], so a score averaged "
                     "over factors mixes the two (pass discrete= to say which are which, or score the groups apart)")
    if be.name == "gaussian" and discrete.any():
        notes.append("the gaussian back-end is exact for jointly Gaussian variables only; on a discrete factor "
                     "(one-hot) it can read more or less than the MI: prefer histogram or ksg")
    if be.bins is not None:
        n = y.shape[0]
        b = min(be.bins, n)
        classes = [np.unique(y[:, k]).size if discrete[k] else b for k in range(y.shape[1])]
        bias = max(plugin_bias_nats(c, b, n) for c in classes)
        if bias > HISTOGRAM_BIAS_NATS:
            notes.append(f"the {be.name} back-end's plug-in bias, (C - 1)(B - 1) / 2n = {bias:.3f} nats at n = {n}, "
                         "is read as information (an independent code scores above 0): use fewer bins or more "
                         "samples")
    if be.name.startswith("ksg") and {"rest", "full"} & set(parts) and n_codes - 1 > KSG_RELIABLE_SIDE_DIMS:
        notes.append(f"ksg estimates I(y_k; z_S) on code subsets of {n_codes - 1}-{n_codes} dimensions, where "
                     f"k-NN estimates fall far below the truth (reliable up to {KSG_RELIABLE_SIDE_DIMS}): "
                     "UniBound and the PID bounds built on them are unreliable; prefer gaussian, posterior or "
                     "neural:<estimator>")
    for note in notes:
        warnings.warn(note, DisentanglementWarning, stacklevel=_stacklevel())


def _cap_at_entropy(parts: dict, normaliser: np.ndarray, discrete: np.ndarray, backend: str,
                    joint: float | None = None) -> None:
    """Cap I(y_k; .) at H(y_k) for discrete factors, in place: no code can carry more about a discrete factor
    than its entropy, so a larger estimate (the Gaussian closed form on a discrete factor reads the linear
    relation of a near-copy as several nats) is the back-end's error, and left uncapped it would make a
    normalised score exceed 1.  A cap of more than :data:`CAP_WARN_SHARE` is a warning."""
    import warnings

    worst = 0.0
    for name in ("pair", "rest", "full"):
        arr = parts.get(name)
        if arr is None:
            continue
        for k in np.flatnonzero(discrete):
            row = arr[k]
            worst = max(worst, float(np.max(row)) / normaliser[k] - 1.0)
            arr[k] = np.minimum(row, normaliser[k])
    if joint is not None and parts.get("code_y") is not None:      # I(z_l; y) <= H(y), y all discrete
        worst = max(worst, float(np.max(parts["code_y"])) / joint - 1.0)
        parts["code_y"] = np.minimum(parts["code_y"], joint)
    if worst > CAP_WARN_SHARE:
        warnings.warn(f"the {backend} back-end estimated the MI of a discrete factor (or of the discrete factor "
                      f"vector) up to {worst + 1:.2f} x its entropy; capped there (the most any code can carry), "
                      "but the scores built on these estimates are unreliable: for discrete factors prefer the "
                      "histogram or ksg back-end", EntropyCapWarning, stacklevel=_stacklevel())


# ---------------------------------------------------------------------------------------------
# metrics from a table
# ---------------------------------------------------------------------------------------------

def _aggregate(per_pair: np.ndarray, t: InfoTable) -> float:
    """Tokui's aggregation: max over code dimensions l, divide by H(y_k), mean over factors k."""
    return float(np.mean(per_pair.max(axis=1) / t.normaliser))


def mig_from_table(t: InfoTable) -> float:
    """MIG (Chen et al. 2018; Tokui eq. 3): mean_k (top − second I(y_k; z_l)) / H(y_k)."""
    s = -np.sort(-t.pair, axis=1)
    second = s[:, 1] if s.shape[1] > 1 else 0.0
    return float(np.mean((s[:, 0] - second) / t.normaliser))


def pid_terms(t: InfoTable) -> dict[str, np.ndarray]:
    """The per-(k, l) bounds of Tokui eq. 7 plus the unclipped unique upper bound (K × L each).

    II = I(y_k;z_l) + I(y_k;z_∖l) − I(y_k;z) is the interaction information; ``u_upper`` is eq. 7 as
    printed, I(y_k;z_l) − [II]₊, and ``u_upper_unclipped`` = I(y_k;z_l) − II = I(y_k;z) − I(y_k;z_∖l) is
    the unique-information upper bound of Tokui's Table 1 and §5.1 (it stays at ½ log(1 + 1/σ²) under
    the synergy attack).  Both are valid upper bounds; the clipped form is never larger (u_upper = min
    of the two), and it falls with α under the synergy attack."""
    t.need("rest", "full")
    i_l, i_rest, i_all = t.pair, t.rest, t.full[:, None]
    ii = i_l + i_rest - i_all  # interaction information I(y_k; z_l; z_∖l)
    lesser = np.minimum(i_l, i_rest)
    return {
        "u_lower": np.maximum(i_l - i_rest, 0.0),  # eq. 5 / 7: UniBound summand
        "u_upper": i_l - np.maximum(ii, 0.0),  # eq. 7 as printed
        "u_upper_unclipped": i_all - i_rest,  # = I(y;z_l) − II; Table 1's "U upper bound"
        "r_lower": np.maximum(ii, 0.0),
        "r_upper": lesser,
        "c_lower": np.maximum(-ii, 0.0),
        "c_upper": lesser - ii,
    }


def pid_bounds_from_table(t: InfoTable) -> dict[str, float]:
    """All bounds aggregated like UniBound (Tokui §3.4 and §5.2)."""
    return {name: _aggregate(v, t) for name, v in pid_terms(t).items()}


def unibound_from_table(t: InfoTable) -> float:
    """UniBound, Tokui eq. 6."""
    t.need("rest")
    return _aggregate(np.maximum(t.pair - t.rest, 0.0), t)


def dcimig_from_table(t: InfoTable) -> float:
    """DCIMIG, Sepliarskaia et al. §4.1 (steps 1-5), on I[l, j] = I(y_j; z_l): Σ_j D_j / Σ_j H(y_j)
    (continuous factors contribute 1 nat to the denominator instead of H, i.e. the mean D_j in nats when
    all factors are continuous)."""
    info = t.pair.T  # (L, K): latent i, factor j
    L, K = info.shape
    if K < 2:
        gaps = info[:, 0]
        best = np.zeros(L, dtype=int)
    else:
        best = np.argmax(info, axis=1)  # step 1: the factor each latent reflects most
        s = -np.sort(-info, axis=1)
        gaps = s[:, 0] - s[:, 1]  # step 2: D_i
    d_factor = np.zeros(K)
    for j in range(K):  # steps 3-4: the most disentangled latent reflecting factor j, else 0
        members = gaps[best == j]
        d_factor[j] = members.max() if members.size else 0.0
    return float(d_factor.sum() / t.normaliser.sum())  # step 5


def minimality_mi_from_table(t: InfoTable, min_info: float = MIN_INFO_NATS) -> float:
    """ICLR eqs. 5-6: mean_j max_i I(z_j; y_i) / max(I(z_j; x), min_info); x ≡ y unless code_x was given.

    Without ``x`` the data are taken to carry exactly the factors' information (no nuisances), so
    I(z_j; x) = I(z_j; y), which makes m_ij the factors-invariance ratio of their eq. 49."""
    denom = t.code_x if t.code_x is not None else t.code_y
    if denom is None:
        raise MibenchError("minimality needs I(z_j; y) (parts code_y) or I(z_j; x) (parts code_x)")
    ratio = t.pair / np.maximum(denom, min_info)[None, :]
    return float(np.mean(np.clip(ratio, 0.0, 1.0).max(axis=0)))


def sufficiency_mi_from_table(t: InfoTable) -> float:
    """ICLR eqs. 7-8: mean_i max_j I(y_i; z_j) / I(y_i; x) with I(y_i; x) = H(y_i) (discrete factors)."""
    if not t.discrete.all():
        raise MibenchError(
            "sufficiency (ICLR eq. 7) divides by I(y_i; x), which is H(y_i) for a discrete factor and infinite "
            "for a continuous one; use the regressor estimate sufficiency() instead"
        )
    return float(np.mean(np.clip(t.pair / t.normaliser[:, None], 0.0, 1.0).max(axis=1)))


def ridgeway_modularity_from_table(t: InfoTable) -> float:
    """Ridgeway & Mozer (2018) modularity on the MI matrix (disentanglement_lib's implementation)."""
    sq = np.square(t.pair.T)  # (L, K)
    top = sq.max(axis=1)
    if sq.shape[1] < 2:         # one factor: a latent is modular if it carries any of it, as below
        return float(np.mean(top > 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = (sq.sum(axis=1) - top) / (top * (sq.shape[1] - 1.0))
    score = np.where(top > 0, 1.0 - delta, 0.0)
    return float(np.mean(score))


@dataclass(frozen=True)
class MIMetric:
    name: str
    parts: tuple[str, ...]
    fn: Callable[[InfoTable], float]
    description: str


def _bound(name: str) -> Callable[[InfoTable], float]:
    return lambda t: _aggregate(pid_terms(t)[name], t)


MI_METRICS: dict[str, MIMetric] = {
    m.name: m
    for m in [
        MIMetric("mig", ("pair",), mig_from_table, "Mutual Information Gap (Chen et al. 2018; Tokui eq. 3)"),
        MIMetric("unibound", ("pair", "rest"), unibound_from_table,
                 "UniBound, unique-information lower bound (Tokui eq. 6)"),
        MIMetric("u_upper", ("pair", "rest", "full"), _bound("u_upper"),
                 "unique upper bound, eq. 7 as printed: I(y;z_l) - [II]+"),
        MIMetric("u_upper_unclipped", ("pair", "rest", "full"), _bound("u_upper_unclipped"),
                 "unique upper bound of Tokui Table 1: I(y;z) - I(y;z_without_l)"),
        MIMetric("r_lower", ("pair", "rest", "full"), _bound("r_lower"), "redundancy lower bound [II]+ (eq. 7)"),
        MIMetric("r_upper", ("pair", "rest", "full"), _bound("r_upper"),
                 "redundancy upper bound min(I(y;z_l), I(y;z_without_l)) (eq. 7)"),
        MIMetric("c_lower", ("pair", "rest", "full"), _bound("c_lower"), "synergy lower bound [-II]+ (eq. 7)"),
        MIMetric("c_upper", ("pair", "rest", "full"), _bound("c_upper"), "synergy upper bound min(...) - II (eq. 7)"),
        MIMetric("dcimig", ("pair",), dcimig_from_table, "DCIMIG (Sepliarskaia et al. §4.1)"),
        MIMetric("minimality_mi", ("pair", "code_y"), minimality_mi_from_table,
                 "Minimality with MI, x = y (Almudevar ICLR eqs. 5-6)"),
        MIMetric("sufficiency_mi", ("pair",), sufficiency_mi_from_table,
                 "Sufficiency with MI, discrete factors (Almudevar ICLR eqs. 7-8)"),
        MIMetric("ridgeway_modularity", ("pair",), ridgeway_modularity_from_table,
                 "Ridgeway & Mozer (2018) modularity"),
    ]
}


def get_mi_metric(name: str) -> MIMetric:
    key = str(name).strip().lower()
    if key == "u_lower":
        key = "unibound"
    if key not in MI_METRICS:
        raise MibenchError(f"unknown MI-based metric {name!r}; choose from: {', '.join(MI_METRICS)}")
    return MI_METRICS[key]


def mi_metrics(y, z, metrics=("mig", "unibound"), backend="ksg", *, discrete=None, x=None,
               table: InfoTable | None = None) -> dict[str, float]:
    """Several MI-based metrics from one :class:`InfoTable` (estimated once, only the parts needed); one
    name alone is one metric."""
    names = [str(m).strip().lower() for m in ([metrics] if isinstance(metrics, str) else metrics)]
    chosen = {name: get_mi_metric(name) for name in names}        # keyed as asked (u_lower is unibound)
    if table is None:
        parts = {p for m in chosen.values() for p in m.parts}
        if x is not None and "code_y" in parts:
            parts = (parts - {"code_y"}) | {"code_x"}
        table = info_table(y, z, backend, discrete=discrete, parts=tuple(sorted(parts)), x=x)
    return {name: m.fn(table) for name, m in chosen.items()}


# -- one-call convenience wrappers ------------------------------------------------------------

def mig(y, z, backend="histogram", *, discrete=None) -> float:
    """MIG (Tokui eq. 3). Default back-end: disentanglement_lib's 20-bin histogram."""
    return mi_metrics(y, z, ["mig"], backend, discrete=discrete)["mig"]


def unibound(y, z, backend="ksg", *, discrete=None) -> float:
    """UniBound (Tokui eq. 6)."""
    return mi_metrics(y, z, ["unibound"], backend, discrete=discrete)["unibound"]


def pid_bounds(y, z, backend="ksg", *, discrete=None) -> dict[str, float]:
    """All six bounds of Tokui eq. 7 and the unclipped unique upper bound, aggregated like UniBound."""
    return pid_bounds_from_table(info_table(y, z, backend, discrete=discrete))


def dcimig(y, z, backend="histogram", *, discrete=None) -> float:
    """DCIMIG (Sepliarskaia et al. §4.1)."""
    return mi_metrics(y, z, ["dcimig"], backend, discrete=discrete)["dcimig"]


def minimality_mi(y, z, backend="ksg", *, discrete=None, x=None, min_info: float = MIN_INFO_NATS) -> float:
    """Minimality (Almudévar ICLR eqs. 5-6) with MI from a back-end; see the module docstring."""
    parts = ("pair", "code_x") if x is not None else ("pair", "code_y")
    t = info_table(y, z, backend, discrete=discrete, parts=parts, x=x)
    return minimality_mi_from_table(t, min_info=min_info)


def sufficiency_mi(y, z, backend="histogram", *, discrete=None) -> float:
    """Sufficiency (Almudévar ICLR eqs. 7-8) with MI from a back-end; discrete factors only."""
    return mi_metrics(y, z, ["sufficiency_mi"], backend, discrete=discrete)["sufficiency_mi"]


def ridgeway_modularity(y, z, backend="histogram", *, discrete=None) -> float:
    """Ridgeway & Mozer (2018) modularity on the back-end's MI matrix."""
    return mi_metrics(y, z, ["ridgeway_modularity"], backend, discrete=discrete)["ridgeway_modularity"]


def with_normaliser(t: InfoTable, normaliser) -> InfoTable:
    """A copy of ``t`` normalised differently (e.g. by analytic entropies)."""
    return replace(t, normaliser=np.asarray(normaliser, dtype=float))
