"""Estimator registry.  An estimator is a small module turning the critic's K x K score matrix
into (training loss, reported MI estimate in nats); the bound itself is a pure function in
:mod:`mibench.estimators.bounds`.  Adding one is one small class or one ``ESTIMATORS.add`` call.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..errors import MibenchError
from ..registry import Entry, Registry
from . import bounds

from .protocols import PluginRegistry  # noqa: E402  (module:Name specs and entry points, issue 12)

ESTIMATORS: Registry = PluginRegistry("estimator")


class Estimator(nn.Module):
    """Base: ``forward(scores) -> (loss, estimate)``; loss is minimised, estimate is in nats.

    Subclasses may hold state carried across steps (MINE's moving average, TUBA's baseline).
    ``ceiling_nats(K)`` is the largest value the reported estimate can take for batch K
    (``inf`` when unbounded), so a run can say when the truth is out of the estimator's reach.

    ``training_objective`` names the critic's training objective when training is stateless and
    depends on nothing but that objective; estimators that name the same objective differ only
    in the estimation step (benchmark paper §2: "two associated steps ... JS, MINE and SMILE
    adopt small modifications in either optimization or estimation"), so the harness trains one
    critic for all of them and reads each estimate off the same scores.  ``None``: the estimator
    trains its own critic.
    """

    training_objective: str | None = None
    #: stateless heads whose bound reduces over the last two dimensions: a (G, B, B) stack of score
    #: matrices is evaluated in one call (:mod:`mibench.estimation.training` relies on it)
    batched: bool = False

    def ceiling_nats(self, batch_size: int) -> float:
        return math.inf

    def value(self, scores: torch.Tensor) -> torch.Tensor:
        """The reported estimate (nats) for a score matrix: pure, never changes training state."""
        raise NotImplementedError

    def forward(self, scores: torch.Tensor):
        """One training step's ``(loss to minimise, reported estimate detached)``."""
        value = self.value(scores)
        return -value, value.detach()


class BoundEstimator(Estimator):
    """Trains and reports one bound (NWJ, DV, InfoNCE)."""

    batched = True

    def __init__(self, bound, ceiling=None):
        super().__init__()
        self.bound = bound
        self._ceiling = ceiling

    def ceiling_nats(self, batch_size: int) -> float:
        return self._ceiling(batch_size) if self._ceiling else math.inf

    def value(self, scores):
        return self.bound(scores)


class JSTrainedEstimator(Estimator):
    """Trains the critic with the JS f-GAN objective and reports another bound on it (JS, SMILE).

    Training depends only on the scores (no state), so every JS-trained estimator of a run
    shares one critic (see :attr:`Estimator.training_objective`)."""

    training_objective = "js-fgan"
    batched = True

    def __init__(self, report):
        super().__init__()
        self.report = report

    def value(self, scores):
        return self.report(scores)

    def forward(self, scores):
        loss = -bounds.js_fgan_objective(scores)
        return loss, self.report(scores.detach())


class MINEEstimator(Estimator):
    """MINE (Belghazi et al. 2018): DV value; the gradient of the partition term uses an
    exponential moving average (momentum 0.9) of E[e^f] carried across steps to de-bias it."""

    def __init__(self, momentum: float = 0.9):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("ema", torch.tensor(float("nan")))

    def value(self, scores):
        return bounds.dv_bound(scores)

    def forward(self, scores):
        joint = bounds.mean_diag(scores)
        log_partition = bounds.logmeanexp_offdiag(scores)
        partition = torch.exp(log_partition)
        with torch.no_grad():
            fresh = partition.detach()
            # first step initialises the average with the batch value (no bias towards 0 or 1)
            ema = torch.where(torch.isnan(self.ema), fresh, self.momentum * self.ema + (1 - self.momentum) * fresh)
            ema = ema.clamp_min(1e-4)
            self.ema.copy_(ema)
        # d/dtheta log E[e^f] ~= (d/dtheta E[e^f]) / EMA   (MINE's bias-corrected gradient)
        surrogate = joint - partition / ema
        estimate = (joint - log_partition).detach()
        return -surrogate, estimate


class TUBAEstimator(Estimator):
    """TUBA with a learned constant baseline a = exp(b) (Poole et al. 2019, eq. 9 with a(y) = a)."""

    def __init__(self):
        super().__init__()
        self.log_baseline = nn.Parameter(torch.zeros(()))

    def value(self, scores):
        return bounds.tuba_bound(scores, self.log_baseline)


def _log_k(k: int) -> float:
    return math.log(k)


ESTIMATORS.add("nwj", "NWJ / f-GAN KL / MINE-f bound, a(y) = e (trained and reported)", lambda: BoundEstimator(bounds.nwj_bound))
ESTIMATORS.add("js", "trained with the Jensen-Shannon f-GAN objective, reported with NWJ on f + 1", lambda: JSTrainedEstimator(bounds.js_estimate))
ESTIMATORS.add("js-paper", "the paper's JS readout (authors' code): the JS-trained critic (shared with js) reported "
               "with NWJ on f, 1/e nats = 0.53 bits below js at the optimum", lambda: JSTrainedEstimator(bounds.js_paper_estimate))
ESTIMATORS.add("infonce", "InfoNCE / CPC contrastive bound; cannot exceed log K (batch size)", lambda: BoundEstimator(bounds.infonce_bound, ceiling=_log_k), aliases=("nce", "cpc"))
ESTIMATORS.add("dv", "Donsker-Varadhan bound (trained and reported)", lambda: BoundEstimator(bounds.dv_bound))
ESTIMATORS.add("mine", "DV value; gradient de-biased with an EMA (0.9) of the partition term", lambda: MINEEstimator())
ESTIMATORS.add("smile-5", "SMILE (alias smile), tau = 5: JS-trained critic, DV with partition term clipped to [-5, 5]",
               lambda: JSTrainedEstimator(lambda s: bounds.smile_bound(s, 5.0)), aliases=("smile",))
ESTIMATORS.add("tuba", "TUBA bound with a learned constant baseline", lambda: TUBAEstimator())


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
    return Entry(name, desc, lambda: JSTrainedEstimator(lambda s: bounds.smile_bound(s, tau)))


ESTIMATORS.add_pattern(r"smile-(inf|infinity|[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)", "smile-<tau> (e.g. smile-1, smile-5, smile-inf)", _smile_factory)

#: the paper's estimator line-up (Table 3), used by ``--estimator all``
PAPER_ESTIMATORS = ["nwj", "js", "infonce", "dv", "mine", "smile-1", "smile-5", "smile-inf"]


def resolve_estimators(spec) -> list[str]:
    """``"smile,nwj"`` / ``["smile"]`` / ``"all"`` -> canonical names (validated, de-duplicated)."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        for name in (PAPER_ESTIMATORS if item.lower() == "all" else [ESTIMATORS.get(item).name]):
            if name not in names:
                names.append(name)
    if not names:
        raise MibenchError("no estimator given")
    return names


def make_estimator(name: str) -> Estimator:
    return ESTIMATORS.get(name).obj()


def training_key(name: str) -> str:
    """What a critic trained for estimator ``name`` is trained by: its shared objective, or its name."""
    return make_estimator(name).training_objective or ESTIMATORS.get(name).name


def training_groups(names: list[str]) -> dict[str, list[int]]:
    """Indices into ``names`` keyed by :func:`training_key`, in order of first appearance: one
    critic is trained per group.  ``["nwj", "js", "smile-5"]`` -> ``{"nwj": [0], "js-fgan": [1, 2]}``."""
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(training_key(name), []).append(i)
    return groups


# --- f-DIME and alpha-InfoNCE (issue 12): score-matrix heads in .fdime, bounds in .bounds -----------

def _fdime(variant: str):
    def factory():
        from .fdime import FDIMEEstimator

        return FDIMEEstimator(variant)

    return factory


ESTIMATORS.add("f-dime-kl", "f-DIME, KL divergence, derangement training (Letizia et al. 2024); readout E_p[log D]",
               _fdime("kl"), aliases=("kl-dime",))
ESTIMATORS.add("f-dime-hd", "f-DIME, squared Hellinger, derangement training (Letizia et al. 2024); readout E_p[log 1/D^2]",
               _fdime("hd"), aliases=("hd-dime",))
ESTIMATORS.add("f-dime-gan", "f-DIME (alias f-dime), GAN divergence, derangement training (Letizia et al. 2024); "
               "readout E_p[log (1-D)/D]", _fdime("gan"), aliases=("f-dime", "gan-dime"))


def _alpha_infonce_entry(text: str) -> Entry:
    alpha = float(text)
    if not 0.0 < alpha < 1.0:
        raise MibenchError(f"alpha-InfoNCE needs 0 < alpha < 1, got {text!r} (alpha 1 is infonce, 0 is tuba/nwj)")

    def factory():
        from .fdime import AlphaInfoNCEEstimator

        return AlphaInfoNCEEstimator(alpha)

    return Entry(f"alpha-infonce-{alpha:g}", f"alpha-InfoNCE (Poole et al. 2019 §2.5), alpha = {alpha:g}", factory)


ESTIMATORS.add_pattern(r"alpha-infonce-([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)", "alpha-infonce-<alpha> (0 < alpha < 1)",
                       lambda m: _alpha_infonce_entry(m.group(1)))
ESTIMATORS.add("alpha-infonce-0.5", "alpha-InfoNCE (alias alpha-infonce): Poole et al. 2019 §2.5 interpolation of "
               "InfoNCE and NWJ, alpha = 0.5, learned baseline", _alpha_infonce_entry("0.5").obj,
               aliases=("alpha-infonce",))


# --- classical black-box estimators: mibench.estimators.classical -------------------------------------

def _baseline(cls_name: str, *args):
    def factory():
        from . import classical

        return getattr(classical, cls_name)(*args)

    return factory


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


# --- generative (issue 12): mibench.estimators.generative ---------------------------------------------

def _doe_flow():
    from .generative import DoEFlow

    return DoEFlow()


ESTIMATORS.add("doe-flow", "generative: difference of entropies H(Y) - H(Y|X) with two normalising flows "
               "(McAllester & Stratos 2020; RealNVP), held-out (sample protocol)", _doe_flow)
