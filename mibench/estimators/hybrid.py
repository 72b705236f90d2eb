"""The resampled hybrid estimator, ``hybrid-resampled`` (Federici, Ruhe & Forré, "On the effectiveness
of hybrid mutual information estimation", arXiv:2306.00608, 2023, §3; torch-mist's
``ResampledHybridMIEstimator``, whose stock configuration pairs DoE with NWJ).  With any conditional
density q(y|x),

    I(X;Y) = E_p[log q(y|x) / p(y)] + KL( p(x, y) || p(x) q(y|x) ),

the first term a generative estimate and the second a divergence a critic estimates with its
negatives drawn from q(.|x) instead of p(y): where q is close to p(y|x), the critic only has to find
the small residual, far below the log-batch-size and high-variance limits of the discriminative
bounds on I itself.  The estimator is a composition (:class:`ResampledHybrid`): a trained generative
estimator and an NWJ critic.  The NWJ term is a lower bound on the KL, but q(y)'s cross-entropy is an
upper bound on H(Y), so the sum is an estimate, not a bound (its error: q(y)'s excess entropy minus
NWJ's slack).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import ClassVar

import torch
from torch import nn

from mibench.critics.mlp import mlp
from mibench.errors import MibenchError
from mibench.estimators.kinds import ESTIMATE
from mibench.estimators.trained import HeldOutEstimator, TrainedSettings, assess, load_best

#: exponents above this are clamped while training (never in the readout), as in :mod:`mibench.estimators.flo`
TRAIN_EXP_CAP = 40.0
#: rows per block when drawing negatives and reading out (above the training rows of the sample
#: leaderboard, n = 10,000: its draws are one block)
BLOCK = 8192
#: the settings of the hybrid that its generative part trains with too (one training protocol for both)
SHARED_TRAINING = ("steps", "batch_size", "lr", "eval_every", "ema", "device")


@dataclass(frozen=True)
class HybridSettings(TrainedSettings):
    """``hidden``: the critic's width; ``negatives`` / ``test_negatives``: draws from q(.|x) per
    positive in training and in the readout."""

    hidden: int = 128
    negatives: int = 16
    test_negatives: int = 64

    RANGES: ClassVar[dict] = {**TrainedSettings.RANGES, "hidden": (1, float("inf"), True, False),
                              "negatives": (1, float("inf"), True, False),
                              "test_negatives": (1, float("inf"), True, False)}


class _JointCritic(nn.Module):
    def __init__(self, dx: int, dy: int, hidden: int):
        super().__init__()
        self.net = mlp(dx + dy, hidden, 1, layers=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """f(x, y) for y of shape (n, dy) or (m, n, dy) (m draws per x)."""
        if y.dim() == 3:
            x = x.unsqueeze(0).expand(y.shape[0], *x.shape)
        return self.net(torch.cat([x, y], dim=-1)).squeeze(-1)


class ResampledHybrid(HeldOutEstimator):
    """``hybrid-resampled`` (module docstring), as torch-mist's stock configuration and by composition as
    there; settings: :class:`HybridSettings`.

    * The generative term is ``generative``'s, a trained generative estimator whose ``models["conditional"]``
      can sample (``flows="zuko-maf"``); the registry hands it ``doe-flow`` on zuko MAF flows
      (E_test[log q(y|x)] - E_test[log q(y)]).  It trains on the hybrid's split with the hybrid's training
      settings (:data:`SHARED_TRAINING`).
    * The residual is NWJ's bound (Nguyen, Wainwright & Jordan 2010; Poole et al. 2019, eq. 9) on the KL,
      E_p[f(x, y)] - E_{p(x) q(y'|x)}[e^{f(x, y') - 1}], with a joint MLP critic f trained after the flows
      by the same loop, the flows frozen (torch-mist's tutorial freezes its trained DoE the same way),
      ``negatives`` draws y' ~ q(.|x) per training pair (drawn once) and ``test_negatives`` fresh ones per
      test pair.
    """

    name = "hybrid-resampled"
    bound = ESTIMATE
    Settings: ClassVar[type] = HybridSettings

    def __init__(self, generative: HeldOutEstimator, **options):
        super().__init__(**options)
        if getattr(generative.settings, "flows", None) != "zuko-maf":
            raise MibenchError(f"{self.name} draws its negatives from its generative part's conditional flow and "
                               f"needs one with flows='zuko-maf' (the only family here that samples), got "
                               f"{getattr(generative.settings, 'flows', None)!r}")
        self.generative = generative.with_settings(**{k: getattr(self.settings, k) for k in SHARED_TRAINING})
        self.models_x = generative.models_x

    def with_settings(self, **options) -> "ResampledHybrid":
        merged = {f.name: getattr(self.settings, f.name) for f in fields(self.settings)}
        return type(self)(self.generative, **{**merged, **options})

    def count_parameters(self, dx: int, dy: int) -> int:
        critic = _JointCritic(dx, dy, self.settings.hidden)
        return self.generative.count_parameters(dx, dy) + sum(p.numel() for p in critic.parameters())

    def fit_and_read(self, split, device, seed: int) -> float:
        """Train the generative part, then the critic on negatives drawn from its frozen conditional
        flow; read both on the test pairs."""
        xtr, xva, xte, ytr, yva, yte = self.tensors(split, device)
        models, best = self.generative.fit((xtr, ytr, xva, yva), device, seed)
        for model in models.values():
            model.requires_grad_(False)
        proposal = models["conditional"]
        # each training and validation pair gets its ``negatives`` draws y' ~ q(.|x) once, stored beside
        # its y (columns dy:), instead of fresh draws per step (a draw costs one network pass per
        # coordinate and layer)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed + 2)
            with torch.no_grad():
                ytr_n, yva_n = (torch.cat([y, self._draws(proposal, x, self.settings.negatives)], dim=1)
                                for x, y in ((xtr, ytr), (xva, yva)))
            critic = _JointCritic(xtr.shape[1], ytr.shape[1], self.settings.hidden).to(device)
        self._dy = ytr.shape[1]
        critic_best = self.train({"critic": critic}, self.loss, (xtr, ytr_n, xva, yva_n), device, seed + 2)
        load_best(self.name, {"critic": critic}, critic_best)
        self.n_parameters = self.generative.n_parameters + sum(p.numel() for p in critic.parameters())
        with torch.no_grad():
            value, details = self.generative.readout(models, xte, yte)
            residual = self._residual(critic, proposal, xte, yte, seed)
        # judged against the standard error the record reports (the generative part's): a sum near 0 within it
        # is no evidence of dependence (or, where that error is large, of anything)
        self.status, reason = self.judged(assess({**best, **critic_best}, value + residual), value + residual,
                                          float(details.get("stderr", math.nan)))
        self.record({**details, "residual_nwj": residual, **({"status_reason": reason} if reason else {})},
                    {**best, **critic_best}, (xtr, xva, xte), device)
        return value + residual

    def _draws(self, proposal, x: torch.Tensor, m: int) -> torch.Tensor:
        """(n, m * dy): row i holds m draws y' ~ q(.|x_i) side by side (drawn in blocks of ``BLOCK`` rows,
        so the flow's activations stay bounded for large n)."""
        parts = []
        for start in range(0, x.shape[0], BLOCK):
            xb = x[start:start + BLOCK]
            y_neg = proposal.sample(m, xb)                # (m, rows, dy)
            parts.append(y_neg.permute(1, 0, 2).reshape(xb.shape[0], -1))
        return torch.cat(parts, dim=0)

    def _residual_terms(self, critic, x, y_and_draws, cap: float | None) -> torch.Tensor:
        """Per positive pair i: f(x_i, y_i) - mean_j e^{f(x_i, y'_ij) - 1} over the draws y'_ij ~ q(.|x_i)
        stored beside y_i."""
        dy, n = self._dy, x.shape[0]
        y, y_neg = y_and_draws[:, :dy], y_and_draws[:, dy:].reshape(n, -1, dy).permute(1, 0, 2)
        expo = critic(x, y_neg) - 1.0
        if cap is not None:
            expo = expo.clamp(max=cap)
        return critic(x, y) - torch.exp(expo).mean(0)

    def loss(self, key, model, x, y):
        return -self._residual_terms(model, x, y, TRAIN_EXP_CAP if torch.is_grad_enabled() else None)

    def _residual(self, critic, proposal, x: torch.Tensor, y: torch.Tensor, seed: int) -> float:
        """The NWJ residual on the test pairs, ``test_negatives`` fresh draws per pair, in blocks."""
        total = 0.0
        with torch.random.fork_rng(devices=[x.device] if x.device.type == "cuda" else []):
            torch.manual_seed(seed + 3)
            for start in range(0, x.shape[0], BLOCK):          # blocks: (test_negatives, rows, dx + dy) at a time
                xb, yb = x[start:start + BLOCK], y[start:start + BLOCK]
                yd = torch.cat([yb, self._draws(proposal, xb, self.settings.test_negatives)], dim=1)
                total += float(self._residual_terms(critic, xb, yd, None).double().sum())
        residual = total / x.shape[0]
        if not math.isfinite(residual):
            raise MibenchError(f"{self.name}: the critic's residual is not finite on the test pairs (its exponent "
                               f"overflowed); retry with another seed or more data")
        return residual
