"""The estimator registry ``ESTIMATORS``: every built-in estimator by name, with the families of
names (``smile-<tau>``, ``alpha-infonce-<alpha>``, ``ksg-<k>``, ``histogram-<bins>``), plug-ins found
by ``package.module:Name`` or entry point (:class:`~mibench.estimators.lookup.PluginRegistry`),
and the look-ups built on it (canonical names, kinds, the critics the streaming protocol trains)."""
from __future__ import annotations

import math
from functools import partial

from mibench.errors import MibenchError
from mibench.estimators.bounds import (
    dv_bound,
    infonce_bound,
    js_estimate,
    js_paper_estimate,
    nwj_bound,
    smile_adaptive_bound,
    smile_bound,
)
from mibench.estimators.heads import BoundEstimator, Estimator, JSTrainedEstimator, MINEEstimator, TUBAEstimator
from mibench.estimators.kinds import ESTIMATE, LOWER_BOUND, SAMPLE_KINDS, ClassFactory
from mibench.estimators.kl_lower_bounds import jsd_kl_bound, nishiyama_bound
from mibench.estimators.lookup import PluginRegistry
from mibench.utils.registry import Entry

ESTIMATORS: PluginRegistry = PluginRegistry("estimator")


def _log_k(k: int) -> float:
    return math.log(k)


ESTIMATORS.add("nwj", "NWJ / f-GAN KL / MINE-f bound, a(y) = e (trained and reported)",
               ClassFactory(BoundEstimator, (nwj_bound,), LOWER_BOUND))
ESTIMATORS.add("js", "trained with the Jensen-Shannon f-GAN objective, reported with NWJ on f + 1",
               ClassFactory(JSTrainedEstimator, (js_estimate,), LOWER_BOUND))
ESTIMATORS.add("js-paper", "the paper's JS readout (authors' code): the JS-trained critic (shared with js) reported "
               "with NWJ on f, 1/e nats = 0.53 bits below js at the optimum",
               ClassFactory(JSTrainedEstimator, (js_paper_estimate, 1 / math.e), LOWER_BOUND))
ESTIMATORS.add("infonce", "InfoNCE / CPC contrastive bound; cannot exceed log K (batch size)",
               ClassFactory(BoundEstimator, (infonce_bound, _log_k), LOWER_BOUND), aliases=("nce", "cpc"))
ESTIMATORS.add("dv", "Donsker-Varadhan bound (trained and reported)",
               ClassFactory(BoundEstimator, (dv_bound,), LOWER_BOUND))
ESTIMATORS.add("mine", "DV value; gradient de-biased with an EMA (0.9) of the partition term",
               ClassFactory(MINEEstimator, (), LOWER_BOUND))
ESTIMATORS.add("smile-5", "SMILE (alias smile), tau = 5: JS-trained critic, DV with partition term clipped to [-5, 5]",
               ClassFactory(JSTrainedEstimator, (partial(smile_bound, clip=5.0),)), aliases=("smile",))
ESTIMATORS.add("smile-adaptive", "SMILE with tau = max(5, the 99.5th percentile of the joint-pair scores): JS-trained "
               "critic, DV with partition scores capped there (bias <= ~0.005 nats instead of growing with the MI)",
               ClassFactory(JSTrainedEstimator, (smile_adaptive_bound,)))
ESTIMATORS.add("nishiyama", "Nishiyama's KL lower bound from the critic's means and variances on joint and shuffled "
               "pairs (arXiv:1907.00288, Thm 1; trained and reported)",
               ClassFactory(BoundEstimator, (nishiyama_bound,), LOWER_BOUND))
ESTIMATORS.add("jsd-kl", "MI lower bound Xi(JSD) from the JS-trained classifier's JSD bound (Dorent et al., NeurIPS "
               "2025, arXiv:2510.20644); shares the js critic",
               ClassFactory(JSTrainedEstimator, (jsd_kl_bound,), LOWER_BOUND))
ESTIMATORS.add("tuba", "TUBA bound with a learned constant baseline", ClassFactory(TUBAEstimator, (), LOWER_BOUND))


def _smile_factory(match) -> Entry:
    tau_text = match.group(1).lower()
    if tau_text in ("inf", "infinity"):
        tau, name = None, "smile-inf"
    else:
        tau = float(tau_text)
        if not math.isfinite(tau) or tau <= 0:
            raise MibenchError(f"SMILE clip tau must be > 0, got {tau_text!r}")
        name = f"smile-{tau:g}"
    desc = f"SMILE with clip tau = {tau_text}"
    return Entry(name, desc, ClassFactory(JSTrainedEstimator, (partial(smile_bound, clip=tau),),
                                                LOWER_BOUND if tau is None else ESTIMATE))


ESTIMATORS.add_pattern(r"smile-(inf|infinity|[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)",
                       "smile-<tau> (e.g. smile-1, smile-5, smile-inf)", _smile_factory)

#: the paper's estimator line-up (Table 3), used by ``--estimator all``
PAPER_ESTIMATORS = ["nwj", "js", "infonce", "dv", "mine", "smile-1", "smile-5", "smile-inf"]
#: the name ``--estimator`` reads as :data:`PAPER_ESTIMATORS` (so no estimator may be registered under it)
ALL = "all"


def resolve_estimators(spec) -> list[str]:
    """``"smile,nwj"`` / ``["smile"]`` / ``"all"`` -> canonical names (validated, de-duplicated)."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        for name in (PAPER_ESTIMATORS if item.lower() == ALL else [ESTIMATORS.get(item).name]):
            if name not in names:
                names.append(name)
    if not names:
        raise MibenchError("no estimator given")
    return names


def make_estimator(name: str) -> Estimator:
    return ESTIMATORS.get(name).obj()


def training_key(name: str) -> str:
    """What a critic trained for estimator ``name`` is trained by: its shared objective (declared on
    its class), or its name."""
    entry = ESTIMATORS.get(name)
    return entry.obj.training_objective or entry.name


def training_groups(names: list[str]) -> dict[str, list[int]]:
    """Indices into ``names`` keyed by :func:`training_key`, in order of first appearance: one
    critic is trained per group.  ``["nwj", "js", "smile-5"]`` -> ``{"nwj": [0], "js-fgan": [1, 2]}``."""
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(training_key(name), []).append(i)
    return groups


# --- f-DIME and alpha-InfoNCE: score-matrix heads in .fdime, bounds in .bounds -------------------------

def _fdime(variant: str) -> ClassFactory:
    return ClassFactory("mibench.estimators.fdime:FDIMEEstimator", (variant,))


ESTIMATORS.add("f-dime-kl", "f-DIME, KL divergence, derangement training (Letizia et al. 2024); readout E_p[log D]",
               _fdime("kl"), aliases=("kl-dime",))
ESTIMATORS.add("f-dime-hd", "f-DIME, squared Hellinger, derangement training (Letizia et al. 2024); "
               "readout E_p[log 1/D^2]", _fdime("hd"), aliases=("hd-dime",))
ESTIMATORS.add("f-dime-gan", "f-DIME (alias f-dime), GAN divergence, derangement training (Letizia et al. 2024); "
               "readout E_p[log (1-D)/D]", _fdime("gan"), aliases=("f-dime", "gan-dime"))


def _alpha_infonce_entry(text: str) -> Entry:
    alpha = float(text)
    if not 0.0 < alpha < 1.0:
        raise MibenchError(f"alpha-InfoNCE needs 0 < alpha < 1, got {text!r} (alpha 1 is infonce, 0 is tuba/nwj)")

    factory = ClassFactory("mibench.estimators.fdime:AlphaInfoNCEEstimator", (alpha,), LOWER_BOUND)
    return Entry(f"alpha-infonce-{alpha:g}", f"alpha-InfoNCE (Poole et al. 2019 §2.5), alpha = {alpha:g}", factory)


ESTIMATORS.add_pattern(r"alpha-infonce-([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)", "alpha-infonce-<alpha> (0 < alpha < 1)",
                       lambda m: _alpha_infonce_entry(m.group(1)))
ESTIMATORS.add("alpha-infonce-0.5", "alpha-InfoNCE (alias alpha-infonce): Poole et al. 2019 §2.5 interpolation of "
               "InfoNCE and NWJ, alpha = 0.5, learned baseline", _alpha_infonce_entry("0.5").obj,
               aliases=("alpha-infonce",))


# --- classical black-box estimators: mibench.estimators.classical -------------------------------------

def _baseline(cls_name: str, *args) -> ClassFactory:
    return ClassFactory(f"mibench.estimators.classical:{cls_name}", args)


def _int_param(text: str, what: str, least: int) -> int:
    value = int(text)
    if value < least:
        raise MibenchError(f"{what} must be >= {least}, got {text}")
    return value


ESTIMATORS.add("ksg", "black-box: Kraskov-Stoegbauer-Grassberger k-NN estimator 1, k = 3 (sample protocol)",
               _baseline("KSG", 3))
ESTIMATORS.add("gaussian", "black-box: Gaussian closed form / CCA on sample covariances (sample protocol)",
               _baseline("GaussianCCA"), aliases=("cca",))
ESTIMATORS.add("histogram", "black-box: plug-in MI on 20 equal-width bins, 1-d x and y only (sample protocol)",
               _baseline("Histogram", 20))
ESTIMATORS.add_pattern(r"ksg-([0-9]+)", "ksg-<k> (k nearest neighbours)",
                       lambda m: Entry(f"ksg-{int(m.group(1))}", f"KSG estimator 1 with k = {int(m.group(1))}",
                                       _baseline("KSG", _int_param(m.group(1), "ksg k", 1))))
ESTIMATORS.add_pattern(r"histogram-([0-9]+)", "histogram-<bins>",
                       lambda m: Entry(f"histogram-{int(m.group(1))}", f"plug-in MI on {int(m.group(1))} bins",
                                       _baseline("Histogram", _int_param(m.group(1), "histogram bins", 2))))


# --- generative: mibench.estimators.generative --------------------------------------------------------

ESTIMATORS.add("doe-flow", "generative: difference of entropies H(Y) - H(Y|X) with two normalising flows "
               "(McAllester & Stratos 2020; zuko MAF), held-out (sample protocol)",
               ClassFactory("mibench.estimators.generative:DoEFlow"))


def _family(cls_name: str) -> ClassFactory:
    return ClassFactory(f"mibench.estimators.generative.family:{cls_name}")


def _family_in(module: str, cls_name: str, **options) -> ClassFactory:
    return ClassFactory(f"mibench.estimators.generative.{module}:{cls_name}", options=options)


ESTIMATORS.add("ba", "generative: Barber-Agakov H(Y) + E[log q(y|x)], q a conditional flow, H(Y) the Gaussian "
               "entropy of Y's covariance: a lower bound only where Y is Gaussian after the normal scores (any "
               "1-d Y), else an estimate that may exceed the truth (sample protocol)",
               _family("BarberAgakovFlow"))
ESTIMATORS.add("gm-flow", "generative: H(X) + H(Y) - H(X, Y) with three normalising flows, held-out (sample protocol)",
               _family("GMFlow"), aliases=("gm",))
ESTIMATORS.add("club", "generative: CLUB upper bound E_p[log q(y|x)] - E_p(x)p(y)[log q(y|x)] (Cheng et al. 2020), "
               "q a conditional Gaussian (the paper's); an upper bound only for the true conditional (sample protocol)",
               _family("CLUBGaussian"))
ESTIMATORS.add("mienf", "generative: MIENF (Butakov et al. 2024), flows f_X, f_Y to a learned Gaussian base, the "
               "base's closed-form MI (sample protocol)", _family_in("mienf", "MIENF"))
ESTIMATORS.add("mienf-tridiag", "generative: MIENF with the tridiagonal base (correlations rho_i between paired "
               "latents only), I = -1/2 sum log(1 - rho_i^2) (sample protocol)",
               _family_in("mienf", "MIENF", tridiagonal=True))
ESTIMATORS.add("minde-c", "generative: MINDE (Franzese et al. 2024), score-based diffusion of y with and without x; "
               "I from the integrated difference of the two denoisers (sample protocol)", _family_in("minde", "MINDE"))
ESTIMATORS.add("minde-j", "generative: MINDE joint variant, one denoiser of [x, y] jointly and of each part alone "
               "(sample protocol)", _family_in("minde", "MINDE", joint=True, ema=0.0))
ESTIMATORS.add("fmmi-c", "generative: FMMI (Butakov et al. 2025), flow matching from p(y) to p(y|x); "
               "I = -int E[div v] dt (sample protocol)", _family_in("fmmi", "FMMI"))
ESTIMATORS.add("fmmi-j", "generative: FMMI, flow matching from p(x)p(y) to p(x,y) on [x, y]; I = -int E[div v] dt "
               "(sample protocol)", _family_in("fmmi", "FMMI", joint=True))
ESTIMATORS.add("hybrid-resampled", "generative + critic: DoE with zuko flows plus an NWJ critic on the residual "
               "KL(p(x,y) || p(x)q(y|x)), its negatives drawn from the flow q(y|x) (Federici et al. 2023; "
               "torch-mist's resampled hybrid) (sample protocol)",
               ClassFactory("mibench.estimators.hybrid:ResampledHybrid",
                            options={"generative": _family_in("doe", "DoEFlow", flows="zuko-maf")}))
ESTIMATORS.add("flo", "FLO lower bound 1 + E[-u - exp(-u + g(x,y') - g(x,y))] (Guo et al. 2022), joint critic g "
               "and u-network trained on the data, not capped by the batch size (sample protocol)",
               ClassFactory("mibench.estimators.flo:FLOEstimator"))
ESTIMATORS.add("l1out", "generative: leave-one-out upper bound (Poole et al. 2019 eq. 13), q a conditional flow, "
               "blocks of 256 pairs; an upper bound only for the true conditional (sample protocol)",
               _family("L1OutFlow"))


def estimator_entry(name) -> Entry:
    return ESTIMATORS.get(name)


def estimator_bound(name: str) -> str:
    """``lower bound``, ``upper bound`` or ``estimate``: what a registered estimator's number is
    relative to the truth (:data:`mibench.estimators.kinds.BOUND_KINDS`)."""
    return estimator_entry(name).obj.bound_kind


def estimator_kind(name: str) -> str:
    """Kind of a registered (or ``module:Name`` / entry-point) estimator name, as its class declares it."""
    return estimator_entry(name).obj.kind


def make_sample_estimator(name: str):
    """A fresh sample-based estimator object for ``name`` (refused in one line if it is a critic head)."""
    entry = estimator_entry(name)
    if entry.obj.kind not in SAMPLE_KINDS:
        raise MibenchError(f"estimator {name!r} is a critic bound; under the sample protocol it runs through "
                           "mibench.estimate")
    return entry.obj()


def require_streamable(names) -> None:
    """Refuse, in one line, sample-only estimators in a streaming run."""
    for name in names:
        kind = estimator_kind(name)
        if kind in SAMPLE_KINDS:
            raise MibenchError(f"estimator {name!r} is {kind}: it runs only under the sample protocol "
                               "(pass --n N, e.g. --n 10000)")


def check_estimate_value(value) -> float:
    """An estimate as a float, or a one-line error for non-numbers (NaN/inf are kept: they are
    recorded as failed estimates by the sample protocol)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise MibenchError(f"estimate returned {type(value).__name__}, not a number") from None
    return out
